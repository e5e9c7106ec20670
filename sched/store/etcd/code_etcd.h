/*
 * code_etcd.h - a cluster's objects of code/ in etcd (the key layout:
 * etcd_keys.h): an object's bytes go up as P/oc/HASH/NNNNNN chunks of
 * ETCD_KEYS_CHUNK_BYTES, then P/om/HASH, which says the object is whole;
 * they come down by range reads of the chunks, one at a time, checked
 * against the object's SHA-256. Everything runs on the loop through the
 * etcd client: one request at a time per transfer, nothing that blocks
 * but the pread or pwrite of one chunk of a local file.
 */
#ifndef FNFS_SCHED_CODE_ETCD_H
#define FNFS_SCHED_CODE_ETCD_H

#include <stdint.h>

struct etcd_client;

/* Called once when a transfer ends: 0, or -EIO (etcd could not be
 * reached or refused; `why` says so), -EBADMSG (the bytes are not the
 * object's), -ECANCELED (the client was freed). `why` is valid during
 * the call only (NULL when err is 0). */
typedef void (*code_etcd_fn)(void *arg, int err, const char *why);

/* Sends the `size` bytes of the file `path`, object `hash`, to cluster
 * `cluster` of the etcd of `c`: each chunk (put), then P/om. Returns 0
 * (`done` is called later) or -errno (-EINVAL: a bad hash, -EIO: `path`
 * cannot be opened, -ENOMEM): then `done` is not called. */
int code_etcd_upload(struct etcd_client *c, const char *cluster,
		     const char *hash, const char *path, uint64_t size,
		     code_etcd_fn done, void *arg);

/* Reads object `hash` (`size` bytes, as its P/om says) from cluster
 * `cluster` into the file open as `fd` (from offset 0; not closed), and
 * checks its SHA-256. Returns 0 (`done` is called later) or -errno
 * (-EINVAL for the empty object, which has nothing to fetch). */
int code_etcd_fetch(struct etcd_client *c, const char *cluster,
		    const char *hash, uint64_t size, int fd, code_etcd_fn done,
		    void *arg);

#endif

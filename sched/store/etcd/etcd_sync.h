/*
 * etcd_sync.h - the etcd client (etcd.h) used from a command rather than
 * the daemon: each call runs a private libuv loop until etcd answers, so
 * it blocks, for at most the client's timeout (and a margin), never more.
 * For `fnfs store export|import --store etcd://...` (dump_etcd.h).
 */
#ifndef FNFS_SCHED_ETCD_SYNC_H
#define FNFS_SCHED_ETCD_SYNC_H

#include <uv.h>

#include "etcd.h"

/* A client on its own loop. */
struct etcd_sync {
	uv_loop_t loop;
	struct etcd_client *c;	/* NULL after a call broke its bound: the
				   next call makes a new one from `cfg` */
	struct etcd_config cfg; /* its strings owned (etcd_sync_open's) */
	int bound_ms;		/* the longest a call waits, margin included */
	int open_bound_ms;	/* etcd_sync_open's */
	int open;
};

/* What a range read: copies of the keys and values, owned. */
struct etcd_sync_kvs {
	struct etcd_kv *kvs;
	size_t n;
	int more;	  /* more keys than the limit */
	int64_t revision; /* the store's revision of the answer */
};

/* Frees what `r` holds (the struct is zeroed). */
void etcd_sync_kvs_free(struct etcd_sync_kvs *r);

/* Sets the bound of the calls that follow (ms, margin included; 0: the
 * one etcd_sync_open chose) and returns the one before: a question
 * that is only worth a short wait (is etcd back?) asks with a short
 * bound. */
int etcd_sync_bound(struct etcd_sync *s, int ms);

/* Makes a client of `cfg` on a new loop. Returns 0, -EINVAL (bad
 * endpoints; `why` says so), -ENOMEM or -EIO. */
int etcd_sync_open(struct etcd_sync *s, const struct etcd_config *cfg,
		   struct rt_buf *why);

/* Ends the client and its loop (a closed or zeroed `s`: a no-op). */
void etcd_sync_close(struct etcd_sync *s);

/* The endpoint the client asks next (for messages). */
const char *etcd_sync_where(const struct etcd_sync *s);

/* etcd_range, waited for: the answer into `out` (freed first). Returns 0
 * or the answer's -errno with etcd's or the client's reason in `why`. */
int etcd_sync_range(struct etcd_sync *s, const char *key, const char *range_end,
		    int64_t revision, int64_t limit, struct etcd_sync_kvs *out,
		    struct rt_buf *why);

/* etcd_txn, waited for: *succeeded says whether the compares held. */
int etcd_sync_txn(struct etcd_sync *s, const struct etcd_cmp *cmp, size_t ncmp,
		  const struct etcd_op *ops, size_t nops, int *succeeded,
		  struct rt_buf *why);

/* etcd_delete, waited for: *deleted (may be NULL) the keys it took. */
int etcd_sync_delete(struct etcd_sync *s, const char *key,
		     const char *range_end, int64_t *deleted,
		     struct rt_buf *why);

#endif

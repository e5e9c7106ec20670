/*
 * etcd_keys.h - the key layout of an fnfs cluster's state in etcd: pure
 * functions (no I/O) that turn the store's rows (store.h) into an etcd key
 * and value, and a key and value back into a row.
 *
 * Every key of cluster NAME begins with P = "/fnfs/NAME" (NAME follows
 * rt_name_valid). Values are compact JSON objects, except an object's
 * chunks, an event line and the leader's name, which are raw bytes:
 *
 *   P/meta                     {"format":"fnfs-cluster","version":1}
 *   P/t/TENANT                 {"created_ms","updated_ms","uid","gid","mode"}
 *   P/ns/TENANT/NS             {"created_ms","updated_ms"}
 *   P/fn/TENANT/NS/FN          {"created_ms","updated_ms","revision",
 *                               "run_revision","spec":{...}}
 *   P/in/TENANT/NS/FN/N        {"desired":0|1,"worker":ID|null,"epoch",
 *                               "term"?, "state"?,"pid"?,"revision"?,
 *                               "started_ms"?,"restarts"?,"last_exit"?}
 *                              (term: the writing leader's election key's
 *                              creation revision; the rest what it knows
 *                              of the instance: state and pid both or
 *                              neither, the others only with them)
 *   P/w/ID                     {"memory","tags":[..],"namespaces":[..],
 *                               "local":0|1,"drained":0|1}
 *   P/set/KEY                  {"value":TEXT}
 *   P/rv/WORKER/SERIAL         {"serial":TEXT,"revoked_ms"}  (SERIAL "-"
 *                               for the empty serial)
 *   P/cf/TENANT/NS/FN/PATH     {"mode","size","hash","mtime_ms"}
 *   P/cr/TENANT/NS/FN          {"hash","bytes","files"}
 *   P/om/SHA256                {"size","chunks"}
 *   P/oc/SHA256/NNNNNN         the object's bytes NNNNNN*1MiB.. (%06u)
 *   P/ev/NNNNNNNNNNNNNNNNNNNN  a line of the journal at absolute offset N
 *                              (%020llu; journal_etcd.h: its value)
 *   P/evh                      the journal's end: the next line's offset
 *                              (decimal text)
 *   P/leader                   the elected controller's name
 *   P/import                   the import under way (its id): while it is
 *                              there and P/meta is not, the cluster is
 *                              being imported, or an import did not end
 *
 * Names (tenants, namespaces, functions, workers, serials) are
 * rt_name_valid's [A-Za-z0-9._-], so '/' separates components safely; a
 * setting's KEY may hold ':' too ("cert:ID"). PATH is the rest of the key
 * ('/' between its components); its bytes outside '!'..'~' and '%' are
 * written %XX (upper-case hex), so every key is printable ASCII, and
 * decoding takes only that canonical form. All numbers are integers >= 0.
 * An object is cut into chunks of ETCD_KEYS_CHUNK_BYTES bytes (the last one
 * shorter; none for an empty object); its chunks are written before its
 * P/om, so P/om means the object is whole.
 *
 * The functions that return an int (but etcd_keys_cluster_valid) return
 * 0 or a negative errno: -EINVAL for anything
 * outside the layout (a bad name, a missing or extra component, a
 * trailing '/', another cluster's prefix, a value that is not the JSON
 * of its kind, a number out of range), -ENOMEM.
 */
#ifndef FNFS_SCHED_ETCD_KEYS_H
#define FNFS_SCHED_ETCD_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "../../../runtime/base/rt.h"
#include "../store.h"

#define ETCD_KEYS_FORMAT      "fnfs-cluster"
#define ETCD_KEYS_VERSION     1
#define ETCD_KEYS_CHUNK_BYTES (1u << 20) /* bytes of an object's chunk */
#define ETCD_KEYS_CHUNKS_MAX  1000000u	 /* chunks an object may have */

/* The kinds of key, each with its own component after P/. */
enum etcd_keys_kind {
	ETCD_KEYS_META,		 /* meta */
	ETCD_KEYS_TENANT,	 /* t/ */
	ETCD_KEYS_NAMESPACE,	 /* ns/ */
	ETCD_KEYS_FUNCTION,	 /* fn/ */
	ETCD_KEYS_INSTANCE,	 /* in/ */
	ETCD_KEYS_WORKER,	 /* w/ */
	ETCD_KEYS_SETTING,	 /* set/ */
	ETCD_KEYS_REVOKED,	 /* rv/ */
	ETCD_KEYS_CODE_FILE,	 /* cf/ */
	ETCD_KEYS_CODE_REVISION, /* cr/ */
	ETCD_KEYS_OBJECT,	 /* om/ */
	ETCD_KEYS_CHUNK,	 /* oc/ */
	ETCD_KEYS_EVENT,	 /* ev/ */
	ETCD_KEYS_LEADER,	 /* leader */
	ETCD_KEYS_IMPORT,	 /* import */
	ETCD_KEYS_EVENT_HEAD,	 /* evh */
	ETCD_KEYS_MEMBER,	 /* ctl/NAME: a controller's presence */
	ETCD_KEYS_KINDS
};

/* A revocation (the revoked table). */
struct etcd_keys_revoked {
	const char *worker;
	const char *serial; /* "" when none was known */
	int64_t revoked_ms;
};

/* What one key and value stand for: `kind` says which member is set.
 * Decoded strings point into `owned` buffers: free with
 * etcd_keys_rec_free. To encode, fill `kind` and the member (strings
 * borrowed) and call etcd_keys_encode. */
struct etcd_keys_rec {
	enum etcd_keys_kind kind;
	int version;			  /* META */
	struct store_row row;		  /* TENANT, NAMESPACE, FUNCTION */
	struct store_instance instance;	  /* INSTANCE */
	struct store_worker worker;	  /* WORKER */
	const char *key, *value;	  /* SETTING; key: MEMBER's name */
	struct etcd_keys_revoked revoked; /* REVOKED */
	struct store_code_file file;	  /* CODE_FILE */
	struct store_code_revision code;  /* CODE_REVISION */
	const char *hash;		  /* OBJECT, CHUNK */
	uint64_t size;			  /* OBJECT: bytes */
	uint32_t chunks;		  /* OBJECT: etcd_keys_chunks(size) */
	uint32_t index;			  /* CHUNK */
	uint64_t seq;			  /* EVENT */
	const char *data; /* CHUNK, EVENT, LEADER, IMPORT, MEMBER */
	size_t len;	  /* bytes of data */
	char *owned[8];	  /* what decoding allocated */
	int nowned;
};

/* Frees what decoding allocated into `r` and zeroes it (NULL: no-op). */
void etcd_keys_rec_free(struct etcd_keys_rec *r);

/* Whether `name` may name a cluster (rt_name_valid). */
int etcd_keys_cluster_valid(const char *name);

/* `out` := "/fnfs/CLUSTER/", the prefix of every key of the cluster
 * (with etcd_prefix_end: the range of all of them). */
int etcd_keys_prefix(const char *cluster, struct rt_buf *out);

/* `out` := the prefix of every key of `kind` ("/fnfs/CLUSTER/t/", ...;
 * META, LEADER, IMPORT and EVENT_HEAD: the key itself). */
int etcd_keys_kind_prefix(const char *cluster, enum etcd_keys_kind kind,
			  struct rt_buf *out);

/* `key` := the key of `r`, and `value` (unless NULL: for a delete, only
 * the key is made) := its value. Strings of `r` are checked as decoding
 * would (names, hashes, a spec or tags that are JSON of the right shape,
 * a setting's value that is UTF-8); a CHUNK, EVENT, LEADER, IMPORT or
 * EVENT_HEAD value is r->data as it is. Both buffers are reset first. */
int etcd_keys_encode(const char *cluster, const struct etcd_keys_rec *r,
		     struct rt_buf *key, struct rt_buf *value);

/* The same for the usual rows, with `value` NULL for the key alone. */
int etcd_keys_row(const char *cluster, const struct store_row *row,
		  struct rt_buf *key, struct rt_buf *value);
int etcd_keys_instance(const char *cluster, const struct store_instance *in,
		       struct rt_buf *key, struct rt_buf *value);
int etcd_keys_worker(const char *cluster, const struct store_worker *w,
		     struct rt_buf *key, struct rt_buf *value);
int etcd_keys_code_file(const char *cluster, const struct store_code_file *f,
			struct rt_buf *key, struct rt_buf *value);
int etcd_keys_code_revision(const char *cluster,
			    const struct store_code_revision *c,
			    struct rt_buf *key, struct rt_buf *value);

/* `out` := "/fnfs/CLUSTER/cf/T/NS/FN/", the prefix of a function's code/
 * entries (append an encoded path and '/' for a directory's subtree:
 * etcd_keys_path). */
int etcd_keys_code_prefix(const char *cluster, const char *tenant,
			  const char *ns, const char *fn, struct rt_buf *out);

/* Appends the key form of code/ path `path` (`n` bytes: no empty
 * component, no leading or trailing '/', no NUL) to `out`. */
int etcd_keys_path(const char *path, size_t n, struct rt_buf *out);

/* How many chunks an object of `size` bytes has. */
uint32_t etcd_keys_chunks(uint64_t size);

/* Reads key `key` (`klen` bytes) and its value (`vlen` bytes) of cluster
 * `cluster` into `r` (zeroed first; free it with etcd_keys_rec_free, also
 * after a failure). A CHUNK, EVENT, LEADER, IMPORT or EVENT_HEAD
 * record's data is a copy of the value. */
int etcd_keys_decode(const char *cluster, const char *key, size_t klen,
		     const char *value, size_t vlen, struct etcd_keys_rec *r);

/* The store's cluster face (store_cluster.h), whose listeners get these
 * records: its users decode them with this header. */
#include "store_cluster.h"

#endif

/*
 * etcd_json.h - the pure half of the etcd client (sched/store/etcd/etcd.h):
 * base64, the request bodies of etcd's v3 JSON gateway and the parsers of its
 * answers, over buffers, with no I/O (unit-tested and fuzzed alone).
 *
 * The gateway's conventions: keys and values are base64; int64 values are
 * JSON strings ("42"); a field with a zero value is left out (a failed txn
 * has no "succeeded", a PUT event no "type", a lost lease's keepalive no
 * "TTL"). Streaming endpoints (watch, keepalive) wrap each message as
 * {"result": {...}} and end each with a newline. An error is an object
 * {"error": TEXT, "message": TEXT, "code": GRPC-CODE}.
 */
#ifndef FNFS_SCHED_ETCD_JSON_H
#define FNFS_SCHED_ETCD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "../../../runtime/base/rt.h"
#include "../../../runtime/base/base64.h"

/* ------------------------------------------------------------ the data */

/* A key and its value, as etcd keeps them. */
struct etcd_kv {
	char *key;	  /* owned, NUL-terminated (keys may hold NULs) */
	size_t key_len;	  /* bytes of key */
	char *value;	  /* owned, NUL-terminated; "" when absent */
	size_t value_len; /* bytes of value */
	int64_t create_revision; /* revision of the key's creation */
	int64_t mod_revision;	 /* revision of its last change */
	int64_t version;	 /* changes since creation (0: deleted) */
	int64_t lease;		 /* its lease, 0 for none */
};

/* Frees what `kv` owns (NULL: a no-op); the struct is zeroed. */
void etcd_kv_clear(struct etcd_kv *kv);

/* The header of every answer. */
struct etcd_header {
	int64_t revision;   /* the store's revision when it answered */
	uint64_t member_id; /* the member that answered */
	int64_t raft_term;
};

/* What a compare of a txn looks at. */
enum etcd_target {
	ETCD_VERSION,
	ETCD_CREATE,
	ETCD_MOD,
	ETCD_VALUE,
};

/* How it compares (the key's field RESULT the given one). */
enum etcd_cmp_result {
	ETCD_EQUAL,
	ETCD_GREATER,
	ETCD_LESS,
	ETCD_NOT_EQUAL,
};

/* One compare of a txn: `key`'s `target` `result` the number or value. */
struct etcd_cmp {
	const char *key; /* NUL-terminated */
	enum etcd_target target;
	enum etcd_cmp_result result;
	int64_t number;	   /* for VERSION, CREATE, MOD */
	const char *value; /* for VALUE */
	size_t value_len;
	/* NULL: `key` alone; else every key from `key` up to it must
	 * compare so (none at all compares as a key of version 0). */
	const char *range_end;
};

/* The kind of one operation of a txn. */
enum etcd_op_kind {
	ETCD_OP_RANGE,
	ETCD_OP_PUT,
	ETCD_OP_DELETE,
};

/* One operation of a txn. */
struct etcd_op {
	enum etcd_op_kind kind;
	const char *key;       /* NUL-terminated */
	const char *range_end; /* RANGE, DELETE: NULL for `key` alone */
	const char *value;     /* PUT */
	size_t value_len;      /* PUT */
	int64_t lease;	       /* PUT: 0 for none */
};

/* ------------------------------------------------- the request bodies */

/* The prefix range of `prefix`: `out` gets the range_end that, with
 * key=prefix, covers every key beginning with it (the prefix with its
 * last byte below 0xff incremented and the rest cut; "\0" - every key -
 * for an empty or all-0xff prefix). `out` holds room for strlen(prefix)+2
 * bytes. Returns the length of the range end. */
size_t etcd_prefix_end(const char *prefix, char *out);

/* Each builder below sets *out to a new NUL-terminated JSON text (the
 * caller frees it) and returns 0, -ENOMEM, or -EINVAL for an argument out
 * of range. Zero-valued numbers and NULL strings are left out. */

/* /v3/kv/range: `key`, up to `range_end` (NULL: the key alone), at
 * `revision` (0: the newest), at most `limit` (0: all) keys. */
int etcd_req_range(const char *key, const char *range_end, int64_t revision,
		   int64_t limit, int keys_only, char **out);

/* /v3/kv/put: `key` = `value` (`n` bytes), attached to `lease` (0: none). */
int etcd_req_put(const char *key, const char *value, size_t n, int64_t lease,
		 char **out);

/* /v3/kv/deleterange: `key` up to `range_end` (NULL: the key alone). */
int etcd_req_delete(const char *key, const char *range_end, char **out);

/* /v3/kv/txn: if all `ncmp` compares hold, the `nsucc` operations, else
 * the `nfail` ones. */
int etcd_req_txn(const struct etcd_cmp *cmp, size_t ncmp,
		 const struct etcd_op *succ, size_t nsucc,
		 const struct etcd_op *fail, size_t nfail, char **out);

/* /v3/watch: a watch of `key` up to `range_end` (NULL: the key alone)
 * from `start_revision` (0: from now), with the previous value of each
 * changed key when `prev_kv`, and etcd's periodic progress reports. */
int etcd_req_watch(const char *key, const char *range_end,
		   int64_t start_revision, int prev_kv, char **out);

/* /v3/lease/grant: a lease of `ttl` seconds (> 0). */
int etcd_req_lease_grant(int64_t ttl, char **out);

/* /v3/lease/keepalive and /v3/lease/revoke: lease `id` (nonzero). */
int etcd_req_lease_id(int64_t id, char **out);

/* /v3/election/campaign: campaign for election `name` on `lease`, with
 * `value` (`n` bytes) as the leader's value. */
int etcd_req_campaign(const char *name, int64_t lease, const char *value,
		      size_t n, char **out);

/* /v3/election/leader: who leads election `name`. */
int etcd_req_leader(const char *name, char **out);

/* /v3/election/resign: gives up leadership `key` (the leader key a
 * campaign won) of election `name`, at revision `rev`, on `lease`. */
int etcd_req_resign(const char *name, const char *key, size_t key_len,
		    int64_t rev, int64_t lease, char **out);

/* ------------------------------------------------------ the answers */

/* What one answer (or one message of a stream) says. Owned by the struct:
 * etcd_answer_clear frees it. */
struct etcd_answer {
	int rc;	     /* 0, or the -errno of an error answer */
	char *error; /* the error's text (owned), or NULL */
	struct etcd_header header;
	int succeeded;	     /* txn: the compares held */
	struct etcd_kv *kvs; /* range, txn's range operations, leader */
	size_t nkvs;
	int more;	       /* range: more keys than the limit */
	int64_t count;	       /* range: keys in the range */
	int64_t deleted;       /* deleterange, txn's delete operations */
	int64_t lease_id;      /* lease grant, keepalive */
	int64_t ttl;	       /* grant, keepalive: 0 when the lease is lost */
	struct etcd_kv leader; /* campaign: the leader key won (key, lease,
				  mod_revision = rev); leader: the key */
	/* watch messages */
	int created;		  /* the watch is set up */
	int canceled;		  /* etcd ended the watch */
	int64_t compact_revision; /* the watch starts before it (then canceled)
				   */
	int64_t watch_id;
	struct etcd_kv *events; /* changes, in revision order */
	int *deletes;		/* per event: 1 for a DELETE, 0 for a PUT */
	size_t nevents;
};

/* Frees what `a` owns (NULL: a no-op); the struct is zeroed. */
void etcd_answer_clear(struct etcd_answer *a);

/* The -errno that gRPC status `code` (and its text) stands for:
 * UNAVAILABLE -EAGAIN, DEADLINE_EXCEEDED -ETIMEDOUT, NOT_FOUND and
 * "election: no leader" -ENOENT, OUT_OF_RANGE (compacted) -ERANGE,
 * INVALID_ARGUMENT -EINVAL, PERMISSION_DENIED/UNAUTHENTICATED -EACCES,
 * RESOURCE_EXHAUSTED -ENOSPC, CANCELED -ECANCELED, else -EIO. */
int etcd_grpc_errno(int code, const char *text);

/* Parses the answer in `len` bytes at `body` (any endpoint's; a stream's
 * {"result": ...} wrapper is taken off) into `a` (cleared first). An error
 * answer is no failure: it sets a->rc and a->error. Returns 0, -EPROTO for
 * a body that is not such an answer (then a->error says why), or -ENOMEM. */
int etcd_parse_answer(const char *body, size_t len, struct etcd_answer *a);

/* --------------------------------------------------- streamed lines */

/* Cuts a stream into lines across the chunks it arrives in. */
struct etcd_lines {
	struct rt_buf partial; /* the start of a line not ended yet */
	size_t max;	       /* the longest line taken (bytes); 0: any */
};

/* Called for each whole line (without its '\n'; not NUL-terminated in
 * general); a nonzero return stops etcd_lines_feed, which returns it. */
typedef int (*etcd_line_fn)(void *arg, const char *line, size_t len);

/* Feeds `n` bytes of the stream: calls `fn` for each line they end, in
 * order; keeps the rest for the next call. Empty lines are skipped.
 * Returns 0, what `fn` returned when nonzero, -EMSGSIZE when a line grows
 * past l->max, or -ENOMEM. */
int etcd_lines_feed(struct etcd_lines *l, const char *p, size_t n,
		    etcd_line_fn fn, void *arg);

/* Frees what `l` keeps. */
void etcd_lines_free(struct etcd_lines *l);

#endif

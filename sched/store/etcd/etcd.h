/*
 * etcd.h - an asynchronous client of etcd's v3 JSON gateway (etcd 3.4's
 * /v3/...), on the controller's libuv loop through libcurl's multi
 * interface (runtime/base/curluv.h): no thread, nothing that blocks the loop.
 *
 * Every call takes a callback and returns 0 (the callback will be called
 * exactly once, on the loop thread, on a later loop turn) or a -errno (it
 * will not be). The callback gets the parsed answer (etcd_json.h), valid
 * during the callback only; a->rc is 0 or the -errno of the failure and
 * a->error then says why:
 *   -EIO        no endpoint could be reached, or the transfer broke
 *   -ETIMEDOUT  no answer within the request's timeout
 *   -EAGAIN     etcd has no leader or quorum (gRPC UNAVAILABLE)
 *   -ENOENT     no such lease, no leader of an election
 *   -ERANGE     the revision asked for has been compacted
 *   -ECANCELED  the client was freed first
 *   -EPROTO     an answer that is not etcd's
 *
 * Endpoints: a request goes to the member that answered last; when it
 * cannot connect, it tries the next one (each at most once, within its
 * timeout); after a timeout or "no leader" the next request starts on the
 * next member.
 */
#ifndef FNFS_SCHED_ETCD_H
#define FNFS_SCHED_ETCD_H

#include <stdint.h>

#include <uv.h>

#include "etcd_json.h"

struct etcd_client;
struct etcd_watch;

/* How to reach etcd. The strings are copied. */
struct etcd_config {
	const char *endpoints; /* "HOST:PORT,..." or URLs (http://, https://) */
	const char *ca;	       /* PEM CA file: https, verified; NULL: http */
	const char *cert;      /* PEM client certificate, or NULL */
	const char *key;       /* its PEM key, or NULL */
	int timeout_ms;	       /* per request; 0: 5000 */
	int dead_ms; /* a watch's silent dead connection is found in about
			this (TCP keepalive); 0: 10000 */
};

/* Called once with the answer of a call (see above). */
typedef void (*etcd_cb)(void *arg, const struct etcd_answer *a);

/* Makes a client on `loop` (its own curl multi and connection cache).
 * Connects to nothing yet. Returns 0, -EINVAL for no or a bad endpoint,
 * -ENOMEM, or -EIO when libcurl cannot start. */
int etcd_client_new(uv_loop_t *loop, const struct etcd_config *cfg,
		    struct etcd_client **out);

/* Frees `c` (NULL: a no-op): the callback of every call under way is
 * called with -ECANCELED, every watch gets its last message (-ECANCELED)
 * and stays its owner's to free with etcd_watch_free. Not from inside a
 * callback of `c`; those callbacks must start no new call. */
void etcd_client_free(struct etcd_client *c);

/* The endpoint the next request goes to (owned by `c`). */
const char *etcd_client_endpoint(const struct etcd_client *c);

/* Reads `key` (up to `range_end`, NULL: the key alone; see
 * etcd_prefix_end) at `revision` (0: the newest), at most `limit` keys (0:
 * all): a->kvs, a->count, a->more, a->header.revision. */
int etcd_range(struct etcd_client *c, const char *key, const char *range_end,
	       int64_t revision, int64_t limit, etcd_cb cb, void *arg);

/* Puts `key` = `n` bytes of `value`, on `lease` (0: none). */
int etcd_put(struct etcd_client *c, const char *key, const char *value,
	     size_t n, int64_t lease, etcd_cb cb, void *arg);

/* Deletes `key` (up to `range_end`, NULL: the key alone): a->deleted. */
int etcd_delete(struct etcd_client *c, const char *key, const char *range_end,
		etcd_cb cb, void *arg);

/* A transaction: if every compare holds, the `succ` operations, else the
 * `fail` ones. a->succeeded says which (0 is no error: the compare-and-set
 * lost); a->kvs holds what the range operations read, a->deleted what the
 * deletes took, a->header.revision the store's revision after it. */
int etcd_txn(struct etcd_client *c, const struct etcd_cmp *cmp, size_t ncmp,
	     const struct etcd_op *succ, size_t nsucc,
	     const struct etcd_op *fail, size_t nfail, etcd_cb cb, void *arg);

/* Grants a lease of `ttl` seconds: a->lease_id, a->ttl. */
int etcd_lease_grant(struct etcd_client *c, int64_t ttl, etcd_cb cb, void *arg);

/* Renews lease `id` once (one POST): a->ttl, the seconds it has again.
 * A lease that expired or was revoked is -ENOENT. */
int etcd_lease_keepalive(struct etcd_client *c, int64_t id, etcd_cb cb,
			 void *arg);

/* Revokes lease `id` and deletes its keys; -ENOENT if it is gone. */
int etcd_lease_revoke(struct etcd_client *c, int64_t id, etcd_cb cb, void *arg);

/* Campaigns in election `name` with `n` bytes of `value`, on `lease`:
 * answers once this client leads (a->leader: the leader key, its
 * revision in mod_revision, its lease), or -ETIMEDOUT after `timeout_ms`
 * (0: the client's timeout), when the campaign is withdrawn. etcd
 * withdraws it by deleting its key, which is named after the lease, a
 * little later: campaign again on a new lease, or that deletion may take
 * the new campaign's key (seen with etcd 3.4.23). */
int etcd_campaign(struct etcd_client *c, const char *name, int64_t lease,
		  const char *value, size_t n, int timeout_ms, etcd_cb cb,
		  void *arg);

/* Who leads election `name`: a->leader (its key, value, revisions,
 * lease); -ENOENT when nobody does. */
int etcd_leader(struct etcd_client *c, const char *name, etcd_cb cb, void *arg);

/* Gives up the leadership `leader` (a campaign's a->leader) of `name`. */
int etcd_resign(struct etcd_client *c, const char *name,
		const struct etcd_kv *leader, etcd_cb cb, void *arg);

/* Called for each message of a watch, from inside libcurl's handling of
 * the stream: it must start no etcd call itself (libcurl refuses a call
 * made inside its own; it would fail): defer those to a later loop turn.
 * a->created first, then changes
 * (a->events, a->deletes, a->nevents) and progress reports (neither), all
 * with a->header.revision. The last message has a->rc < 0: -ERANGE when
 * the start revision was compacted (a->compact_revision: read again and
 * watch from there), -EIO when the stream broke (watch again from the
 * revision after the last seen), -ECANCELED when the client was freed.
 * Nothing follows it. */
typedef void (*etcd_watch_fn)(void *arg, const struct etcd_answer *a);

/* Watches `key` (up to `range_end`, NULL: the key alone) from
 * `start_revision` (0: from now), with each change's previous value when
 * `prev_kv`. A stream (one POST) with no end; a dead connection is found
 * within the client's dead_ms. *out is the owner's, for etcd_watch_free.
 * Returns 0 or -errno (then `fn` is never called). */
int etcd_watch(struct etcd_client *c, const char *key, const char *range_end,
	       int64_t start_revision, int prev_kv, etcd_watch_fn fn, void *arg,
	       struct etcd_watch **out);

/* Ends and frees watch `w` (NULL: a no-op): `fn` is not called again. May
 * be called from inside w's own `fn`, not from another watch's. */
void etcd_watch_free(struct etcd_watch *w);

#endif

/*
 * presence.h - a controller's key in its cluster's etcd, so that `fnfs
 * cluster status` can list the members: P/ctl/NAME (P = /fnfs/CLUSTER),
 * on a lease of its own, holding a compact JSON object:
 *
 *   {"name","pid","host","listen","role","revision","seen_ms",
 *    "started_ms","stale"}
 *
 * Over the etcd client (etcd.h) alone, on the controller's loop; what it
 * publishes comes from its owner's callbacks (the role, the etcd revision
 * the controller's tree has, whether that tree is stale), so it knows
 * nothing of sched's internals.
 *
 * Joining. The key is created by a txn that wants it absent (create
 * revision 0), so two live controllers with one name cannot both join.
 * When it is there already:
 *  - written by this host, by a pid that is no longer alive (a
 *    predecessor killed -9 and restarted within the ttl): the key is
 *    taken over at once (a compare on its mod_revision);
 *  - written by this host, by a live process named fnfs: refused at once
 *    (-EEXIST, "a controller named X is already in cluster C ...");
 *  - otherwise (another host, or a pid reused by another program): the
 *    join waits for the key's lease to expire, asking every 500 ms, at
 *    most ttl + 1.5 s, and is refused (-EEXIST) if it is still there.
 *
 * Staying. The lease (ttl = the leader ttl) is renewed every ttl/3; a
 * renewal that failed is sent again on the next tick (250 ms). A lease
 * etcd says is gone (expired while etcd could not be reached) is never
 * reused: a new one is granted and the key created again (if another
 * controller took the name meanwhile, it retries every ttl/3 and says so
 * in the log). The key is rewritten at most once a second, when the
 * role, the stale flag or the revision changed; a revision that moved
 * only because of members' own keys (P/ctl/..., learnt from a watch of
 * P/ctl/) is not a change, or the members would rewrite each other's
 * revision forever.
 *
 * Leaving. presence_stop revokes the lease: the key goes at once.
 * presence_free (or a kill -9) leaves it to expire within the ttl.
 */
#ifndef FNFS_SCHED_PRESENCE_H
#define FNFS_SCHED_PRESENCE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../../../runtime/base/rt.h"
#include "../../store/etcd/etcd.h"

/* The longest host name and listen address a value holds (bytes). */
#define PRESENCE_HOST_MAX   255
#define PRESENCE_LISTEN_MAX 255
#define PRESENCE_ROLE_MAX   31

/* What one member's key says (the decoded value). */
struct presence_value {
	char name[64];			      /* --name (rt_name_valid) */
	int64_t pid;			      /* the daemon's pid */
	char host[PRESENCE_HOST_MAX + 1];     /* gethostname() */
	char listen[PRESENCE_LISTEN_MAX + 1]; /* --listen, or "" */
	char role[PRESENCE_ROLE_MAX + 1];     /* "leader", "follower", ... */
	int64_t revision;   /* the etcd revision its tree has seen */
	int64_t seen_ms;    /* epoch ms of this value's writing */
	int64_t started_ms; /* epoch ms the controller started */
	int stale;	    /* its tree may be behind etcd */
};

/* `out` := "/fnfs/CLUSTER/ctl/" (NAME NULL) or "/fnfs/CLUSTER/ctl/NAME".
 * Returns 0, -EINVAL (a bad cluster or name) or -ENOMEM. */
int presence_key(const char *cluster, const char *name, struct rt_buf *out);

/* `out` := the compact JSON of `v` (listen "" is null). Returns 0,
 * -EINVAL (a string too long or a name not rt_name_valid) or -ENOMEM. */
int presence_encode(const struct presence_value *v, struct rt_buf *out);

/* Decodes the `n` bytes at `p` into `v`: an object with every field of
 * the value of the right type (more fields are allowed, for later
 * versions); strings within their bounds; numbers integers >= 0. Returns
 * 0 or -EINVAL. */
int presence_decode(const char *p, size_t n, struct presence_value *v);

struct presence;

/* Called on the loop thread once the first join ended: `rc` 0 (the key
 * is ours), -EEXIST (the name is taken; `why` says by whom), or the
 * -errno of etcd with its reason. `why` is valid during the call. */
typedef void (*presence_joined_fn)(void *arg, int rc, const char *why);

/* What the presence asks and tells its owner. */
struct presence_callbacks {
	/* The role to publish (a static string, e.g. "follower"). */
	const char *(*role)(void *arg);
	/* The etcd revision the tree has and whether it is stale. Returns
	 * 0, or -errno (nothing to publish: the previous values stay). */
	int (*state)(void *arg, int64_t *revision, int *stale);
	void *arg;		   /* role's and state's */
	presence_joined_fn joined; /* may be NULL; must not free the
				      presence */
	void *joined_arg;
};

/* Joins cluster `cluster` as controller `name` (rt_name_valid), with its
 * `listen` address (NULL: none) on leases of `ttl_s` (>= 2) seconds,
 * through a client of its own on `cfg` (copied). Strings are copied.
 * cb->joined comes on a later loop turn, within about the client's
 * timeout times three plus ttl + 1.5 s. Returns 0 with *out set, or
 * -EINVAL or -ENOMEM (then nothing is called). */
int presence_start(uv_loop_t *loop, const struct etcd_config *cfg,
		   const char *cluster, const char *name, const char *listen,
		   int ttl_s, const struct presence_callbacks *cb,
		   struct presence **out);

/* Called once when presence_stop has finished; presence_free may be
 * called from it. */
typedef void (*presence_done_fn)(void *arg);

/* Leaves: nothing is written any more, and the lease is revoked (the key
 * goes at once). `done` (may be NULL) is called on a later turn once etcd
 * answered, or failed to within the client's timeout. Returns 0, or
 * -EALREADY when stopped already. */
int presence_stop(struct presence *p, presence_done_fn done, void *arg);

/* Frees `p` (NULL: a no-op) without telling etcd anything (the key
 * expires with its lease, as after a kill -9); `done` of an unfinished
 * presence_stop is not called. The loop must run for its handles (and
 * memory) to go. */
void presence_free(struct presence *p);

#endif

/*
 * elect.h - leader election and fencing for a controller, on its libuv
 * loop, over the etcd client (etcd.h) and nothing else.
 *
 * Each controller campaigns in an etcd election (`name`) on a lease of
 * its own. The one whose key is the oldest under `name`/ leads; every
 * write it makes is fenced by a txn compare (elect_fence) that holds only
 * while that key exists with its creation revision, so a deposed leader
 * cannot write, whatever it believes.
 *
 * Stepping down before etcd does. The lease is renewed every ttl/3. The
 * leader counts itself deposed (state LOST) when no renewal answered for
 * ttl - margin (ELECT_MARGIN_MS: a fifth of the ttl, at least 500 ms)
 * since the moment the last answered one was SENT. etcd renewed that
 * lease after we sent the request, so on etcd it expires at the earliest
 * ttl after that moment; its key goes with it, and only then can another
 * campaign win. Both times are on the monotonic clock (rt_mono_ms,
 * CLOCK_MONOTONIC: not moved by wall-clock changes, slewed by NTP by at
 * most 500 ppm, 2.5 ms over 5 s); the margin covers that and the lateness
 * of this loop's timer. elect_is_leader and elect_fence read the clock
 * again, so a loop that stalled past the deadline does not act on it.
 *
 * A lost lease is never reused: the elector revokes it (best effort),
 * grants a new one and campaigns again (etcd withdraws a campaign that
 * timed out by deleting its key, which is named after the lease, a little
 * later). Leadership is learnt from the campaign's answer and from
 * etcd_leader, asked at each renewal and at each change that a watch of
 * `name`/ reports; the latter also tells followers who leads.
 *
 * The etcd client's per-request timeout bounds how long a renewal waits
 * on a member that stopped answering (a partition of that member alone)
 * before it is sent again, at once, to the next member: keep it below
 * 2 ttl/3 - margin (2.3 s for a ttl of 5 s) so that one unreachable
 * member does not depose a leader that the others would keep.
 *
 * Everything runs on the loop thread; nothing blocks; every wait is
 * bounded (the client's timeout, the campaign's bound).
 */
#ifndef FNFS_SCHED_ELECT_H
#define FNFS_SCHED_ELECT_H

#include <stdint.h>

#include <uv.h>

#include "../../store/etcd/etcd.h"

/* A fifth of the ttl, at least this: how long before the lease can
 * expire on etcd the leader steps down. */
#define ELECT_MARGIN_MS 500

/* How long one campaign waits to win before it is withdrawn and made
 * again on a new lease (elect_tune changes it). */
#define ELECT_CAMPAIGN_MS 30000

struct elect;

/* Where this controller stands. */
enum elect_state {
	ELECT_CAMPAIGNING, /* etcd answers, nobody is known to lead */
	ELECT_LEADER,	   /* this controller leads: act, with elect_fence */
	ELECT_FOLLOWER,	   /* another leads (its value is known) */
	ELECT_LOST,	   /* no lease: etcd cannot be reached */
};

/* Called on the loop thread each time the state, the leader's value or
 * the fence revision changes: `leader_value` is the leader's value (this
 * controller's `self` when LEADER; NULL when CAMPAIGNING or LOST; valid
 * during the call), `fence_rev` the creation revision of this
 * controller's leader key when LEADER, else 0. A controller stops acting
 * as leader as soon as it gets any state but LEADER. It may call
 * elect_stop or elect_free (not etcd_client_free) from here. */
typedef void (*elect_change_fn)(void *arg, enum elect_state state,
				const char *leader_value, int64_t fence_rev);

/* What the elector tells its owner. */
struct elect_callbacks {
	elect_change_fn on_change;
	void *arg;
};

/* Starts campaigning in election `name` (e.g. "/fnfs/<cluster>/leader")
 * with value `self` (this controller's id and address, e.g. "ctl-a
 * tls://10.0.0.1:7000") on leases of `ttl_s` seconds (>= 2: etcd's
 * shortest lease with its default election timeout), through `client`,
 * which must outlive the elector. The strings are copied. The first
 * on_change comes on a later loop turn. Returns 0 with *out set, or
 * -EINVAL (bad argument) or -ENOMEM. */
int elect_start(uv_loop_t *loop, struct etcd_client *client, const char *name,
		const char *self, int ttl_s, const struct elect_callbacks *cb,
		struct elect **out);

/* Bounds each campaign to `campaign_ms` (> 0) from the next one on. */
void elect_tune(struct elect *e, int campaign_ms);

/* The state now: LEADER only while the lease cannot have expired on etcd
 * (the clock is read again, so it may say LOST before on_change does). */
enum elect_state elect_state(const struct elect *e);

/* Whether this controller leads now (elect_state == ELECT_LEADER). */
int elect_is_leader(const struct elect *e);

/* Fills `out` with the compare that fences the leader's writes: this
 * controller's leader key still exists with the creation revision it had
 * when it won. Put it first in the compares of each etcd_txn the leader
 * makes: the txn fails (a->succeeded 0) once the key is gone - lease
 * expired or revoked, resigned - and a new leader has a key of its own.
 * out->key is the elector's, valid until the next on_change or
 * elect_free. Returns 0, or -ESTALE when this controller does not lead. */
int elect_fence(const struct elect *e, struct etcd_cmp *out);

/* Called once when elect_stop has finished. */
typedef void (*elect_done_fn)(void *arg);

/* Leaves the election: no more on_change; resigns if it leads and
 * revokes the lease (its key goes at once, so another candidate wins
 * without waiting for the ttl). `done` (may be NULL) is called on a later
 * turn once etcd answered both, or failed to within the client's
 * timeout. Returns 0, or -EALREADY when stopped already. */
int elect_stop(struct elect *e, elect_done_fn done, void *arg);

/* Frees `e` (NULL: a no-op) at once, without telling etcd anything (as a
 * kill -9 would: a lease not stopped expires on etcd within its ttl).
 * `done` of an unfinished elect_stop is not called. Calls under way end
 * on their own (within the client's timeout, or with the client); the
 * loop must run for the elector's memory to go. */
void elect_free(struct elect *e);

/* A state's name: "campaigning", "leader", "follower", "lost". */
const char *elect_state_name(enum elect_state s);

#endif

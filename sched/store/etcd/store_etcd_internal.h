/*
 * store_etcd_internal.h - what the files of the shared store's etcd side
 * (store_etcd.h) share: its state and the functions one file calls in
 * another. store_etcd.c: the model and open/close; store_etcd_watch.c:
 * resync, watch, probe; store_etcd_write.c: compare-and-set txns;
 * store_etcd_mirror.c: the leader's writes, barrier, replay, code/.
 */
#ifndef FNFS_SCHED_STORE_ETCD_INTERNAL_H
#define FNFS_SCHED_STORE_ETCD_INTERNAL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../runtime/base/rt.h"
#include "etcd_keys.h"
#include "../../model/staged.h"
#include "store_etcd.h"

/* How long a write may wait for the watch to bring it back. */
#define WAIT_MS 10000

/* How soon a broken watch is set up again. */
#define REWATCH_MS 500

/* The kinds of key a resync reads (kinds[] below). */
#define NKINDS 10

/* The most operations of one txn of the leader's writes (etcd takes 128;
 * one is the fence). */
#define MIRROR_OPS 127

/* How often the quorum is probed. */
#define PROBE_MS 1000

/* A row this controller knows: its key's mod_revision and value (what a
 * delete, which carries no value, is decoded from). */
struct known {
	int64_t mod;
	enum etcd_keys_kind kind;
	char *value;
	size_t len;
	unsigned gen; /* the resync that saw it */
};

/* A write sent, waiting for the watch. */
struct waiter {
	struct waiter *next;
	struct store_etcd *e;
	int64_t rev;   /* done once the model has this revision */
	int lost;      /* the compares failed: -EAGAIN then */
	char **absent; /* lost: keys the model must have lost first */
	size_t nabsent;
	char **present; /* compared keys expected to exist (lost) */
	size_t npresent;
	uint64_t deadline; /* rt_mono_ms */
	store_done_fn done;
	void *arg;
};

struct store_etcd {
	uv_loop_t *loop;
	struct etcd_client *c;
	char *cluster;
	char *prefix, *prefix_end; /* "/fnfs/NAME/" and its range end */
	struct rt_map known;
	struct rt_map mine; /* key -> struct mine: writes sent, not seen */
	int64_t applied;    /* the newest revision the model has */
	struct etcd_watch *watch;
	int watching;
	uv_timer_t *timer; /* re-watch, and the waiters' deadlines */
	uv_timer_t *kick;  /* the waiters, after a watch's message */
	struct waiter *waiters;
	store_etcd_deliver_fn deliver;
	store_etcd_derived_fn derived;
	void *deliver_arg;
	/* the leader's writes of derived state (store_etcd_mirror_*) */
	struct rt_map mirror; /* key -> struct mirror_op, to send */
	int mirroring;
	int64_t mirror_term;	      /* the leader's term the queue is of */
	int mirror_busy;	      /* a txn of them is under way */
	uv_timer_t *mirror_tm;	      /* sends them on a later turn */
	uint64_t mirror_gen;	      /* of the newest write queued */
	uint64_t mirror_low;	      /* the oldest gen of the txn under way */
	struct mirror_flush *flushes; /* store_etcd_mirror_flush's waits */
	store_etcd_fence_fn fence;
	store_etcd_deposed_fn deposed;
	void *mirror_arg;
	/* a resync: the three ranges, then the diff */
	int syncing;
	int loading;	      /* the open's: changes go to `loaded` */
	struct staged loaded; /* what the open read */
	struct etcd_kv *got[NKINDS];
	size_t ngot[NKINDS];
	int64_t sync_rev;
	int sync_step, sync_rc;
	unsigned gen;
	char *error;
	int stopped;	     /* store_etcd_stop: no client any more */
	int64_t stale_since; /* rt_now_ms when the watch went down */
	/* the quorum probe: a linearizable read every PROBE_MS, since a
	 * watch on a member cut off from the others stays open and quiet */
	int probing;
	uint64_t probe_sent;	/* rt_mono_ms */
	int64_t quorum_lost_ms; /* rt_now_ms of the first failed probe, or 0 */
};

/* The builder of one txn: strings it owns until the call. */
struct txn {
	struct etcd_cmp *cmp;
	struct etcd_op *ops, *fail;
	size_t ncmp, nops, nfail, cap;
	char **strs;
	size_t nstrs, capstrs;
	struct waiter *w;
};

/* One key the leader writes: its value, or a delete (value NULL). */
struct mirror_op {
	char *value;
	size_t len;
	uint64_t gen; /* e->mirror_gen when its newest value was queued */
};

/* What a resync reads, parents first: the rows, then the derived state
 * the leader writes, then code/ (entries, revisions, and which objects
 * are whole: not their chunks). */
extern const enum etcd_keys_kind store_etcd__kinds[NKINDS];

void store_etcd__set_error(struct store_etcd *e, const char *what, int rc,
			   const char *why);

/* The key of the parent of row `r` (a tenant's is none: ""). */
int store_etcd__parent_key(const struct store_etcd *e,
			   const struct store_row *r, struct rt_buf *out);

/* Remembers that a txn sent now writes `key` (`value`, or a delete). */
void store_etcd__mine_set(struct store_etcd *e, const char *key,
			  const char *value, size_t len);

/* A row's key is `key` with value `value` at `mod`: tells the model.
 * Returns 0, or -EAGAIN when its parent is not known yet (kept for a
 * second pass), or -EINVAL for what is not a row of this layout. */
int store_etcd__learn_put(struct store_etcd *e, const struct etcd_kv *kv);

/* The row of `key` went at `rev`. */
void store_etcd__learn_delete(struct store_etcd *e, const char *key,
			      int64_t rev);

void store_etcd__waiter_free(struct waiter *w);

/* Ends the waiters that the model has caught up with, or that waited
 * too long (`all`: every one, with `err`). */
void store_etcd__check_waiters(struct store_etcd *e, int all, int err);

void store_etcd__sync_clear(struct store_etcd *e);

void store_etcd__sync_step(struct store_etcd *e);

/* Reads every row again (at the open, and when the watch's revision was
 * compacted). */
void store_etcd__resync(struct store_etcd *e);

/* A linearizable read of one key, which etcd answers only with a quorum:
 * the watch alone cannot tell a member cut off from the others. One key,
 * not the prefix with a limit: etcd 3.4 walks every key of a range under
 * its index's lock before it applies the limit, which at 100,000 keys
 * held its writes for hundreds of ms, three times a second. */
void store_etcd__probe(struct store_etcd *e);

/* Every REWATCH_MS: the watch when it is down, the quorum probe, and the
 * waiters' deadlines. */
void store_etcd__on_timer(uv_timer_t *t);

const char *store_etcd__keep(struct txn *t, const char *s, size_t n);

void store_etcd__mirror_drop(struct store_etcd *e);

/* Sends up to MIRROR_OPS of the leader's writes as one txn, fenced. */
void store_etcd__mirror_send(uv_timer_t *tm);

#endif

/*
 * store_etcd.h - the tenants, namespaces and functions of a cluster of
 * controllers, kept in etcd (the key layout: etcd_keys.h). Used by
 * store.c when a store is shared (store_open_shared); the rest of sched/
 * knows only store.h.
 *
 * This controller's model follows etcd: a range read of the rows at one
 * revision, then a watch from the next one. A write is a txn whose
 * compares make it a compare-and-set (a row is updated or deleted only
 * at the mod_revision this controller has seen; created only where none
 * is; a child only under a parent that exists; a tenant or namespace
 * deleted only when it has no children); it completes once the watch has
 * brought it back, so the model has it when the writer hears "done".
 */
#ifndef FNFS_SCHED_STORE_ETCD_H
#define FNFS_SCHED_STORE_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "etcd.h"
#include "etcd_keys.h"
#include "../store.h"

struct store_etcd;

/* Called for each change that comes from etcd after the load, in order. */
typedef void (*store_etcd_deliver_fn)(void *arg, const struct store_change *c);

/* Called for each change of the derived state the leader writes
 * (instances, workers, settings, revocations) and of code/ (entries,
 * revisions, objects made whole), at the load too, in order: `r` as
 * decoded (valid during the call), `deleted` 1 when its key
 * went (r holds the last value this controller saw). */
typedef void (*store_etcd_derived_fn)(void *arg, const struct etcd_keys_rec *r,
				      int deleted);

/* Fills the compare that fences the leader's writes (elect_fence):
 * returns 0, or -ESTALE when this controller does not lead. */
typedef int (*store_etcd_fence_fn)(void *arg, struct etcd_cmp *out);

/* Called once when a fenced txn failed its fence: another leads. */
typedef void (*store_etcd_deposed_fn)(void *arg);

/* Connects to cluster `cluster` of the etcd of `cfg` on `loop` and reads
 * its rows (running `loop` until they are read: before the mount
 * serves). Returns 0, -EINVAL (a bad cluster name or endpoint), -EIO or
 * -ETIMEDOUT (etcd could not be read; logged), -ENOMEM. */
int store_etcd_open(struct store_etcd **out, uv_loop_t *loop,
		    const struct etcd_config *cfg, const char *cluster,
		    store_etcd_deliver_fn deliver,
		    store_etcd_derived_fn derived, void *arg);

/* The leader's writes of derived state: from now on store_etcd_mirror
 * queues them (one value per key: the newest), and they are sent on a
 * later loop turn in txns of at most 127 puts and deletes, each behind
 * the compare `fence` gives. A txn that fails on the way is sent again
 * (what it held, unless newer values came); one whose fence failed ends
 * the mirroring, drops the queue and calls `deposed`. `term` is the
 * leader's term the values are stamped with (the creation revision of
 * its election key): a fence on any other revision (the controller won
 * again, on a new key, without a new start) ends the mirroring as a
 * failed fence does, and an answer to a txn of an earlier start is
 * dropped. */
void store_etcd_mirror_start(struct store_etcd *e, store_etcd_fence_fn fence,
			     store_etcd_deposed_fn deposed, void *arg,
			     int64_t term);

/* Ends the mirroring and drops what was not sent. */
void store_etcd_mirror_stop(struct store_etcd *e);

/* Whether the mirroring is on. */
int store_etcd_mirroring(const struct store_etcd *e);

/* Queues `key` := `len` bytes of `value` (NULL: a delete of `key`) when
 * mirroring; a no-op (0) when not. Returns 0 or -ENOMEM. */
int store_etcd_mirror(struct store_etcd *e, const char *key, const char *value,
		      size_t len);

/* The leader's writes not yet acknowledged by etcd. */
size_t store_etcd_mirror_pending(const struct store_etcd *e);

/* Calls `done` (0) once every write queued before this call has been
 * acknowledged by etcd; with -ETIMEDOUT past STORE_ETCD_FLUSH_MS (checked
 * as each txn ends), -ECANCELED when the queue is dropped (no longer the
 * leader, the store stopping). Returns 0 (`done` will be called), 1
 * (nothing to wait for: `done` is not called) or -ENOMEM. */
int store_etcd_mirror_flush(struct store_etcd *e, void (*done)(void *, int),
			    void *arg);
#define STORE_ETCD_FLUSH_MS 2000

/* Calls `done` once this controller's model has every change etcd had
 * committed when the barrier was asked (a linearizable read gives that
 * revision): 0, or -EIO (etcd unreachable, or the watch did not catch up
 * within 10 s), -ECANCELED. Returns 0 or -errno (then `done` is not
 * called). */
int store_etcd_barrier(struct store_etcd *e, store_done_fn done, void *arg);

/* Calls `fn` for each instance and worker this store knows from etcd,
 * with the value etcd has (the leader's state and pid included). */
void store_etcd_replay(struct store_etcd *e, store_etcd_derived_fn fn,
		       void *arg);

/* The etcd client of `e` (for the elector). */
struct etcd_client *store_etcd_client(struct store_etcd *e);

/* Ends the watch, the client and the timer's turns, and fails what waits
 * with -ECANCELED: nothing of `e` keeps the loop running after. Later
 * writes are -ESHUTDOWN. */
void store_etcd_stop(struct store_etcd *e);

/* store_etcd_stop, then frees `e` (its timer's memory once the loop has
 * closed it; NULL: a no-op). */
void store_etcd_close(struct store_etcd *e);

/* Calls `fn` for each row read by the open, parents first; stops at fn's
 * first non-zero result and returns it. */
int store_etcd_load(struct store_etcd *e,
		    int (*fn)(const struct store_row *, void *), void *arg);

/* Sends the `n` changes of `v` as one txn. Returns STORE_LATER (`done`
 * will be called as store_commit_then says) or -errno (-EINVAL for a row
 * outside the layout, -ENOMEM, or the client's refusal). */
int store_etcd_submit(struct store_etcd *e, const struct store_change *v,
		      size_t n, store_done_fn done, void *arg);

/* store_etcd_submit, with the changes of code/ `cv` (`cn`: store.h,
 * store_code_submit) first in the same txn. A deleted function's code/
 * entries and revision are deleted with it. */
int store_etcd_submit_code(struct store_etcd *e, const struct store_change *v,
			   size_t n, const struct store_code_op *cv, size_t cn,
			   store_done_fn done, void *arg);

/* Calls `fn` for each key of `kind` (CODE_FILE, CODE_REVISION or OBJECT)
 * this controller knows, in the order of their keys (a directory of
 * code/ before what it holds), decoded (valid during the call); stops at
 * fn's first non-zero result and returns it. */
int store_etcd_code_each(struct store_etcd *e, enum etcd_keys_kind kind,
			 int (*fn)(const struct etcd_keys_rec *r, void *arg),
			 void *arg);

/* Whether P/om/`hash` is known (1, with its size; 0: not). */
int store_etcd_object_known(struct store_etcd *e, const char *hash,
			    uint64_t *size);

/* What this controller knows of etcd, for status files. */
struct store_etcd_state {
	int64_t revision;    /* the newest revision its model has */
	int watching;	     /* 0: the watch is down, or the quorum probe fails
			      * (the model may be stale) */
	int64_t stale_since; /* epoch ms when it went down (watching 0) */
	const char *endpoint;
	const char *error; /* the last failure, or NULL */
};

/* Fills `out` (strings owned by `e`). */
void store_etcd_state(const struct store_etcd *e, struct store_etcd_state *out);

#endif

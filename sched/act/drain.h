/*
 * drain.h - draining and resuming a worker, what a worker offers
 * changing, and rebalance. Calls reconcile.h, assign.h and common.h below
 * it.
 */
#ifndef FNFS_SCHED_DRAIN_H
#define FNFS_SCHED_DRAIN_H

#include "../internal.h"

/* Drains worker `w`: no new instances; its instances move elsewhere.
 * Returns 0, -EBUSY when no other worker could take them, or -errno of
 * the store. */
int sched__drain(struct sched *s, struct sched_worker *w);

/* Ends a drain. Returns 0 or -errno of the store. */
int sched__resume(struct sched *s, struct sched_worker *w);

/* Whether the worker `id` was drained and not resumed (stored by id, so
 * it outlives the worker's row). */
int sched__drained(struct sched *s, const char *id);

/* Moves instances until the counts of usable workers differ by at most
 * one. Returns 0 or -errno of the store. */
int sched__rebalance(struct sched *s);

#endif

/*
 * orders.h - what the controller sends a worker about an instance: start
 * (with the spec it runs), stop, restart. Calls requests.h below it.
 */
#ifndef FNFS_SCHED_ORDERS_H
#define FNFS_SCHED_ORDERS_H

#include "../internal.h"

/* An instance's id "t/ns/fn/N", malloc'd (NULL without memory). */

/* Sends `start` with the function's run revision, the assignment's epoch
 * and the spec to the instance's worker; `wait` (may be NULL) waits for the
 * answer. Returns 0 or -errno (ENOTCONN). */
int sched__send_start(struct sched *s, struct sched_instance *in,
		      struct sched_wait *wait);

/* Sends a message of `type` (stop, restart) about `in` to its worker,
 * with forget if `forget`, and the assignment's epoch. Returns 0 or -errno
 * (ENOTCONN). */
int sched__send_simple(struct sched *s, struct sched_instance *in,
		       const char *type, int forget, struct sched_wait *wait);

#endif

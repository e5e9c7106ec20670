/*
 * calls_internal.h - what calls.c (queues, dispatch, ends) and
 * calls_start.c (starts, the tick) share.
 */
#ifndef FNFS_SCHED_CALLS_INTERNAL_H
#define FNFS_SCHED_CALLS_INTERNAL_H

#include "../internal.h"

/* A call may wait in its function's queue for `timeout` ms, then run for
 * `timeout` ms: a call that waited long still gets its whole time, and a
 * healthy process is not killed for a wait it did not cause. How long past
 * a call's deadline the controller waits for its worker, which enforces
 * the deadline itself, before it gives up on it: */
#define CALL_GRACE_MS 2000

/* fn's calls, made at its first call; NULL when out of memory. */
struct sched_fn_calls *calls__fn_calls(struct sched_function *fn);

/* Whether fn takes calls: hot or cold, with a command. */
int calls__takes_calls(const struct sched_function *fn);

/* Puts the summary `sum` of a function in the journal: one line for
 * however many happened since the last one. */
void calls__report(struct sched *s, struct sched_function *fn,
		   struct sched_summary *sum);

/* Counts one more event in `sum`: in the journal at once if none was
 * this second, else with the next line (sched__calls_tick). */
void calls__summarise(struct sched *s, struct sched_function *fn,
		      struct sched_summary *sum, int err, const char *reason);

/* Records a failed call: `error` at once, the journal at most once a
 * second per function, so that a failing function cannot flood it. */
void calls__failure(struct sched *s, struct sched_function *fn, int err,
		    const char *reason);

/* Takes call `c` out of its function's queue `fc`. */
void calls__unqueue(struct sched_fn_calls *fc, struct sched_call *c);

/* Ends call `c`: counts it, records a failure, answers whoever waits and
 * frees it. */
void calls__finish(struct sched *s, struct sched_call *c, int err,
		   const char *body, size_t len, const char *reason);

/* A call's deadline timer fired: it ends with ETIMEDOUT. */
void calls__on_deadline(uv_timer_t *t);

/* Monotonic microseconds. */
int64_t calls__mono_us(void);

#endif

/*
 * reconcile.h - one decision per instance (decide.c) carried out: the
 * instances a function wants, made, retired, placed, started, stopped,
 * restarted or moved. Calls assign.h, orders.h, common.h and calls.c's
 * sched__call_lost below it.
 */
#ifndef FNFS_SCHED_RECONCILE_H
#define FNFS_SCHED_RECONCILE_H

#include "assign.h"
#include "../decide/decide.h"

/* Asks the decision (decide.c) what to do with `in`, filling its inputs
 * from the model. */
enum decide_action sched__decide(struct sched *s, struct sched_instance *in,
				 enum decide_cause cause,
				 struct decide_result *res);

/* Moves `in` off its worker: the old copy is stopped and forgotten, the
 * instance goes to `to` (or wherever placement finds room, or pending)
 * and starts there. Returns 0 or -errno of the store. */
STORE_MUST int sched__move(struct sched *s, struct sched_instance *in,
			   struct sched_worker *to, const char *why,
			   struct sched_wait *wait);

/* Carries out the decision for `in` (asked with `cause`): places, starts,
 * stops, restarts or moves it, adding what to wait for to `wait` (may be
 * NULL). `v` is the placement view of its function's batch, or NULL.
 * Returns 0 or -errno of the store. */
STORE_MUST int sched__act(struct sched *s, struct sched_instance *in,
			  enum decide_cause cause, struct sched_view *v,
			  struct sched_wait *wait);

/* Makes instance `n` of `fn` in the model (not stored). Returns it, or
 * NULL without memory. */
struct sched_instance *sched__instance_new(struct sched *s,
					   struct sched_function *fn, int n,
					   int desired_run);

/* Frees an instance's own memory (the object is being freed). */
void sched__instance_free(struct sched_instance *in);

/* Brings the instances of `fn` in line with its spec and sends what the
 * workers must do. */
void sched__reconcile(struct sched *s, struct sched_function *fn);

/* Removes `in`, retiring (a graceful stop: it was no longer wanted while
 * serving calls), once its calls have ended. */
void sched__retire_idle(struct sched *s, struct sched_instance *in);

/* A rolling deploy's next step: when no instance of `fn` is taking its
 * run revision (sched__decide), the lowest-numbered running one still
 * behind it is replaced. Called when an instance's state or revision
 * changes. */
void sched__roll_next(struct sched *s, struct sched_function *fn);

/* Reconciles every function (capacity changed). */
void sched__reconcile_all(struct sched *s);

/* sched__reconcile_all on the loop's next turn, once however often it
 * is asked for in this one: a burst of worker events (1,000 workers
 * registering with a new leader, or silent at once) costs one pass over
 * the functions, not one each, and instances lost together move once. */
void sched__reconcile_soon(struct sched *s);

/* Deletes the rows of every instance of `fn` (inside the caller's
 * transaction, which removes the function). Returns 0 or -errno. */
STORE_MUST int sched__instances_unstore(struct sched *s,
					struct sched_function *fn);

/* Stops and forgets every instance of `fn` once its removal is stored. */
void sched__instances_drop(struct sched *s, struct sched_function *fn);

#endif

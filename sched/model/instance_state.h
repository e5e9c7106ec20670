/*
 * instance_state.h - the one writer of an instance's state: every change
 * of `in->state` goes through sched__instance_set_state (a decision of
 * the controller, checked against a table of legal transitions),
 * sched__instance_reported (what its worker says of its process) or
 * sched__instance_restore (a state read back from the store or from the
 * leader, where only the value is checked). Calls nothing above it.
 */
#ifndef FNFS_SCHED_INSTANCE_STATE_H
#define FNFS_SCHED_INSTANCE_STATE_H

#include "../internal.h"

/* Whether `to` may follow `from` (the table in instance_state.c). Pure:
 * 1 or 0; 0 for a value that is no state. */
int sched__instance_transition_ok(enum sched_instance_state from,
				  enum sched_instance_state to);

/* Whether an instance may be put in state `to` while it is `assigned` (1:
 * it has a worker, 0: none): a pending one has no worker; one starting,
 * running, in backoff, stopping or failed has one (its worker says so).
 * Pure: 1 or 0. */
int sched__instance_state_fits(enum sched_instance_state to, int assigned);

/* Puts `in` in state `to`, a decision of the controller (`why`: a few
 * words for the log should the change be illegal). Asserts that the
 * transition is in the table and that `to` fits its assignment. */
void sched__instance_set_state(struct sched_instance *in,
			       enum sched_instance_state to, const char *why);

/* The state its worker reported of `in` (assigned to that worker), as the
 * word `word` ("starting" ... "failed"; any other word or NULL is `lost`:
 * a worker knows nothing of pending or lost). Sets it and returns it. */
enum sched_instance_state sched__instance_reported(struct sched_instance *in,
						   const char *word);

/* Puts `in` in state `to` read back from a record (the store at start,
 * the leader's rows, a new instance): no transition is checked, only that
 * `to` is a state. */
void sched__instance_restore(struct sched_instance *in,
			     enum sched_instance_state to);

#endif

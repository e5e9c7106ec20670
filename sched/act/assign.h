/*
 * assign.h - assignments of instances to workers: what a worker holds,
 * placement's view of the workers, and placing one instance. Calls only
 * common.h and place.c below it.
 */
#ifndef FNFS_SCHED_ASSIGN_H
#define FNFS_SCHED_ASSIGN_H

#include "../internal.h"

/* The workers as placement sees them, for the instances of one function:
 * built once per reconciliation and kept in step with every change of
 * what a worker holds, so that a batch takes memory as it goes. */
struct sched_view {
	struct place_worker *w;
	struct sched_worker **ws;
	size_t n;
	int built;
};

/* Changes what worker `w` holds by `mb` and `count` instances, in the
 * model and in `v` (may be NULL) if it was built. */
void sched__hold(struct sched_worker *w, struct sched_view *v, int mb,
		 int count);

/* Assigns `in` to `w` (taking its memory there, in `v` too if it is not
 * NULL) under a new epoch (the last one + 1), and stores both. Returns 0
 * or -errno. */
STORE_MUST int sched__assign(struct sched *s, struct sched_instance *in,
			     struct sched_worker *w, struct sched_view *v);

/* Assigns `in` to `w` under its current epoch: `w` registered running
 * that very assignment, taken back as it runs. Returns 0 or -errno. */
STORE_MUST int sched__assign_same(struct sched *s, struct sched_instance *in,
				  struct sched_worker *w);

/* sched__unassign in the model only (the store is told otherwise, or
 * is the source of the change), which cannot fail. */
void sched__unassign_model(struct sched *s, struct sched_instance *in);

/* Takes `in` off its worker (its memory goes back), stored if `persist`.
 * Returns 0 or -errno of the store. */
STORE_MUST int sched__unassign(struct sched *s, struct sched_instance *in,
			       int persist, struct sched_view *v);

/* Whether worker `w` takes new instances now. */
int sched__usable(const struct sched_worker *w);

/* What placement sees of worker `w`. */
void sched__worker_view(struct sched_worker *w, struct place_worker *pw);

/* Frees a view's arrays (it may be built again). */
void sched__view_free(struct sched_view *v);

/* Builds the view of every worker for the instances of `fn`. Returns 0 or
 * -ENOMEM. */
int sched__view_build(struct sched *s, struct sched_view *v,
		      struct sched_function *fn);

/* What placement is asked for an instance of `fn`. */
void sched__request_of(struct sched *s, const struct sched_function *fn,
		       struct place_request *r);

/* Whether the decision lets `in` run on `w` besides what is there. */
int sched__may_run_on(struct sched *s, struct sched_instance *in,
		      struct sched_worker *w);

/* Records why an instance waits, in its status, the function's error file
 * and the journal, once per reason. */
void sched__set_pending(struct sched *s, struct sched_instance *in,
			const char *reason);

/* Finds a worker for `in` (placement rules in place.c) and assigns it
 * there, or says why there is none. `v` may be shared by several calls
 * for one function. Returns 0 (placed or pending) or -errno of the store. */
STORE_MUST int sched__place_in(struct sched *s, struct sched_instance *in,
			       struct sched_view *v);

#endif

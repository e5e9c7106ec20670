/*
 * slots.h - concurrency per instance: an instance serves up to `slots`
 * calls at once (sched_spec_slots: `concurrency` for a hot http or json
 * function, 1 otherwise). The pure rules of dispatch and of Fn's launch
 * rule counted in slots, unit-tested (tests/unit/test_calls.c).
 */
#ifndef FNFS_SCHED_SLOTS_H
#define FNFS_SCHED_SLOTS_H

/* What the rules see of one instance. */
struct slots_instance {
	int n;	    /* its number */
	int usable; /* it takes calls now (running, current, not stopping) */
	int busy;   /* calls it serves */
};

/* Free slots of an instance: `slots` less its busy ones, at least 0 (a
 * lowered concurrency leaves some instances over it for a while). */
int sched_slots_free(const struct slots_instance *in, int slots);

/* Whether a call goes to `a` rather than `b` (NULL: none chosen yet):
 * the lowest-numbered usable instance with a free slot, so that calls
 * pack onto the low instances and the high ones go idle and are the ones
 * scaled in. */
int sched_slots_prefer(const struct slots_instance *a,
		       const struct slots_instance *b, int slots);

/* Fn's launch rule in slots: with `queued` calls waiting and no free
 * slot, `starting` instances on their way (each will bring `slots`) and
 * `total` instances of at most `max`, how many to launch: while the
 * waiting calls outnumber the slots on their way and fewer than `max`
 * exist, one more. */
int sched_slots_launch(int queued, int starting, int slots, int total, int max);

#endif

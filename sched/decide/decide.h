/*
 * decide.h - the one decision of the assignment manager: given what an
 * instance wants, where it is, what its worker offers and the function's
 * current spec, what is to be done with it now. Pure: no I/O, no state,
 * unit-tested from a table (tests/unit/test_decide.c).
 *
 * Every path that changes an instance asks it: a write of a spec or of
 * state/restart, a worker that registers, leaves or drains, a report or
 * an exit, the tick, rebalance and recovery (sched/act/reconcile.c carries
 * the answer out).
 */
#ifndef FNFS_SCHED_DECIDE_H
#define FNFS_SCHED_DECIDE_H

#include <stdint.h>

#include "place.h"
#include "../sched.h"

/* What is to be done with an instance. */
enum decide_action {
	DECIDE_NONE,	/* nothing now (reason says what it waits for) */
	DECIDE_START,	/* place it if it has no worker, then start it */
	DECIDE_STOP,	/* tell its worker to stop it */
	DECIDE_RESTART, /* replace its process on the same worker */
	DECIDE_MOVE,	/* off its worker: stop it there, place it anew */
	DECIDE_PENDING	/* it waits for a worker, for the reason given */
};

/* Why the decision is asked. */
enum decide_cause {
	DECIDE_CONVERGE,    /* anything changed: bring it in line */
	DECIDE_CMD_START,   /* echo start > state */
	DECIDE_CMD_STOP,    /* echo stop > state */
	DECIDE_CMD_RESTART, /* echo 1 > restart */
	DECIDE_REBALANCE    /* echo 1 > workers/rebalance */
};

/* What the decision sees of one instance. */
struct decide_instance {
	int desired_run;		 /* 1: it should run */
	enum sched_instance_state state; /* as its worker last reported */
	uint64_t sent_revision;		 /* of the last start sent, 0: none */
	int sent_stop;			 /* a stop was sent, not yet done */
	int busy;			 /* serving calls */
};

/* The inputs of one decision. */
struct decide_input {
	enum decide_cause cause;
	struct decide_instance in;
	/* Its worker, or NULL without one. `used_mb` leaves out what this
	 * instance holds there; `usable` is online, not leaving and not
	 * draining. */
	const struct place_worker *worker;
	int worker_online;		/* its worker is connected */
	const struct place_request *fn; /* the function's placement */
	uint64_t run_revision;		/* the revision it must run */
	int recovering;			/* known workers may come back */
	int rolling; /* another instance of its function is taking the
		      * run revision and is not running it yet (nor failed):
		      * a running one waits for its turn (a rolling deploy) */
};

/* The decision: one action and why. */
struct decide_result {
	enum decide_action action;
	int fits; /* it has a connected worker that fits it: what it holds
		   * there follows the function's memory */
	char reason[200];
};

/* Decides what to do with one instance. Pure. Returns the action (also
 * in `out->action`), with a reason for every action but a plain start. */
enum decide_action sched_decide(const struct decide_input *d,
				struct decide_result *out);

/* The word of an action ("move"). */
const char *sched_decide_name(enum decide_action a);

#endif

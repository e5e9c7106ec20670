/*
 * calls_state.h - the state the calls module (sched/calls/) owns: the
 * calls under way, the call being started, the counters over every call
 * and the functions it watches. Reached as s->calls_state; only
 * sched/calls/, and the open and close of face/sched.c, touch it.
 */
#ifndef FNFS_SCHED_CALLS_STATE_H
#define FNFS_SCHED_CALLS_STATE_H

#include <stdint.h>

#include "../../runtime/base/rt.h"

struct sched_call;
struct sched_stats;

struct sched_calls_state {
	struct rt_idmap live;	     /* id -> struct sched_call *, unfinished */
	uint64_t next_id;	     /* the id the next call gets */
	struct sched_call *starting; /* in sched_call_start's dispatch */
	int start_err;		     /* how that call ended there, or 0 */
	struct sched_stats *stats;   /* over every call, owned */
	struct rt_idmap scaled;	     /* functions scaled above parallelism */
	struct rt_idmap failing;     /* functions with unreported summaries */
	int no_direct;		     /* --no-direct-calls (direct.h) */
};

#endif

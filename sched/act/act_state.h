/*
 * act_state.h - the state sched/act/ owns: the reconciliation asked for
 * the next loop turn, and whether freed memory should place what
 * waits. Reached as s->act.
 */
#ifndef FNFS_SCHED_ACT_STATE_H
#define FNFS_SCHED_ACT_STATE_H

#include <uv.h>

struct sched_act_state {
	uv_timer_t reconcile_timer; /* sched__reconcile_soon's next turn */
	int reconcile_due;	    /* sched__reconcile_soon was asked */
	int capacity_changed;	    /* memory was freed: place pending ones */
	int reconciling_all;	    /* inside sched__reconcile_all */
};

#endif

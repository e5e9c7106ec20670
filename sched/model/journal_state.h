/*
 * journal_state.h - the state the journal (sched/model/journal.c) owns:
 * the journal itself, the refusals held back, and the lines of a
 * cluster's journal that came before their tenant. Reached as
 * s->journal.
 */
#ifndef FNFS_SCHED_JOURNAL_STATE_H
#define FNFS_SCHED_JOURNAL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"

#define SCHED_ORPHANS 64 /* journal lines kept for a tenant not here yet */

struct sched_journal_state {
	struct events events;	   /* the journal */
	struct events_limit limit; /* the root's refusals held back */
	int limits_held;	   /* some source holds refusals */
	/* Lines of the cluster's journal whose tenant was not here yet (the
	 * watch of the tenants may bring it after them), the oldest first:
	 * the tenant's part takes them when it comes. */
	struct sched_orphan {
		uint64_t at;
		char tenant[64];
	} orphans[SCHED_ORPHANS];
	size_t norphans;
};

#endif

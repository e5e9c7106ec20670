/*
 * instance_state.c - the one writer of an instance's state, with the
 * table of legal transitions (spec 4; docs/architecture.md).
 *
 * The controller decides some states itself: pending (no worker can take
 * it), starting (just assigned), stopped (wanted stopped, or its worker
 * went away), lost (its worker went away or is not back yet). The others
 * (starting ... failed) are what its worker reports of the process, and a
 * worker's word is taken from whatever the controller last thought: a
 * report may follow any state of an assigned instance. So the table is
 * narrow only where the controller alone acts: a pending instance has no
 * worker, and leaves pending only by being assigned (starting), stopped,
 * or lost (a record restored with a worker); the assignment itself is
 * checked by sched__instance_state_fits.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "../common.h"
#include "instance_state.h"

#define ST(x) (1u << (x))
#define ALL                                                                    \
	(ST(SCHED_PENDING) | ST(SCHED_STARTING) | ST(SCHED_RUNNING) |          \
	 ST(SCHED_BACKOFF) | ST(SCHED_STOPPING) | ST(SCHED_STOPPED) |          \
	 ST(SCHED_FAILED) | ST(SCHED_LOST))

/* next[from]: the states that may follow `from`. */
static const unsigned next[SCHED_LOST + 1] = {
	/* No worker: assigned (starting), stopped, or a new reason. Lost:
	 * a record of an older controller restored with a worker. */
	[SCHED_PENDING] = ST(SCHED_PENDING) | ST(SCHED_STARTING) |
			  ST(SCHED_STOPPED) | ST(SCHED_LOST),
	/* Its worker reports any state of the process; the controller moves
	 * it (pending), stops it, or loses its worker. */
	[SCHED_STARTING] = ALL,
	[SCHED_RUNNING] = ALL,
	[SCHED_BACKOFF] = ALL,
	[SCHED_STOPPING] = ALL,
	/* Started again (assigned, or its worker reports starting). */
	[SCHED_STOPPED] = ALL,
	/* Restarted by hand, moved, stopped or lost. */
	[SCHED_FAILED] = ALL,
	/* Its worker came back (adoption: the state it reports), or it is
	 * placed anew. */
	[SCHED_LOST] = ALL,
};

static int is_state(enum sched_instance_state st)
{
	return (unsigned)st <= SCHED_LOST;
}

int sched__instance_transition_ok(enum sched_instance_state from,
				  enum sched_instance_state to)
{
	if (!is_state(from) || !is_state(to))
		return 0;
	return (next[from] & ST(to)) != 0;
}

int sched__instance_state_fits(enum sched_instance_state to, int assigned)
{
	switch (to) {
	case SCHED_PENDING: return !assigned;
	case SCHED_STARTING:
	case SCHED_RUNNING:
	case SCHED_BACKOFF:
	case SCHED_STOPPING:
	case SCHED_FAILED: return assigned;
	case SCHED_STOPPED:
	case SCHED_LOST: return 1;
	}
	return 0;
}

static void name_of(const struct sched_instance *in, char *out, size_t size)
{
	const char *t, *ns, *fn;

	sched__parts(in, &t, &ns, &fn);
	snprintf(out, size, "%s/%s/%s/%d", t, ns, fn, in->n);
}

void sched__instance_set_state(struct sched_instance *in,
			       enum sched_instance_state to, const char *why)
{
	int ok = sched__instance_transition_ok(in->state, to) &&
		 sched__instance_state_fits(to, in->worker != NULL);

	if (!ok) {
		char name[160];

		name_of(in, name, sizeof(name));
		rt_log(RT_LOG_ERROR,
		       "instance %s: illegal state change %s -> %s%s (%s)",
		       name, sched__state_word(in->state),
		       is_state(to) ? sched__state_word(to) : "?",
		       in->worker != NULL ? " while assigned" : "",
		       why != NULL ? why : "");
	}
	assert(ok);
	in->state = to;
}

enum sched_instance_state sched__instance_reported(struct sched_instance *in,
						   const char *word)
{
	enum sched_instance_state st = SCHED_LOST;
	int i;

	assert(in->worker != NULL); /* only its worker reports it */
	for (i = SCHED_STARTING; word != NULL && i <= SCHED_FAILED; i++)
		if (strcmp(sched__state_word(i), word) == 0)
			st = (enum sched_instance_state)i;
	sched__instance_set_state(in, st, "its worker reports it");
	return st;
}

void sched__instance_restore(struct sched_instance *in,
			     enum sched_instance_state to)
{
	assert(is_state(to));
	in->state = to;
}

/*
 * slots.c - dispatch by free slots and Fn's launch rule in slots (see
 * slots.h).
 */
#include <assert.h>
#include <stddef.h>

#include "slots.h"

int sched_slots_free(const struct slots_instance *in, int slots)
{
	/* A busy count is of calls sent and not answered: never below 0. */
	assert(in->busy >= 0);
	if (!in->usable || in->busy >= slots)
		return 0;
	return slots - in->busy;
}

int sched_slots_prefer(const struct slots_instance *a,
		       const struct slots_instance *b, int slots)
{
	if (sched_slots_free(a, slots) == 0)
		return 0;
	return b == NULL || a->n < b->n;
}

int sched_slots_launch(int queued, int starting, int slots, int total, int max)
{
	int launched = 0;

	/* Counts of calls and instances, never below 0. */
	assert(queued >= 0 && starting >= 0);
	if (slots < 1)
		slots = 1;
	while (queued > (long)starting * slots && total < max) {
		starting++;
		total++;
		launched++;
	}
	/* It launches only under the cap. */
	assert(launched == 0 || total <= max);
	return launched;
}

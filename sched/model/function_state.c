/*
 * function_state.c - the one-word state of a function (spec 4), from
 * its instances: what the function's status and the controller's
 * report show.
 */
#include <stdlib.h>

#include "../common.h"
#include "instances.h"

/* The one-word state of a function (spec 4). */
const char *sched__function_states(struct sched_function *fn, int *nrun,
				   int *nwant, int *npend, int *nfail)
{
	struct sched_collect c = sched__instances_of(fn);
	int i;

	*nrun = *nwant = *npend = *nfail = 0;
	for (i = 0; i < c.n; i++) {
		struct sched_instance *in = c.v[i];

		if (!in->desired_run)
			continue;
		(*nwant)++;
		*nrun += in->state == SCHED_RUNNING;
		*npend += in->state == SCHED_PENDING;
		*nfail += in->state == SCHED_FAILED;
	}
	free(c.v);
	if (*nwant == 0)
		return "stopped";
	if (*nrun == *nwant)
		return "running";
	if (*nrun == 0 && *nfail > 0 && *npend == 0)
		return "failed";
	if (*nrun == 0 && *npend > 0)
		return "pending";
	return "degraded";
}

const char *sched__function_state(struct sched_function *fn, int *nrun,
				  int *nwant)
{
	int npend, nfail;

	return sched__function_states(fn, nrun, nwant, &npend, &nfail);
}

/*
 * instances.h - the one-word state of a function (function_state.c),
 * which its files (face/files.c) and report.c show.
 */
#ifndef FNFS_SCHED_INSTANCES_H
#define FNFS_SCHED_INSTANCES_H

#include "../internal.h"

/* The one-word state of a function, with its running and wanted
 * instance counts. */
const char *sched__function_state(struct sched_function *fn, int *nrun,
				  int *nwant);

/* The same, with the pending and failed counts too. */
const char *sched__function_states(struct sched_function *fn, int *nrun,
				   int *nwant, int *npend, int *nfail);

#endif

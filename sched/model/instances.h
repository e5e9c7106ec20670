/*
 * instances.h - the files of functions and instances (state, restart,
 * status, stats, pid, log): sched_file_read and sched_file_write of
 * sched.h, and what report.c shows of a function.
 */
#ifndef FNFS_SCHED_INSTANCES_H
#define FNFS_SCHED_INSTANCES_H

#include "../internal.h"

/* The one-word state of a function, with its running and wanted
 * instance counts. */
const char *sched__function_state(struct sched_function *fn, int *nrun,
				  int *nwant);

#endif

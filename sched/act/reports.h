/*
 * reports.h - what workers say about instances: stored instances loaded
 * at start, instance reports, exits, heartbeats, adoption of what a
 * registering worker runs, and a worker's loss. Calls reconcile.h,
 * assign.h, requests.h and calls.c's dispatch below it.
 */
#ifndef FNFS_SCHED_REPORTS_H
#define FNFS_SCHED_REPORTS_H

#include "../internal.h"

/* Loads stored instances into the model (after functions and workers).
 * Returns 0 or -errno. */
int sched__instances_load(struct sched *s);

/* Handles an instance report, an exit or a heartbeat from worker `w`. */
void sched__on_instance(struct sched *s, struct sched_worker *w,
			const struct rt_msg *m);
void sched__on_exited(struct sched *s, struct sched_worker *w,
		      const struct rt_msg *m);
void sched__on_heartbeat(struct sched *s, struct sched_worker *w,
			 const struct rt_msg *m);

/* A worker registered with these running instances: adopt those assigned
 * to it, stop the others. */
void sched__adopt(struct sched *s, struct sched_worker *w, json_t *running);

/* A worker went away: its instances are lost and placed elsewhere
 * (`quiet`: at shutdown, without events). */
void sched__worker_lost(struct sched *s, struct sched_worker *w, int quiet);

#endif

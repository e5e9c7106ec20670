/*
 * workers.h - the workers in the model: registration, messages of a
 * registered worker, a worker gone, workers known from the store, and the
 * files of workers/. Calls drain.h, pool.h, reports.h, reconcile.h,
 * requests.h and conn.h below it.
 */
#ifndef FNFS_SCHED_WORKERS_H
#define FNFS_SCHED_WORKERS_H

#include "../workers/conn.h"

/* Loads the workers known from before (offline until they register).
 * Returns 0 or -errno. */
int sched__workers_load(struct sched *s);

/* A `register` message on connection `c` (a struct sched_conn_ops
 * callback). */
void sched__on_register(struct sched *s, struct conn *c,
			const struct rt_msg *m);

/* A message from registered worker `w` (a struct sched_conn_ops
 * callback). */
void sched__on_message(struct sched *s, struct sched_worker *w,
		       const struct rt_msg *m);

/* The connection of worker `w` closed (a struct sched_conn_ops callback). */
void sched__worker_gone(struct sched *s, struct sched_worker *w,
			const char *why);

/* Frees a worker's own memory (the object is being freed). */
void sched__worker_free(struct sched_worker *w);

/* Renders a worker or pool file. */
int sched__worker_render(struct sched *s, struct sched_obj *o,
			 enum sched_file f, struct rt_buf *out);

/* Writes a file of workers/ or of a worker (pool_size, strategy,
 * rebalance, W/state). Returns 0 or -errno. */
int sched__cluster_write(struct sched *s, struct sched_obj *o,
			 enum sched_file f, const char *buf, size_t len);

#endif

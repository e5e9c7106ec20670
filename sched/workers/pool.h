/*
 * pool.h - the pool of local workers (Flink's designated pool: counted,
 * started, replaced, limited in starts a minute) and workers/pool_size,
 * workers/status. Calls reports.h and requests.h below it.
 */
#ifndef FNFS_SCHED_POOL_H
#define FNFS_SCHED_POOL_H

#include "../internal.h"

/* The local worker slot with id `id`, or NULL if `id` is no local one. */
struct sched_local *sched__local_of(struct sched *s, const char *id);

/* The registered worker of local slot `l`, or NULL. */
struct sched_worker *sched__local_worker(struct sched *s,
					 const struct sched_local *l);

/* Grows or shrinks the wanted set, then starts what is missing and asks
 * the unwanted to leave. */
void sched__pool_check(struct sched *s);

/* Writes workers/pool_size. Returns 0 or -errno. */
int sched__pool_write(struct sched *s, const char *buf, size_t len);

/* Renders workers/status: the pool as Flink counts it. */
int sched__pool_status(struct sched *s, struct rt_buf *out);

/* Whether a worker may soon take instances that wait for one: a local
 * worker is starting, or a restart of fnfs still waits for the workers it
 * knew. */
int sched__workers_coming(struct sched *s);

#endif

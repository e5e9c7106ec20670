/*
 * pool_state.h - the state the pool (sched/workers/pool.c) owns: the
 * designated local workers, how they are started and the start limit.
 * Reached as s->pool_state; sched_start (face/lifecycle.c) fills it from
 * the options.
 */
#ifndef FNFS_SCHED_POOL_STATE_H
#define FNFS_SCHED_POOL_STATE_H

#include <stdint.h>

#include <uv.h>

#define SCHED_POOL_MAX 256 /* local workers at most */

struct sched;

/* A local worker process of the pool. */
struct sched_local {
	struct sched *s;
	char id[32];		 /* "local-K" */
	int wanted;		 /* part of the pool */
	int live;		 /* our child process runs */
	uv_process_t proc;	 /* valid while live (and closing) */
	int closing;		 /* proc handle being closed */
	int64_t next_spawn_mono; /* not before this */
};

struct sched_pool_state {
	int size;	   /* designated local workers */
	int worker_memory; /* MB per local worker */
	char *self;	   /* the fnfs binary, owned */
	char *log_path;	   /* local workers' stderr, owned, or NULL */
	struct sched_local locals[SCHED_POOL_MAX];
	int starts_per_minute; /* local worker starts allowed a minute */
	int64_t starts[64];    /* monotonic ms of recent starts, a ring */
	int nstarts;	       /* entries used in starts */
	int paused;	       /* the pool waits for the start limit */
};

#endif

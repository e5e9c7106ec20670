/*
 * internal.h - what the files of sched/ share: the controller's state and
 * the helpers that cross files. Not for fs/.
 */
#ifndef FNFS_SCHED_INTERNAL_H
#define FNFS_SCHED_INTERNAL_H

#include <uv.h>

#include "../runtime/wire.h"
#include "events.h"
#include "place.h"
#include "sched.h"
#include "stats.h"
#include "store.h"

#define SCHED_POOL_MAX 256 /* local workers at most */
/* Default silence that makes a worker offline, ms. */
#define SCHED_HEARTBEAT_TIMEOUT_MS 3000
/* Default local worker starts allowed a minute. */
#define SCHED_STARTS_PER_MINUTE 10
#define SCHED_RECOVERY_MS	3000  /* wait for known workers after a start */
#define SCHED_WAIT_MS		10000 /* bound of a write that waits */
#define SCHED_LOG_WAIT_MS	5000  /* bound of a log read */
#define SCHED_LOG_TAIL		65536 /* bytes of log per instance */
#define SCHED_RESPAWN_MS	1000 /* delay before replacing a local worker */
#define SCHED_HUNG_MS                                                          \
	30000 /* offline yet alive this long: killed and replaced */

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

struct sched {
	struct store *store;   /* owned */
	struct events events;  /* the journal */
	struct rt_idmap index; /* id -> struct sched_obj *, all but the root */
	struct sched_obj root; /* the tree's root; children are tenants */
	struct sched_obj pool; /* workers/; children are workers */
	uint64_t next_id;      /* the id the next object gets */
	char *datadir;	       /* owned */

	/* The cluster side (sched_start). */
	uv_loop_t *loop;  /* NULL until started */
	uv_pipe_t server; /* DATA/ctl.sock */
	char *sock_path;  /* owned */
	uv_timer_t tick;  /* once a second: health, pool, pending */
	struct rt_wire_flusher flusher; /* frames to workers, per loop turn */
	struct rt_idmap requests;	/* seq -> struct sched_request * */
	uint64_t next_seq;
	int pool_size;		/* designated local workers */
	int worker_memory;	/* MB per local worker */
	char *self;		/* the fnfs binary, owned */
	char *log_path;		/* local workers' stderr, owned, or NULL */
	int64_t recovery_until; /* monotonic ms: known workers may return */
	struct sched_local locals[SCHED_POOL_MAX];
	int capacity_changed; /* memory was freed: place pending ones */
	int64_t last_tick;
	int strategy;	       /* enum sched_strategy (persisted) */
	int heartbeat_timeout; /* ms */
	int starts_per_minute; /* local worker starts allowed a minute */
	int64_t starts[64];    /* monotonic ms of recent starts, a ring */
	int nstarts;	       /* entries used in starts */
	int paused;	       /* the pool waits for the start limit */
	uint64_t rng;
	/* state of sched__random */ /* monotonic ms of the last tick */
	struct rt_idmap calls;	     /* id -> struct sched_call *, unfinished */
	uint64_t next_call;	     /* the id the next call gets */
	struct sched_call *starting; /* in sched_call_start's dispatch */
	int start_err;		     /* how that call ended there, or 0 */
	struct sched_stats *stats;   /* over every call, owned */
	struct rt_idmap scaled;	     /* functions scaled above parallelism */
	struct rt_idmap failing;     /* functions with unreported summaries */
	int shutting_down;
	int reconciling_all; /* inside sched__reconcile_all */
	void (*shutdown_done)(void *arg);
	void *shutdown_arg;
	uv_timer_t shutdown_timer;
};

/* A call from its start to its end. */
struct sched_call {
	uint64_t id;
	struct sched *s;
	struct sched_function *fn; /* its function */
	struct sched_instance *in; /* where it runs, or NULL while queued */
	char *body;		   /* the request, owned, until sent */
	size_t len;
	int64_t start_us;    /* monotonic us it started */
	int64_t deadline_ms; /* epoch ms */
	uv_timer_t *timer;   /* the deadline; frees the call once closed */
	sched_call_fn done;  /* NULL: nobody waits (async, detached) */
	void *arg;
	struct sched_call *next; /* in the queue */
	int late;		 /* past the deadline, waiting for the worker */
	int cold;		 /* a cold function's call */
};

/* Like events of a function, in the journal at most once a second: the
 * first at once, the rest as one line with their count. */
struct sched_summary {
	int64_t sec;  /* epoch second of the last line */
	long pending; /* events not yet in the journal */
	int err;      /* of the newest */
	char reason[200];
};

/* A function's calls: its queue, how far it is scaled out, its stats and
 * the summaries of its failed calls and refused requests. */
struct sched_fn_calls {
	struct sched_call *head, *tail; /* the queue */
	int queued;
	int scale; /* instances wanted now, above parallelism when busy */
	struct sched_stats stats;
	struct sched_summary failed;  /* call.failed */
	struct sched_summary refused; /* function.rejected file=invoke */
};

/* An outstanding request to a worker. */
struct sched_request {
	uint64_t seq;
	struct sched_wait *wait;     /* NULL once the wait is over */
	struct sched_worker *worker; /* whom it went to */
	int slot;		     /* part of a multi-part read */
	uint64_t instance_id;	     /* the instance it is about, or 0 */
};

struct sched_wait {
	struct sched *s;
	sched_done_fn done; /* NULL once cancelled */
	void *arg;
	int remaining; /* requests not yet answered */
	int err;       /* first error */
	int finished;
	uv_timer_t timer;     /* the bound */
	struct rt_buf *out;   /* reads: where the content goes */
	struct rt_buf *parts; /* reads: one part per slot, owned */
	char **prefixes;      /* reads: per slot line prefix, owned, or NULL */
	int nparts;
};

/* ---- sched.c */

/* Makes a child object of `type` below `parent` with `name`. */
struct sched_obj *sched__obj_new(struct sched *s, enum sched_obj_type type,
				 struct sched_obj *parent, const char *name,
				 int64_t created, int64_t updated);

/* Unlinks and frees one object (its children must be gone). */
void sched__obj_drop(struct sched *s, struct sched_obj *o);

/* Journals `kind` for object `o` with preformatted " k=v" pairs. */
void sched__event(struct sched *s, const struct sched_obj *o, const char *kind,
		  const char *kvs);

/* Sets a function's error file to `reason`, with the time. */
void sched__set_error(struct sched_function *fn, const char *reason);

/* Records a refused write in a function's error file and the journal. */
void sched__reject(struct sched *s, struct sched_function *fn, const char *file,
		   int err, const char *reason);

/* ---- instances.c */

/* Loads stored instances into the model (after functions and workers). */
int sched__instances_load(struct sched *s);

/* Brings the instances of `fn` in line with its spec and sends what the
 * workers must do. */
void sched__reconcile(struct sched *s, struct sched_function *fn);

/* Asserts that no worker's free memory is negative (debug builds). */
void sched__check_free(struct sched *s);

/* Reconciles every function (capacity changed). */
void sched__reconcile_all(struct sched *s);

/* Deletes the rows of every instance of `fn` (inside the caller's
 * transaction, which removes the function). Returns 0 or -errno. */
int sched__instances_unstore(struct sched *s, struct sched_function *fn);

/* Stops and forgets every instance of `fn` once its removal is stored. */
void sched__instances_drop(struct sched *s, struct sched_function *fn);

/* Frees an instance's own memory (the object is being freed). */
void sched__instance_free(struct sched_instance *in);

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

/* The instances of `fn` in order of their number (a malloc'd array, `*n`
 * of them). */
struct sched_instance **sched__instances_sorted(struct sched_function *fn,
						int *n);

/* The one-word state of a function, with its running and wanted
 * instance counts. */
const char *sched__function_state(struct sched_function *fn, int *nrun,
				  int *nwant);

/* Finds an instance by its id "t/ns/fn/N". */
struct sched_instance *sched__instance_by_id(struct sched *s, const char *id);

/* The instances a hot or cold function wants now. */
int sched__wanted(const struct sched_function *fn);

/* ---- calls.c */

/* Sends queued calls of `fn` to its idle instances, and launches
 * instances when Fn's rule says so. */
void sched__dispatch(struct sched *s, struct sched_function *fn);

/* A worker's `result` message. */
void sched__on_result(struct sched *s, struct sched_worker *w,
		      const struct rt_msg *m);

/* Instance `in` can no longer answer its call (retired, lost, moved):
 * the call fails with ECONNRESET. */
void sched__call_lost(struct sched *s, struct sched_instance *in,
		      const char *why);

/* Once a second: scale-in of idle instances, summaries of failures. */
void sched__calls_tick(struct sched *s);

/* Frees the calls of a function being removed (they fail with ENOENT). */
void sched__calls_free(struct sched *s, struct sched_function *fn);

/* Frees the state of calls at close. */
void sched__calls_close(struct sched *s);

/* Renders a function's stats, an instance's call counters, and the root
 * files status, stats and metrics. */
int sched__calls_render(struct sched *s, struct sched_obj *o, enum sched_file f,
			struct rt_buf *out);

/* Appends an instance's call counters (stats keys) to `out`. */
int sched__instance_call_stats(struct sched *s, struct sched_instance *in,
			       struct rt_buf *out);

/* ---- cluster.c */

/* Sends a message with a body to a worker (dropped if it is not
 * connected); consumes the header. */
void sched__send_body(struct sched *s, struct sched_worker *w, json_t *header,
		      const void *body, size_t len);

/* Sends a message to a worker (dropped if it is not connected); consumes
 * the header. */
void sched__send(struct sched *s, struct sched_worker *w, json_t *header);

/* Whether a worker may soon take instances that wait for one: a local
 * worker is starting, or a restart of fnfs still waits for the workers it
 * knew. */
int sched__workers_coming(struct sched *s);

/* Sends a request that `wait` (may be NULL) waits for; consumes the
 * header. Returns 0, or -ENOTCONN when the worker is not connected. */
int sched__request(struct sched *s, struct sched_worker *w, json_t *header,
		   struct sched_wait *wait, int slot, uint64_t instance_id);

/* Starts a wait bounded by `ms`. */
struct sched_wait *sched__wait_new(struct sched *s, sched_done_fn done,
				   void *arg, int ms);

/* Completes the wait if nothing is outstanding (call after sending). */
void sched__wait_arm(struct sched *s, struct sched_wait *w);

/* Frees a worker's own memory (the object is being freed). */
void sched__worker_free(struct sched_worker *w);

/* Renders a worker or pool file. */
int sched__worker_render(struct sched *s, struct sched_obj *o,
			 enum sched_file f, struct rt_buf *out);

/* Writes a file of workers/ or of a worker (pool_size, strategy,
 * rebalance, W/state). Returns 0 or -errno. */
int sched__cluster_write(struct sched *s, struct sched_obj *o,
			 enum sched_file f, const char *buf, size_t len);

/* Drains worker `w`: no new instances; its instances move elsewhere.
 * Returns 0, or -EBUSY when no other worker could take them. */
int sched__drain(struct sched *s, struct sched_worker *w);

/* Ends a drain. Returns 0 or -errno of the store. */
int sched__resume(struct sched *s, struct sched_worker *w);

/* Whether the worker `id` was drained and not resumed (stored by id, so
 * it outlives the worker's row). */
int sched__drained(struct sched *s, const char *id);

/* What worker `w` offers changed: its instances that no longer fit it
 * move. Returns 0 or -errno of the store. */
int sched__worker_changed(struct sched *s, struct sched_worker *w);

/* Moves instances until the counts of usable workers differ by at most
 * one. Returns 0. */
int sched__rebalance(struct sched *s);

/* Stores a worker's row (id, memory, tags, namespaces, local, drained).
 * Returns 0 or -errno of the store. */
int sched__worker_persist(struct sched *s, struct sched_worker *w);

/* Writes workers/pool_size. */
int sched__pool_write(struct sched *s, const char *buf, size_t len);

/* A pseudo-random number (xorshift), for the random strategy. */
unsigned long sched__random(struct sched *s);

/* Parses a whole write as an integer in [lo, hi]. */
int sched__parse_int(const char *buf, size_t len, long lo, long hi, long *out);

#endif

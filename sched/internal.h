/*
 * internal.h - what every file of sched/ shares: the controller's state
 * (struct sched) and the structs several modules use (calls, requests,
 * waits, local workers), with the helpers of model/objects.c (the model) and
 * calls.c. Each other module declares what others may use in its own
 * header: common.h, conn.h, requests.h, assign.h, orders.h, reconcile.h,
 * reports.h, drain.h, pool.h, workers.h, instances.h. Not for fs/.
 */
#ifndef FNFS_SCHED_INTERNAL_H
#define FNFS_SCHED_INTERNAL_H

#include <uv.h>

#include "../runtime/base/wire.h"
#include "model/events.h"
#include "decide/place.h"
#include "sched.h"
#include "model/stats.h"
#include "store/store.h"
#include "cluster/cluster.h"
#include "calls/calls_state.h"
#include "workers/pool_state.h"
#include "workers/links_state.h"
#include "act/act_state.h"
#include "model/journal_state.h"

/* Default silence that makes a worker offline, ms. */
#define SCHED_HEARTBEAT_TIMEOUT_MS 3000
/* Default local worker starts allowed a minute. */
#define SCHED_STARTS_PER_MINUTE 10
#define SCHED_RECOVERY_MS	3000  /* wait for known workers after a start */
#define SCHED_WAIT_MS		10000 /* bound of a write that waits */
#define SCHED_READY_MARGIN_MS	8000  /* + ready_timeout: a wait for ready */
#define SCHED_LOG_WAIT_MS	5000  /* bound of a log read */
#define SCHED_LOG_TAIL		65536 /* bytes of log per instance */
#define SCHED_RESPAWN_MS	1000 /* delay before replacing a local worker */
#define SCHED_HUNG_MS                                                          \
	30000 /* offline yet alive this long: killed and replaced */

struct sched_conn_ops; /* conn.h */
struct sched_peer_ops; /* conn.h */
struct sched_cluster;  /* cluster/cluster_state.h */

/*
 * The calls that go up the layers (decide < model, store < workers <
 * code < calls < act < cluster < face): what the lower ones tell the
 * upper ones. sched_open (face/sched.c), the one place that knows every
 * layer, sets them once; the lower layers call through them and name no
 * file above their own (scripts/sched-cycles). Each says what happens,
 * not who does it.
 */
struct sched_hooks {
	/* An instance, worker or function leaves the model: what the
	 * layers above hold for it goes too (act: its direct calls;
	 * workers: its fence and connection; calls and code: the
	 * function's queue and code). */
	void (*instance_free)(struct sched_instance *in);
	void (*worker_free)(struct sched_worker *w);
	void (*function_drop)(struct sched *s, struct sched_function *fn);
	/* act: a function's instances to what it wants, now; all of them
	 * on the next loop turn; an idle instance retired. */
	void (*reconcile)(struct sched *s, struct sched_function *fn);
	void (*reconcile_soon)(struct sched *s);
	void (*retire_idle)(struct sched *s, struct sched_instance *in);
	/* act: a worker lost (its process gone, its connection closed):
	 * its instances wait for it or go elsewhere; `quiet`: no event. */
	void (*worker_lost)(struct sched *s, struct sched_worker *w, int quiet);
};

#define SCHED_WORKER_IDS_MAX 65536

struct sched {
	struct store *store;		    /* owned */
	struct sched_journal_state journal; /* model/journal.c's */
	struct rt_idmap index; /* id -> struct sched_obj *, all but the root */
	/* The ids of workers gone, by name (values: the id as uintptr_t):
	 * a worker of that name again gets its id back, so its inodes (its
	 * directory, its files) are the same, and the kernel may keep its
	 * entry cached (fs/ops.c). At most SCHED_WORKER_IDS_MAX names: a
	 * worker over it gets a new id (then, for a second, an ENOENT of a
	 * name the kernel cached). */
	struct rt_map worker_ids;
	struct sched_obj root; /* the tree's root; children are tenants */
	struct sched_obj pool; /* workers/; children are workers */
	uint64_t next_id;      /* the id the next object gets */
	char *datadir;	       /* owned */
	uint32_t run_as_uid;   /* who root's tenants' functions run as */
	uint32_t run_as_gid;

	/* The cluster side (sched_start). */
	uv_loop_t *loop;	/* NULL until started */
	uv_timer_t tick;	/* once a second: health, pool, pending */
	uint64_t tick_last;	/* rt_mono_ms() of the last tick */
	int64_t held_max_ms;	/* the loop's longest hold (on_tick) */
	int64_t recovery_until; /* monotonic ms: known workers may return */
	int64_t journal_until;	/* monotonic ms: a shutdown's journal flush */
	int strategy;		/* enum sched_strategy (persisted) */
	int heartbeat_timeout;	/* ms */
	uint64_t rng;		/* state of sched__random */
	int shutting_down;
	void (*shutdown_done)(void *arg);
	void *shutdown_arg;
	uv_timer_t shutdown_timer;
	struct sched_code_state *code; /* functions' code/ (code.c) */

	struct sched_hooks hooks;      /* the calls up the layers, set once */
	struct sched_cluster *cluster; /* the role and its state (cluster.h),
					owned */
	/* The role's table, chosen once (cluster.c), for role.h's queries:
	 * s->cluster->ops, NULL before sched_cluster_open. */
	const struct sched_cluster_ops *role;
	struct sched_calls_state calls_state; /* calls/calls_state.h */
	struct sched_pool_state pool_state;   /* workers/pool_state.h */
	struct sched_links_state links;	      /* workers/links_state.h */
	struct sched_act_state act;	      /* act/act_state.h */
	long long held_requests; /* bytes in open invoke files (quota.h) */
};

/* A call from its start to its end. */
struct sched_call {
	uint64_t id;
	struct sched *s;
	struct sched_function *fn; /* its function */
	struct sched_instance *in; /* where it runs, or NULL while queued */
	char *body;		   /* the request, owned, until sent */
	size_t len;
	size_t held;	      /* of it, taken from the quotas (quota.h) */
	uint64_t held_tenant; /* whose quota that is: a tenant's id */
	int64_t start_us;     /* monotonic us it started */
	int64_t deadline_ms;  /* epoch ms */
	uv_timer_t *timer;    /* the deadline; frees the call once closed */
	sched_call_fn done;   /* NULL: nobody waits (async, detached) */
	void *arg;
	struct sched_call *next;	      /* in the queue */
	struct sched_call *on_next, *on_prev; /* in its instance's calls */
	int late; /* past the deadline, waiting for the worker */
	int cold; /* a cold function's call */
	/* direct.c: the connection it is under way on, when the controller
	 * sent it itself, or NULL */
	struct sched_direct_conn *direct;
	int via_direct; /* sent directly: counted in its instance's */
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

/* ---- the model's objects (model/objects.c) */

/* Makes a child object of `type` below `parent` with `name`. */
struct sched_obj *sched__obj_new(struct sched *s, enum sched_obj_type type,
				 struct sched_obj *parent, const char *name,
				 int64_t created, int64_t updated);

/* The store's row of a tenant, namespace or function `o`, pointing into
 * it (valid while `o` is). */
void sched__obj_row(const struct sched_obj *o, struct store_row *r);

/* Unlinks and frees one object (its children must be gone). */
void sched__obj_drop(struct sched *s, struct sched_obj *o);

/* The tree's load at open (objects.c): every tenant, namespace and
 * function row of the store into the model. 0 or -errno. */
int sched__tree_load(struct sched *s);

/* Frees every object of the model (sched_close). */
void sched__tree_free(struct sched *s);

/* The parent the store's row `r` names, or NULL; the row's own name. */
struct sched_obj *sched__row_parent(struct sched *s, const struct store_row *r);
const char *sched__row_name(const struct store_row *r);

/* Makes the object of row `r` under `parent` (*out). Returns 0, -ENOMEM,
 * or -EIO for a spec that does not read back (logged). */
int sched__obj_from_row(struct sched *s, struct sched_obj *parent,
			const struct store_row *r, struct sched_obj **out);

/* sched_create, sched_remove, sched_tenant_chown and sched_function_write
 * as they commit through store_commit_then: each may also return
 * SCHED_LATER (a shared store), and then `done` is called once the change
 * is applied here or has failed (sched_op_run drives them). */
int sched__create(struct sched *s, struct sched_obj *parent, const char *name,
		  const struct sched_caller *who, store_done_fn done, void *arg,
		  struct sched_obj **out);
int sched__remove(struct sched *s, struct sched_obj *parent, const char *name,
		  const struct sched_caller *who, store_done_fn done,
		  void *arg);
int sched__tenant_chown(struct sched *s, struct sched_obj *t,
			const struct sched_caller *who, int64_t uid,
			int64_t gid, int64_t mode, store_done_fn done,
			void *arg);
int sched__function_write(struct sched *s, struct sched_function *fn,
			  enum sched_attr a, const char *buf, size_t len,
			  const struct sched_caller *who, store_done_fn done,
			  void *arg);

/* Journals `kind` for object `o` with preformatted " k=v" pairs. */
void sched__event(struct sched *s, const struct sched_obj *o, const char *kind,
		  const char *kvs);

/* Sets a function's error file to `reason`, with the time. */
void sched__set_error(struct sched_function *fn, const char *reason);

/* ---- journal.c */

struct sched_tenant;

/* Journals `kind` for `object` with " k=v" pairs `kvs`, in the part of
 * tenant `t` too (may be NULL); a refusal goes through the limit of its
 * tenant (or the root's). */
void sched__journal(struct sched *s, struct sched_tenant *t, const char *kind,
		    const char *object, const char *kvs);

/* The cluster's journal's listener: a line came back at `at`; its
 * tenant's part has it too, or keeps it until that tenant comes. */
void sched__journal_line(void *arg, const char *tenant, uint64_t at);

/* Tenant `t` came: its lines that came first go to its part. */
void sched__adopt_orphans(struct sched *s, struct sched_tenant *t);

/* Stops the cluster's journal (no etcd call after it). */
void sched__journal_stop(struct sched *s);

/* The cluster's journal sends what it holds at once from now on. */
void sched__journal_flush(struct sched *s);

/* Journals the summaries of refusals held back (events_limit) from a
 * second before now, or all of them if `all`. */
void sched__journal_tick(struct sched *s, int all);

/* Whether the cluster's journal has nothing left to send that it can
 * send (1 on one machine). */
int sched__journal_flushed(const struct sched *s);

/* Records a refused write in a function's error file and the journal. */
void sched__reject(struct sched *s, struct sched_function *fn, const char *file,
		   int err, const char *reason);

/* ---- calls.c */

/* The instances a hot or cold function wants now. */
int sched__wanted(const struct sched_function *fn);

/* Sends queued calls of `fn` to its idle instances, and launches
 * instances when Fn's rule says so. */
void sched__dispatch(struct sched *s, struct sched_function *fn);

/* A worker's `result` message. */
void sched__on_result(struct sched *s, struct sched_worker *w,
		      const struct rt_msg *m);

/* Ends call `c`, under way on its instance, with the worker's words for
 * it: `status` ("ok", "error", "timeout", "reset", anything else a
 * failure) and `reason`, and its result `body` (`len` bytes); then the
 * instance's queue moves. A worker's `result` and a direct call's
 * response (direct.c) end here alike. */
void sched__call_result(struct sched *s, struct sched_call *c, const char *st,
			const char *reason, const char *body, size_t len);

/* Sends call `c`, just put on its instance, to the instance's worker (a
 * `call` frame), and frees its body. */
void sched__send_to_worker(struct sched *s, struct sched_call *c);

/* Whether instance `in` takes new calls now: running what it was last
 * sent, on a usable worker, not being stopped or removed. Calls go to its
 * free slots (slots.h). */
int sched__takes_calls(const struct sched_instance *in);

/* Instance `in` can no longer answer its calls (removed with its
 * function, lost, moved): they fail with ECONNRESET. */
void sched__call_lost(struct sched *s, struct sched_instance *in,
		      const char *why);

/* Once a second: scale-in of idle instances, summaries of failures. */
void sched__calls_tick(struct sched *s);

/* Frees the body of call `c` (sent, or the call ends) and gives its
 * bytes back to the quotas. */
void sched__call_body_free(struct sched_call *c);

/* Records a refused request of `fn` (errno `err`) like a refused call:
 * `error` at once, the journal at most once a second. */
void sched__call_refused(struct sched *s, struct sched_function *fn, int err,
			 const char *reason);

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

#endif

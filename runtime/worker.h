/*
 * worker.h - the worker process (`fnfs worker`): its connection to the
 * controller and the runtime spawner that starts, supervises, restarts and
 * stops function instances. Private to runtime/.
 */
#ifndef FNFS_RT_WORKER_H
#define FNFS_RT_WORKER_H

#include <jansson.h>
#include <sys/types.h>
#include <uv.h>

#include "rt.h"
#include "wire.h"

/* Supervision constants (spec 9). */
#define RT_BACKOFF_FIRST_MS 100	       /* first restart delay */
#define RT_BACKOFF_MAX_MS   30000      /* the delay doubles up to this */
#define RT_BACKOFF_RESET_MS 10000      /* a run this long resets the delay */
#define RT_START_LIMIT	    5	       /* more exits than this ... */
#define RT_START_WINDOW_MS  10000      /* ... within this window: failed */
#define RT_STOP_GRACE_MS    5000       /* SIGTERM, then SIGKILL after this */
#define RT_EXITS_KEPT	    5	       /* exits listed in status */
#define RT_LOG_ROTATE_BYTES (1u << 20) /* a log file rotates past this */
#define RT_LOG_KEEP	    3	       /* rotated files kept: .1 .. .3 */
#define RT_SAMPLE_MS	    1000       /* /proc sampling and heartbeat period */

enum rt_state {
	RT_STARTING,
	RT_RUNNING,
	RT_BACKOFF,
	RT_STOPPING,
	RT_STOPPED,
	RT_FAILED
};

/* Returns the spec's word for a state ("running"). */
const char *rt_state_name(enum rt_state s);

/* One recorded exit. */
struct rt_exit {
	int64_t ms; /* when */
	int code;   /* exit status, or -1 when killed by a signal */
	int signal; /* terminating signal, or 0 */
	int oom;    /* killed for exceeding its memory limit */
};

struct rt_worker;
struct rt_instance;

struct rt_call;

/* One spawned process of an instance, from spawn until its process has
 * been reaped and its pipes closed. Heap-allocated per spawn, since a
 * restart spawns anew while the old handles are still closing. */
struct rt_run {
	struct rt_instance *in;	 /* owner; NULL once the instance is gone */
	pid_t pid;		 /* the process */
	uv_pipe_t out;		 /* its stderr (and a daemon's stdout): log */
	uv_pipe_t req;		 /* calls: its stdin */
	uv_pipe_t resp;		 /* calls: its stdout */
	int nopen;		 /* pipes not yet closed */
	int calls;		 /* it takes calls on stdin and stdout */
	int cold;		 /* it serves the one call `call` */
	int killed;		 /* killed by the worker (a timeout) */
	int resp_eof;		 /* its stdout ended */
	struct rt_buf line;	 /* hot: a response line being read */
	struct rt_call *call;	 /* cold: the call it serves, or NULL */
	char *cgroup;		 /* its memory group until handed over */
	int code, sig;		 /* its exit, once reaped */
	struct rt_worker *owner; /* the worker (kept when in is gone) */
	struct rt_run *next;	 /* the worker's list of runs with pipes */
	struct rt_run *prev;
	int reaped; /* its exit has been collected */
};

/* A call a worker runs on one of its hot or cold instances. */
struct rt_call {
	struct rt_instance *in; /* NULL once finished */
	long long id;
	char idstr[24];
	int64_t deadline_ms; /* epoch ms */
	char *body;	     /* the request, owned */
	size_t len;
	int sent;	    /* written to the process */
	uv_timer_t *timer;  /* the deadline; owned until closed */
	struct rt_run *run; /* cold: its process */
	struct rt_buf resp; /* cold: its stdout so far */
};

/* One instance this worker runs. */
struct rt_instance {
	struct rt_worker *w; /* owner */
	char *id;	     /* "tenant/ns/fn/N", owned */
	json_t *spec;	     /* the start message's spec, owned */
	long long revision;  /* of the spec */
	enum rt_state state;
	int desired_run;      /* 1: keep it running; 0: stop */
	int forget;	      /* remove once stopped */
	int restart_now;      /* start again as soon as it has exited */
	struct rt_run *run;   /* the live process, or NULL */
	int runs;	      /* runs still referring to this */
	pid_t pid;	      /* of the live process, 0 if none */
	uv_timer_t *timer;    /* backoff delay or stop grace; owned */
	int64_t started_ms;   /* epoch ms of the last spawn */
	int64_t started_mono; /* monotonic ms of the last spawn */
	int spawned;	      /* spawns so far */
	long long restarts;   /* spawns after the first */
	int backoff_ms;	      /* the next backoff delay */
	int64_t recent[RT_START_LIMIT + 1]; /* monotonic ms of recent exits */
	int nrecent;
	struct rt_exit exits[RT_EXITS_KEPT]; /* newest first */
	int nexits;
	int oom_pending;	  /* killed by RSS sampling for memory */
	char reason[256];	  /* why it is in its state */
	long long wait_spawn_seq; /* controller request answered on spawn */
	long long wait_exit_seq;  /* controller request answered on exit */
	char *cgroup;		  /* memory cgroup directory, owned, or NULL */
	int log_fd;		  /* the open log file, or -1 */
	char *log_path;		  /* owned */
	size_t log_size;	  /* bytes in the current log file */
	double cpu_seconds;	  /* last /proc sample */
	long long rss_bytes;
	int freeing;	       /* removed; freed when nothing refers */
	struct rt_call *call;  /* hot, cold: the call it serves, or NULL */
	long long cold_spawns; /* cold: processes forked for calls */
};

/* The worker process. */
struct rt_worker {
	uv_loop_t *loop;
	const char *sock_path; /* the controller's socket */
	const char *id;
	int memory_mb;
	json_t *tags;	       /* array of strings, owned */
	json_t *namespaces;    /* array of strings, owned */
	int orphan_timeout_ms; /* without a controller this long: exit */
	int simulate;	       /* accept instances without processes */
	char **cg_garbage;     /* groups to remove once empty, owned */
	int ncg_garbage;
	char *log_dir;	   /* owned: <data>/logs/<worker id> */
	char *cgroup_root; /* owned, NULL when cgroups are unusable */
	uv_pipe_t conn;
	struct rt_wire_flusher flusher; /* frames, written once per turn */
	struct rt_wire_out out;		/* the frames for conn */
	uv_connect_t connect_req;
	int connected;	     /* registered with the controller */
	int registered_once; /* it was, at least once */
	int connecting;
	struct rt_buf in;  /* bytes read, not yet decoded */
	uv_timer_t tick;   /* heartbeat and sampling */
	uv_timer_t retry;  /* reconnection */
	int retry_ms;	   /* the next reconnection delay */
	int64_t lost_mono; /* when the controller went away, or 0 */
	uv_signal_t sig[3];
	struct rt_map instances;  /* id -> struct rt_instance * */
	struct rt_run *open_runs; /* runs whose output is still open */
	struct rt_idmap runs;	  /* pid -> struct rt_run *, live processes */
	uv_signal_t sigchld;	  /* their exits */
	int shutting_down;	  /* stopping everything, then exit */
	int exit_code;
};

/* ---- worker.c: the connection */

/* Sends one message to the controller (dropped when not connected). The
 * header reference is consumed. */
void rt_worker_send(struct rt_worker *w, json_t *header, const void *body,
		    size_t len);

/* Reports an instance's state to the controller. */
void rt_worker_report(struct rt_worker *w, struct rt_instance *in);

/* Answers the controller's request `seq` (> 0). */
void rt_worker_reply(struct rt_worker *w, long long seq, int err,
		     json_t *extra);

/* Ends the worker once every instance is gone, if shutting down. */
void rt_worker_maybe_exit(struct rt_worker *w);

/* ---- supervise.c: instances */

/* Creates an instance record for `id` (not started). */
struct rt_instance *rt_instance_new(struct rt_worker *w, const char *id);

/* (Re)starts `in` with `spec` at `revision`: a running instance of another
 * revision is stopped first. Clears `failed`. */
void rt_instance_start(struct rt_instance *in, json_t *spec, long long revision,
		       long long seq);

/* Stops `in` (SIGTERM to its group, SIGKILL after the grace period). The
 * request `seq` is answered once it has exited. With `forget`, the record
 * goes away afterwards. */
void rt_instance_stop(struct rt_instance *in, long long seq, int forget);

/* Restarts `in` now: stop, then start at once, answering `seq` once the
 * new process is spawned. Clears `failed` and the backoff. */
void rt_instance_restart(struct rt_instance *in, long long seq);

/* Drops the record of a stopped instance; it is freed once its handles
 * have closed. `in` must not be used afterwards. */
void rt_instance_remove(struct rt_instance *in);

/* Adds the instance's /proc figures to `out` (an object). */
void rt_instance_sample(struct rt_instance *in, json_t *out);

/* Appends the last `max` bytes of the instance's log to `out`. */
int rt_instance_log_tail(struct rt_instance *in, size_t max,
			 struct rt_buf *out);

/* Describes `in` as the controller wants to know it. */
json_t *rt_instance_describe(struct rt_instance *in);

/* ---- proc.c: /proc, cgroups */

/* Reads cpu seconds and RSS bytes of `pid`. Returns 0 or -errno. */
int rt_proc_sample(pid_t pid, double *cpu_seconds, long long *rss_bytes);

/* Finds where this worker may make memory cgroups, or NULL. */
char *rt_cgroup_root(const char *worker_id, const char *key);

/* Kills what a dead worker of the same id and controller left in `root`'s
 * groups, and removes them. Nothing runs twice. */
void rt_cgroup_sweep(const char *root);

/* After fork, in the child: makes the group `dir` with the memory limit
 * `limit` (bytes, as text) and moves the calling process into it, before
 * exec, so that everything it starts is limited too. Uses only calls safe
 * after fork. Returns 0 or -1. */
int rt_cgroup_join(const char *dir, const char *limit);

/* Kills every process in group `dir`. */
void rt_cgroup_kill(const char *dir);

/* Makes a fresh memory cgroup for an instance with a limit of `mb`.
 * Returns its path (owned) or NULL. */
char *rt_cgroup_make(const char *root, const char *name, int mb);

/* Moves `pid` into cgroup `dir`. Returns 0 or -errno. */
int rt_cgroup_add(const char *dir, pid_t pid);

/* The cgroup's count of OOM kills, or -1. */
long long rt_cgroup_oom_kills(const char *dir);

/* Removes an empty cgroup. Returns 0 or -errno (-EBUSY while members
 * are still dying). */
int rt_cgroup_remove(const char *dir);

/* Closes the pipes of every run (at the worker's exit). */
void rt_runs_close(struct rt_worker *w);

/* Closes pipe `p` of run `r` if it is open. */
void rt_run_close(struct rt_run *r, uv_pipe_t *p);

/* Forks the program of `in` as a new run, in a memory group named after
 * `tag`. With `calls`, its stdin and stdout are pipes to the worker (hot
 * and cold modes); otherwise stdin is /dev/null and stdout goes to the
 * log. Its stderr always goes to the log. Returns the run (in the
 * worker's maps, not yet the instance's `run`), or NULL with `why`. */
struct rt_run *rt_run_spawn(struct rt_instance *in, int calls, const char *tag,
			    const char **why);

/* Whether the instance's spec has `mode` ("hot", "cold"). */
int rt_instance_mode_is(const struct rt_instance *in, const char *mode);

/* Appends process output to the instance's log (rotating it). */
void rt_log_write(struct rt_instance *in, const char *p, size_t n);

/* Removes a memory group now, or once its members are gone. Takes
 * `dir`. */
void rt_cgroup_discard(struct rt_worker *w, char *dir);

/* ---- call.c: calls of hot and cold instances */

/* Handles the controller's `call` message for `in` (NULL: unknown). */
void rt_call_start(struct rt_worker *w, struct rt_instance *in,
		   const struct rt_msg *m);

/* A hot instance's process was spawned: writes a waiting call to it. */
void rt_call_ready(struct rt_instance *in);

/* The process of a hot instance is gone: a call written to it fails
 * (ECONNRESET), one not yet written waits for the next process. */
void rt_call_process_gone(struct rt_instance *in);

/* The instance stops or goes away: its call fails, and a cold call's
 * process is killed. */
void rt_call_abort(struct rt_instance *in, const char *why);

/* A cold call's process was reaped. */
void rt_call_cold_exited(struct rt_run *r);

/* Reads a calls process's stdout (a libuv read callback). */
void rt_call_on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* Removes the memory groups that were still busy at an exit. */
void rt_cgroups_collect(struct rt_worker *w);

/* Collects the exits of instance processes (the worker's SIGCHLD). */
void rt_instances_reap(struct rt_worker *w);

/* The main of `fnfs worker`. Returns the exit code. */
int rt_worker_main(int argc, char **argv);

#endif

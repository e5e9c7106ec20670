/*
 * supervise.h - the runtime spawner: one record per instance, the
 * processes it forks (runs), their logs and memory cgroups, the restart
 * policy with backoff and a start limit, and stopping (graceful: the
 * calls in flight end first, each by its deadline; then SIGTERM, SIGKILL
 * after a grace period).
 *
 * The supervisor knows processes and libuv, never the wire protocol: it
 * reports what happens through struct rt_sup_events. The worker
 * (worker.c) turns those reports into messages and replies for the
 * controller; the unit tests record them. Private to runtime/.
 */
#ifndef FNFS_RT_SUPERVISE_H
#define FNFS_RT_SUPERVISE_H

#include <jansson.h>
#include <sys/types.h>
#include <uv.h>

#include "cgroup.h"
#include "../base/rt.h"
#include "sandbox.h"

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
/* A function's PATH unless its env sets one: a login's (Debian's). */
#define RT_DEFAULT_PATH                                                        \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* An exit's reason quotes this much of the process's last line. */
#define RT_LAST_WORDS 160
/* How long past their deadline the controller's direct calls are waited
 * for by a graceful stop (the controller ends them at their deadline). */
#define RT_DIRECT_GRACE_MS 2000

enum rt_state {
	RT_STARTING,
	RT_RUNNING,
	RT_BACKOFF,
	RT_STOPPING,
	RT_STOPPED,
	RT_FAILED,
	RT_STATE_COUNT /* not a state: how many there are */
};

/* One recorded exit. */
struct rt_exit {
	int64_t ms; /* when */
	int code;   /* exit status, or -1 when killed by a signal */
	int signal; /* terminating signal, or 0 */
	int oom;    /* killed for exceeding its memory limit */
};

struct rt_sup;
struct rt_instance;
struct rt_ns_init;
struct rt_call;
struct rt_ready;

/* One spawned process of an instance, from spawn until its process has
 * been reaped and its pipes closed. Heap-allocated per spawn, since a
 * restart spawns anew while the old handles are still closing. */
struct rt_run {
	struct rt_instance *in; /* owner; NULL once the instance is gone */
	struct rt_sup *sup;	/* the supervisor (kept when in is gone) */
	pid_t pid;		/* the process (the function's own) */
	uv_pipe_t out;		/* its stderr (and a daemon's stdout): log */
	uv_pipe_t req;		/* calls: its stdin */
	uv_pipe_t resp;		/* calls: its stdout */
	int nopen;		/* pipes not yet closed */
	int calls;		/* it takes calls on stdin and stdout */
	int cold;		/* it serves the one call `call` */
	int killed;		/* killed by the worker (a timeout) */
	int resp_eof;		/* its stdout ended */
	struct rt_buf line;	/* hot: a response line being read */
	struct rt_call *call;	/* cold: the call it serves, or NULL */
	char *cgroup;		/* its groups' name until handed over, owned */
	int code, sig;		/* its exit, once reaped */
	int reaped;		/* its exit has been collected */
	int notify_fd;		/* ready notify: the read end of its
				 * FN_NOTIFY_FD pipe until ready.c takes it,
				 * or -1 */
	struct rt_run *next;	/* the supervisor's list of runs with pipes */
	struct rt_run *prev;

	/* Its output's line being read, and its last complete line (or
	 * ""), for the reason of a failing exit. */
	char cur[RT_LAST_WORDS];
	size_t ncur;
	char last[RT_LAST_WORDS];
};

/* One instance. */
struct rt_instance {
	struct rt_sup *sup; /* owner */
	char *id;	    /* "tenant/ns/fn/N", owned */
	json_t *spec;	    /* the start message's spec, owned */
	long long revision; /* of the spec */
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
	int oom_pending;  /* killed by RSS sampling for memory */
	char reason[256]; /* why it is in its state */
	char *cgroup;	  /* its groups' name (cgroup.h), owned, or NULL */
	struct rt_opening *opening; /* its next run's binds being opened
				     * (rt_run_open), or NULL */
	struct rt_ns_init *ns; /* its sandbox's pid namespace and init, kept
				* across its runs (supervise.c), or NULL */
	int log_fd;	       /* the open log file, or -1 */
	char *log_path;	       /* owned */
	size_t log_size;       /* bytes in the current log file */
	double cpu_seconds;    /* last /proc sample */
	long long rss_bytes;   /* last /proc sample */
	int freeing;	       /* removed; freed when nothing refers */
	struct rt_call *calls; /* hot, cold: its calls, oldest first (call.c) */
	int ncalls;	       /* how many */
	int nsent;	       /* of them, handed to a process */
	int draining;	       /* a stop or restart waits for its calls */
	int slots;	       /* calls at once, as the controller's latest
				* call said (0: its spec's concurrency) */
	long long cold_spawns; /* cold: processes forked for calls */
	long long epoch;       /* of the controller's assignment (its start
				* said so), echoed in every report; 0: none */
	int port;	       /* endpoint.c: its PORT, or 0 */
	char *listener;	       /* endpoint.c: its FN_LISTENER socket path,
				* owned, or NULL */
	char *listen_dir;      /* endpoint.c: the socket's directory, owned,
				* or NULL */
	void *lambda;	       /* lambda.c: its runtime API, or NULL */
	int fail_exit;	       /* its process's exit fails it for `reason`
				* (rt_instance_fail_run) */
	long long run_epoch;   /* the epoch its process was spawned under:
				* its exit is reported with it, so the exit
				* of a copy stopped for a newer assignment is
				* not taken for the new one's */
	struct rt_ready *ready; /* ready.c: the watch of its live process
				 * until it is ready, or NULL */
	char unready[200];	/* why its process was stopped unready, or
				 * "" (cleared at each spawn) */

	/* Calls the controller sent its server itself and still has in
	 * flight, as it last said (a `direct` message): a graceful stop
	 * waits for them too, until direct_until_mono (monotonic ms). */
	int direct;
	int64_t direct_until_mono;

	/* The last line its process wrote before its exit (a failure's
	 * reason quotes it), or "" (cleared at each spawn). */
	char last_words[RT_LAST_WORDS];
};

/* What the supervisor reports to its owner. Each may be NULL. They are
 * called on the loop thread, from inside the supervisor's functions and
 * handlers; they may call the supervisor's commands, but must not remove
 * the instance they are told about (the `removed` one is gone already). */
struct rt_sup_events {
	/* The state or reason of `in` changed. */
	void (*state)(struct rt_instance *in);
	/* `in` is ready (`why` NULL: its state is running now), or its
	 * process was not ready within its ready_timeout (`why` says so;
	 * it is being stopped). Follows `spawned`, at once for a process
	 * that is ready when it runs (ready started). */
	void (*ready)(struct rt_instance *in, const char *why);
	/* A start of `in` ended: its process runs (pid in in->pid; 0 for a
	 * cold or simulated slot), or, when `why` is set, it could not be
	 * forked (an exit of status 127 is reported next). */
	void (*spawned)(struct rt_instance *in, const char *why);
	/* The process of `in` exited; `e` is its record, in->exits[0].
	 * Called before the restart policy applies. */
	void (*exited)(struct rt_instance *in, const struct rt_exit *e);
	/* `in` left the supervisor. It may be read until the loop runs
	 * again, then it is freed. */
	void (*removed)(struct rt_instance *in);
	/* Reads the stdout of a calls process (a libuv read callback on
	 * r->resp). NULL: that output goes to the log. */
	uv_read_cb call_output;
	/* A cold call's process (r->cold) was reaped. */
	void (*call_exited)(struct rt_run *r);
	/* Whether `in` has calls a stop or restart must let finish first
	 * (a graceful stop; call rt_instance_drained when that changes).
	 * NULL: none ever. */
	int (*busy)(const struct rt_instance *in);
};

/* A set of supervised instances with their processes. Embedded in its
 * owner; one per process (it reaps every child, see rt_sup_reap). */
struct rt_sup {
	uv_loop_t *loop;
	const struct rt_sup_events *ev; /* never NULL */
	void *arg;			/* the owner's */
	int simulate;			/* accept instances without processes */
	char *log_dir;			/* owned, or NULL: no logs */
	struct rt_cgroups cg;		/* the root groups; none: unusable */
	char **cg_garbage;		/* groups to remove once empty, owned */
	int ncg_garbage;
	struct rt_map instances;  /* id -> struct rt_instance * */
	struct rt_run *open_runs; /* runs whose pipes are still open */
	struct rt_idmap runs;	  /* pid -> struct rt_run *, unreaped */
	struct rt_idmap inits; /* init pid -> struct rt_ns_init *, unreaped */
};

/* ---- supervise.c: the set */

/* The host pid of the init of `in`'s sandbox, kept across its runs, or
 * 0 when it has none. */
pid_t rt_instance_init(const struct rt_instance *in);

/* Prepares `s` on `loop`, reporting through `ev` (not NULL, kept). The
 * caller may set simulate, log_dir and cg afterwards. */
void rt_sup_init(struct rt_sup *s, uv_loop_t *loop,
		 const struct rt_sup_events *ev, void *arg);

/* Whether `s` holds no instance and no process that is not reaped yet. */
int rt_sup_idle(const struct rt_sup *s);

/* Collects the exits of the supervised processes (call it on SIGCHLD;
 * it reaps every child of the process). */
void rt_sup_reap(struct rt_sup *s);

/* Sends SIGKILL to every process not reaped yet, and to its group. */
void rt_sup_kill_runs(struct rt_sup *s);

/* Closes the pipes of every run: descendants that left their group may
 * hold a finished run's output open, and an exit does not wait for them. */
void rt_sup_close(struct rt_sup *s);

/* Retries the removal of groups that still had members: kills what is
 * left in them, removes the empty ones. */
void rt_sup_collect(struct rt_sup *s);

/* Once the loop has ended with every instance removed: frees what is
 * left (runs whose process could not be reaped), removes the memory
 * groups (killing what is left in them, retrying up to `wait_ms` while
 * members die) and the root group, and frees `s`'s memory. May block up
 * to `wait_ms`. */
void rt_sup_free(struct rt_sup *s, int wait_ms);

/* ---- supervise.c: instances */

/* Sets the state of `in` and its reason (printf), and reports it. */
void rt_instance_set_state(struct rt_instance *in, enum rt_state s,
			   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* `in`'s live process was not ready within its ready_timeout: it is
 * stopped (SIGTERM, SIGKILL after the grace) with `why` as its reason,
 * `ready` reports `why`, and its restart policy applies at its exit. */
void rt_instance_unready(struct rt_instance *in, const char *why);

/* Returns the spec's word for a state ("running"). */
const char *rt_state_name(enum rt_state s);

/* Describes an exit: "status 3", "signal 9", "oom". */
void rt_exit_words(const struct rt_exit *e, char *out, size_t n);

/* Creates the record of instance `id` (not started; `id` not present).
 * Returns it, or NULL when out of memory. */
struct rt_instance *rt_instance_new(struct rt_sup *s, const char *id);

/* Starts `in` with `spec` (NULL: the one it has) at `revision`; a process
 * of another revision, or one being stopped, is stopped first and the
 * instance started again once it has exited. Clears `failed` and the
 * backoff. Returns 1 when it runs that revision already (nothing more is
 * reported), 0 when a start follows: `spawned` reports it, possibly
 * before this returns. */
int rt_instance_start(struct rt_instance *in, json_t *spec, long long revision);

/* Stops `in`: once its calls have ended (ev->busy; meanwhile it is
 * `stopping`), SIGTERM to its process group, SIGKILL after the grace
 * period. With `forget`, the record is removed once stopped. Returns 0
 * when it is being stopped (the state `stopped` follows, after `exited`
 * when a process ran), 1 when nothing ran: it is stopped (and with
 * `forget` removed) already. Either way `in` may be read until the loop
 * runs again. A restart and a start of another revision let the calls
 * end first too. */
int rt_instance_stop(struct rt_instance *in, int forget);

/* A start of `in` could not happen (its code did not arrive): with no
 * process, it is failed for `why`; a process of an older revision goes
 * on, with `why` as its reason. */
void rt_instance_fail(struct rt_instance *in, const char *why);

/* The process of `in` cannot serve (a Lambda runtime's init error): it is
 * killed, and once it has exited `in` is failed for `why` without a
 * restart. A start, restart or stop before that exit wins. Without a
 * process it is rt_instance_fail. */
void rt_instance_fail_run(struct rt_instance *in, const char *why);

/* The calls of `in` may have ended: a stop or restart that waited for
 * them goes on (from the loop, not inside this call). */
void rt_instance_drained(struct rt_instance *in);

/* Restarts `in` now: stop, then start at once. Clears `failed` and the
 * backoff. Returns 0 (`spawned` follows, possibly before this returns),
 * or -ENOENT when it was never started. */
int rt_instance_restart(struct rt_instance *in);

/* Removes `in`: every process of it is killed, `removed` is reported, and
 * the record is freed once its handles have closed. A no-op when removed
 * already. */
void rt_instance_remove(struct rt_instance *in);

/* Refreshes the instance's /proc figures (cpu_seconds, rss_bytes); kills
 * it when it is over its memory limit and no cgroup enforces that. */
void rt_instance_sample(struct rt_instance *in);

/* Appends the last `max` bytes of the log of the instance named `id`,
 * which this worker no longer holds (stopped and forgotten), to `out`.
 * Returns 0, or -ENOENT when it has no log here. */
int rt_sup_log_tail(struct rt_sup *s, const char *id, size_t max,
		    struct rt_buf *out);

/* Appends the last `max` bytes of the instance's log to `out`. */
int rt_instance_log_tail(struct rt_instance *in, size_t max,
			 struct rt_buf *out);

/* Whether the instance's spec has `mode` ("hot", "cold"). */
int rt_instance_mode_is(const struct rt_instance *in, const char *mode);

/* Appends process output to the instance's log (rotating it). */
void rt_log_write(struct rt_instance *in, const char *p, size_t n);

/* Forks the program of `in` as a new run, in groups named after `tag`
 * for its limits ("memory" MB, "pids", "cpu" millicores), as the user
 * and in the sandbox its spec asks for (sandbox.h). With `calls`, its
 * stdin and stdout are pipes to the caller (hot and cold modes);
 * otherwise stdin is /dev/null and stdout goes to the log. Its stderr
 * always goes to the log. Returns the run (in the supervisor's maps, not
 * yet the instance's `run`), or NULL with `why` (a static string). */
struct rt_run *rt_run_spawn(struct rt_instance *in, int calls, const char *tag,
			    const char **why);

/* rt_run_spawn with the user and sandbox of `pre` (from rt_run_open;
 * taken, even on failure), or (NULL) of the spec, read here. */
struct rt_run *rt_run_spawn_with(struct rt_instance *in, int calls,
				 const char *tag, struct rt_sandbox *pre,
				 const char **why);

/* Reads the user and sandbox of `in`'s spec for a spawn. When the
 * sandbox binds the function's own sources (its mounts, its cwd), they
 * are opened off the loop (rt_open_binds_async): returns 1 with the
 * opening in *op, and `done` follows on the loop. Otherwise returns 0
 * with what to pass rt_run_spawn_with in *ready. Or -errno with `why`. */
int rt_run_open(struct rt_instance *in, rt_opened_fn done, void *arg,
		struct rt_opening **op, struct rt_sandbox **ready,
		const char **why);

/* Closes pipe `p` of run `r` if it is open. */
void rt_run_close(struct rt_run *r, uv_pipe_t *p);

/* Removes cgroup directory `dir` now, or once its members are gone (see
 * rt_sup_collect). Takes `dir`. */
void rt_cgroup_discard(struct rt_sup *s, char *dir);

/* Kills what is in the groups named `name` (every hierarchy), reads
 * whether the memory one saw an OOM kill, and discards them all. Takes
 * `name` (may be NULL: returns 0). Returns 1 after an OOM kill. */
int rt_cgroup_finish(struct rt_sup *s, char *name);

/* ---- endpoint.c: where an instance's server listens */

/* Whether `in` gets a PORT and an FN_LISTENER: a hot http function, or
 * one whose readiness is probed on them (ready tcp or http:/PATH). */
int rt_endpoint_wanted(const struct rt_instance *in);

/* A loopback TCP port free now, or -errno. */
int rt_endpoint_free_port(void);

/* Before a spawn of `in`: chooses its PORT (in->port) and the path of its
 * FN_LISTENER socket (in->listener, in a directory of its own, owned by
 * the function's user, that the sandbox binds writable: spec key
 * "listen_dir"; a socket left there by the last run is removed), or
 * clears both when it wants none. Returns 0 or -errno with `why`. */
int rt_endpoint_prepare(struct rt_instance *in, const char **why);

/* Appends PORT=... and FN_LISTENER=unix:... (those set) to `env` at
 * `*n`, which must have room for two more. Returns 0 or -ENOMEM. */
int rt_endpoint_env(const struct rt_instance *in, char **env, size_t *n);

/* Whether the process listens on its FN_LISTENER socket (it exists). */
int rt_endpoint_unix_ready(const struct rt_instance *in);

/* Removes the socket and its directory; clears the fields. */
void rt_endpoint_forget(struct rt_instance *in);

/* ---- ready.c: readiness (ready.h has the pure parts) */

/* Marks `in` ready, `how` saying by what ("tcp", "first /next"): its
 * state goes from starting to running and `ready` is reported. Ignored
 * unless its live process is waiting to be ready (a ready of a process
 * replaced since, or being stopped, changes nothing). */
void rt_instance_ready(struct rt_instance *in, const char *how);

/* After a spawn of `in`'s process: 1 when it is ready now (ready
 * started, or a cold slot); else 0, its state is starting and its
 * readiness is watched (probed, or a line awaited on its FN_NOTIFY_FD,
 * or rt_instance_ready awaited) for up to its ready_timeout. */
int rt_ready_watch(struct rt_instance *in);

/* Ends the watch of `in` (if any): its handles are closed. */
void rt_ready_unwatch(struct rt_instance *in);

/* Whether a spawn of `in` gets an FN_NOTIFY_FD (ready notify). */
int rt_ready_wants_notify(const struct rt_instance *in);

/* Appends FN_NOTIFY_FD=N to `env` at `*n` (room for one more) when `in`
 * is ready by notify. Returns 0 or -ENOMEM. */
int rt_ready_env(const struct rt_instance *in, char **env, size_t *n);

/* The instance's ready_timeout in ms (its spec's, default 30 s). */
int rt_ready_timeout_ms(const struct rt_instance *in);

/* Why `in` is not ready yet: the last probe's failure, or its reason. */
const char *rt_ready_why(const struct rt_instance *in);

/* ---- proc.c: /proc */

/* Reads cpu seconds and RSS bytes of `pid`. Returns 0 or -errno. */
int rt_proc_sample(pid_t pid, double *cpu_seconds, long long *rss_bytes);

/* ---- cgroup.c: groups by directory */

/* Kills what a dead worker of the same id and controller left in the
 * groups under s->cg's roots, and removes them (later, for those whose
 * members are still dying). Nothing runs twice. */
void rt_sup_sweep(struct rt_sup *s);

/* Kills every process in group `dir`. */
void rt_cgroup_kill(const char *dir);

/* The cgroup's count of OOM kills, or -1. */
long long rt_cgroup_oom_kills(const char *dir);

/* Removes an empty cgroup. Returns 0 (also when it is gone already) or
 * -errno (-EBUSY while members are still dying). */
int rt_cgroup_remove(const char *dir);

#endif

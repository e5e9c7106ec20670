/*
 * supervise_int.h - what the supervisor's files share: supervise.c (the
 * instances and their runs), spawn.c (a run's process), child.c (the
 * child between vfork and exec), supervise_run.c (a run after its
 * spawn) and instance_log.c. Private to them.
 */
#ifndef FNFS_RT_SUPERVISE_INT_H
#define FNFS_RT_SUPERVISE_INT_H
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "cgroup.h"
#include "sandbox.h"
#include "supervise.h"

/* A sandbox's pid namespace and its init (pid 1 there), kept by an
 * instance across its runs: a restart, or a cold slot's next call, forks
 * into it instead of making a new one. What a run leaves behind goes
 * with the run's process group and cgroups; the init, and with it the
 * namespace, goes when the instance stops, fails or is removed. The
 * record lives until the init is reaped. */
struct rt_ns_init {
	pid_t pid;		/* the init, until reaped */
	int pidfd;		/* to enter its namespace, or -1 */
	struct rt_sb_view view; /* its view (rt_sandbox_view), or all -1 */
	long long view_rev;	/* the instance's revision it was made for */
	void *stack;		/* its stack until reaped (sandbox.h) */
	struct rt_instance *in; /* whose, or NULL once let go */
};

/* Lets go of an instance's sandbox: its init is killed, and everything
 * in its namespace with it (supervise.c). */
void rt__ns_release(struct rt_instance *in);

/* Forgets a reaped init (supervise.c). */
void rt__ns_reaped(struct rt_ns_init *ns);

/* Reads a run's output pipe into its instance's log (supervise.c). */
void rt__on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* The path of instance `id`'s log under `dir` (instance_log.c). */
char *rt__log_file(const char *dir, const char *id);

/* What the child of a spawn is given (child.c). */
struct rt_child_args {
	pid_t worker;
	int in, out, err;
	int notify; /* FN_NOTIFY_FD's write end, or -1 */
	const char *cwd;
	int code_cwd; /* cwd is the code's tree: opened before the drop */
	char **argv, **env;
	char **paths; /* where argv[0] may be, in order, or NULL */
	const struct rt_cg_plan *cg;
	const struct rt_sandbox *sb;
	struct rt_sb_view *view; /* the instance's view, or NULL */
	const char *who;	 /* the user: "nobody (uid 65534)" */
	const char *name;	 /* its name ("nobody"), else `who` */
};

/* Starts the child of a spawn with vfork (child.c): it joins its
 * cgroups, enters its sandbox, takes its user and execs `a->argv`; the
 * worker waits until it has exec'ed or died. Returns its pid or -1. */
pid_t rt__start_child(const struct rt_child_args *a);

/* Frees a run once its process is reaped and its pipes closed; what is
 * left in its memory group goes with it (supervise_run.c). */
void rt__run_release(struct rt_run *r);

/* Kills a run's process and its group (a no-op once reaped: the pid may
 * belong to another process then) (supervise_run.c). */
void rt__run_kill(struct rt_run *r);

/* Kills every process of `in` that is not its live run: those of its
 * calls (supervise_run.c). */
void rt__kill_other_runs(struct rt_instance *in);

/* What follows the exit of `in`'s live run, `code` or signal `sig`: its
 * restart policy, backoff or the end (supervise.c). */
void rt__after_exit(struct rt_instance *in, int64_t code, int sig);

/* Frees `in` once it is removed and no run or timer holds it
 * (supervise.c). */
void rt__free_if_unused(struct rt_instance *in);

#endif

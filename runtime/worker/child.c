/*
 * child.c - the child of a spawn, between vfork and exec: it dies with
 * the worker, takes a session, its cgroups, its sandbox, stdio, its user
 * and working directory, closes the rest and execs the program, or says
 * why not on its stderr. It runs on the worker's memory: system calls
 * only, no allocation, no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ready.h"
#include "../base/rt.h"
#include "supervise_int.h"

/* In the child: says why `what` (a program, or "cwd DIR") cannot be used
 * by the function's user, errno `err`: a path in the sandbox's private
 * /tmp is not the host's. */
static void child_cannot(const struct rt_child_args *a, const char *verb,
			 const char *path, int err)
{
	if (err == ENOENT && a->sb->isolate && strncmp(path, "/tmp/", 5) == 0)
		rt_child_say(2, 0, "cannot ", verb, path,
			     ": /tmp is private to the sandbox: put the "
			     "program where ",
			     a->name, " can read it, or in code/",
			     (char *)NULL);
	else
		rt_child_say(2, err, "cannot ", verb, path, " as ", a->who,
			     (char *)NULL);
}

/* The child's side of a spawn: die with the worker, a session and
 * process group of its own, its cgroups, its sandbox, stdio, its user,
 * working directory, nothing else open, then the program. It runs on the
 * worker's memory (start_child): system calls only, no allocation, no
 * lock, nothing written but its own stack (and errno). */
static __attribute__((noreturn)) void child(const struct rt_child_args *a)
{
	const char *failed = "?";
	sigset_t none;
	int null, sig, rc, code = -1;

	/* The worker's handlers (libuv's) must not run here: a signal meant
	 * for this process would reach the worker's own signal pipe. Signals
	 * are blocked across the fork; reset them all, then unblock. */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* In a sandbox's pid namespace getppid() is 0. */
	if (a->sb->isolate ? !rt_sandbox_worker_alive()
			   : getppid() != a->worker)
		_exit(127); /* the worker died already */
	setsid();
	/* Its groups first: everything it starts is in them too. */
	if (a->cg->n > 0 && (rc = rt_cg_apply(a->cg, &failed)) < 0) {
		rt_child_say(a->err, -rc, "cgroup ", failed, (char *)NULL);
		_exit(127);
	}
	if (rt_sandbox_enter(a->sb, a->view, a->err) < 0)
		_exit(127);
	null = a->in >= 0 ? a->in : open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(a->out, 1) < 0 ||
	    dup2(a->err, 2) < 0)
		_exit(127);
	/* The code's tree is under the worker's private directory: without
	 * a sandbox, the worker opens it, the function enters it by that
	 * descriptor; a sandbox has it at RT_SB_CODE_AT, a path the function
	 * may walk, for programs that open themselves by their absolute
	 * path (python3 app.py, node app.js). */
	if (a->code_cwd &&
	    (code = open(a->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rt_child_say(2, errno, "code ", a->cwd, (char *)NULL);
		_exit(127);
	}
	if (rt_sandbox_drop(a->sb, 2) < 0)
		_exit(127);
	/* As the function's user: its permissions apply. */
	if (code >= 0 ? fchdir(code) < 0 : chdir(a->cwd) < 0) {
		child_cannot(a, "enter its cwd ", a->cwd, errno);
		_exit(127);
	}
	/* ready notify: its pipe at the number FN_NOTIFY_FD names, kept
	 * open across the exec (dup2 clears close-on-exec). */
	if (a->notify >= 0 &&
	    (a->notify == RT_READY_NOTIFY_FD
		     ? fcntl(a->notify, F_SETFD, 0)
		     : dup2(a->notify, RT_READY_NOTIFY_FD)) < 0)
		_exit(127);
	rt_close_fds(a->notify >= 0 ? RT_READY_NOTIFY_FD : -1);
	if (a->paths == NULL) {
		execve(a->argv[0], a->argv, a->env);
	} else {
		/* The PATH search as execvp does it, as the function's user:
		 * a directory it may not enter is passed over. */
		int seen = ENOENT;
		size_t i;

		for (i = 0; a->paths[i] != NULL; i++) {
			execve(a->paths[i], a->argv, a->env);
			if (errno == EACCES)
				seen = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR)
				break;
		}
		if (a->paths[i] == NULL)
			errno = seen;
	}
	child_cannot(a, "run ", a->argv[0], errno);
	_exit(127);
}

/* Starts the child of a spawn with vfork: no copy of the worker's page
 * tables, no copy-on-write faults in the worker while its children have
 * not exec'ed yet, no TLB shootdowns (with 100 instances to start at
 * once, a fork each was most of the CPU a spawn cost). The worker waits
 * until the child has exec'ed or died; signals are blocked meanwhile. A
 * function of its own, so that the frame the child shares is this one. */
__attribute__((noinline)) pid_t rt__start_child(const struct rt_child_args *a)
{
	pid_t pid = vfork();

	if (pid == 0)
		child(a);
	return pid;
}

/*
 * fnfs-init.c - pid 1 of a function's sandbox: a program of its own,
 * linked statically and carried inside fnfs (see runtime/sandbox.c), so
 * that starting it costs an exec of a small binary, not of fnfs with its
 * libraries.
 *
 * It only reaps what is orphaned in the namespace. Signals from the host
 * other than SIGKILL do not reach a namespace's init without a handler,
 * and the worker kills it (and with it the whole namespace) once the
 * function's process has exited. fd 3, when open, is the worker's pidfd:
 * a worker already gone means nothing to wait for.
 */
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	struct pollfd p = { 3, POLLIN, 0 };
	sigset_t all, chld;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (poll(&p, 1, 0) != 0 && (p.revents & (POLLIN | POLLHUP)))
		_exit(1);
	close(3);
	prctl(PR_SET_NAME, "fnfs-init");
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		sigwaitinfo(&chld, NULL);
	}
}

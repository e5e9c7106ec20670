/*
 * supervise_run.c - a run's life after its spawn (supervise.c): its
 * output, read into the instance's log and its last line; reaping its
 * process and those of the sandboxes' inits; killing a run, the other
 * runs of an instance, or every run at exit; and letting go of an
 * instance's sandbox (its pid namespace's init).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lambda.h"
#include "ready.h"
#include "sandbox.h"
#include "supervise.h"
#include "supervise_int.h"
#include "../base/wire.h" /* rt_read_alloc */

void rt__ns_release(struct rt_instance *in)
{
	struct rt_ns_init *ns = in->ns;

	if (ns == NULL)
		return;
	in->ns = NULL;
	ns->in = NULL;
	if (ns->pidfd >= 0)
		close(ns->pidfd);
	ns->pidfd = -1;
	rt_sandbox_view_close(&ns->view);
	kill(ns->pid, SIGKILL); /* not reaped yet: still its pid */
}

pid_t rt_instance_init(const struct rt_instance *in)
{
	return in->ns != NULL ? in->ns->pid : 0;
}

/* Forgets a reaped init. */
void rt__ns_reaped(struct rt_ns_init *ns)
{
	if (ns->in != NULL) {
		ns->in->ns = NULL;
		ns->in = NULL;
	}
	if (ns->pidfd >= 0)
		close(ns->pidfd);
	rt_sandbox_view_close(&ns->view);
	rt_sandbox_free_stack(ns->stack);
	free(ns);
}

/* Frees a run once its process is reaped and its pipes closed; what is
 * left in its memory group goes with it. */
void rt__run_release(struct rt_run *r)
{
	struct rt_instance *in = r->in;

	if (!r->reaped || r->nopen > 0)
		return;
	assert(r->nopen == 0);
	assert(rt_idmap_get(&r->sup->runs, (uint64_t)r->pid) != r);
	rt_cgroup_finish(r->sup, r->cgroup);
	r->cgroup = NULL;
	if (r->notify_fd >= 0)
		close(r->notify_fd);
	if (in != NULL) {
		assert(in->runs > 0);
		in->runs--;
		rt__free_if_unused(in);
	}
	rt_buf_free(&r->line);
	free(r);
}

static void run_handle_closed(uv_handle_t *h)
{
	struct rt_run *r = h->data;

	assert(r->nopen > 0);
	if (--r->nopen > 0)
		return;
	if (r->prev != NULL)
		r->prev->next = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	if (r->prev == NULL && r->sup->open_runs == r)
		r->sup->open_runs = r->next;
	r->next = r->prev = NULL;
	rt__run_release(r);
}

/* Closes one of a run's pipes (if open). */
void rt_run_close(struct rt_run *r, uv_pipe_t *p)
{
	if (p->data == r && !uv_is_closing((uv_handle_t *)p))
		uv_close((uv_handle_t *)p, run_handle_closed);
}

void rt_sup_close(struct rt_sup *s)
{
	struct rt_run *r = s->open_runs, *next;

	for (; r != NULL; r = next) {
		next = r->next;
		rt_run_close(r, &r->out);
		rt_run_close(r, &r->req);
		rt_run_close(r, &r->resp);
	}
}

/* Follows a run's output for its last complete line (r->last): the end
 * of a line longer than the buffer, blanks and CRs trimmed, control
 * characters as blanks and other bytes than ASCII as '?'. */
static void last_line(struct rt_run *r, const char *p, size_t n)
{
	unsigned char c;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\n') {
			while (r->ncur > 0 && (r->cur[r->ncur - 1] == '\r' ||
					       r->cur[r->ncur - 1] == ' '))
				r->ncur--;
			if (r->ncur > 0) {
				memcpy(r->last, r->cur, r->ncur);
				r->last[r->ncur] = '\0';
			}
			r->ncur = 0;
			continue;
		}
		if (r->ncur == sizeof(r->cur) - 1) {
			/* Keep the end: the cause is usually last. */
			memmove(r->cur, r->cur + 1, r->ncur - 1);
			r->ncur--;
		}
		/* ASCII only: a reason travels in JSON, which a byte of a
		 * cut (or invalid) UTF-8 sequence would break. */
		c = (unsigned char)p[i];
		r->cur[r->ncur++] = c >= 0x80		   ? '?'
				    : c < ' ' || c == 0x7f ? ' '
							   : (char)c;
	}
}

/* What a run wrote on its log pipe: to the log, and followed for its last
 * line. */
static void run_output(struct rt_run *r, const char *p, size_t n)
{
	if (r->in == NULL)
		return;
	rt_log_write(r->in, p, n);
	last_line(r, p, n);
}

void rt__on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_run *r = s->data;

	if (n > 0)
		run_output(r, buf->base, (size_t)n);
	if (n < 0)
		rt_run_close(r, (uv_pipe_t *)s);
}

/* At a run's exit: what it wrote and its pipe holds still, read now (the
 * pipe is non-blocking; at most 64 KiB), so that its last line is known
 * when its exit is reported. */
static void drain_output(struct rt_run *r)
{
	char buf[4096];
	int fd = -1, i;
	ssize_t n;

	if (r->out.data != r || uv_is_closing((uv_handle_t *)&r->out) ||
	    uv_fileno((uv_handle_t *)&r->out, &fd) != 0 || fd < 0)
		return;
	for (i = 0; i < 16 && (n = read(fd, buf, sizeof(buf))) > 0; i++)
		run_output(r, buf, (size_t)n);
}

/* Kills a run's process and its group (a no-op once reaped: the pid may
 * belong to another process then). */
void rt__run_kill(struct rt_run *r)
{
	if (r->reaped)
		return;
	kill(-r->pid, SIGKILL);
	kill(r->pid, SIGKILL);
}

void rt_sup_reap(struct rt_sup *s)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct rt_run *r = rt_idmap_get(&s->runs, (uint64_t)pid);
		struct rt_instance *in;

		if (r == NULL) {
			/* A sandbox's init: its namespace is empty now. */
			struct rt_ns_init *ns = rt_idmap_get(&s->inits,
							     (uint64_t)pid);

			if (ns != NULL) {
				rt_idmap_del(&s->inits, (uint64_t)pid);
				rt__ns_reaped(ns);
			}
			continue;
		}
		assert(r->pid == pid && !r->reaped);
		rt_idmap_del(&s->runs, (uint64_t)pid);
		r->reaped = 1;
		r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
		r->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		/* Whatever is left of its process group goes with it (and
		 * of its cgroups when the run is released), and nothing
		 * more is written to it. Without cgroups, what left the
		 * group could stay in the sandbox: the sandbox goes too. */
		kill(-pid, SIGKILL);
		if (r->in != NULL && !r->in->freeing && r->cgroup == NULL &&
		    !(r->in->run == r && r->in->cgroup != NULL))
			rt__ns_release(r->in);
		rt_run_close(r, &r->req);
		in = r->in;
		if (r->cold) {
			if (s->ev->call_exited != NULL)
				s->ev->call_exited(r);
		} else if (in != NULL && in->run == r) {
			assert(in->pid == pid); /* the live run's pid */
			drain_output(r);
			if (r->ncur > 0)
				last_line(r, "\n", 1);
			memcpy(in->last_words, r->last, sizeof(in->last_words));
			in->run = NULL;
			in->pid = 0;
			rt__after_exit(in, r->code, r->sig);
		}
		rt__run_release(r);
	}
}

void rt_sup_kill_runs(struct rt_sup *s)
{
	size_t i, n;
	void **v = rt_idmap_values(&s->runs, &n);

	for (i = 0; v != NULL && i < n; i++)
		rt__run_kill(v[i]);
	free(v);
	v = rt_idmap_values(&s->inits, &n);
	for (i = 0; v != NULL && i < n; i++)
		kill(((struct rt_ns_init *)v[i])->pid, SIGKILL);
	free(v);
}

/* Kills every process of `in` that is not its live run: those of its
 * calls. */
void rt__kill_other_runs(struct rt_instance *in)
{
	size_t i, n;
	void **v;

	if (in->runs == (in->run != NULL ? 1 : 0))
		return; /* none */
	v = rt_idmap_values(&in->sup->runs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_run *r = v[i];

		if (r->in == in && r != in->run)
			rt__run_kill(r);
	}
	free(v);
}

/* Records a spawn failure as an exit of status 127. */

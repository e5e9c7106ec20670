/*
 * opening.c - a sandbox's binds opened off the worker's loop thread
 * (see sandbox.h). The open of a function's own sources walks paths of
 * the host as the function's user: a filesystem that does not answer (a
 * hung NFS server) would stall the loop, and with it every instance and
 * call of the worker. So it runs on a thread of libuv's pool, whose
 * fsuid, fsgid and groups binds.c sets and restores (per thread), and
 * the loop waits for it a bounded time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

/* Opens that still run after their start gave up on them. They hold
 * threads of the pool, which code fetches use too: past this many, a
 * start fails at once instead of taking another. */
#define HUNG_MAX 2

struct rt_opening {
	uv_work_t work;
	uv_timer_t timer;
	struct rt_sandbox sb; /* owned until handed to `done` */
	rt_opened_fn done;    /* NULL once answered or cancelled */
	void *arg;
	int rc;	       /* of rt_sandbox_open_binds */
	char why[768]; /* its reason, copied on the thread */
	int late;      /* given up on: counted in `hung` */
};

int rt_open_timeout_ms = 5000;

static int hung;

int rt_sandbox_needs_thread(const struct rt_sandbox *sb)
{
	int i;

	for (i = 0; sb->isolate && i < sb->nbinds; i++)
		if (sb->binds[i].user != RT_BIND_WORKER)
			return 1;
	return 0;
}

/* On a thread of the pool. */
static void open_work(uv_work_t *w)
{
	struct rt_opening *o = w->data;
	const char *why = NULL;

	o->rc = rt_sandbox_open_binds(&o->sb, &why);
	if (o->rc < 0)
		snprintf(o->why, sizeof(o->why), "%s",
			 why != NULL ? why : strerror(-o->rc));
}

static void timer_closed(uv_handle_t *h)
{
	struct rt_opening *o = h->data;

	rt_sandbox_free(&o->sb);
	free(o);
}

/* Answers `done` once (then forgets it). */
static void answer(struct rt_opening *o, int rc, const char *why)
{
	rt_opened_fn done = o->done;
	struct rt_sandbox *sb;

	if (done == NULL)
		return;
	o->done = NULL;
	uv_timer_stop(&o->timer);
	if (rc < 0) {
		done(o->arg, NULL, why);
		return;
	}
	sb = malloc(sizeof(*sb));
	if (sb == NULL) {
		done(o->arg, NULL, "out of memory");
		return;
	}
	*sb = o->sb;
	memset(&o->sb, 0, sizeof(o->sb));
	done(o->arg, sb, NULL);
}

/* On the loop, once the thread is done (also after a time-out). */
static void open_done(uv_work_t *w, int status)
{
	struct rt_opening *o = w->data;

	if (o->late)
		hung--;
	if (status == UV_ECANCELED)
		answer(o, -ECANCELED, "cancelled");
	else
		answer(o, o->rc, o->why);
	uv_close((uv_handle_t *)&o->timer, timer_closed);
}

static void on_timeout(uv_timer_t *t)
{
	struct rt_opening *o = t->data;
	char why[160];

	if (o->done == NULL)
		return;
	o->late = 1;
	hung++;
	snprintf(why, sizeof(why),
		 "opening its mounts and cwd took over %d ms (a filesystem "
		 "that does not answer?)",
		 rt_open_timeout_ms);
	answer(o, -ETIMEDOUT, why);
}

struct rt_opening *rt_open_binds_async(uv_loop_t *loop, struct rt_sandbox *sb,
				       rt_opened_fn done, void *arg,
				       const char **why)
{
	struct rt_opening *o;

	if (hung >= HUNG_MAX) {
		*why = "earlier opens of mounts or a cwd still hang (a "
		       "filesystem that does not answer?)";
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL) {
		*why = "out of memory";
		return NULL;
	}
	o->sb = *sb;
	o->done = done;
	o->arg = arg;
	o->work.data = o;
	uv_timer_init(loop, &o->timer);
	o->timer.data = o;
	if (uv_queue_work(loop, &o->work, open_work, open_done) < 0) {
		/* `sb` stays the caller's. */
		memset(&o->sb, 0, sizeof(o->sb));
		uv_close((uv_handle_t *)&o->timer, timer_closed);
		*why = "cannot start a thread to open the mounts";
		return NULL;
	}
	memset(sb, 0, sizeof(*sb));
	uv_timer_start(
		&o->timer, on_timeout,
		(uint64_t)(rt_open_timeout_ms > 0 ? rt_open_timeout_ms : 1), 0);
	return o;
}

void rt_open_binds_cancel(struct rt_opening *o)
{
	if (o == NULL)
		return;
	o->done = NULL;
	uv_timer_stop(&o->timer);
}

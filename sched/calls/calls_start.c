/*
 * calls_start.c - a call's start (the checks of a request, the refusals
 * journalled, the call queued and dispatched), a call left to run
 * detached, and the calls' part of the tick: scale-in of idle instances
 * and the end of a function's or the controller's calls
 * (calls_internal.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/base/frame.h"
#include "../../runtime/base/httpmsg.h"
#include "../common.h"
#include "direct.h"
#include "../workers/fence.h"
#include "../internal.h"
#include "../model/quota.h"
#include "../workers/pool.h"
#include "../workers/requests.h"
#include "../decide/slots.h"

#include "calls_internal.h"

/* ============================================================== starts */

int sched_call_check(struct sched *s, struct sched_function *fn,
		     const char *body, size_t len, int partial)
{
	struct rt_buf why = { 0 };
	int rc = 0;

	if (fn->spec.mode == SCHED_MODE_DAEMON) {
		rc = -EOPNOTSUPP;
		rt_buf_puts(&why, "a daemon function takes no calls; set mode "
				  "to hot or cold");
	} else if (!calls__takes_calls(fn)) {
		rc = -EOPNOTSUPP;
		rt_buf_puts(&why, "the function has no command");
	} else if (len > SCHED_CALL_MAX) {
		rc = -EFBIG;
		rt_buf_printf(&why, "a request holds at most %u bytes",
			      SCHED_CALL_MAX);
	} else if (fn->spec.mode == SCHED_MODE_HOT &&
		   fn->spec.format == SCHED_FORMAT_HTTP) {
		/* An HTTP request message must be well formed (httpmsg.h). */
		if (!partial)
			rc = rt_httpmsg_check(body, len, &why);
	} else if (fn->spec.mode == SCHED_MODE_HOT) {
		int json = fn->spec.format == SCHED_FORMAT_JSON;
		size_t n = len;

		/* A line request may end in one newline (echo adds it). */
		if (!json && n > 0 && body[n - 1] == '\n')
			n--;
		if (!json || !partial)
			rc = rt_frame_check(json, body, n, &why);
	}
	if (rc < 0)
		sched__call_refused(s, fn, -rc, why.data);
	rt_buf_free(&why);
	return rc;
}

void sched__call_refused(struct sched *s, struct sched_function *fn, int err,
			 const char *reason)
{
	/* Like a failed call's: `error` at once, the journal at most once
	 * a second, so that a loop of bad requests cannot flood it. */
	if (reason == NULL)
		reason = "?";
	sched__set_error(fn, reason);
	if (calls__fn_calls(fn) != NULL)
		calls__summarise(s, fn, &fn->calls->refused, err, reason);
}

int sched_quota_hold(struct sched *s, struct sched_function *fn, size_t n)
{
	struct rt_buf why = { 0 };
	int rc = sched__quota_hold(s, fn, n, &why);

	if (rc < 0 && rc != -ENOENT)
		sched__call_refused(s, fn, -rc, why.data);
	rt_buf_free(&why);
	return rc;
}

int sched_call_start(struct sched *s, struct sched_function *fn,
		     const char *body, size_t len, sched_call_fn done,
		     void *arg, struct sched_call **out)
{
	struct sched_fn_calls *fc;
	struct sched_call *c;
	int64_t now = rt_now_ms();
	int rc = sched_call_check(s, fn, body, len, 0);

	*out = NULL;
	if (rc < 0)
		return rc;
	fc = calls__fn_calls(fn);
	c = calloc(1, sizeof(*c));
	if (fc == NULL || c == NULL || s->loop == NULL ||
	    (c->timer = malloc(sizeof(*c->timer))) == NULL) {
		free(c);
		return -ENOMEM;
	}
	sched_stats_received(&fc->stats, now);
	sched_stats_received(s->calls_state.stats, now);
	if (fc->queued >= SCHED_QUEUE_MAX) {
		char why[96];

		free(c->timer);
		free(c);
		sched_stats_done(&fc->stats, now, SCHED_SYSTEM_ERROR, 0, -1);
		sched_stats_done(s->calls_state.stats, now, SCHED_SYSTEM_ERROR,
				 0, -1);
		snprintf(why, sizeof(why),
			 "the call queue is full (%d calls wait)", fc->queued);
		calls__failure(s, fn, EAGAIN, why);
		return -EAGAIN;
	}
	if (fn->spec.mode == SCHED_MODE_HOT &&
	    fn->spec.format == SCHED_FORMAT_LINE && len > 0 &&
	    body[len - 1] == '\n')
		len--;
	/* A request waiting in the queue is held as one in an open invoke
	 * file is: against the tenant's request_bytes and fnfs's bound. */
	rc = sched_quota_hold(s, fn, len);
	c->body = rc == 0 ? malloc(len + 1) : NULL;
	if (c->body == NULL) {
		if (rc == 0)
			sched_quota_release(s, sched_tenant_of(&fn->obj)->id,
					    len);
		free(c->timer);
		free(c);
		return rc < 0 ? rc : -ENOMEM;
	}
	c->held = len;
	c->held_tenant = sched_tenant_of(&fn->obj)->id;
	memcpy(c->body, body, len);
	c->len = len;
	c->s = s;
	c->fn = fn;
	c->id = ++s->calls_state.next_id;
	c->done = done;
	c->arg = arg;
	c->start_us = calls__mono_us();
	c->deadline_ms = now + fn->spec.timeout;
	c->cold = fn->spec.mode == SCHED_MODE_COLD;
	/* An id is never reused: a result finds its own call. */
	assert(rt_idmap_get(&s->calls_state.live, c->id) == NULL);
	if (rt_idmap_put(&s->calls_state.live, c->id, c) < 0) {
		sched_quota_release(s, c->held_tenant, len);
		sched_stats_done(&fc->stats, now, SCHED_SYSTEM_ERROR, 0, -1);
		sched_stats_done(s->calls_state.stats, now, SCHED_SYSTEM_ERROR,
				 0, -1);
		free(c->body);
		free(c->timer);
		free(c);
		return -ENOMEM;
	}
	uv_timer_init(s->loop, c->timer);
	c->timer->data = c;
	uv_timer_start(c->timer, calls__on_deadline, (uint64_t)fn->spec.timeout,
		       0);
	if (fc->tail != NULL)
		fc->tail->next = c;
	else
		fc->head = c;
	fc->tail = c;
	fc->queued++;
	/* The queue's tail is its last call, and its count covers it. */
	assert(c->next == NULL && fc->head != NULL && fc->queued > 0);
	s->calls_state.starting = c;
	s->calls_state.start_err = 0;
	sched__dispatch(s, fn);
	s->calls_state.starting = NULL;
	if (s->calls_state.start_err != 0)
		return -s->calls_state.start_err; /* finished: its memory goes
						     at close */
	*out = c;
	return 0;
}

void sched_call_detach(struct sched *s, struct sched_call *c)
{
	(void)s;
	c->done = NULL;
	c->arg = NULL;
}

/* ============================================================ the tick */

/* Scale-in: the highest instances above parallelism go once no slot of
 * theirs has been busy for idle_timeout. */
static void scale_in(struct sched *s, struct sched_function *fn)
{
	struct sched_fn_calls *fc = fn->calls;
	int64_t now = rt_mono_ms(),
		idle_ms = (int64_t)fn->spec.idle_timeout * 1000;
	int changed = 0;
	char name[16];

	while (fc->scale > fn->spec.parallelism && fc->queued == 0) {
		struct sched_instance *in;
		int top = sched__wanted(fn) - 1;

		if (top < fn->spec.parallelism)
			break;
		snprintf(name, sizeof(name), "%d", top);
		in = (struct sched_instance *)sched_child(&fn->obj, name);
		if (in != NULL &&
		    (in->busy > 0 || now - in->idle_mono < idle_ms))
			break;
		fc->scale = top;
		changed = 1;
	}
	if (fc->scale <= fn->spec.parallelism) {
		fc->scale = 0;
		rt_idmap_del(&s->calls_state.scaled, fn->obj.id);
	}
	if (changed)
		s->hooks.reconcile(s, fn);
}

void sched__calls_tick(struct sched *s)
{
	size_t i, n;
	void **v = rt_idmap_values(&s->calls_state.failing, &n);
	int64_t sec = rt_now_ms() / 1000;

	for (i = 0; v != NULL && i < n; i++) {
		struct sched_function *fn = v[i];

		struct sched_fn_calls *fc = fn->calls;

		if (fc->failed.pending > 0 && sec > fc->failed.sec)
			calls__report(s, fn, &fc->failed);
		if (fc->refused.pending > 0 && sec > fc->refused.sec)
			calls__report(s, fn, &fc->refused);
	}
	free(v);
	v = rt_idmap_values(&s->calls_state.scaled, &n);
	for (i = 0; v != NULL && i < n; i++)
		scale_in(s, v[i]);
	free(v);
}

void sched__calls_free(struct sched *s, struct sched_function *fn)
{
	struct sched_fn_calls *fc = fn->calls;

	if (fc == NULL)
		return;
	while (fc->head != NULL) {
		struct sched_call *c = fc->head;

		calls__unqueue(fc, c);
		calls__finish(s, c, ENOENT, NULL, 0,
			      "the function was removed");
	}
	rt_idmap_del(&s->calls_state.scaled, fn->obj.id);
	rt_idmap_del(&s->calls_state.failing, fn->obj.id);
}

void sched__calls_close(struct sched *s)
{
	size_t i, n;
	void **v = rt_idmap_values(&s->calls_state.live, &n);

	for (i = 0; v != NULL && i < n; i++) {
		struct sched_call *c = v[i];

		if (c->in == NULL)
			calls__unqueue(c->fn->calls, c);
		calls__finish(s, c, ECONNRESET, NULL, 0,
			      "fnfs is shutting down");
	}
	free(v);
}

/*
 * calls.c - calls of hot and cold functions (spec 7): each function's
 * bounded queue, dispatch to the free slots of instances (slots.h: an
 * instance serves up to `concurrency` calls at once), Fn's launch rule for
 * scaling out, scale-in of idle instances, deadlines, and the counters
 * every call ends in: received, then exactly one of processed, user error
 * or system error. Starts and the tick are calls_start.c. This stays one
 * file of about 600 lines: queue, dispatch and a call's end are one
 * path, each step calling the next.
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

int64_t calls__mono_us(void)
{
	return (int64_t)(uv_hrtime() / 1000);
}

struct sched_fn_calls *calls__fn_calls(struct sched_function *fn)
{
	if (fn->calls == NULL)
		fn->calls = calloc(1, sizeof(*fn->calls));
	return fn->calls;
}

static struct sched_stats *inst_stats(struct sched_instance *in)
{
	if (in->stats == NULL)
		in->stats = calloc(1, sizeof(*in->stats));
	return in->stats;
}

int sched__wanted(const struct sched_function *fn)
{
	int w = fn->spec.parallelism, max = sched_spec_max_instances(&fn->spec);

	if (fn->calls != NULL && fn->calls->scale > w)
		w = fn->calls->scale;
	return w > max ? max : w;
}

int calls__takes_calls(const struct sched_function *fn)
{
	return fn->spec.mode != SCHED_MODE_DAEMON && fn->spec.command != NULL &&
	       fn->spec.command[0] != '\0';
}

/* ============================================================ failures */

/* Puts the summary `sum` of a function in the journal: one line for
 * however many happened since the last one. */
void calls__report(struct sched *s, struct sched_function *fn,
		   struct sched_summary *sum)
{
	struct sched_fn_calls *fc = fn->calls;
	int refused = sum == &fc->refused;
	struct rt_buf kvs = { 0 };
	char n[32];

	snprintf(n, sizeof(n), "%ld", sum->pending);
	if (refused)
		rt_buf_kv(&kvs, "file", "invoke");
	rt_buf_kv(&kvs, "errno", rt_errno_name(sum->err));
	rt_buf_kv(&kvs, "count", n);
	rt_buf_kv(&kvs, "reason", sum->reason);
	sched__event(s, &fn->obj, refused ? "function.rejected" : "call.failed",
		     kvs.data);
	rt_buf_free(&kvs);
	sum->pending = 0;
	sum->sec = rt_now_ms() / 1000;
	if (fc->failed.pending == 0 && fc->refused.pending == 0)
		rt_idmap_del(&s->calls_state.failing, fn->obj.id);
}

/* Counts one more event in `sum`: in the journal at once if none was
 * this second, else with the next line (sched__calls_tick). */
void calls__summarise(struct sched *s, struct sched_function *fn,
		      struct sched_summary *sum, int err, const char *reason)
{
	sum->pending++;
	sum->err = err;
	snprintf(sum->reason, sizeof(sum->reason), "%s", reason);
	/* Reported with the next second's tick; with no room to remember
	 * the function for it, now. */
	if (rt_now_ms() / 1000 > sum->sec ||
	    (rt_idmap_get(&s->calls_state.failing, fn->obj.id) == NULL &&
	     rt_idmap_put(&s->calls_state.failing, fn->obj.id, fn) < 0))
		calls__report(s, fn, sum);
}

/* Records a failed call: `error` at once, the journal at most once a
 * second per function, so that a failing function cannot flood it. */
void calls__failure(struct sched *s, struct sched_function *fn, int err,
		    const char *reason)
{
	char line[300];

	snprintf(line, sizeof(line), "call failed: %s: %s", rt_errno_name(err),
		 reason);
	sched__set_error(fn, line);
	calls__summarise(s, fn, &fn->calls->failed, err, reason);
}

/* ============================================================== ending */

void sched__call_body_free(struct sched_call *c)
{
	if (c->held > 0)
		sched_quota_release(c->s, c->held_tenant, c->held);
	c->held = 0;
	free(c->body);
	c->body = NULL;
}

static void call_freed(uv_handle_t *h)
{
	struct sched_call *c = h->data;

	free(h);
	sched__call_body_free(c);
	free(c);
}

void calls__unqueue(struct sched_fn_calls *fc, struct sched_call *c)
{
	struct sched_call **p;

	for (p = &fc->head; *p != NULL; p = &(*p)->next) {
		if (*p != c)
			continue;
		*p = c->next;
		if (fc->tail == c) {
			struct sched_call *t = fc->head;

			while (t != NULL && t->next != NULL)
				t = t->next;
			fc->tail = t;
		}
		/* queued counts the calls on the list: c was one. */
		assert(fc->queued > 0);
		fc->queued--;
		/* The tail is the last call, or none when the list is empty. */
		assert((fc->head == NULL) == (fc->tail == NULL) &&
		       (fc->tail == NULL || fc->tail->next == NULL));
		c->next = NULL;
		return;
	}
}

/* Ends call `c`: counts it, records a failure, answers whoever waits and
 * frees it. */
void calls__finish(struct sched *s, struct sched_call *c, int err,
		   const char *body, size_t len, const char *reason)
{
	struct sched_function *fn = c->fn;
	struct sched_instance *in = c->in;
	enum sched_outcome o = err == 0		  ? SCHED_PROCESSED
			       : err == EREMOTEIO ? SCHED_USER_ERROR
						  : SCHED_SYSTEM_ERROR;
	int64_t now = rt_now_ms(),
		us = o == SCHED_SYSTEM_ERROR ? -1
					     : calls__mono_us() - c->start_us;
	int timeout = err == ETIMEDOUT;
	sched_call_fn done = c->done;

	if (c->via_direct)
		sched__direct_call_over(s, c);
	sched_stats_done(&fn->calls->stats, now, o, timeout, us);
	sched_stats_done(s->calls_state.stats, now, o, timeout, us);
	if (in != NULL) {
		if (in->stats != NULL)
			sched_stats_done(in->stats, now, o, timeout, us);
		if (c->on_prev != NULL || in->calls == c) {
			/* Off its instance's list: a slot is free. */
			if (c->on_prev != NULL)
				c->on_prev->on_next = c->on_next;
			else
				in->calls = c->on_next;
			if (c->on_next != NULL)
				c->on_next->on_prev = c->on_prev;
			c->on_next = c->on_prev = NULL;
			/* busy counts the calls on its list: c was one. */
			assert(in->busy > 0);
			in->busy--;
		}
		if (in->busy == 0)
			in->idle_mono = rt_mono_ms();
	}
	if (err != 0) {
		struct rt_buf why = { 0 };

		if (err == EREMOTEIO && body == NULL && reason != NULL)
			rt_buf_puts(&why, reason); /* it could not start */
		else if (err == EREMOTEIO)
			rt_buf_printf(&why, "the function reported: %.*s",
				      (int)(len < 160 ? len : 160),
				      body ? body : "");
		else
			rt_buf_puts(&why, reason && reason[0] ? reason : "?");
		calls__failure(s, fn, err, why.data ? why.data : "?");
		rt_buf_free(&why);
	}
	rt_idmap_del(&s->calls_state.live, c->id);
	c->done = NULL;
	c->in = NULL;
	uv_timer_stop(c->timer);
	uv_close((uv_handle_t *)c->timer, call_freed);
	/* A call that ends inside sched_call_start (refused at once) is
	 * answered by its return value, not by `done`. */
	if (c == s->calls_state.starting)
		s->calls_state.start_err = err != 0 ? err : EIO;
	else if (done != NULL)
		done(c->arg, err, body, len);
}

/* After a call on `in` ended: an instance that waited for its calls
 * before leaving a draining worker, or before being removed (a scale-in,
 * a lower parallelism: a graceful stop), is converged now. */
static void call_ended(struct sched *s, struct sched_function *fn,
		       struct sched_instance *in)
{
	if (in == NULL || in->busy > 0)
		return;
	if (in->retiring)
		s->hooks.retire_idle(s, in);
	else if ((in->worker != NULL && in->worker->draining) ||
		 in->sent_revision != fn->run_revision)
		s->hooks.reconcile(s, fn);
}

void calls__on_deadline(uv_timer_t *t)
{
	struct sched_call *c = t->data;
	struct sched *s = c->s;
	char why[160];

	if (c->in == NULL) {
		calls__unqueue(c->fn->calls, c);
		snprintf(why, sizeof(why),
			 "waited in the queue past the timeout of %d ms",
			 c->fn->spec.timeout);
		calls__finish(s, c, ETIMEDOUT, NULL, 0, why);
	} else if (c->via_direct) {
		/* Sent by the controller itself: no worker to wait for. */
		struct sched_instance *in = c->in;
		struct sched_function *fn = c->fn;

		snprintf(why, sizeof(why), "no response within %d ms",
			 fn->spec.timeout);
		calls__finish(s, c, ETIMEDOUT, NULL, 0, why);
		call_ended(s, fn, in);
		sched__dispatch(s, fn);
	} else if (!c->late) {
		/* The worker times it out itself; give its answer time. */
		c->late = 1;
		uv_timer_start(t, calls__on_deadline, CALL_GRACE_MS, 0);
	} else {
		struct sched_instance *in = c->in;
		struct sched_function *fn = c->fn;

		calls__finish(s, c, ETIMEDOUT, NULL, 0,
			      "its worker did not answer by the deadline");
		call_ended(s, fn, in);
	}
}

void sched__on_result(struct sched *s, struct sched_worker *w,
		      const struct rt_msg *m)
{
	long long id = rt_msg_int(m, "call", 0);
	struct sched_call *c = id > 0 ? rt_idmap_get(&s->calls_state.live,
						     (uint64_t)id)
				      : NULL;
	const char *st = rt_msg_str(m, "status"),
		   *reason = rt_msg_str(m, "reason");

	if (c == NULL || c->in == NULL || c->in->worker != w || st == NULL)
		return;
	if (sched_fence_check(1, c->in->epoch, sched__msg_epoch(m)) !=
	    SCHED_FENCE_ACCEPT) {
		/* Of another assignment of its instance: late. */
		sched__fenced(s, w, rt_msg_str(m, "instance"),
			      sched__msg_epoch(m), c->in->epoch, "result");
		return;
	}
	sched__call_result(s, c, st, reason, m->body, m->body_len);
}

void sched__call_result(struct sched *s, struct sched_call *c, const char *st,
			const char *reason, const char *body, size_t len)
{
	struct sched_function *fn = c->fn;
	struct sched_instance *in = c->in;
	int err;

	if (strcmp(st, "ok") == 0)
		err = 0;
	else if (strcmp(st, "error") == 0)
		err = EREMOTEIO;
	else if (strcmp(st, "timeout") == 0)
		err = ETIMEDOUT;
	else if (strcmp(st, "reset") == 0)
		err = ECONNRESET;
	else
		err = EIO;
	if (err == ETIMEDOUT) {
		char why[160];

		snprintf(why, sizeof(why), "no response within %d ms",
			 fn->spec.timeout);
		calls__finish(s, c, err, body, len, why);
	} else {
		calls__finish(s, c, err, body, len, reason);
	}
	call_ended(s, fn, in);
	sched__dispatch(s, fn);
}

void sched__call_lost(struct sched *s, struct sched_instance *in,
		      const char *why)
{
	while (in->calls != NULL)
		calls__finish(s, in->calls, ECONNRESET, NULL, 0, why);
}

/* ============================================================ dispatch */

int sched__takes_calls(const struct sched_instance *in)
{
	/* It runs what it was last sent: one being replaced by a new
	 * revision takes no more (its worker finishes those it has), one
	 * not yet replaced in a rolling deploy goes on serving. */
	return in->desired_run && !in->retiring && in->state == SCHED_RUNNING &&
	       in->worker != NULL && in->worker->online &&
	       !in->worker->draining && !in->sent_stop && in->revision != 0 &&
	       in->sent_revision == in->revision;
}

static void slot_view(const struct sched_instance *in, struct slots_instance *v)
{
	v->n = in->n;
	v->usable = sched__takes_calls(in);
	v->busy = in->busy;
}

static void send_call(struct sched *s, struct sched_call *c,
		      struct sched_instance *in)
{
	struct sched_function *fn = c->fn;
	struct sched_stats *st = inst_stats(in);
	int64_t now = rt_now_ms();

	/* On one instance's list at a time. */
	assert(c->on_prev == NULL && c->on_next == NULL);
	assert(in->busy >= 0 && (in->calls == NULL) == (in->busy == 0));
	c->in = in;
	c->on_prev = NULL;
	c->on_next = in->calls;
	if (in->calls != NULL)
		in->calls->on_prev = c;
	in->calls = c;
	in->busy++;
	/* The timeout bounds the run; the wait in the queue had its own. */
	c->deadline_ms = now + fn->spec.timeout;
	c->late = 0;
	uv_timer_start(c->timer, calls__on_deadline, (uint64_t)fn->spec.timeout,
		       0);
	if (st != NULL)
		sched_stats_received(st, now);
	if (fn->spec.mode == SCHED_MODE_COLD) {
		/* Every call of a cold function starts a process. */
		fn->calls->stats.cold_starts++;
		s->calls_state.stats->cold_starts++;
		if (st != NULL)
			st->cold_starts++;
	}
	if (sched__direct_send(s, c, in))
		return; /* its body is direct.c's now */
	sched__send_to_worker(s, c);
}

void sched__send_to_worker(struct sched *s, struct sched_call *c)
{
	struct sched_function *fn = c->fn;
	struct sched_instance *in = c->in;
	struct rt_buf id = { 0 };

	sched_obj_path(&in->obj, &id);
	sched__send_body(s, in->worker,
			 json_pack("{s:s, s:s, s:I, s:I, s:i}", "type", "call",
				   "instance", id.data ? id.data : "", "call",
				   (json_int_t)c->id, "deadline_ms",
				   (json_int_t)c->deadline_ms, "slots",
				   sched_spec_slots(&fn->spec)),
			 c->body, c->len);
	rt_buf_free(&id);
	sched__call_body_free(c);
}

/* Fn's rule in slots: launch an instance only when calls wait, no slot is
 * free, fewer than max_instances exist and the waiting calls outnumber
 * the slots of the instances already starting (slots.h). */
static void scale_out(struct sched *s, struct sched_function *fn,
		      struct sched_instance **v, int n)
{
	struct sched_fn_calls *fc = fn->calls;
	int i, total = n, starting = 0, launched = 0, first = n,
	       max = sched_spec_max_instances(&fn->spec);
	char name[16];

	for (i = 0; i < n; i++) {
		enum sched_instance_state st = v[i]->state;

		if (v[i]->desired_run && !v[i]->retiring &&
		    (st == SCHED_PENDING || st == SCHED_STARTING ||
		     st == SCHED_BACKOFF || st == SCHED_LOST ||
		     (st == SCHED_RUNNING && !sched__takes_calls(v[i]) &&
		      v[i]->busy == 0)))
			starting++;
	}
	launched = sched_slots_launch(fc->queued, starting,
				      sched_spec_slots(&fn->spec), total, max);
	if (launched == 0)
		return;
	total += launched;
	/* Above parallelism the function is watched for its scale-in; with
	 * no room to watch it, it is not scaled out (the next tick tries
	 * again). */
	if (total > fn->spec.parallelism &&
	    rt_idmap_get(&s->calls_state.scaled, fn->obj.id) == NULL &&
	    rt_idmap_put(&s->calls_state.scaled, fn->obj.id, fn) < 0)
		return;
	fc->scale = total;
	if (fn->spec.mode == SCHED_MODE_HOT) {
		fc->stats.cold_starts += (uint64_t)launched;
		s->calls_state.stats->cold_starts += (uint64_t)launched;
	}
	s->hooks.reconcile(s, fn);
	for (i = first; i < total; i++) {
		struct sched_instance *in;

		snprintf(name, sizeof(name), "%d", i);
		in = (struct sched_instance *)sched_child(&fn->obj, name);
		if (in != NULL) {
			in->on_demand = fn->spec.mode == SCHED_MODE_HOT;
			in->idle_mono = rt_mono_ms();
		}
	}
}

struct placeable {
	int wanted;			 /* instances wanted */
	int waiting;			 /* of them, not placed: no worker */
	const struct sched_instance *in; /* one of those */
};

static int count_placed(const char *key, void *value, void *arg)
{
	struct placeable *p = arg;
	const struct sched_instance *in = value;

	(void)key;
	if (!in->desired_run)
		return 0;
	p->wanted++;
	if (in->state == SCHED_PENDING && in->worker == NULL) {
		p->waiting++;
		p->in = in;
	}
	return 0;
}

/* Spec 6: ENOSPC where no worker can take it and the user asked for an
 * immediate answer, as a caller does. When no instance of the function
 * is placed, and none can be (every one waits for a worker, and no
 * worker is on its way: none is starting, and no restart of fnfs is
 * waiting for the known ones), the waiting calls end at once, instead of
 * at their timeout. */
static void refuse_unplaceable(struct sched *s, struct sched_function *fn)
{
	struct sched_fn_calls *fc = fn->calls;
	struct placeable p = { 0, 0, NULL };
	char why[320];

	if (sched__workers_coming(s))
		return;
	rt_map_each(&fn->obj.children, count_placed, &p);
	if (p.wanted == 0 || p.waiting < p.wanted || p.in == NULL)
		return;
	snprintf(why, sizeof(why), "no worker can take an instance: %s",
		 p.in->reason[0] ? p.in->reason : "no worker");
	while (fc->head != NULL) {
		struct sched_call *c = fc->head;

		calls__unqueue(fc, c);
		calls__finish(s, c, ENOSPC, NULL, 0, why);
	}
}

struct failed_all {
	int wanted;			 /* instances wanted */
	int failed;			 /* of them, failed */
	const struct sched_instance *in; /* the last failed one */
};

static int count_failed(const char *key, void *value, void *arg)
{
	struct failed_all *p = arg;
	const struct sched_instance *in = value;

	(void)key;
	if (!in->desired_run || in->retiring)
		return 0;
	p->wanted++;
	if (in->state == SCHED_FAILED) {
		p->failed++;
		p->in = in;
	}
	return 0;
}

/* When every instance the function wants has failed (its restart policy
 * gave up: none will take a call unless someone starts it again), the
 * waiting calls end at once, with its reason, instead of at their
 * timeout: EREMOTEIO, since the function itself could not start (its
 * exit, a Lambda runtime's init error). While one is in backoff, or
 * starting, they wait for it. */
static void refuse_failed(struct sched *s, struct sched_function *fn)
{
	struct sched_fn_calls *fc = fn->calls;
	struct failed_all p = { 0, 0, NULL };
	char why[320];

	rt_map_each(&fn->obj.children, count_failed, &p);
	if (p.wanted == 0 || p.failed < p.wanted || p.in == NULL)
		return;
	snprintf(why, sizeof(why), "instance %d failed: %s", p.in->n,
		 p.in->reason[0] ? p.in->reason : "?");
	while (fc->head != NULL) {
		struct sched_call *c = fc->head;

		calls__unqueue(fc, c);
		calls__finish(s, c, EREMOTEIO, NULL, 0, why);
	}
}

struct free_slot {
	int slots; /* of each instance */
	struct sched_instance *in;
	struct slots_instance view; /* of `in` */
};

static int find_free(const char *key, void *value, void *arg)
{
	struct free_slot *l = arg;
	struct sched_instance *in = value;
	struct slots_instance v;

	(void)key;
	slot_view(in, &v);
	if (sched_slots_prefer(&v, l->in != NULL ? &l->view : NULL, l->slots)) {
		l->in = in;
		l->view = v;
	}
	return 0;
}

void sched__dispatch(struct sched *s, struct sched_function *fn)
{
	struct sched_fn_calls *fc = fn->calls;
	struct sched_instance **v;
	int n;

	if (fc == NULL || fc->queued == 0)
		return;
	if (!calls__takes_calls(fn)) {
		/* It became a daemon, or lost its command, meanwhile. */
		while (fc->head != NULL) {
			struct sched_call *c = fc->head;

			calls__unqueue(fc, c);
			calls__finish(s, c, EOPNOTSUPP, NULL, 0,
				      "the function no longer takes calls");
		}
		return;
	}
	/* The lowest-numbered instance with a free slot first, so that the
	 * highest ones go idle and are the ones scaled in. A scan per call:
	 * no sorted copy on the path of every call. */
	while (fc->head != NULL) {
		struct free_slot l = { sched_spec_slots(&fn->spec),
				       NULL,
				       { 0, 0, 0 } };
		struct sched_call *c;

		rt_map_each(&fn->obj.children, find_free, &l);
		if (l.in == NULL)
			break;
		c = fc->head;
		calls__unqueue(fc, c);
		send_call(s, c, l.in);
	}
	if (fc->head == NULL)
		return;
	v = sched__instances_sorted(fn, &n);
	scale_out(s, fn, v, n);
	free(v);
	if (fc->head != NULL)
		refuse_unplaceable(s, fn);
	if (fc->head != NULL)
		refuse_failed(s, fn);
}

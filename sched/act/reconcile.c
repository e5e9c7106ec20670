/*
 * reconcile.c - one decision per instance: decide() fills the inputs of
 * sched_decide (decide.c, pure) from the model, act() carries the answer
 * out (place, start, stop, restart, move); reconciliation makes and
 * retires the instances a function's spec wants and acts on each.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "../calls/direct.h"
#include "../model/instance_state.h"
#include "../model/invariants.h"
#include "orders.h"
#include "reconcile.h"

/* How many instances a function wants: daemons with a command run
 * `parallelism` of them; hot and cold ones at least that many, more while
 * calls have scaled them out (calls.c). */
static int wanted(const struct sched_function *fn)
{
	if (fn->spec.command == NULL || fn->spec.command[0] == '\0')
		return 0;
	if (fn->spec.mode != SCHED_MODE_DAEMON)
		return sched__wanted(fn);
	return fn->spec.parallelism;
}

/* Whether `in` is taking its function's run revision (a start of it was
 * sent) and is neither running it nor failed yet. */
static int taking_revision(const struct sched_function *fn,
			   const struct sched_instance *in)
{
	return in->desired_run && in->worker != NULL && in->worker->online &&
	       in->sent_revision == fn->run_revision &&
	       in->state != SCHED_FAILED &&
	       !(in->state == SCHED_RUNNING &&
		 in->revision == fn->run_revision);
}

/* Whether `in` waits for a start of its function's run revision. */
static int behind(const struct sched_function *fn,
		  const struct sched_instance *in)
{
	return in->desired_run && in->sent_revision != 0 &&
	       in->sent_revision != fn->run_revision;
}

struct roll {
	const struct sched_function *fn;
	const struct sched_instance *self; /* left out */
	int replacing;			   /* one is taking the revision */
	struct sched_instance *next;	   /* the lowest running one behind */
};

static int roll_cb(const char *key, void *value, void *arg)
{
	struct roll *r = arg;
	struct sched_instance *in = value;

	(void)key;
	if (in == r->self)
		return 0;
	if (taking_revision(r->fn, in)) {
		r->replacing = 1;
		return 1; /* enough */
	}
	/* Only a running one is held back (sched_decide's rolling). */
	if (behind(r->fn, in) && in->state == SCHED_RUNNING &&
	    (r->next == NULL || in->n < r->next->n))
		r->next = in;
	return 0;
}

void sched__roll_next(struct sched *s, struct sched_function *fn)
{
	struct roll r = { fn, NULL, 0, NULL };

	rt_map_each(&fn->obj.children, roll_cb, &r);
	if (!r.replacing && r.next != NULL)
		sched__derived_end(
			s, 0,
			sched__act(s, r.next, DECIDE_CONVERGE, NULL, NULL),
			fn->obj.name);
}

/* Asks the decision (decide.c) what to do with `in`, filling its inputs
 * from the model. */
enum decide_action sched__decide(struct sched *s, struct sched_instance *in,
				 enum decide_cause cause,
				 struct decide_result *res)
{
	struct sched_function *fn = sched__fn_of(in);
	struct decide_input d;
	struct place_worker pw;
	struct place_request r;

	memset(&d, 0, sizeof(d));
	d.cause = cause;
	d.in.desired_run = in->desired_run;
	d.in.state = in->state;
	d.in.sent_revision = in->sent_revision;
	d.in.sent_stop = in->sent_stop;
	d.in.busy = in->busy > 0;
	sched__request_of(s, fn, &r);
	if (in->worker != NULL) {
		sched__worker_view(in->worker, &pw);
		pw.used_mb -= in->reserved_mb; /* what it holds is its own */
		d.worker = &pw;
		d.worker_online = in->worker->online;
	}
	d.fn = &r;
	d.run_revision = fn->run_revision;
	d.recovering = rt_mono_ms() < s->recovery_until;
	if (behind(fn, in) && in->state == SCHED_RUNNING) {
		/* A rolling deploy: one instance at a time. */
		struct roll roll = { fn, in, 0, NULL };

		rt_map_each(&fn->obj.children, roll_cb, &roll);
		d.rolling = roll.replacing;
	}
	return sched_decide(&d, res);
}

/* Moves `in` off its worker: the old copy is stopped and forgotten, the
 * instance goes to `to` (or wherever placement finds room, or pending)
 * and starts there. Returns 0 or -errno of the store. */
int sched__move(struct sched *s, struct sched_instance *in,
		struct sched_worker *to, const char *why,
		struct sched_wait *wait)
{
	struct sched_worker *from = in->worker;
	struct sched_view v = { 0 };
	int rc = 0;

	sched__call_lost(s, in, "its instance moved to another worker");
	if (from != NULL) {
		if (from->online)
			sched__send_simple(s, in, "stop", 1, NULL);
		if (why != NULL && why[0] != '\0')
			sched__inst_event(s, in, "instance.moving", "from",
					  from->obj.name, "reason", why);
		rc = sched__unassign(s, in, 1, NULL);
		if (from->draining && from->assignments.count == 0)
			sched__event(s, &from->obj, "worker.drained", NULL);
	}
	in->pid = 0;
	if (!in->desired_run) {
		/* A stopped one takes no room anywhere; a start places it. */
		sched__instance_set_state(in, SCHED_STOPPED, "moved, stopped");
		return rc;
	}
	sched__instance_set_state(in, SCHED_PENDING, "moving");
	if (rc == 0 && to != NULL)
		rc = sched__assign(s, in, to, NULL);
	else if (rc == 0)
		rc = sched__place_in(s, in, &v);
	sched__view_free(&v);
	if (in->worker != NULL && in->worker->online)
		sched__send_start(s, in, wait);
	return rc;
}

/* Carries out the decision for `in` (asked with `cause`): places, starts,
 * stops, restarts or moves it, adding what to wait for to `wait` (may be
 * NULL). `v` is the placement view of its function's batch, or NULL.
 * Returns 0 or -errno of the store. */
int sched__act(struct sched *s, struct sched_instance *in,
	       enum decide_cause cause, struct sched_view *v,
	       struct sched_wait *wait)
{
	struct sched_function *fn = sched__fn_of(in);
	struct decide_result res;
	struct sched_view own = { 0 };
	int rc = 0;

	sched__decide(s, in, cause, &res);
	if (res.fits && in->desired_run && in->reserved_mb != fn->spec.memory) {
		/* It stays: what it holds follows the function's memory
		 * (the decision checked that it fits). */
		int delta = fn->spec.memory - in->reserved_mb;

		assert(in->worker != NULL); /* it fits where it is */
		sched__hold(in->worker, v, delta, 0);
		in->reserved_mb = fn->spec.memory;
		if (delta < 0)
			s->act.capacity_changed = 1;
	}
	switch (res.action) {
	case DECIDE_NONE:
		if (in->worker == NULL && !in->desired_run)
			sched__instance_set_state(in, SCHED_STOPPED,
						  "wanted stopped");
		break;
	case DECIDE_PENDING: sched__set_pending(s, in, res.reason); break;
	case DECIDE_START:
		if (in->worker == NULL)
			rc = sched__place_in(s, in, v != NULL ? v : &own);
		if (in->worker != NULL && in->worker->online)
			sched__send_start(s, in, wait);
		break;
	case DECIDE_STOP:
		in->sent_stop = 1;
		sched__send_simple(s, in, "stop", 0, wait);
		break;
	case DECIDE_RESTART:
		assert(in->worker != NULL && in->worker->online);
		sched__inst_event(s, in, "instance.restarting", "worker",
				  in->worker->obj.name, "reason", res.reason);
		if (in->sent_revision != fn->run_revision ||
		    in->state == SCHED_STOPPED)
			sched__send_start(s, in, wait);
		else
			sched__send_simple(s, in, "restart", 0, wait);
		break;
	case DECIDE_MOVE:
		rc = sched__move(s, in, NULL, res.reason, wait);
		break;
	}
	sched__view_free(&own);
	return rc;
}

struct sched_instance *sched__instance_new(struct sched *s,
					   struct sched_function *fn, int n,
					   int desired_run)
{
	char name[16];
	struct sched_instance *in;
	int64_t now = rt_now_ms();

	snprintf(name, sizeof(name), "%d", n);
	in = (struct sched_instance *)sched__obj_new(s, SCHED_INSTANCE,
						     &fn->obj, name, now, now);
	if (in == NULL)
		return NULL;
	in->n = n;
	in->desired_run = desired_run;
	sched__instance_restore(in,
				desired_run ? SCHED_PENDING : SCHED_STOPPED);
	return in;
}

void sched__instance_free(struct sched_instance *in)
{
	sched__direct_free(in);
	free(in->exits);
	free(in->log_worker);
	free(in->stats);
}

/* Stops and forgets an instance that is no longer wanted. With
 * `graceful` (its function stays), one serving calls on a connected
 * worker is stopped first and removed once they have ended (its worker
 * lets them finish, each bounded by its deadline): it takes no new
 * call meanwhile. */
static void retire(struct sched *s, struct sched_instance *in, int persist,
		   int graceful)
{
	const char *t, *ns, *fn;

	if (graceful && in->busy > 0 && in->worker != NULL &&
	    in->worker->online) {
		if (!in->retiring) {
			in->retiring = 1;
			in->desired_run = 0;
			in->sent_stop = 1;
			sched__send_simple(s, in, "stop", 1, NULL);
			snprintf(in->reason, sizeof(in->reason),
				 "removed once its %d calls have ended",
				 in->busy);
		}
		return;
	}
	sched__call_lost(s, in, "its instance was removed");
	sched__fn_of(in)->restarts_gone += in->restarts_total;
	if (in->worker != NULL) {
		sched__send_simple(s, in, "stop", 1, NULL);
		sched__unassign_model(s, in);
	}
	sched__parts(in, &t, &ns, &fn);
	if (persist && store_instance_delete(s->store, t, ns, fn, in->n) < 0)
		rt_log(RT_LOG_ERROR, "instance %s/%s/%s/%d: the store failed",
		       t, ns, fn, in->n);
	sched__inst_event(s, in, "instance.stopped", "reason", "removed", NULL,
			  NULL);
	sched__obj_drop(s, &in->obj);
}

void sched__retire_idle(struct sched *s, struct sched_instance *in)
{
	struct sched_function *fn = sched__fn_of(in);
	int began;

	if (!in->retiring || in->busy > 0)
		return;
	began = store_begin_derived(s->store) == 0;
	retire(s, in, 1, 0);
	sched__derived_end(s, began, 0, fn->obj.name);
	if (!s->act.reconciling_all)
		sched__model_check(s);
}

void sched__reconcile(struct sched *s, struct sched_function *fn)
{
	int want = wanted(fn), n, i, began, rc = 0;
	struct sched_view v = { 0 };
	struct sched_collect c;
	char name[16];

	if (!sched__acting(s))
		return; /* a follower: the leader does it */

	/* One transaction: new instances, removals and assignments, all
	 * derived from the spec (which was stored durably). */
	began = store_begin_derived(s->store) == 0;
	for (n = 0; n < want; n++) {
		struct sched_instance *in;

		snprintf(name, sizeof(name), "%d", n);
		in = (struct sched_instance *)sched_child(&fn->obj, name);
		if (in != NULL && in->retiring) {
			/* Wanted again before its calls ended: it stays,
			 * and starts again once its stop is done. */
			in->retiring = 0;
			in->desired_run = 1;
			in->reason[0] = '\0';
			if (rc == 0)
				rc = sched__store_put(s, in);
		}
		if (in != NULL)
			continue;
		in = sched__instance_new(s, fn, n, 1);
		if (in != NULL && rc == 0)
			rc = sched__store_put(s, in);
	}
	c = sched__instances_of(fn);
	for (i = 0; i < c.n; i++) {
		if (c.v[i]->n < want)
			continue;
		retire(s, c.v[i], 1, 1);
		c.v[i] = NULL;
	}
	for (i = 0; i < c.n; i++) {
		int r = c.v[i] != NULL ? sched__act(s, c.v[i], DECIDE_CONVERGE,
						    &v, NULL)
				       : 0;

		rc = rc < 0 ? rc : r;
	}
	free(c.v);
	sched__view_free(&v);
	sched__derived_end(s, began, rc, fn->obj.name);
	if (!s->act.reconciling_all)
		sched__model_check(s);
}

static int reconcile_ns(const char *key, void *value, void *arg)
{
	(void)key;
	sched__reconcile(arg, value);
	return 0;
}

static int reconcile_t(const char *key, void *value, void *arg)
{
	struct sched_obj *t = value;

	(void)key;
	return rt_map_each(&t->children, reconcile_ns, arg);
}

static int reconcile_root(const char *key, void *value, void *arg)
{
	struct sched_obj *t = value;

	(void)key;
	return rt_map_each(&t->children, reconcile_t, arg);
}

static void on_reconcile_due(uv_timer_t *t)
{
	struct sched *s = t->data;

	s->act.reconcile_due = 0;
	if (!s->shutting_down)
		sched__reconcile_all(s);
}

void sched__reconcile_soon(struct sched *s)
{
	if (s->shutting_down || s->act.reconcile_due)
		return;
	s->act.reconcile_due = 1;
	uv_timer_start(&s->act.reconcile_timer, on_reconcile_due, 0, 0);
}

void sched__reconcile_all(struct sched *s)
{
	int began;

	if (!sched__acting(s))
		return; /* a follower: the leader does it */
	began = store_begin_derived(s->store) == 0;

	s->act.reconciling_all++;
	rt_map_each(&s->root.children, reconcile_root, s);
	s->act.reconciling_all--;
	sched__derived_end(s, began, 0, "reconciliation");
	if (!s->act.reconciling_all)
		sched__model_check(s);
}

int sched__instances_unstore(struct sched *s, struct sched_function *fn)
{
	struct sched_collect c = sched__instances_of(fn);
	const char *t = fn->obj.parent->parent->name,
		   *ns = fn->obj.parent->name;
	int i, rc = 0;

	for (i = 0; i < c.n && rc == 0; i++)
		rc = store_instance_delete(s->store, t, ns, fn->obj.name,
					   c.v[i]->n);
	free(c.v);
	return rc;
}

void sched__instances_drop(struct sched *s, struct sched_function *fn)
{
	struct sched_collect c = sched__instances_of(fn);
	int i;

	for (i = 0; i < c.n; i++)
		retire(s, c.v[i], 0, 0);
	free(c.v);
}

/*
 * reports.c - what workers say about instances: the stored instances
 * loaded at start (waiting for their workers), instance reports, exits
 * and heartbeat samples, adoption of what a registering worker already
 * runs, and the loss of a worker's instances.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "../common.h"
#include "../calls/direct.h"
#include "../workers/fence.h"
#include "../model/instance_state.h"
#include "reconcile.h"
#include "reports.h"
#include "../workers/requests.h"

static int load_cb(const struct store_instance *r, void *arg)
{
	struct sched *s = arg;
	struct sched_obj *t = sched_child(&s->root, r->tenant), *ns, *f;
	struct sched_instance *in;
	struct sched_obj *w;

	ns = t ? sched_child(t, r->ns) : NULL;
	f = ns ? sched_child(ns, r->fn) : NULL;
	if (f == NULL)
		return 0;
	in = sched__instance_new(s, (struct sched_function *)f, r->n,
				 r->desired_run);
	if (in == NULL)
		return -ENOMEM;
	in->epoch = r->epoch;
	w = r->worker ? sched_child(&s->pool, r->worker) : NULL;
	if (w != NULL) {
		struct rt_buf name = { 0 };

		sched_assignment_name(in, &name);
		if (rt_map_put(&((struct sched_worker *)w)->assignments,
			       name.data, in) == 0) {
			in->worker = (struct sched_worker *)w;
			in->reserved_mb =
				((struct sched_function *)f)->spec.memory;
			in->worker->used_mb += in->reserved_mb;
			sched__instance_restore(in, SCHED_LOST);
			snprintf(in->reason, sizeof(in->reason),
				 "waiting for worker %s", w->name);
		}
		rt_buf_free(&name);
	}
	return 0;
}

int sched__instances_load(struct sched *s)
{
	return store_instance_load(s->store, load_cb, s);
}

/* The instance of report `m` if it is about its current assignment on
 * worker `w` (the epoch fence, fence.h). A report about another epoch of
 * an assignment there is dropped; a worker that holds no assignment of
 * it is told to stop and forget it (it runs nowhere twice). */
static struct sched_instance *owned(struct sched *s, struct sched_worker *w,
				    const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "instance");
	struct sched_instance *in = id ? sched__instance_by_id(s, id) : NULL;
	uint64_t epoch = sched__msg_epoch(m);
	json_t *h;

	if (id == NULL)
		return NULL;
	switch (sched_fence_check(in != NULL && in->worker == w,
				  in ? in->epoch : 0, epoch)) {
	case SCHED_FENCE_ACCEPT: return in;
	case SCHED_FENCE_IGNORE:
		sched__fenced(s, w, id, epoch, in->epoch, m->type);
		return NULL;
	case SCHED_FENCE_STOP: break;
	}
	sched__fenced(s, w, id, epoch, 0, m->type);
	/* Calls it may have are no call of the controller's: no graceful
	 * stop for them. */
	h = json_pack("{s:s, s:s, s:b, s:b}", "type", "stop", "instance", id,
		      "forget", 1, "abort_calls", 1);
	if (h != NULL && epoch > 0)
		json_object_set_new(h, "epoch",
				    json_integer((json_int_t)epoch));
	sched__send(s, w, h);
	return NULL;
}

/* Whether a message of `w` about `in` (an exit, a sample) is about its
 * current assignment there; counted and logged when it is not. */
static int current(const struct sched *s, struct sched_worker *w,
		   struct sched_instance *in, const char *id, uint64_t epoch,
		   const char *what)
{
	if (in == NULL || in->worker != w) {
		sched__fenced(s, w, id, epoch, 0, what);
		return 0;
	}
	if (sched_fence_check(1, in->epoch, epoch) == SCHED_FENCE_ACCEPT)
		return 1;
	sched__fenced(s, w, id, epoch, in->epoch, what);
	return 0;
}

void sched__on_instance(struct sched *s, struct sched_worker *w,
			const struct rt_msg *m)
{
	struct sched_instance *in = owned(s, w, m);
	enum sched_instance_state st, old;
	const char *reason = rt_msg_str(m, "reason");
	json_t *exits = json_object_get(m->header, "exits"), *e;
	long long restarts = rt_msg_int(m, "restarts", 0);
	struct rt_buf lines = { 0 };
	char pid[16], rev[32];
	size_t i;
	int oldpid;
	uint64_t oldrev;
	long long oldrestarts;

	if (in == NULL)
		return;
	assert(in->worker == w); /* the fence let only its own through */
	old = in->state;
	oldpid = in->pid;
	oldrev = in->revision;
	oldrestarts = in->restarts_total;
	st = sched__instance_reported(in, rt_msg_str(m, "state"));
	in->pid = (int)rt_msg_int(m, "pid", 0);
	in->revision = (uint64_t)rt_msg_int(m, "revision", 0);
	in->started_ms = rt_msg_int(m, "started_ms", 0);
	sched__direct_endpoint(s, in, m);
	if (restarts > in->worker_restarts)
		in->restarts_total += restarts - in->worker_restarts;
	in->worker_restarts = restarts;
	snprintf(in->reason, sizeof(in->reason), "%s", reason ? reason : "");
	json_array_foreach (exits, i, e) {
		rt_buf_printf(
			&lines, "exit_%zu %lld %s\n", i + 1,
			(long long)json_integer_value(json_object_get(e, "ms")),
			json_string_value(json_object_get(e, "exit")));
	}
	free(in->exits);
	in->exits = lines.data;
	if (old != st || oldpid != in->pid || oldrev != in->revision ||
	    oldrestarts != in->restarts_total)
		sched__publish(s, in);
	if (st == SCHED_STOPPED)
		in->sent_stop = 0;
	if (st == SCHED_STOPPED && !in->desired_run) {
		/* Stopped for good: its memory goes back to the pool. */
		sched__inst_event(s, in, "instance.stopped", "worker",
				  w->obj.name, NULL, NULL);
		sched__derived_end(s, 0, sched__unassign(s, in, 1, NULL),
				   w->obj.name);
		return;
	}
	snprintf(pid, sizeof(pid), "%d", in->pid);
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)in->revision);
	if (st == SCHED_RUNNING &&
	    (old != SCHED_RUNNING || oldpid != in->pid)) {
		struct rt_buf kvs = { 0 };

		rt_buf_kv(&kvs, "worker", w->obj.name);
		rt_buf_kv(&kvs, "pid", pid);
		rt_buf_kv(&kvs, "revision", rev);
		sched__event(s, &in->obj, "instance.started", kvs.data);
		rt_buf_free(&kvs);
	} else if (st == SCHED_BACKOFF && old != SCHED_BACKOFF) {
		sched__inst_event(s, in, "instance.backoff", "reason",
				  in->reason, NULL, NULL);
	} else if (st == SCHED_FAILED && old != SCHED_FAILED) {
		struct rt_buf line = { 0 };
		char when[32];

		sched__inst_event(s, in, "instance.failed", "reason",
				  in->reason, NULL, NULL);
		/* The function's error file says why, as for a pending one. */
		rt_format_time(rt_now_ms(), when);
		if (rt_buf_printf(&line, "%s instance %d failed: %s\n", when,
				  in->n,
				  in->reason[0] ? in->reason : "?") == 0) {
			free(sched__fn_of(in)->error);
			sched__fn_of(in)->error = line.data;
		} else {
			rt_buf_free(&line);
		}
	} else if (st == SCHED_STOPPED && old != SCHED_STOPPED) {
		sched__inst_event(s, in, "instance.stopped", "worker",
				  w->obj.name, NULL, NULL);
	}
	if (st == SCHED_STOPPED && in->desired_run && !s->shutting_down &&
	    !w->leaving)
		/* Stopped, yet wanted (a stop overtaken by a start, a worker
		 * that stopped it by itself): the decision says what now. */
		sched__derived_end(
			s, 0, sched__act(s, in, DECIDE_CONVERGE, NULL, NULL),
			w->obj.name);
	if ((st != old || in->revision != oldrev) && !s->shutting_down)
		/* A rolling deploy goes on once this one runs the new
		 * revision (or failed). */
		sched__roll_next(s, sched__fn_of(in));
	if (st == SCHED_FAILED && old != SCHED_FAILED &&
	    sched__fn_of(in)->spec.mode != SCHED_MODE_DAEMON)
		/* Calls waiting for it may have nothing left to wait for. */
		sched__dispatch(s, sched__fn_of(in));
	if (st == SCHED_RUNNING &&
	    sched__fn_of(in)->spec.mode != SCHED_MODE_DAEMON) {
		/* Ready for calls: the queue may move. */
		if (old != SCHED_RUNNING)
			in->idle_mono = rt_mono_ms();
		sched__dispatch(s, sched__fn_of(in));
	}
}

void sched__on_exited(struct sched *s, struct sched_worker *w,
		      const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "instance");
	struct sched_instance *in = id ? sched__instance_by_id(s, id) : NULL;
	const char *what = rt_msg_str(m, "exit");
	long long code = rt_msg_int(m, "code", 0),
		  sig = rt_msg_int(m, "signal", 0);
	int oom = json_is_true(json_object_get(m->header, "oom"));
	char v[32];

	if (!current(s, w, in, id, sched__msg_epoch(m), "exited"))
		return;
	if (oom)
		snprintf(in->last_exit, sizeof(in->last_exit), "oom");
	else if (sig)
		snprintf(in->last_exit, sizeof(in->last_exit), "signal:%lld",
			 sig);
	else
		snprintf(in->last_exit, sizeof(in->last_exit), "status:%lld",
			 code);
	snprintf(v, sizeof(v), "%d", in->pid);
	sched__inst_event(s, in, "instance.exited", "exit", what ? what : "?",
			  "pid", v);
	sched__publish(s, in); /* its last exit, for the others */
}

static int sample_cb(json_t *o, struct sched *s, struct sched_worker *w)
{
	const char *id = json_string_value(json_object_get(o, "instance"));
	struct sched_instance *in = id ? sched__instance_by_id(s, id) : NULL;
	json_int_t epoch = json_integer_value(json_object_get(o, "epoch"));

	/* A copy that moved away is sampled until it has stopped: quietly
	 * ignored, as its own reports say the rest. */
	if (in == NULL || in->worker != w ||
	    !current(s, w, in, id, epoch > 0 ? (uint64_t)epoch : 0, "sample"))
		return 0;
	in->cpu_seconds = (double)json_integer_value(
				  json_object_get(o, "cpu_ms")) /
			  1000;
	in->rss_bytes = json_integer_value(json_object_get(o, "rss"));
	return 0;
}

void sched__on_heartbeat(struct sched *s, struct sched_worker *w,
			 const struct rt_msg *m)
{
	json_t *samples = json_object_get(m->header, "samples"), *o;
	size_t i;

	json_array_foreach (samples, i, o) {
		sample_cb(o, s, w);
	}
}

/* Whether `in`, assigned nowhere, may be taken back by `w`, which runs
 * it (its own copy is not new work: a healing worker takes it). */
static int free_to_take(struct sched *s, struct sched_instance *in,
			struct sched_worker *w)
{
	return in->worker == NULL && in->desired_run &&
	       sched__may_run_on(s, in, w);
}

void sched__adopt(struct sched *s, struct sched_worker *w, json_t *running)
{
	json_t *r;
	size_t i;
	int began = store_begin(s->store) == 0, rc = 0;

	json_array_foreach (running, i, r) {
		const char *id = json_string_value(
			json_object_get(r, "instance"));
		const char *st = json_string_value(json_object_get(r, "state"));
		struct sched_instance *in = id ? sched__instance_by_id(s, id)
					       : NULL;
		long long rev = json_integer_value(
			json_object_get(r, "revision"));
		long long restarts = json_integer_value(
			json_object_get(r, "restarts"));
		json_int_t e = json_integer_value(json_object_get(r, "epoch"));
		uint64_t epoch = e > 0 ? (uint64_t)e : 0;
		int here, adopt;

		if (id == NULL)
			continue;
		here = in != NULL && in->worker == w && in->desired_run;
		adopt = in != NULL &&
			sched_fence_adopt(here, free_to_take(s, in, w),
					  in->epoch, epoch);
		if (adopt && !here) {
			/* Not placed anywhere since: take it back as it runs
			 * (Flink's consolidation) rather than restart it. */
			int got = sched__assign_same(s, in, w);

			rc = rc < 0 ? rc : got;
		}
		if (!adopt || in->worker != w) {
			/* It runs elsewhere now, or not at all, or this copy
			 * is of an older assignment: it stops before the
			 * worker takes new work. */
			if (in != NULL && in->worker == w) {
				int got;

				sched__call_lost(s, in, "a stale copy");
				got = sched__unassign(s, in, 1, NULL);
				rc = rc < 0 ? rc : got;
				sched__instance_set_state(
					in,
					in->desired_run ? SCHED_LOST
							: SCHED_STOPPED,
					"a stale copy");
				snprintf(in->reason, sizeof(in->reason),
					 "a stale copy on worker %s stops",
					 w->obj.name);
			}
			sched__fence_stop(s, w, id, epoch);
			continue;
		}
		/* Taken over as it is: same process, same state, no restart.
		 * A stale revision is restarted by reconciliation; a failed
		 * one stays failed. */
		in->pid = (int)json_integer_value(json_object_get(r, "pid"));
		sched__instance_reported(in, st != NULL ? st : "running");
		in->revision = (uint64_t)rev;
		in->sent_revision = (uint64_t)rev;
		in->restarts_total = restarts;
		in->worker_restarts = restarts;
		in->reason[0] = '\0';
		sched__publish(s, in);
	}
	sched__derived_end(s, began, rc, w->obj.name);
}

void sched__worker_lost(struct sched *s, struct sched_worker *w, int quiet)
{
	size_t i, n;
	struct sched_instance **v = (struct sched_instance **)rt_map_values(
		&w->assignments, &n);
	int began = store_begin(s->store) == 0, rc = 0;

	for (i = 0; v != NULL && i < n; i++) {
		struct sched_instance *in = v[i];
		int r;

		if (!quiet)
			sched__inst_event(s, in, "instance.lost", "worker",
					  w->obj.name, NULL, NULL);
		sched__call_lost(s, in, "its worker went away");
		r = sched__unassign(s, in, 1, NULL);
		rc = rc < 0 ? rc : r;
		sched__instance_set_state(
			in, in->desired_run ? SCHED_LOST : SCHED_STOPPED,
			"its worker went away");
		snprintf(in->reason, sizeof(in->reason), "worker %s went away",
			 w->obj.name);
	}
	free(v);
	sched__derived_end(s, began, rc, w->obj.name);
}

/*
 * assign.c - assignments of instances to workers: what each worker holds
 * (its free memory never negative), placement's view of the workers, and
 * placing one instance with the rules of place.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "../common.h"
#include "../model/instance_state.h"

/* Changes what worker `w` holds by `mb` and `count` instances, in the
 * model and in `v` (may be NULL) if it was built. */
void sched__hold(struct sched_worker *w, struct sched_view *v, int mb,
		 int count)
{
	assert(count >= -1 && count <= 1);
	w->used_mb += mb;
	assert(w->used_mb >= 0);
	if (v != NULL && v->built && w->place_index >= 0 &&
	    (size_t)w->place_index < v->n && v->ws[w->place_index] == w) {
		v->w[w->place_index].used_mb += mb;
		v->w[w->place_index].instances += count;
		assert(v->w[w->place_index].used_mb >= 0);
	}
}

/* Assigns `in` to `w` under `epoch`. */
static int assign_at(struct sched *s, struct sched_instance *in,
		     struct sched_worker *w, struct sched_view *v,
		     uint64_t epoch)
{
	struct rt_buf name = { 0 };
	int rc;

	/* One worker at a time: it is unassigned first (no second copy),
	 * and an epoch never goes back (the fence relies on it). */
	assert(in->worker == NULL && in->reserved_mb == 0);
	assert(epoch >= in->epoch && w->obj.type == SCHED_WORKER);
	rc = sched_assignment_name(in, &name);
	if (rc == 0)
		rc = rt_map_put(&w->assignments, name.data, in);
	rt_buf_free(&name);
	if (rc < 0)
		return rc;
	in->worker = w;
	in->epoch = epoch;
	in->reserved_mb = sched__fn_of(in)->spec.memory;
	sched__hold(w, v, in->reserved_mb, 1);
	in->sent_revision = 0;
	in->sent_stop = 0;
	sched__instance_set_state(
		in, in->desired_run ? SCHED_STARTING : SCHED_STOPPED,
		"assigned");
	in->reason[0] = '\0';
	sched__inst_event(s, in, "instance.assigned", "worker", w->obj.name,
			  NULL, NULL);
	return sched__store_put(s, in);
}

int sched__assign(struct sched *s, struct sched_instance *in,
		  struct sched_worker *w, struct sched_view *v)
{
	/* A new epoch: whatever a worker says of an older one is fenced. */
	return assign_at(s, in, w, v, in->epoch + 1);
}

int sched__assign_same(struct sched *s, struct sched_instance *in,
		       struct sched_worker *w)
{
	return assign_at(s, in, w, NULL, in->epoch);
}

int sched__unassign(struct sched *s, struct sched_instance *in, int persist,
		    struct sched_view *v)
{
	struct rt_buf name = { 0 };
	void *held;

	if (in->worker == NULL)
		return 0;
	sched_assignment_name(in, &name);
	held = name.data != NULL
		       ? rt_map_del(&in->worker->assignments, name.data)
		       : NULL;
	/* Its worker's map held it (or the name could not be made). */
	assert(held == in || name.data == NULL);
	(void)held;
	/* What it reserved is what its function's spec asked at assignment,
	 * which its worker still counts. */
	assert(in->reserved_mb >= 0 && in->worker->used_mb >= in->reserved_mb);
	sched__hold(in->worker, v, -in->reserved_mb, -1);
	in->reserved_mb = 0;
	/* Its log stays there: `log` still reads it (face/files.c). */
	free(in->log_worker);
	in->log_worker = strdup(in->worker->obj.name);
	in->worker = NULL;
	s->act.capacity_changed = 1;
	in->pid = 0;
	in->sent_revision = 0;
	in->sent_stop = 0;
	rt_buf_free(&name);
	return persist ? sched__store_put(s, in) : 0;
}

void sched__unassign_model(struct sched *s, struct sched_instance *in)
{
	int rc = sched__unassign(s, in, 0, NULL);

	assert(rc == 0); /* nothing is stored: nothing can fail */
	(void)rc;
}

/* Whether worker `w` takes new instances now. */
int sched__usable(const struct sched_worker *w)
{
	return w->online && !w->leaving && !w->draining;
}

/* What placement sees of worker `w`. */
void sched__worker_view(struct sched_worker *w, struct place_worker *pw)
{
	memset(pw, 0, sizeof(*pw));
	pw->id = w->obj.name;
	pw->memory_mb = w->memory_mb;
	pw->used_mb = w->used_mb;
	pw->tags = w->tags ? w->tags : "";
	pw->namespaces = w->namespaces ? w->namespaces : "";
	pw->usable = sched__usable(w);
	pw->instances = (int)w->assignments.count;
}

void sched__view_free(struct sched_view *v)
{
	free(v->w);
	free(v->ws);
	memset(v, 0, sizeof(*v));
}

int sched__view_build(struct sched *s, struct sched_view *v,
		      struct sched_function *fn)
{
	size_t i, n, k;
	void **all = rt_map_values(&s->pool.children, &n);
	void **mine;

	v->built = 1;
	v->w = calloc(n + 1, sizeof(*v->w));
	v->ws = calloc(n + 1, sizeof(*v->ws));
	if (all == NULL || v->w == NULL || v->ws == NULL) {
		free(all);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct sched_worker *w = all[i];

		w->place_index = (int)i;
		v->ws[i] = w;
		sched__worker_view(w, &v->w[i]);
		/* A returning worker stopping stale copies takes no new
		 * instance until they are stopped (fence.c); what it holds
		 * stays. */
		if (w->fencing)
			v->w[i].usable = 0;
	}
	v->n = n;
	free(all);
	/* Anti-affinity: where this function already runs. */
	mine = rt_map_values(&fn->obj.children, &k);
	for (i = 0; mine != NULL && i < k; i++) {
		struct sched_instance *in = mine[i];

		if (in->worker != NULL && in->worker->place_index >= 0 &&
		    (size_t)in->worker->place_index < v->n &&
		    v->ws[in->worker->place_index] == in->worker)
			v->w[in->worker->place_index].same_function++;
	}
	free(mine);
	return 0;
}

/* What placement is asked for an instance of `fn`. */
void sched__request_of(struct sched *s, const struct sched_function *fn,
		       struct place_request *r)
{
	memset(r, 0, sizeof(*r));
	r->memory_mb = fn->spec.memory;
	r->tags = fn->spec.tags;
	r->ntags = fn->spec.ntags;
	r->loose = fn->spec.tags_policy == SCHED_TAGS_LOOSE;
	r->ns = fn->obj.parent->name;
	r->tenant = fn->obj.parent->parent->name;
	assert(s->strategy >= SCHED_SPREAD && s->strategy <= SCHED_RANDOM);
	r->strategy = (enum sched_strategy)s->strategy;
}

/* Whether the decision lets `in` run on `w` besides what is there. */
int sched__may_run_on(struct sched *s, struct sched_instance *in,
		      struct sched_worker *w)
{
	struct place_worker pw;
	struct place_request r;

	sched__worker_view(w, &pw);
	sched__request_of(s, sched__fn_of(in), &r);
	return sched_place_fits(&pw, &r, NULL);
}

/* Records why an instance waits, in its status, the function's error file
 * and the journal, once per reason. */
void sched__set_pending(struct sched *s, struct sched_instance *in,
			const char *reason)
{
	struct rt_buf line = { 0 };
	char when[32];

	if (in->state == SCHED_PENDING && strcmp(in->reason, reason) == 0)
		return;
	sched__instance_set_state(in, SCHED_PENDING, reason);
	snprintf(in->reason, sizeof(in->reason), "%s", reason);
	if (rt_mono_ms() < s->recovery_until)
		return;
	sched__inst_event(s, in, "instance.pending", "reason", reason, NULL,
			  NULL);
	rt_format_time(rt_now_ms(), when);
	rt_buf_printf(&line, "%s instance %d is pending: %s\n", when, in->n,
		      reason);
	if (line.data != NULL) {
		free(sched__fn_of(in)->error);
		sched__fn_of(in)->error = line.data;
	}
}

/* Finds a worker for `in` (placement rules in place.c) and assigns it
 * there, or says why there is none. `v` may be shared by several calls
 * for one function. Returns 0 (placed or pending) or -errno of the store. */
int sched__place_in(struct sched *s, struct sched_instance *in,
		    struct sched_view *v)
{
	struct sched_function *fn = sched__fn_of(in);
	struct place_request r;
	struct rt_buf why = { 0 };
	int k, rc = 0;

	assert(in->worker == NULL && in->desired_run); /* placed once */
	if (s->loop == NULL)
		return 0;
	if (rt_mono_ms() < s->recovery_until) {
		sched__set_pending(s, in,
				   "waiting for known workers to come back");
		return 0;
	}
	if (!v->built && (rc = sched__view_build(s, v, fn)) < 0)
		return rc;
	sched__request_of(s, fn, &r);
	r.random = sched__random(s);
	k = sched_place(v->w, v->n, &r, &why);
	if (k < 0) {
		sched__set_pending(s, in, why.data ? why.data : "no worker");
	} else {
		assert((size_t)k < v->n);
		rc = sched__assign(s, in, v->ws[k], v);
		v->w[k].same_function++;
	}
	rt_buf_free(&why);
	return rc;
}

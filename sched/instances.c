/*
 * instances.c - function instances: their desired state and assignment
 * (persisted), placement on workers, reconciliation of what is wanted with
 * what workers report, and the files that show and drive them.
 *
 * Placement here is simple: the worker with the most free memory that
 * fits (and that is not dedicated to other namespaces).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "internal.h"

static const char *const state_words[] = { "pending", "starting", "running",
					   "backoff", "stopping", "stopped",
					   "failed",  "lost" };

static struct sched_function *fn_of(const struct sched_instance *in)
{
	return (struct sched_function *)in->obj.parent;
}

/* The path parts of an instance. */
static void parts(const struct sched_instance *in, const char **t,
		  const char **ns, const char **fn)
{
	const struct sched_obj *f = in->obj.parent;

	*fn = f->name;
	*ns = f->parent->name;
	*t = f->parent->parent->name;
}

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

/* Stores instance `in` as it is, but wanting `run`. */
static int store_put_as(struct sched *s, const struct sched_instance *in,
			int run)
{
	struct store_instance r;

	parts(in, &r.tenant, &r.ns, &r.fn);
	r.n = in->n;
	r.desired_run = run;
	r.worker = in->worker ? in->worker->obj.name : NULL;
	return store_instance_put(s->store, &r);
}

static int store_put(struct sched *s, const struct sched_instance *in)
{
	return store_put_as(s, in, in->desired_run);
}

/* Ends a transaction of derived state (assignments, instances made from
 * a spec) begun if `began`, after work whose first store error is `rc`.
 * Such state is derived again from the specs and the workers' reports
 * after a restart, so a failure is logged, not returned to a writer.
 * Returns 0 or the -errno. */
static int derived_end(struct sched *s, int began, int rc, const char *what)
{
	if (began) {
		/* What was written stays: it is as true as the model. */
		int c = store_commit(s->store);

		rc = rc < 0 ? rc : c;
	}
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "%s: the store failed: %s", what,
		       strerror(-rc));
	return rc;
}

static void inst_event(struct sched *s, const struct sched_instance *in,
		       const char *kind, const char *k1, const char *v1,
		       const char *k2, const char *v2)
{
	struct rt_buf kvs = { 0 };

	if (k1 != NULL)
		rt_buf_kv(&kvs, k1, v1);
	if (k2 != NULL)
		rt_buf_kv(&kvs, k2, v2);
	sched__event(s, &in->obj, kind, kvs.data);
	rt_buf_free(&kvs);
}

int sched_assignment_name(const struct sched_instance *in, struct rt_buf *out)
{
	const char *t, *ns, *fn;

	parts(in, &t, &ns, &fn);
	return rt_buf_printf(out, "%s:%s:%s:%d", t, ns, fn, in->n);
}

int sched_link_target(const struct sched_instance *in, int from_instance,
		      struct rt_buf *out)
{
	const char *t, *ns, *fn;

	if (in->worker == NULL)
		return -ENOENT;
	parts(in, &t, &ns, &fn);
	if (from_instance)
		return rt_buf_printf(out, "../../../../../../workers/%s",
				     in->worker->obj.name);
	return rt_buf_printf(out, "../../../tenants/%s/%s/%s/instances/%d", t,
			     ns, fn, in->n);
}

struct sched_instance *sched__instance_by_id(struct sched *s, const char *id)
{
	char copy[300], *p[4], *save = NULL;
	struct sched_obj *o = &s->root;
	int i;

	snprintf(copy, sizeof(copy), "%s", id);
	for (i = 0; i < 4; i++) {
		p[i] = strtok_r(i ? NULL : copy, "/", &save);
		if (p[i] == NULL)
			return NULL;
		o = sched_child(o, p[i]);
		if (o == NULL)
			return NULL;
	}
	return o->type == SCHED_INSTANCE ? (struct sched_instance *)o : NULL;
}

/* ============================================================ assignment */

static int check_free_cb(const char *key, void *value, void *arg)
{
	const struct sched_worker *w = value;

	(void)key;
	(void)arg;
	/* A worker's free memory is never negative, except while one that
	 * came back with less memory waits for this reconciliation. */
	assert(w->used_mb >= 0);
	assert(w->used_mb <= w->memory_mb || !w->online);
	return 0;
}

void sched__check_free(struct sched *s)
{
	rt_map_each(&s->pool.children, check_free_cb, NULL);
}

/* The workers as placement sees them, for the instances of one function:
 * built once per reconciliation and kept in step with every change of
 * what a worker holds, so that a batch takes memory as it goes. */
struct view {
	struct place_worker *w;
	struct sched_worker **ws;
	size_t n;
	int built;
};

/* Changes what worker `w` holds by `mb` and `count` instances, in the
 * model and in `v` (may be NULL) if it was built. */
static void hold(struct sched_worker *w, struct view *v, int mb, int count)
{
	w->used_mb += mb;
	assert(w->used_mb >= 0);
	if (v != NULL && v->built && w->place_index >= 0 &&
	    (size_t)w->place_index < v->n && v->ws[w->place_index] == w) {
		v->w[w->place_index].used_mb += mb;
		v->w[w->place_index].instances += count;
	}
}

static int assign(struct sched *s, struct sched_instance *in,
		  struct sched_worker *w, struct view *v)
{
	struct rt_buf name = { 0 };
	int rc;

	rc = sched_assignment_name(in, &name);
	if (rc == 0)
		rc = rt_map_put(&w->assignments, name.data, in);
	rt_buf_free(&name);
	if (rc < 0)
		return rc;
	in->worker = w;
	in->reserved_mb = fn_of(in)->spec.memory;
	hold(w, v, in->reserved_mb, 1);
	in->sent_revision = 0;
	in->sent_stop = 0;
	in->state = in->desired_run ? SCHED_STARTING : SCHED_STOPPED;
	in->reason[0] = '\0';
	inst_event(s, in, "instance.assigned", "worker", w->obj.name, NULL,
		   NULL);
	return store_put(s, in);
}

static int unassign(struct sched *s, struct sched_instance *in, int persist,
		    struct view *v)
{
	struct rt_buf name = { 0 };

	if (in->worker == NULL)
		return 0;
	sched_assignment_name(in, &name);
	rt_map_del(&in->worker->assignments, name.data);
	hold(in->worker, v, -in->reserved_mb, -1);
	in->reserved_mb = 0;
	in->worker = NULL;
	s->capacity_changed = 1;
	in->pid = 0;
	in->sent_revision = 0;
	in->sent_stop = 0;
	rt_buf_free(&name);
	return persist ? store_put(s, in) : 0;
}

/* Whether worker `w` takes new instances now. */
static int usable(const struct sched_worker *w)
{
	return w->online && !w->leaving && !w->draining;
}

/* What placement sees of worker `w`. */
static void worker_view(struct sched_worker *w, struct place_worker *pw)
{
	memset(pw, 0, sizeof(*pw));
	pw->id = w->obj.name;
	pw->memory_mb = w->memory_mb;
	pw->used_mb = w->used_mb;
	pw->tags = w->tags ? w->tags : "";
	pw->namespaces = w->namespaces ? w->namespaces : "";
	pw->usable = usable(w);
	pw->instances = (int)w->assignments.count;
}

static void view_free(struct view *v)
{
	free(v->w);
	free(v->ws);
	memset(v, 0, sizeof(*v));
}

static int view_build(struct sched *s, struct view *v,
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
		worker_view(w, &v->w[i]);
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
static void request_of(struct sched *s, const struct sched_function *fn,
		       struct place_request *r)
{
	memset(r, 0, sizeof(*r));
	r->memory_mb = fn->spec.memory;
	r->tags = fn->spec.tags;
	r->ntags = fn->spec.ntags;
	r->loose = fn->spec.tags_policy == SCHED_TAGS_LOOSE;
	r->ns = fn->obj.parent->name;
	r->tenant = fn->obj.parent->parent->name;
	r->strategy = (enum sched_strategy)s->strategy;
}

/* Whether the decision lets `in` run on `w` besides what is there. */
static int may_run_on(struct sched *s, struct sched_instance *in,
		      struct sched_worker *w)
{
	struct place_worker pw;
	struct place_request r;

	worker_view(w, &pw);
	request_of(s, fn_of(in), &r);
	return sched_place_fits(&pw, &r, NULL);
}

/* Records why an instance waits, in its status, the function's error file
 * and the journal, once per reason. */
static void set_pending(struct sched *s, struct sched_instance *in,
			const char *reason)
{
	struct rt_buf line = { 0 };
	char when[32];

	if (in->state == SCHED_PENDING && strcmp(in->reason, reason) == 0)
		return;
	in->state = SCHED_PENDING;
	snprintf(in->reason, sizeof(in->reason), "%s", reason);
	if (rt_mono_ms() < s->recovery_until)
		return;
	inst_event(s, in, "instance.pending", "reason", reason, NULL, NULL);
	rt_format_time(rt_now_ms(), when);
	rt_buf_printf(&line, "%s instance %d is pending: %s\n", when, in->n,
		      reason);
	if (line.data != NULL) {
		free(fn_of(in)->error);
		fn_of(in)->error = line.data;
	}
}

/* Finds a worker for `in` (placement rules in place.c) and assigns it
 * there, or says why there is none. `v` may be shared by several calls
 * for one function. Returns 0 (placed or pending) or -errno of the store. */
static int place_in(struct sched *s, struct sched_instance *in, struct view *v)
{
	struct sched_function *fn = fn_of(in);
	struct place_request r;
	struct rt_buf why = { 0 };
	int k, rc = 0;

	if (s->loop == NULL)
		return 0;
	if (rt_mono_ms() < s->recovery_until) {
		set_pending(s, in, "waiting for known workers to come back");
		return 0;
	}
	if (!v->built && (rc = view_build(s, v, fn)) < 0)
		return rc;
	request_of(s, fn, &r);
	r.random = sched__random(s);
	k = sched_place(v->w, v->n, &r, &why);
	if (k < 0) {
		set_pending(s, in, why.data ? why.data : "no worker");
	} else {
		rc = assign(s, in, v->ws[k], v);
		v->w[k].same_function++;
	}
	rt_buf_free(&why);
	return rc;
}

/* ============================================================ commands */

/* Builds the spec a worker runs an instance with. */
static json_t *run_spec(const struct sched_instance *in)
{
	const struct sched_function *fn = fn_of(in);
	const struct sched_spec *sp = &fn->spec;
	static const char *const modes[] = { "daemon", "hot", "cold" };
	static const char *const formats[] = { "line", "json" };
	static const char *const policies[] = { "always", "on-failure",
						"never" };
	json_t *env = json_array();
	const char *t, *ns, *f;
	char v[300];
	int i;

	parts(in, &t, &ns, &f);
	for (i = 0; i < sp->nenv; i++)
		json_array_append_new(env, json_string(sp->env[i]));
#define FN_ENV(fmt, ...)                                                       \
	do {                                                                   \
		snprintf(v, sizeof(v), fmt, __VA_ARGS__);                      \
		json_array_append_new(env, json_string(v));                    \
	} while (0)
	FN_ENV("FN_TENANT=%s", t);
	FN_ENV("FN_NAMESPACE=%s", ns);
	FN_ENV("FN_FUNCTION=%s", f);
	FN_ENV("FN_INSTANCE=%d", in->n);
	FN_ENV("FN_REVISION=%llu", (unsigned long long)fn->run_revision);
	FN_ENV("FN_MODE=%s", modes[sp->mode]);
	FN_ENV("FN_FORMAT=%s", formats[sp->format]);
	FN_ENV("FN_MEMORY_MB=%d", sp->memory);
	FN_ENV("FN_WORKER=%s", in->worker ? in->worker->obj.name : "");
#undef FN_ENV
	return json_pack("{s:s, s:o, s:s, s:i, s:s, s:s, s:s}", "command",
			 sp->command ? sp->command : "", "env", env, "cwd",
			 sp->cwd ? sp->cwd : "", "memory", sp->memory,
			 "restart_policy", policies[sp->restart_policy], "mode",
			 modes[sp->mode], "format", formats[sp->format]);
}

static char *instance_id(const struct sched_instance *in)
{
	struct rt_buf b = { 0 };

	sched_obj_path(&in->obj, &b);
	return b.data;
}

static int send_start(struct sched *s, struct sched_instance *in,
		      struct sched_wait *wait)
{
	char *id = instance_id(in);
	int rc;

	in->sent_revision = fn_of(in)->run_revision;
	in->sent_stop = 0;
	rc = sched__request(s, in->worker,
			    json_pack("{s:s, s:s, s:I, s:o}", "type", "start",
				      "instance", id, "revision",
				      (json_int_t)fn_of(in)->run_revision,
				      "spec", run_spec(in)),
			    wait, 0, in->obj.id);
	free(id);
	return rc;
}

static int send_simple(struct sched *s, struct sched_instance *in,
		       const char *type, int forget, struct sched_wait *wait)
{
	char *id = instance_id(in);
	json_t *h = json_pack("{s:s, s:s}", "type", type, "instance", id);
	int rc;

	if (forget)
		json_object_set_new(h, "forget", json_true());
	rc = sched__request(s, in->worker, h, wait, 0, in->obj.id);
	free(id);
	return rc;
}

/* Asks the decision (decide.c) what to do with `in`, filling its inputs
 * from the model. */
static enum decide_action decide(struct sched *s, struct sched_instance *in,
				 enum decide_cause cause,
				 struct decide_result *res)
{
	struct sched_function *fn = fn_of(in);
	struct decide_input d;
	struct place_worker pw;
	struct place_request r;

	memset(&d, 0, sizeof(d));
	d.cause = cause;
	d.in.desired_run = in->desired_run;
	d.in.state = in->state;
	d.in.sent_revision = in->sent_revision;
	d.in.sent_stop = in->sent_stop;
	d.in.busy = in->call != NULL;
	request_of(s, fn, &r);
	if (in->worker != NULL) {
		worker_view(in->worker, &pw);
		pw.used_mb -= in->reserved_mb; /* what it holds is its own */
		d.worker = &pw;
		d.worker_online = in->worker->online;
	}
	d.fn = &r;
	d.run_revision = fn->run_revision;
	d.recovering = rt_mono_ms() < s->recovery_until;
	return sched_decide(&d, res);
}

/* Moves `in` off its worker: the old copy is stopped and forgotten, the
 * instance goes to `to` (or wherever placement finds room, or pending)
 * and starts there. Returns 0 or -errno of the store. */
static int move(struct sched *s, struct sched_instance *in,
		struct sched_worker *to, const char *why,
		struct sched_wait *wait)
{
	struct sched_worker *from = in->worker;
	struct view v = { 0 };
	int rc = 0;

	sched__call_lost(s, in, "its instance moved to another worker");
	if (from != NULL) {
		if (from->online)
			send_simple(s, in, "stop", 1, NULL);
		if (why != NULL && why[0] != '\0')
			inst_event(s, in, "instance.moving", "from",
				   from->obj.name, "reason", why);
		rc = unassign(s, in, 1, NULL);
		if (from->draining && from->assignments.count == 0)
			sched__event(s, &from->obj, "worker.drained", NULL);
	}
	in->pid = 0;
	if (!in->desired_run) {
		/* A stopped one takes no room anywhere; a start places it. */
		in->state = SCHED_STOPPED;
		return rc;
	}
	in->state = SCHED_PENDING;
	if (rc == 0 && to != NULL)
		rc = assign(s, in, to, NULL);
	else if (rc == 0)
		rc = place_in(s, in, &v);
	view_free(&v);
	if (in->worker != NULL && in->worker->online)
		send_start(s, in, wait);
	return rc;
}

/* Carries out the decision for `in` (asked with `cause`): places, starts,
 * stops, restarts or moves it, adding what to wait for to `wait` (may be
 * NULL). `v` is the placement view of its function's batch, or NULL.
 * Returns 0 or -errno of the store. */
static int act(struct sched *s, struct sched_instance *in,
	       enum decide_cause cause, struct view *v, struct sched_wait *wait)
{
	struct sched_function *fn = fn_of(in);
	struct decide_result res;
	struct view own = { 0 };
	int rc = 0;

	decide(s, in, cause, &res);
	if (res.fits && in->desired_run && in->reserved_mb != fn->spec.memory) {
		/* It stays: what it holds follows the function's memory
		 * (the decision checked that it fits). */
		int delta = fn->spec.memory - in->reserved_mb;

		hold(in->worker, v, delta, 0);
		in->reserved_mb = fn->spec.memory;
		if (delta < 0)
			s->capacity_changed = 1;
	}
	switch (res.action) {
	case DECIDE_NONE:
		if (in->worker == NULL && !in->desired_run)
			in->state = SCHED_STOPPED;
		break;
	case DECIDE_PENDING: set_pending(s, in, res.reason); break;
	case DECIDE_START:
		if (in->worker == NULL)
			rc = place_in(s, in, v != NULL ? v : &own);
		if (in->worker != NULL && in->worker->online)
			send_start(s, in, wait);
		break;
	case DECIDE_STOP:
		in->sent_stop = 1;
		send_simple(s, in, "stop", 0, wait);
		break;
	case DECIDE_RESTART:
		inst_event(s, in, "instance.restarting", "worker",
			   in->worker->obj.name, "reason", res.reason);
		if (in->sent_revision != fn->run_revision ||
		    in->state == SCHED_STOPPED)
			send_start(s, in, wait);
		else
			send_simple(s, in, "restart", 0, wait);
		break;
	case DECIDE_MOVE: rc = move(s, in, NULL, res.reason, wait); break;
	}
	view_free(&own);
	return rc;
}

static struct sched_instance *
instance_new(struct sched *s, struct sched_function *fn, int n, int desired_run)
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
	in->state = desired_run ? SCHED_PENDING : SCHED_STOPPED;
	return in;
}

void sched__instance_free(struct sched_instance *in)
{
	free(in->exits);
	free(in->stats);
}

/* Stops and forgets an instance that is no longer wanted. */
static void retire(struct sched *s, struct sched_instance *in, int persist)
{
	const char *t, *ns, *fn;

	sched__call_lost(s, in, "its instance was removed");
	fn_of(in)->restarts_gone += in->restarts_total;
	if (in->worker != NULL) {
		send_simple(s, in, "stop", 1, NULL);
		unassign(s, in, 0, NULL);
	}
	parts(in, &t, &ns, &fn);
	if (persist && store_instance_delete(s->store, t, ns, fn, in->n) < 0)
		rt_log(RT_LOG_ERROR, "instance %s/%s/%s/%d: the store failed",
		       t, ns, fn, in->n);
	inst_event(s, in, "instance.stopped", "reason", "removed", NULL, NULL);
	sched__obj_drop(s, &in->obj);
}

struct collect {
	struct sched_instance **v;
	int n;
};

static int by_n(const void *a, const void *b)
{
	const struct sched_instance *x = *(struct sched_instance *const *)a;
	const struct sched_instance *y = *(struct sched_instance *const *)b;

	return (x->n > y->n) - (x->n < y->n);
}

/* The function's instances in order of their number; free the array. */
static struct collect instances_of(struct sched_function *fn)
{
	struct collect c;
	size_t n;

	c.v = (struct sched_instance **)rt_map_values(&fn->obj.children, &n);
	c.n = (int)n;
	if (c.v != NULL)
		qsort(c.v, n, sizeof(c.v[0]), by_n);
	return c;
}

void sched__reconcile(struct sched *s, struct sched_function *fn)
{
	int want = wanted(fn), n, i, began, rc = 0;
	struct view v = { 0 };
	struct collect c;
	char name[16];

	/* One transaction: new instances, removals and assignments, all
	 * derived from the spec (which was stored durably). */
	began = store_begin_derived(s->store) == 0;
	for (n = 0; n < want; n++) {
		struct sched_instance *in;

		snprintf(name, sizeof(name), "%d", n);
		if (sched_child(&fn->obj, name) != NULL)
			continue;
		in = instance_new(s, fn, n, 1);
		if (in != NULL && rc == 0)
			rc = store_put(s, in);
	}
	c = instances_of(fn);
	for (i = 0; i < c.n; i++) {
		if (c.v[i]->n < want)
			continue;
		retire(s, c.v[i], 1);
		c.v[i] = NULL;
	}
	for (i = 0; i < c.n; i++) {
		int r = c.v[i] != NULL
				? act(s, c.v[i], DECIDE_CONVERGE, &v, NULL)
				: 0;

		rc = rc < 0 ? rc : r;
	}
	free(c.v);
	view_free(&v);
	derived_end(s, began, rc, fn->obj.name);
	if (!s->reconciling_all)
		sched__check_free(s);
}

struct each_fn {
	struct sched *s;
};

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

void sched__reconcile_all(struct sched *s)
{
	int began = store_begin_derived(s->store) == 0;

	s->reconciling_all++;
	rt_map_each(&s->root.children, reconcile_root, s);
	s->reconciling_all--;
	derived_end(s, began, 0, "reconciliation");
	if (!s->reconciling_all)
		sched__check_free(s);
}

int sched__instances_unstore(struct sched *s, struct sched_function *fn)
{
	struct collect c = instances_of(fn);
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
	struct collect c = instances_of(fn);
	int i;

	for (i = 0; i < c.n; i++)
		retire(s, c.v[i], 0);
	free(c.v);
}

/* ================================================================ load */

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
	in = instance_new(s, (struct sched_function *)f, r->n, r->desired_run);
	if (in == NULL)
		return -ENOMEM;
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
			in->state = SCHED_LOST;
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

/* ====================================================== worker reports */

static enum sched_instance_state parse_state(const char *w)
{
	int i;

	for (i = 0; w != NULL && i <= SCHED_LOST; i++)
		if (strcmp(state_words[i], w) == 0)
			return (enum sched_instance_state)i;
	return SCHED_LOST;
}

/* The instance of report `m` if it belongs on worker `w`; otherwise the
 * worker is told to stop and forget it (it runs nowhere twice). */
static struct sched_instance *owned(struct sched *s, struct sched_worker *w,
				    const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "instance");
	struct sched_instance *in = id ? sched__instance_by_id(s, id) : NULL;

	if (id == NULL)
		return NULL;
	if (in == NULL || in->worker != w) {
		sched__send(s, w,
			    json_pack("{s:s, s:s, s:b}", "type", "stop",
				      "instance", id, "forget", 1));
		return NULL;
	}
	return in;
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

	if (in == NULL)
		return;
	old = in->state;
	oldpid = in->pid;
	st = parse_state(rt_msg_str(m, "state"));
	in->state = st;
	in->pid = (int)rt_msg_int(m, "pid", 0);
	in->revision = (uint64_t)rt_msg_int(m, "revision", 0);
	in->started_ms = rt_msg_int(m, "started_ms", 0);
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
	if (st == SCHED_STOPPED)
		in->sent_stop = 0;
	if (st == SCHED_STOPPED && !in->desired_run) {
		/* Stopped for good: its memory goes back to the pool. */
		inst_event(s, in, "instance.stopped", "worker", w->obj.name,
			   NULL, NULL);
		unassign(s, in, 1, NULL);
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
		inst_event(s, in, "instance.backoff", "reason", in->reason,
			   NULL, NULL);
	} else if (st == SCHED_FAILED && old != SCHED_FAILED) {
		struct rt_buf line = { 0 };
		char when[32];

		inst_event(s, in, "instance.failed", "reason", in->reason, NULL,
			   NULL);
		/* The function's error file says why, as for a pending one. */
		rt_format_time(rt_now_ms(), when);
		if (rt_buf_printf(&line, "%s instance %d failed: %s\n", when,
				  in->n,
				  in->reason[0] ? in->reason : "?") == 0) {
			free(fn_of(in)->error);
			fn_of(in)->error = line.data;
		} else {
			rt_buf_free(&line);
		}
	} else if (st == SCHED_STOPPED && old != SCHED_STOPPED) {
		inst_event(s, in, "instance.stopped", "worker", w->obj.name,
			   NULL, NULL);
	}
	if (st == SCHED_RUNNING && fn_of(in)->spec.mode != SCHED_MODE_DAEMON) {
		/* Ready for calls: the queue may move. */
		if (old != SCHED_RUNNING)
			in->idle_mono = rt_mono_ms();
		sched__dispatch(s, fn_of(in));
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

	if (in == NULL || in->worker != w)
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
	inst_event(s, in, "instance.exited", "exit", what ? what : "?", "pid",
		   v);
}

static int sample_cb(json_t *o, struct sched *s, struct sched_worker *w)
{
	const char *id = json_string_value(json_object_get(o, "instance"));
	struct sched_instance *in = id ? sched__instance_by_id(s, id) : NULL;

	if (in == NULL || in->worker != w)
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

void sched__adopt(struct sched *s, struct sched_worker *w, json_t *running)
{
	json_t *r;
	size_t i;
	int began = store_begin(s->store) == 0;

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

		if (id == NULL)
			continue;
		if (in != NULL && in->worker == NULL && in->desired_run &&
		    may_run_on(s, in, w)) {
			/* Not placed anywhere since: take it back as it runs
			 * (Flink's consolidation) rather than restart it. */
			assign(s, in, w, NULL);
		}
		if (in == NULL || in->worker != w || !in->desired_run) {
			/* It runs elsewhere now, or not at all. */
			sched__send(s, w,
				    json_pack("{s:s, s:s, s:b}", "type", "stop",
					      "instance", id, "forget", 1));
			continue;
		}
		/* Taken over as it is: same process, same state, no restart.
		 * A stale revision is restarted by reconciliation; a failed
		 * one stays failed. */
		in->pid = (int)json_integer_value(json_object_get(r, "pid"));
		in->state = st != NULL ? parse_state(st) : SCHED_RUNNING;
		in->revision = (uint64_t)rev;
		in->sent_revision = (uint64_t)rev;
		in->restarts_total = restarts;
		in->worker_restarts = restarts;
		in->reason[0] = '\0';
	}
	derived_end(s, began, 0, w->obj.name);
}

void sched__worker_lost(struct sched *s, struct sched_worker *w, int quiet)
{
	size_t i, n;
	struct sched_instance **v = (struct sched_instance **)rt_map_values(
		&w->assignments, &n);
	int began = store_begin(s->store) == 0;

	for (i = 0; v != NULL && i < n; i++) {
		struct sched_instance *in = v[i];

		if (!quiet)
			inst_event(s, in, "instance.lost", "worker",
				   w->obj.name, NULL, NULL);
		sched__call_lost(s, in, "its worker went away");
		unassign(s, in, 1, NULL);
		in->state = in->desired_run ? SCHED_LOST : SCHED_STOPPED;
		snprintf(in->reason, sizeof(in->reason), "worker %s went away",
			 w->obj.name);
	}
	free(v);
	derived_end(s, began, 0, w->obj.name);
}

/* =============================================================== files */

static const char *desired_word(const struct sched_instance *in)
{
	return in->desired_run ? "start" : "stop";
}

static int render_instance(struct sched_instance *in, enum sched_file f,
			   struct rt_buf *out)
{
	int64_t now = rt_now_ms();

	switch (f) {
	case SCHED_INST_STATE:
		return rt_buf_printf(out, "%s\n", state_words[in->state]);
	case SCHED_INST_PID:
		return in->pid > 0 ? rt_buf_printf(out, "%d\n", in->pid) : 0;
	case SCHED_INST_STATUS:
		rt_buf_printf(out,
			      "state %s\ndesired %s\nworker %s\npid %d\n"
			      "revision %llu\nstarted_ms %lld\nrestarts %lld\n"
			      "last_exit %s\n",
			      state_words[in->state], desired_word(in),
			      in->worker ? in->worker->obj.name : "-", in->pid,
			      (unsigned long long)in->revision,
			      (long long)in->started_ms, in->restarts_total,
			      in->last_exit[0] ? in->last_exit : "-");
		if (in->exits)
			rt_buf_puts(out, in->exits);
		return rt_buf_printf(out, "reason %s\n",
				     in->reason[0] ? in->reason : "-");
	case SCHED_INST_STATS:
		sched__instance_call_stats(NULL, in, out);
		return rt_buf_printf(
			out,
			"pid %d\nuptime_ms %lld\ncpu_seconds %.3f\n"
			"rss_bytes %lld\nrestarts_total %lld\n",
			in->pid,
			in->pid > 0 && in->started_ms > 0
				? (long long)(now - in->started_ms)
				: 0LL,
			in->pid > 0 ? in->cpu_seconds : 0.0,
			in->pid > 0 ? in->rss_bytes : 0LL, in->restarts_total);
	default: return -EINVAL;
	}
}

struct sched_instance **sched__instances_sorted(struct sched_function *fn,
						int *n)
{
	struct collect c = instances_of(fn);

	*n = c.v != NULL ? c.n : 0;
	return c.v;
}

/* The one-word state of a function (spec 4). */
static const char *function_state(struct sched_function *fn, int *nrun,
				  int *nwant, int *npend, int *nfail)
{
	struct collect c = instances_of(fn);
	int i;

	*nrun = *nwant = *npend = *nfail = 0;
	for (i = 0; i < c.n; i++) {
		struct sched_instance *in = c.v[i];

		if (!in->desired_run)
			continue;
		(*nwant)++;
		*nrun += in->state == SCHED_RUNNING;
		*npend += in->state == SCHED_PENDING;
		*nfail += in->state == SCHED_FAILED;
	}
	free(c.v);
	if (*nwant == 0)
		return "stopped";
	if (*nrun == *nwant)
		return "running";
	if (*nrun == 0 && *nfail > 0 && *npend == 0)
		return "failed";
	if (*nrun == 0 && *npend > 0)
		return "pending";
	return "degraded";
}

const char *sched__function_state(struct sched_function *fn, int *nrun,
				  int *nwant)
{
	int npend, nfail;

	return function_state(fn, nrun, nwant, &npend, &nfail);
}

static int render_function(struct sched_function *fn, enum sched_file f,
			   struct rt_buf *out)
{
	int nrun, nwant, npend, nfail, i;
	const char *st = function_state(fn, &nrun, &nwant, &npend, &nfail);
	struct collect c;

	if (f == SCHED_FN_STATE)
		return rt_buf_printf(out, "%s\n", st);
	c = instances_of(fn);
	rt_buf_printf(out,
		      "state %s\ninstances %d\nwanted %d\nrunning %d\n"
		      "pending %d\nfailed %d\nrevision %llu\n",
		      st, c.n, nwant, nrun, npend, nfail,
		      (unsigned long long)fn->revision);
	for (i = 0; i < c.n; i++) {
		struct sched_instance *in = c.v[i];

		rt_buf_printf(out, "instance_%d %s %s %d\n", in->n,
			      state_words[in->state],
			      in->worker ? in->worker->obj.name : "-", in->pid);
	}
	free(c.v);
	return 0;
}

/* ======================================================== write commands */

/* Parses "start" or "stop" (one trailing newline allowed). */
static int parse_state_word(const char *buf, size_t len, int *run)
{
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 5 && memcmp(buf, "start", 5) == 0)
		*run = 1;
	else if (len == 4 && memcmp(buf, "stop", 4) == 0)
		*run = 0;
	else
		return -EINVAL;
	return 0;
}

/* Stores that the instances `v` (`n` of them) want `run`, durably and
 * all or nothing, before anything changes in the model. Returns 0 or
 * -errno (EIO, ENOSPC). */
static int store_desired(struct sched *s, struct sched_instance **v, int n,
			 int run)
{
	int i, rc = store_begin(s->store);

	for (i = 0; rc == 0 && i < n; i++)
		if (v[i]->desired_run != run)
			rc = store_put_as(s, v[i], run);
	if (rc == 0)
		return store_commit(s->store);
	store_rollback(s->store);
	return rc;
}

/* Rejects a bad write to a non-attribute file of a function. */
static int refuse(struct sched *s, struct sched_function *fn, const char *file,
		  const char *reason)
{
	sched__reject(s, fn, file, EINVAL, reason);
	return -EINVAL;
}

static int write_instances(struct sched *s, struct sched_obj *o,
			   enum sched_file f, const char *buf, size_t len,
			   struct sched_wait *wait)
{
	struct sched_function *fn = o->type == SCHED_INSTANCE
					    ? fn_of((struct sched_instance *)o)
					    : (struct sched_function *)o;
	int restart = f == SCHED_FN_RESTART || f == SCHED_INST_RESTART, run = 1,
	    i, began, rc;
	const char *file = restart ? "restart" : "state";
	struct collect c;

	if (restart) {
		if (len > 0 && buf[len - 1] == '\n')
			len--;
		if (len != 1 || buf[0] != '1')
			return refuse(s, fn, file, "restart takes 1");
	} else if (parse_state_word(buf, len, &run) < 0) {
		return refuse(s, fn, file, "state takes start or stop");
	}
	if (o->type == SCHED_INSTANCE) {
		c.v = calloc(1, sizeof(*c.v));
		c.n = c.v != NULL;
		if (c.v == NULL)
			return -ENOMEM;
		c.v[0] = (struct sched_instance *)o;
	} else {
		c = instances_of(fn);
	}
	/* What is wanted is stored first: a failure changes nothing. */
	rc = store_desired(s, c.v, c.n, restart ? 1 : run);
	if (rc < 0) {
		sched__reject(s, fn, file, -rc,
			      "the store could not be written");
		goto out;
	}
	/* What follows from it (assignments) is derived. */
	began = store_begin_derived(s->store) == 0;
	for (i = 0; i < c.n; i++) {
		c.v[i]->desired_run = restart ? 1 : run;
		act(s, c.v[i],
		    restart ? DECIDE_CMD_RESTART
		    : run   ? DECIDE_CMD_START
			    : DECIDE_CMD_STOP,
		    NULL, wait);
	}
	derived_end(s, began, 0, fn->obj.name);
	sched__check_free(s);
out:
	free(c.v);
	return rc;
}

int sched_file_write(struct sched *s, struct sched_obj *o, enum sched_file f,
		     const char *buf, size_t len, sched_done_fn done, void *arg,
		     struct sched_wait **wait)
{
	struct sched_wait *w;
	int rc;

	*wait = NULL;
	if (f == SCHED_POOL_SIZE || f == SCHED_POOL_STRATEGY ||
	    f == SCHED_POOL_REBALANCE || f == SCHED_WORKER_STATE)
		return sched__cluster_write(s, o, f, buf, len);
	if (f != SCHED_FN_STATE && f != SCHED_FN_RESTART &&
	    f != SCHED_INST_STATE && f != SCHED_INST_RESTART)
		return -EACCES;
	w = sched__wait_new(s, done, arg, SCHED_WAIT_MS);
	if (w == NULL)
		return -ENOMEM;
	rc = write_instances(s, o, f, buf, len, w);
	if (rc < 0) {
		w->done = NULL;
		sched__wait_arm(s, w);
		return rc;
	}
	if (w->remaining == 0) {
		/* Nothing to wait for: done now. */
		w->done = NULL;
		sched__wait_arm(s, w);
		return 0;
	}
	*wait = w;
	return SCHED_LATER;
}

int sched_file_read(struct sched *s, struct sched_obj *o, enum sched_file f,
		    struct rt_buf *out, sched_done_fn done, void *arg,
		    struct sched_wait **wait)
{
	struct sched_wait *w;
	struct collect c;
	int i;

	*wait = NULL;
	switch (f) {
	case SCHED_FN_STATE:
	case SCHED_FN_STATUS:
		return render_function((struct sched_function *)o, f, out);
	case SCHED_INST_STATE:
	case SCHED_INST_STATUS:
	case SCHED_INST_STATS:
	case SCHED_INST_PID:
		return render_instance((struct sched_instance *)o, f, out);
	case SCHED_FN_LOG:
	case SCHED_INST_LOG: break;
	case SCHED_FN_STATS:
	case SCHED_ROOT_STATUS:
	case SCHED_ROOT_STATS:
	case SCHED_ROOT_METRICS: return sched__calls_render(s, o, f, out);
	default: return sched__worker_render(s, o, f, out);
	}
	/* Logs live with the workers: ask them. */
	if (o->type == SCHED_INSTANCE) {
		c.v = calloc(1, sizeof(void *));
		c.n = c.v ? 1 : 0;
		if (c.v)
			c.v[0] = (struct sched_instance *)o;
	} else {
		c = instances_of((struct sched_function *)o);
	}
	w = sched__wait_new(s, done, arg, SCHED_LOG_WAIT_MS);
	if (w == NULL) {
		free(c.v);
		return -ENOMEM;
	}
	w->out = out;
	w->nparts = c.n;
	w->parts = calloc((size_t)c.n + 1, sizeof(*w->parts));
	w->prefixes = calloc((size_t)c.n + 1, sizeof(char *));
	for (i = 0; i < c.n && w->parts && w->prefixes; i++) {
		struct sched_instance *in = c.v[i];
		char *id;
		char pfx[16];

		if (o->type == SCHED_FUNCTION) {
			snprintf(pfx, sizeof(pfx), "%d: ", in->n);
			w->prefixes[i] = strdup(pfx);
		}
		if (in->worker == NULL || !in->worker->online)
			continue;
		id = instance_id(in);
		sched__request(s, in->worker,
			       json_pack("{s:s, s:s, s:i}", "type", "log",
					 "instance", id, "max", SCHED_LOG_TAIL),
			       w, i, in->obj.id);
		free(id);
	}
	free(c.v);
	if (w->remaining == 0) {
		/* No worker to ask: what there is, now. */
		w->done = NULL;
		sched__wait_arm(s, w);
		return 0;
	}
	*wait = w;
	return SCHED_LATER;
}

/* ====================================================== drain, rebalance */

static int other_usable(struct sched *s, const struct sched_worker *w)
{
	size_t i, n;
	void **all = rt_map_values(&s->pool.children, &n);
	int found = 0;

	for (i = 0; all != NULL && i < n && !found; i++)
		found = all[i] != w && usable(all[i]);
	free(all);
	return found;
}

/* Stores a worker's drain by its id, so that it outlives the worker's row
 * (a pool worker's row goes at a clean unmount). */
static int store_drain(struct sched *s, const char *id, int drained)
{
	char key[96];

	snprintf(key, sizeof(key), "drained:%s", id);
	return drained ? store_setting_put(s->store, key, "1")
		       : store_setting_delete(s->store, key);
}

int sched__drained(struct sched *s, const char *id)
{
	char key[96], v[8];

	snprintf(key, sizeof(key), "drained:%s", id);
	return store_setting_get(s->store, key, v, sizeof(v)) == 0;
}

/* Brings every instance on worker `w` in line (after a drain, or a change
 * of what the worker offers). Returns 0 or -errno of the store. */
static int converge_worker(struct sched *s, struct sched_worker *w)
{
	struct sched_instance **v;
	size_t i, n;
	int rc = 0, began = store_begin_derived(s->store) == 0;

	v = (struct sched_instance **)rt_map_values(&w->assignments, &n);
	for (i = 0; v != NULL && i < n; i++) {
		int r = act(s, v[i], DECIDE_CONVERGE, NULL, NULL);

		rc = rc < 0 ? rc : r;
	}
	free(v);
	return derived_end(s, began, rc, w->obj.name);
}

/* Sets or clears a worker's drain: stored first, then in the model. */
static int set_drain(struct sched *s, struct sched_worker *w, int drained)
{
	int rc = store_begin(s->store);

	w->draining = drained;
	if (rc == 0)
		rc = store_drain(s, w->obj.name, drained);
	if (rc == 0)
		rc = sched__worker_persist(s, w);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0) {
		struct rt_buf kvs = { 0 };

		w->draining = !drained;
		rt_buf_kv(&kvs, "op", drained ? "drain" : "resume");
		rt_buf_kv(&kvs, "errno", rt_errno_name(-rc));
		rt_buf_kv(&kvs, "reason", "the store could not be written");
		sched__event(s, &w->obj, "worker.rejected", kvs.data);
		rt_buf_free(&kvs);
		return rc;
	}
	w->since_ms = rt_now_ms();
	return 0;
}

int sched__drain(struct sched *s, struct sched_worker *w)
{
	int rc;

	if (w->draining)
		return 0;
	if (!other_usable(s, w)) {
		struct rt_buf kvs = { 0 };

		rt_buf_kv(&kvs, "op", "drain");
		rt_buf_kv(&kvs, "errno", "EBUSY");
		rt_buf_kv(&kvs, "reason", "it is the last usable worker");
		sched__event(s, &w->obj, "worker.rejected", kvs.data);
		rt_buf_free(&kvs);
		return -EBUSY;
	}
	rc = set_drain(s, w, 1);
	if (rc < 0)
		return rc;
	sched__event(s, &w->obj, "worker.draining", NULL);
	/* The decision moves what is not busy; an instance busy with a call
	 * takes no other (its worker is draining) and moves once the call
	 * has ended (a drain fails no call). */
	if (w->assignments.count == 0)
		sched__event(s, &w->obj, "worker.drained", NULL);
	else if (converge_worker(s, w) < 0)
		rt_log(RT_LOG_ERROR, "drain of %s: store failed", w->obj.name);
	return 0;
}

int sched__resume(struct sched *s, struct sched_worker *w)
{
	int rc;

	if (!w->draining)
		return 0;
	rc = set_drain(s, w, 0);
	if (rc < 0)
		return rc;
	sched__event(s, &w->obj, "worker.resumed", NULL);
	sched__reconcile_all(s); /* pending instances may fit there now */
	return 0;
}

int sched__worker_changed(struct sched *s, struct sched_worker *w)
{
	return converge_worker(s, w);
}

/* Fills `set` with the ids of the functions that have an instance on
 * `w`: one pass over its assignments. */
static void functions_on(const struct sched_worker *w, struct rt_idmap *set)
{
	size_t i, n;
	void **v = rt_map_values(&w->assignments, &n);

	for (i = 0; v != NULL && i < n; i++) {
		struct sched_function *fn = fn_of(v[i]);

		if (rt_idmap_get(set, fn->obj.id) == NULL)
			rt_idmap_put(set, fn->obj.id, fn);
	}
	free(v);
}

/* Rebalance, first part: an instance of a loose function on a worker
 * without its tags moves to one that has them, if one has room (the
 * decision says when to look). Returns how many moved, or -errno. */
static int rebalance_tags(struct sched *s)
{
	size_t i, n, k, m;
	void **all = rt_map_values(&s->pool.children, &n);
	int moved = 0, rc = 0;

	for (i = 0; all != NULL && i < n && rc == 0; i++) {
		struct sched_worker *w = all[i];
		struct sched_instance **on;

		if (!usable(w))
			continue;
		on = (struct sched_instance **)rt_map_values(&w->assignments,
							     &m);
		for (k = 0; on != NULL && k < m && rc == 0; k++) {
			struct decide_result res;
			struct place_request r;
			struct view v = { 0 };
			int pick;

			if (decide(s, on[k], DECIDE_REBALANCE, &res) !=
			    DECIDE_MOVE)
				continue;
			rc = view_build(s, &v, fn_of(on[k]));
			request_of(s, fn_of(on[k]), &r);
			r.random = sched__random(s);
			if (rc == 0) {
				v.w[w->place_index].usable = 0;
				pick = sched_place(v.w, v.n, &r, NULL);
				if (pick >= 0 &&
				    sched_place_has_tags(&v.w[pick], &r)) {
					rc = move(s, on[k], v.ws[pick],
						  res.reason, NULL);
					moved++;
				}
			}
			view_free(&v);
		}
		free(on);
	}
	free(all);
	return rc < 0 ? rc : moved;
}

/* Whether moving `in` from `from` to `to` takes a loose function away
 * from the tags it asks for (the first part of rebalance brought it
 * there). */
static int loses_tags(struct sched *s, struct sched_instance *in,
		      struct sched_worker *from, struct sched_worker *to)
{
	struct place_worker a, b;
	struct place_request r;

	request_of(s, fn_of(in), &r);
	if (r.ntags == 0)
		return 0;
	worker_view(from, &a);
	worker_view(to, &b);
	return sched_place_has_tags(&a, &r) && !sched_place_has_tags(&b, &r);
}

/* Rebalance, second part: moves instances until the counts of usable
 * workers differ by at most one. Returns how many moved, or -errno. */
static int rebalance_counts(struct sched *s)
{
	int moved = 0, rc = 0;

	while (rc == 0) {
		size_t i, n, k, m;
		void **all = rt_map_values(&s->pool.children, &n);
		struct sched_worker *hi = NULL, *lo = NULL;
		struct sched_instance **on, *pick = NULL;
		struct rt_idmap there = { 0 };
		int best;

		for (i = 0; all != NULL && i < n; i++) {
			struct sched_worker *w = all[i];

			if (!usable(w))
				continue;
			if (hi == NULL ||
			    w->assignments.count > hi->assignments.count)
				hi = w;
			if (lo == NULL ||
			    w->assignments.count < lo->assignments.count)
				lo = w;
		}
		free(all);
		if (hi == NULL || hi == lo ||
		    hi->assignments.count <= lo->assignments.count + 1)
			break;
		/* Move only what must move: one instance from the fullest
		 * to the emptiest, one that may run there, preferring one
		 * that serves no call (a moved one's call fails), then a
		 * function not yet on it. */
		functions_on(lo, &there);
		on = (struct sched_instance **)rt_map_values(&hi->assignments,
							     &m);
		for (k = 0, best = -1; on != NULL && k < m && best < 3; k++) {
			int score;

			if (!on[k]->desired_run || !may_run_on(s, on[k], lo) ||
			    loses_tags(s, on[k], hi, lo))
				continue;
			score = (on[k]->call == NULL ? 2 : 0) +
				(rt_idmap_get(&there, fn_of(on[k])->obj.id) ==
				 NULL);
			if (score > best) {
				best = score;
				pick = on[k];
			}
		}
		free(on);
		rt_idmap_free(&there);
		if (pick == NULL)
			break; /* nothing there may move: as even as it gets */
		rc = move(s, pick, lo, "rebalance", NULL);
		moved++;
	}
	return rc < 0 ? rc : moved;
}

int sched__rebalance(struct sched *s)
{
	struct rt_buf kvs = { 0 };
	char v[32];
	int tags, counts, rc = store_begin(s->store);

	if (rc < 0)
		return rc;
	tags = rebalance_tags(s);
	counts = tags < 0 ? 0 : rebalance_counts(s);
	rc = tags < 0 ? tags : counts < 0 ? counts : 0;
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0) {
		/* The moves are under way; their assignments are derived
		 * again from the workers' reports after a restart. */
		rt_buf_kv(&kvs, "errno", rt_errno_name(-rc));
		rt_buf_kv(&kvs, "reason", "the store could not be written");
		sched_event(s, "rebalance.failed", "workers", kvs.data);
		rt_buf_free(&kvs);
		return rc;
	}
	snprintf(v, sizeof(v), "%d", tags + counts);
	rt_buf_kv(&kvs, "moved", v);
	sched_event(s, "rebalance.done", "workers", kvs.data);
	rt_buf_free(&kvs);
	return 0;
}

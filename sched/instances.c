/*
 * instances.c - function instances: their desired state and assignment
 * (persisted), placement on workers, reconciliation of what is wanted with
 * what workers report, and the files that show and drive them.
 *
 * Placement here is simple: the worker with the most free memory that
 * fits (and that is not dedicated to other namespaces).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int store_put(struct sched *s, const struct sched_instance *in)
{
	struct store_instance r;

	parts(in, &r.tenant, &r.ns, &r.fn);
	r.n = in->n;
	r.desired_run = in->desired_run;
	r.worker = in->worker ? in->worker->obj.name : NULL;
	return store_instance_put(s->store, &r);
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

static void assign(struct sched *s, struct sched_instance *in,
		   struct sched_worker *w)
{
	struct rt_buf name = { 0 };

	sched_assignment_name(in, &name);
	if (rt_map_put(&w->assignments, name.data, in) < 0) {
		rt_buf_free(&name);
		return;
	}
	in->worker = w;
	in->reserved_mb = fn_of(in)->spec.memory;
	w->used_mb += in->reserved_mb;
	in->sent_revision = 0;
	in->sent_stop = 0;
	in->state = in->desired_run ? SCHED_STARTING : SCHED_STOPPED;
	in->reason[0] = '\0';
	store_put(s, in);
	inst_event(s, in, "instance.assigned", "worker", w->obj.name, NULL,
		   NULL);
	rt_buf_free(&name);
}

static void unassign(struct sched *s, struct sched_instance *in, int persist)
{
	struct rt_buf name = { 0 };

	if (in->worker == NULL)
		return;
	sched_assignment_name(in, &name);
	rt_map_del(&in->worker->assignments, name.data);
	in->worker->used_mb -= in->reserved_mb;
	in->reserved_mb = 0;
	in->worker = NULL;
	s->capacity_changed = 1;
	in->pid = 0;
	in->sent_revision = 0;
	in->sent_stop = 0;
	if (persist)
		store_put(s, in);
	rt_buf_free(&name);
}

/* Whether worker `w` takes new instances now. */
static int usable(const struct sched_worker *w)
{
	return w->online && !w->leaving && !w->draining;
}

/* The workers as placement sees them, for the instances of one function:
 * built once per reconciliation and updated as instances are placed, so
 * that a batch takes memory as it goes. */
struct view {
	struct place_worker *w;
	struct sched_worker **ws;
	size_t n;
	int built;
};

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
		v->w[i].id = w->obj.name;
		v->w[i].memory_mb = w->memory_mb;
		v->w[i].used_mb = w->used_mb;
		v->w[i].tags = w->tags ? w->tags : "";
		v->w[i].namespaces = w->namespaces ? w->namespaces : "";
		v->w[i].usable = usable(w);
		v->w[i].instances = (int)w->assignments.count;
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
	r->random = sched__random(s);
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

/* Finds a worker for `in` (placement rules in place.c), or says why there
 * is none. `v` may be shared by several calls for one function. */
static void place_in(struct sched *s, struct sched_instance *in, struct view *v)
{
	struct sched_function *fn = fn_of(in);
	struct place_request r;
	struct rt_buf why = { 0 };
	int k;

	if (s->loop == NULL)
		return;
	if (rt_mono_ms() < s->recovery_until) {
		set_pending(s, in, "waiting for known workers to come back");
		return;
	}
	if (!v->built && view_build(s, v, fn) < 0)
		return;
	request_of(s, fn, &r);
	k = sched_place(v->w, v->n, &r, &why);
	if (k < 0) {
		set_pending(s, in, why.data ? why.data : "no worker");
	} else {
		assign(s, in, v->ws[k]);
		v->w[k].used_mb += r.memory_mb;
		v->w[k].same_function++;
		v->w[k].instances++;
	}
	rt_buf_free(&why);
}

/* Places one instance on its own. */
static void place(struct sched *s, struct sched_instance *in)
{
	struct view v = { 0 };

	place_in(s, in, &v);
	view_free(&v);
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

static void move_off(struct sched *s, struct sched_instance *in);

/* Brings one instance toward what is wanted. */
static void converge(struct sched *s, struct sched_instance *in, struct view *v)
{
	int mb = fn_of(in)->spec.memory;

	/* Still on a draining worker, and not serving a call: its call has
	 * ended since the drain (or fnfs restarted meanwhile). */
	if (in->worker != NULL && in->worker->draining && in->worker->online &&
	    in->call == NULL) {
		move_off(s, in);
		return;
	}

	if (in->worker != NULL && in->reserved_mb != mb) {
		/* The function's memory changed: so does what it holds. */
		in->worker->used_mb += mb - in->reserved_mb;
		if (mb < in->reserved_mb)
			s->capacity_changed = 1;
		in->reserved_mb = mb;
	}
	if (in->desired_run) {
		if (in->worker == NULL)
			place_in(s, in, v);
		/* A new revision waits for the call in flight on the
		 * instance, if any (bounded by the call's timeout): a deploy
		 * fails no call. The call's end converges it again. */
		if (in->worker != NULL && in->worker->online &&
		    (in->sent_revision != fn_of(in)->run_revision ||
		     (in->state == SCHED_STOPPED && !in->sent_stop)) &&
		    !(in->call != NULL && in->state == SCHED_RUNNING &&
		      in->sent_revision != fn_of(in)->run_revision))
			send_start(s, in, NULL);
	} else if (in->worker != NULL && in->worker->online && !in->sent_stop &&
		   in->state != SCHED_STOPPED) {
		in->sent_stop = 1;
		send_simple(s, in, "stop", 0, NULL);
	} else if (in->worker == NULL) {
		in->state = SCHED_STOPPED;
	}
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
		unassign(s, in, 0);
	}
	parts(in, &t, &ns, &fn);
	if (persist)
		store_instance_delete(s->store, t, ns, fn, in->n);
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
	int want = wanted(fn), n, i, began;
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
		if (in != NULL)
			store_put(s, in);
	}
	c = instances_of(fn);
	for (i = 0; i < c.n; i++) {
		if (c.v[i]->n < want)
			continue;
		retire(s, c.v[i], 1);
		c.v[i] = NULL;
	}
	for (i = 0; i < c.n; i++)
		if (c.v[i] != NULL)
			converge(s, c.v[i], &v);
	free(c.v);
	view_free(&v);
	if (began && store_commit(s->store) < 0)
		rt_log(RT_LOG_ERROR, "instances of %s: store failed",
		       fn->obj.name);
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

	rt_map_each(&s->root.children, reconcile_root, s);
	if (began)
		store_commit(s->store);
}

int sched__instances_drop(struct sched *s, struct sched_function *fn)
{
	struct collect c = instances_of(fn);
	const char *t = fn->obj.parent->parent->name,
		   *ns = fn->obj.parent->name;
	int i, began = store_begin(s->store) == 0;

	for (i = 0; i < c.n; i++) {
		store_instance_delete(s->store, t, ns, fn->obj.name, c.v[i]->n);
		retire(s, c.v[i], 0);
	}
	if (began)
		store_commit(s->store);
	free(c.v);
	return 0;
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
		unassign(s, in, 1);
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
		inst_event(s, in, "instance.failed", "reason", in->reason, NULL,
			   NULL);
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
		    usable(w) &&
		    w->memory_mb - w->used_mb >= fn_of(in)->spec.memory) {
			/* Not placed anywhere since: take it back as it runs
			 * (Flink's consolidation) rather than restart it. */
			assign(s, in, w);
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
	if (began)
		store_commit(s->store);
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
		unassign(s, in, 1);
		in->state = in->desired_run ? SCHED_LOST : SCHED_STOPPED;
		snprintf(in->reason, sizeof(in->reason), "worker %s went away",
			 w->obj.name);
	}
	free(v);
	if (began)
		store_commit(s->store);
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

/* Starts or stops one instance, adding what to wait for to `wait`. */
static void set_desired(struct sched *s, struct sched_instance *in, int run,
			struct sched_wait *wait)
{
	int changed = in->desired_run != run;

	in->desired_run = run;
	if (changed)
		store_put(s, in);
	if (run) {
		if (in->worker == NULL)
			place(s, in);
		if (in->worker == NULL || !in->worker->online)
			return;
		/* A start clears `failed`: send it even for the same
		 * revision. */
		if (changed || in->state == SCHED_FAILED ||
		    in->state == SCHED_STOPPED || in->state == SCHED_STOPPING ||
		    in->sent_revision != fn_of(in)->run_revision)
			send_start(s, in, wait);
	} else {
		if (in->worker == NULL) {
			in->state = SCHED_STOPPED;
			return;
		}
		if (!in->worker->online)
			return;
		in->sent_stop = 1;
		send_simple(s, in, "stop", 0, wait);
	}
}

static void restart_one(struct sched *s, struct sched_instance *in,
			struct sched_wait *wait)
{
	if (!in->desired_run) {
		in->desired_run = 1;
		store_put(s, in);
	}
	if (in->worker == NULL)
		place(s, in);
	if (in->worker == NULL || !in->worker->online)
		return;
	inst_event(s, in, "instance.restarting", "worker", in->worker->obj.name,
		   NULL, NULL);
	if (in->sent_revision != fn_of(in)->run_revision ||
	    in->state == SCHED_STOPPED)
		send_start(s, in, wait);
	else
		send_simple(s, in, "restart", 0, wait);
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
	    i, began;
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
		if (restart)
			restart_one(s, (struct sched_instance *)o, wait);
		else
			set_desired(s, (struct sched_instance *)o, run, wait);
		return 0;
	}
	c = instances_of(fn);
	began = store_begin(s->store) == 0; /* one commit for them all */
	for (i = 0; i < c.n; i++) {
		if (restart)
			restart_one(s, c.v[i], wait);
		else
			set_desired(s, c.v[i], run, wait);
	}
	if (began)
		store_commit(s->store);
	free(c.v);
	return 0;
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

/* Moves `in` off its worker: the old copy is stopped and forgotten, the
 * instance goes to `to` (or wherever placement finds room) and starts
 * there. */
static void move(struct sched *s, struct sched_instance *in,
		 struct sched_worker *to)
{
	struct sched_worker *from = in->worker;

	sched__call_lost(s, in, "its instance moved to another worker");
	if (from != NULL) {
		if (from->online)
			send_simple(s, in, "stop", 1, NULL);
		unassign(s, in, 1);
	}
	in->pid = 0;
	if (!in->desired_run) {
		/* A stopped one takes no room anywhere; a start places it. */
		in->state = SCHED_STOPPED;
		return;
	}
	in->state = SCHED_PENDING;
	if (to != NULL)
		assign(s, in, to);
	else
		place(s, in);
	if (in->worker != NULL && in->worker->online)
		send_start(s, in, NULL);
}

/* Moves `in` off its draining worker, in one transaction, and says when
 * that worker has nothing left. */
static void move_off(struct sched *s, struct sched_instance *in)
{
	struct sched_worker *w = in->worker;
	int began = store_begin(s->store) == 0;

	move(s, in, NULL);
	if (began)
		store_commit(s->store);
	if (w != NULL && w->draining && w->assignments.count == 0)
		sched__event(s, &w->obj, "worker.drained", NULL);
}

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

int sched__drain(struct sched *s, struct sched_worker *w)
{
	struct sched_instance **v;
	size_t i, n;
	int began;

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
	w->draining = 1;
	w->since_ms = rt_now_ms();
	sched__worker_persist(s, w);
	sched__event(s, &w->obj, "worker.draining", NULL);
	began = store_begin(s->store) == 0;
	v = (struct sched_instance **)rt_map_values(&w->assignments, &n);
	for (i = 0; v != NULL && i < n; i++) {
		/* A drain fails no call: an instance busy with one takes no
		 * other (its worker is draining), and converge moves it once
		 * the call has ended. */
		if (v[i]->call == NULL)
			move(s, v[i], NULL);
	}
	free(v);
	if (began)
		store_commit(s->store);
	if (w->assignments.count == 0)
		sched__event(s, &w->obj, "worker.drained", NULL);
	return 0;
}

int sched__resume(struct sched *s, struct sched_worker *w)
{
	if (!w->draining)
		return 0;
	w->draining = 0;
	w->since_ms = rt_now_ms();
	sched__worker_persist(s, w);
	sched__event(s, &w->obj, "worker.resumed", NULL);
	sched__reconcile_all(s); /* pending instances may fit there now */
	return 0;
}

/* Whether placement rules let `in` run on `w` (ignoring the others). */
static int may_run_on(struct sched *s, struct sched_instance *in,
		      struct sched_worker *w)
{
	struct sched_function *fn = fn_of(in);
	struct place_worker pw = { w->obj.name,
				   w->memory_mb,
				   w->used_mb,
				   w->tags ? w->tags : "",
				   w->namespaces ? w->namespaces : "",
				   usable(w),
				   0,
				   0 };
	struct place_request r;

	request_of(s, fn, &r);
	return sched_place(&pw, 1, &r, NULL) == 0;
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

int sched__rebalance(struct sched *s)
{
	struct rt_buf kvs = { 0 };
	char v[32];
	int moved = 0, began = store_begin(s->store) == 0;

	for (;;) {
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

			if (!on[k]->desired_run || !may_run_on(s, on[k], lo))
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
		move(s, pick, lo);
		moved++;
	}
	if (began)
		store_commit(s->store);
	snprintf(v, sizeof(v), "%d", moved);
	rt_buf_kv(&kvs, "moved", v);
	sched_event(s, "rebalance.done", "workers", kvs.data);
	rt_buf_free(&kvs);
	return 0;
}

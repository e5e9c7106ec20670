/*
 * common.c - small helpers shared by the modules of sched/ (see
 * common.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "model/owners.h"

const char *sched__state_word(enum sched_instance_state st)
{
	static const char *const words[] = { "pending", "starting", "running",
					     "backoff", "stopping", "stopped",
					     "failed",	"lost" };

	assert((unsigned)st < sizeof(words) / sizeof(words[0]));
	return words[st];
}

struct sched_function *sched__fn_of(const struct sched_instance *in)
{
	return (struct sched_function *)in->obj.parent;
}

/* The path parts of an instance. */
void sched__parts(const struct sched_instance *in, const char **t,
		  const char **ns, const char **fn)
{
	const struct sched_obj *f = in->obj.parent;

	*fn = f->name;
	*ns = f->parent->name;
	*t = f->parent->parent->name;
}

/* `r` := instance `in` as the store has it; with `told`, what the
 * leader tells the other controllers of it too (its state, pid,
 * revision, start, restarts and last exit). */
static void instance_row(const struct sched_instance *in, int told,
			 struct store_instance *r)
{
	memset(r, 0, sizeof(*r));
	sched__parts(in, &r->tenant, &r->ns, &r->fn);
	r->n = in->n;
	r->desired_run = in->desired_run;
	r->worker = in->worker ? in->worker->obj.name : NULL;
	r->epoch = in->epoch;
	if (!told)
		return;
	r->state = sched__state_word(in->state);
	r->pid = in->pid;
	r->revision = in->revision;
	r->started_ms = in->started_ms > 0 ? in->started_ms : 0;
	r->restarts = in->restarts_total > 0 ? in->restarts_total : 0;
	r->last_exit = in->last_exit;
}

/* Stores instance `in` as it is, but wanting `run`. */
int sched__store_put_as(struct sched *s, const struct sched_instance *in,
			int run)
{
	struct store_instance r;

	/* On a cluster the others show what the leader knows of it. */
	instance_row(in, sched_cluster_shared(s), &r);
	r.desired_run = run;
	return store_instance_put(s->store, &r);
}

void sched__publish(struct sched *s, const struct sched_instance *in)
{
	struct store_instance r;

	if (!sched_cluster_publishes(s))
		return;
	instance_row(in, 1, &r);
	/* What the others are told is not the model: a failure (out of
	 * memory) leaves them one change behind, until the next. */
	if (store_instance_publish(s->store, &r) < 0)
		rt_log(RT_LOG_ERROR, "instance %s/%d: cannot tell the others",
		       sched__fn_of(in)->obj.name, in->n);
}

int sched__store_put(struct sched *s, const struct sched_instance *in)
{
	return sched__store_put_as(s, in, in->desired_run);
}

/* Ends a transaction of derived state (assignments, instances made from
 * a spec) begun if `began`, after work whose first store error is `rc`.
 * Such state is derived again from the specs and the workers' reports
 * after a restart, so a failure is logged, not returned to a writer.
 * Returns 0 or the -errno. */
int sched__derived_end(struct sched *s, int began, int rc, const char *what)
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

void sched__inst_event(struct sched *s, const struct sched_instance *in,
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

	sched__parts(in, &t, &ns, &fn);
	return rt_buf_printf(out, "%s:%s:%s:%d", t, ns, fn, in->n);
}

int sched_link_target(const struct sched_instance *in, int from_instance,
		      struct rt_buf *out)
{
	const char *t, *ns, *fn;

	if (in->worker == NULL)
		return -ENOENT;
	sched__parts(in, &t, &ns, &fn);
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

static int by_n(const void *a, const void *b)
{
	const struct sched_instance *x = *(struct sched_instance *const *)a;
	const struct sched_instance *y = *(struct sched_instance *const *)b;

	return (x->n > y->n) - (x->n < y->n);
}

/* The function's instances in order of their number; free the array. */
struct sched_collect sched__instances_of(struct sched_function *fn)
{
	struct sched_collect c;
	size_t n;

	c.v = (struct sched_instance **)rt_map_values(&fn->obj.children, &n);
	c.n = (int)n;
	if (c.v != NULL)
		qsort(c.v, n, sizeof(c.v[0]), by_n);
	return c;
}

struct sched_instance **sched__instances_sorted(struct sched_function *fn,
						int *n)
{
	struct sched_collect c = sched__instances_of(fn);

	*n = c.v != NULL ? c.n : 0;
	return c.v;
}

const char *sched__worker_word(const struct sched *s,
			       const struct sched_worker *w)
{
	if (w->view[0] != '\0')
		return w->view;
	if (!w->online)
		return w->revoked ? "revoked" : "offline";
	if (w->leaving || w->draining)
		return w->assignments.count > 0 ? "draining" : "drained";
	if (rt_mono_ms() - w->heartbeat_mono > s->heartbeat_timeout / 2)
		return "unhealthy";
	return "healthy";
}

/* What a cluster's leader tells of `w` in its row `r`, and notes as told;
 * nothing elsewhere (r's state NULL). */
static void worker_told(const struct sched *s, struct sched_worker *w,
			struct store_worker *r)
{
	r->state = NULL;
	r->pid = 0;
	r->since_ms = 0;
	if (!sched_cluster_publishes(s))
		return;
	/* A leader shows its own view: it was told nothing. */
	assert(w->view[0] == '\0');
	r->state = sched__worker_word(s, w);
	r->pid = w->online && w->pid > 0 ? w->pid : 0;
	r->since_ms = w->since_ms > 0 ? w->since_ms : 0;
	snprintf(w->told, sizeof(w->told), "%s", r->state);
	w->told_pid = r->pid;
}

/* The row of `w`, into `r`, with tags `tj` and namespaces `nj`. */
static void worker_row(const struct sched *s, struct sched_worker *w,
		       const char *tj, const char *nj, struct store_worker *r)
{
	r->id = w->obj.name;
	r->memory_mb = w->memory_mb;
	r->tags = tj;
	r->namespaces = nj;
	r->local = w->local;
	r->drained = w->draining;
	worker_told(s, w, r);
}

/* A JSON array of the space separated words of `words` (NULL: none), as
 * compact text to free; NULL without memory. */
static char *json_of_words(const char *words)
{
	json_t *a = json_array();
	char *tok, *save = NULL, *copy = strdup(words ? words : ""), *text;

	for (tok = copy ? strtok_r(copy, " ", &save) : NULL; tok;
	     tok = strtok_r(NULL, " ", &save))
		json_array_append_new(a, json_string(tok));
	text = a != NULL && copy != NULL ? json_dumps(a, JSON_COMPACT) : NULL;
	free(copy);
	json_decref(a);
	return text;
}

/* Stores (`publish` 0) or tells (1) the row of `w`. */
static int worker_write(struct sched *s, struct sched_worker *w, int publish)
{
	char *tj = json_of_words(w->tags), *nj = json_of_words(w->namespaces);
	struct store_worker r;
	int rc = -ENOMEM;

	if (tj == NULL || nj == NULL)
		goto out;
	worker_row(s, w, tj, nj, &r);
	rc = publish ? store_worker_publish(s->store, &r)
		     : store_worker_put(s->store, &r);
out:
	free(tj);
	free(nj);
	return rc;
}

int sched__worker_persist(struct sched *s, struct sched_worker *w)
{
	return worker_write(s, w, 0);
}

static int publish_cb(const char *key, void *value, void *arg)
{
	struct sched *s = arg;
	struct sched_worker *w = value;
	int pid = w->online && w->pid > 0 ? w->pid : 0;

	(void)key;
	if (strcmp(w->told, sched__worker_word(s, w)) == 0 &&
	    w->told_pid == pid)
		return 0;
	/* What the others are told is not the model: a failure (out of
	 * memory) leaves them one change behind, until the next tick. */
	if (worker_write(s, w, 1) < 0) {
		w->told[0] = '\0';
		rt_log(RT_LOG_ERROR, "worker %s: cannot tell the others",
		       w->obj.name);
	}
	return 0;
}

void sched__workers_publish(struct sched *s)
{
	if (sched_cluster_publishes(s))
		rt_map_each(&s->pool.children, publish_cb, s);
}

char *sched__words_of_json(const json_t *a)
{
	struct rt_buf b = { 0 };
	size_t i, n = json_array_size(a);
	const char *v;

	if (rt_buf_puts(&b, "") < 0)
		return NULL;
	for (i = 0; i < n; i++) {
		v = json_string_value(json_array_get(a, i));
		if (v != NULL &&
		    rt_buf_printf(&b, "%s%s", b.len ? " " : "", v) < 0) {
			rt_buf_free(&b);
			return NULL;
		}
	}
	return b.data;
}

unsigned long sched__random(struct sched *s)
{
	uint64_t x = s->rng;

	if (x == 0)
		x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)rt_now_ms();
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	s->rng = x;
	return (unsigned long)x;
}

int sched__parse_int(const char *buf, size_t len, long lo, long hi, long *out)
{
	long long v;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (sched_parse_digits(buf, len, &v) < 0 || v < lo || v > hi)
		return -EINVAL;
	*out = (long)v;
	return 0;
}

void sched_owner_of(const struct sched_obj *o, struct sched_owner *out)
{
	const struct sched_tenant *t = sched__tenant_of(o);

	if (t != NULL) {
		*out = t->owner;
		return;
	}
	/* The root, tenants/, workers/: root's, readable by all. */
	out->uid = 0;
	out->gid = 0;
	out->mode = 0755;
}

char *sched__instance_id(const struct sched_instance *in)
{
	struct rt_buf b = { 0 };

	sched_obj_path(&in->obj, &b);
	return b.data;
}

/*
 * sched.c - the controller's model of tenants, namespaces and functions,
 * kept in memory, mirrored in the store, and journalled as events.
 *
 * Every change follows one order: validate, write the store (committed),
 * then change the model and journal it. A failure at any step before the
 * model changes leaves everything as it was.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../internal.h"
#include "../store/etcd/journal_etcd.h"
#include "owners.h"
#include "quota.h"
#include "../act/reconcile.h"
#include "../workers/workers.h"

/* Journal size kept in memory. */
#define EVENTS_CAP (4u << 20)

static const char *const type_words[] = { "root",     "tenant",	  "namespace",
					  "function", "instance", "pool",
					  "worker" };

/* ================================================================== objects */

struct sched_obj *sched__obj_new(struct sched *s, enum sched_obj_type type,
				 struct sched_obj *parent, const char *name,
				 int64_t created, int64_t updated)
{
	struct sched_obj *o;
	size_t size = type == SCHED_FUNCTION   ? sizeof(struct sched_function)
		      : type == SCHED_INSTANCE ? sizeof(struct sched_instance)
		      : type == SCHED_WORKER   ? sizeof(struct sched_worker)
		      : type == SCHED_TENANT   ? sizeof(struct sched_tenant)
					       : sizeof(struct sched_obj);

	o = calloc(1, size);
	if (o == NULL)
		return NULL;
	o->id = s->next_id++;
	o->type = type;
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->parent = parent;
	o->created_ms = created;
	o->updated_ms = updated;
	if (type == SCHED_FUNCTION)
		sched_spec_init(&((struct sched_function *)o)->spec);
	if (type == SCHED_TENANT)
		((struct sched_tenant *)o)->owner.mode = SCHED_TENANT_MODE;
	if (rt_map_put(&parent->children, name, o) < 0) {
		free(o);
		return NULL;
	}
	if (rt_idmap_put(&s->index, o->id, o) < 0) {
		rt_map_del(&parent->children, name);
		free(o);
		return NULL;
	}
	return o;
}

#define obj_new sched__obj_new

static void obj_free(struct sched_obj *o)
{
	if (o->type == SCHED_FUNCTION) {
		struct sched_function *fn = (struct sched_function *)o;

		sched_spec_free(&fn->spec);
		free(fn->error);
		free(fn->calls);
	} else if (o->type == SCHED_INSTANCE) {
		sched__instance_free((struct sched_instance *)o);
	} else if (o->type == SCHED_WORKER) {
		sched__worker_free((struct sched_worker *)o);
	} else if (o->type == SCHED_TENANT) {
		events_part_free(&((struct sched_tenant *)o)->events);
		events_limit_free(&((struct sched_tenant *)o)->limit);
	}
	rt_map_free(&o->children);
	free(o);
}

void sched__obj_drop(struct sched *s, struct sched_obj *o)
{
	if (o->type == SCHED_FUNCTION)
		sched__quota_fn_drop((struct sched_function *)o);
	if (o->type == SCHED_FUNCTION)
		sched__calls_free(s, (struct sched_function *)o);
	if (o->type == SCHED_FUNCTION)
		sched__code_drop(s, (struct sched_function *)o);
	rt_map_del(&o->parent->children, o->name);
	rt_idmap_del(&s->index, o->id);
	obj_free(o);
}

static int free_tree_cb(const char *key, void *value, void *arg)
{
	struct sched_obj *o = value;

	(void)key;
	(void)arg;
	rt_map_each(&o->children, free_tree_cb, NULL);
	obj_free(o);
	return 0;
}

struct sched_obj *sched_pool(struct sched *s)
{
	return &s->pool;
}

struct sched_obj *sched_find(struct sched *s, uint64_t id)
{
	if (id == SCHED_ROOT_ID)
		return &s->root;
	if (id == SCHED_POOL_ID)
		return &s->pool;
	return rt_idmap_get(&s->index, id);
}

struct sched_obj *sched_child(struct sched_obj *parent, const char *name)
{
	return rt_map_get(&parent->children, name);
}

int sched_obj_path(const struct sched_obj *o, struct rt_buf *out)
{
	int rc = 0;

	if (o->parent != NULL && o->parent->type != SCHED_ROOT &&
	    o->parent->type != SCHED_POOL) {
		rc = sched_obj_path(o->parent, out);
		if (rc == 0)
			rc = rt_buf_puts(out, "/");
	}
	return rc < 0 ? rc : rt_buf_puts(out, o->name);
}

/* Fills a store row naming `o`. */
static void obj_row(const struct sched_obj *o, struct store_row *r)
{
	const struct sched_obj *ns = NULL, *t = o;

	memset(r, 0, sizeof(*r));
	if (o->type == SCHED_FUNCTION) {
		ns = o->parent;
		t = ns->parent;
		r->name = o->name;
	} else if (o->type == SCHED_NAMESPACE) {
		ns = o;
		t = o->parent;
	}
	r->kind = (enum store_kind)(o->type - SCHED_TENANT);
	r->tenant = t->name;
	r->ns = ns ? ns->name : NULL;
	r->created_ms = o->created_ms;
	r->updated_ms = o->updated_ms;
	if (o->type == SCHED_TENANT) {
		const struct sched_owner *w =
			&((const struct sched_tenant *)o)->owner;

		r->uid = w->uid;
		r->gid = w->gid;
		r->mode = w->mode;
	}
}

/* ================================================================== events */

/* Appends one event to the journal, and to the part of tenant `t` (may
 * be NULL) too. In a cluster the line goes to the cluster's journal in
 * etcd instead, and comes back into both through its watch
 * (journal_line). */
static void journal_now(struct sched *s, struct sched_tenant *t,
			const char *kind, const char *object, const char *kvs)
{
	uint64_t at = sched_events_end(s);
	struct rt_buf line = { 0 };
	int64_t now = rt_now_ms();

	if (s->journal != NULL) {
		if (events_line(&line, now, kind, object, kvs) == 0)
			journal_etcd_send(s->journal, now,
					  t ? t->obj.name : NULL, line.data,
					  line.len);
		else
			rt_log(RT_LOG_ERROR, "event lost (no memory): %s %s",
			       kind, object);
		rt_buf_free(&line);
		return;
	}
	events_append(&s->events, now, kind, object, kvs);
	if (t != NULL)
		events_part_add(&t->events, &s->events, at);
}

/* Whether a line is a refusal that events_limit limits: a kind ending in
 * ".rejected" or ".refused", but for the summaries that count already
 * (calls.c's `function.rejected file=invoke`). */
static int limited(const char *kind, const char *kvs)
{
	size_t n = strlen(kind);

	if (kvs != NULL && strstr(kvs, " count=") != NULL)
		return 0;
	return (n > 9 && strcmp(kind + n - 9, ".rejected") == 0) ||
	       (n > 8 && strcmp(kind + n - 8, ".refused") == 0);
}

/* As journal_now, but a refusal goes through the limit of its tenant (or
 * the root's): a flood of them is a few lines a second and a summary. */
static void journal(struct sched *s, struct sched_tenant *t, const char *kind,
		    const char *object, const char *kvs)
{
	struct events_limit *lm = t ? &t->limit : &s->limit;

	if (limited(kind, kvs) &&
	    !events_limit_offer(lm, rt_now_ms(), kind, object, kvs)) {
		s->limits_held = 1;
		return;
	}
	journal_now(s, t, kind, object, kvs);
}

struct flush_ctx {
	struct sched *s;
	struct sched_tenant *t;
	int64_t now;
	int all;
	int left;
};

static void flush_line(void *arg, const char *kind, const char *object,
		       const char *kvs)
{
	struct flush_ctx *x = arg;

	journal_now(x->s, x->t, kind, object, kvs);
}

static int flush_tenant(const char *key, void *value, void *arg)
{
	struct flush_ctx *x = arg;
	struct sched_obj *o = value;

	(void)key;
	if (o->type != SCHED_TENANT)
		return 0;
	x->t = (struct sched_tenant *)o;
	x->left += events_limit_flush(&x->t->limit, x->now, x->all, flush_line,
				      x);
	return 0;
}

void sched__journal_tick(struct sched *s, int all)
{
	struct flush_ctx x = { s, NULL, rt_now_ms(), all, 0 };

	if (!s->limits_held)
		return;
	x.left = events_limit_flush(&s->limit, x.now, all, flush_line, &x);
	rt_map_each(&s->root.children, flush_tenant, &x);
	s->limits_held = x.left > 0;
}

/* A line of the cluster's journal came back at `at`: its tenant's part
 * has it too, if that tenant is here. */
static void journal_line(void *arg, const char *tenant, uint64_t at)
{
	struct sched *s = arg;
	struct sched_obj *t = tenant ? sched_child(&s->root, tenant) : NULL;

	if (t != NULL && t->type == SCHED_TENANT) {
		events_part_add(&((struct sched_tenant *)t)->events, &s->events,
				at);
		return;
	}
	if (tenant == NULL)
		return;
	if (s->norphans == SCHED_ORPHANS) {
		memmove(s->orphans, s->orphans + 1,
			(SCHED_ORPHANS - 1) * sizeof(*s->orphans));
		s->norphans--;
	}
	s->orphans[s->norphans].at = at;
	snprintf(s->orphans[s->norphans].tenant, sizeof(s->orphans[0].tenant),
		 "%s", tenant);
	s->norphans++;
}

/* Tenant `t` came: its lines that came first go to its part. */
static void adopt_orphans(struct sched *s, struct sched_tenant *t)
{
	size_t i, k = 0;

	for (i = 0; i < s->norphans; i++) {
		struct sched_orphan *o = &s->orphans[i];

		if (o->at < s->events.first)
			continue; /* gone from the journal */
		if (strcmp(o->tenant, t->obj.name) == 0)
			events_part_add_line(&t->events, &s->events, o->at);
		else
			s->orphans[k++] = *o;
	}
	s->norphans = k;
}

void sched__journal_stop(struct sched *s)
{
	journal_etcd_stop(s->journal);
}

void sched__journal_flush(struct sched *s)
{
	journal_etcd_flush(s->journal);
}

int sched__journal_flushed(const struct sched *s)
{
	return journal_etcd_flushed(s->journal);
}

void sched_event(struct sched *s, const char *kind, const char *object,
		 const char *kvs)
{
	journal(s, NULL, kind, object, kvs);
}

void sched__event(struct sched *s, const struct sched_obj *o, const char *kind,
		  const char *kvs)
{
	struct rt_buf path = { 0 };

	sched_obj_path(o, &path);
	journal(s, sched__tenant_of(o), kind, path.data ? path.data : "-", kvs);
	rt_buf_free(&path);
}

uint64_t sched_events_end(const struct sched *s)
{
	return events_end(&s->events);
}

size_t sched_events_at(const struct sched *s, uint64_t off, const char **p,
		       uint64_t *first)
{
	return events_at(&s->events, off, p, first);
}

int64_t sched_events_mtime(const struct sched *s)
{
	return s->events.last_ms ? s->events.last_ms : s->root.created_ms;
}

uint64_t sched_tenant_events_end(const struct sched_obj *t)
{
	return ((const struct sched_tenant *)t)->events.end;
}

size_t sched_tenant_events_at(const struct sched *s, const struct sched_obj *t,
			      uint64_t off, char *buf, size_t size,
			      uint64_t *first)
{
	return events_part_at(&((const struct sched_tenant *)t)->events,
			      &s->events, off, buf, size, first);
}

int64_t sched_tenant_events_mtime(const struct sched_obj *t)
{
	const struct sched_tenant *x = (const struct sched_tenant *)t;

	return x->events.last_ms ? x->events.last_ms : t->created_ms;
}

static void apply_change(void *arg, const struct store_change *c);

/* ======================================================= open and close */

/* The parent a row of the store names, or NULL. */
static struct sched_obj *row_parent(struct sched *s, const struct store_row *r)
{
	struct sched_obj *t;

	if (r->kind == STORE_TENANT)
		return &s->root;
	t = sched_child(&s->root, r->tenant);
	if (t == NULL || r->kind == STORE_NAMESPACE)
		return t;
	return sched_child(t, r->ns);
}

static const char *row_name(const struct store_row *r)
{
	return r->kind == STORE_TENANT	    ? r->tenant
	       : r->kind == STORE_NAMESPACE ? r->ns
					    : r->name;
}

/* Makes the object of row `r` under `parent`. Returns 0, -ENOMEM, or
 * -EIO for a spec that does not read back (logged). */
static int obj_from_row(struct sched *s, struct sched_obj *parent,
			const struct store_row *r, struct sched_obj **out)
{
	struct rt_buf why = { 0 };
	struct sched_obj *o;

	*out = NULL;
	o = obj_new(s, (enum sched_obj_type)(r->kind + SCHED_TENANT), parent,
		    row_name(r), r->created_ms, r->updated_ms);
	if (o == NULL)
		return -ENOMEM;
	if (r->kind == STORE_TENANT) {
		struct sched_owner *w = &((struct sched_tenant *)o)->owner;

		w->uid = r->uid;
		w->gid = r->gid;
		w->mode = r->mode & SCHED_TENANT_MODE_MASK;
	}
	if (r->kind == STORE_FUNCTION) {
		struct sched_function *fn = (struct sched_function *)o;

		fn->revision = r->revision;
		fn->run_revision = r->run_revision ? r->run_revision
						   : r->revision;
		if (sched_spec_from_json(&fn->spec, r->spec, strlen(r->spec),
					 &why) < 0) {
			rt_log(RT_LOG_ERROR, "store: %s/%s/%s: bad spec: %s",
			       r->tenant, r->ns, r->name, why.data);
			rt_buf_free(&why);
			sched__obj_drop(s, o);
			return -EIO;
		}
		sched__quota_fn_update(fn);
	}
	*out = o;
	return 0;
}

static int load_row(const struct store_row *r, void *arg)
{
	struct sched *s = arg;
	struct sched_obj *parent = row_parent(s, r), *o;

	if (parent == NULL) {
		rt_log(RT_LOG_WARN, "store: %s/%s has no parent; skipped",
		       r->tenant, r->ns ? r->ns : "");
		return 0;
	}
	if (!rt_name_valid(row_name(r))) {
		rt_log(RT_LOG_WARN, "store: bad name \"%s\"; skipped",
		       row_name(r));
		return 0;
	}
	return obj_from_row(s, parent, r, &o);
}

/* sched_open, with the shared store of `cfg` and `cluster` when `cfg`
 * is not NULL. */
static int open_store(struct sched **out, const char *datadir,
		      struct uv_loop_s *loop, const struct etcd_config *cfg,
		      const char *cluster)
{
	struct sched *s = calloc(1, sizeof(*s));
	struct rt_buf path = { 0 };
	int rc = -ENOMEM;

	if (s == NULL)
		goto out;
	events_init(&s->events, EVENTS_CAP);
	s->next_id = SCHED_POOL_ID + 1;
	s->root.id = SCHED_ROOT_ID;
	s->root.type = SCHED_ROOT;
	s->root.created_ms = s->root.updated_ms = rt_now_ms();
	s->pool.id = SCHED_POOL_ID;
	s->pool.type = SCHED_POOL;
	s->pool.created_ms = s->pool.updated_ms = s->root.created_ms;
	s->datadir = strdup(datadir);
	s->stats = calloc(1, sizeof(*s->stats));
	if (mkdir(datadir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		rt_log(RT_LOG_ERROR, "mkdir %s: %s", datadir, strerror(errno));
		goto out;
	}
	if (rt_buf_printf(&path, "%s/fnfs.db", datadir) < 0)
		goto out;
	rc = cfg ? store_open_shared(&s->store, path.data, loop, cfg, cluster)
		 : store_open(&s->store, path.data);
	if (rc == 0)
		rc = store_load(s->store, load_row, s);
	if (rc == 0)
		rc = sched_cluster_open(s);
	if (rc == 0)
		store_listen(s->store, apply_change, s);
	/* A cluster's journal is in etcd: a client of its own. */
	if (rc == 0 && cfg != NULL)
		rc = journal_etcd_open(&s->journal, loop, cfg, cluster, 0,
				       &s->events, journal_line, s);
	if (rc == 0)
		rc = sched__code_open(s);
	/* Instances and workers are loaded by sched_start. */
out:
	rt_buf_free(&path);
	if (rc < 0) {
		sched_close(s);
		s = NULL;
	}
	*out = s;
	return rc;
}

int sched_open(struct sched **out, const char *datadir)
{
	return open_store(out, datadir, NULL, NULL, NULL);
}

int sched_open_shared(struct sched **out, const char *datadir,
		      struct uv_loop_s *loop, const struct etcd_config *cfg,
		      const char *cluster)
{
	return open_store(out, datadir, loop, cfg, cluster);
}

void sched_close(struct sched *s)
{
	if (s == NULL)
		return;
	/* Instances first: they are in workers' assignment maps. */
	rt_map_each(&s->root.children, free_tree_cb, NULL);
	rt_map_free(&s->root.children);
	rt_map_each(&s->pool.children, free_tree_cb, NULL);
	rt_map_free(&s->pool.children);
	sched_cluster_close(s);
	free(s->datadir);
	free(s->self);
	free(s->log_path);
	free(s->sock_path);
	rt_idmap_free(&s->requests);
	rt_idmap_free(&s->index);
	rt_idmap_free(&s->calls);
	rt_idmap_free(&s->scaled);
	rt_idmap_free(&s->failing);
	free(s->stats);
	sched__code_close(s);
	store_close(s->store);
	journal_etcd_close(s->journal);
	events_close(&s->events);
	events_limit_free(&s->limit);
	free(s);
}

/* ======================================================= applying changes */

static const char *const created_words[] = { "tenant.created",
					     "namespace.created",
					     "function.created" };
static const char *const deleted_words[] = { "tenant.deleted",
					     "namespace.deleted",
					     "function.deleted" };

/* A child came or went: the parent's mtime moves, never back. */
static void touch(struct sched_obj *parent, int64_t when)
{
	if (parent->type != SCHED_ROOT && when > parent->updated_ms)
		parent->updated_ms = when;
}

static void apply_insert(struct sched *s, struct sched_obj *parent,
			 const struct store_row *r, int quiet)
{
	struct rt_buf kvs = { 0 };
	struct sched_obj *o;
	char rev[32];

	if (obj_from_row(s, parent, r, &o) < 0)
		return; /* logged; the next start loads it */
	if (o->type == SCHED_TENANT && s->norphans > 0)
		adopt_orphans(s, (struct sched_tenant *)o);
	touch(parent, r->created_ms);
	if (r->kind == STORE_FUNCTION) {
		snprintf(rev, sizeof(rev), "%llu",
			 (unsigned long long)r->revision);
		rt_buf_kv(&kvs, "revision", rev);
	}
	if (!quiet)
		sched__event(s, o, created_words[r->kind], kvs.data);
	rt_buf_free(&kvs);
}

static void apply_delete(struct sched *s, struct sched_obj *o,
			 const struct store_row *r, int quiet)
{
	struct sched_tenant *t = sched__tenant_of(o->parent);
	struct rt_buf path = { 0 };

	if (o->type == SCHED_FUNCTION)
		sched__instances_drop(s, (struct sched_function *)o);
	sched_obj_path(o, &path);
	touch(o->parent, r->updated_ms);
	sched__obj_drop(s, o);
	/* Removed on a follower, whose delete of its quotas reached its own
	 * copy only: the leader's reaches them all. */
	if (r->kind == STORE_TENANT && sched_cluster_publishes(s))
		(void)sched__quota_sweep(s);
	/* A tenant's own end is in the whole journal only: its part is
	 * gone with it. */
	if (!quiet)
		journal(s, t, deleted_words[r->kind], path.data, NULL);
	rt_buf_free(&path);
}

static void apply_owner(struct sched *s, struct sched_obj *o,
			const struct store_row *r, int quiet)
{
	struct sched_tenant *x = (struct sched_tenant *)o;
	struct rt_buf kvs = { 0 };
	char v[32];

	if (o->type != SCHED_TENANT)
		return;
	x->owner.uid = r->uid;
	x->owner.gid = r->gid;
	x->owner.mode = r->mode & SCHED_TENANT_MODE_MASK;
	snprintf(v, sizeof(v), "%u", x->owner.uid);
	rt_buf_kv(&kvs, "uid", v);
	snprintf(v, sizeof(v), "%u", x->owner.gid);
	rt_buf_kv(&kvs, "gid", v);
	snprintf(v, sizeof(v), "%04o", x->owner.mode);
	rt_buf_kv(&kvs, "mode", v);
	if (!quiet)
		sched__event(s, o, "tenant.owner", kvs.data);
	rt_buf_free(&kvs);
}

/* A function's new spec and revision. */
static void apply_spec(struct sched *s, struct sched_function *fn,
		       const struct store_row *r, int quiet)
{
	struct rt_buf kvs = { 0 }, changed = { 0 }, why = { 0 };
	struct sched_spec next;
	char rev[32];

	sched_spec_init(&next);
	if (sched_spec_from_json(&next, r->spec, strlen(r->spec), &why) < 0) {
		rt_log(RT_LOG_ERROR, "store: %s/%s/%s: bad spec: %s", r->tenant,
		       r->ns, r->name, why.data);
		goto out;
	}
	if (r->revision == fn->revision && sched_spec_equal(&next, &fn->spec))
		goto out; /* nothing new */
	if (sched_spec_diff(&fn->spec, &next, &changed) < 0)
		goto out;
	/* The same spec at a new revision: a cluster's revision of code. */
	if (changed.len == 0 && rt_buf_puts(&changed, "code") < 0)
		goto out;
	sched_spec_free(&fn->spec);
	fn->spec = next;
	sched_spec_init(&next); /* moved */
	fn->revision = r->revision;
	fn->run_revision = r->run_revision ? r->run_revision : r->revision;
	sched__quota_fn_update(fn);
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)fn->revision);
	rt_buf_kv(&kvs, "revision", rev);
	rt_buf_kv(&kvs, "changed", changed.data);
	if (!quiet)
		sched__event(s, &fn->obj, "function.updated", kvs.data);
	sched__reconcile(s, fn);
out:
	sched_spec_free(&next);
	rt_buf_free(&kvs);
	rt_buf_free(&changed);
	rt_buf_free(&why);
}

/* The store's listener: every committed change of a tenant, namespace or
 * function reaches the model here, this controller's own and, with a
 * shared store, every other controller's. A change that does not fit the
 * model (a parent missing, a row already there) is logged and skipped.
 * On a shared store a change is journalled by the controller whose write
 * it was (c->own), once for the cluster. */
static void apply_change(void *arg, const struct store_change *c)
{
	struct sched *s = arg;
	const struct store_row *r = &c->row;
	struct sched_obj *parent = row_parent(s, r), *o;
	int quiet = sched_cluster_shared(s) && !c->own;

	o = parent ? sched_child(parent, row_name(r)) : NULL;
	if (c->op == STORE_INSERT && parent != NULL && o == NULL)
		apply_insert(s, parent, r, quiet);
	else if (o == NULL)
		rt_log(RT_LOG_WARN, "store: a change of %s/%s/%s, unknown here",
		       r->tenant, r->ns ? r->ns : "-", r->name ? r->name : "-");
	else if (c->op == STORE_DELETE)
		apply_delete(s, o, r, quiet);
	else if (c->op == STORE_OWNER)
		apply_owner(s, o, r, quiet);
	else {
		if (r->kind == STORE_FUNCTION)
			apply_spec(s, (struct sched_function *)o, r, quiet);
		o->updated_ms = r->updated_ms;
	}
}

/* ============================================================ create, remove
 */

/* Journals a refused request about a child of `parent`. */
static void reject_child(struct sched *s, const struct sched_obj *parent,
			 enum sched_obj_type type, const char *op,
			 const char *name, int err, const char *reason)
{
	struct rt_buf kvs = { 0 }, path = { 0 }, kind = { 0 };

	if (parent->type == SCHED_ROOT)
		rt_buf_puts(&path, "-");
	else
		sched_obj_path(parent, &path);
	rt_buf_printf(&kind, "%s.rejected", type_words[type]);
	rt_buf_kv(&kvs, "op", op);
	rt_buf_kv(&kvs, "name", name);
	rt_buf_kv(&kvs, "errno", rt_errno_name(err));
	rt_buf_kv(&kvs, "reason", reason);
	journal(s, sched__tenant_of(parent), kind.data, path.data, kvs.data);
	rt_buf_free(&kvs);
	rt_buf_free(&path);
	rt_buf_free(&kind);
}

/* Commits a touch of `parent`'s mtime with the change `r` (insert or
 * delete). Returns 0 or -errno; on error nothing is stored. */
static int store_child_change(struct sched *s, struct sched_obj *parent,
			      const struct store_row *r, int insert,
			      int64_t now, store_done_fn done, void *arg)
{
	struct store_row pr;
	int rc;

	rc = store_begin(s->store);
	if (rc < 0)
		return rc;
	rc = insert ? store_insert(s->store, r) : store_delete(s->store, r);
	/* A shared store keeps no parent's mtime: each controller moves it
	 * as the children come and go (touch). */
	if (rc == 0 && parent->type != SCHED_ROOT && !sched_cluster_shared(s)) {
		obj_row(parent, &pr);
		pr.updated_ms = now;
		rc = store_update(s->store, &pr);
	}
	if (rc == 0)
		rc = store_commit_then(s->store, done, arg);
	else
		store_rollback(s->store);
	return rc;
}

int sched__create(struct sched *s, struct sched_obj *parent, const char *name,
		  const struct sched_caller *who, store_done_fn done, void *arg,
		  struct sched_obj **out)
{
	enum sched_obj_type type = (enum sched_obj_type)(parent->type + 1);
	int64_t now = rt_now_ms();
	struct sched_owner owner = { 0, 0, SCHED_TENANT_MODE };
	struct sched_tenant tmp;
	struct rt_buf spec = { 0 };
	struct store_row r;
	int rc;

	*out = NULL;
	if (parent->type == SCHED_FUNCTION)
		return -EPERM;
	if (!rt_name_valid(name)) {
		reject_child(s, parent, type, "mkdir", name, EINVAL,
			     "names are 1 to 63 of [A-Za-z0-9._-], starting "
			     "with a letter or digit");
		return -EINVAL;
	}
	if (sched_child(parent, name) != NULL)
		return -EEXIST;
	if (type == SCHED_FUNCTION &&
	    (rc = sched__quota_create(s, parent, &spec)) < 0) {
		reject_child(s, parent, type, "mkdir", name, EDQUOT, spec.data);
		goto out;
	}

	if (!sched_caller_is_root(who)) {
		owner.uid = who->uid;
		owner.gid = who->gid;
	}
	/* Describe the new object for the store before it exists. */
	memset(&tmp, 0, sizeof(tmp));
	tmp.obj.type = type;
	tmp.obj.parent = parent;
	snprintf(tmp.obj.name, sizeof(tmp.obj.name), "%s", name);
	tmp.obj.created_ms = tmp.obj.updated_ms = now;
	tmp.owner = owner;
	obj_row(&tmp.obj, &r);
	if (type == SCHED_FUNCTION) {
		struct sched_spec defaults;

		sched_spec_init(&defaults);
		rc = sched_spec_dump(&defaults, &spec);
		if (rc < 0)
			goto out;
		r.spec = spec.data;
		r.revision = 1;
		r.run_revision = 1;
	}
	rc = store_child_change(s, parent, &r, 1, now, done, arg);
	if (rc != 0)
		goto out; /* failed, or STORE_LATER: made when it comes back */
	/* The store's listener made it (apply_insert). */
	*out = sched_child(parent, name);
	if (*out == NULL)
		rc = -ENOMEM; /* stored: the next start loads it */
out:
	rt_buf_free(&spec);
	return rc;
}

int sched_create(struct sched *s, struct sched_obj *parent, const char *name,
		 const struct sched_caller *who, struct sched_obj **out)
{
	return sched__create(s, parent, name, who, NULL, NULL, out);
}

int sched__remove(struct sched *s, struct sched_obj *parent, const char *name,
		  const struct sched_caller *who, store_done_fn done, void *arg)
{
	struct sched_obj *o = sched_child(parent, name);
	int64_t now = rt_now_ms();
	struct store_row r;
	int rc;

	(void)who;
	if (o == NULL)
		return -ENOENT;
	if (o->type != SCHED_FUNCTION && o->children.count > 0) {
		reject_child(s, parent, o->type, "rmdir", name, ENOTEMPTY,
			     o->type == SCHED_TENANT
				     ? "the tenant has namespaces"
				     : "the namespace has functions");
		return -ENOTEMPTY;
	}
	obj_row(o, &r);
	r.updated_ms = now; /* when it went: its parent's mtime */
	/* The function and its instances' rows go in one transaction, before
	 * anything is stopped: a failure leaves everything as it was. */
	rc = store_begin(s->store);
	if (rc == 0 && o->type == SCHED_FUNCTION && !sched_cluster_shared(s))
		rc = sched__instances_unstore(s, (struct sched_function *)o);
	if (rc == 0 && o->type == SCHED_FUNCTION && !sched_cluster_shared(s))
		rc = sched__code_unstore(s, (struct sched_function *)o);
	if (rc == 0 && o->type == SCHED_TENANT)
		rc = sched__quota_unstore(s, o->name);
	if (rc == 0)
		rc = store_child_change(s, parent, &r, 0, now, NULL, NULL);
	if (rc == 0)
		rc = store_commit_then(s->store, done, arg);
	else
		store_rollback(s->store);
	return rc; /* the store's listener dropped it (apply_delete) */
}

int sched_remove(struct sched *s, struct sched_obj *parent, const char *name,
		 const struct sched_caller *who)
{
	return sched__remove(s, parent, name, who, NULL, NULL);
}

/* ================================================================= owners */

int sched__tenant_chown(struct sched *s, struct sched_obj *t,
			const struct sched_caller *who, int64_t uid,
			int64_t gid, int64_t mode, store_done_fn done,
			void *arg)
{
	struct sched_tenant *x = (struct sched_tenant *)t;
	struct sched_owner next = x->owner;
	struct store_row r;
	int rc = 0;

	if (t->type != SCHED_TENANT)
		return -EPERM;
	if ((uid >= 0 || gid >= 0) && !sched_caller_is_root(who))
		rc = -EPERM; /* giving a tenant away, or taking one: root */
	else if (mode >= 0 && !sched_caller_is_root(who) &&
		 who->uid != x->owner.uid)
		rc = -EPERM;
	else if (mode >= 0 && (mode & ~(int64_t)SCHED_TENANT_MODE_MASK))
		rc = -EINVAL; /* no set-id or sticky bits: they mean nothing */
	else if (uid > UINT32_MAX - 1 || gid > UINT32_MAX - 1)
		rc = -EINVAL;
	if (rc < 0)
		goto out;
	if (uid >= 0)
		next.uid = (uint32_t)uid;
	if (gid >= 0)
		next.gid = (uint32_t)gid;
	if (mode >= 0)
		next.mode = (uint32_t)mode;
	if (memcmp(&next, &x->owner, sizeof(next)) == 0)
		goto out;
	obj_row(t, &r);
	r.uid = next.uid;
	r.gid = next.gid;
	r.mode = next.mode;
	rc = store_begin(s->store);
	if (rc == 0)
		rc = store_tenant_owner(s->store, &r);
	if (rc == 0)
		rc = store_commit_then(s->store, done, arg); /* apply_owner */
	else
		store_rollback(s->store);
out:
	return rc;
}

int sched_tenant_chown(struct sched *s, struct sched_obj *t,
		       const struct sched_caller *who, int64_t uid, int64_t gid,
		       int64_t mode)
{
	return sched__tenant_chown(s, t, who, uid, gid, mode, NULL, NULL);
}

/* ============================================================== attributes */

void sched__set_error(struct sched_function *fn, const char *reason)
{
	struct rt_buf line = { 0 };
	char when[32];
	size_t i;

	rt_format_time(rt_now_ms(), when);
	rt_buf_printf(&line, "%s %s\n", when, reason);
	/* One line of UTF-8 text, and nothing a terminal would act on:
	 * control bytes and bytes that are not UTF-8, quoted back in the
	 * reason (a user's value, a function's output), become '?'. */
	for (i = 0; line.data != NULL && i + 1 < line.len; i++) {
		size_t k = rt_utf8_char(line.data + i, line.len - 1 - i, NULL);

		if (k > 1)
			i += k - 1;
		else if (k == 0 || (unsigned char)line.data[i] < ' ' ||
			 line.data[i] == 0x7f)
			line.data[i] = '?';
	}
	if (line.data != NULL) {
		free(fn->error);
		fn->error = line.data; /* takes ownership */
	}
}

void sched__reject(struct sched *s, struct sched_function *fn, const char *file,
		   int err, const char *reason)
{
	struct rt_buf kvs = { 0 };

	sched__set_error(fn, reason);
	rt_buf_kv(&kvs, "file", file);
	rt_buf_kv(&kvs, "errno", rt_errno_name(err));
	rt_buf_kv(&kvs, "reason", reason);
	sched__event(s, &fn->obj, "function.rejected", kvs.data);
	rt_buf_free(&kvs);
}

/* Makes `next` (uninitialised) the spec `fn` would have with `buf` as the
 * value of attribute `a`. Returns 0, or -EINVAL/-EACCES/-ENOMEM with the
 * refusal journalled and `next` at the defaults. */
static int prepare(struct sched *s, struct sched_function *fn,
		   enum sched_attr a, const char *buf, size_t len,
		   const struct sched_caller *who, struct sched_spec *next)
{
	struct rt_buf why = { 0 };
	int rc = 0, err = EINVAL, i;

	sched_spec_init(next);
	if (!sched_attr_writable(a)) {
		rt_buf_puts(&why, "the file is read-only");
		rc = -EACCES;
		err = EACCES;
	} else if (len > SCHED_VALUE_MAX) {
		rt_buf_printf(&why, "a value holds at most %u bytes",
			      SCHED_VALUE_MAX);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = sched_spec_copy(next, &fn->spec);
	if (rc == 0)
		rc = sched_spec_parse(next, a, buf, len, &why);
	if (rc == 0)
		rc = sched_spec_check(next, &why);
	/* Leaving the sandbox is root's to allow, through any file. */
	if (rc == 0 && !sched_caller_is_root(who) &&
	    (i = sched_spec_root_only_changed(&fn->spec, next)) >= 0) {
		rt_buf_printf(&why, "only root may change %s",
			      sched_attr_name((enum sched_attr)i));
		rc = -EPERM;
		err = EPERM;
	}
	if (rc == 0 && (rc = sched__quota_spec(s, fn, next, &why)) < 0)
		err = EDQUOT;
	if (rc == -err)
		sched__reject(s, fn, sched_attr_name(a), err,
			      why.data ? why.data : "invalid value");
	if (rc < 0)
		sched_spec_free(next);
	rt_buf_free(&why);
	return rc;
}

int sched_function_check(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who)
{
	struct sched_spec next;
	int rc = prepare(s, fn, a, buf, len, who, &next);

	sched_spec_free(&next);
	return rc;
}

int sched__function_write(struct sched *s, struct sched_function *fn,
			  enum sched_attr a, const char *buf, size_t len,
			  const struct sched_caller *who, store_done_fn done,
			  void *arg)
{
	struct rt_buf dump = { 0 }, kvs = { 0 }, why = { 0 };
	struct sched_spec next;
	struct store_row r;
	int64_t now = rt_now_ms();
	int rc = prepare(s, fn, a, buf, len, who, &next);

	if (rc < 0)
		goto out;
	if (sched_spec_equal(&next, &fn->spec))
		goto out; /* nothing to change, no new revision */

	/* What is stored must read back as what is acknowledged. */
	rc = sched_spec_dump_checked(&next, &dump, &why);
	if (rc == -EIO) {
		sched_obj_path(&fn->obj, &kvs);
		rt_log(RT_LOG_ERROR, "%s/%s: %s", kvs.data ? kvs.data : "?",
		       sched_attr_name(a), why.data);
		sched__reject(s, fn, sched_attr_name(a), EIO, why.data);
		goto out;
	}
	if (rc < 0)
		goto out;
	obj_row(&fn->obj, &r);
	r.spec = dump.data;
	r.revision = fn->revision + 1;
	r.run_revision = sched_spec_needs_restart(&fn->spec, &next)
				 ? r.revision
				 : fn->run_revision;
	r.updated_ms = now;
	rc = store_begin(s->store);
	if (rc == 0)
		rc = store_update(s->store, &r);
	if (rc == 0)
		rc = store_commit_then(s->store, done, arg); /* apply_spec */
	else
		store_rollback(s->store);
	if (rc < 0)
		sched__reject(s, fn, sched_attr_name(a), -rc,
			      "the store could not be written");
out:
	sched_spec_free(&next);
	rt_buf_free(&dump);
	rt_buf_free(&kvs);
	rt_buf_free(&why);
	return rc;
}

int sched_function_write(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who)
{
	return sched__function_write(s, fn, a, buf, len, who, NULL, NULL);
}

int sched_function_render(const struct sched_function *fn, enum sched_attr a,
			  struct rt_buf *out)
{
	switch (a) {
	case SCHED_ATTR_REVISION:
		return rt_buf_printf(out, "%llu\n",
				     (unsigned long long)fn->revision);
	case SCHED_ATTR_ERROR:
		return fn->error ? rt_buf_puts(out, fn->error) : 0;
	default: return sched_spec_render(&fn->spec, a, out);
	}
}

/*
 * tree.c - the tree's changes: a tenant, namespace or function created
 * or removed, a tenant's owner, and the store's listener that applies
 * every committed change (this controller's and, on a cluster, the
 * others') to the model.
 *
 * Every change follows one order: validate, write the store (committed),
 * then change the model and journal it. A failure at any step before the
 * model changes leaves everything as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "../model/owners.h"
#include "../model/quota.h"
#include "../act/reconcile.h"
#include "face.h"

static const char *const type_words[] = { "root",     "tenant",	  "namespace",
					  "function", "instance", "pool",
					  "worker" };

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

	if (sched__obj_from_row(s, parent, r, &o) < 0)
		return; /* logged; the next start loads it */
	if (o->type == SCHED_TENANT && s->journal.norphans > 0)
		sched__adopt_orphans(s, (struct sched_tenant *)o);
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
		sched__journal(s, t, deleted_words[r->kind], path.data, NULL);
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
void sched__apply_change(void *arg, const struct store_change *c)
{
	struct sched *s = arg;
	const struct store_row *r = &c->row;
	struct sched_obj *parent = sched__row_parent(s, r), *o;
	int quiet = sched_cluster_shared(s) && !c->own;

	o = parent ? sched_child(parent, sched__row_name(r)) : NULL;
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
	sched__journal(s, sched__tenant_of(parent), kind.data, path.data,
		       kvs.data);
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
		sched__obj_row(parent, &pr);
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
	sched__obj_row(&tmp.obj, &r);
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
	sched__obj_row(o, &r);
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
	sched__obj_row(t, &r);
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

/*
 * objects.c - the controller's model of tenants, namespaces, functions,
 * instances and workers: its objects, their index, and the tree's load
 * from the store's rows. What the layers above hold for an object goes
 * with it through s->hooks (internal.h). The tree's changes (create,
 * remove, owners, the store's listener) are face/tree.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "owners.h"
#include "quota.h"

/* ================================================================== objects */

/* The id a worker named `name` had, taken back (0: none, or in use). */
static uint64_t worker_id(struct sched *s, const char *name)
{
	uint64_t id = (uint64_t)(uintptr_t)rt_map_get(&s->worker_ids, name);

	if (id == 0 || rt_idmap_get(&s->index, id) != NULL)
		return 0;
	rt_map_del(&s->worker_ids, name);
	return id;
}

/* Remembers the id of worker `o`, going. */
static void worker_id_keep(struct sched *s, const struct sched_obj *o)
{
	assert(o->id > SCHED_POOL_ID);
	if (rt_map_get(&s->worker_ids, o->name) != NULL ||
	    s->worker_ids.count >= SCHED_WORKER_IDS_MAX)
		return;
	/* Not kept without memory: the next one gets a new id. */
	if (rt_map_put(&s->worker_ids, o->name, (void *)(uintptr_t)o->id) < 0)
		rt_log(RT_LOG_DEBUG, "worker %s: its id is not kept", o->name);
}

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
	o->id = type == SCHED_WORKER ? worker_id(s, name) : 0;
	if (o->id == 0)
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

static void obj_free(struct sched *s, struct sched_obj *o)
{
	if (o->type == SCHED_FUNCTION) {
		struct sched_function *fn = (struct sched_function *)o;

		sched_spec_free(&fn->spec);
		free(fn->error);
		free(fn->calls);
	} else if (o->type == SCHED_INSTANCE) {
		s->hooks.instance_free((struct sched_instance *)o);
	} else if (o->type == SCHED_WORKER) {
		s->hooks.worker_free((struct sched_worker *)o);
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
		s->hooks.function_drop(s, (struct sched_function *)o);
	rt_map_del(&o->parent->children, o->name);
	rt_idmap_del(&s->index, o->id);
	if (o->type == SCHED_WORKER)
		worker_id_keep(s, o);
	obj_free(s, o);
}

static int free_tree_cb(const char *key, void *value, void *arg)
{
	struct sched_obj *o = value;

	(void)key;
	rt_map_each(&o->children, free_tree_cb, arg);
	obj_free(arg, o);
	return 0;
}

void sched__tree_free(struct sched *s)
{
	/* Instances first: they are in workers' assignment maps. */
	rt_map_each(&s->root.children, free_tree_cb, s);
	rt_map_free(&s->root.children);
	rt_map_each(&s->pool.children, free_tree_cb, s);
	rt_map_free(&s->pool.children);
	rt_map_free(&s->worker_ids);
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
void sched__obj_row(const struct sched_obj *o, struct store_row *r)
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

/* ============================================ the tree from the store */

/* The parent a row of the store names, or NULL. */
struct sched_obj *sched__row_parent(struct sched *s, const struct store_row *r)
{
	struct sched_obj *t;

	if (r->kind == STORE_TENANT)
		return &s->root;
	t = sched_child(&s->root, r->tenant);
	if (t == NULL || r->kind == STORE_NAMESPACE)
		return t;
	return sched_child(t, r->ns);
}

const char *sched__row_name(const struct store_row *r)
{
	return r->kind == STORE_TENANT	    ? r->tenant
	       : r->kind == STORE_NAMESPACE ? r->ns
					    : r->name;
}

/* Makes the object of row `r` under `parent`. Returns 0, -ENOMEM, or
 * -EIO for a spec that does not read back (logged). */
int sched__obj_from_row(struct sched *s, struct sched_obj *parent,
			const struct store_row *r, struct sched_obj **out)
{
	struct rt_buf why = { 0 };
	struct sched_obj *o;

	*out = NULL;
	o = obj_new(s, (enum sched_obj_type)(r->kind + SCHED_TENANT), parent,
		    sched__row_name(r), r->created_ms, r->updated_ms);
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
	struct sched_obj *parent = sched__row_parent(s, r), *o;

	if (parent == NULL) {
		rt_log(RT_LOG_WARN, "store: %s/%s has no parent; skipped",
		       r->tenant, r->ns ? r->ns : "");
		return 0;
	}
	if (!rt_name_valid(sched__row_name(r))) {
		rt_log(RT_LOG_WARN, "store: bad name \"%s\"; skipped",
		       sched__row_name(r));
		return 0;
	}
	return sched__obj_from_row(s, parent, r, &o);
}

int sched__tree_load(struct sched *s)
{
	return store_load(s->store, load_row, s);
}

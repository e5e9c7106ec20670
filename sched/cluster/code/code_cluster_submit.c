/*
 * code_cluster_submit.c - code/ on a cluster: a change of the tree sent
 * to etcd as one compare-and-set (store_code_submit), with the objects it
 * names uploaded first, tried again when another controller's change won
 * a race, and its caller told once the watch brought it back. Part of the
 * code module's cluster backend (code_cluster.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../runtime/base/code.h"
#include "code_cluster.h"
#include "../../face/write.h"

/* ---------------------------------------------------- changes to etcd */

static void req_free(struct code_req *q)
{
	free(q->name);
	free(q->newname);
	free(q);
}

struct code_req *sched__code_req_new(struct sched *s, enum req_kind kind,
				     const struct sched_function *fn,
				     sched_code_done_fn done, void *arg)
{
	struct code_req *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->s = s;
	q->kind = kind;
	q->fn_id = fn->obj.id;
	q->done = done;
	q->arg = arg;
	return q;
}

static struct sched_function *req_fn(const struct code_req *q)
{
	struct sched_obj *o = sched_find(q->s, q->fn_id);

	return o != NULL && o->type == SCHED_FUNCTION
		       ? (struct sched_function *)o
		       : NULL;
}

/* Ops of one submit, with the paths they borrow. */
struct req_ops {
	struct store_code_op *v;
	struct rt_buf *paths;
	size_t n, cap;
};

static void ops_free(struct req_ops *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		rt_buf_free(&o->paths[i]);
	free(o->v);
	free(o->paths);
	memset(o, 0, sizeof(*o));
}

/* Adds an op on the entry of `fn` at `path` (a copy is kept). */
static struct store_code_op *ops_add(struct req_ops *o,
				     const struct sched_function *fn,
				     enum store_code_op_kind kind,
				     const char *path)
{
	const char *k[3];
	struct store_code_op *op;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 8, i;
		struct store_code_op *v = realloc(o->v, cap * sizeof(*v));
		struct rt_buf *p;

		if (v == NULL)
			return NULL;
		o->v = v;
		p = realloc(o->paths, cap * sizeof(*p));
		if (p == NULL)
			return NULL;
		o->paths = p;
		for (i = o->cap; i < cap; i++)
			memset(&o->paths[i], 0, sizeof(o->paths[i]));
		o->cap = cap;
	}
	if (rt_buf_puts(&o->paths[o->n], path) < 0)
		return NULL;
	op = &o->v[o->n];
	memset(op, 0, sizeof(*op));
	fn_key(fn, k);
	op->op = kind;
	op->file.tenant = op->rev.tenant = k[0];
	op->file.ns = op->rev.ns = k[1];
	op->file.fn = op->rev.fn = k[2];
	op->file.path = o->paths[o->n].data;
	op->file.hash = "";
	o->n++;
	return op;
}

/* Adds a put of node `n` at `path`. */
static int ops_put(struct req_ops *o, const struct sched_code_node *n,
		   const char *path, int parent_in_txn)
{
	struct store_code_op *op = ops_add(o, n->fn, STORE_CODE_PUT, path);

	if (op == NULL)
		return -ENOMEM;
	op->file.mode = n->mode;
	op->file.size = is_dir(n) ? 0 : n->stored_size;
	op->file.hash = is_dir(n) ? "" : n->hash;
	op->file.mtime_ms = n->mtime_ms;
	op->parent_in_txn = parent_in_txn;
	return 0;
}

/* The moves of a rename: a put of each entry below `n` (itself first)
 * at its path under `to`, then a delete at its path under `from`. */
static int ops_move(struct req_ops *o, const struct sched_code_node *n,
		    const char *from, const char *to, int top, int del)
{
	void **v;
	size_t i, k;
	int rc;

	rc = del ? (ops_add(o, n->fn, STORE_CODE_DEL, from) ? 0 : -ENOMEM)
		 : ops_put(o, n, to, !top);
	v = rt_map_values(&n->children, &k);
	for (i = 0; rc == 0 && v != NULL && i < k; i++) {
		const struct sched_code_node *m = v[i];
		struct rt_buf a = { 0 }, b = { 0 };

		rc = rt_buf_printf(&a, "%s/%s", from, m->name);
		if (rc == 0)
			rc = rt_buf_printf(&b, "%s/%s", to, m->name);
		if (rc == 0)
			rc = ops_move(o, m, a.data, b.data, 0, del);
		rt_buf_free(&a);
		rt_buf_free(&b);
	}
	free(v);
	return rc;
}

size_t sched__code_subtree_size(const struct sched_code_node *n)
{
	void **v;
	size_t i, k, total = 1;

	v = rt_map_values(&n->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		total += sched__code_subtree_size(v[i]);
	free(v);
	return total;
}

static void on_req_stored(void *arg, int err);
static void on_req_uploaded(void *arg, int err, const char *hash);

/* The row of `fn` with its next revision, which runs `f`'s new code. */
static int publish_row(struct sched_function *fn, struct rt_buf *dump,
		       struct store_row *r)
{
	const struct sched_obj *ns = fn->obj.parent, *t = ns->parent;
	int rc = sched_spec_dump(&fn->spec, dump);

	memset(r, 0, sizeof(*r));
	r->kind = STORE_FUNCTION;
	r->tenant = t->name;
	r->ns = ns->name;
	r->name = fn->obj.name;
	r->created_ms = fn->obj.created_ms;
	r->updated_ms = rt_now_ms();
	r->spec = dump->data;
	r->revision = fn->revision + 1;
	r->run_revision = r->revision;
	return rc;
}

/* Sends `q` (again): its object to etcd first, then its change. Returns
 * SCHED_CODE_LATER, or 0 / -errno when it ends here. */
static int req_run(struct code_req *q)
{
	struct sched *s = q->s;
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = req_fn(q);
	struct code_fn *f = fn ? cfn_get(s, fn) : NULL;
	struct sched_code_node *dir = sched_code_find(s, q->dir_id), *n = NULL;
	struct sched_code_node *newdir = sched_code_find(s, q->newdir_id);
	struct rt_buf path = { 0 }, to = { 0 }, dump = { 0 };
	struct req_ops ops = { 0 };
	struct store_code_op *op;
	struct store_row row;
	const char *obj = NULL;
	int rc = 0, with_row = 0;

	if (fn == NULL || f == NULL)
		return -ENOENT;
	if (q->kind == REQ_COMMIT)
		obj = q->hash;
	else if (q->kind == REQ_PUBLISH && q->hash[0])
		obj = q->hash;
	else if (q->kind == REQ_CREATE && S_ISREG(q->mode))
		obj = c->empty;
	if (obj != NULL && !q->uploaded) {
		rc = sched__code_obj_upload(s, obj, on_req_uploaded, q);
		if (rc != 0)
			return rc;
		q->uploaded = 1;
	}
	switch (q->kind) {
	case REQ_CREATE:
		if (dir == NULL || !is_dir(dir)) {
			rc = -ENOENT;
			break;
		}
		if (sched_code_child(dir, q->name) != NULL) {
			rc = -EEXIST;
			break;
		}
		rc = sched__code_child_path(dir, q->name, &path);
		op = rc == 0 ? ops_add(&ops, fn, STORE_CODE_PUT, path.data)
			     : NULL;
		if (op == NULL) {
			rc = rc < 0 ? rc : -ENOMEM;
			break;
		}
		op->file.mode = q->mode;
		op->file.hash = S_ISREG(q->mode) ? c->empty : "";
		op->file.mtime_ms = rt_now_ms();
		break;
	case REQ_REMOVE:
		n = dir ? sched_code_child(dir, q->name) : NULL;
		if (n == NULL)
			rc = -ENOENT;
		else if (q->is_dir && !is_dir(n))
			rc = -ENOTDIR;
		else if (!q->is_dir && is_dir(n))
			rc = -EISDIR;
		else if (is_dir(n) && n->children.count > 0)
			rc = -ENOTEMPTY;
		if (rc == 0)
			rc = sched__code_node_path(n, &path);
		op = rc == 0 ? ops_add(&ops, fn, STORE_CODE_DEL, path.data)
			     : NULL;
		if (rc == 0 && op == NULL)
			rc = -ENOMEM;
		if (rc == 0)
			op->empty_dir = is_dir(n);
		break;
	case REQ_RENAME:
		n = dir ? sched_code_child(dir, q->name) : NULL;
		if (n == NULL || newdir == NULL) {
			rc = -ENOENT;
			break;
		}
		if (sched_code_child(newdir, q->newname) == n)
			break; /* already */
		rc = sched__code_node_path(n, &path);
		if (rc == 0)
			rc = sched__code_child_path(newdir, q->newname, &to);
		if (rc == 0)
			rc = ops_move(&ops, n, path.data, to.data, 1, 0);
		if (rc == 0)
			rc = ops_move(&ops, n, path.data, to.data, 1, 1);
		break;
	case REQ_PUT:
		n = sched_code_find(s, q->node_id);
		if (n == NULL || n->parent == NULL) {
			rc = -ENOENT;
			break;
		}
		rc = sched__code_node_path(n, &path);
		if (rc == 0)
			rc = ops_put(&ops, n, path.data, 0);
		if (rc == 0) {
			ops.v[0].file.mode = q->mode;
			ops.v[0].file.mtime_ms = q->mtime_ms;
		}
		break;
	case REQ_COMMIT:
		n = sched_code_find(s, q->node_id);
		if (n == NULL) {
			rc = -ENOENT;
			break;
		}
		rc = sched__code_node_path(n, &path);
		if (rc == 0)
			rc = ops_put(&ops, n, path.data, 0);
		if (rc == 0) {
			ops.v[0].file.size = q->size;
			ops.v[0].file.hash = q->hash;
			ops.v[0].file.mtime_ms = rt_now_ms();
		}
		break;
	case REQ_PUBLISH:
		op = ops_add(&ops, fn,
			     q->hash[0] ? STORE_CODE_REV_PUT
					: STORE_CODE_REV_DEL,
			     "-");
		if (op == NULL) {
			rc = -ENOMEM;
			break;
		}
		op->rev.hash = q->hash;
		op->rev.bytes = q->size;
		op->rev.files = q->files;
		rc = publish_row(fn, &dump, &row);
		with_row = 1;
		break;
	}
	if (rc == 0 && ops.n > 0) {
		rc = store_code_submit(s->store, with_row ? &row : NULL, ops.v,
				       ops.n, on_req_stored, q);
		if (rc == STORE_LATER)
			rc = SCHED_CODE_LATER;
		else if (rc == 0)
			rc = -EIO; /* a shared store answers later */
		else
			rt_log(RT_LOG_ERROR, "code: %s: not sent to etcd: %s",
			       fn->obj.name, strerror(-rc));
	}
	ops_free(&ops);
	rt_buf_free(&path);
	rt_buf_free(&to);
	rt_buf_free(&dump);
	return rc;
}

/* What follows a change that ended (`err`), before its caller hears. */
static void req_after(struct code_req *q, int err)
{
	struct sched *s = q->s;
	struct sched_function *fn = s->code ? req_fn(q) : NULL;
	struct code_fn *f = fn ? cfn_get(s, fn) : NULL;
	struct sched_code_node *n;
	const char *ep = NULL, *why = NULL;
	struct rt_buf reason = { 0 }, file = { 0 };
	int64_t rev;
	int64_t since;
	int watching;

	if (q->kind == REQ_COMMIT && s->code != NULL)
		sched__code_ref_drop(
			st_of(s),
			q->hash); /* its pin (sched__code_cl_commit) */
	if (f == NULL)
		return;
	if (q->kind == REQ_PUBLISH) {
		f->publishing = 0;
		if (err < 0) {
			f->dirty = 1; /* again after the quiet time */
			f->last_mono = rt_mono_ms();
			if (st_of(s)->started)
				uv_timer_start(&st_of(s)->timer,
					       sched__code_on_timer,
					       SCHED_CODE_QUIET_MS, 0);
		}
	} else if (err == 0) {
		n = sched_code_find(s, q->node_id);
		if (q->kind == REQ_COMMIT && n != NULL && n->stage != NULL &&
		    n->stage->gen == q->gen)
			n->stage->dirty = 0;
		sched__code_changed(s, f);
	}
	if (err != -EIO)
		return;
	store_shared_state(s->store, &rev, &watching, &since, &ep, &why);
	n = sched_code_find(s, q->node_id ? q->node_id : q->dir_id);
	rt_buf_puts(&file, "code/");
	if (n != NULL) {
		struct rt_buf p = { 0 };

		if (q->name != NULL && q->kind != REQ_PUT &&
		    q->kind != REQ_COMMIT)
			sched__code_child_path(n, q->name, &p);
		else
			sched__code_node_path(n, &p);
		rt_buf_puts(&file, p.data ? p.data : "");
		rt_buf_free(&p);
	}
	rt_buf_printf(&reason, "%s: not stored: etcd cannot be reached%s%s",
		      q->kind == REQ_PUBLISH ? "code" : file.data,
		      why ? ": " : "", why ? why : "");
	sched__reject(s, fn, q->kind == REQ_PUBLISH ? "code" : file.data, EIO,
		      reason.data ? reason.data : "etcd cannot be reached");
	rt_buf_free(&reason);
	rt_buf_free(&file);
}

static void req_finish(struct code_req *q, int err)
{
	req_after(q, err);
	if (q->done != NULL)
		q->done(q->arg, err);
	req_free(q);
}

static void on_req_stored(void *arg, int err)
{
	struct code_req *q = arg;
	int rc = err;

	/* Lost a race: the tree now has the winner's change, and the
	 * change is checked against it again, for SCHED_OP_DEADLINE_MS from
	 * the first loss (an upload before it may take long). */
	if (rc == -EAGAIN && q->until == 0)
		q->until = rt_mono_ms() + SCHED_OP_DEADLINE_MS;
	while (rc == -EAGAIN && q->s->code != NULL &&
	       ++q->tries < SCHED_OP_TRIES && rt_mono_ms() < q->until) {
		rc = req_run(q);
		if (rc == SCHED_CODE_LATER)
			return;
	}
	req_finish(q, rc == -ECANCELED ? -EIO : rc);
}

static void on_req_uploaded(void *arg, int err, const char *hash)
{
	struct code_req *q = arg;
	int rc = err;

	(void)hash;
	if (rc == 0) {
		q->uploaded = 1;
		rc = req_run(q);
		if (rc == SCHED_CODE_LATER)
			return;
	}
	req_finish(q, rc == -EBADMSG || rc == -ECANCELED ? -EIO : rc);
}

/* Runs a new request: SCHED_CODE_LATER, or what it ended with at once
 * (then `done` is not called). */
int sched__code_req_start(struct code_req *q)
{
	int rc = req_run(q);

	if (rc == SCHED_CODE_LATER)
		return rc;
	req_after(q, rc);
	req_free(q);
	return rc;
}

int sched__code_req_named(struct code_req *q, const char *name,
			  const char *newname)
{
	if ((name != NULL && (q->name = strdup(name)) == NULL) ||
	    (newname != NULL && (q->newname = strdup(newname)) == NULL)) {
		req_free(q);
		return -ENOMEM;
	}
	return 0;
}

/*
 * code.c - a function's code/ on the controller (code.h): the tree in
 * memory and in SQLite, contents as objects named by their SHA-256 under
 * DATA/code/objects/ab/cdef..., writes staged in DATA/code/tmp until a
 * close, revisions made a quiet time after a burst of changes, limits,
 * garbage collection, and the chunks a worker downloads.
 *
 * Durability: a change of the tree is a derived transaction (it survives
 * kill -9); a new revision fsyncs the objects written since the last one
 * and its manifest, then commits the revision durably (which syncs the
 * tree's rows too). Objects are only removed after that commit, once no
 * tree node, no revision and no send references them.
 *
 * The module is cut into files of one concern, which share
 * code_internal.h (its state, the records and the helpers below):
 *   code.c                  this overview and the shared helpers: paths,
 *                           object references, the rows of the tree
 *   code_nodes.c            the tree: nodes, create, remove, rename,
 *                           chmod, touch, limits
 *   code_contents.c         contents: staged writes, reads, commits
 *   code_revisions.c        revisions (manifests), the timer, garbage
 *   code_load.c             loading at open, start, stop, close, drop
 *   code_send.c             sending revisions to workers in chunks
 *   code_local.c            the backend of a controller alone: its table
 *                           (struct sched_code_backend) and its small
 *                           differences
 *
 * What differs on a cluster (the tree and the objects in etcd, changes
 * that come back through its watch) is the other backend, chosen once
 * at open: sched/cluster/code/ (code_cluster.h says how it is cut).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"

/* ============================================================ helpers */

/* The path of `n` below code/ ("" for code/ itself). */
int sched__code_node_path(const struct sched_code_node *n, struct rt_buf *out)
{
	const struct sched_code_node *v[RT_CODE_PATH_MAX / 2 + 2];
	int k = 0, rc = 0;

	rt_buf_reset(out);
	rc = rt_buf_puts(out, "");
	for (; n != NULL && n->parent != NULL &&
	       k < (int)(sizeof(v) / sizeof(v[0]));
	     n = n->parent)
		v[k++] = n;
	while (rc == 0 && k-- > 0)
		rc = rt_buf_printf(out, "%s%s", out->len ? "/" : "",
				   v[k]->name);
	return rc;
}

/* The path `name` would have in `dir`. */
int sched__code_child_path(const struct sched_code_node *dir, const char *name,
			   struct rt_buf *out)
{
	int rc = sched__code_node_path(dir, out);

	if (rc == 0)
		rc = rt_buf_printf(out, "%s%s", out->len ? "/" : "", name);
	return rc;
}

void sched__code_ref_add(struct sched_code_state *c, const char *h)
{
	if (rt_map_ref(&c->refs, h) < 0) {
		/* A count lost: nothing is collected until the next start,
		 * which counts afresh, lest an object in use go. */
		c->refs_lost = 1;
		rt_log(RT_LOG_ERROR,
		       "code: out of memory counting %.12s; objects are kept "
		       "until the next start",
		       h);
	}
}

void sched__code_ref_drop(struct sched_code_state *c, const char *h)
{
	if (rt_map_unref(&c->refs, h) > 0 || c->refs_lost)
		return;
	if (c->ngarbage == c->capgarbage) {
		size_t cap = c->capgarbage ? c->capgarbage * 2 : 64;
		char(*g)[65] = realloc(c->garbage, cap * sizeof(*g));

		if (g == NULL)
			return; /* swept at the next start */
		c->garbage = g;
		c->capgarbage = cap;
	}
	memcpy(c->garbage[c->ngarbage++], h, 65);
}

/* Prepares statement `i` and binds the function's key. */
/* Writes the row of node `n` (at `path`). */
int sched__code_row_put(struct sched *s, const struct sched_code_node *n,
			const char *path)
{
	const char *k[3];
	struct store_code_file r;

	fn_key(n->fn, k);
	r.tenant = k[0];
	r.ns = k[1];
	r.fn = k[2];
	r.path = path;
	r.mode = n->mode;
	r.size = n->size;
	r.hash = n->hash;
	r.mtime_ms = n->mtime_ms;
	return store_code_file_put(s->store, &r);
}

/* Deletes the row at `path` (a file or an empty directory). */
int sched__code_row_del(struct sched *s, const struct sched_function *fn,
			const char *path)
{
	const char *k[3];

	fn_key(fn, k);
	return store_code_file_delete(s->store, k[0], k[1], k[2], path);
}

/* Runs `fn(arg)`, which changes rows, as one derived transaction. */
int sched__code_derived(struct sched *s, int rc)
{
	if (rc == 0)
		return store_commit(s->store);
	store_rollback(s->store);
	return rc;
}

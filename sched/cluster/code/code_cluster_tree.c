/*
 * code_cluster_tree.c - code/ on a cluster: the tree's changes going to
 * etcd (the backend's create, remove, rename, put, commit and publish,
 * which the code module's front calls through sched_code_cluster) and
 * coming back from the store's watch, this controller's as the others'.
 * Part of the code module's cluster backend (code_cluster.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../runtime/base/code.h"
#include "code_cluster.h"

/* ------------------------------------------------------ changes to etcd */

int sched__code_cl_create(struct sched *s, struct sched_code_node *dir,
			  const char *name, const char *path, uint32_t mode,
			  struct sched_code_node **out, sched_code_done_fn done,
			  void *arg)
{
	struct code_req *q;
	int rc = S_ISREG(mode) ? sched__code_object_put(
					 st_of(s), st_of(s)->empty, -1, NULL, 0)
			       : 0;

	(void)path; /* found again at each try */
	(void)out;  /* the watch makes the node */
	if (rc < 0)
		return rc;
	q = sched__code_req_new(s, REQ_CREATE, dir->fn, done, arg);
	if (q == NULL || sched__code_req_named(q, name, NULL) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->mode = (S_ISDIR(mode) ? S_IFDIR : S_IFREG) | (mode & 0777);
	return sched__code_req_start(q);
}

int sched__code_cl_remove(struct sched *s, struct sched_code_node *dir,
			  const char *name, int want_dir,
			  sched_code_done_fn done, void *arg)
{
	struct code_req *q = sched__code_req_new(s, REQ_REMOVE, dir->fn, done,
						 arg);

	if (q == NULL || sched__code_req_named(q, name, NULL) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->is_dir = want_dir;
	return sched__code_req_start(q);
}

int sched__code_cl_rename(struct sched *s, struct sched_code_node *dir,
			  const char *name, struct sched_code_node *newdir,
			  const char *newname, unsigned flags, const char *from,
			  const char *to, sched_code_done_fn done, void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_req *q;

	(void)from; /* found again at each try */
	(void)to;
	if (n == NULL)
		return -ENOENT;
	if (sched__code_subtree_size(n) > SCHED_CODE_RENAME_MAX)
		return -EXDEV; /* mv copies, then removes */
	q = sched__code_req_new(s, REQ_RENAME, dir->fn, done, arg);
	if (q == NULL || sched__code_req_named(q, name, newname) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->newdir_id = newdir->id;
	q->flags = flags;
	return sched__code_req_start(q);
}

int sched__code_cl_put(struct sched *s, struct sched_code_node *n,
		       uint32_t mode, int64_t mtime_ms, sched_code_done_fn done,
		       void *arg)
{
	struct code_req *q = sched__code_req_new(s, REQ_PUT, n->fn, done, arg);

	if (q == NULL)
		return -ENOMEM;
	q->node_id = n->id;
	q->mode = mode;
	q->mtime_ms = mtime_ms;
	return sched__code_req_start(q);
}

int sched__code_cl_commit(struct sched *s, struct sched_code_node *n,
			  sched_code_done_fn done, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct sched_code_stage *g = n->stage;
	struct code_req *q;
	char h[65];
	int rc = sched__code_stage_hash(g, n->size, h);

	if (rc == 0 && strcmp(h, n->hash) == 0 && n->size == n->stored_size) {
		g->dirty = 0; /* the same bytes again */
		return 0;
	}
	if (rc == 0)
		rc = sched__code_object_put(c, h, g->fd, NULL, 0);
	if (rc < 0)
		return rc;
	q = sched__code_req_new(s, REQ_COMMIT, n->fn, done, arg);
	if (q == NULL)
		return -ENOMEM;
	q->node_id = n->id;
	memcpy(q->hash, h, 65);
	q->size = n->size;
	q->gen = g->gen;
	sched__code_ref_add(c, h); /* kept until etcd has it (req_after) */
	return sched__code_req_start(q);
}

/* Makes `f`'s tree, whose manifest is `text` (`hash`, "" for none), its
 * revision in etcd: the manifest goes up, then P/cr and the function's
 * next revision in one txn. The watch then brings both to every
 * controller (sched__code_on_remote, the store's listener). While one is
 * under way, the next waits for its end (f->dirty). */
int sched__code_cl_publish(struct sched *s, struct code_fn *f, const char *hash,
			   const struct rt_buf *text, char (**objs)[65],
			   size_t nobjs, uint64_t bytes, int files)
{
	struct sched_code_state *c = st_of(s);
	struct code_req *q;
	int rc = 0;

	(void)objs; /* the revision's objects come back with it */
	(void)nobjs;
	if (f->publishing) {
		f->dirty = 1; /* once the one under way has ended */
		f->last_mono = rt_mono_ms();
		return 0;
	}
	if (hash[0])
		rc = sched__code_object_put(c, hash, -1, text->data, text->len);
	if (rc < 0)
		return rc;
	q = sched__code_req_new(s, REQ_PUBLISH, f->fn, NULL, NULL);
	if (q == NULL)
		return -ENOMEM;
	memcpy(q->hash, hash, 65);
	q->size = bytes;
	q->files = files;
	f->publishing = 1;
	rc = sched__code_req_start(q);
	return rc == SCHED_CODE_LATER ? 0 : rc;
}

/* ------------------------------------------------------ changes from etcd */

/* Forgets node `n` of `f` and everything below it. */
static void forget(struct sched *s, struct code_fn *f,
		   struct sched_code_node *n)
{
	void **v;
	size_t i, k;

	v = rt_map_values(&n->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		forget(s, f, v[i]);
	free(v);
	if (n->stage != NULL)
		f->writers -= n->stage->writers;
	f->entries--;
	f->bytes -= is_dir(n) ? 0 : n->size;
	sched__code_bytes_sync(f);
	rt_map_del(&n->parent->children, n->name);
	n->parent->mtime_ms = rt_now_ms();
	sched__code_node_free(s, n);
}

/* Entry `r` of a function's code/ came, changed or went in etcd. */
static void remote_file(struct sched *s, const struct store_code_file *r,
			int deleted)
{
	struct sched_function *fn = sched__code_fn_named(s, r->tenant, r->ns,
							 r->fn);
	struct code_fn *f = fn ? sched__code_cfn_make(s, fn) : NULL;
	struct sched_code_node *n = f ? sched__code_node_at(f, r->path) : NULL;

	if (f == NULL)
		return;
	if (n == f->root)
		return;
	if (n != NULL && (deleted || is_dir(n) != S_ISDIR(r->mode))) {
		forget(s, f, n);
		n = NULL;
	}
	if (deleted)
		return;
	if (n == NULL) {
		sched__code_load_file(r, s);
		n = sched__code_node_at(f, r->path);
		if (n != NULL && n->parent != NULL)
			n->parent->mtime_ms = rt_now_ms();
		return;
	}
	n->mode = r->mode;
	n->mtime_ms = r->mtime_ms;
	if (is_dir(n))
		return;
	if (strcmp(n->hash, r->hash) != 0 && rt_code_hash_valid(r->hash)) {
		sched__code_ref_add(st_of(s), r->hash);
		if (n->hash[0])
			sched__code_ref_drop(st_of(s), n->hash);
		snprintf(n->hash, sizeof(n->hash), "%s", r->hash);
	}
	if (n->stage == NULL) {
		f->bytes = f->bytes - n->size + r->size;
		sched__code_bytes_sync(f);
		n->size = r->size;
	}
	n->stored_size = r->size;
}

/* A function's revision of code came, changed or went in etcd. */
static void remote_revision(struct sched *s,
			    const struct store_code_revision *r, int deleted)
{
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = sched__code_fn_named(s, r->tenant, r->ns,
							 r->fn);
	struct code_fn *f = fn ? sched__code_cfn_make(s, fn) : NULL;
	const char *hash = deleted ? "" : r->hash;
	size_t i;

	if (f == NULL || (hash[0] && !rt_code_hash_valid(hash)))
		return;
	if (strcmp(f->pub, hash) != 0) {
		for (i = 0; i < f->npub; i++)
			sched__code_ref_drop(c, f->pub_objs[i]);
		free(f->pub_objs);
		f->pub_objs = NULL;
		f->npub = 0;
		/* The manifest alone: the objects it names are fetched as
		 * workers ask for them. */
		if (hash[0] && (f->pub_objs = calloc(1, 65)) != NULL) {
			memcpy(f->pub_objs[0], hash, 65);
			f->npub = 1;
			sched__code_ref_add(c, hash);
		}
	}
	snprintf(f->pub, sizeof(f->pub), "%s", hash);
	f->pub_bytes = deleted ? 0 : r->bytes;
	f->pub_files = deleted ? 0 : r->files;
	if (sched_cluster_publishes(s) && hash[0]) {
		/* The function's next revision follows in the same txn:
		 * workers start downloading before their starts. */
		sched__code_prefetch(s, fn, hash, f->pub_bytes);
		sched__code_obj_fetch(s, hash, NULL, NULL);
	}
}

/* The store's code listener. */
void sched__code_on_remote(void *arg, const struct etcd_keys_rec *r,
			   int deleted)
{
	struct sched *s = arg;

	if (s->code == NULL)
		return;
	if (r->kind == ETCD_KEYS_CODE_FILE)
		remote_file(s, &r->file, deleted);
	else if (r->kind == ETCD_KEYS_CODE_REVISION)
		remote_revision(s, &r->code, deleted);
}

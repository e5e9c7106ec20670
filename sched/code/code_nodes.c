/*
 * code_nodes.c - the tree of a function's code/ (code.h): its nodes,
 * create, remove, rename, chmod, touch, and the files and bytes limits:
 * what is common, then the backend's table (code_internal.h); the local
 * backend's changes are here, a cluster's in sched/cluster/code/. Part
 * of the code module (code.c says how it is cut; code_internal.h is its
 * shared part).
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"
#include "../model/quota.h"

/* ============================================================== nodes */

struct sched_code_node *sched__code_node_new(struct sched *s,
					     struct sched_function *fn,
					     struct sched_code_node *parent,
					     const char *name, uint32_t mode)
{
	struct sched_code_node *n = calloc(1, sizeof(*n));

	if (n == NULL || (n->name = strdup(name)) == NULL) {
		free(n);
		return NULL;
	}
	n->id = s->next_id++;
	n->fn = fn;
	n->parent = parent;
	n->mode = mode;
	n->mtime_ms = rt_now_ms();
	if (rt_idmap_put(&st_of(s)->nodes, n->id, n) < 0 ||
	    (parent != NULL && rt_map_put(&parent->children, name, n) < 0)) {
		rt_idmap_del(&st_of(s)->nodes, n->id);
		free(n->name);
		free(n);
		return NULL;
	}
	return n;
}

void sched__code_stage_free(struct sched_code_stage *g)
{
	if (g == NULL)
		return;
	if (g->fd >= 0)
		close(g->fd);
	if (g->path != NULL)
		unlink(g->path);
	free(g->path);
	if (g->seq != NULL)
		EVP_MD_CTX_free(g->seq);
	free(g);
}

/* Frees `n` and what it holds, dropping the references of its files. */
void sched__code_node_free(struct sched *s, struct sched_code_node *n)
{
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, k;

	v = rt_map_values(&n->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		sched__code_node_free(s, v[i]);
	free(v);
	rt_map_free(&n->children);
	if (!is_dir(n) && n->hash[0])
		sched__code_ref_drop(c, n->hash);
	sched__code_stage_free(n->stage);
	rt_idmap_del(&c->nodes, n->id);
	free(n->name);
	free(n);
}

struct code_fn *sched__code_cfn_make(struct sched *s, struct sched_function *fn)
{
	struct sched_code_state *c = st_of(s);
	struct code_fn *f = cfn_get(s, fn);

	if (f != NULL)
		return f;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->fn = fn;
	f->root = sched__code_node_new(s, fn, NULL, "", S_IFDIR | 0755);
	if (f->root == NULL || rt_idmap_put(&c->fns, fn->obj.id, f) < 0) {
		if (f->root != NULL)
			sched__code_node_free(s, f->root);
		free(f);
		return NULL;
	}
	f->root->mtime_ms = fn->obj.created_ms;
	return f;
}

struct sched_code_node *sched_code_root(struct sched *s,
					struct sched_function *fn)
{
	struct code_fn *f = sched__code_cfn_make(s, fn);

	return f ? f->root : NULL;
}

struct sched_code_node *sched_code_find(struct sched *s, uint64_t id)
{
	return id ? rt_idmap_get(&st_of(s)->nodes, id) : NULL;
}

struct sched_code_node *sched_code_child(const struct sched_code_node *dir,
					 const char *name)
{
	return is_dir(dir) ? rt_map_get(&dir->children, name) : NULL;
}

void sched_code_usage(struct sched *s, const struct sched_function *fn,
		      int *entries, uint64_t *bytes)
{
	struct code_fn *f = cfn_get(s, fn);

	*entries = f ? f->entries : 0;
	*bytes = f ? f->bytes : 0;
}

/* Brings the code bytes counted in the tenant's use (quota.h) to
 * f->bytes. */
void sched__code_bytes_sync(struct code_fn *f)
{
	if (f->bytes != f->counted) {
		sched__quota_code_add(f->fn, (int64_t)(f->bytes - f->counted));
		f->counted = f->bytes;
	}
}

/* The tree of `fn` changed: a revision follows the quiet time. */
void sched__code_changed(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	int64_t now = rt_mono_ms();

	if (!f->dirty)
		f->first_mono = now;
	f->dirty = 1;
	f->last_mono = now;
	f->fn->obj.updated_ms = rt_now_ms();
	if (c->started)
		uv_timer_start(&c->timer, sched__code_on_timer,
			       SCHED_CODE_QUIET_MS, 0);
}

/* Records a refusal in the function's error file and the journal. */
static void refuse(struct sched *s, const struct sched_code_node *dir,
		   const char *name, int err, const char *why)
{
	struct rt_buf file = { 0 }, reason = { 0 };

	rt_buf_puts(&file, "code/");
	if (dir != NULL) {
		struct rt_buf p = { 0 };

		if (name != NULL)
			sched__code_child_path(dir, name, &p);
		else
			sched__code_node_path(dir, &p);
		rt_buf_puts(&file, p.data ? p.data : "");
		rt_buf_free(&p);
	}
	rt_buf_printf(&reason, "%s: %s", file.data, why);
	sched__reject(s, dir ? dir->fn : NULL, file.data, err, reason.data);
	rt_buf_free(&file);
	rt_buf_free(&reason);
}

static int over_files(struct sched *s, const struct sched_code_node *dir,
		      const char *name, struct code_fn *f)
{
	char why[160];

	if (f->entries < SCHED_CODE_MAX_FILES)
		return 0;
	snprintf(why, sizeof(why),
		 "over the limit of %d files and directories of a function's "
		 "code",
		 SCHED_CODE_MAX_FILES);
	refuse(s, dir, name, EDQUOT, why);
	return -EDQUOT;
}

int sched__code_over_bytes(struct sched *s, const struct sched_code_node *n,
			   struct code_fn *f, uint64_t size)
{
	struct rt_buf tq = { 0 };
	char why[160];

	if (size > n->size && size <= SCHED_CODE_MAX_BYTES &&
	    f->bytes - n->size <= SCHED_CODE_MAX_BYTES - size &&
	    sched__quota_code(s, f->fn, size - n->size, &tq) < 0) {
		refuse(s, n, NULL, EDQUOT, tq.data);
		rt_buf_free(&tq);
		return -EDQUOT;
	}
	if (size <= n->size ||
	    (size <= SCHED_CODE_MAX_BYTES &&
	     f->bytes - n->size <= SCHED_CODE_MAX_BYTES - size))
		return 0;
	snprintf(why, sizeof(why),
		 "over the limit of %llu MiB (%llu bytes) of a function's code",
		 (unsigned long long)(SCHED_CODE_MAX_BYTES >> 20),
		 (unsigned long long)SCHED_CODE_MAX_BYTES);
	refuse(s, n, NULL, EDQUOT, why);
	return -EDQUOT;
}

int sched_code_create(struct sched *s, struct sched_code_node *dir,
		      const char *name, uint32_t mode,
		      struct sched_code_node **out, sched_code_done_fn done,
		      void *arg)
{
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf path = { 0 };
	int rc;

	*out = NULL;
	if (f == NULL || !is_dir(dir))
		return -ENOTDIR;
	if (!S_ISREG(mode) && !S_ISDIR(mode)) {
		refuse(s, dir, name, EPERM,
		       "only files and directories may be made in code/");
		return -EPERM;
	}
	if (sched_code_child(dir, name) != NULL)
		return -EEXIST;
	rc = sched__code_child_path(dir, name, &path);
	if (rc == 0 && (!rt_code_name_valid(name, strlen(name)) ||
			!rt_code_path_valid(path.data))) {
		refuse(s, dir, name, EINVAL,
		       "names are 1 to 255 bytes without '/' or control "
		       "characters, not . or .., and paths at most 1024 bytes");
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = over_files(s, dir, name, f);
	if (rc == 0)
		rc = be_of(s)->create(s, dir, name, path.data, mode, out, done,
				      arg);
	rt_buf_free(&path);
	return rc;
}

/* The local backend's create (struct sched_code_backend): the node, and
 * its row in one derived transaction. */
int sched__code_local_create(struct sched *s, struct sched_code_node *dir,
			     const char *name, const char *path, uint32_t mode,
			     struct sched_code_node **out,
			     sched_code_done_fn done, void *arg)
{
	struct code_fn *f = cfn_get(s, dir->fn);
	struct sched_code_node *n;
	int rc;

	(void)done;
	(void)arg;
	n = sched__code_node_new(s, dir->fn, dir, name,
				 (S_ISDIR(mode) ? S_IFDIR : S_IFREG) |
					 (mode & 0777));
	if (n == NULL)
		return -ENOMEM;
	if (!is_dir(n))
		memcpy(n->hash, st_of(s)->empty, 65);
	rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = sched__code_derived(s, sched__code_row_put(s, n, path));
	if (rc < 0) {
		rt_map_del(&dir->children, name);
		n->hash[0] = '\0';
		sched__code_node_free(s, n);
		return rc;
	}
	if (!is_dir(n))
		sched__code_ref_add(st_of(s), n->hash);
	f->entries++;
	dir->mtime_ms = n->mtime_ms;
	sched__code_changed(s, f);
	*out = n;
	return 0;
}

int sched_code_remove(struct sched *s, struct sched_code_node *dir,
		      const char *name, int want_dir, sched_code_done_fn done,
		      void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_fn *f = cfn_get(s, dir->fn);

	if (n == NULL || f == NULL)
		return -ENOENT;
	if (want_dir && !is_dir(n))
		return -ENOTDIR;
	if (!want_dir && is_dir(n))
		return -EISDIR;
	if (is_dir(n) && n->children.count > 0)
		return -ENOTEMPTY;
	return be_of(s)->remove(s, dir, name, want_dir, done, arg);
}

/* The local backend's remove: the row, then the node. */
int sched__code_local_remove(struct sched *s, struct sched_code_node *dir,
			     const char *name, int want_dir,
			     sched_code_done_fn done, void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf path = { 0 };
	int rc;

	(void)want_dir;
	(void)done;
	(void)arg;
	rc = sched__code_node_path(n, &path);
	if (rc == 0)
		rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = sched__code_derived(
			s, sched__code_row_del(s, dir->fn, path.data));
	rt_buf_free(&path);
	if (rc < 0)
		return rc;
	if (n->stage != NULL)
		f->writers -= n->stage->writers;
	rt_map_del(&dir->children, name);
	f->entries--;
	f->bytes -= is_dir(n) ? 0 : n->size;
	sched__code_bytes_sync(f);
	sched__code_node_free(s, n);
	dir->mtime_ms = rt_now_ms();
	sched__code_changed(s, f);
	return 0;
}

/* Whether every path below `n` stays within RT_CODE_PATH_MAX when the
 * path of `n` grows by `more` bytes. */
static int tree_fits(const struct sched_code_node *n, size_t more)
{
	struct rt_buf p = { 0 };
	void **v;
	size_t i, k;
	int ok = 1;

	if (sched__code_node_path(n, &p) == 0 &&
	    p.len + more > RT_CODE_PATH_MAX)
		ok = 0;
	rt_buf_free(&p);
	v = rt_map_values(&n->children, &k);
	for (i = 0; ok && v != NULL && i < k; i++)
		ok = tree_fits(v[i], more);
	free(v);
	return ok;
}

int sched_code_rename(struct sched *s, struct sched_code_node *dir,
		      const char *name, struct sched_code_node *newdir,
		      const char *newname, unsigned flags,
		      sched_code_done_fn done, void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name), *old, *up;
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf from = { 0 }, to = { 0 };
	int rc;

	if (n == NULL || f == NULL)
		return -ENOENT;
	if (newdir->fn != dir->fn)
		return -EXDEV;
	if (flags & ~1u) /* RENAME_NOREPLACE only */
		return -EINVAL;
	if (!is_dir(newdir))
		return -ENOTDIR;
	for (up = newdir; up != NULL; up = up->parent)
		if (up == n)
			return -EINVAL; /* into itself */
	old = sched_code_child(newdir, newname);
	if (old == n)
		return 0;
	if (old != NULL && (flags & 1u))
		return -EEXIST;
	if (old != NULL && is_dir(old) && !is_dir(n))
		return -EISDIR;
	if (old != NULL && !is_dir(old) && is_dir(n))
		return -ENOTDIR;
	if (old != NULL && is_dir(old) && old->children.count > 0)
		return -ENOTEMPTY;
	rc = sched__code_node_path(n, &from);
	if (rc == 0)
		rc = sched__code_child_path(newdir, newname, &to);
	if (rc == 0 && (!rt_code_name_valid(newname, strlen(newname)) ||
			!rt_code_path_valid(to.data))) {
		refuse(s, newdir, newname, EINVAL,
		       "names are 1 to 255 bytes without '/' or control "
		       "characters, not . or .., and paths at most 1024 bytes");
		rc = -EINVAL;
	}
	/* Paths below a directory that moves grow with it. */
	if (rc == 0 && is_dir(n) && to.len > from.len &&
	    !tree_fits(n, to.len - from.len)) {
		refuse(s, newdir, newname, ENAMETOOLONG,
		       "a path below it would be longer than 1024 bytes");
		rc = -ENAMETOOLONG;
	}
	if (rc == 0)
		rc = be_of(s)->rename(s, dir, name, newdir, newname, flags,
				      from.data, to.data, done, arg);
	rt_buf_free(&from);
	rt_buf_free(&to);
	return rc;
}

/* The local backend's rename: the rows in one derived transaction, then
 * the nodes. */
int sched__code_local_rename(struct sched *s, struct sched_code_node *dir,
			     const char *name, struct sched_code_node *newdir,
			     const char *newname, unsigned flags,
			     const char *from, const char *to,
			     sched_code_done_fn done, void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct sched_code_node *old = sched_code_child(newdir, newname);
	struct code_fn *f = cfn_get(s, dir->fn);
	const char *k[3];
	int rc;

	(void)flags;
	(void)done;
	(void)arg;
	rc = store_begin_derived(s->store);
	if (rc < 0)
		return rc;
	if (old != NULL)
		rc = sched__code_row_del(s, dir->fn, to);
	fn_key(dir->fn, k);
	if (rc == 0)
		rc = store_code_file_rename(s->store, k[0], k[1], k[2], from,
					    to);
	rc = sched__code_derived(s, rc);
	if (rc < 0)
		return rc;
	if (old != NULL) {
		rt_map_del(&newdir->children, newname);
		if (old->stage != NULL)
			f->writers -= old->stage->writers;
		f->entries--;
		f->bytes -= is_dir(old) ? 0 : old->size;
		sched__code_bytes_sync(f);
		sched__code_node_free(s, old);
	}
	rt_map_del(&dir->children, name);
	free(n->name);
	n->name = strdup(newname);
	n->parent = newdir;
	if (n->name == NULL || rt_map_put(&newdir->children, newname, n) < 0) {
		/* Stored; memory follows at the next start. */
		rt_log(RT_LOG_ERROR, "code: out of memory renaming");
		return -ENOMEM;
	}
	dir->mtime_ms = newdir->mtime_ms = rt_now_ms();
	sched__code_changed(s, f);
	return 0;
}

/* Stores node `n` as it is now. */
int sched__code_store_node(struct sched *s, struct sched_code_node *n)
{
	struct rt_buf path = { 0 };
	int rc = sched__code_node_path(n, &path);

	if (rc == 0 && n->parent == NULL)
		goto out; /* code/ itself has no row */
	if (rc == 0)
		rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = sched__code_derived(s,
					 sched__code_row_put(s, n, path.data));
out:
	rt_buf_free(&path);
	return rc;
}

/* The local backend's put: the node, then its row (a new mode changes
 * the revision; an mtime alone does not). */
int sched__code_local_put(struct sched *s, struct sched_code_node *n,
			  uint32_t mode, int64_t mtime_ms,
			  sched_code_done_fn done, void *arg)
{
	uint32_t was = n->mode;
	int64_t was_ms = n->mtime_ms;
	int rc;

	(void)done;
	(void)arg;
	n->mode = mode;
	n->mtime_ms = mtime_ms;
	rc = sched__code_store_node(s, n);
	if (rc < 0) {
		n->mode = was;
		n->mtime_ms = was_ms;
		return rc;
	}
	if (mode != was)
		sched__code_changed(s, cfn_get(s, n->fn));
	return 0;
}

int sched_code_chmod(struct sched *s, struct sched_code_node *n, uint32_t perm,
		     sched_code_done_fn done, void *arg)
{
	uint32_t mode = (n->mode & S_IFMT) | (perm & 0777);

	if (n->parent == NULL)
		return 0; /* code/ itself follows the function */
	if (mode == n->mode)
		return 0;
	return be_of(s)->put(s, n, mode, n->mtime_ms, done, arg);
}

int sched_code_touch(struct sched *s, struct sched_code_node *n,
		     int64_t mtime_ms, sched_code_done_fn done, void *arg)
{
	if (n->parent == NULL || n->mtime_ms == mtime_ms) {
		n->mtime_ms = mtime_ms; /* code/ itself: in memory only */
		return 0;
	}
	return be_of(s)->put(s, n, n->mode, mtime_ms, done, arg);
}

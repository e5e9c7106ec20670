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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../runtime/code.h"
#include "code.h"
#include "code_etcd.h"
#include "common.h"
#include "conn.h"
#include "etcd_keys.h"
#include "internal.h"
#include "quota.h"
#include "reconcile.h"
#include "requests.h"
#include "write.h"

#define GARBAGE_PER_TURN 256  /* objects unlinked per timer turn */
#define CODE_GET_MAX	 1024 /* objects one code.get may ask for */
#define PUMP_RETRY_MS	 1    /* a full backlog is looked at again */
#define PUMP_SLICE_MS	 5    /* chunks sent in one go at most this long */

/* Writes of one file not yet closed. */
struct sched_code_stage {
	int fd;
	char *path;	  /* owned: DATA/code/tmp/stage-N */
	int writers;	  /* opens for writing */
	int dirty;	  /* written since the last commit */
	EVP_MD_CTX *seq;  /* hash of writes in order from 0, or NULL */
	uint64_t seq_off; /* bytes it has hashed */
	unsigned gen;	  /* changes so far: a commit under way on a cluster
			   * knows whether more came after it began */
};

/* The code of one function. */
struct code_fn {
	struct sched_function *fn;
	struct sched_code_node *root;
	int entries;	    /* files and directories below the root */
	uint64_t bytes;	    /* of the files, open writes included */
	uint64_t counted;   /* of them, counted in its tenant's use */
	int writers;	    /* opens for writing */
	int dirty;	    /* changed since the last revision was made */
	int64_t first_mono; /* of the first change since then */
	int64_t last_mono;  /* of the last one */
	char pub[65];	    /* the manifest of its revision, "" when none */
	uint64_t pub_bytes;
	int pub_files;
	char (*pub_objs)[65]; /* what the revision references (manifest
			       * included), owned */
	size_t npub;
	int publishing; /* a cluster: its revision is being written */
};

/* One object a worker asked for, for the download of `hash`. */
struct code_item {
	char hash[65];
	char object[65];
};

/* What is being sent to one worker. */
struct code_out {
	uint64_t worker_id;
	void *conn; /* the connection it was asked on */
	struct code_item *items;
	size_t head, n, cap;
	int fd; /* the object being sent, or -1 */
	uint64_t off, size;
};

struct sched_code_state {
	char *root;    /* DATA/code, owned */
	int made;      /* root, objects and tmp exist */
	char *objects; /* DATA/code/objects, owned */
	char *tmp;     /* DATA/code/tmp, owned */
	char empty[65];
	struct rt_idmap nodes;	/* id -> struct sched_code_node * */
	struct rt_idmap fns;	/* function id -> struct code_fn * */
	struct rt_map refs;	/* object -> references (uintptr_t) */
	struct rt_map unsynced; /* objects written since the last revision */
	char (*garbage)[65];	/* objects that lost their last reference */
	size_t ngarbage, capgarbage;
	struct rt_idmap outs; /* worker id -> struct code_out * */
	uv_timer_t timer;     /* revisions, garbage, the sweep */
	uv_timer_t pump;      /* sending, when a backlog was full */
	int started;
	int sweep;	    /* the next objects/ prefix to sweep; 256: done */
	uint64_t seq;	    /* names of staging and temporary files */
	int shared;	    /* a cluster: the tree and the objects are etcd's */
	struct rt_map gets; /* hash -> struct obj_xfer: fetches under way */
	struct rt_map puts; /* hash -> struct obj_xfer: uploads under way */
};

static int make_dirs(struct sched_code_state *c);
static int cl_publish(struct sched *s, struct code_fn *f, const char *hash,
		      const struct rt_buf *text, uint64_t bytes, int files);
static void on_remote(void *arg, const struct etcd_keys_rec *r, int deleted);

static struct sched_code_state *st_of(struct sched *s)
{
	return s->code;
}

/* ============================================================ helpers */

/* The tenant, namespace and name of `fn`. */
static void fn_key(const struct sched_function *fn, const char *k[3])
{
	k[2] = fn->obj.name;
	k[1] = fn->obj.parent->name;
	k[0] = fn->obj.parent->parent->name;
}

static int is_dir(const struct sched_code_node *n)
{
	return S_ISDIR(n->mode);
}

/* The path of `n` below code/ ("" for code/ itself). */
static int node_path(const struct sched_code_node *n, struct rt_buf *out)
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
static int child_path(const struct sched_code_node *dir, const char *name,
		      struct rt_buf *out)
{
	int rc = node_path(dir, out);

	if (rc == 0)
		rc = rt_buf_printf(out, "%s%s", out->len ? "/" : "", name);
	return rc;
}

static struct code_fn *cfn_get(struct sched *s, const struct sched_function *fn)
{
	return rt_idmap_get(&st_of(s)->fns, fn->obj.id);
}

static void object_path(struct sched_code_state *c, const char *h,
			struct rt_buf *out)
{
	rt_buf_reset(out);
	rt_buf_printf(out, "%s/%.2s/%s", c->objects, h, h + 2);
}

static uintptr_t refs_of(struct sched_code_state *c, const char *h)
{
	return (uintptr_t)rt_map_get(&c->refs, h);
}

static void ref_add(struct sched_code_state *c, const char *h)
{
	uintptr_t n = (uintptr_t)rt_map_del(&c->refs, h);

	if (rt_map_put(&c->refs, h, (void *)(n + 1)) < 0)
		rt_log(RT_LOG_ERROR, "code: out of memory counting %.12s", h);
}

static void ref_drop(struct sched_code_state *c, const char *h)
{
	uintptr_t n = (uintptr_t)rt_map_del(&c->refs, h);

	if (n > 1) {
		rt_map_put(&c->refs, h, (void *)(n - 1));
		return;
	}
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
static int row_put(struct sched *s, const struct sched_code_node *n,
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
static int row_del(struct sched *s, const struct sched_function *fn,
		   const char *path)
{
	const char *k[3];

	fn_key(fn, k);
	return store_code_file_delete(s->store, k[0], k[1], k[2], path);
}

/* Runs `fn(arg)`, which changes rows, as one derived transaction. */
static int derived(struct sched *s, int rc)
{
	if (rc == 0)
		return store_commit(s->store);
	store_rollback(s->store);
	return rc;
}

/* ============================================================== nodes */

static struct sched_code_node *node_new(struct sched *s,
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

static void stage_free(struct sched_code_stage *g)
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
static void node_free(struct sched *s, struct sched_code_node *n)
{
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, k;

	v = rt_map_values(&n->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		node_free(s, v[i]);
	free(v);
	rt_map_free(&n->children);
	if (!is_dir(n) && n->hash[0])
		ref_drop(c, n->hash);
	stage_free(n->stage);
	rt_idmap_del(&c->nodes, n->id);
	free(n->name);
	free(n);
}

static struct code_fn *cfn_make(struct sched *s, struct sched_function *fn)
{
	struct sched_code_state *c = st_of(s);
	struct code_fn *f = cfn_get(s, fn);

	if (f != NULL)
		return f;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->fn = fn;
	f->root = node_new(s, fn, NULL, "", S_IFDIR | 0755);
	if (f->root == NULL || rt_idmap_put(&c->fns, fn->obj.id, f) < 0) {
		if (f->root != NULL)
			node_free(s, f->root);
		free(f);
		return NULL;
	}
	f->root->mtime_ms = fn->obj.created_ms;
	return f;
}

struct sched_code_node *sched_code_root(struct sched *s,
					struct sched_function *fn)
{
	struct code_fn *f = cfn_make(s, fn);

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

static void on_timer(uv_timer_t *t);

/* Brings the code bytes counted in the tenant's use (quota.h) to
 * f->bytes. */
static void bytes_sync(struct code_fn *f)
{
	if (f->bytes != f->counted) {
		sched__quota_code_add(f->fn, (int64_t)(f->bytes - f->counted));
		f->counted = f->bytes;
	}
}

/* The tree of `fn` changed: a revision follows the quiet time. */
static void changed(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	int64_t now = rt_mono_ms();

	if (!f->dirty)
		f->first_mono = now;
	f->dirty = 1;
	f->last_mono = now;
	f->fn->obj.updated_ms = rt_now_ms();
	if (c->started)
		uv_timer_start(&c->timer, on_timer, SCHED_CODE_QUIET_MS, 0);
}

/* The changes of a cluster's code/ (below, "a cluster"). */
static int cl_create(struct sched *s, struct sched_code_node *dir,
		     const char *name, uint32_t mode, sched_code_done_fn done,
		     void *arg);
static int cl_remove(struct sched *s, struct sched_code_node *dir,
		     const char *name, int want_dir, sched_code_done_fn done,
		     void *arg);
static int cl_rename(struct sched *s, struct sched_code_node *dir,
		     const char *name, struct sched_code_node *newdir,
		     const char *newname, unsigned flags,
		     sched_code_done_fn done, void *arg);
static int cl_put(struct sched *s, struct sched_code_node *n, uint32_t mode,
		  int64_t mtime_ms, sched_code_done_fn done, void *arg);
static int cl_commit(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg);

/* Records a refusal in the function's error file and the journal. */
static void refuse(struct sched *s, const struct sched_code_node *dir,
		   const char *name, int err, const char *why)
{
	struct rt_buf file = { 0 }, reason = { 0 };

	rt_buf_puts(&file, "code/");
	if (dir != NULL) {
		struct rt_buf p = { 0 };

		if (name != NULL)
			child_path(dir, name, &p);
		else
			node_path(dir, &p);
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

static int over_bytes(struct sched *s, const struct sched_code_node *n,
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
	struct sched_code_node *n = NULL;
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
	rc = child_path(dir, name, &path);
	if (rc == 0 && (!rt_code_name_valid(name, strlen(name)) ||
			!rt_code_path_valid(path.data))) {
		refuse(s, dir, name, EINVAL,
		       "names are 1 to 255 bytes without '/' or control "
		       "characters, not . or .., and paths at most 1024 bytes");
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = over_files(s, dir, name, f);
	if (rc < 0)
		goto out;
	if (st_of(s)->shared) {
		rc = cl_create(s, dir, name, mode, done, arg);
		goto out;
	}
	n = node_new(s, dir->fn, dir, name,
		     (S_ISDIR(mode) ? S_IFDIR : S_IFREG) | (mode & 0777));
	if (n == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (!is_dir(n))
		memcpy(n->hash, st_of(s)->empty, 65);
	rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = derived(s, row_put(s, n, path.data));
	if (rc < 0) {
		rt_map_del(&dir->children, name);
		n->hash[0] = '\0';
		node_free(s, n);
		goto out;
	}
	if (!is_dir(n))
		ref_add(st_of(s), n->hash);
	f->entries++;
	dir->mtime_ms = n->mtime_ms;
	changed(s, f);
	*out = n;
out:
	rt_buf_free(&path);
	return rc;
}

int sched_code_remove(struct sched *s, struct sched_code_node *dir,
		      const char *name, int want_dir, sched_code_done_fn done,
		      void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf path = { 0 };
	int rc;

	if (n == NULL || f == NULL)
		return -ENOENT;
	if (want_dir && !is_dir(n))
		return -ENOTDIR;
	if (!want_dir && is_dir(n))
		return -EISDIR;
	if (is_dir(n) && n->children.count > 0)
		return -ENOTEMPTY;
	if (st_of(s)->shared)
		return cl_remove(s, dir, name, want_dir, done, arg);
	rc = node_path(n, &path);
	if (rc == 0)
		rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = derived(s, row_del(s, dir->fn, path.data));
	rt_buf_free(&path);
	if (rc < 0)
		return rc;
	if (n->stage != NULL)
		f->writers -= n->stage->writers;
	rt_map_del(&dir->children, name);
	f->entries--;
	f->bytes -= is_dir(n) ? 0 : n->size;
	bytes_sync(f);
	node_free(s, n);
	dir->mtime_ms = rt_now_ms();
	changed(s, f);
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

	if (node_path(n, &p) == 0 && p.len + more > RT_CODE_PATH_MAX)
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
	const char *k[3];
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
	rc = node_path(n, &from);
	if (rc == 0)
		rc = child_path(newdir, newname, &to);
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
	if (rc == 0 && st_of(s)->shared) {
		rc = cl_rename(s, dir, name, newdir, newname, flags, done, arg);
		goto out;
	}
	if (rc == 0)
		rc = store_begin_derived(s->store);
	if (rc < 0)
		goto out;
	if (old != NULL)
		rc = row_del(s, dir->fn, to.data);
	fn_key(dir->fn, k);
	if (rc == 0)
		rc = store_code_file_rename(s->store, k[0], k[1], k[2],
					    from.data, to.data);
	rc = derived(s, rc);
	if (rc < 0)
		goto out;
	if (old != NULL) {
		rt_map_del(&newdir->children, newname);
		if (old->stage != NULL)
			f->writers -= old->stage->writers;
		f->entries--;
		f->bytes -= is_dir(old) ? 0 : old->size;
		bytes_sync(f);
		node_free(s, old);
	}
	rt_map_del(&dir->children, name);
	free(n->name);
	n->name = strdup(newname);
	n->parent = newdir;
	if (n->name == NULL || rt_map_put(&newdir->children, newname, n) < 0) {
		/* Stored; memory follows at the next start. */
		rt_log(RT_LOG_ERROR, "code: out of memory renaming");
		rc = -ENOMEM;
		goto out;
	}
	dir->mtime_ms = newdir->mtime_ms = rt_now_ms();
	changed(s, f);
out:
	rt_buf_free(&from);
	rt_buf_free(&to);
	return rc;
}

/* Stores node `n` as it is now. */
static int store_node(struct sched *s, struct sched_code_node *n)
{
	struct rt_buf path = { 0 };
	int rc = node_path(n, &path);

	if (rc == 0 && n->parent == NULL)
		goto out; /* code/ itself has no row */
	if (rc == 0)
		rc = store_begin_derived(s->store);
	if (rc == 0)
		rc = derived(s, row_put(s, n, path.data));
out:
	rt_buf_free(&path);
	return rc;
}

int sched_code_chmod(struct sched *s, struct sched_code_node *n, uint32_t perm,
		     sched_code_done_fn done, void *arg)
{
	uint32_t was = n->mode;
	int rc;

	if (n->parent == NULL)
		return 0; /* code/ itself follows the function */
	if (((n->mode & S_IFMT) | (perm & 0777)) == was)
		return 0;
	if (st_of(s)->shared)
		return cl_put(s, n, (n->mode & S_IFMT) | (perm & 0777),
			      n->mtime_ms, done, arg);
	n->mode = (n->mode & S_IFMT) | (perm & 0777);
	rc = store_node(s, n);
	if (rc < 0) {
		n->mode = was;
		return rc;
	}
	changed(s, cfn_get(s, n->fn));
	return 0;
}

int sched_code_touch(struct sched *s, struct sched_code_node *n,
		     int64_t mtime_ms, sched_code_done_fn done, void *arg)
{
	int64_t was = n->mtime_ms;
	int rc;

	if (st_of(s)->shared && n->parent != NULL && was != mtime_ms)
		return cl_put(s, n, n->mode, mtime_ms, done, arg);
	n->mtime_ms = mtime_ms;
	if (n->parent == NULL || was == mtime_ms)
		return 0;
	rc = store_node(s, n);
	if (rc < 0)
		n->mtime_ms = was;
	return rc;
}

/* ============================================================ contents */

/* Opens object `h` for reading. Returns an fd or -errno. */
static int object_open(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };
	int fd;

	object_path(c, h, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 && p.data != NULL)
		rt_log(RT_LOG_ERROR, "code: object %s: %s", p.data,
		       strerror(errno));
	rt_buf_free(&p);
	return fd < 0 ? -EIO : fd;
}

static int errno_io(void)
{
	return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -EIO;
}

/* Copies all of `from` into `to` (both at offset 0). */
static int copy_fd(int from, int to)
{
	char buf[65536];
	off_t off = 0;

	for (;;) {
		ssize_t r = pread(from, buf, sizeof(buf), off), w = 0, k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -EIO;
		if (r == 0)
			return 0;
		while (w < r) {
			k = pwrite(to, buf + w, (size_t)(r - w), off + w);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return errno_io();
			w += k;
		}
		off += r;
	}
}

/* A new temporary file in DATA/code/tmp. Returns an fd or -errno. */
static int tmp_file(struct sched_code_state *c, const char *what, char **path)
{
	struct rt_buf p = { 0 };
	int fd = make_dirs(c);

	if (fd < 0)
		return fd;
	rt_buf_printf(&p, "%s/%s-%llu", c->tmp, what,
		      (unsigned long long)++c->seq);
	if (p.data == NULL)
		return -ENOMEM;
	fd = open(p.data, O_RDWR | O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		int rc = errno_io();

		rt_log(RT_LOG_ERROR, "code: %s: %s", p.data, strerror(errno));
		rt_buf_free(&p);
		return rc;
	}
	*path = p.data;
	return fd;
}

int sched_code_open_write(struct sched *s, struct sched_code_node *n, int trunc)
{
	struct sched_code_state *c = st_of(s);
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	int from, rc = 0;

	if (f == NULL || is_dir(n))
		return -EISDIR;
	if (g == NULL) {
		g = calloc(1, sizeof(*g));
		if (g == NULL)
			return -ENOMEM;
		g->fd = tmp_file(c, "stage", &g->path);
		if (g->fd < 0) {
			rc = g->fd;
			free(g);
			return rc;
		}
		/* What it holds now, unless it is truncated anyway. */
		if (!trunc && n->size > 0) {
			from = object_open(c, n->hash);
			rc = from < 0 ? from : copy_fd(from, g->fd);
			if (from >= 0)
				close(from);
		}
		if (rc == 0 && (trunc || n->size == 0)) {
			g->seq = EVP_MD_CTX_new();
			if (g->seq == NULL ||
			    EVP_DigestInit_ex(g->seq, EVP_sha256(), NULL) != 1)
				rc = -ENOMEM;
		}
		if (rc < 0) {
			stage_free(g);
			return rc;
		}
		n->stage = g;
	}
	g->writers++;
	f->writers++;
	if (trunc && n->size > 0)
		rc = sched_code_truncate(s, n, 0);
	return rc;
}

long sched_code_read(struct sched *s, struct sched_code_node *n, char *buf,
		     size_t size, uint64_t off)
{
	int fd = n->stage ? n->stage->fd : -1, own = 0;
	ssize_t r;

	if (is_dir(n))
		return -EISDIR;
	if (off >= n->size)
		return 0;
	if (size > n->size - off)
		size = (size_t)(n->size - off);
	if (fd < 0) {
		fd = object_open(st_of(s), n->hash);
		if (fd < 0)
			return fd;
		own = 1;
	}
	do
		r = pread(fd, buf, size, (off_t)off);
	while (r < 0 && errno == EINTR);
	if (own)
		close(fd);
	return r < 0 ? -EIO : (long)r;
}

int sched_code_write(struct sched *s, struct sched_code_node *n,
		     const char *buf, size_t size, uint64_t off)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	uint64_t end = off + size;
	size_t done = 0;
	int rc;

	if (g == NULL || f == NULL)
		return -EBADF;
	if (end < off || end > RT_CODE_OBJECT_MAX)
		return over_bytes(s, n, f, UINT64_MAX);
	rc = over_bytes(s, n, f, end);
	if (rc < 0)
		return rc;
	while (done < size) {
		ssize_t w = pwrite(g->fd, buf + done, size - done,
				   (off_t)(off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return errno_io();
		done += (size_t)w;
	}
	/* cp and tar write in order from 0: the hash follows along. */
	if (g->seq != NULL && off == g->seq_off &&
	    EVP_DigestUpdate(g->seq, buf, size) == 1) {
		g->seq_off += size;
	} else if (g->seq != NULL) {
		EVP_MD_CTX_free(g->seq);
		g->seq = NULL;
	}
	if (end > n->size) {
		f->bytes += end - n->size;
		bytes_sync(f);
		n->size = end;
	}
	g->dirty = 1;
	g->gen++;
	return 0;
}

int sched_code_truncate(struct sched *s, struct sched_code_node *n,
			uint64_t size)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	int rc;

	if (g == NULL || f == NULL)
		return -EBADF;
	if (size > RT_CODE_OBJECT_MAX)
		return over_bytes(s, n, f, UINT64_MAX);
	rc = over_bytes(s, n, f, size);
	if (rc < 0)
		return rc;
	if (ftruncate(g->fd, (off_t)size) < 0)
		return errno_io();
	if (g->seq != NULL && size != g->seq_off) {
		EVP_MD_CTX_free(g->seq);
		g->seq = NULL;
	}
	f->bytes = f->bytes - n->size + size;
	bytes_sync(f);
	n->size = size;
	g->dirty = 1;
	g->gen++;
	return 0;
}

/* The SHA-256 of what stage `g` holds (`size` bytes). */
static int stage_hash(struct sched_code_stage *g, uint64_t size, char out[65])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char d[EVP_MAX_MD_SIZE], *buf = NULL;
	unsigned len = 0, i;
	uint64_t off = 0;
	int rc = -ENOMEM;

	if (ctx == NULL)
		goto out;
	if (g->seq != NULL && g->seq_off == size) {
		if (EVP_MD_CTX_copy_ex(ctx, g->seq) != 1)
			goto out;
	} else {
		buf = malloc(65536);
		if (buf == NULL ||
		    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
			goto out;
		while (off < size) {
			ssize_t r = pread(g->fd, buf, 65536, (off_t)off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = -EIO;
				goto out;
			}
			EVP_DigestUpdate(ctx, buf, (size_t)r);
			off += (uint64_t)r;
		}
	}
	if (EVP_DigestFinal_ex(ctx, d, &len) != 1 || len != 32)
		goto out;
	for (i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	rc = 0;
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Makes object `h` hold what `fd` holds, or (fd -1) the `len` bytes at
 * `buf`, unless it exists: a temporary copy renamed into place. */
static int object_put(struct sched_code_state *c, const char *h, int fd,
		      const char *buf, size_t len)
{
	struct rt_buf p = { 0 };
	char *tmp = NULL;
	int out = -1, rc = 0;

	object_path(c, h, &p);
	if (p.data == NULL)
		return -ENOMEM;
	if (access(p.data, F_OK) == 0)
		goto done;
	out = tmp_file(c, "object", &tmp);
	if (out < 0) {
		rc = out;
		goto done;
	}
	if (fd >= 0)
		rc = copy_fd(fd, out);
	else if (len > 0 && write(out, buf, len) != (ssize_t)len)
		rc = errno_io();
	if (rc == 0) {
		/* The directory of its first two digits. */
		char *slash = strrchr(p.data, '/');

		*slash = '\0';
		if (mkdir(p.data, 0700) < 0 && errno != EEXIST)
			rc = errno_io();
		*slash = '/';
	}
	if (rc == 0 && (fchmod(out, 0400) < 0 || rename(tmp, p.data) < 0))
		rc = errno_io();
	if (rc == 0)
		rt_map_put(&c->unsynced, h, (void *)1);
done:
	if (out >= 0)
		close(out);
	if (tmp != NULL && rc < 0)
		unlink(tmp);
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "code: cannot store object %s: %s", p.data,
		       strerror(-rc));
	free(tmp);
	rt_buf_free(&p);
	return rc;
}

int sched_code_commit(struct sched *s, struct sched_code_node *n,
		      sched_code_done_fn done, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct sched_code_stage *g = n->stage;
	struct code_fn *f = cfn_get(s, n->fn);
	char h[65], was[65];
	int64_t mtime = n->mtime_ms;
	int rc;

	if (g == NULL || !g->dirty || f == NULL)
		return 0;
	if (st_of(s)->shared)
		return cl_commit(s, n, done, arg);
	rc = stage_hash(g, n->size, h);
	if (rc == 0 && strcmp(h, n->hash) == 0) {
		g->dirty = 0; /* the same bytes again */
		return 0;
	}
	if (rc == 0)
		rc = object_put(c, h, g->fd, NULL, 0);
	if (rc < 0)
		return rc;
	ref_add(c, h); /* before anything drops it */
	memcpy(was, n->hash, 65);
	memcpy(n->hash, h, 65);
	n->stored_size = n->size;
	n->mtime_ms = rt_now_ms();
	rc = store_node(s, n);
	if (rc < 0) {
		memcpy(n->hash, was, 65);
		n->mtime_ms = mtime;
		ref_drop(c, h);
		return rc;
	}
	if (was[0])
		ref_drop(c, was);
	g->dirty = 0;
	changed(s, f);
	return 0;
}

void sched_code_close_write(struct sched *s, struct sched_code_node *n)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;

	int rc = 0;

	if (g == NULL)
		return;
	if (g->dirty)
		rc = sched_code_commit(s, n, NULL, NULL);
	if (rc < 0) {
		/* The content reverts to what was last closed. */
		rt_log(RT_LOG_WARN, "code: a write of %s was lost", n->name);
	}
	if (f != NULL && f->writers > 0)
		f->writers--;
	if (--g->writers > 0)
		return;
	if (rc == SCHED_CODE_LATER) {
		/* A cluster: the commit holds its own copy. */
	} else if (g->dirty && st_of(s)->shared) {
		f->bytes = f->bytes - n->size + n->stored_size;
		bytes_sync(f);
		n->size = n->stored_size;
	} else if (g->dirty) {
		/* Not stored: the size is the stored content's again. */
		struct stat sb;
		int fd = object_open(st_of(s), n->hash);

		if (fd >= 0 && fstat(fd, &sb) == 0 && f != NULL) {
			f->bytes = f->bytes - n->size + (uint64_t)sb.st_size;
			bytes_sync(f);
			n->size = (uint64_t)sb.st_size;
		}
		if (fd >= 0)
			close(fd);
	}
	stage_free(g);
	n->stage = NULL;
}

/* ============================================================ revisions */

/* One entry of a manifest being built. */
struct mf_ent {
	char *path; /* owned */
	const struct sched_code_node *n;
};

struct mf_list {
	struct mf_ent *v;
	size_t n, cap;
};

static int mf_collect(const struct sched_code_node *n, const char *prefix,
		      struct mf_list *l)
{
	struct rt_buf p = { 0 };
	void **v;
	size_t i, k;
	int rc = 0;

	if (n->parent != NULL) {
		rc = rt_buf_printf(&p, "%s%s%s", prefix, *prefix ? "/" : "",
				   n->name);
		if (rc == 0 && l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct mf_ent *e = realloc(l->v, cap * sizeof(*e));

			if (e == NULL)
				rc = -ENOMEM;
			else {
				l->v = e;
				l->cap = cap;
			}
		}
		if (rc < 0) {
			rt_buf_free(&p);
			return rc;
		}
		l->v[l->n].path = p.data;
		l->v[l->n++].n = n;
	}
	v = rt_map_values(&n->children, &k);
	for (i = 0; rc == 0 && v != NULL && i < k; i++)
		rc = mf_collect(v[i], p.data ? p.data : "", l);
	free(v);
	return rc;
}

static int mf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mf_ent *)a)->path,
		      ((const struct mf_ent *)b)->path);
}

static void mf_free(struct mf_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The manifest of `f`'s tree as closed now, its hash ("" for no code),
 * and what it references (the manifest first). */
static int manifest_of(struct code_fn *f, struct rt_buf *text, char hash[65],
		       char (**objs)[65], size_t *nobjs, uint64_t *bytes,
		       int *files)
{
	struct mf_list l = { 0 };
	size_t i;
	int rc = mf_collect(f->root, "", &l);

	*objs = NULL;
	*nobjs = 0;
	*bytes = 0;
	*files = (int)l.n;
	hash[0] = '\0';
	if (rc == 0 && l.n > 0)
		*objs = calloc(l.n + 1, sizeof(**objs));
	if (rc == 0 && l.n > 0 && *objs == NULL)
		rc = -ENOMEM;
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), mf_cmp);
	for (i = 0; rc == 0 && i < l.n; i++) {
		const struct sched_code_node *n = l.v[i].n;
		struct rt_code_entry e = { is_dir(n), n->mode & 0777,
					   is_dir(n) ? 0 : n->size, "",
					   l.v[i].path };

		if (!e.dir) {
			memcpy(e.hash, n->hash, 65);
			*bytes += n->size;
			memcpy((*objs)[++*nobjs], n->hash, 65);
		}
		rc = rt_code_manifest_add(text, &e);
	}
	if (rc == 0 && l.n > 0) {
		rc = rt_sha256_hex(text->data, text->len, hash);
		memcpy((*objs)[0], hash, 65);
		++*nobjs;
	}
	mf_free(&l);
	if (rc < 0) {
		free(*objs);
		*objs = NULL;
		*nobjs = 0;
	}
	return rc;
}

struct sync_ctx {
	struct sched_code_state *c;
	unsigned char dirs[256]; /* prefixes whose directory needs a sync */
	int rc;
};

static int sync_cb(const char *key, void *value, void *arg)
{
	struct sync_ctx *x = arg;
	struct rt_buf p = { 0 };
	int fd;

	(void)value;
	object_path(x->c, key, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && fsync(fd) < 0)
		x->rc = -EIO;
	if (fd >= 0)
		close(fd);
	x->dirs[strtoul((char[3]){ key[0], key[1], 0 }, NULL, 16) & 255] = 1;
	rt_buf_free(&p);
	return 0;
}

static void sync_dir(const char *path, int *rc)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && fsync(fd) < 0)
		*rc = -EIO;
	if (fd >= 0)
		close(fd);
}

/* fsyncs the objects written since the last revision, and their
 * directories. Returns 0 or -EIO. */
static int sync_objects(struct sched_code_state *c)
{
	struct sync_ctx x = { c, { 0 }, 0 };
	struct rt_buf p = { 0 };
	int i;

	if (c->unsynced.count == 0)
		return 0;
	rt_map_each(&c->unsynced, sync_cb, &x);
	for (i = 0; i < 256; i++)
		if (x.dirs[i]) {
			rt_buf_reset(&p);
			rt_buf_printf(&p, "%s/%02x", c->objects, i);
			if (p.data != NULL)
				sync_dir(p.data, &x.rc);
		}
	sync_dir(c->objects, &x.rc);
	rt_buf_free(&p);
	if (x.rc == 0) {
		rt_map_free(&c->unsynced);
		memset(&c->unsynced, 0, sizeof(c->unsynced));
	}
	return x.rc;
}

/* Stores revision `hash` of `fn`'s code and the function's new revision
 * in one durable transaction. */
static int store_revision(struct sched *s, struct code_fn *f, const char *hash,
			  uint64_t bytes, int files)
{
	struct sched_function *fn = f->fn;
	const struct sched_obj *ns = fn->obj.parent, *t = ns->parent;
	struct rt_buf dump = { 0 };
	struct store_row r;
	struct store_code_revision cr;
	int rc = sched_spec_dump(&fn->spec, &dump);

	memset(&r, 0, sizeof(r));
	r.kind = STORE_FUNCTION;
	r.tenant = t->name;
	r.ns = ns->name;
	r.name = fn->obj.name;
	r.created_ms = fn->obj.created_ms;
	r.updated_ms = rt_now_ms();
	r.spec = dump.data;
	r.revision = fn->revision + 1;
	r.run_revision = r.revision;
	if (rc == 0)
		rc = store_begin(s->store);
	if (rc < 0)
		goto out;
	cr.tenant = r.tenant;
	cr.ns = r.ns;
	cr.fn = r.name;
	cr.hash = hash;
	cr.bytes = bytes;
	cr.files = files;
	rc = hash[0] ? store_code_revision_put(s->store, &cr)
		     : store_code_revision_delete(s->store, r.tenant, r.ns,
						  r.name);
	if (rc == 0)
		rc = store_function_code(s->store, &r);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
out:
	rt_buf_free(&dump);
	return rc;
}

/* Tells every online worker with an instance of `fn` to download
 * revision `hash` of its code now (code.prefetch), before the instance is
 * replaced: a rolling deploy replaces the instances one at a time, and
 * without it each worker's download would wait for the replacements
 * before it. The downloads then go side by side, and each replacement
 * finds its code unpacked. Best effort: a start fetches what a prefetch
 * did not. */
static void prefetch(struct sched *s, struct sched_function *fn,
		     const char *hash, uint64_t bytes)
{
	struct sched_collect col = sched__instances_of(fn);
	struct sched_worker **sent = calloc((size_t)col.n + 1, sizeof(*sent));
	int i, j, nsent = 0;

	for (i = 0; sent != NULL && i < col.n; i++) {
		struct sched_worker *w = col.v[i]->worker;

		if (w == NULL || !w->online || !col.v[i]->desired_run)
			continue;
		for (j = 0; j < nsent && sent[j] != w; j++)
			;
		if (j < nsent)
			continue;
		sent[nsent++] = w;
		sched__send(s, w,
			    json_pack("{s:s, s:s, s:I}", "type",
				      "code.prefetch", "hash", hash, "bytes",
				      (json_int_t)bytes));
	}
	free(sent);
	free(col.v);
}

/* Makes the tree of `f` as closed now its revision of code, unless it
 * is that already. Returns 0 or -errno (it is tried again later). */
static int make_revision(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = f->fn;
	struct rt_buf text = { 0 }, kvs = { 0 };
	char hash[65], (*objs)[65] = NULL, rev[32];
	size_t nobjs = 0, i;
	uint64_t bytes = 0;
	int files = 0, rc;

	f->dirty = 0;
	rc = manifest_of(f, &text, hash, &objs, &nobjs, &bytes, &files);
	if (rc < 0 || strcmp(hash, f->pub) == 0)
		goto out;
	if (c->shared && f->publishing) {
		f->dirty = 1; /* once the one under way has ended */
		f->last_mono = rt_mono_ms();
		goto out;
	}
	if (c->shared) {
		/* The revision comes back through the watch. */
		rc = cl_publish(s, f, hash, &text, bytes, files);
		goto out;
	}
	if (hash[0])
		rc = object_put(c, hash, -1, text.data, text.len);
	if (rc == 0 && hash[0]) /* what an empty file's download reads */
		rc = object_put(c, c->empty, -1, NULL, 0);
	if (rc == 0)
		rc = sync_objects(c);
	if (rc == 0)
		rc = store_revision(s, f, hash, bytes, files);
	if (rc < 0)
		goto out;
	for (i = 0; i < nobjs; i++)
		ref_add(c, objs[i]);
	for (i = 0; i < f->npub; i++)
		ref_drop(c, f->pub_objs[i]);
	free(f->pub_objs);
	f->pub_objs = objs;
	f->npub = nobjs;
	objs = NULL;
	memcpy(f->pub, hash, 65);
	f->pub_bytes = bytes;
	f->pub_files = files;
	fn->revision++;
	fn->run_revision = fn->revision;
	fn->obj.updated_ms = rt_now_ms();
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)fn->revision);
	rt_buf_kv(&kvs, "revision", rev);
	rt_buf_kv(&kvs, "changed", "code");
	rt_buf_kv(&kvs, "code", hash[0] ? hash : "none");
	snprintf(rev, sizeof(rev), "%d", files);
	rt_buf_kv(&kvs, "files", rev);
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)bytes);
	rt_buf_kv(&kvs, "bytes", rev);
	sched__event(s, &fn->obj, "function.updated", kvs.data);
	if (hash[0])
		prefetch(s, fn, hash, bytes);
	sched__reconcile(s, fn);
out:
	if (rc < 0) {
		f->dirty = 1; /* again at the next turn */
		f->last_mono = rt_mono_ms();
		rt_log(RT_LOG_ERROR, "code: %s: no new revision: %s",
		       fn->obj.name, strerror(-rc));
	}
	free(objs);
	rt_buf_free(&text);
	rt_buf_free(&kvs);
	return rc;
}

/* ============================================================== timers */

static int any_dirty(struct sched_code_state *c)
{
	void **v;
	size_t i, n;
	int dirty = 0;

	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n && !dirty; i++)
		dirty = ((struct code_fn *)v[i])->dirty;
	free(v);
	return dirty;
}

/* Unlinks object `h` if nothing references it. */
static void collect(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };

	if (refs_of(c, h) > 0)
		return;
	object_path(c, h, &p);
	if (p.data != NULL && unlink(p.data) < 0 && errno != ENOENT)
		rt_log(RT_LOG_WARN, "code: unlink %s: %s", p.data,
		       strerror(errno));
	rt_map_del(&c->unsynced, h);
	rt_buf_free(&p);
}

/* One directory of objects/ at a time: what nothing references (left by
 * a crash between a write and its record) goes. */
static void sweep_step(struct sched_code_state *c)
{
	struct rt_buf p = { 0 };
	struct dirent *e;
	char h[65];
	DIR *d;

	rt_buf_printf(&p, "%s/%02x", c->objects, c->sweep++);
	d = p.data ? opendir(p.data) : NULL;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strlen(e->d_name) != RT_CODE_HASH_LEN - 2)
			continue;
		snprintf(h, sizeof(h), "%02x%s", c->sweep - 1, e->d_name);
		if (rt_code_hash_valid(h))
			collect(c, h);
	}
	if (d != NULL)
		closedir(d);
	rt_buf_free(&p);
}

static void on_timer(uv_timer_t *t)
{
	struct sched *s = t->data;
	struct sched_code_state *c = st_of(s);
	int64_t now = rt_mono_ms(), next = -1, due;
	void **v;
	size_t i, n;

	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct code_fn *f = v[i];

		if (!f->dirty)
			continue;
		due = f->last_mono + SCHED_CODE_QUIET_MS;
		/* Files still open: their close is the change to wait for,
		 * within bounds. */
		if (now >= due && f->writers > 0 &&
		    now < f->first_mono + SCHED_CODE_QUIET_MAX_MS)
			due = now + SCHED_CODE_QUIET_MS;
		if (now >= due)
			make_revision(s, f);
		if (f->dirty && (next < 0 || due - now < next))
			next = due > now ? due - now : SCHED_CODE_QUIET_MS;
	}
	free(v);
	/* Objects go only once every change is in a durable revision. */
	if (!any_dirty(c)) {
		for (i = 0; i < GARBAGE_PER_TURN && c->ngarbage > 0; i++)
			collect(c, c->garbage[--c->ngarbage]);
		if (c->ngarbage > 0)
			next = next < 0 || next > 10 ? 10 : next;
		if (c->sweep < 256) {
			sweep_step(c);
			next = next < 0 || next > 20 ? 20 : next;
		}
	} else if (c->ngarbage > 0 || c->sweep < 256) {
		next = next < 0 || next > SCHED_CODE_QUIET_MS
			       ? SCHED_CODE_QUIET_MS
			       : next;
	}
	if (next >= 0)
		uv_timer_start(&c->timer, on_timer, (uint64_t)next, 0);
}

/* ============================================================= loading */

/* The node at `path` of `f`'s tree, or NULL. */
static struct sched_code_node *node_at(struct code_fn *f, const char *path)
{
	struct sched_code_node *n = f->root;
	char *copy = strdup(path), *tok, *save = NULL;

	for (tok = copy ? strtok_r(copy, "/", &save) : NULL;
	     tok != NULL && n != NULL; tok = strtok_r(NULL, "/", &save))
		n = sched_code_child(n, tok);
	free(copy);
	return copy != NULL ? n : NULL;
}

/* The function tenant/ns/name, or NULL. */
static struct sched_function *fn_named(struct sched *s, const char *t,
				       const char *ns, const char *name)
{
	struct sched_obj *o = sched_child(&s->root, t);

	o = o ? sched_child(o, ns) : NULL;
	o = o ? sched_child(o, name) : NULL;
	return o != NULL && o->type == SCHED_FUNCTION
		       ? (struct sched_function *)o
		       : NULL;
}

/* One entry of a function's code/. */
static int load_file(const struct store_code_file *r, void *arg)
{
	struct sched *s = arg;
	struct sched_function *fn = fn_named(s, r->tenant, r->ns, r->fn);
	const char *path = r->path, *slash = strrchr(path, '/');
	uint32_t mode = r->mode;
	struct sched_code_node *dir, *n;
	struct code_fn *f;
	char *up;

	if (fn == NULL || !rt_code_path_valid(path) ||
	    (!S_ISDIR(mode) && !S_ISREG(mode)) ||
	    (S_ISREG(mode) && !rt_code_hash_valid(r->hash))) {
		rt_log(RT_LOG_WARN, "code: %s/%s/%s: bad row %s; skipped",
		       r->tenant, r->ns, r->fn, path);
		return 0;
	}
	f = cfn_make(s, fn);
	if (f == NULL)
		return -ENOMEM;
	up = slash ? strndup(path, (size_t)(slash - path)) : strdup("");
	if (up == NULL)
		return -ENOMEM;
	dir = *up ? node_at(f, up) : f->root;
	free(up);
	if (dir == NULL || !is_dir(dir)) {
		rt_log(RT_LOG_WARN, "code: %s: no directory for %s; skipped",
		       fn->obj.name, path);
		return 0;
	}
	n = node_new(s, fn, dir, slash ? slash + 1 : path, mode);
	if (n == NULL)
		return -ENOMEM;
	n->size = r->size;
	n->stored_size = r->size;
	n->mtime_ms = r->mtime_ms;
	if (!is_dir(n)) {
		snprintf(n->hash, sizeof(n->hash), "%s", r->hash);
		ref_add(st_of(s), n->hash);
		f->bytes += n->size;
		bytes_sync(f);
	}
	f->entries++;
	return 0;
}

static int pub_obj_cb(const struct rt_code_entry *e, void *arg)
{
	struct code_fn *f = arg;

	if (!e->dir)
		memcpy(f->pub_objs[f->npub++], e->hash, 65);
	return 0;
}

/* A function's revision of code, and what it references. */
static int load_revision(const struct store_code_revision *r, void *arg)
{
	struct sched *s = arg;
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = fn_named(s, r->tenant, r->ns, r->fn);
	struct rt_buf p = { 0 }, text = { 0 }, why = { 0 };
	struct code_fn *f;
	size_t i;
	char buf[65536];
	ssize_t got;
	int fd = -1, rc = 0;

	if (fn == NULL || !rt_code_hash_valid(r->hash) || r->files < 0)
		return 0;
	f = cfn_make(s, fn);
	if (f == NULL)
		return -ENOMEM;
	snprintf(f->pub, sizeof(f->pub), "%s", r->hash);
	f->pub_bytes = r->bytes;
	f->pub_files = r->files;
	f->pub_objs = calloc((size_t)f->pub_files + 1, sizeof(*f->pub_objs));
	if (f->pub_objs == NULL)
		return -ENOMEM;
	memcpy(f->pub_objs[f->npub++], f->pub, 65);
	if (c->shared) {
		/* Its objects are fetched as workers ask for them. */
		ref_add(c, f->pub);
		return 0;
	}
	object_path(c, f->pub, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		rt_buf_append(&text, buf, (size_t)got);
	if (fd < 0 ||
	    rt_code_manifest_parse(text.data ? text.data : "", text.len,
				   f->pub_files, pub_obj_cb, f, &why) < 0) {
		rt_log(RT_LOG_ERROR, "code: %s: revision %.12s unreadable: %s",
		       fn->obj.name, f->pub, why.data ? why.data : "missing");
		f->npub = 1;
	}
	for (i = 0; i < f->npub; i++)
		ref_add(c, f->pub_objs[i]);
	if (fd >= 0)
		close(fd);
	rt_buf_free(&p);
	rt_buf_free(&text);
	rt_buf_free(&why);
	return rc;
}

/* Whether the tree of `f` differs from its revision: a change whose
 * revision a crash prevented. */
static void check_dirty(struct code_fn *f)
{
	struct rt_buf text = { 0 };
	char hash[65], (*objs)[65] = NULL;
	size_t nobjs;
	uint64_t bytes;
	int files;

	if (manifest_of(f, &text, hash, &objs, &nobjs, &bytes, &files) < 0 ||
	    strcmp(hash, f->pub) != 0) {
		f->dirty = 1;
		f->first_mono = f->last_mono = rt_mono_ms();
	}
	free(objs);
	rt_buf_free(&text);
}

/* Empties DATA/code/tmp: staging of a former run. */
static void clear_tmp(const char *dir)
{
	struct rt_buf p = { 0 };
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		rt_buf_reset(&p);
		rt_buf_printf(&p, "%s/%s", dir, e->d_name);
		if (p.data != NULL)
			unlink(p.data);
	}
	if (d != NULL)
		closedir(d);
	rt_buf_free(&p);
}

/* Makes DATA/code, its objects/ and tmp/ (0700) unless they are there:
 * a data directory whose functions never had code has none. */
static int make_dirs(struct sched_code_state *c)
{
	const char *const v[3] = { c->root, c->objects, c->tmp };
	int i;

	if (c->made)
		return 0;
	for (i = 0; i < 3; i++)
		if (mkdir(v[i], 0700) < 0 && errno != EEXIST) {
			rt_log(RT_LOG_ERROR, "code: cannot make %s: %s", v[i],
			       strerror(errno));
			return errno_io();
		}
	c->made = 1;
	return 0;
}

int sched__code_open(struct sched *s)
{
	struct sched_code_state *c = calloc(1, sizeof(*c));
	struct rt_buf p = { 0 };
	void **v;
	size_t i, n;
	int rc = -ENOMEM;

	if (c == NULL)
		return -ENOMEM;
	s->code = c;
	rt_buf_printf(&p, "%s/code", s->datadir);
	c->root = p.data ? strdup(p.data) : NULL;
	rt_buf_printf(&p, "/objects");
	c->objects = p.data ? strdup(p.data) : NULL;
	p.len -= strlen("/objects");
	rt_buf_printf(&p, "/tmp");
	c->tmp = p.data ? strdup(p.data) : NULL;
	rt_buf_free(&p);
	if (c->root == NULL || c->objects == NULL || c->tmp == NULL)
		return -ENOMEM;
	c->shared = store_shared(s->store);
	clear_tmp(c->tmp);
	rc = rt_sha256_hex("", 0, c->empty);
	if (rc < 0)
		return rc;
	ref_add(c, c->empty); /* kept: every empty file's */
	rc = store_code_file_load(s->store, load_file, s);
	if (rc == 0)
		rc = store_code_revision_load(s->store, load_revision, s);
	if (rc < 0)
		return rc;
	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++)
		check_dirty(v[i]);
	free(v);
	/* A cluster's tree follows etcd from here on. */
	if (c->shared)
		store_code_listen(s->store, on_remote, s);
	return 0;
}

/* Leaves transfer `value` to end alone (sched__code_close). */
static int orphan_xfer(const char *key, void *value, void *arg);

void sched__code_start(struct sched *s)
{
	struct sched_code_state *c = st_of(s);

	uv_timer_init(s->loop, &c->timer);
	c->timer.data = s;
	uv_timer_init(s->loop, &c->pump);
	c->pump.data = s;
	c->started = 1;
	uv_timer_start(&c->timer, on_timer, 0, 0);
}

void sched__code_stop(struct sched *s)
{
	struct sched_code_state *c = st_of(s);

	if (c == NULL || !c->started)
		return;
	c->started = 0;
	uv_timer_stop(&c->timer);
	uv_timer_stop(&c->pump);
	uv_close((uv_handle_t *)&c->timer, NULL);
	uv_close((uv_handle_t *)&c->pump, NULL);
}

static void out_free(struct code_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o->items);
	free(o);
}

static void cfn_free(struct sched *s, struct code_fn *f)
{
	size_t i;

	node_free(s, f->root);
	for (i = 0; i < f->npub; i++)
		ref_drop(st_of(s), f->pub_objs[i]);
	free(f->pub_objs);
	free(f);
}

void sched__code_close(struct sched *s)
{
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, n;

	if (c == NULL)
		return;
	if (c->shared)
		store_code_listen(s->store, NULL, NULL);
	rt_map_each(&c->gets, orphan_xfer, NULL);
	rt_map_each(&c->puts, orphan_xfer, NULL);
	rt_map_free(&c->gets);
	rt_map_free(&c->puts);
	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++)
		cfn_free(s, v[i]);
	free(v);
	v = rt_idmap_values(&c->outs, &n);
	for (i = 0; v != NULL && i < n; i++)
		out_free(v[i]);
	free(v);
	rt_idmap_free(&c->fns);
	rt_idmap_free(&c->nodes);
	rt_idmap_free(&c->outs);
	rt_map_free(&c->refs);
	rt_map_free(&c->unsynced);
	free(c->garbage);
	free(c->root);
	free(c->objects);
	free(c->tmp);
	free(c);
	s->code = NULL;
}

int sched__code_unstore(struct sched *s, struct sched_function *fn)
{
	const char *k[3];
	int rc;

	fn_key(fn, k);
	rc = store_code_files_delete(s->store, k[0], k[1], k[2]);
	if (rc == 0)
		rc = store_code_revision_delete(s->store, k[0], k[1], k[2]);
	return rc;
}

void sched__code_drop(struct sched *s, struct sched_function *fn)
{
	struct code_fn *f = cfn_get(s, fn);

	if (f == NULL)
		return;
	rt_idmap_del(&st_of(s)->fns, fn->obj.id);
	sched__quota_code_add(fn, -(int64_t)f->counted);
	cfn_free(s, f);
	if (st_of(s)->started)
		uv_timer_start(&st_of(s)->timer, on_timer, 0, 0);
}

void sched__code_add_spec(struct sched *s, const struct sched_function *fn,
			  json_t *spec)
{
	struct code_fn *f = cfn_get(s, fn);

	if (f == NULL || f->pub[0] == '\0' || spec == NULL)
		return;
	json_object_set_new(spec, "code",
			    json_pack("{s:s, s:I, s:i}", "hash", f->pub,
				      "bytes", (json_int_t)f->pub_bytes,
				      "files", f->pub_files));
}

/* ============================================================ a cluster
 *
 * The tree is etcd's: a change here is a compare-and-set of P/cf keys
 * (store_code_submit), and the tree changes when the watch brings it
 * back (on_remote), for this controller's changes as for the others'.
 * An object goes to etcd before the entry that names it; one that this
 * controller lacks is fetched when a read or a worker needs it. */

/* Called when an object transfer ends (`hash`: which one). */
typedef void (*obj_fn)(void *arg, int err, const char *hash);

struct obj_waiter {
	obj_fn fn;
	void *arg;
	struct obj_waiter *next;
};

/* A fetch or an upload of one object, with who waits for it. */
struct obj_xfer {
	struct sched *s; /* NULL once code/ is closed */
	int get;	 /* a fetch; else an upload */
	char hash[65];
	char *tmp; /* a fetch's temporary file, owned */
	int fd;
	struct obj_waiter *waiters;
};

/* Whether object `h` is in DATA/code/objects. */
static int obj_local(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };
	int ok;

	object_path(c, h, &p);
	ok = p.data != NULL && access(p.data, F_OK) == 0;
	rt_buf_free(&p);
	return ok;
}

/* Moves the finished temporary file `tmp` (open as `fd`) into place as
 * object `h`. */
static int object_install(struct sched_code_state *c, const char *h, int fd,
			  const char *tmp)
{
	struct rt_buf p = { 0 };
	char *slash;
	int rc = 0;

	object_path(c, h, &p);
	if (p.data == NULL)
		return -ENOMEM;
	slash = strrchr(p.data, '/');
	*slash = '\0';
	if (mkdir(p.data, 0700) < 0 && errno != EEXIST)
		rc = errno_io();
	*slash = '/';
	if (rc == 0 && (fchmod(fd, 0400) < 0 || rename(tmp, p.data) < 0))
		rc = errno_io();
	rt_buf_free(&p);
	return rc;
}

static int obj_wait(struct obj_xfer *x, obj_fn fn, void *arg)
{
	struct obj_waiter *w;

	if (fn == NULL)
		return 0;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->next = x->waiters;
	x->waiters = w;
	return 0;
}

static void on_xfer(void *arg, int err, const char *why)
{
	struct obj_xfer *x = arg;
	struct sched *s = x->s;
	struct obj_waiter *w, *next;

	if (s != NULL) {
		struct sched_code_state *c = st_of(s);

		rt_map_del(x->get ? &c->gets : &c->puts, x->hash);
		if (err == 0 && x->get)
			err = object_install(c, x->hash, x->fd, x->tmp);
		if (err < 0 && err != -ECANCELED)
			rt_log(RT_LOG_ERROR, "code: object %.12s %s etcd: %s",
			       x->hash, x->get ? "from" : "to",
			       why ? why : strerror(-err));
	}
	if (x->fd >= 0)
		close(x->fd);
	if (x->tmp != NULL && (err < 0 || s == NULL))
		unlink(x->tmp);
	for (w = x->waiters; w != NULL; w = next) {
		next = w->next;
		if (s != NULL)
			w->fn(w->arg, err, x->hash);
		free(w);
	}
	free(x->tmp);
	free(x);
}

static struct obj_xfer *xfer_new(struct sched *s, int get, const char *h)
{
	struct obj_xfer *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return NULL;
	x->s = s;
	x->get = get;
	x->fd = -1;
	memcpy(x->hash, h, 65);
	return x;
}

/* Makes object `h` (of this controller's objects) whole in etcd. Returns
 * 0 when it is, SCHED_CODE_LATER (then `fn`, unless NULL) or -errno. */
static int obj_upload(struct sched *s, const char *h, obj_fn fn, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct obj_xfer *x = rt_map_get(&c->puts, h);
	struct rt_buf p = { 0 };
	struct stat sb;
	uint64_t size;
	int rc;

	if (store_object_known(s->store, h, &size) == 1)
		return 0;
	if (x != NULL) {
		rc = obj_wait(x, fn, arg);
		return rc < 0 ? rc : SCHED_CODE_LATER;
	}
	object_path(c, h, &p);
	rc = p.data == NULL ? -ENOMEM : stat(p.data, &sb) < 0 ? -EIO : 0;
	x = rc == 0 ? xfer_new(s, 0, h) : NULL;
	if (rc == 0 && x == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = code_etcd_upload(store_client(s->store),
				      store_cluster(s->store), h, p.data,
				      (uint64_t)sb.st_size, on_xfer, x);
	if (rc == 0 &&
	    (rt_map_put(&c->puts, h, x) < 0 || obj_wait(x, fn, arg) < 0))
		rt_log(RT_LOG_ERROR, "code: out of memory uploading %.12s", h);
	rt_buf_free(&p);
	if (rc < 0) {
		free(x);
		rt_log(RT_LOG_ERROR, "code: object %.12s to etcd: %s", h,
		       strerror(-rc));
		return rc;
	}
	return SCHED_CODE_LATER;
}

/* Makes object `h` one of this controller's objects: there already, the
 * empty one made, or fetched from etcd. Returns 0 when it is,
 * SCHED_CODE_LATER (then `fn`, unless NULL) or -errno (-ENOENT: etcd has
 * no such object). */
static int obj_fetch(struct sched *s, const char *h, obj_fn fn, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct obj_xfer *x = rt_map_get(&c->gets, h);
	uint64_t size = 0;
	int rc;

	if (obj_local(c, h))
		return 0;
	if (strcmp(h, c->empty) == 0)
		return object_put(c, h, -1, NULL, 0);
	if (x != NULL) {
		rc = obj_wait(x, fn, arg);
		return rc < 0 ? rc : SCHED_CODE_LATER;
	}
	if (store_object_known(s->store, h, &size) != 1) {
		rt_log(RT_LOG_ERROR, "code: object %.12s is not in etcd", h);
		return -ENOENT;
	}
	x = xfer_new(s, 1, h);
	if (x == NULL)
		return -ENOMEM;
	x->fd = tmp_file(c, "fetch", &x->tmp);
	rc = x->fd < 0 ? x->fd
		       : code_etcd_fetch(store_client(s->store),
					 store_cluster(s->store), h, size,
					 x->fd, on_xfer, x);
	if (rc < 0) {
		if (x->fd >= 0)
			close(x->fd);
		if (x->tmp != NULL)
			unlink(x->tmp);
		free(x->tmp);
		free(x);
		return rc;
	}
	if (rt_map_put(&c->gets, h, x) < 0 || obj_wait(x, fn, arg) < 0)
		rt_log(RT_LOG_ERROR, "code: out of memory fetching %.12s", h);
	return SCHED_CODE_LATER;
}

/* A sched_code_fetch waiting for its object. */
struct fetch_wait {
	sched_code_done_fn done;
	void *arg;
};

static void on_fetched(void *arg, int err, const char *hash)
{
	struct fetch_wait *w = arg;

	(void)hash;
	w->done(w->arg, err);
	free(w);
}

int sched_code_fetch(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg)
{
	struct fetch_wait *w;
	int rc;

	if (is_dir(n))
		return -EISDIR;
	if (!st_of(s)->shared || n->stage != NULL || !n->hash[0] ||
	    obj_local(st_of(s), n->hash))
		return 0;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->done = done;
	w->arg = arg;
	rc = obj_fetch(s, n->hash, on_fetched, w);
	if (rc != SCHED_CODE_LATER)
		free(w);
	return rc == -ENOENT || rc == -EBADMSG ? -EIO : rc;
}

/* ---------------------------------------------------- changes to etcd */

enum req_kind {
	REQ_CREATE,  /* child `name` of `dir_id`, of `mode` */
	REQ_REMOVE,  /* child `name` of `dir_id` */
	REQ_RENAME,  /* `name` of `dir_id` to `newname` of `newdir_id` */
	REQ_PUT,     /* node `node_id` with `mode` and `mtime_ms` */
	REQ_COMMIT,  /* node `node_id` holds object `hash` of `size` */
	REQ_PUBLISH, /* function `fn_id`'s revision is `hash` */
};

/* A change of code/ sent to etcd, tried again when it lost a race. */
struct code_req {
	struct sched *s;
	enum req_kind kind;
	uint64_t fn_id, dir_id, newdir_id, node_id; /* found again each try */
	char *name, *newname;			    /* owned */
	uint32_t mode;
	int64_t mtime_ms;
	int is_dir;
	unsigned flags;
	char hash[65]; /* COMMIT: the new content; PUBLISH: the manifest */
	char path[16]; /* what the error names: "code" */
	uint64_t size; /* COMMIT; PUBLISH: bytes */
	int files;     /* PUBLISH */
	unsigned gen;  /* COMMIT: the stage's when it began */
	int uploaded;  /* `hash` is whole in etcd */
	int tries;
	sched_code_done_fn done;
	void *arg;
};

static void req_free(struct code_req *q)
{
	free(q->name);
	free(q->newname);
	free(q);
}

static struct code_req *req_new(struct sched *s, enum req_kind kind,
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

static size_t subtree_size(const struct sched_code_node *n)
{
	void **v;
	size_t i, k, total = 1;

	v = rt_map_values(&n->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		total += subtree_size(v[i]);
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
		rc = obj_upload(s, obj, on_req_uploaded, q);
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
		rc = child_path(dir, q->name, &path);
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
			rc = node_path(n, &path);
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
		rc = node_path(n, &path);
		if (rc == 0)
			rc = child_path(newdir, q->newname, &to);
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
		rc = node_path(n, &path);
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
		rc = node_path(n, &path);
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
		ref_drop(st_of(s), q->hash); /* its pin (cl_commit) */
	if (f == NULL)
		return;
	if (q->kind == REQ_PUBLISH) {
		f->publishing = 0;
		if (err < 0) {
			f->dirty = 1; /* again after the quiet time */
			f->last_mono = rt_mono_ms();
			if (st_of(s)->started)
				uv_timer_start(&st_of(s)->timer, on_timer,
					       SCHED_CODE_QUIET_MS, 0);
		}
	} else if (err == 0) {
		n = sched_code_find(s, q->node_id);
		if (q->kind == REQ_COMMIT && n != NULL && n->stage != NULL &&
		    n->stage->gen == q->gen)
			n->stage->dirty = 0;
		changed(s, f);
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
			child_path(n, q->name, &p);
		else
			node_path(n, &p);
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
	 * change is checked against it again. */
	while (rc == -EAGAIN && q->s->code != NULL &&
	       ++q->tries < SCHED_OP_TRIES) {
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
static int req_start(struct code_req *q)
{
	int rc = req_run(q);

	if (rc == SCHED_CODE_LATER)
		return rc;
	req_after(q, rc);
	req_free(q);
	return rc;
}

static int req_named(struct code_req *q, const char *name, const char *newname)
{
	if ((name != NULL && (q->name = strdup(name)) == NULL) ||
	    (newname != NULL && (q->newname = strdup(newname)) == NULL)) {
		req_free(q);
		return -ENOMEM;
	}
	return 0;
}

static int cl_create(struct sched *s, struct sched_code_node *dir,
		     const char *name, uint32_t mode, sched_code_done_fn done,
		     void *arg)
{
	struct code_req *q;
	int rc = S_ISREG(mode)
			 ? object_put(st_of(s), st_of(s)->empty, -1, NULL, 0)
			 : 0;

	if (rc < 0)
		return rc;
	q = req_new(s, REQ_CREATE, dir->fn, done, arg);
	if (q == NULL || req_named(q, name, NULL) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->mode = (S_ISDIR(mode) ? S_IFDIR : S_IFREG) | (mode & 0777);
	return req_start(q);
}

static int cl_remove(struct sched *s, struct sched_code_node *dir,
		     const char *name, int want_dir, sched_code_done_fn done,
		     void *arg)
{
	struct code_req *q = req_new(s, REQ_REMOVE, dir->fn, done, arg);

	if (q == NULL || req_named(q, name, NULL) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->is_dir = want_dir;
	return req_start(q);
}

static int cl_rename(struct sched *s, struct sched_code_node *dir,
		     const char *name, struct sched_code_node *newdir,
		     const char *newname, unsigned flags,
		     sched_code_done_fn done, void *arg)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_req *q;

	if (n == NULL)
		return -ENOENT;
	if (subtree_size(n) > SCHED_CODE_RENAME_MAX)
		return -EXDEV; /* mv copies, then removes */
	q = req_new(s, REQ_RENAME, dir->fn, done, arg);
	if (q == NULL || req_named(q, name, newname) < 0)
		return -ENOMEM;
	q->dir_id = dir->id;
	q->newdir_id = newdir->id;
	q->flags = flags;
	return req_start(q);
}

static int cl_put(struct sched *s, struct sched_code_node *n, uint32_t mode,
		  int64_t mtime_ms, sched_code_done_fn done, void *arg)
{
	struct code_req *q = req_new(s, REQ_PUT, n->fn, done, arg);

	if (q == NULL)
		return -ENOMEM;
	q->node_id = n->id;
	q->mode = mode;
	q->mtime_ms = mtime_ms;
	return req_start(q);
}

static int cl_commit(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct sched_code_stage *g = n->stage;
	struct code_req *q;
	char h[65];
	int rc = stage_hash(g, n->size, h);

	if (rc == 0 && strcmp(h, n->hash) == 0 && n->size == n->stored_size) {
		g->dirty = 0; /* the same bytes again */
		return 0;
	}
	if (rc == 0)
		rc = object_put(c, h, g->fd, NULL, 0);
	if (rc < 0)
		return rc;
	q = req_new(s, REQ_COMMIT, n->fn, done, arg);
	if (q == NULL)
		return -ENOMEM;
	q->node_id = n->id;
	memcpy(q->hash, h, 65);
	q->size = n->size;
	q->gen = g->gen;
	ref_add(c, h); /* kept until etcd has it (req_after) */
	return req_start(q);
}

/* Makes `f`'s tree, whose manifest is `text` (`hash`, "" for none), its
 * revision in etcd: the manifest goes up, then P/cr and the function's
 * next revision in one txn. The watch then brings both to every
 * controller (on_remote, the store's listener). */
static int cl_publish(struct sched *s, struct code_fn *f, const char *hash,
		      const struct rt_buf *text, uint64_t bytes, int files)
{
	struct sched_code_state *c = st_of(s);
	struct code_req *q;
	int rc = 0;

	if (hash[0])
		rc = object_put(c, hash, -1, text->data, text->len);
	if (rc < 0)
		return rc;
	q = req_new(s, REQ_PUBLISH, f->fn, NULL, NULL);
	if (q == NULL)
		return -ENOMEM;
	memcpy(q->hash, hash, 65);
	q->size = bytes;
	q->files = files;
	f->publishing = 1;
	rc = req_start(q);
	return rc == SCHED_CODE_LATER ? 0 : rc;
}

static int orphan_xfer(const char *key, void *value, void *arg)
{
	struct obj_xfer *x = value;

	(void)key;
	(void)arg;
	x->s = NULL; /* its end frees it */
	return 0;
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
	bytes_sync(f);
	rt_map_del(&n->parent->children, n->name);
	n->parent->mtime_ms = rt_now_ms();
	node_free(s, n);
}

static int load_file(const struct store_code_file *r, void *arg);

/* Entry `r` of a function's code/ came, changed or went in etcd. */
static void remote_file(struct sched *s, const struct store_code_file *r,
			int deleted)
{
	struct sched_function *fn = fn_named(s, r->tenant, r->ns, r->fn);
	struct code_fn *f = fn ? cfn_make(s, fn) : NULL;
	struct sched_code_node *n = f ? node_at(f, r->path) : NULL;

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
		load_file(r, s);
		n = node_at(f, r->path);
		if (n != NULL && n->parent != NULL)
			n->parent->mtime_ms = rt_now_ms();
		return;
	}
	n->mode = r->mode;
	n->mtime_ms = r->mtime_ms;
	if (is_dir(n))
		return;
	if (strcmp(n->hash, r->hash) != 0 && rt_code_hash_valid(r->hash)) {
		ref_add(st_of(s), r->hash);
		if (n->hash[0])
			ref_drop(st_of(s), n->hash);
		snprintf(n->hash, sizeof(n->hash), "%s", r->hash);
	}
	if (n->stage == NULL) {
		f->bytes = f->bytes - n->size + r->size;
		bytes_sync(f);
		n->size = r->size;
	}
	n->stored_size = r->size;
}

/* A function's revision of code came, changed or went in etcd. */
static void remote_revision(struct sched *s,
			    const struct store_code_revision *r, int deleted)
{
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = fn_named(s, r->tenant, r->ns, r->fn);
	struct code_fn *f = fn ? cfn_make(s, fn) : NULL;
	const char *hash = deleted ? "" : r->hash;
	size_t i;

	if (f == NULL || (hash[0] && !rt_code_hash_valid(hash)))
		return;
	if (strcmp(f->pub, hash) != 0) {
		for (i = 0; i < f->npub; i++)
			ref_drop(c, f->pub_objs[i]);
		free(f->pub_objs);
		f->pub_objs = NULL;
		f->npub = 0;
		/* The manifest alone: the objects it names are fetched as
		 * workers ask for them. */
		if (hash[0] && (f->pub_objs = calloc(1, 65)) != NULL) {
			memcpy(f->pub_objs[0], hash, 65);
			f->npub = 1;
			ref_add(c, hash);
		}
	}
	snprintf(f->pub, sizeof(f->pub), "%s", hash);
	f->pub_bytes = deleted ? 0 : r->bytes;
	f->pub_files = deleted ? 0 : r->files;
	if (s->leading && hash[0]) {
		/* The function's next revision follows in the same txn:
		 * workers start downloading before their starts. */
		prefetch(s, fn, hash, f->pub_bytes);
		obj_fetch(s, hash, NULL, NULL);
	}
}

/* The store's code listener. */
static void on_remote(void *arg, const struct etcd_keys_rec *r, int deleted)
{
	struct sched *s = arg;

	if (s->code == NULL)
		return;
	if (r->kind == ETCD_KEYS_CODE_FILE)
		remote_file(s, &r->file, deleted);
	else if (r->kind == ETCD_KEYS_CODE_REVISION)
		remote_revision(s, &r->code, deleted);
}

/* ============================================================= sending */

static void pump(struct sched *s);

static void on_pump(uv_timer_t *t)
{
	pump(t->data);
}

static void send_error(struct sched *s, struct sched_worker *w,
		       const char *hash, const char *object, int err,
		       const char *why)
{
	sched__send(s, w,
		    json_pack("{s:s, s:s, s:s, s:i, s:s}", "type", "code.error",
			      "hash", hash, "object", object ? object : "",
			      "err", err, "reason", why));
}

/* What pump_one did. */
enum { PUMP_DONE, PUMP_FULL, PUMP_SENT, PUMP_WAIT };

/* A cluster: an object the pump waits for has come from etcd, or not. */
static void on_pump_fetched(void *arg, int err, const char *hash)
{
	struct sched *s = arg;
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, n;

	v = err < 0 ? rt_idmap_values(&c->outs, &n) : NULL;
	for (i = 0; v != NULL && i < n; i++) {
		struct code_out *o = v[i];
		struct sched_obj *wo = sched_find(s, o->worker_id);
		struct code_item *it = o->head < o->n ? &o->items[o->head]
						      : NULL;

		if (o->fd >= 0 || it == NULL || strcmp(it->object, hash) != 0)
			continue;
		if (wo != NULL && wo->type == SCHED_WORKER &&
		    ((struct sched_worker *)wo)->online &&
		    ((struct sched_worker *)wo)->conn == o->conn)
			send_error(s, (struct sched_worker *)wo, it->hash,
				   it->object, EIO,
				   "the object cannot be read from etcd");
		o->head++;
	}
	free(v);
	pump(s);
}

/* Sends the next chunk of what `o` holds, unless the connection's
 * backlog is full. Returns PUMP_DONE when everything is sent, PUMP_FULL
 * when it stopped for the backlog, PUMP_SENT after a chunk. */
static int pump_one(struct sched *s, struct sched_worker *w, struct code_out *o)
{
	struct sched_code_state *c = st_of(s);
	static char buf[RT_CODE_CHUNK_MAX];

	while (o->head < o->n) {
		struct code_item *it = &o->items[o->head];
		struct stat sb;
		size_t len;
		ssize_t r;

		if (sched__conn_backlog(w->conn) >= SCHED_CODE_BACKLOG)
			return PUMP_FULL;
		if (o->fd < 0 && c->shared) {
			/* A cluster: what this controller lacks comes from
			 * etcd first. */
			int rc = obj_fetch(s, it->object, on_pump_fetched, s);

			if (rc == SCHED_CODE_LATER)
				return PUMP_WAIT;
			if (rc < 0) {
				send_error(s, w, it->hash, it->object, -rc,
					   "the object is not in etcd");
				o->head++;
				continue;
			}
		}
		if (o->fd < 0) {
			o->fd = refs_of(c, it->object) > 0 || c->shared
					? object_open(c, it->object)
					: -ENOENT;
			if (o->fd >= 0 && fstat(o->fd, &sb) < 0) {
				close(o->fd);
				o->fd = -EIO;
			}
			if (o->fd < 0) {
				send_error(s, w, it->hash, it->object, -o->fd,
					   "the object is gone (the code "
					   "changed since)");
				o->fd = -1;
				o->head++;
				continue;
			}
			o->off = 0;
			o->size = (uint64_t)sb.st_size;
		}
		len = o->size - o->off < RT_CODE_CHUNK_MAX
			      ? (size_t)(o->size - o->off)
			      : RT_CODE_CHUNK_MAX;
		do
			r = pread(o->fd, buf, len, (off_t)o->off);
		while (r < 0 && errno == EINTR);
		if (r != (ssize_t)len) {
			send_error(s, w, it->hash, it->object, EIO,
				   "the object cannot be read");
			close(o->fd);
			o->fd = -1;
			o->head++;
			continue;
		}
		sched__send_body(s, w,
				 json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}",
					   "type", "code.chunk", "hash",
					   it->hash, "object", it->object,
					   "offset", (json_int_t)o->off, "size",
					   (json_int_t)o->size, "last",
					   o->off + len == o->size),
				 buf, len);
		/* To the kernel at once, not at the end of the loop's turn:
		 * while it takes them, chunks follow one another. */
		sched__conn_flush(w->conn);
		o->off += len;
		if (o->off == o->size) {
			close(o->fd);
			o->fd = -1;
			o->head++;
		}
		return o->head < o->n ? PUMP_SENT : PUMP_DONE;
	}
	return PUMP_DONE;
}

/* Sends chunks to every worker that waits for some, one chunk to each
 * in turn (downloads to several workers go side by side, not one after
 * the other), while their connections take them, for up to
 * PUMP_SLICE_MS; then again at the loop's next turn, or PUMP_RETRY_MS
 * later when every connection with more to send is full. */
static void pump(struct sched *s)
{
	struct sched_code_state *c = st_of(s);
	int64_t t0 = rt_mono_ms();
	void **v;
	size_t i, n;
	int full = 0, sent = 1, rc;

	v = rt_idmap_values(&c->outs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct code_out *o = v[i];
		struct sched_obj *wo = sched_find(s, o->worker_id);
		struct sched_worker *w = wo && wo->type == SCHED_WORKER
						 ? (struct sched_worker *)wo
						 : NULL;

		if (w == NULL || !w->online || w->conn != o->conn ||
		    o->head == o->n) {
			rt_idmap_del(&c->outs, o->worker_id);
			out_free(o);
			v[i] = NULL;
		}
	}
	while (v != NULL && sent && rt_mono_ms() - t0 < PUMP_SLICE_MS) {
		sent = 0;
		for (i = 0; i < n; i++) {
			struct code_out *o = v[i];
			struct sched_worker *w;

			if (o == NULL)
				continue;
			w = (struct sched_worker *)sched_find(s, o->worker_id);
			rc = w != NULL && w->online && w->conn == o->conn
				     ? pump_one(s, w, o)
				     : PUMP_DONE;
			if (rc == PUMP_SENT) {
				sent = 1;
				continue;
			}
			if (rc == PUMP_FULL)
				full = 1;
			else if (rc != PUMP_WAIT)   /* WAIT: on_pump_fetched */
				o->head = o->n = 0; /* dropped next time */
			v[i] = NULL;
		}
	}
	free(v);
	if (c->started && (sent || full))
		uv_timer_start(&c->pump, on_pump, sent ? 0 : PUMP_RETRY_MS, 0);
}

/* Queues object `object` of download `hash` for `w`. */
static int enqueue(struct sched *s, struct sched_worker *w, const char *hash,
		   const char *object)
{
	struct sched_code_state *c = st_of(s);
	struct code_out *o = rt_idmap_get(&c->outs, w->obj.id);

	if (o != NULL && o->conn != w->conn) {
		rt_idmap_del(&c->outs, w->obj.id);
		out_free(o);
		o = NULL;
	}
	if (o == NULL) {
		o = calloc(1, sizeof(*o));
		if (o == NULL || rt_idmap_put(&c->outs, w->obj.id, o) < 0) {
			free(o);
			return -ENOMEM;
		}
		o->worker_id = w->obj.id;
		o->conn = w->conn;
		o->fd = -1;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct code_item *it = realloc(o->items, cap * sizeof(*it));

		if (it == NULL)
			return -ENOMEM;
		o->items = it;
		o->cap = cap;
	}
	memcpy(o->items[o->n].hash, hash, 65);
	memcpy(o->items[o->n++].object, object, 65);
	return 0;
}

int sched_code_may_serve(const char *pub, const char (*objs)[65], size_t n,
			 const char *hash, const char *object)
{
	size_t i;

	if (pub == NULL || pub[0] == '\0' || strcmp(pub, hash) != 0)
		return 0;
	if (object == NULL || strcmp(object, hash) == 0)
		return 1;
	for (i = 0; i < n; i++)
		if (strcmp(objs[i], object) == 0)
			return 1;
	return 0;
}

/* A cluster keeps only the manifest in pub_objs: the objects it names
 * are read from it here (it is local once a worker downloaded it). */
static void pub_load(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	struct rt_buf p = { 0 }, text = { 0 }, why = { 0 };
	char(*objs)[65];
	char buf[65536];
	ssize_t got;
	int fd;

	if (f->npub > 1 || f->pub_files <= 0 || f->pub_objs == NULL)
		return;
	objs = realloc(f->pub_objs, ((size_t)f->pub_files + 1) * 65);
	if (objs == NULL)
		return;
	f->pub_objs = objs;
	object_path(c, f->pub, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		rt_buf_append(&text, buf, (size_t)got);
	if (fd >= 0 &&
	    rt_code_manifest_parse(text.data ? text.data : "", text.len,
				   f->pub_files, pub_obj_cb, f, &why) < 0)
		f->npub = 1;
	if (fd >= 0)
		close(fd);
	rt_buf_free(&p);
	rt_buf_free(&text);
	rt_buf_free(&why);
}

struct may_ctx {
	struct sched *s;
	const char *hash;
	const char *object;
};

static int may_cb(const char *key, void *value, void *arg)
{
	struct may_ctx *x = arg;
	struct sched_instance *in = value;
	struct code_fn *f;

	(void)key;
	if (in->obj.parent == NULL || in->obj.parent->type != SCHED_FUNCTION)
		return 0;
	f = cfn_get(x->s, (struct sched_function *)in->obj.parent);
	if (f == NULL || strcmp(f->pub, x->hash) != 0)
		return 0;
	if (x->object != NULL && st_of(x->s)->shared)
		pub_load(x->s, f);
	return sched_code_may_serve(f->pub, (const char(*)[65])f->pub_objs,
				    f->npub, x->hash, x->object);
}

/* Whether `w` holds an instance of a function whose revision is `hash`
 * (and that references `object`, unless NULL). */
static int may_serve(struct sched *s, struct sched_worker *w, const char *hash,
		     const char *object)
{
	struct may_ctx x = { s, hash, object };

	return rt_map_each(&w->assignments, may_cb, &x) != 0;
}

void sched__code_on_message(struct sched *s, struct sched_worker *w,
			    const struct rt_msg *m)
{
	struct sched_code_state *c = st_of(s);
	const char *hash = rt_msg_str(m, "hash");
	json_t *objs = json_object_get(m->header, "objects"), *o;
	size_t i;

	if (!rt_code_hash_valid(hash)) {
		send_error(s, w, hash ? hash : "", NULL, EINVAL,
			   "not a code hash");
		return;
	}
	if (strcmp(m->type, "code.want") == 0) {
		uint64_t size;

		if (!may_serve(s, w, hash, NULL))
			send_error(s, w, hash, hash, EACCES,
				   "not the code of an instance on this "
				   "worker");
		else if (refs_of(c, hash) == 0 &&
			 !(c->shared &&
			   store_object_known(s->store, hash, &size) == 1))
			send_error(s, w, hash, hash, ENOENT,
				   "no such revision of code (it changed "
				   "since)");
		else if (enqueue(s, w, hash, hash) < 0)
			send_error(s, w, hash, hash, ENOMEM, "out of memory");
	} else if (!json_is_array(objs) ||
		   json_array_size(objs) > CODE_GET_MAX) {
		send_error(s, w, hash, NULL, EINVAL,
			   "code.get wants an array of at most 1024 objects");
	} else {
		json_array_foreach (objs, i, o) {
			const char *h = json_string_value(o);

			if (!rt_code_hash_valid(h))
				send_error(s, w, hash, NULL, EINVAL,
					   "not an object hash");
			else if (!may_serve(s, w, hash, h))
				send_error(s, w, hash, h, EACCES,
					   "not the code of an instance on "
					   "this worker");
			else if (enqueue(s, w, hash, h) < 0)
				send_error(s, w, hash, h, ENOMEM,
					   "out of memory");
		}
	}
	pump(s);
}

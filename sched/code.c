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
#include "common.h"
#include "conn.h"
#include "internal.h"
#include "reconcile.h"
#include "requests.h"

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
};

/* The code of one function. */
struct code_fn {
	struct sched_function *fn;
	struct sched_code_node *root;
	int entries;	    /* files and directories below the root */
	uint64_t bytes;	    /* of the files, open writes included */
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
	int sweep;    /* the next objects/ prefix to sweep; 256: done */
	uint64_t seq; /* names of staging and temporary files */
};

static int make_dirs(struct sched_code_state *c);

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

/* A cluster's controllers do not share code/ yet: a change is refused,
 * with the reason in the function's error and the journal. */
static int shared_refused(struct sched *s, const struct sched_code_node *n)
{
	sched__reject(s, n->fn, "code", EOPNOTSUPP,
		      "code/ is not shared by the controllers of a cluster "
		      "yet: deploy the program on the workers and name it "
		      "in command");
	return -EOPNOTSUPP;
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
	char why[160];

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
		      struct sched_code_node **out)
{
	struct code_fn *f = cfn_get(s, dir->fn);
	struct sched_code_node *n = NULL;
	struct rt_buf path = { 0 };
	int rc;

	*out = NULL;
	if (store_shared(s->store))
		return shared_refused(s, dir);
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
		      const char *name, int want_dir)
{
	struct sched_code_node *n = sched_code_child(dir, name);
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf path = { 0 };
	int rc;

	if (store_shared(s->store))
		return shared_refused(s, dir);
	if (n == NULL || f == NULL)
		return -ENOENT;
	if (want_dir && !is_dir(n))
		return -ENOTDIR;
	if (!want_dir && is_dir(n))
		return -EISDIR;
	if (is_dir(n) && n->children.count > 0)
		return -ENOTEMPTY;
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
		      const char *newname, unsigned flags)
{
	struct sched_code_node *n = sched_code_child(dir, name), *old, *up;
	struct code_fn *f = cfn_get(s, dir->fn);
	struct rt_buf from = { 0 }, to = { 0 };
	const char *k[3];
	int rc;

	if (store_shared(s->store))
		return shared_refused(s, dir);
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

int sched_code_chmod(struct sched *s, struct sched_code_node *n, uint32_t perm)
{
	uint32_t was = n->mode;
	int rc;

	if (store_shared(s->store))
		return shared_refused(s, n);
	if (n->parent == NULL)
		return 0; /* code/ itself follows the function */
	n->mode = (n->mode & S_IFMT) | (perm & 0777);
	if (n->mode == was)
		return 0;
	rc = store_node(s, n);
	if (rc < 0) {
		n->mode = was;
		return rc;
	}
	changed(s, cfn_get(s, n->fn));
	return 0;
}

int sched_code_touch(struct sched *s, struct sched_code_node *n,
		     int64_t mtime_ms)
{
	int64_t was = n->mtime_ms;
	int rc;

	if (store_shared(s->store))
		return shared_refused(s, n);
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

	if (store_shared(s->store))
		return shared_refused(s, n);
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
		n->size = end;
	}
	g->dirty = 1;
	return 0;
}

int sched_code_truncate(struct sched *s, struct sched_code_node *n,
			uint64_t size)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	int rc;

	if (store_shared(s->store))
		return shared_refused(s, n);
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
	n->size = size;
	g->dirty = 1;
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

int sched_code_commit(struct sched *s, struct sched_code_node *n)
{
	struct sched_code_state *c = st_of(s);
	struct sched_code_stage *g = n->stage;
	struct code_fn *f = cfn_get(s, n->fn);
	char h[65], was[65];
	int64_t mtime = n->mtime_ms;
	int rc;

	if (g == NULL || !g->dirty || f == NULL)
		return 0;
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

	if (g == NULL)
		return;
	if (g->dirty && sched_code_commit(s, n) < 0) {
		/* The content reverts to what was last closed. */
		rt_log(RT_LOG_WARN, "code: a write of %s was lost", n->name);
	}
	if (f != NULL && f->writers > 0)
		f->writers--;
	if (--g->writers > 0)
		return;
	if (g->dirty) {
		/* Not stored: the size is the stored content's again. */
		struct stat sb;
		int fd = object_open(st_of(s), n->hash);

		if (fd >= 0 && fstat(fd, &sb) == 0 && f != NULL) {
			f->bytes = f->bytes - n->size + (uint64_t)sb.st_size;
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
	n->mtime_ms = r->mtime_ms;
	if (!is_dir(n)) {
		snprintf(n->hash, sizeof(n->hash), "%s", r->hash);
		ref_add(st_of(s), n->hash);
		f->bytes += n->size;
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
	return 0;
}

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
enum { PUMP_DONE, PUMP_FULL, PUMP_SENT };

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
		if (o->fd < 0) {
			o->fd = refs_of(c, it->object) > 0
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
			else
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
		if (refs_of(c, hash) == 0)
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
			else if (enqueue(s, w, hash, h) < 0)
				send_error(s, w, hash, h, ENOMEM,
					   "out of memory");
		}
	}
	pump(s);
}

/*
 * fetch.c - the worker's side of code that travels (code.h): a start
 * whose spec names code ("code": {"hash", "bytes", "files"}) waits until
 * that revision is unpacked here. One download per hash: code.want gets
 * the manifest (an object named by the hash itself), code.get the
 * objects this worker lacks, as code.chunk messages that are checked and
 * assembled in order and verified against their SHA-256. Objects are
 * cached in DATA/cache/ID/code/objects, trees unpacked (in libuv's
 * thread pool, into a temporary directory renamed into place) in
 * DATA/cache/ID/code/trees/HASH/t: files 0444 or 0555 and directories
 * 0555, owned by the worker; a file is a hard link to its object when
 * the object has its mode (no copy of the bytes). A tree and the objects
 * only it references are removed once no instance uses it and no start
 * waits for it; a tree downloaded ahead (code.prefetch: a new revision of
 * a function that runs here) is kept PREFETCH_KEEP_MS after it is
 * unpacked for the first start that uses it.
 *
 * The function enters its tree by a descriptor the worker opens before
 * it drops its privileges (supervise.c), so the tree is reached by no
 * path the function could walk: DATA stays 0700, and another tenant's
 * function cannot read it.
 */
#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "worker.h"

#define FETCH_TIMEOUT_MS 30000	/* a download without progress this long */
#define GET_BATCH	 1024	/* objects per code.get */
#define FILES_MAX	 100000 /* entries a manifest may have here */
#define PREFETCH_KEEP_MS 120000 /* a prefetched tree no start used yet */

/* A start waiting for its code. */
struct wait {
	char *id;     /* the instance, owned */
	json_t *spec; /* owned reference */
	long long revision, seq;
	struct wait *next;
};

enum tree_state { FETCHING, BUILDING, READY, FAILED };

/* The code of one hash: its download, then its unpacked tree. */
struct tree {
	char hash[65];
	enum tree_state state;
	char *dir;	      /* owned: trees/HASH */
	int users;	      /* instances that run with it */
	struct wait *waits;   /* starts waiting for it */
	uint64_t bytes;	      /* announced by the start */
	struct rt_buf man;    /* the manifest */
	int have_man;	      /* it arrived and was read */
	char (*objs)[65];     /* the file objects it references, owned */
	size_t nobjs;	      /* (each once), counted in refs */
	char (*need)[65];     /* those to download, in order */
	size_t nneed, got;    /* asked for; arrived */
	uint16_t *modes;      /* of each of objs: its first file's mode */
	uint16_t *need_modes; /* of each of need (in modes' block) */
	struct rt_code_asm a; /* the object being received */
	int receiving;	      /* a is begun */
	int fd;		      /* its temporary file, or -1 */
	char *part;	      /* its path, owned */
	int64_t last_mono;    /* of the last progress */
	int prefetched;	      /* asked for by code.prefetch, unused yet */
	int64_t kept_until;   /* then kept unused until this, once ready */
	char why[200];	      /* a failure's reason */
};

/* The worker's code cache. */
struct cache {
	char *root;	    /* DATA/cache/ID/code, owned */
	char *objects;	    /* root/objects */
	char *trees;	    /* root/trees */
	char *tmp;	    /* root/tmp */
	struct rt_map all;  /* hash -> struct tree * */
	struct rt_map refs; /* object -> trees referencing it (uintptr_t) */
	struct rt_map uses; /* instance id -> hash (owned string) */
	uint64_t seq;	    /* names of temporary files */
	int works;	    /* jobs in the thread pool */
};

static struct cache *cache_of(struct rt_worker *w)
{
	return w->code;
}

static void path_of(struct rt_buf *b, const char *dir, const char *name)
{
	rt_buf_reset(b);
	rt_buf_printf(b, "%s/%s", dir, name);
}

/* ================================================== removing, in a thread */

/* Removal of a tree, renamed aside already. */
struct rm_job {
	uv_work_t req;
	struct rt_worker *w;
	char *dir; /* owned */
};

static int unlock_cb(const char *path, const struct stat *sb, int type,
		     struct FTW *f)
{
	(void)f;
	if (type == FTW_D && (sb->st_mode & 0700) != 0700)
		chmod(path, 0700);
	return 0;
}

static int rm_cb(const char *path, const struct stat *sb, int type,
		 struct FTW *f)
{
	(void)sb;
	(void)f;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* rm -rf `dir`: its directories are 0555, writable again first (for a
 * worker that is not root). */
static void rm_tree(const char *dir)
{
	nftw(dir, unlock_cb, 16, FTW_PHYS);
	nftw(dir, rm_cb, 16, FTW_PHYS | FTW_DEPTH);
}

static void rm_work(uv_work_t *req)
{
	rm_tree(((struct rm_job *)req->data)->dir);
}

static void rm_done(uv_work_t *req, int status)
{
	struct rm_job *j = req->data;

	(void)status;
	cache_of(j->w)->works--;
	free(j->dir);
	free(j);
}

/* Renames `dir` (taken) aside at once, and removes it in the thread
 * pool. */
static void remove_later(struct rt_worker *w, char *dir)
{
	struct cache *c = cache_of(w);
	struct rm_job *j = calloc(1, sizeof(*j));
	struct rt_buf aside = { 0 };

	rt_buf_printf(&aside, "%s/gone-%" PRIu64, c->tmp, ++c->seq);
	if (j == NULL || aside.data == NULL || rename(dir, aside.data) < 0) {
		rt_log(RT_LOG_WARN, "code: cannot remove %s: %s", dir,
		       strerror(errno));
		rt_buf_free(&aside);
		free(dir);
		free(j);
		return;
	}
	free(dir);
	j->req.data = j;
	j->w = w;
	j->dir = aside.data;
	c->works++;
	if (uv_queue_work(w->loop, &j->req, rm_work, rm_done) < 0) {
		rm_work(&j->req);
		rm_done(&j->req, 0);
	}
}

/* ============================================================ references */

static void ref_add(struct cache *c, const char *h)
{
	uintptr_t n = (uintptr_t)rt_map_del(&c->refs, h);

	rt_map_put(&c->refs, h, (void *)(n + 1));
}

/* Drops a reference; an object that loses its last one is unlinked
 * (at once: a download of it that follows must not race a removal). */
static void ref_drop(struct cache *c, const char *h)
{
	uintptr_t k = (uintptr_t)rt_map_del(&c->refs, h);
	struct rt_buf p = { 0 };

	if (k > 1) {
		rt_map_put(&c->refs, h, (void *)(k - 1));
		return;
	}
	path_of(&p, c->objects, h);
	if (p.data != NULL)
		unlink(p.data);
	rt_buf_free(&p);
}

/* ================================================================ trees */

static void wait_free(struct wait *q)
{
	free(q->id);
	json_decref(q->spec);
	free(q);
}

/* Forgets tree `t`: its directory and the objects only it used go. */
static void tree_drop(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	size_t i;

	/* Unused, unwaited, and no download or build refers to it. */
	assert(t->users == 0 && t->waits == NULL);
	assert(t->state == READY || t->state == FAILED);
	rt_map_del(&c->all, t->hash);
	if (t->receiving)
		rt_code_asm_free(&t->a);
	if (t->fd >= 0)
		close(t->fd);
	if (t->part != NULL)
		unlink(t->part);
	/* What arrived before the manifest was read cannot be: none. */
	for (i = 0; i < t->nobjs; i++)
		ref_drop(c, t->objs[i]);
	if (access(t->dir, F_OK) == 0)
		remove_later(w, t->dir);
	else
		free(t->dir);
	free(t->part);
	free(t->objs);
	free(t->need);
	free(t->modes);
	rt_buf_free(&t->man);
	free(t);
}

/* Drops `t` when nothing uses or waits for it, it is not busy, and it
 * is not a prefetched tree still waiting for its first start. */
static void tree_tidy(struct rt_worker *w, struct tree *t)
{
	if (t->users == 0 && t->waits == NULL && t->state != BUILDING &&
	    t->state != FETCHING &&
	    (t->state == FAILED || t->kept_until <= rt_mono_ms()))
		tree_drop(w, t);
}

/* Fails every start waiting for `t`, for `why`. */
static void tree_fail(struct rt_worker *w, struct tree *t, int err,
		      const char *why)
{
	struct wait *q;

	/* Only a download or a build fails. */
	assert(t->state == FETCHING || t->state == BUILDING);
	t->state = FAILED;
	snprintf(t->why, sizeof(t->why), "%s", why);
	rt_log(RT_LOG_WARN, "worker %s: code %.12s: %s", w->id, t->hash, why);
	while ((q = t->waits) != NULL) {
		struct rt_instance *in = rt_map_get(&w->sup.instances, q->id);

		t->waits = q->next;
		if (in != NULL && !in->freeing)
			rt_instance_fail(in, t->why);
		rt_worker_reply(w, q->seq, err);
		wait_free(q);
	}
	tree_tidy(w, t);
}

/* Records that instance `id` runs with tree `hash` (NULL: none),
 * releasing the one it used before. */
static void use(struct rt_worker *w, const char *id, const char *hash)
{
	struct cache *c = cache_of(w);
	char *was = rt_map_del(&c->uses, id);
	struct tree *t;

	if (hash != NULL) {
		char *h = strdup(hash);

		if (h == NULL || rt_map_put(&c->uses, id, h) < 0) {
			free(h);
		} else if ((t = rt_map_get(&c->all, hash)) != NULL) {
			t->users++;
			t->prefetched = 0; /* kept while used, as any tree */
			t->kept_until = 0;
		}
	}
	if (was != NULL && (t = rt_map_get(&c->all, was)) != NULL) {
		assert(t->users > 0); /* counted when `id` took it */
		t->users--;
		tree_tidy(w, t);
	}
	free(was);
}

/* The spec `spec` with "code_dir" set to tree `t`: a new reference. */
static json_t *with_dir(json_t *spec, const struct tree *t)
{
	json_t *s = json_deep_copy(spec);
	struct rt_buf p = { 0 };

	rt_buf_printf(&p, "%s/t", t->dir);
	if (s != NULL && p.data != NULL)
		json_object_set_new(s, "code_dir", json_string(p.data));
	rt_buf_free(&p);
	return s;
}

/* Starts what waits for ready tree `t`. */
static void tree_ready(struct rt_worker *w, struct tree *t)
{
	struct wait *q;

	assert(t->state == BUILDING); /* unpacked by its build */
	t->state = READY;
	while ((q = t->waits) != NULL) {
		struct rt_instance *in = rt_map_get(&w->sup.instances, q->id);
		json_t *spec;

		t->waits = q->next;
		if (in == NULL || in->freeing) {
			rt_worker_reply(w, q->seq, ECANCELED);
		} else if ((spec = with_dir(q->spec, t)) == NULL) {
			rt_worker_reply(w, q->seq, ENOMEM);
		} else {
			use(w, q->id, t->hash);
			rt_worker_start(w, in, spec, q->revision, q->seq);
			json_decref(spec);
		}
		wait_free(q);
	}
	if (t->prefetched) /* kept for the first start that uses it */
		t->kept_until = rt_mono_ms() + PREFETCH_KEEP_MS;
	tree_tidy(w, t);
}

/* =============================================== building, in a thread */

struct build_job {
	uv_work_t req;
	struct rt_worker *w;
	char hash[65];
	char *man; /* the manifest, owned copy */
	size_t len;
	char *objects; /* not owned (the cache's) */
	char *tmp;     /* the tree being built, owned */
	char *dir;     /* where it goes, owned */
	int err;
	char why[200];
};

struct build_ctx {
	struct build_job *j;
	struct rt_buf p, o;
};

/* The mode of a file in a tree: read-only, executable as asked. */
static unsigned file_mode(unsigned perm)
{
	return (perm & 0555) | 0444;
}

static int copy_file(const char *from, const char *to, unsigned perm)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	ssize_t r;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r) {
			rc = -EIO;
			goto out;
		}
	if (r < 0 || fchmod(out, file_mode(perm)) < 0)
		rc = -errno;
out:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* A file of a tree is its object itself, hard-linked, when the object
 * has the mode the file wants (what end_object gave it for the first
 * file that wanted it): no copy of its bytes. An object is never written
 * or chmod'ed once in the cache, and nothing here writes a tree's file. A
 * file that wants another mode (the same bytes, executable once and not
 * elsewhere) is a copy. */
static int link_or_copy(const char *from, const char *to, unsigned perm)
{
	struct stat sb;

	if (stat(from, &sb) == 0 && (sb.st_mode & 07777) == file_mode(perm) &&
	    link(from, to) == 0)
		return 0;
	return copy_file(from, to, perm);
}

static int build_cb(const struct rt_code_entry *e, void *arg)
{
	struct build_ctx *x = arg;
	int rc;

	path_of(&x->p, x->j->tmp, e->path);
	if (x->p.data == NULL)
		return -ENOMEM;
	if (e->dir) {
		rc = mkdir(x->p.data, 0700) < 0 ? -errno : 0;
	} else {
		path_of(&x->o, x->j->objects, e->hash);
		rc = x->o.data ? link_or_copy(x->o.data, x->p.data, e->perm)
			       : -ENOMEM;
	}
	if (rc < 0)
		snprintf(x->j->why, sizeof(x->j->why), "cannot unpack %s: %s",
			 e->path, strerror(-rc));
	return rc;
}

/* Directories are made 0700 to be filled, then 0555, deepest first. */
static int seal_cb(const char *path, const struct stat *sb, int type,
		   struct FTW *f)
{
	(void)sb;
	(void)f;
	if (type == FTW_DP && chmod(path, 0555) < 0)
		return -1;
	return 0;
}

static void build_work(uv_work_t *req)
{
	struct build_job *j = req->data;
	struct build_ctx x = { j, { 0 }, { 0 } };
	struct rt_buf why = { 0 };

	if (mkdir(j->tmp, 0700) < 0) {
		j->err = errno;
		snprintf(j->why, sizeof(j->why), "cannot unpack: %s",
			 strerror(errno));
		goto out;
	}
	j->err = -rt_code_manifest_parse(j->man, j->len, FILES_MAX, build_cb,
					 &x, &why);
	if (j->err == 0 && nftw(j->tmp, seal_cb, 16, FTW_PHYS | FTW_DEPTH))
		j->err = EIO;
	if (j->err == 0 && rename(j->tmp, j->dir) < 0)
		j->err = errno;
	if (j->err != 0 && j->why[0] == '\0')
		snprintf(j->why, sizeof(j->why), "cannot unpack: %s",
			 why.data ? why.data : strerror(j->err));
out:
	rt_buf_free(&x.p);
	rt_buf_free(&x.o);
	rt_buf_free(&why);
}

static void build_done(uv_work_t *req, int status)
{
	struct build_job *j = req->data;
	struct cache *c = cache_of(j->w);
	struct tree *t = rt_map_get(&c->all, j->hash);
	struct rt_buf p = { 0 };

	(void)status;
	c->works--;
	if (j->err != 0)
		rm_tree(j->tmp); /* whatever was made goes */
	if (t != NULL && j->err == 0)
		tree_ready(j->w, t);
	else if (t != NULL)
		tree_fail(j->w, t, j->err, j->why);
	rt_buf_free(&p);
	free(j->man);
	free(j->tmp);
	free(j->dir);
	free(j);
}

/* Unpacks tree `t`: DIR/trees/HASH/t, made aside and renamed in. */
static void tree_build(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	struct build_job *j = calloc(1, sizeof(*j));
	struct rt_buf tmp = { 0 }, dir = { 0 };

	if (j == NULL || (j->man = malloc(t->man.len + 1)) == NULL) {
		free(j);
		tree_fail(w, t, ENOMEM, "code: out of memory");
		return;
	}
	assert(t->state == FETCHING && t->have_man);
	t->state = BUILDING;
	memcpy(j->man, t->man.data, t->man.len);
	j->len = t->man.len;
	j->req.data = j;
	j->w = w;
	memcpy(j->hash, t->hash, 65);
	j->objects = c->objects;
	rt_buf_printf(&tmp, "%s/tree-%" PRIu64, c->tmp, ++c->seq);
	rt_buf_printf(&dir, "%s/t", t->dir);
	j->tmp = tmp.data;
	j->dir = dir.data;
	if (mkdir(t->dir, 0711) < 0 && errno != EEXIST) {
		j->err = errno;
		snprintf(j->why, sizeof(j->why), "code: cannot make %s: %s",
			 t->dir, strerror(errno));
		c->works++;
		build_done(&j->req, 0);
		return;
	}
	c->works++;
	if (uv_queue_work(w->loop, &j->req, build_work, build_done) < 0) {
		build_work(&j->req);
		build_done(&j->req, 0);
	}
}

/* ============================================================= download */

static void send_want(struct rt_worker *w, struct tree *t)
{
	t->last_mono = rt_mono_ms();
	rt_worker_send(
		w,
		json_pack("{s:s, s:s}", "type", "code.want", "hash", t->hash),
		NULL, 0);
}

/* Collects the distinct file objects of a manifest. */
struct need_ctx {
	struct tree *t;
	struct rt_map seen;
};

static int need_cb(const struct rt_code_entry *e, void *arg)
{
	struct need_ctx *x = arg;
	struct tree *t = x->t;

	if (e->dir || rt_map_get(&x->seen, e->hash) != NULL)
		return 0;
	if (rt_map_put(&x->seen, e->hash, (void *)1) < 0)
		return -ENOMEM;
	t->modes[t->nobjs] = (uint16_t)file_mode(e->perm);
	memcpy(t->objs[t->nobjs++], e->hash, 65);
	return 0;
}

static int count_cb(const struct rt_code_entry *e, void *arg)
{
	(void)e;
	++*(size_t *)arg;
	return 0;
}

/* The manifest arrived: what it references is counted, what is missing
 * asked for. */
static int got_manifest(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	struct rt_buf why = { 0 }, p = { 0 };
	size_t n = 0, i, k;
	json_t *batch = NULL;
	int rc;

	rc = rt_code_manifest_parse(t->man.data ? t->man.data : "", t->man.len,
				    FILES_MAX, count_cb, &n, &why);
	if (rc == 0 &&
	    ((t->objs = calloc(n + 1, sizeof(*t->objs))) == NULL ||
	     (t->need = calloc(n + 1, sizeof(*t->need))) == NULL ||
	     (t->modes = calloc(2 * (n + 1), sizeof(*t->modes))) == NULL))
		rc = -ENOMEM;
	if (rc == 0) {
		struct need_ctx x = { t, { 0 } };

		rc = rt_code_manifest_parse(t->man.data, t->man.len, FILES_MAX,
					    need_cb, &x, &why);
		rt_map_free(&x.seen);
	}
	if (rc < 0) {
		snprintf(t->why, sizeof(t->why), "code: bad manifest: %s",
			 why.data ? why.data : strerror(-rc));
		rt_buf_free(&why);
		return rc;
	}
	t->have_man = 1;
	t->need_modes = t->modes + n + 1;
	for (i = 0; i < t->nobjs; i++) {
		path_of(&p, c->objects, t->objs[i]);
		if (p.data == NULL || access(p.data, F_OK) < 0) {
			t->need_modes[t->nneed] = t->modes[i];
			memcpy(t->need[t->nneed++], t->objs[i], 65);
		}
		ref_add(c, t->objs[i]);
	}
	rt_buf_free(&p);
	for (i = 0; i < t->nneed; i += GET_BATCH) {
		batch = json_array();
		for (k = i; k < t->nneed && k < i + GET_BATCH; k++)
			json_array_append_new(batch, json_string(t->need[k]));
		rt_worker_send(w,
			       json_pack("{s:s, s:s, s:o}", "type", "code.get",
					 "hash", t->hash, "objects", batch),
			       NULL, 0);
	}
	return 0;
}

/* Everything `t` needs is here: it is unpacked. */
static void fetched(struct rt_worker *w, struct tree *t)
{
	assert(t->state == FETCHING && t->got == t->nneed && !t->receiving);
	if (t->waits == NULL && t->users == 0 && !t->prefetched) {
		t->state = FAILED; /* nobody wants it any more */
		tree_tidy(w, t);
		return;
	}
	tree_build(w, t);
}

/* Begins receiving an object in `t`: the manifest into memory, another
 * into a temporary file. */
static int begin_object(struct rt_worker *w, struct tree *t, const char *object,
			uint64_t size, struct rt_buf *why)
{
	struct cache *c = cache_of(w);
	int manifest = !t->have_man;
	struct rt_buf p = { 0 };
	int rc;

	if (manifest ? strcmp(object, t->hash) != 0
		     : t->got >= t->nneed ||
			       strcmp(object, t->need[t->got]) != 0) {
		rt_buf_printf(why, "code: object %.12s was not asked for now",
			      object);
		return -EPROTO;
	}
	t->fd = -1;
	if (!manifest) {
		rt_buf_printf(&p, "%s/part-%" PRIu64, c->tmp, ++c->seq);
		t->fd = p.data ? open(p.data,
				      O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
				      0600)
			       : -1;
		if (t->fd < 0) {
			rt_buf_printf(why, "code: cannot write %s: %s", c->tmp,
				      strerror(errno));
			rt_buf_free(&p);
			return -EIO;
		}
		free(t->part);
		t->part = p.data;
	}
	rc = rt_code_asm_begin(&t->a, object, size,
			       manifest ? RT_CODE_OBJECT_MAX
					: (t->bytes < RT_CODE_OBJECT_MAX
						   ? t->bytes
						   : RT_CODE_OBJECT_MAX),
			       t->fd, why);
	if (rc == 0)
		t->receiving = 1;
	return rc;
}

/* An object of `t` arrived whole and verified. */
static int end_object(struct rt_worker *w, struct tree *t, struct rt_buf *why)
{
	struct cache *c = cache_of(w);
	struct rt_buf p = { 0 };
	int rc = 0;

	rt_code_asm_free(&t->a);
	t->receiving = 0;
	if (!t->have_man) {
		rc = got_manifest(w, t);
		if (rc < 0)
			rt_buf_puts(why, t->why);
		return rc;
	}
	path_of(&p, c->objects, t->need[t->got]);
	/* The mode a tree gives its file: linked into the tree as it is. */
	if (p.data == NULL || fchmod(t->fd, t->need_modes[t->got]) < 0 ||
	    rename(t->part, p.data) < 0) {
		rt_buf_printf(why, "code: cannot keep object %.12s: %s",
			      t->need[t->got], strerror(errno));
		rc = -EIO;
	}
	close(t->fd);
	t->fd = -1;
	free(t->part);
	t->part = NULL;
	rt_buf_free(&p);
	t->got++;
	return rc;
}

/* A code.chunk message. */
static void on_chunk(struct rt_worker *w, struct tree *t,
		     const struct rt_msg *m)
{
	const char *object = rt_msg_str(m, "object");
	long long off = rt_msg_int(m, "offset", -1),
		  size = rt_msg_int(m, "size", -1);
	int last = json_is_true(json_object_get(m->header, "last"));
	struct rt_buf why = { 0 };
	int rc = 0;

	t->last_mono = rt_mono_ms();
	if (object == NULL || off < 0 || size < 0) {
		rt_buf_puts(&why, "code: a malformed chunk");
		rc = -EPROTO;
	}
	if (rc == 0 && !t->receiving)
		rc = begin_object(w, t, object, (uint64_t)size, &why);
	if (rc == 0)
		rc = rt_code_asm_feed(&t->a, object, (uint64_t)off,
				      (uint64_t)size, m->body ? m->body : "",
				      m->body_len, last, &why);
	if (rc >= 0 && !t->have_man &&
	    rt_buf_append(&t->man, m->body ? m->body : "", m->body_len) < 0)
		rc = -ENOMEM;
	if (rc == 1)
		rc = end_object(w, t, &why);
	if (rc < 0)
		tree_fail(w, t, -rc == EBADMSG ? EIO : -rc,
			  why.data ? why.data : "code: download failed");
	else if (t->have_man && t->got == t->nneed && !t->receiving &&
		 t->state == FETCHING)
		fetched(w, t);
	rt_buf_free(&why);
}

static void prefetch(struct rt_worker *w, const struct rt_msg *m);

void rt_code_on_message(struct rt_worker *w, const struct rt_msg *m)
{
	struct cache *c = cache_of(w);
	const char *hash = rt_msg_str(m, "hash");
	struct tree *t = c && hash ? rt_map_get(&c->all, hash) : NULL;
	const char *why = rt_msg_str(m, "reason");
	char text[256];

	if (strcmp(m->type, "code.prefetch") == 0) {
		prefetch(w, m);
		return;
	}
	if (t == NULL || t->state != FETCHING)
		return; /* a download that ended already */
	if (strcmp(m->type, "code.chunk") == 0) {
		on_chunk(w, t, m);
	} else if (strcmp(m->type, "code.error") == 0) {
		snprintf(text, sizeof(text), "code: the controller: %s",
			 why ? why : "an error");
		tree_fail(w, t, (int)rt_msg_int(m, "err", EIO), text);
	}
}

/* Starts downloading `hash` again from the beginning (a new
 * connection). */
static void restart(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	size_t i;

	if (t->receiving)
		rt_code_asm_free(&t->a);
	t->receiving = 0;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->part != NULL)
		unlink(t->part);
	for (i = 0; i < t->nobjs; i++)
		ref_drop(c, t->objs[i]);
	free(t->objs);
	free(t->need);
	free(t->modes);
	t->modes = t->need_modes = NULL;
	t->objs = t->need = NULL;
	t->nobjs = t->nneed = t->got = 0;
	t->have_man = 0;
	rt_buf_reset(&t->man);
	send_want(w, t);
}

static int reconnect_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;

	(void)key;
	if (t->state == FETCHING)
		restart(arg, t);
	return 0;
}

void rt_code_reconnected(struct rt_worker *w)
{
	if (cache_of(w) != NULL)
		rt_map_each(&cache_of(w)->all, reconnect_cb, w);
}

void rt_code_tick(struct rt_worker *w)
{
	struct cache *c = cache_of(w);
	void **v;
	size_t i, n;
	char why[128];

	if (c == NULL)
		return;
	v = rt_map_values(&c->all, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct tree *t = v[i];

		if (t->state == FETCHING &&
		    rt_mono_ms() - t->last_mono > FETCH_TIMEOUT_MS) {
			snprintf(why, sizeof(why),
				 "code: nothing arrived for %d s",
				 FETCH_TIMEOUT_MS / 1000);
			tree_fail(w, t, ETIMEDOUT, why);
		} else if (t->kept_until != 0 &&
			   t->kept_until <= rt_mono_ms()) {
			t->kept_until = 0;
			t->prefetched = 0;
			tree_tidy(w, t); /* a prefetch no start came for */
		}
	}
	free(v);
}

/* Begins downloading revision `hash` of `bytes` bytes. Returns its new
 * tree, or NULL when out of memory. */
static struct tree *tree_fetch(struct rt_worker *w, const char *hash,
			       uint64_t bytes)
{
	struct cache *c = cache_of(w);
	struct rt_buf dir = { 0 };
	struct tree *t = calloc(1, sizeof(*t));

	rt_buf_printf(&dir, "%s/%s", c->trees, hash);
	if (t == NULL || dir.data == NULL || rt_map_put(&c->all, hash, t) < 0) {
		free(t);
		rt_buf_free(&dir);
		return NULL;
	}
	memcpy(t->hash, hash, 65);
	t->dir = dir.data;
	t->fd = -1;
	t->bytes = bytes;
	t->state = FETCHING;
	send_want(w, t);
	return t;
}

/* code.prefetch: the controller made revision `hash` of code that
 * instances here will be started with; it is downloaded now (one
 * download per hash, as for a start) and kept PREFETCH_KEEP_MS for the
 * first start that uses it. */
static void prefetch(struct rt_worker *w, const struct rt_msg *m)
{
	const char *hash = rt_msg_str(m, "hash");
	long long bytes = rt_msg_int(m, "bytes", 0);
	struct tree *t;

	if (cache_of(w) == NULL || !rt_code_hash_valid(hash) || bytes < 0)
		return;
	t = rt_map_get(&cache_of(w)->all, hash);
	if (t == NULL)
		t = tree_fetch(w, hash, (uint64_t)bytes);
	else if (t->users > 0 || t->waits != NULL)
		return; /* in use already: kept anyway */
	if (t == NULL || t->state == FAILED)
		return;
	t->prefetched = 1;
	if (t->state == READY)
		t->kept_until = rt_mono_ms() + PREFETCH_KEEP_MS;
}

/* Drops the start waiting for instance `id` in `t`, answering it. */
static int cancel_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;
	const char **a = arg;
	struct wait **pq = &t->waits, *q;

	(void)key;
	while ((q = *pq) != NULL) {
		if (strcmp(q->id, a[1]) == 0) {
			*pq = q->next;
			rt_worker_reply((struct rt_worker *)a[0], q->seq,
					ECANCELED);
			wait_free(q);
		} else {
			pq = &q->next;
		}
	}
	return 0;
}

void rt_code_cancel(struct rt_worker *w, const char *id)
{
	struct cache *c = cache_of(w);
	const void *a[2] = { w, id };
	void **v;
	size_t i, n;

	if (c == NULL)
		return;
	rt_map_each(&c->all, cancel_cb, (void *)a);
	/* Trees nobody waits for any more may go (not while busy). */
	v = rt_map_values(&c->all, &n);
	for (i = 0; v != NULL && i < n; i++)
		tree_tidy(w, v[i]);
	free(v);
}

void rt_code_release(struct rt_worker *w, const char *id)
{
	if (cache_of(w) != NULL)
		use(w, id, NULL);
}

int rt_code_start(struct rt_worker *w, struct rt_instance *in, json_t **spec,
		  long long revision, long long seq)
{
	struct cache *c = cache_of(w);
	json_t *code = json_object_get(*spec, "code");
	const char *hash = json_string_value(json_object_get(code, "hash"));
	json_int_t bytes = json_integer_value(json_object_get(code, "bytes"));
	struct tree *t;
	struct wait *q;

	rt_code_cancel(w, in->id); /* a start replaces the one waiting */
	/* Where code runs is the worker's to say, never the message's. */
	json_object_del(*spec, "code_dir");
	if (code == NULL) {
		rt_code_release(w, in->id);
		*spec = json_incref(*spec);
		return 0;
	}
	if (c == NULL || !rt_code_hash_valid(hash) || bytes < 0) {
		rt_instance_fail(in, c == NULL ? "code: this worker has no "
						 "code cache"
					       : "code: a malformed start");
		rt_worker_reply(w, seq, c == NULL ? EIO : EINVAL);
		return 1;
	}
	t = rt_map_get(&c->all, hash);
	if (t != NULL && t->state == READY) {
		*spec = with_dir(*spec, t);
		if (*spec == NULL) {
			rt_worker_reply(w, seq, ENOMEM);
			return 1;
		}
		use(w, in->id, hash);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL || (q->id = strdup(in->id)) == NULL) {
		free(q);
		rt_worker_reply(w, seq, ENOMEM);
		return 1;
	}
	q->spec = json_incref(*spec);
	q->revision = revision;
	q->seq = seq;
	if (t == NULL && (t = tree_fetch(w, hash, (uint64_t)bytes)) == NULL) {
		wait_free(q);
		rt_worker_reply(w, seq, ENOMEM);
		return 1;
	}
	q->next = t->waits;
	t->waits = q;
	return 1;
}

/* Makes PARENT/NAME 0700 (made, or there already), its path in `b`.
 * Returns 0 or -errno. */
static int make_dir(struct rt_buf *b, const char *parent, const char *name)
{
	struct rt_buf p = { 0 };

	if (rt_buf_printf(&p, "%s/%s", parent, name) < 0)
		return -ENOMEM;
	rt_buf_free(b);
	*b = p;
	if (mkdir(b->data, 0700) < 0 &&
	    (errno != EEXIST || chmod(b->data, 0700) < 0))
		return -errno; /* one made loose since is private again */
	return 0;
}

int rt_code_init(struct rt_worker *w)
{
	struct cache *c = calloc(1, sizeof(*c));
	struct rt_buf b = { 0 }, old = { 0 };
	int rc = -ENOMEM;

	if (c == NULL)
		return -ENOMEM;
	rc = make_dir(&b, w->data_dir, "cache");
	if (rc == 0)
		rc = make_dir(&b, b.data, w->id);
	if (rc < 0)
		goto out;
	/* What a former run of this worker left: its instances died with
	 * it. Removed before the loop runs. */
	rt_buf_printf(&old, "%s/code", b.data);
	if (old.data != NULL && access(old.data, F_OK) == 0) {
		struct rt_buf aside = { 0 };

		rt_buf_printf(&aside, "%s/code.old-%d", b.data, (int)getpid());
		if (aside.data != NULL && rename(old.data, aside.data) == 0)
			rm_tree(aside.data);
		rt_buf_free(&aside);
	}
	rc = make_dir(&b, b.data, "code");
	if (rc == 0 && (c->root = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "objects");
	if (rc == 0 && (c->objects = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "trees");
	if (rc == 0 && (c->trees = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "tmp");
	if (rc == 0 && (c->tmp = strdup(b.data)) == NULL)
		rc = -ENOMEM;
out:
	rt_buf_free(&b);
	rt_buf_free(&old);
	if (rc < 0) {
		free(c->root);
		free(c->objects);
		free(c->trees);
		free(c->tmp);
		free(c);
		return rc;
	}
	w->code = c;
	return 0;
}

static int free_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;
	struct wait *q;

	(void)key;
	(void)arg;
	while ((q = t->waits) != NULL) {
		t->waits = q->next;
		wait_free(q);
	}
	if (t->receiving)
		rt_code_asm_free(&t->a);
	if (t->fd >= 0)
		close(t->fd);
	free(t->dir);
	free(t->part);
	free(t->objs);
	free(t->need);
	free(t->modes);
	rt_buf_free(&t->man);
	free(t);
	return 0;
}

static int free_use_cb(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	free(value);
	return 0;
}

void rt_code_close(struct rt_worker *w)
{
	struct cache *c = cache_of(w);

	if (c == NULL)
		return;
	rt_map_each(&c->all, free_cb, NULL);
	rt_map_each(&c->uses, free_use_cb, NULL);
	rt_map_free(&c->all);
	rt_map_free(&c->uses);
	rt_map_free(&c->refs);
	free(c->root);
	free(c->objects);
	free(c->trees);
	free(c->tmp);
	free(c);
	w->code = NULL;
}

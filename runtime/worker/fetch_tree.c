/*
 * fetch_tree.c - the file system work of the worker's code cache, in
 * libuv's thread pool: unpacking a tree (files 0444 or 0555, hard links
 * to their objects when the modes agree, a copy otherwise; made aside and
 * renamed into place) and removing one (renamed aside at once, removed
 * later). See fetch.c.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch_int.h"
#include "worker.h"

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
void rt__fetch_rm_tree(const char *dir)
{
	nftw(dir, unlock_cb, 16, FTW_PHYS);
	nftw(dir, rm_cb, 16, FTW_PHYS | FTW_DEPTH);
}

static void rm_work(uv_work_t *req)
{
	rt__fetch_rm_tree(((struct rm_job *)req->data)->dir);
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
void rt__fetch_remove_later(struct rt_worker *w, char *dir)
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
unsigned rt__fetch_file_mode(unsigned perm)
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
	if (r < 0 || fchmod(out, rt__fetch_file_mode(perm)) < 0)
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

	if (stat(from, &sb) == 0 &&
	    (sb.st_mode & 07777) == rt__fetch_file_mode(perm) &&
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
		rt__fetch_rm_tree(j->tmp); /* whatever was made goes */
	if (t != NULL && j->err == 0)
		rt__fetch_tree_ready(j->w, t);
	else if (t != NULL)
		rt__fetch_tree_fail(j->w, t, j->err, j->why);
	rt_buf_free(&p);
	free(j->man);
	free(j->tmp);
	free(j->dir);
	free(j);
}

/* Unpacks tree `t`: DIR/trees/HASH/t, made aside and renamed in. */
void rt__fetch_tree_build(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	struct build_job *j = calloc(1, sizeof(*j));
	struct rt_buf tmp = { 0 }, dir = { 0 };

	if (j == NULL || (j->man = malloc(t->man.len + 1)) == NULL) {
		free(j);
		rt__fetch_tree_fail(w, t, ENOMEM, "code: out of memory");
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

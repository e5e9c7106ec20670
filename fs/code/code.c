/*
 * code/code.c - the FUSE side of a function's code/ directory: an ordinary
 * tree of files and directories that cp, tar, rm, mkdir, mv, chmod and
 * truncate work on, kept by sched/code/code.c. ops.c hands every request on a
 * code inode (code/ itself, FS_CODE_DIR, or a node below it,
 * FS_CODE_NODE, numbered by the node's id) to the functions here.
 *
 * Rights: the nodes show the tenant's owner and group and their own
 * permission bits, which the kernel checks (default_permissions); a
 * change also needs the write right on the function directory, as its
 * other files do. chown is accepted and changes nothing (the owner is
 * the tenant's); times are kept; symlinks, hard links and special files
 * are refused with EPERM.
 *
 * On a cluster a change is stored in etcd before it is answered, and a
 * file's content may have to come from etcd before it is read: sched
 * answers SCHED_CODE_LATER, and the request is answered from the
 * callback (struct code_wait).
 *
 * This file: resolving, stat and lookup of code nodes, and the answer to
 * a request that waited; change.c the changes of the tree (setattr,
 * mkdir, create, unlink, rmdir, rename), file.c the open files, dir.c
 * the listings.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"

struct code_wait *code_wait_new(fuse_req_t req, enum wait_kind kind)
{
	struct code_wait *w = calloc(1, sizeof(*w));

	if (w != NULL) {
		w->req = req;
		w->kind = kind;
	}
	return w;
}

void code_wait_free(struct code_wait *w)
{
	if (w != NULL)
		free(w->name);
	free(w);
}

int fs_code_owns(fuse_ino_t ino)
{
	enum fs_kind k = (enum fs_kind)(ino & 0xff);

	return ino != FUSE_ROOT_ID && (k == FS_CODE_DIR || k == FS_CODE_NODE);
}

int fs_code_resolve(struct fs *fs, uint64_t id, struct fs_node *out)
{
	struct sched_code_node *c = sched_code_find(fs->sched, id);

	if (c == NULL)
		return -ENOENT;
	out->kind = FS_CODE_NODE;
	out->obj = &c->fn->obj;
	out->code = c;
	return 0;
}

/* The code node of `n` (code/ itself for FS_CODE_DIR), or NULL. */
struct sched_code_node *code_of(struct fs *fs, const struct fs_node *n)
{
	if (n->kind == FS_CODE_NODE)
		return n->code;
	if (n->kind == FS_CODE_DIR)
		return sched_code_root(fs->sched,
				       (struct sched_function *)n->obj);
	return NULL;
}

/* Resolves `ino` to its code node. Returns 0 or -ENOENT/-ENOMEM. */
int code_resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *n,
		 struct sched_code_node **c)
{
	int rc = fs_resolve(fs, ino, n);

	if (rc < 0)
		return rc;
	*c = code_of(fs, n);
	return *c ? 0 : -ENOMEM;
}

fuse_ino_t code_node_ino(const struct sched_code_node *c)
{
	return c->parent == NULL ? fs_ino(c->fn->obj.id, FS_CODE_DIR)
				 : fs_ino(c->id, FS_CODE_NODE);
}

void fs_code_owner(struct fs *fs, const struct fs_node *n, uid_t *uid,
		   gid_t *gid, mode_t *mode)
{
	struct sched_owner w;

	(void)fs;
	assert(n->kind == FS_CODE_NODE && n->code != NULL);
	sched_owner_of(n->obj, &w);
	*uid = w.uid;
	*gid = w.gid;
	*mode = n->code->mode;
}

static unsigned subdirs(const struct sched_code_node *c)
{
	void **v;
	size_t i, k;
	unsigned d = 0;

	v = rt_map_values(&c->children, &k);
	for (i = 0; v != NULL && i < k; i++)
		d += S_ISDIR(((struct sched_code_node *)v[i])->mode);
	free(v);
	return d;
}

void fs_code_stat(struct fs *fs, const struct fs_node *n, struct stat *st)
{
	struct sched_code_node *c = code_of(fs, n);

	memset(st, 0, sizeof(*st));
	fs_node_owner(fs, n, &st->st_uid, &st->st_gid, &st->st_mode);
	st->st_blksize = 4096;
	st->st_nlink = 1;
	if (c == NULL)
		return;
	st->st_ino = code_node_ino(c);
	if (S_ISDIR(c->mode))
		st->st_nlink = 2 + subdirs(c);
	else
		st->st_size = (off_t)c->size;
	st->st_mtim.tv_sec = c->mtime_ms / 1000;
	st->st_mtim.tv_nsec = c->mtime_ms % 1000 * 1000000;
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	st->st_blocks = (st->st_size + 511) / 512;
}

void code_entry_of(struct fs *fs, struct sched_code_node *c,
		   struct fuse_entry_param *e)
{
	struct fs_node n = { c->parent ? FS_CODE_NODE : FS_CODE_DIR,
			     &c->fn->obj, c->parent ? c : NULL };

	memset(e, 0, sizeof(*e));
	fs_code_stat(fs, &n, &e->attr);
	e->ino = e->attr.st_ino;
	e->attr_timeout = CODE_TIMEOUT;
	e->entry_timeout = CODE_TIMEOUT;
}

void code_reply_entry(fuse_req_t req, struct sched_code_node *c)
{
	struct fuse_entry_param e;

	code_entry_of(req_fs(req), c, &e);
	fuse_reply_entry(req, &e);
}

/* Whether the sender of `req` may change the code of the function `n`
 * belongs to: the write right on its directory. */
int code_may_change(fuse_req_t req, const struct fs_node *n)
{
	struct fs_node fd = { FS_FN_DIR, n->obj, NULL };
	struct fs_caller c;
	int ok;

	fs_caller_init(&c, req);
	ok = fs_may(req_fs(req), &c, &fd, SCHED_MAY_WRITE | SCHED_MAY_EXEC);
	fs_caller_done(&c);
	return ok;
}

void fs_code_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_node n;
	struct sched_code_node *dir, *c = NULL;
	int rc = code_resolve(req_fs(req), parent, &n, &dir);

	if (rc == 0 && !S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	if (rc == 0 && (c = sched_code_child(dir, name)) == NULL)
		rc = -ENOENT;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_reply_entry(req, c);
}

void fs_code_getattr(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_node n;
	struct stat st;
	int rc = fs_resolve(req_fs(req), ino, &n);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_code_stat(req_fs(req), &n, &st);
	fuse_reply_attr(req, &st, CODE_TIMEOUT);
}

/* sched's answer to a request that waited (a cluster): `err` 0 or
 * -errno. */
void code_on_wait(void *arg, int err)
{
	struct code_wait *w = arg;
	struct fs *fs = req_fs(w->req);
	struct sched_code_node *dir = sched_code_find(fs->sched, w->dir_id);
	struct sched_code_node *c = NULL;
	int rc = err;

	if (rc == 0 && (w->kind == WAIT_ENTRY || w->kind == WAIT_CREATE)) {
		c = dir ? sched_code_child(dir, w->name) : NULL;
		if (c == NULL)
			rc = -ENOENT; /* gone again since */
	}
	if (rc == 0 && (w->kind == WAIT_OPEN || w->kind == WAIT_READ)) {
		c = sched_code_find(fs->sched, w->id);
		if (c == NULL)
			rc = -ENOENT;
	}
	if (w->kind == WAIT_SETATTR) {
		if (rc == 0)
			rc = code_setattr_steps(fs, w);
		if (rc == SCHED_CODE_LATER)
			return;
		code_setattr_reply(fs, w, rc);
	} else if (rc < 0)
		fuse_reply_err(w->req, -rc);
	else if (w->kind == WAIT_ENTRY)
		code_reply_entry(w->req, c);
	else if (w->kind == WAIT_CREATE)
		code_create_open(w->req, c, &w->fi);
	else if (w->kind == WAIT_OPEN)
		code_open_now(w->req, c, &w->fi);
	else if (w->kind == WAIT_READ)
		code_read_now(w->req, w->id, w->size, w->off);
	else
		fuse_reply_err(w->req, 0);
	code_wait_free(w);
}

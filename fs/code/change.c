/*
 * code/change.c - the changes of a function's code/ tree: setattr
 * (truncate, chmod, times), mkdir, mknod, symlink (refused), create,
 * unlink, rmdir and rename, each answered at once or, on a cluster,
 * from code_on_wait once sched has stored it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"

static int64_t time_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Carries out the steps of setattr `w` still to do (size, mode, mtime),
 * each cleared from w->to_set once done. Returns 0 when all are done,
 * SCHED_CODE_LATER when one waits (code_on_wait goes on), or -errno. */
int code_setattr_steps(struct fs *fs, struct code_wait *w)
{
	struct sched_code_node *c;
	struct fs_node n;
	int rc = code_resolve(fs, w->ino, &n, &c);

	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_SIZE) && w->fh_write &&
	    c->stage != NULL) {
		/* ftruncate of a descriptor open for writing: part of what
		 * its close applies. */
		rc = sched_code_truncate(fs->sched, c,
					 (uint64_t)w->attr.st_size);
		w->to_set &= ~FUSE_SET_ATTR_SIZE;
	}
	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_SIZE)) {
		if (S_ISDIR(c->mode))
			return -EISDIR;
		/* A cluster: the content to keep comes from etcd first. */
		if (!w->fetched) {
			w->fetched = 1;
			rc = sched_code_fetch(fs->sched, c, code_on_wait, w);
			if (rc != 0)
				return rc;
		}
		w->to_set &= ~FUSE_SET_ATTR_SIZE;
		rc = sched_code_open_write(fs->sched, c, 0);
		if (rc == 0) {
			rc = sched_code_truncate(fs->sched, c,
						 (uint64_t)w->attr.st_size);
			if (rc == 0)
				rc = sched_code_commit(fs->sched, c,
						       code_on_wait, w);
			sched_code_close_write(fs->sched, c);
		}
		if (rc != 0)
			return rc;
	}
	/* code/ itself follows the function: its mode is the tenant's. */
	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MODE)) {
		w->to_set &= ~FUSE_SET_ATTR_MODE;
		rc = sched_code_chmod(fs->sched, c, w->attr.st_mode & 07777,
				      code_on_wait, w);
		if (rc != 0)
			return rc;
	}
	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MTIME_NOW)) {
		w->to_set &= ~(FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_MTIME);
		rc = sched_code_touch(fs->sched, c, rt_now_ms(), code_on_wait,
				      w);
	} else if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MTIME)) {
		w->to_set &= ~FUSE_SET_ATTR_MTIME;
		rc = sched_code_touch(fs->sched, c, time_ms(&w->attr.st_mtim),
				      code_on_wait, w);
	}
	if (rc == SCHED_CODE_LATER)
		return rc;
	if (rc == 0 &&
	    (w->to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE |
			  FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
		return code_setattr_steps(fs, w);
	return rc;
}

/* Answers setattr `w` with the node's attributes now, or `rc`. */
void code_setattr_reply(struct fs *fs, struct code_wait *w, int rc)
{
	struct fs_node n;
	struct stat st;

	if (rc == 0)
		rc = fs_resolve(fs, w->ino, &n);
	if (rc < 0) {
		fuse_reply_err(w->req, -rc);
		return;
	}
	fs_code_stat(fs, &n, &st);
	fuse_reply_attr(w->req, &st, CODE_TIMEOUT);
}

void fs_code_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_wait *w = code_wait_new(req, WAIT_SETATTR);
	struct fs_node n;
	struct sched_code_node *c;
	int rc = w ? code_resolve(fs, ino, &n, &c) : -ENOMEM;

	if (rc == 0 &&
	    (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE |
		       FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) &&
	    !code_may_change(req, &n))
		rc = -EACCES;
	/* chown (cp -p, tar as root) is accepted: the owner shown is the
	 * tenant's, whatever is asked; the kernel let only root or the
	 * owner ask. */
	if (rc == 0) {
		w->ino = ino;
		w->attr = *attr;
		w->to_set = to_set;
		w->fh_write = fi != NULL &&
			      ((struct code_handle *)(uintptr_t)fi->fh)->write;
		rc = code_setattr_steps(fs, w);
	}
	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_setattr_reply(fs, w, 0);
	code_wait_free(w);
}

/* Creates `name` in the directory `parent` with `mode`. Returns 0 with
 * the node in `*out`, SCHED_CODE_LATER (a cluster: `w`, filled with the
 * directory and the name, is answered by code_on_wait), or -errno. */
static int make(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct sched_code_node **out, struct code_wait *w)
{
	struct fs_node n;
	struct sched_code_node *dir;
	int rc = w ? code_resolve(req_fs(req), parent, &n, &dir) : -ENOMEM;

	*out = NULL;
	if (rc == 0 && !S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	if (rc == 0 && !code_may_change(req, &n))
		rc = -EACCES;
	if (rc == 0) {
		w->dir_id = dir->id;
		w->name = strdup(name);
		if (w->name == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = sched_code_create(req_fs(req)->sched, dir, name, mode, out,
				       code_on_wait, w);
	return rc;
}

void fs_code_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode)
{
	struct code_wait *w = code_wait_new(req, WAIT_ENTRY);
	struct sched_code_node *c;
	int rc = make(req, parent, name, S_IFDIR | (mode & 0777), &c, w);

	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_reply_entry(req, c);
	code_wait_free(w);
}

void fs_code_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, dev_t rdev)
{
	struct code_wait *w = code_wait_new(req, WAIT_ENTRY);
	struct sched_code_node *c;
	int rc;

	(void)rdev;
	rc = make(req, parent, name, mode, &c, w);
	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_reply_entry(req, c);
	code_wait_free(w);
}

void fs_code_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		     const char *name)
{
	struct code_wait *w = code_wait_new(req, WAIT_ERR);
	struct sched_code_node *c;
	int rc;

	(void)link;
	/* Refused, with the reason in the function's error. */
	rc = make(req, parent, name, S_IFLNK | 0777, &c, w);
	if (rc == SCHED_CODE_LATER)
		return; /* not reached: sched refuses the type at once */
	fuse_reply_err(req, rc < 0 ? -rc : EPERM);
	code_wait_free(w);
}

void fs_code_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_file_info *fi)
{
	struct code_wait *w = code_wait_new(req, WAIT_CREATE);
	struct sched_code_node *c;
	int rc;

	if (w != NULL)
		w->fi = *fi;
	rc = make(req, parent, name, S_IFREG | (mode & 0777), &c, w);
	if (rc == SCHED_CODE_LATER)
		return;
	code_wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_create_open(req, c, fi);
}

static void remove_common(fuse_req_t req, fuse_ino_t parent, const char *name,
			  int is_dir)
{
	struct code_wait *w = code_wait_new(req, WAIT_ERR);
	struct fs_node n;
	struct sched_code_node *dir;
	int rc = w ? code_resolve(req_fs(req), parent, &n, &dir) : -ENOMEM;

	if (rc == 0 && !code_may_change(req, &n))
		rc = -EACCES;
	if (rc == 0)
		rc = sched_code_remove(req_fs(req)->sched, dir, name, is_dir,
				       code_on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	code_wait_free(w);
}

void fs_code_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_common(req, parent, name, 0);
}

void fs_code_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_common(req, parent, name, 1);
}

void fs_code_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		    fuse_ino_t newparent, const char *newname,
		    unsigned int flags)
{
	struct fs *fs = req_fs(req);
	struct code_wait *w = code_wait_new(req, WAIT_ERR);
	struct fs_node n, nn;
	struct sched_code_node *dir, *newdir;
	int rc = w ? code_resolve(fs, parent, &n, &dir) : -ENOMEM;

	if (rc == 0 && !fs_code_owns(newparent))
		rc = -EXDEV;
	if (rc == 0)
		rc = code_resolve(fs, newparent, &nn, &newdir);
	if (rc == 0 && !code_may_change(req, &n))
		rc = -EACCES;
	if (rc == 0)
		rc = sched_code_rename(fs->sched, dir, name, newdir, newname,
				       flags, code_on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	code_wait_free(w);
}

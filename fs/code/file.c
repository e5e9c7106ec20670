/*
 * code/file.c - the open files of code/: open (its content fetched
 * first on a cluster), read, write, and the flush that stores what was
 * written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"

static int open_handle(struct sched_code_node *c, struct fuse_file_info *fi,
		       int write)
{
	struct code_handle *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return -ENOMEM;
	h->id = c->id;
	h->write = write;
	h->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	fi->direct_io = 0;
	fi->noflush = !write;
	return 0;
}

/* Opens new file `c` for writing and answers create `req`. */
void code_create_open(fuse_req_t req, struct sched_code_node *c,
		      struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fuse_entry_param e;
	int rc = sched_code_open_write(fs->sched, c, 1);

	if (rc == 0) {
		rc = open_handle(c, fi, 1);
		if (rc < 0)
			sched_code_close_write(fs->sched, c);
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	code_entry_of(fs, c, &e);
	if (fuse_reply_create(req, &e, fi) != 0) {
		sched_code_close_write(fs->sched, c);
		free((void *)(uintptr_t)fi->fh);
	}
}

/* Opens file `c` (its content here when it is kept) and answers. */
void code_open_now(fuse_req_t req, struct sched_code_node *c,
		   struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	int acc = fi->flags & O_ACCMODE, write = acc != O_RDONLY, rc = 0;

	if (write)
		rc = sched_code_open_write(fs->sched, c,
					   (fi->flags & O_TRUNC) != 0);
	if (rc == 0) {
		rc = open_handle(c, fi, write);
		if (rc < 0 && write)
			sched_code_close_write(fs->sched, c);
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fuse_reply_open(req, fi) != 0) {
		if (write)
			sched_code_close_write(fs->sched, c);
		free((void *)(uintptr_t)fi->fh);
	}
}

void fs_code_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_wait *w = NULL;
	struct fs_node n;
	struct sched_code_node *c;
	int acc = fi->flags & O_ACCMODE, write = acc != O_RDONLY;
	int rc = code_resolve(fs, ino, &n, &c);

	if (rc == 0 && S_ISDIR(c->mode))
		rc = -EISDIR;
	if (rc == 0 && write && !code_may_change(req, &n))
		rc = -EACCES;
	/* A write that keeps the content copies it: on a cluster it may
	 * have to come from etcd first. */
	if (rc == 0 && write && !(fi->flags & O_TRUNC)) {
		w = code_wait_new(req, WAIT_OPEN);
		if (w == NULL)
			rc = -ENOMEM;
		else {
			w->id = c->id;
			w->fi = *fi;
			rc = sched_code_fetch(fs->sched, c, code_on_wait, w);
		}
	}
	if (rc == SCHED_CODE_LATER)
		return;
	code_wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_open_now(req, c, fi);
}

static struct code_handle *handle_of(struct fuse_file_info *fi)
{
	return (struct code_handle *)(uintptr_t)fi->fh;
}

/* Reads `size` bytes at `off` of node `id` and answers `req`. */
void code_read_now(fuse_req_t req, uint64_t id, size_t size, off_t off)
{
	struct fs *fs = req_fs(req);
	struct sched_code_node *c = sched_code_find(fs->sched, id);
	char *buf;
	long n;

	if (c == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	buf = malloc(size ? size : 1);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = sched_code_read(fs->sched, c, buf, size, (uint64_t)off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void fs_code_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct sched_code_node *c = sched_code_find(fs->sched,
						    handle_of(fi)->id);
	struct code_wait *w = code_wait_new(req, WAIT_READ);
	int rc = c == NULL ? -ENOENT : w == NULL ? -ENOMEM : 0;

	(void)ino;
	/* A cluster: the content may have to come from etcd first. */
	if (rc == 0) {
		w->id = c->id;
		w->size = size;
		w->off = off;
		rc = sched_code_fetch(fs->sched, c, code_on_wait, w);
	}
	if (rc == SCHED_CODE_LATER)
		return;
	code_wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		code_read_now(req, c->id, size, off);
}

void fs_code_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		   off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_handle *h = handle_of(fi);
	struct sched_code_node *c = sched_code_find(fs->sched, h->id);
	int rc;

	(void)ino;
	if (c == NULL || !h->write) {
		fuse_reply_err(req, c == NULL ? ENOENT : EBADF);
		return;
	}
	rc = sched_code_write(fs->sched, c, buf, size,
			      h->append ? c->size : (uint64_t)off);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

void fs_code_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_handle *h = handle_of(fi);
	struct sched_code_node *c = sched_code_find(fs->sched, h->id);
	int rc = 0;

	(void)ino;
	/* The close of a descriptor that wrote: the file is what it holds
	 * now, and close(2) says whether that was stored. */
	struct code_wait *w = code_wait_new(req, WAIT_ERR);

	if (w == NULL)
		rc = -ENOMEM;
	else if (c != NULL && h->write)
		rc = sched_code_commit(fs->sched, c, code_on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	code_wait_free(w);
}

void fs_code_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_handle *h = handle_of(fi);
	struct sched_code_node *c = sched_code_find(fs->sched, h->id);

	(void)ino;
	if (c != NULL && h->write)
		sched_code_close_write(fs->sched, c);
	free(h);
	fuse_reply_err(req, 0);
}

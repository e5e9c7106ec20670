/*
 * ops_dir.c - directories: lookup, and the listing of a directory from a
 * snapshot of its entries taken at opendir.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* Whether `n` is a link of a worker's assignments/ to an instance of a
 * tenant that caller `c` may not read: its name says the tenant's, so
 * it is not shown to `c`, as the root's status does not show it. */
static int assign_hidden(const struct fs_node *n, struct fs_caller *c)
{
	struct sched_owner w;

	if (n->kind != FS_ASSIGN_LINK || c->who.uid == 0)
		return 0;
	sched_owner_of(n->obj, &w);
	return !sched_caller_may(fs_caller_full(c), w.uid, w.gid, w.mode,
				 SCHED_MAY_READ);
}

/* One directory entry of a snapshot. The object is kept by id, never by
 * pointer: it may be removed before the entry is read. */
struct dirent_snap {
	char name[256];
	enum fs_kind kind;
	uint64_t id;
};

/* Per-open state of a directory: its entries, taken at opendir, so that
 * readdir offsets stay meaningful while the tree changes. */
struct dir_handle {
	struct dirent_snap *ents; /* owned */
	size_t n, cap;
	struct fs_caller *who; /* while listing: whom it is for */
};

static int snap_add(const char *name, const struct fs_node *n, void *arg)
{
	struct dir_handle *d = arg;

	if (d->who != NULL && assign_hidden(n, d->who))
		return 0;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct dirent_snap *e = realloc(d->ents, cap * sizeof(*e));

		if (e == NULL)
			return -ENOMEM;
		d->ents = e;
		d->cap = cap;
	}
	snprintf(d->ents[d->n].name, sizeof(d->ents[d->n].name), "%s", name);
	d->ents[d->n].kind = n->kind;
	d->ents[d->n].id = n->obj->id;
	d->n++;
	return 0;
}

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node dir, n;
	struct fs_caller c;
	int rc = fs_resolve(fs, parent, &dir);

	if (fs_code_owns(parent)) {
		fs_code_lookup(req, parent, name);
		return;
	}

	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
	if (rc == 0 && n.kind == FS_ASSIGN_LINK) {
		fs_caller_init(&c, req);
		if (assign_hidden(&n, &c))
			rc = -ENOENT;
		fs_caller_done(&c);
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, &n);
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct dir_handle *d = NULL;
	struct fs_node n, up;
	struct fs_caller c;
	int rc = fs_resolve(fs, ino, &n);

	if (fs_code_owns(ino)) {
		fs_code_opendir(req, ino, fi);
		return;
	}

	fs_caller_init(&c, req);
	if (rc < 0)
		goto out;
	if (!fs_may(fs, &c, &n, SCHED_MAY_READ)) {
		rc = -EACCES;
		goto out;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	up = fs_parent(fs, &n);
	rc = snap_add(".", &n, d);
	if (rc == 0)
		rc = snap_add("..", &up, d);
	d->who = &c;
	if (rc == 0)
		rc = fs_children(fs, &n, snap_add, d);
	d->who = NULL;
	fs_caller_done(&c);
	if (rc < 0)
		goto out;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		free(d->ents);
		free(d);
	}
	return;
out:
	fs_caller_done(&c);
	if (d != NULL)
		free(d->ents);
	free(d);
	fuse_reply_err(req, -rc);
}

static void readdir_common(fuse_req_t req, size_t size, off_t off,
			   struct fuse_file_info *fi, int plus)
{
	struct fs *fs = req_fs(req);
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0, i;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = (size_t)off; i < d->n; i++) {
		struct dirent_snap *e = &d->ents[i];
		struct fs_node node = { FS_NONE, NULL, NULL };
		size_t len;

		/* An object removed since opendir is skipped. */
		node.kind = e->kind;
		node.obj = sched_find(fs->sched, e->id);
		if (node.obj == NULL)
			continue;
		if (plus) {
			struct fuse_entry_param ep;

			fs_fill_entry(req, &node, &ep);
			len = fuse_add_direntry_plus(req, buf + used,
						     size - used, e->name, &ep,
						     (off_t)i + 1);
		} else {
			struct stat st;

			fs_stat(fs, &node, NULL, &st); /* type and ino */
			len = fuse_add_direntry(req, buf + used, size - used,
						e->name, &st, (off_t)i + 1);
		}
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	if (fs_code_owns(ino)) {
		fs_code_readdir(req, ino, size, off, fi, 0);
		return;
	}
	(void)ino;
	readdir_common(req, size, off, fi, 0);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	if (fs_code_owns(ino)) {
		fs_code_readdir(req, ino, size, off, fi, 1);
		return;
	}
	(void)ino;
	readdir_common(req, size, off, fi, 1);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	if (fs_code_owns(ino)) {
		fs_code_releasedir(req, ino, fi);
		return;
	}

	(void)ino;
	free(d->ents);
	free(d);
	fuse_reply_err(req, 0);
}

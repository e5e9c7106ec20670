/*
 * code/dir.c - the directories of code/: their entries taken at opendir
 * and listed by readdir and readdirplus.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"

/* Per-open state of a directory of code/: its entries at opendir. */
struct code_dirent {
	char *name; /* owned */
	fuse_ino_t ino;
	mode_t mode;
};

struct code_dir {
	struct code_dirent *v;
	size_t n, cap;
};

static int dir_add(struct code_dir *d, const char *name, fuse_ino_t ino,
		   mode_t mode)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct code_dirent *v = realloc(d->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n].name = strdup(name);
	if (d->v[d->n].name == NULL)
		return -ENOMEM;
	d->v[d->n].ino = ino;
	d->v[d->n++].mode = mode;
	return 0;
}

static void dir_free(struct code_dir *d)
{
	size_t i;

	for (i = 0; d != NULL && i < d->n; i++)
		free(d->v[i].name);
	if (d != NULL)
		free(d->v);
	free(d);
}

static int child_cb(const char *key, void *value, void *arg)
{
	struct sched_code_node *c = value;

	return dir_add(arg, key, code_node_ino(c), c->mode);
}

void fs_code_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_dir *d = NULL;
	struct fs_node n;
	struct fs_caller who;
	struct sched_code_node *c;
	fuse_ino_t up;
	int rc = code_resolve(fs, ino, &n, &c);

	fs_caller_init(&who, req);
	if (rc == 0 && !S_ISDIR(c->mode))
		rc = -ENOTDIR;
	if (rc == 0 && !fs_may(fs, &who, &n, SCHED_MAY_READ))
		rc = -EACCES;
	if (rc == 0 && (d = calloc(1, sizeof(*d))) == NULL)
		rc = -ENOMEM;
	up = c == NULL || c->parent == NULL ? fs_ino(n.obj->id, FS_FN_DIR)
					    : code_node_ino(c->parent);
	if (rc == 0)
		rc = dir_add(d, ".", ino, S_IFDIR);
	if (rc == 0)
		rc = dir_add(d, "..", up, S_IFDIR);
	if (rc == 0)
		rc = rt_map_each(&c->children, child_cb, d);
	fs_caller_done(&who);
	if (rc < 0) {
		dir_free(d);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0)
		dir_free(d);
}

void fs_code_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, int plus)
{
	struct fs *fs = req_fs(req);
	struct code_dir *d = (struct code_dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size ? size : 1);
	size_t used = 0, i, len;

	(void)ino;
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = (size_t)off; i < d->n; i++) {
		struct code_dirent *e = &d->v[i];
		struct fs_node n;

		if (plus) {
			struct fuse_entry_param ep;

			/* Gone since opendir: skipped. */
			if (fs_resolve(fs, e->ino, &n) < 0)
				continue;
			if (i < 2) {
				/* . and .. are not looked up */
				memset(&ep, 0, sizeof(ep));
				ep.attr.st_ino = e->ino;
				ep.attr.st_mode = e->mode;
			} else {
				code_entry_of(fs, code_of(fs, &n), &ep);
			}
			len = fuse_add_direntry_plus(req, buf + used,
						     size - used, e->name, &ep,
						     (off_t)i + 1);
		} else {
			struct stat st;

			memset(&st, 0, sizeof(st));
			st.st_ino = e->ino;
			st.st_mode = e->mode;
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

void fs_code_releasedir(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	(void)ino;
	dir_free((struct code_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/*
 * code.c - the FUSE side of a function's code/ directory: an ordinary
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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#define CODE_TIMEOUT 1.0 /* s the kernel may cache names and attributes */

/* Per-open state of a file of code/. */
struct code_handle {
	uint64_t id; /* the node's, to notice it is gone */
	int write;   /* opened for writing: paired with close_write */
	int append;  /* O_APPEND: writes go to the end */
};

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

static struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* What a request that waits for sched (a cluster) answers. */
enum wait_kind {
	WAIT_ENTRY,   /* mkdir, mknod: the entry of `name` in `dir_id` */
	WAIT_CREATE,  /* create: that entry, opened for writing */
	WAIT_ERR,     /* unlink, rmdir, rename, flush: the error alone */
	WAIT_READ,    /* read: `size` bytes at `off` of node `id` */
	WAIT_OPEN,    /* open of node `id` with `fi`, its content here */
	WAIT_SETATTR, /* setattr of `ino`: the steps left in `to_set` */
};

struct code_wait {
	fuse_req_t req;
	enum wait_kind kind;
	uint64_t dir_id;	  /* ENTRY, CREATE */
	char *name;		  /* ENTRY, CREATE; owned */
	uint64_t id;		  /* READ, OPEN */
	size_t size;		  /* READ */
	off_t off;		  /* READ */
	struct fuse_file_info fi; /* CREATE, OPEN */
	fuse_ino_t ino;		  /* SETATTR */
	struct stat attr;	  /* SETATTR */
	int to_set;		  /* SETATTR: what is left to do */
	int fh_write; /* SETATTR: through a descriptor that writes */
	int fetched;  /* SETATTR: the content is here */
};

static void on_wait(void *arg, int err);

static struct code_wait *wait_new(fuse_req_t req, enum wait_kind kind)
{
	struct code_wait *w = calloc(1, sizeof(*w));

	if (w != NULL) {
		w->req = req;
		w->kind = kind;
	}
	return w;
}

static void wait_free(struct code_wait *w)
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
static struct sched_code_node *code_of(struct fs *fs, const struct fs_node *n)
{
	if (n->kind == FS_CODE_NODE)
		return n->code;
	if (n->kind == FS_CODE_DIR)
		return sched_code_root(fs->sched,
				       (struct sched_function *)n->obj);
	return NULL;
}

/* Resolves `ino` to its code node. Returns 0 or -ENOENT/-ENOMEM. */
static int resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *n,
		   struct sched_code_node **c)
{
	int rc = fs_resolve(fs, ino, n);

	if (rc < 0)
		return rc;
	*c = code_of(fs, n);
	return *c ? 0 : -ENOMEM;
}

static fuse_ino_t node_ino(const struct sched_code_node *c)
{
	return c->parent == NULL ? fs_ino(c->fn->obj.id, FS_CODE_DIR)
				 : fs_ino(c->id, FS_CODE_NODE);
}

void fs_code_owner(struct fs *fs, const struct fs_node *n, uid_t *uid,
		   gid_t *gid, mode_t *mode)
{
	struct sched_owner w;

	(void)fs;
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
	st->st_ino = node_ino(c);
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

static void entry_of(struct fs *fs, struct sched_code_node *c,
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

static void reply_entry(fuse_req_t req, struct sched_code_node *c)
{
	struct fuse_entry_param e;

	entry_of(req_fs(req), c, &e);
	fuse_reply_entry(req, &e);
}

/* Whether the sender of `req` may change the code of the function `n`
 * belongs to: the write right on its directory. */
static int may_change(fuse_req_t req, const struct fs_node *n)
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
	int rc = resolve(req_fs(req), parent, &n, &dir);

	if (rc == 0 && !S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	if (rc == 0 && (c = sched_code_child(dir, name)) == NULL)
		rc = -ENOENT;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, c);
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

static int64_t time_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Carries out the steps of setattr `w` still to do (size, mode, mtime),
 * each cleared from w->to_set once done. Returns 0 when all are done,
 * SCHED_CODE_LATER when one waits (on_wait goes on), or -errno. */
static int setattr_steps(struct fs *fs, struct code_wait *w)
{
	struct sched_code_node *c;
	struct fs_node n;
	int rc = resolve(fs, w->ino, &n, &c);

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
			rc = sched_code_fetch(fs->sched, c, on_wait, w);
			if (rc != 0)
				return rc;
		}
		w->to_set &= ~FUSE_SET_ATTR_SIZE;
		rc = sched_code_open_write(fs->sched, c, 0);
		if (rc == 0) {
			rc = sched_code_truncate(fs->sched, c,
						 (uint64_t)w->attr.st_size);
			if (rc == 0)
				rc = sched_code_commit(fs->sched, c, on_wait,
						       w);
			sched_code_close_write(fs->sched, c);
		}
		if (rc != 0)
			return rc;
	}
	/* code/ itself follows the function: its mode is the tenant's. */
	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MODE)) {
		w->to_set &= ~FUSE_SET_ATTR_MODE;
		rc = sched_code_chmod(fs->sched, c, w->attr.st_mode & 07777,
				      on_wait, w);
		if (rc != 0)
			return rc;
	}
	if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MTIME_NOW)) {
		w->to_set &= ~(FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_MTIME);
		rc = sched_code_touch(fs->sched, c, rt_now_ms(), on_wait, w);
	} else if (rc == 0 && (w->to_set & FUSE_SET_ATTR_MTIME)) {
		w->to_set &= ~FUSE_SET_ATTR_MTIME;
		rc = sched_code_touch(fs->sched, c, time_ms(&w->attr.st_mtim),
				      on_wait, w);
	}
	if (rc == SCHED_CODE_LATER)
		return rc;
	if (rc == 0 &&
	    (w->to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE |
			  FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
		return setattr_steps(fs, w);
	return rc;
}

/* Answers setattr `w` with the node's attributes now, or `rc`. */
static void setattr_reply(struct fs *fs, struct code_wait *w, int rc)
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
	struct code_wait *w = wait_new(req, WAIT_SETATTR);
	struct fs_node n;
	struct sched_code_node *c;
	int rc = w ? resolve(fs, ino, &n, &c) : -ENOMEM;

	if (rc == 0 &&
	    (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE |
		       FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) &&
	    !may_change(req, &n))
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
		rc = setattr_steps(fs, w);
	}
	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		setattr_reply(fs, w, 0);
	wait_free(w);
}

/* Creates `name` in the directory `parent` with `mode`. */
/* Creates `name` in the directory `parent` with `mode`. Returns 0 with
 * the node in `*out`, SCHED_CODE_LATER (a cluster: `w`, filled with the
 * directory and the name, is answered by on_wait), or -errno. */
static int make(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct sched_code_node **out, struct code_wait *w)
{
	struct fs_node n;
	struct sched_code_node *dir;
	int rc = w ? resolve(req_fs(req), parent, &n, &dir) : -ENOMEM;

	*out = NULL;
	if (rc == 0 && !S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	if (rc == 0 && !may_change(req, &n))
		rc = -EACCES;
	if (rc == 0) {
		w->dir_id = dir->id;
		w->name = strdup(name);
		if (w->name == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = sched_code_create(req_fs(req)->sched, dir, name, mode, out,
				       on_wait, w);
	return rc;
}

void fs_code_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode)
{
	struct code_wait *w = wait_new(req, WAIT_ENTRY);
	struct sched_code_node *c;
	int rc = make(req, parent, name, S_IFDIR | (mode & 0777), &c, w);

	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, c);
	wait_free(w);
}

void fs_code_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, dev_t rdev)
{
	struct code_wait *w = wait_new(req, WAIT_ENTRY);
	struct sched_code_node *c;
	int rc;

	(void)rdev;
	rc = make(req, parent, name, mode, &c, w);
	if (rc == SCHED_CODE_LATER)
		return;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, c);
	wait_free(w);
}

void fs_code_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		     const char *name)
{
	struct code_wait *w = wait_new(req, WAIT_ERR);
	struct sched_code_node *c;
	int rc;

	(void)link;
	/* Refused, with the reason in the function's error. */
	rc = make(req, parent, name, S_IFLNK | 0777, &c, w);
	if (rc == SCHED_CODE_LATER)
		return; /* not reached: sched refuses the type at once */
	fuse_reply_err(req, rc < 0 ? -rc : EPERM);
	wait_free(w);
}

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
static void create_open(fuse_req_t req, struct sched_code_node *c,
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
	entry_of(fs, c, &e);
	if (fuse_reply_create(req, &e, fi) != 0) {
		sched_code_close_write(fs->sched, c);
		free((void *)(uintptr_t)fi->fh);
	}
}

void fs_code_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_file_info *fi)
{
	struct code_wait *w = wait_new(req, WAIT_CREATE);
	struct sched_code_node *c;
	int rc;

	if (w != NULL)
		w->fi = *fi;
	rc = make(req, parent, name, S_IFREG | (mode & 0777), &c, w);
	if (rc == SCHED_CODE_LATER)
		return;
	wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		create_open(req, c, fi);
}

static void remove_common(fuse_req_t req, fuse_ino_t parent, const char *name,
			  int is_dir)
{
	struct code_wait *w = wait_new(req, WAIT_ERR);
	struct fs_node n;
	struct sched_code_node *dir;
	int rc = w ? resolve(req_fs(req), parent, &n, &dir) : -ENOMEM;

	if (rc == 0 && !may_change(req, &n))
		rc = -EACCES;
	if (rc == 0)
		rc = sched_code_remove(req_fs(req)->sched, dir, name, is_dir,
				       on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	wait_free(w);
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
	struct code_wait *w = wait_new(req, WAIT_ERR);
	struct fs_node n, nn;
	struct sched_code_node *dir, *newdir;
	int rc = w ? resolve(fs, parent, &n, &dir) : -ENOMEM;

	if (rc == 0 && !fs_code_owns(newparent))
		rc = -EXDEV;
	if (rc == 0)
		rc = resolve(fs, newparent, &nn, &newdir);
	if (rc == 0 && !may_change(req, &n))
		rc = -EACCES;
	if (rc == 0)
		rc = sched_code_rename(fs->sched, dir, name, newdir, newname,
				       flags, on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	wait_free(w);
}

/* Opens file `c` (its content here when it is kept) and answers. */
static void open_now(fuse_req_t req, struct sched_code_node *c,
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
	int rc = resolve(fs, ino, &n, &c);

	if (rc == 0 && S_ISDIR(c->mode))
		rc = -EISDIR;
	if (rc == 0 && write && !may_change(req, &n))
		rc = -EACCES;
	/* A write that keeps the content copies it: on a cluster it may
	 * have to come from etcd first. */
	if (rc == 0 && write && !(fi->flags & O_TRUNC)) {
		w = wait_new(req, WAIT_OPEN);
		if (w == NULL)
			rc = -ENOMEM;
		else {
			w->id = c->id;
			w->fi = *fi;
			rc = sched_code_fetch(fs->sched, c, on_wait, w);
		}
	}
	if (rc == SCHED_CODE_LATER)
		return;
	wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		open_now(req, c, fi);
}

static struct code_handle *handle_of(struct fuse_file_info *fi)
{
	return (struct code_handle *)(uintptr_t)fi->fh;
}

static void read_now(fuse_req_t req, uint64_t id, size_t size, off_t off);

void fs_code_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct sched_code_node *c = sched_code_find(fs->sched,
						    handle_of(fi)->id);
	struct code_wait *w = wait_new(req, WAIT_READ);
	int rc = c == NULL ? -ENOENT : w == NULL ? -ENOMEM : 0;

	(void)ino;
	/* A cluster: the content may have to come from etcd first. */
	if (rc == 0) {
		w->id = c->id;
		w->size = size;
		w->off = off;
		rc = sched_code_fetch(fs->sched, c, on_wait, w);
	}
	if (rc == SCHED_CODE_LATER)
		return;
	wait_free(w);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		read_now(req, c->id, size, off);
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
	struct code_wait *w = wait_new(req, WAIT_ERR);

	if (w == NULL)
		rc = -ENOMEM;
	else if (c != NULL && h->write)
		rc = sched_code_commit(fs->sched, c, on_wait, w);
	if (rc == SCHED_CODE_LATER)
		return;
	fuse_reply_err(req, -rc);
	wait_free(w);
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

/* ======================================================== directories */

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

	return dir_add(arg, key, node_ino(c), c->mode);
}

void fs_code_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct code_dir *d = NULL;
	struct fs_node n;
	struct fs_caller who;
	struct sched_code_node *c;
	fuse_ino_t up;
	int rc = resolve(fs, ino, &n, &c);

	fs_caller_init(&who, req);
	if (rc == 0 && !S_ISDIR(c->mode))
		rc = -ENOTDIR;
	if (rc == 0 && !fs_may(fs, &who, &n, SCHED_MAY_READ))
		rc = -EACCES;
	if (rc == 0 && (d = calloc(1, sizeof(*d))) == NULL)
		rc = -ENOMEM;
	up = c == NULL || c->parent == NULL ? fs_ino(n.obj->id, FS_FN_DIR)
					    : node_ino(c->parent);
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
				entry_of(fs, code_of(fs, &n), &ep);
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

/* ============================================================ waiting */

/* Reads `size` bytes at `off` of node `id` and answers `req`. */
static void read_now(fuse_req_t req, uint64_t id, size_t size, off_t off)
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

/* sched's answer to a request that waited (a cluster): `err` 0 or
 * -errno. */
static void on_wait(void *arg, int err)
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
			rc = setattr_steps(fs, w);
		if (rc == SCHED_CODE_LATER)
			return;
		setattr_reply(fs, w, rc);
	} else if (rc < 0)
		fuse_reply_err(w->req, -rc);
	else if (w->kind == WAIT_ENTRY)
		reply_entry(w->req, c);
	else if (w->kind == WAIT_CREATE)
		create_open(w->req, c, &w->fi);
	else if (w->kind == WAIT_OPEN)
		open_now(w->req, c, &w->fi);
	else if (w->kind == WAIT_READ)
		read_now(w->req, w->id, w->size, w->off);
	else
		fuse_reply_err(w->req, 0);
	wait_free(w);
}

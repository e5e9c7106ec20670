/*
 * ops_tree.c - the writes to the tree of tenants, namespaces and
 * functions: mkdir, rmdir and the chown and chmod of a tenant, run as
 * sched_op (sched.h), and the wait for a store shared by several
 * controllers (struct op_wait), which an attribute's close shares.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static void forget_attrs(struct fs *fs, struct sched_obj *o);

static int forget_cb(const char *key, void *value, void *arg)
{
	(void)key;
	forget_attrs(arg, value);
	return 0;
}

/* Tells the kernel that the attributes it cached of every inode of `o`
 * and of what it holds are stale. */
static void forget_attrs(struct fs *fs, struct sched_obj *o)
{
	int k;

	for (k = FS_ROOT_DIR + 1; k < FS_KIND_COUNT; k++) {
		struct fs_node n;
		fuse_ino_t ino = fs_obj_ino(o, (enum fs_kind)k);

		if (fs_resolve(fs, ino, &n) == 0)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	}
	rt_map_each(&o->children, forget_cb, fs);
}

/* Replies to a write that waited. */
void fs_op_done(void *arg, int err)
{
	struct op_wait *w = arg;
	struct fs_node dir, n;
	struct stat st;

	assert((w->kind == SCHED_OP_ATTR) == (w->h != NULL));
	if (w->h != NULL && err)
		handle_spoil(w->h, err);
	if (err == 0 && w->kind == SCHED_OP_CREATE) {
		err = -fs_resolve(w->fs, w->ino, &dir);
		if (err == 0)
			err = -fs_child(w->fs, &dir, w->name, &n);
		if (err == 0) {
			fs_reply_entry(w->req, &n);
			goto out;
		}
	}
	if (err == 0 && w->kind == SCHED_OP_CHOWN &&
	    fs_resolve(w->fs, w->ino, &n) == 0) {
		fs_stat_for(w->req, &n, &st);
		fuse_reply_attr(w->req, &st, fs_attr_timeout(&n));
		forget_attrs(w->fs, n.obj);
		goto out;
	}
	fuse_reply_err(w->req, err);
out:
	free(w);
}

/* Runs `op` for `req`: returns 0 or -errno when done at once, or
 * SCHED_LATER once the reply is left to fs_op_done. */
static int op_run(fuse_req_t req, const struct sched_op *op, fuse_ino_t ino,
		  const char *name, struct handle *h)
{
	struct op_wait *w = calloc(1, sizeof(*w));
	struct fs *fs = req_fs(req);
	int rc;

	if (w == NULL)
		return -ENOMEM;
	w->req = req;
	w->fs = fs;
	w->kind = op->kind;
	w->ino = ino;
	w->h = h;
	if (name != NULL)
		snprintf(w->name, sizeof(w->name), "%s", name);
	rc = sched_op_run(fs->sched, op, fs_op_done, w);
	if (rc != SCHED_LATER)
		free(w);
	return rc;
}

/* chown and chmod, of a tenant only (spec: the owner of a tenant, its
 * group and its mode): root changes the owner and group, root or the
 * owner the mode. Every other node follows its tenant: EPERM. */
static int set_owner(fuse_req_t req, fuse_ino_t ino, const struct fs_node *n,
		     const struct stat *attr, int to_set)
{
	struct fs_caller c;
	struct sched_op op = { .kind = SCHED_OP_CHOWN };
	int rc;

	if (n->kind != FS_TENANT_DIR)
		return -EPERM;
	fs_caller_init(&c, req);
	op.id = n->obj->id;
	op.who = &c.who;
	op.uid = (to_set & FUSE_SET_ATTR_UID) ? (int64_t)attr->st_uid : -1;
	op.gid = (to_set & FUSE_SET_ATTR_GID) ? (int64_t)attr->st_gid : -1;
	op.mode = (to_set & FUSE_SET_ATTR_MODE)
			  ? (int64_t)(attr->st_mode & 07777)
			  : -1;
	rc = op_run(req, &op, ino, NULL, NULL);
	fs_caller_done(&c);
	return rc;
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node n;
	struct fs_caller c;
	struct stat st;
	int owner = 0, rc = fs_resolve(fs, ino, &n);

	if (fs_code_owns(ino)) {
		fs_code_setattr(req, ino, attr, to_set, fi);
		return;
	}

	(void)fi;
	fs_caller_init(&c, req);
	if (rc < 0)
		goto out;
	/* Truncation is what `echo x > file` asks first: the write that
	 * follows carries the whole value, so it changes nothing itself. */
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (S_ISDIR(fs_node_mode(&n)) || !(fs_node_mode(&n) & S_IWUSR) ||
	     !fs_may(fs, &c, &n, SCHED_MAY_WRITE))) {
		rc = S_ISDIR(fs_node_mode(&n)) ? -EISDIR : -EACCES;
		goto out;
	}
	if (to_set &
	    (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		rc = set_owner(req, ino, &n, attr, to_set);
		if (rc == SCHED_LATER) {
			fs_caller_done(&c);
			return; /* fs_op_done replies */
		}
		if (rc < 0)
			goto out;
		owner = 1;
	}
	/* Times (touch) are accepted and ignored: they follow the model. */
	fs_stat_for(req, &n, &st);
	fuse_reply_attr(req, &st, fs_attr_timeout(&n));
	/* What the tenant holds shows its owner and mode: the kernel must
	 * not go on checking permissions against what it cached. Only the
	 * attributes are dropped, which takes no lock a request holds. */
	if (owner)
		forget_attrs(fs, n.obj);
	fs_caller_done(&c);
	return;
out:
	fs_caller_done(&c);
	fuse_reply_err(req, -rc);
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode)
{
	struct fs *fs = req_fs(req);
	struct fs_node dir, n;
	struct sched_op op = { .kind = SCHED_OP_CREATE };
	struct fs_caller c;
	int rc = fs_resolve(fs, parent, &dir);

	if (fs_code_owns(parent)) {
		fs_code_mkdir(req, parent, name, mode);
		return;
	}

	(void)mode;
	fs_caller_init(&c, req);
	if (rc < 0)
		goto out;
	if (fs_child(fs, &dir, name, &n) == 0) {
		rc = -EEXIST; /* an object, or a fixed file (a tenant's events)
			       */
		goto out;
	}
	if (dir.kind != FS_TENANTS_DIR && dir.kind != FS_TENANT_DIR &&
	    dir.kind != FS_NS_DIR) {
		rc = -EPERM;
		goto out;
	}
	if (!fs_may(fs, &c, &dir, SCHED_MAY_WRITE | SCHED_MAY_EXEC)) {
		rc = -EACCES;
		goto out;
	}
	op.id = dir.obj->id;
	op.name = name;
	op.who = &c.who;
	rc = op_run(req, &op, parent, name, NULL);
	if (rc == SCHED_LATER) {
		fs_caller_done(&c);
		return; /* fs_op_done replies */
	}
	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
	if (rc < 0)
		goto out;
	fs_caller_done(&c);
	fs_reply_entry(req, &n);
	return;
out:
	fs_caller_done(&c);
	fuse_reply_err(req, -rc);
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node dir, n;
	struct fs_caller c;
	int rc = fs_resolve(fs, parent, &dir);

	if (fs_code_owns(parent)) {
		fs_code_rmdir(req, parent, name);
		return;
	}

	fs_caller_init(&c, req);
	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
	if (rc == 0 && n.kind != FS_TENANT_DIR && n.kind != FS_NS_DIR &&
	    n.kind != FS_FN_DIR)
		rc = S_ISDIR(fs_node_mode(&n)) ? -EPERM : -ENOTDIR;
	if (rc == 0 && !fs_may(fs, &c, &dir, SCHED_MAY_WRITE | SCHED_MAY_EXEC))
		rc = -EACCES;
	if (rc == 0) {
		struct sched_op op = { .kind = SCHED_OP_REMOVE,
				       .id = dir.obj->id,
				       .name = name,
				       .who = &c.who };

		rc = op_run(req, &op, parent, NULL, NULL);
	}
	fs_caller_done(&c);
	if (rc != SCHED_LATER)
		fuse_reply_err(req, -rc);
}

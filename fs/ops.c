/*
 * ops.c - the FUSE low-level handlers: the table that dispatches each
 * request to the file that serves its kind of node (ops_tree.c: the
 * writes to the tree; ops_dir.c: directories; ops_file.c: the open files,
 * which hand invoke to ops_invoke.c, attribute files to ops_attr.c and
 * journals and streams to ops_events.c; fs/code/: code/), and what they
 * share: the attributes and entries replied for a node. Each handler
 * resolves its inode against the model, does its work through sched/ and
 * replies before returning, or leaves the reply to a callback; none of
 * them blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* How long the kernel may cache names and attributes, in seconds. Names
 * change only through this filesystem, which the kernel sees; attributes
 * of the journal change on their own, so it is never cached. */
#define ENTRY_TIMEOUT 1.0
#define ATTR_TIMEOUT  1.0

/* Journals grow on their own, and the root's files differ by caller:
 * their attributes are never cached. */
double fs_attr_timeout(const struct fs_node *n)
{
	return n->kind == FS_EVENTS || n->kind == FS_TENANT_EVENTS ||
			       fs_node_per_caller(n)
		       ? 0.0
		       : ATTR_TIMEOUT;
}

/* Fills `st` for `n` as the sender of `req` sees it. */
void fs_stat_for(fuse_req_t req, const struct fs_node *n, struct stat *st)
{
	struct fs_caller c;

	if (!fs_node_per_caller(n)) {
		fs_stat(req_fs(req), n, NULL, st);
		return;
	}
	fs_caller_init(&c, req);
	fs_stat(req_fs(req), n, fs_caller_full(&c), st);
	fs_caller_done(&c);
}

/* Whether the object of directory `n` may be replaced under its name
 * without this mount's kernel seeing it: in a cluster a tenant,
 * namespace or function that another controller removed and made again.
 * The kernel asks for such a name again at each use, so that it never
 * keeps an entry for a gone object (a false ENOENT). An instance needs
 * no such care: its inode is its function's and number's (fs_obj_ino);
 * nor a worker removed and added again (pool_size): it gets its id, so
 * its inodes, back (sched/model/objects.c). Looking a worker up at each
 * use made `ls -l workers/W/assignments` three requests an entry. */
static int entry_replaceable(struct fs *fs, const struct fs_node *n)
{
	return (n->kind == FS_TENANT_DIR || n->kind == FS_NS_DIR ||
		n->kind == FS_FN_DIR) &&
	       strcmp(sched_role(fs->sched), "single") != 0;
}

void fs_fill_entry(fuse_req_t req, const struct fs_node *n,
		   struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	fs_stat_for(req, n, &e->attr);
	e->ino = e->attr.st_ino;
	e->attr_timeout = fs_attr_timeout(n);
	e->entry_timeout = entry_replaceable(req_fs(req), n) ? 0.0
							     : ENTRY_TIMEOUT;
}

void fs_reply_entry(fuse_req_t req, const struct fs_node *n)
{
	struct fuse_entry_param e;

	fs_fill_entry(req, n, &e);
	fuse_reply_entry(req, &e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Requests are read into memory on the loop thread, never spliced. */
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node n;
	struct stat st;
	int rc = fs_resolve(fs, ino, &n);

	if (fs_code_owns(ino)) {
		fs_code_getattr(req, ino);
		return;
	}

	(void)fi;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_stat_for(req, &n, &st);
	fuse_reply_attr(req, &st, fs_attr_timeout(&n));
}

/* Creating, linking, renaming or removing files is not how fnfs is used:
 * objects are directories made with mkdir, and their files are fixed. */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (fs_code_owns(parent)) {
		fs_code_unlink(req, parent, name);
		return;
	}
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	if (fs_code_owns(parent)) {
		fs_code_create(req, parent, name, mode, fi);
		return;
	}
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EPERM);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	if (fs_code_owns(parent)) {
		fs_code_mknod(req, parent, name, mode, rdev);
		return;
	}
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (fs_code_owns(parent)) {
		fs_code_symlink(req, link, parent, name);
		return;
	}
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	if (fs_code_owns(parent)) {
		fs_code_rename(req, parent, name, newparent, newname, flags);
		return;
	}
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = req_fs(req);
	struct rt_buf target = { 0 };
	struct fs_node n;
	int rc = fs_resolve(fs, ino, &n);

	if (rc == 0)
		rc = fs_readlink(fs, &n, &target);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target.data);
	rt_buf_free(&target);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = fs_op_lookup,
	.getattr = op_getattr,
	.setattr = fs_op_setattr,
	.mkdir = fs_op_mkdir,
	.rmdir = fs_op_rmdir,
	.unlink = op_unlink,
	.create = op_create,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.link = op_link,
	.rename = op_rename,
	.readlink = op_readlink,
	.open = fs_op_open,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.release = fs_op_release,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
};

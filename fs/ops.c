/*
 * ops.c - the FUSE low-level handlers. Each one resolves its inode against
 * the model, does its work through sched/ and replies before returning;
 * none of them blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* How long the kernel may cache names and attributes, in seconds. Names
 * change only through this filesystem, which the kernel sees; attributes
 * of the journal change on their own, so it is never cached. */
#define ENTRY_TIMEOUT 1.0
#define ATTR_TIMEOUT  1.0

static struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Journals grow on their own, and the root's files differ by caller:
 * their attributes are never cached. */
static double attr_timeout(const struct fs_node *n)
{
	return n->kind == FS_EVENTS || n->kind == FS_TENANT_EVENTS ||
			       fs_node_per_caller(n)
		       ? 0.0
		       : ATTR_TIMEOUT;
}

/* Fills `st` for `n` as the sender of `req` sees it. */
static void stat_for(fuse_req_t req, const struct fs_node *n, struct stat *st)
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
 * without this mount's kernel seeing it: a worker removed and added again
 * (pool_size), and in a cluster a tenant, namespace or function that
 * another controller removed and made again. The kernel asks for such a
 * name again at each use, so that it never keeps an entry for a gone
 * object (a false ENOENT). An instance needs no such care: its inode is
 * its function's and number's (fs_obj_ino). */
static int entry_replaceable(struct fs *fs, const struct fs_node *n)
{
	if (n->kind == FS_WORKER_DIR)
		return 1;
	return (n->kind == FS_TENANT_DIR || n->kind == FS_NS_DIR ||
		n->kind == FS_FN_DIR) &&
	       strcmp(sched_role(fs->sched), "single") != 0;
}

static void fill_entry(fuse_req_t req, const struct fs_node *n,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	stat_for(req, n, &e->attr);
	e->ino = e->attr.st_ino;
	e->attr_timeout = attr_timeout(n);
	e->entry_timeout = entry_replaceable(req_fs(req), n) ? 0.0
							     : ENTRY_TIMEOUT;
}

static int assign_hidden(const struct fs_node *n, struct fs_caller *c);

static void reply_entry(fuse_req_t req, const struct fs_node *n)
{
	struct fuse_entry_param e;

	fill_entry(req, n, &e);
	fuse_reply_entry(req, &e);
}

/* =========================================================== lifecycle */

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

/* ============================================================ name ops */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	reply_entry(req, &n);
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
	stat_for(req, &n, &st);
	fuse_reply_attr(req, &st, attr_timeout(&n));
}

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

/* A mkdir, rmdir, chown/chmod or attribute value that waits for the
 * shared store (sched_op_run returned SCHED_LATER): replied once this
 * mount's model has it, so that what follows on this mount sees it. */
struct op_wait {
	fuse_req_t req;
	struct fs *fs;
	enum sched_op_kind kind;
	fuse_ino_t ino;		 /* mkdir: the parent; chown: the tenant */
	char name[NAME_MAX + 1]; /* mkdir */
	struct handle *h;	 /* an attribute's close: its handle */
};

static void reply_entry(fuse_req_t req, const struct fs_node *n);
static void forget_attrs(struct fs *fs, struct sched_obj *o);
static void handle_spoil(struct handle *h, int err);

/* Replies to a write that waited. */
static void on_op_done(void *arg, int err)
{
	struct op_wait *w = arg;
	struct fs_node dir, n;
	struct stat st;

	if (w->h != NULL && err)
		handle_spoil(w->h, err);
	if (err == 0 && w->kind == SCHED_OP_CREATE) {
		err = -fs_resolve(w->fs, w->ino, &dir);
		if (err == 0)
			err = -fs_child(w->fs, &dir, w->name, &n);
		if (err == 0) {
			reply_entry(w->req, &n);
			goto out;
		}
	}
	if (err == 0 && w->kind == SCHED_OP_CHOWN &&
	    fs_resolve(w->fs, w->ino, &n) == 0) {
		stat_for(w->req, &n, &st);
		fuse_reply_attr(w->req, &st, attr_timeout(&n));
		forget_attrs(w->fs, n.obj);
		goto out;
	}
	fuse_reply_err(w->req, err);
out:
	free(w);
}

/* Runs `op` for `req`: returns 0 or -errno when done at once, or
 * SCHED_LATER once the reply is left to on_op_done. */
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
	rc = sched_op_run(fs->sched, op, on_op_done, w);
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

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
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
			return; /* on_op_done replies */
		}
		if (rc < 0)
			goto out;
		owner = 1;
	}
	/* Times (touch) are accepted and ignored: they follow the model. */
	stat_for(req, &n, &st);
	fuse_reply_attr(req, &st, attr_timeout(&n));
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

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
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
		return; /* on_op_done replies */
	}
	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
	if (rc < 0)
		goto out;
	fs_caller_done(&c);
	reply_entry(req, &n);
	return;
out:
	fs_caller_done(&c);
	fuse_reply_err(req, -rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
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

/* ============================================================ files */

/* Writers of one held attribute value told apart (see attr_owner_wrote). */
#define ATTR_OWNERS 4

/* Per-open state of a file, which fi->fh points to. */
struct handle {
	struct fs_node node; /* what was opened */
	uint64_t id;	     /* node.obj->id, to notice a removed object */
	struct rt_buf snap;  /* the rendered content, for later offsets */
	int rendered;	     /* whether snap holds a rendering */
	uint64_t skew;	     /* events: offsets skipped since dropped */
	/* attribute files: the value this open writes, applied at flush */
	struct rt_buf value; /* written so far (append: added since applied) */
	int attr;	     /* an attribute file: writes are held */
	int multi;	     /* env, mounts, config: go on after a close */
	int append;	     /* opened with O_APPEND */
	int held;	     /* accepted bytes not applied yet */
	int applied; /* a close applied `value` (one-value: start over) */
	uint64_t owners[ATTR_OWNERS]; /* lock owners that wrote them */
	int nowners;		      /* > ATTR_OWNERS: too many */
	int spoiled; /* errno of a refused write: nothing more applies */
	/* invoke: one transaction at a time; `spoiled` as above */
	struct fs *fs;
	struct rt_buf req;	 /* the request written so far */
	size_t req_held;	 /* of it, taken from the quotas (quota.h) */
	uint64_t req_tenant;	 /* whose quota that is: a tenant's id */
	struct sched_call *call; /* the call under way, or NULL */
	struct sched_fwd *fwd;	 /* or the call forwarded to the leader */
	int call_state;		 /* CALL_NONE, CALL_UNDER_WAY, CALL_DONE */
	int call_err;		 /* its errno, once done */
	struct rt_buf resp;	 /* its response */
	size_t resp_pos;	 /* bytes of it read so far */
	fuse_req_t reader;	 /* a read waiting for it, or NULL */
	size_t reader_size;

	/* status, stats and metrics: rendered as they are read, for the
	 * opener (stream.who) */
	struct fs_stream stream;
	/* who opened it: whose writes these are (groups not read) */
	struct fs_caller who;
};

enum { CALL_NONE, CALL_UNDER_WAY, CALL_DONE };

/* The most bytes one write(2) to a file that is not an attribute may
 * carry: a command is a word. */
#define WRITE_MAX (256u << 10)

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = NULL;
	struct fs_node n;
	struct fs_caller c;
	mode_t mode;
	int acc = fi->flags & O_ACCMODE, rc = fs_resolve(fs, ino, &n);

	if (fs_code_owns(ino)) {
		fs_code_open(req, ino, fi);
		return;
	}

	fs_caller_init(&c, req);
	if (rc < 0)
		goto out;
	mode = fs_node_mode(&n);
	/* Root passes the kernel's permission checks; refuse here too what
	 * the kind of file never allows. Others get what the mode they see
	 * grants them, as the kernel decided already. */
	if ((acc != O_RDONLY && !(mode & S_IWUSR)) ||
	    (acc != O_WRONLY && !(mode & S_IRUSR)) ||
	    (acc != O_RDONLY && !fs_may(fs, &c, &n, SCHED_MAY_WRITE)) ||
	    (acc != O_WRONLY && !fs_may(fs, &c, &n, SCHED_MAY_READ))) {
		rc = -EACCES;
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* The credentials of the open serve its whole life: a stream's
	 * with the groups (they choose the tenants shown), a writer's
	 * without. No request is kept. */
	h->who.who.uid = c.who.uid;
	h->who.who.gid = c.who.gid;
	if (fs_node_streamed(&n)) {
		fs_caller_full(&c);
		h->stream.who = c; /* takes the groups */
		h->stream.who.req = NULL;
		memset(&c, 0, sizeof(c));
	} else if (((fs_node_forwarded(&n) && acc != O_RDONLY) ||
		    (fs_node_read_forwarded(&n) && acc != O_WRONLY)) &&
		   sched_fwd_active(fs->sched)) {
		/* A follower's forwarded write, call or read is the
		 * opener's, with its groups, as a local one would be. */
		fs_caller_full(&c);
		h->who = c; /* takes the groups */
		h->who.req = NULL;
		memset(&c, 0, sizeof(c));
	}
	h->node = n;
	h->id = n.obj->id;
	h->fs = fs;
	h->attr = n.kind >= FS_FN_ATTR;
	h->multi = fs_node_multiline(&n);
	h->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fs_node_dynamic(&n))
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	/* A transaction is a stream: offsets mean nothing there. */
	fi->nonseekable = fs_node_transaction(&n);
	/* Only a close that may apply an attribute value needs a flush. */
	fi->noflush = !(h->attr && acc != O_RDONLY);
	fs_caller_done(&c);
	if (fuse_reply_open(req, fi) != 0) {
		fs_stream_free(&h->stream);
		fs_caller_done(&h->who);
		free(h);
	}
	return;
out:
	fs_caller_done(&c);
	fuse_reply_err(req, -rc);
}

static struct handle *fh_handle(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* Reads the journal at absolute offsets, live. A reader that started
 * before the oldest kept event is moved forward to it once. */
static void read_events(fuse_req_t req, struct handle *h, size_t size,
			off_t off)
{
	struct fs *fs = req_fs(req);
	uint64_t pos = (uint64_t)off + h->skew, first;
	const char *p;
	size_t n = sched_events_at(fs->sched, pos, &p, &first);

	if (n == 0 && pos < first) {
		h->skew += first - pos;
		n = sched_events_at(fs->sched, first, &p, &first);
	}
	fuse_reply_buf(req, p, n < size ? n : size);
}

/* A tenant's part of the journal, as read_events. Its lines are not
 * contiguous in the journal: they are copied. */
static void read_tenant_events(fuse_req_t req, struct handle *h, size_t size,
			       off_t off)
{
	struct fs *fs = req_fs(req);
	uint64_t pos = (uint64_t)off + h->skew, first;
	char *buf = malloc(size ? size : 1);
	size_t n;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = sched_tenant_events_at(fs->sched, h->node.obj, pos, buf, size,
				   &first);
	if (n == 0 && pos < first) {
		h->skew += first - pos;
		n = sched_tenant_events_at(fs->sched, h->node.obj, first, buf,
					   size, &first);
	}
	fuse_reply_buf(req, buf, n);
	free(buf);
}

/* A read or write whose reply waits for workers. */
struct pending {
	fuse_req_t req;
	struct fs *fs;
	struct handle *h;
	struct sched_wait *wait;
	struct sched_fwd *fwd; /* a write forwarded to the leader, or NULL */
	char *sent;	       /* a forwarded quota write: what it said */
	size_t sent_len;
	size_t size; /* of the read, or of the write to acknowledge */
	off_t off;   /* of the read */
	int is_read;
};

static void reply_snapshot(fuse_req_t req, struct handle *h, size_t size,
			   off_t off)
{
	if ((size_t)off >= h->snap.len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, h->snap.data + off,
		       h->snap.len - (size_t)off < size
			       ? h->snap.len - (size_t)off
			       : size);
}

static void on_done(void *arg, int err)
{
	struct pending *p = arg;

	if (err != 0)
		fuse_reply_err(p->req, err);
	else if (p->is_read) {
		p->h->rendered = 1;
		reply_snapshot(p->req, p->h, p->size, p->off);
	} else
		fuse_reply_write(p->req, p->size);
	free(p);
}

/* Ctrl-C on a waiting reader or writer: the wait ends with EINTR; what
 * was asked of the workers goes on. A signal a shell takes in passing
 * (SIGCHLD, SIGWINCH) does not end it. */
static void on_interrupt(fuse_req_t req, void *arg)
{
	struct pending *p = arg;

	if (!rt_interrupt_wanted(fuse_req_ctx(req)->pid))
		return;
	if (p->fwd != NULL)
		sched_fwd_cancel(p->fs->sched, p->fwd);
	else
		sched_wait_cancel(p->fs->sched, p->wait);
	fuse_reply_err(req, EINTR);
	free(p->sent);
	free(p);
}

static struct pending *pending_new(fuse_req_t req, struct fs *fs,
				   struct handle *h, size_t size, off_t off,
				   int is_read)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (p != NULL) {
		p->req = req;
		p->fs = fs;
		p->h = h;
		p->size = size;
		p->off = off;
		p->is_read = is_read;
	}
	return p;
}

/* ============================================================ invoke
 *
 * A transaction file (spec 7): writes add up to a request, the first read
 * starts the call and waits for its end, the reads then return the
 * response and end of file. A write after that begins a new call, so one
 * open file serves call after call. A request written and never read is
 * started at the last close, as an asynchronous call. */

/* Replies to a read from the finished call's response. */
static void reply_response(fuse_req_t req, struct handle *h, size_t size)
{
	size_t n = h->resp.len - h->resp_pos;

	if (h->call_err != 0) {
		fuse_reply_err(req, h->call_err);
		return;
	}
	if (n > size)
		n = size;
	fuse_reply_buf(req, n ? h->resp.data + h->resp_pos : NULL, n);
	h->resp_pos += n;
}

static void on_call_done(void *arg, int err, const char *body, size_t len)
{
	struct handle *h = arg;
	fuse_req_t r = h->reader;

	h->call = NULL;
	h->fwd = NULL;
	h->call_state = CALL_DONE;
	h->call_err = err;
	rt_buf_reset(&h->resp);
	h->resp_pos = 0;
	if (err == 0 && len > 0 && rt_buf_append(&h->resp, body, len) < 0)
		h->call_err = ENOMEM;
	if (r != NULL) {
		h->reader = NULL;
		reply_response(r, h, h->reader_size);
	}
}

/* Ctrl-C on a reader: its wait ends with EINTR; the call goes on, is
 * counted, and a later read of the same open file still gets its end. */
static void on_call_interrupt(fuse_req_t req, void *arg)
{
	struct handle *h = arg;

	if (h->reader != req || !rt_interrupt_wanted(fuse_req_ctx(req)->pid))
		return;
	h->reader = NULL;
	fuse_reply_err(req, EINTR);
}

/* Gives the bytes of the request `h` holds back to the quotas: before
 * its call starts, which takes them for its queue. */
static void req_unhold(struct handle *h)
{
	if (h->req_held > 0)
		sched_quota_release(h->fs->sched, h->req_tenant, h->req_held);
	h->req_held = 0;
}

/* Frees the request `h` holds, and gives its bytes back. */
static void req_drop(struct handle *h)
{
	req_unhold(h);
	rt_buf_free(&h->req);
}

/* Leaves the transaction under way, done or spoiled, to start a new one. */
static void call_reset(struct handle *h)
{
	if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	h->call = NULL;
	h->fwd = NULL;
	h->call_state = CALL_NONE;
	h->call_err = 0;
	h->spoiled = 0;
	rt_buf_reset(&h->resp);
	h->resp_pos = 0;
	req_drop(h);
}

static void on_fwd_call_done(void *arg, int err, const char *body, size_t len)
{
	on_call_done(arg, err, body, len);
}

/* Starts the call of the request `h` holds: here, or on a follower of a
 * cluster at the leader, as the opener of `h`. `done`
 * NULL: an asynchronous call. Returns 0 or -errno (its `done` is then
 * not called). */
static int call_start(struct handle *h, struct sched_function *fn,
		      sched_call_fn done)
{
	struct rt_buf path = { 0 };
	int rc;

	if (!sched_fwd_active(h->fs->sched))
		return sched_call_start(h->fs->sched, fn,
					h->req.data ? h->req.data : "",
					h->req.len, done, h, &h->call);
	rc = fs_node_path(&h->node, &path);
	if (rc == 0)
		rc = sched_fwd_call(h->fs->sched, path.data,
				    h->req.data ? h->req.data : "", h->req.len,
				    &h->who.who, done ? on_fwd_call_done : NULL,
				    h, &h->fwd);
	rt_buf_free(&path);
	return rc == SCHED_LATER ? 0 : rc;
}

/* A piece of the request. A refused one (EFBIG, EINVAL, EOPNOTSUPP) is
 * taken in no part and spoils the transaction: its later writes and its
 * read fail with the same errno, and its close starts nothing. */
static void invoke_write(fuse_req_t req, struct handle *h, const char *buf,
			 size_t size)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	int rc;

	if (h->call_state != CALL_NONE)
		call_reset(h);
	if (h->spoiled) {
		rc = -h->spoiled;
		goto out;
	}
	if (size > SCHED_CALL_MAX - h->req.len)
		rc = sched_call_check(h->fs->sched, fn, NULL,
				      (size_t)SCHED_CALL_MAX + 1, 1);
	else
		rc = sched_quota_hold(h->fs->sched, fn, size);
	if (rc == 0 && size > 0) {
		h->req_tenant = sched_tenant_of(&fn->obj)->id;
		h->req_held += size;
		rc = rt_buf_append(&h->req, buf, size);
	}
	if (rc == 0)
		rc = sched_call_check(h->fs->sched, fn, h->req.data, h->req.len,
				      1);
	if (rc < 0) {
		h->spoiled = -rc;
		req_drop(h);
	}
out:
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void invoke_read(fuse_req_t req, struct handle *h, size_t size)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	int rc;

	if (h->call_state == CALL_NONE && h->spoiled) {
		/* The refused request ends like a call that failed. */
		h->call_state = CALL_DONE;
		h->call_err = h->spoiled;
		h->spoiled = 0;
	} else if (h->call_state == CALL_NONE) {
		req_unhold(h);
		rc = call_start(h, fn, on_call_done);
		req_drop(h); /* the call has its copy */
		if (rc < 0) {
			h->call_state = CALL_DONE;
			h->call_err = -rc;
		} else {
			h->call_state = CALL_UNDER_WAY;
		}
	}
	if (h->call_state == CALL_DONE) {
		reply_response(req, h, size);
		return;
	}
	if (h->reader != NULL) {
		fuse_reply_err(req, EBUSY); /* one reader waits at a time */
		return;
	}
	h->reader = req;
	h->reader_size = size;
	fuse_req_interrupt_func(req, on_call_interrupt, h);
}

/* The last close: a request never read, and not spoiled, is started as an
 * async call. */
static void invoke_release(struct handle *h)
{
	req_unhold(h);
	if (h->call_state == CALL_NONE && !h->spoiled && h->req.len > 0)
		call_start(h, (struct sched_function *)h->node.obj, NULL);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	h->call = NULL;
	h->fwd = NULL;
	req_drop(h);
	rt_buf_free(&h->resp);
}

/* ===================================================== attribute files
 *
 * The writes of one open of an attribute file make one value, applied
 * once, at close (FUSE flush): one revision, one restart. The writes add
 * up, whatever the file: a write at the offset where the previous ended
 * adds to the value, one at offset 0 (or anywhere else) starts it over
 * (bash writes `printf '/a\n/b rw\n' > mounts` one line per write(2)).
 * Each write is checked at once as if the value written so far were all
 * of it, so its errno comes from the write(2) that caused it (spec 6),
 * and a refused write spoils the open: its later writes fail with the
 * same errno and its close applies nothing. A value that is only begun
 * (it does not end in a newline; config: its JSON is not closed) and not
 * good yet is not refused: the next write or the close judges it whole
 * (partial.h). After a close that applied it, the next write goes on
 * with the value of env, mounts or config (`exec 3>env`) and starts a
 * one-value file over. With O_APPEND, what an open adds to env, mounts
 * or config goes after the value the function has when it is checked
 * and applied. */

/* Points `*v` at the value the open would apply now: its writes, after
 * the current value when it appends to env or config (`tmp` holds it). */
static int attr_value(struct handle *h, struct rt_buf *tmp, const char **v,
		      size_t *len)
{
	struct sched_wait *w;
	int rc = 0;

	if (h->multi && h->append) {
		rc = fs_render(h->fs, &h->node, tmp, NULL, NULL, &w);
		if (rc == 0)
			rc = rt_buf_append(tmp, h->value.data, h->value.len);
		*v = tmp->data;
		*len = tmp->len;
	} else {
		*v = h->value.data;
		*len = h->value.len;
	}
	if (*v == NULL)
		*v = "";
	return rc;
}

/* Whether `owner` wrote what the open holds: only its close applies it,
 * not one of a child that inherited the descriptor and never wrote (a
 * command substitution inside `{ ...; } > env`). */
static int attr_owner_wrote(const struct handle *h, uint64_t owner)
{
	int i;

	if (h->nowners > ATTR_OWNERS)
		return 1; /* too many writers to tell: any close applies */
	for (i = 0; i < h->nowners; i++)
		if (h->owners[i] == owner)
			return 1;
	return 0;
}

static void attr_note_owner(struct handle *h, uint64_t owner)
{
	if (attr_owner_wrote(h, owner))
		return;
	if (h->nowners < ATTR_OWNERS)
		h->owners[h->nowners] = owner;
	h->nowners++;
}

/* Checks the value `v` the open holds after a write: a refusal is
 * recorded, unless the value is only begun and may still become good
 * (then its close, or a later write, judges it). Returns 0 or -errno. */
static int attr_check(struct handle *h, struct sched_function *fn,
		      const char *v, size_t len)
{
	enum sched_attr a = (enum sched_attr)(h->node.kind - FS_FN_ATTR);

	if (len <= SCHED_VALUE_MAX && sched_value_unfinished(a, v, len) &&
	    sched_value_probe(fn, a, v, len) < 0)
		return 0;
	return sched_function_check(h->fs->sched, fn, a, v, len, &h->who.who);
}

/* Takes one write: checked, not applied. Returns 0 or -errno. */
static int attr_write(struct handle *h, const char *buf, size_t size, off_t off,
		      uint64_t owner)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	struct rt_buf tmp = { 0 };
	const char *v;
	size_t len;
	int rc;

	if (h->spoiled)
		return -h->spoiled;
	if ((h->applied && !h->multi) ||
	    (!h->append && (off == 0 || (uint64_t)off != h->value.len)))
		rt_buf_reset(&h->value);
	h->applied = 0;
	rc = rt_buf_append(&h->value, buf, size);
	if (rc == 0)
		rc = attr_value(h, &tmp, &v, &len);
	if (rc == 0)
		rc = attr_check(h, fn, v, len);
	if (rc < 0) {
		h->spoiled = -rc;
		h->held = 0;
		rt_buf_free(&h->value);
	} else {
		if (!h->held)
			h->nowners = 0;
		h->held = 1;
		attr_note_owner(h, owner);
	}
	rt_buf_free(&tmp);
	return rc;
}

/* Applies what the open holds, once. Returns 0 or -errno (a spoiled open
 * its refusal again, EIO when the store failed). */
/* The held value of `h` was refused: its close says so again. */
static void handle_spoil(struct handle *h, int err)
{
	h->spoiled = err;
}

/* Applies the value held by `h`. With `req` (a close), returns 0 or
 * -errno when done, or SCHED_LATER when on_op_done will reply to `req`;
 * without (a release), nobody waits for it. */
static int attr_apply(struct handle *h, fuse_req_t req)
{
	struct rt_buf tmp = { 0 };
	struct sched_wait *w;
	struct op_wait *ow = NULL;
	const char *v;
	size_t len;
	int rc;

	if (h->spoiled)
		return -h->spoiled;
	if (!h->held)
		return 0;
	h->held = 0;
	if (req != NULL) {
		ow = calloc(1, sizeof(*ow));
		if (ow == NULL)
			return -ENOMEM;
		ow->req = req;
		ow->fs = h->fs;
		ow->kind = SCHED_OP_ATTR;
		ow->h = h;
	}
	rc = attr_value(h, &tmp, &v, &len);
	if (rc == 0)
		rc = fs_write(h->fs, &h->node, v, len, &h->who.who,
			      ow ? on_op_done : NULL, ow, &w);
	if (h->append)
		rt_buf_reset(&h->value); /* part of the current value now */
	h->applied = 1;
	if (rc < 0)
		h->spoiled = -rc;
	if (rc != SCHED_LATER)
		free(ow);
	rt_buf_free(&tmp);
	return rc;
}

/* The root's status and metrics: rendered as far as the read reaches,
 * from the offset it starts at (stream.c). */
static void read_streamed(fuse_req_t req, struct handle *h, size_t size,
			  off_t off)
{
	const char *p;
	size_t n;
	int rc = fs_stream_read(h->fs, &h->node, &h->stream, size, off, &p, &n);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, p, n);
}

static void on_fwd_read_done(void *arg, int err, const char *body, size_t len)
{
	struct pending *p = arg;

	if (err == 0 && len > 0 && rt_buf_append(&p->h->snap, body, len) < 0)
		err = ENOMEM;
	on_done(p, err);
}

/* A follower of a cluster: the read of `p` (a log) is the leader's,
 * which holds the workers, as the opener of its file. Returns
 * SCHED_LATER or -errno. */
static int read_forwarded(struct pending *p)
{
	struct rt_buf path = { 0 };
	int rc;

	rc = fs_node_path(&p->h->node, &path);
	if (rc == 0)
		rc = sched_fwd_read(p->fs->sched, path.data, &p->h->who.who,
				    on_fwd_read_done, p, &p->fwd);
	rt_buf_free(&path);
	return rc;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int rc;

	if (fs_code_owns(ino)) {
		fs_code_read(req, ino, size, off, fi);
		return;
	}

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (h->node.kind == FS_EVENTS) {
		read_events(req, h, size, off);
		return;
	}
	if (h->node.kind == FS_TENANT_EVENTS) {
		read_tenant_events(req, h, size, off);
		return;
	}
	if (fs_node_transaction(&h->node)) {
		invoke_read(req, h, size);
		return;
	}
	if (fs_node_streamed(&h->node)) {
		read_streamed(req, h, size, off);
		return;
	}
	/* Render once per open; a read from offset 0 starts over, as a
	 * monitoring agent that rereads a kept-open file expects. */
	if (h->rendered && off != 0) {
		reply_snapshot(req, h, size, off);
		return;
	}
	rt_buf_reset(&h->snap);
	p = pending_new(req, fs, h, size, off, 1);
	if (p == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (fs_node_read_forwarded(&h->node) && sched_fwd_active(fs->sched))
		rc = read_forwarded(p);
	else
		rc = fs_render(fs, &h->node, &h->snap, on_done, p, &p->wait);
	if (rc == SCHED_LATER) {
		fuse_req_interrupt_func(req, on_interrupt, p);
		return;
	}
	free(p);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	h->rendered = 1;
	reply_snapshot(req, h, size, off);
}

static void on_fwd_done(void *arg, int err, const char *body, size_t len)
{
	struct pending *p = arg;
	const struct fs_node *n = &p->h->node;
	char *sent = p->sent;

	(void)body;
	(void)len;
	/* The leader took a tenant's limit: this mount holds it at once,
	 * before the shared store brings the leader's record. */
	if (err == 0 && sent != NULL &&
	    sched_find(p->fs->sched, p->h->id) == n->obj)
		(void)sched_quota_keep(
			p->fs->sched, n->obj,
			(enum sched_quota_res)(n->kind - FS_QUOTA_FILE), sent,
			p->sent_len);
	on_done(arg, err);
	free(sent);
}

/* A follower of a cluster: the write of `p` goes to the leader, as the
 * opener of its file (with its groups, read at the open). Returns
 * SCHED_LATER or -errno. */
static int write_forwarded(struct pending *p, const char *buf, size_t size)
{
	struct rt_buf path = { 0 };
	int rc;

	rc = fs_node_path(&p->h->node, &path);
	if (rc == 0 && p->h->node.kind >= FS_QUOTA_FILE &&
	    p->h->node.kind < FS_QUOTA_USAGE) {
		p->sent = malloc(size > 0 ? size : 1);
		if (p->sent == NULL)
			rc = -ENOMEM;
		else
			memcpy(p->sent, buf, size);
		p->sent_len = size;
	}
	if (rc == 0)
		rc = sched_fwd_write(p->fs->sched, path.data, buf, size,
				     &p->h->who.who, on_fwd_done, p, &p->fwd);
	if (rc != SCHED_LATER) {
		free(p->sent);
		p->sent = NULL;
	}
	rt_buf_free(&path);
	return rc;
}

/* A write to an attribute file is checked and held until close (above);
 * one to invoke adds to its request; one to any other file (state,
 * restart, pool_size, ...) is one whole command, applied before it
 * returns. */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int rc;

	if (fs_code_owns(ino)) {
		fs_code_write(req, ino, buf, size, off, fi);
		return;
	}

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		rc = -ENOENT;
		goto out;
	}
	if (fs_node_transaction(&h->node)) {
		invoke_write(req, h, buf, size);
		return;
	}
	if (h->attr) {
		rc = attr_write(h, buf, size, off, fi->lock_owner);
		goto out;
	}
	if (size > WRITE_MAX) {
		rc = -EINVAL;
		goto out;
	}
	p = pending_new(req, fs, h, size, off, 0);
	if (p == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (fs_node_forwarded(&h->node) && sched_fwd_active(fs->sched))
		rc = write_forwarded(p, buf, size);
	else
		rc = fs_write(fs, &h->node, buf, size, &h->who.who, on_done, p,
			      &p->wait);
	if (rc == SCHED_LATER) {
		/* Replied once the processes have done what was asked. */
		fuse_req_interrupt_func(req, on_interrupt, p);
		return;
	}
	free(p);
out:
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* Every close(2) of a descriptor of an attribute file opened for writing
 * (the others are opened with noflush): the value written through it is
 * applied here, so that close returns once it is stored (or with the
 * store's error). A close that follows no new write applies nothing:
 * bash's `echo x > f` closes a copy of the descriptor before it writes.
 * The close of a spoiled open returns the refusal again. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	int rc = 0;

	if (fs_code_owns(ino)) {
		fs_code_flush(req, ino, fi);
		return;
	}

	(void)ino;
	if (!h->attr)
		rc = 0;
	else if (h->spoiled)
		rc = -h->spoiled;
	else if (!h->held || !attr_owner_wrote(h, fi->lock_owner))
		rc = 0;
	else if (sched_find(fs->sched, h->id) != h->node.obj)
		rc = -ENOENT;
	else
		rc = attr_apply(h, req);
	if (rc != SCHED_LATER)
		fuse_reply_err(req, -rc);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	int alive;

	if (fs_code_owns(ino)) {
		fs_code_release(req, ino, fi);
		return;
	}
	alive = sched_find(h->fs->sched, h->id) == h->node.obj;
	(void)ino;
	if (fs_node_transaction(&h->node) && alive)
		invoke_release(h);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	/* Held by a writer whose close was not seen (none is expected). */
	if (h->attr && alive)
		attr_apply(h, NULL);
	req_drop(h);
	rt_buf_free(&h->resp);
	rt_buf_free(&h->snap);
	fs_stream_free(&h->stream);
	fs_caller_done(&h->who);
	rt_buf_free(&h->value);
	free(h);
	fuse_reply_err(req, 0);
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

/* ======================================================== directories */

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

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
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

			fill_entry(req, &node, &ep);
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

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	if (fs_code_owns(ino)) {
		fs_code_readdir(req, ino, size, off, fi, 0);
		return;
	}
	(void)ino;
	readdir_common(req, size, off, fi, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	if (fs_code_owns(ino)) {
		fs_code_readdir(req, ino, size, off, fi, 1);
		return;
	}
	(void)ino;
	readdir_common(req, size, off, fi, 1);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
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

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.create = op_create,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.link = op_link,
	.rename = op_rename,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
};

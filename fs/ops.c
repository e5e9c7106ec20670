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

static double attr_timeout(const struct fs_node *n)
{
	return n->kind == FS_EVENTS ? 0.0 : ATTR_TIMEOUT;
}

static void fill_entry(struct fs *fs, const struct fs_node *n,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	fs_stat(fs, n, &e->attr);
	e->ino = e->attr.st_ino;
	e->attr_timeout = attr_timeout(n);
	e->entry_timeout = ENTRY_TIMEOUT;
}

static void reply_entry(fuse_req_t req, const struct fs_node *n)
{
	struct fuse_entry_param e;

	fill_entry(req_fs(req), n, &e);
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
	int rc = fs_resolve(fs, parent, &dir);

	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
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

	(void)fi;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_stat(fs, &n, &st);
	fuse_reply_attr(req, &st, attr_timeout(&n));
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node n;
	struct stat st;
	int rc = fs_resolve(fs, ino, &n);

	(void)attr;
	(void)fi;
	if (rc < 0)
		goto out;
	fs_stat(fs, &n, &st);
	/* Truncation is what `echo x > file` asks first: the write that
	 * follows carries the whole value, so it changes nothing itself. */
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (S_ISDIR(st.st_mode) || !(st.st_mode & S_IWUSR))) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EACCES;
		goto out;
	}
	if (to_set &
	    (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		rc = -EPERM;
		goto out;
	}
	/* Times (touch) are accepted and ignored: they follow the model. */
	fuse_reply_attr(req, &st, attr_timeout(&n));
	return;
out:
	fuse_reply_err(req, -rc);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct fs *fs = req_fs(req);
	struct fs_node dir, n;
	struct sched_obj *o;
	int rc = fs_resolve(fs, parent, &dir);

	(void)mode;
	if (rc < 0)
		goto out;
	if (dir.kind != FS_TENANTS_DIR && dir.kind != FS_TENANT_DIR &&
	    dir.kind != FS_NS_DIR) {
		rc = fs_child(fs, &dir, name, &n) == 0 ? -EEXIST : -EPERM;
		goto out;
	}
	rc = sched_create(fs->sched, dir.obj, name, &o);
	if (rc < 0)
		goto out;
	n.obj = o;
	n.kind = o->type == SCHED_TENANT      ? FS_TENANT_DIR
		 : o->type == SCHED_NAMESPACE ? FS_NS_DIR
					      : FS_FN_DIR;
	reply_entry(req, &n);
	return;
out:
	fuse_reply_err(req, -rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node dir, n;
	int rc = fs_resolve(fs, parent, &dir);

	if (rc == 0)
		rc = fs_child(fs, &dir, name, &n);
	if (rc == 0 && n.kind != FS_TENANT_DIR && n.kind != FS_NS_DIR &&
	    n.kind != FS_FN_DIR) {
		struct stat st;

		fs_stat(fs, &n, &st);
		rc = S_ISDIR(st.st_mode) ? -EPERM : -ENOTDIR;
	}
	if (rc == 0)
		rc = sched_remove(fs->sched, dir.obj, name);
	fuse_reply_err(req, -rc);
}

/* Creating, linking, renaming or removing files is not how fnfs is used:
 * objects are directories made with mkdir, and their files are fixed. */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EPERM);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
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
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

/* ============================================================ files */

/* Per-open state of a file, which fi->fh points to. */
struct handle {
	struct fs_node node; /* what was opened */
	uint64_t id;	     /* node.obj->id, to notice a removed object */
	struct rt_buf snap;  /* the rendered content, for later offsets */
	int rendered;	     /* whether snap holds a rendering */
	uint64_t skew;	     /* events: offsets skipped since dropped */
	struct rt_buf value; /* multi-line files: the value written so far */
	int multi;	     /* env or config: writes of one open add up */
	int append;	     /* opened with O_APPEND */
	int refused;	     /* a piece of this value was refused */
	/* invoke: one transaction at a time */
	struct fs *fs;
	struct rt_buf req;	 /* the request written so far */
	struct sched_call *call; /* the call under way, or NULL */
	int call_state;		 /* CALL_NONE, CALL_UNDER_WAY, CALL_DONE */
	int call_err;		 /* its errno, once done */
	struct rt_buf resp;	 /* its response */
	size_t resp_pos;	 /* bytes of it read so far */
	fuse_req_t reader;	 /* a read waiting for it, or NULL */
	size_t reader_size;

	/* status and metrics: rendered as they are read */
	struct fs_stream stream;
};

enum { CALL_NONE, CALL_UNDER_WAY, CALL_DONE };

/* The most bytes a multi-line value may take, below the kernel's largest
 * write so that one write(2) reaches us whole. */
#define MULTI_MAX (256u << 10)

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = NULL;
	struct fs_node n;
	mode_t mode;
	int acc = fi->flags & O_ACCMODE, rc = fs_resolve(fs, ino, &n);

	if (rc < 0)
		goto out;
	mode = fs_node_mode(&n);
	/* Root passes the kernel's permission checks; refuse here too. */
	if ((acc != O_RDONLY && !(mode & S_IWUSR)) ||
	    (acc != O_WRONLY && !(mode & S_IRUSR))) {
		rc = -EACCES;
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	h->node = n;
	h->id = n.obj->id;
	h->fs = fs;
	h->multi = fs_node_multiline(&n);
	h->append = (fi->flags & O_APPEND) != 0;
	if (h->multi && h->append && acc != O_RDONLY) {
		/* `echo K=V >> env` adds to what is there. */
		struct sched_wait *w;

		fs_render(fs, &n, &h->value, NULL, NULL, &w);
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fs_node_dynamic(&n))
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	/* A transaction is a stream: offsets mean nothing there. */
	fi->nonseekable = fs_node_transaction(&n);
	if (fuse_reply_open(req, fi) != 0) {
		rt_buf_free(&h->value);
		free(h);
	}
	return;
out:
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

/* A read or write whose reply waits for workers. */
struct pending {
	fuse_req_t req;
	struct fs *fs;
	struct handle *h;
	struct sched_wait *wait;
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
	sched_wait_cancel(p->fs->sched, p->wait);
	fuse_reply_err(req, EINTR);
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

/* Leaves the transaction under way or done, to start a new one. */
static void call_reset(struct handle *h)
{
	if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	h->call = NULL;
	h->call_state = CALL_NONE;
	h->call_err = 0;
	rt_buf_reset(&h->resp);
	h->resp_pos = 0;
	rt_buf_reset(&h->req);
}

static void invoke_write(fuse_req_t req, struct handle *h, const char *buf,
			 size_t size)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	size_t before;
	int rc;

	if (h->call_state != CALL_NONE)
		call_reset(h);
	before = h->req.len;
	if (before + size > SCHED_CALL_MAX) {
		rc = sched_call_check(h->fs->sched, fn, NULL,
				      SCHED_CALL_MAX + 1, 1);
		goto out;
	}
	rc = rt_buf_append(&h->req, buf, size);
	if (rc == 0)
		rc = sched_call_check(h->fs->sched, fn, h->req.data, h->req.len,
				      1);
	if (rc < 0 && h->req.len > before) {
		/* A refused piece leaves the request as it was. */
		h->req.len = before;
		if (h->req.data != NULL)
			h->req.data[before] = '\0';
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

	if (h->call_state == CALL_NONE) {
		rc = sched_call_start(h->fs->sched, fn,
				      h->req.data ? h->req.data : "",
				      h->req.len, on_call_done, h, &h->call);
		rt_buf_reset(&h->req);
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

/* The last close: a request never read is started as an async call. */
static void invoke_release(struct handle *h)
{
	struct sched_call *c;

	if (h->call_state == CALL_NONE && h->req.len > 0)
		sched_call_start(h->fs->sched,
				 (struct sched_function *)h->node.obj,
				 h->req.data, h->req.len, NULL, NULL, &c);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	h->call = NULL;
	rt_buf_free(&h->req);
	rt_buf_free(&h->resp);
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

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int rc;

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (h->node.kind == FS_EVENTS) {
		read_events(req, h, size, off);
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

/* A write(2) is one whole value, applied before it returns. The
 * multi-line files (env, config) are the exception: shells write them a
 * line per write(2), so the writes of one open add up, and each applies
 * the value written so far. Once a piece is refused, the rest of that
 * value is refused too, so a script sees the failure. */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	struct pending *p;
	const char *value = buf;
	size_t len = size;
	int rc;

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		rc = -ENOENT;
		goto out;
	}
	if (fs_node_transaction(&h->node)) {
		invoke_write(req, h, buf, size);
		return;
	}
	if (h->multi) {
		if (off == 0 && !h->append) {
			rt_buf_reset(&h->value);
			h->refused = 0;
		}
		if (h->refused) {
			rc = -EINVAL;
			goto out;
		}
		if (h->value.len + size > MULTI_MAX) {
			rc = -EINVAL;
			h->refused = 1;
			goto out;
		}
		rc = rt_buf_append(&h->value, buf, size);
		if (rc < 0)
			goto out;
		value = h->value.data;
		len = h->value.len;
	} else if (size > MULTI_MAX) {
		rc = -EINVAL;
		goto out;
	}
	p = pending_new(req, fs, h, size, off, 0);
	if (p == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs_write(fs, &h->node, value, len, on_done, p, &p->wait);
	if (rc == SCHED_LATER) {
		/* Replied once the processes have done what was asked. */
		fuse_req_interrupt_func(req, on_interrupt, p);
		return;
	}
	free(p);
	if (rc < 0 && h->multi)
		h->refused = 1;
out:
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);

	(void)ino;
	if (fs_node_transaction(&h->node) &&
	    sched_find(h->fs->sched, h->id) == h->node.obj)
		invoke_release(h);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	rt_buf_free(&h->req);
	rt_buf_free(&h->resp);
	rt_buf_free(&h->snap);
	fs_stream_free(&h->stream);
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
};

static int snap_add(const char *name, const struct fs_node *n, void *arg)
{
	struct dir_handle *d = arg;

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
	int rc = fs_resolve(fs, ino, &n);

	if (rc < 0)
		goto out;
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	up = fs_parent(fs, &n);
	rc = snap_add(".", &n, d);
	if (rc == 0)
		rc = snap_add("..", &up, d);
	if (rc == 0)
		rc = fs_children(fs, &n, snap_add, d);
	if (rc < 0)
		goto out;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		free(d->ents);
		free(d);
	}
	return;
out:
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
		struct fs_node node;
		size_t len;

		/* An object removed since opendir is skipped. */
		node.kind = e->kind;
		node.obj = sched_find(fs->sched, e->id);
		if (node.obj == NULL)
			continue;
		if (plus) {
			struct fuse_entry_param ep;

			fill_entry(fs, &node, &ep);
			len = fuse_add_direntry_plus(req, buf + used,
						     size - used, e->name, &ep,
						     (off_t)i + 1);
		} else {
			struct stat st;

			fs_stat(fs, &node, &st);
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
	(void)ino;
	readdir_common(req, size, off, fi, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, 1);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

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
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
};

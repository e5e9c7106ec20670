/*
 * ops_file.c - the open files of the tree: open, read, write, flush and
 * release, which hand invoke files to ops_invoke.c, attribute files to
 * ops_attr.c and journals and streams to ops_events.c, and serve the
 * others here: rendered files (a snapshot per open, which a read from
 * offset 0 renders again) and command files (state, restart, pool_size,
 * ...), whose write is one whole command, with the wait for workers or
 * the leader of a cluster.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* The most bytes one write(2) to a file that is not an attribute may
 * carry: a command is a word. */
#define WRITE_MAX (256u << 10)

/* A handle of a file of the tree (not code/, whose handles are code/'s):
 * made by fs_op_open, its kind of file fixed by the node it opened. */
#define HANDLE_ASSERT(h)                                                       \
	assert((h) != NULL && (h)->fs != NULL &&                               \
	       (h)->attr == ((h)->node.kind >= FS_FN_ATTR) &&                  \
	       (h)->node.kind != FS_CODE_DIR &&                                \
	       (h)->node.kind != FS_CODE_NODE)

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
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
	HANDLE_ASSERT(h);

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (h->node.kind == FS_EVENTS) {
		fs_events_read(req, h, size, off);
		return;
	}
	if (h->node.kind == FS_TENANT_EVENTS) {
		fs_tenant_events_read(req, h, size, off);
		return;
	}
	if (fs_node_transaction(&h->node)) {
		fs_invoke_read(req, h, size);
		return;
	}
	if (fs_node_streamed(&h->node)) {
		fs_streamed_read(req, h, size, off);
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

/* A write to an attribute file is checked and held until close (ops_attr.c);
 * one to invoke adds to its request; one to any other file (state,
 * restart, pool_size, ...) is one whole command, applied before it
 * returns. */
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	struct pending *p;
	int rc;

	if (fs_code_owns(ino)) {
		fs_code_write(req, ino, buf, size, off, fi);
		return;
	}
	HANDLE_ASSERT(h);

	(void)ino;
	if (sched_find(fs->sched, h->id) != h->node.obj) {
		rc = -ENOENT;
		goto out;
	}
	if (fs_node_transaction(&h->node)) {
		fs_invoke_write(req, h, buf, size);
		return;
	}
	if (h->attr) {
		rc = fs_attr_write(h, buf, size, off, fi->lock_owner);
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
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct handle *h = fh_handle(fi);
	int rc = 0;

	if (fs_code_owns(ino)) {
		fs_code_flush(req, ino, fi);
		return;
	}
	HANDLE_ASSERT(h);

	(void)ino;
	if (!h->attr)
		rc = 0;
	else if (h->spoiled)
		rc = -h->spoiled;
	else if (!h->held || !fs_attr_owner_wrote(h, fi->lock_owner))
		rc = 0;
	else if (sched_find(fs->sched, h->id) != h->node.obj)
		rc = -ENOENT;
	else
		rc = fs_attr_apply(h, req);
	if (rc != SCHED_LATER)
		fuse_reply_err(req, -rc);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = fh_handle(fi);
	int alive;

	if (fs_code_owns(ino)) {
		fs_code_release(req, ino, fi);
		return;
	}
	HANDLE_ASSERT(h);
	alive = sched_find(h->fs->sched, h->id) == h->node.obj;
	(void)ino;
	if (fs_node_transaction(&h->node) && alive)
		fs_invoke_release(h);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	/* Held by a writer whose close was not seen (none is expected). */
	if (h->attr && alive)
		fs_attr_apply(h, NULL);
	fs_invoke_drop(h);
	rt_buf_free(&h->resp);
	rt_buf_free(&h->snap);
	fs_stream_free(&h->stream);
	fs_caller_done(&h->who);
	rt_buf_free(&h->value);
	free(h);
	fuse_reply_err(req, 0);
}

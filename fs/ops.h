/*
 * ops.h - what the files of the FUSE low-level handlers share (ops.c,
 * ops_tree.c, ops_dir.c, ops_file.c, ops_invoke.c, ops_attr.c,
 * ops_events.c): the per-open state of a file, the wait of a write for a
 * shared store, and the handlers and helpers one of them calls in
 * another. Private to those files. Everything runs on the loop.
 */
#ifndef FNFS_FS_OPS_H
#define FNFS_FS_OPS_H

#include <limits.h>

#include "fs.h"

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

/* Writers of one held attribute value told apart (see fs_attr_owner_wrote). */
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

static inline struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The held value of `h` was refused: its close says so again. */
static inline void handle_spoil(struct handle *h, int err)
{
	h->spoiled = err;
}

/* ---- ops.c: the attributes and entries replied for a node */

/* How long the kernel may cache the attributes of `n`, in seconds. */
double fs_attr_timeout(const struct fs_node *n);

/* Fills `st` for `n` as the sender of `req` sees it. */
void fs_stat_for(fuse_req_t req, const struct fs_node *n, struct stat *st);

/* Fills the entry `e` of `n` for `req`: its attributes and how long the
 * kernel may keep them and the name. */
void fs_fill_entry(fuse_req_t req, const struct fs_node *n,
		   struct fuse_entry_param *e);

/* Replies to `req` with the entry of `n`. */
void fs_reply_entry(fuse_req_t req, const struct fs_node *n);

/* ---- ops_tree.c: mkdir, rmdir, chown and chmod */

/* The callback of sched_op_run for a struct op_wait `arg` (allocated with
 * calloc, freed here): replies to its request, once. */
void fs_op_done(void *arg, int err);

/* Handlers of fs_ops: each replies to `req` once, before it returns or
 * from fs_op_done. */
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int to_set, struct fuse_file_info *fi);
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

/* ---- ops_dir.c: lookup and directories (handlers of fs_ops: each replies
 * to `req` once) */

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi);

/* ---- ops_file.c: open files (handlers of fs_ops: each replies to `req`
 * once, before it returns or from the callback of what it waits for) */

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ---- ops_events.c: journals and streams; each replies to `req` */

/* Replies up to `size` bytes of the journal at `off` of open `h`. */
void fs_events_read(fuse_req_t req, struct handle *h, size_t size, off_t off);

/* The same for the tenant's journal that `h` has open. */
void fs_tenant_events_read(fuse_req_t req, struct handle *h, size_t size,
			   off_t off);

/* Replies up to `size` bytes at `off` of the streamed file `h` has open
 * (the root's status, stats or metrics). */
void fs_streamed_read(fuse_req_t req, struct handle *h, size_t size, off_t off);

/* ---- ops_invoke.c: the transaction of invoke */

/* Takes a piece of the request written to invoke file `h`, and replies. */
void fs_invoke_write(fuse_req_t req, struct handle *h, const char *buf,
		     size_t size);

/* Starts the call of the request `h` holds (once) and replies with its
 * response, once it has it. */
void fs_invoke_read(fuse_req_t req, struct handle *h, size_t size);

/* At the last close of a live invoke file: starts a request never read
 * as an asynchronous call, and leaves the call under way. */
void fs_invoke_release(struct handle *h);

/* Frees the request `h` holds and gives its bytes back to the quotas. */
void fs_invoke_drop(struct handle *h);

/* ---- ops_attr.c: attribute files */

/* Takes one write of `size` bytes at `off` by lock owner `owner`: checked,
 * held until a close applies it. Returns 0 or -errno (then `h` is
 * spoiled). */
int fs_attr_write(struct handle *h, const char *buf, size_t size, off_t off,
		  uint64_t owner);

/* Applies the value `h` holds, once. With `req` (a close), returns 0 or
 * -errno when done, or SCHED_LATER when fs_op_done will reply to `req`;
 * without (a release), nobody waits for it. */
int fs_attr_apply(struct handle *h, fuse_req_t req);

/* Whether lock owner `owner` wrote what `h` holds. */
int fs_attr_owner_wrote(const struct handle *h, uint64_t owner);

#endif

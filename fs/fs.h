/*
 * fs.h - the filesystem layer: the mounted tree, served by FUSE low-level
 * handlers on the controller's libuv loop. Private to fs/.
 */
#ifndef FNFS_FS_H
#define FNFS_FS_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <uv.h>

#include "../sched/sched.h"

/* ================================================================== nodes
 *
 * An inode number is (object id << 8) | kind: the object is a tenant,
 * namespace or function of the model (or the root, id 1), the kind says
 * which directory or file of that object it is. Nothing is kept per inode,
 * so lookups never grow a table and ids, never reused, make stale inodes
 * simply fail with ENOENT. The root directory is inode 1 as FUSE requires.
 */
enum fs_kind {
	FS_NONE,
	FS_ROOT_DIR,
	FS_README,
	FS_VERSION,
	FS_EVENTS,
	FS_TENANTS_DIR,
	FS_TENANT_DIR,
	FS_NS_DIR,
	FS_FN_DIR,
	FS_FN_STATE,
	FS_FN_RESTART,
	FS_FN_STATUS,
	FS_FN_LOG,
	FS_INSTANCES_DIR,
	FS_INST_DIR,
	FS_INST_STATE,
	FS_INST_RESTART,
	FS_INST_STATUS,
	FS_INST_STATS,
	FS_INST_PID,
	FS_INST_LOG,
	FS_INST_WORKER, /* symlink to workers/<id> */
	FS_WORKERS_DIR,
	FS_POOL_SIZE,
	FS_POOL_STRATEGY,
	FS_POOL_REBALANCE,
	FS_POOL_STATUS,
	FS_WORKER_DIR,
	FS_WORKER_STATE,
	FS_WORKER_MEMORY,
	FS_WORKER_FREE,
	FS_WORKER_TAGS,
	FS_WORKER_NAMESPACES,
	FS_WORKER_PID,
	FS_WORKER_STATUS,
	FS_WORKER_STATS,
	FS_ASSIGN_DIR,
	FS_ASSIGN_LINK, /* symlink to an instance directory */
	FS_STATUS,	/* the root's table of functions */
	FS_STATS,
	FS_METRICS,
	FS_FN_STATS,
	FS_FN_INVOKE,	  /* the transaction file of calls */
	FS_TENANT_EVENTS, /* a tenant's part of the journal */
	FS_CODE_DIR,	  /* a function's code/ (fs/code/) */
	FS_CODE_NODE,	  /* a file or directory below it: id is the node's */
	FS_QUOTA_DIR,	  /* a tenant's quota/ (quota.h) */
	FS_QUOTA_FILE,	  /* + enum sched_quota_res: one limit of it */
	FS_QUOTA_USAGE = FS_QUOTA_FILE + SCHED_QUOTA_COUNT, /* its use */
	FS_FN_ATTR, /* + enum sched_attr */
	FS_KIND_COUNT = FS_FN_ATTR + SCHED_ATTR_COUNT
};

/* A resolved inode. */
struct fs_node {
	enum fs_kind kind;
	struct sched_obj *obj;	      /* the object it belongs to, never NULL */
	struct sched_code_node *code; /* FS_CODE_NODE: the node; else NULL */
};

/* The mounted filesystem and its loop. One per process. */
struct fs {
	struct sched *sched;	 /* the model; owned */
	struct fuse_session *se; /* owned */
	uv_loop_t *loop;	 /* not owned */
	uv_poll_t poll;		 /* on the FUSE device */
	uv_signal_t sig[3];	 /* SIGTERM, SIGINT, SIGHUP */
	struct fuse_buf fbuf;	 /* request buffer, reused */
	uid_t uid;		 /* owner shown on every node */
	gid_t gid;
	int64_t mount_ms;	/* time of mounting, for static files */
	const char *mountpoint; /* not owned */
	int mounted;		/* the kernel mount is in place */
	int stopping;		/* set once shutdown began */
};

/* The name of a fixed file or directory of kind `k` ("restart"), or
 * NULL for an object's directory. */
const char *fs_kind_name(enum fs_kind k);

/* Returns the inode number of `kind` of object `id`. */
fuse_ino_t fs_ino(uint64_t id, enum fs_kind kind);

/* Returns the inode number of node `kind` of object `o`: fs_ino of its
 * id, but an instance's nodes by its function and number, which outlive
 * the object (a restart or a change of parallelism may replace it). */
fuse_ino_t fs_obj_ino(const struct sched_obj *o, enum fs_kind kind);

/* Resolves `ino`. Returns 0, or -ENOENT if its object is gone. */
int fs_resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *out);

/* Finds the child `name` of directory `dir`. Returns 0 or -ENOENT (and
 * -ENOTDIR when `dir` is not a directory). */
int fs_child(struct fs *fs, const struct fs_node *dir, const char *name,
	     struct fs_node *out);

/* Calls `fn` for every child of directory `dir`, static files first.
 * Stops at and returns fn's first non-zero result. */
int fs_children(struct fs *fs, const struct fs_node *dir,
		int (*fn)(const char *name, const struct fs_node *n, void *arg),
		void *arg);

/* Fills `st` for node `n` as caller `who` sees it (NULL: root; the size
 * of the root's status and stats depends on the caller). */
void fs_stat(struct fs *fs, const struct fs_node *n,
	     const struct sched_caller *who, struct stat *st);

/* The type and the permission bits of kind of node `n`, before its
 * tenant's mode applies: what the file allows anybody at most. */
mode_t fs_node_mode(const struct fs_node *n);

/* The owner, group and mode (type and permission bits) node `n` shows:
 * inside a tenant, its owner and group, and the bits the kind allows
 * that the tenant's mode grants each class (fs_node_mode); outside, the
 * mounting user's. */
void fs_node_owner(struct fs *fs, const struct fs_node *n, uid_t *uid,
		   gid_t *gid, mode_t *mode);

/* Whether `kind`, an attribute file, is one only root may write (it is
 * then root's, 0644, inside any tenant). */
int fs_attr_owner_is_root(enum fs_kind kind);

/* Whether the root's files show node `n` per caller. */
int fs_node_per_caller(const struct fs_node *n);

/* ================================================================ callers
 *
 * Who sends a request (caller.c): uid and gid from the request, the
 * supplementary groups read only when a check needs them. */
struct fs_caller {
	struct sched_caller who;
	fuse_req_t req;	  /* where the groups come from, or NULL */
	int have_groups;  /* who.groups is read */
	uint32_t *groups; /* owned: who.groups */
};

/* Takes the caller of `req`, without its groups yet. */
void fs_caller_init(struct fs_caller *c, fuse_req_t req);

/* The caller with its supplementary groups read (none when they cannot
 * be read). */
const struct sched_caller *fs_caller_full(struct fs_caller *c);

/* Frees what `c` holds. */
void fs_caller_done(struct fs_caller *c);

/* Whether caller `c` may do `mask` (SCHED_MAY_*) on node `n`, as shown
 * by fs_node_owner; groups are read only when the answer needs them. */
int fs_may(struct fs *fs, struct fs_caller *c, const struct fs_node *n,
	   int mask);

/* Whether reads of `n` are rendered per open (direct_io) rather than
 * constant text the page cache may keep. */
int fs_node_dynamic(const struct fs_node *n);

/* Whether a file holds lines or a document that an open goes on adding
 * to after a close, and that O_APPEND adds to (env, mounts, config). */
int fs_node_multiline(const struct fs_node *n);

/* Whether `n` is a transaction file (invoke). */
int fs_node_transaction(const struct fs_node *n);

/* The directory `n` appears in, for "..". */
struct fs_node fs_parent(struct fs *fs, const struct fs_node *n);

/* Appends the content of file `n` to `out`. Returns 0, -errno, or
 * SCHED_LATER when `done(arg, err)` will be called once `out` is complete
 * (`*wait` then allows cancelling). */
int fs_render(struct fs *fs, const struct fs_node *n, struct rt_buf *out,
	      sched_done_fn done, void *arg, struct sched_wait **wait);

/* Applies the value `buf` to file `n` for `who` (NULL: fnfs). Returns 0,
 * -errno, or SCHED_LATER as fs_render. */
int fs_write(struct fs *fs, const struct fs_node *n, const char *buf,
	     size_t len, const struct sched_caller *who, sched_done_fn done,
	     void *arg, struct sched_wait **wait);

/* Appends the target of symlink `n`. Returns 0 or -errno. */
int fs_readlink(struct fs *fs, const struct fs_node *n, struct rt_buf *out);

/* ============================================================= forwarding
 *
 * A follower of a cluster forwards to the leader what only the leader
 * can do (forward.c over sched/cluster/forward.h); the leader runs it here as a
 * local write, call or read. */

/* Whether a write to `n` is forwarded by a follower: a file whose state
 * only the leader holds (state and restart of functions and instances,
 * workers/ID/state, pool_size, strategy, rebalance). */
int fs_node_forwarded(const struct fs_node *n);

/* Whether a read of `n` is forwarded by a follower: a function's or an
 * instance's `log`, which the leader asks of the workers it holds. */
int fs_node_read_forwarded(const struct fs_node *n);

/* Appends the path of node `n` from the mount's root
 * ("tenants/t/ns/fn/instances/0/restart"). Returns 0 or -ENOMEM. */
int fs_node_path(const struct fs_node *n, struct rt_buf *out);

/* Serves what followers forward, on the leader (at the mount's start). */
void fs_forward_serve(struct fs *fs);

/* ================================================================ streams
 *
 * The root's status and metrics grow with the functions; they are
 * rendered as they are read (stream.c), not whole at the first read. */

/* A reader's place in such a file: a cursor of sched/, and the window
 * `win` of the rendering that starts at offset `off`. Zeroed to begin. */
struct fs_stream {
	struct sched_cursor *cur; /* NULL before the first read */
	struct rt_buf win;	  /* rendered bytes from `off` on */
	uint64_t off;
	int end;	      /* the cursor has rendered everything */
	struct fs_caller who; /* the opener, taken at the open */
};

/* Whether node `n` is rendered as it is read. */
int fs_node_streamed(const struct fs_node *n);

/* Serves a read of up to `size` bytes at `off` of streamed node `n`:
 * points `*p` at them and sets `*len` (0 at the end). They stay valid
 * until the next call. A read from 0 starts a fresh rendering. Returns 0,
 * or -EINVAL/-ENOMEM. */
int fs_stream_read(struct fs *fs, const struct fs_node *n, struct fs_stream *st,
		   size_t size, off_t off, const char **p, size_t *len);

/* Frees what a reader's place holds; it may be used again. */
void fs_stream_free(struct fs_stream *st);

/* The size of streamed node `n` now, for caller `who` (NULL: root),
 * counted by rendering it a piece at a time. Returns 0 or
 * -EINVAL/-ENOMEM. */
int fs_stream_size(struct fs *fs, const struct fs_node *n,
		   const struct sched_caller *who, size_t *size);

/* ================================================================== code
 *
 * A function's code/ (fs/code/): ops*.c hand every request about a code
 * inode to these, which reply. */

/* Whether `ino` is code/ or a node below it. */
int fs_code_owns(fuse_ino_t ino);

/* Resolves code node `id`. Returns 0 or -ENOENT. */
int fs_code_resolve(struct fs *fs, uint64_t id, struct fs_node *out);

/* Fills `st` for code/ or a node below it. */
void fs_code_stat(struct fs *fs, const struct fs_node *n, struct stat *st);

/* The owner, group and mode of code node `n` (FS_CODE_NODE): the
 * tenant's owner and group, and its own type and bits. */
void fs_code_owner(struct fs *fs, const struct fs_node *n, uid_t *uid,
		   gid_t *gid, mode_t *mode);

void fs_code_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_code_getattr(fuse_req_t req, fuse_ino_t ino);
void fs_code_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set, struct fuse_file_info *fi);
void fs_code_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode);
void fs_code_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, dev_t rdev);
void fs_code_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		     const char *name);
void fs_code_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, struct fuse_file_info *fi);
void fs_code_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_code_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_code_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		    fuse_ino_t newparent, const char *newname,
		    unsigned int flags);
void fs_code_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_code_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
void fs_code_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		   off_t off, struct fuse_file_info *fi);
void fs_code_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_code_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_code_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_code_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, int plus);
void fs_code_releasedir(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi);

/* The low-level operations table. */
extern const struct fuse_lowlevel_ops fs_ops;

/* ================================================================== mount */

struct fs_options {
	const char *mountpoint; /* required */
	const char *datadir;	/* required */
	int foreground;		/* -f */
	int workers;		/* --workers, or -1 */
	int worker_memory;	/* --worker-memory MB, or 0 */
	int heartbeat_timeout;	/* --heartbeat-timeout ms, or 0 */
	int starts_per_minute;	/* --worker-starts N a minute, or 0 */
	unsigned run_as_uid;	/* --run-as: root's tenants' functions */
	unsigned run_as_gid;
	const char *listen; /* --listen IP:PORT, or NULL */
	int insecure;	    /* --insecure */
	/* --store URL (NULL: the data directory's alone), --cluster and the
	 * TLS files (store_config_check); its path is the data directory's */
	struct store_config store;
	const char *name;    /* --name: this controller in the cluster */
	int leader_ttl;	     /* --leader-ttl seconds, or 0 (the default) */
	int no_direct_calls; /* --no-direct-calls */
};

/* Runs `fnfs mount`: mounts, serves until unmounted or signalled, unmounts.
 * Without `foreground` it forks and returns in the parent once the mount is
 * ready. Returns the process exit code. */
int fs_mount_main(const struct fs_options *opt);

/* Runs `fnfs invoke`. Returns the exit code. */
int fs_invoke_main(int argc, char **argv);

/* The README file's text. */
extern const char fs_readme[];

#endif

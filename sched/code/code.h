/*
 * code.h - a function's code/ directory on the controller: its tree of
 * files and directories (kept in the store: SQLite, or etcd on a
 * cluster), their contents stored by SHA-256 under DATA/code/objects,
 * the revisions of code that bursts of changes make (manifests,
 * themselves objects), the limits, the garbage collection of objects,
 * and serving a revision to workers in chunks.
 *
 * The first part is for fs/ (sched.h includes this file); the sched__
 * part is for the rest of sched/. Every call runs on the loop thread.
 * Disk work is bounded: one file's staging, hashing or copy (at most the
 * function's limit), one chunk per send.
 *
 * On a cluster (a shared store) the tree is etcd's (P/cf, P/cr; objects
 * P/om and P/oc): every controller follows it through its watch, and a
 * change is a compare-and-set there. The calls that change the tree then
 * return SCHED_CODE_LATER and call `done` once this controller's tree
 * has the change (or with the error), and objects this controller does
 * not hold are fetched from etcd when a read or a worker needs them
 * (sched_code_fetch).
 */
#ifndef FNFS_SCHED_CODE_H
#define FNFS_SCHED_CODE_H

#include <jansson.h>
#include <stdint.h>

#include "../../runtime/base/rt.h"

#define SCHED_CODE_MAX_BYTES (64ull << 20) /* bytes of files per function */
#define SCHED_CODE_MAX_FILES 10000	   /* files and directories */
#define SCHED_CODE_QUIET_MS  500	   /* a revision this long after */
#define SCHED_CODE_QUIET_MAX_MS                                                \
	10000			      /* ... or this long after a change       \
				       * while files are still open */
#define SCHED_CODE_BACKLOG (1u << 20) /* bytes queued to a worker at most */

struct sched;
struct sched_function;
struct sched_code_stage;

/* Called once when a change of code/ that returned SCHED_CODE_LATER has
 * reached this controller's tree (`err` 0) or failed (-errno: -EIO when
 * etcd cannot be reached, with the reason in the function's error, or
 * the errors the call lists, found when it was tried again after
 * another controller's change won a race). */
typedef void (*sched_code_done_fn)(void *arg, int err);

/* Returned by the calls below that take a `done` (a cluster). */
#define SCHED_CODE_LATER 1

/* A file or directory of a function's code/ (the directory itself is its
 * root). fs/ reads the fields and never writes them; a node lives until
 * it is removed, so fs/ keeps ids across requests, not pointers. */
struct sched_code_node {
	uint64_t id;		   /* unique in the process, never reused */
	struct sched_function *fn; /* whose code it is */
	struct sched_code_node *parent; /* NULL for code/ itself */
	char *name;			/* owned; "" for code/ itself */
	uint32_t mode;			/* S_IFDIR or S_IFREG, and the bits */
	uint64_t size;		/* a file's bytes, open writes included */
	int64_t mtime_ms;	/* epoch ms */
	char hash[65];		/* a file's object as last closed */
	uint64_t stored_size;	/* its bytes (size less open writes) */
	struct rt_map children; /* a directory's: name -> node */
	struct sched_code_stage *stage; /* open writes, or NULL */
};

/* The code/ directory of `fn` (made, empty, when it has none yet), or
 * NULL for want of memory. */
struct sched_code_node *sched_code_root(struct sched *s,
					struct sched_function *fn);

/* The node with `id`, or NULL if there is none (any more). */
struct sched_code_node *sched_code_find(struct sched *s, uint64_t id);

/* The child `name` of directory `dir`, or NULL. */
struct sched_code_node *sched_code_child(const struct sched_code_node *dir,
					 const char *name);

/* Creates `name` in directory `dir`: a file (S_IFREG in `mode`, empty)
 * or a directory (S_IFDIR). Returns 0 and the node in `*out`, or -EEXIST,
 * -EINVAL (a bad name: see rt_code_name_valid; a path too long), -EPERM
 * (another type: symlinks, devices, fifos), -EDQUOT (over the files
 * limit; the reason in the function's error), -ENOMEM or -EIO. On a
 * cluster, SCHED_CODE_LATER (`*out` NULL): once `done` says 0, the node
 * is the child `name` of `dir`. */
int sched_code_create(struct sched *s, struct sched_code_node *dir,
		      const char *name, uint32_t mode,
		      struct sched_code_node **out, sched_code_done_fn done,
		      void *arg);

/* Removes `name` from `dir`: a file (`is_dir` 0; -EISDIR otherwise) or
 * an empty directory (-ENOTDIR, -ENOTEMPTY). Returns 0, -ENOENT or
 * -EIO; on a cluster SCHED_CODE_LATER. */
int sched_code_remove(struct sched *s, struct sched_code_node *dir,
		      const char *name, int is_dir, sched_code_done_fn done,
		      void *arg);

/* Renames `name` of `dir` to `newname` of `newdir`, within one function's
 * code, replacing a file or an empty directory of that name as rename(2)
 * does. `flags`: RENAME_NOREPLACE is honoured, RENAME_EXCHANGE is
 * -EINVAL. Returns 0, -ENOENT, -EXDEV (another function's code), -EINVAL
 * (into itself, a bad name), -EEXIST, -ENOTEMPTY, -EISDIR, -ENOTDIR or
 * -EIO; on a cluster SCHED_CODE_LATER, or -EXDEV for a directory of
 * more than SCHED_CODE_RENAME_MAX entries (mv copies it then). The
 * nodes that moved have new ids on a cluster. */
int sched_code_rename(struct sched *s, struct sched_code_node *dir,
		      const char *name, struct sched_code_node *newdir,
		      const char *newname, unsigned flags,
		      sched_code_done_fn done, void *arg);

/* Entries a rename moves at most on a cluster (one etcd txn). */
#define SCHED_CODE_RENAME_MAX 60

/* Sets the permission bits (& 0777; other bits are ignored) of `n`.
 * Returns 0 or -EIO; on a cluster SCHED_CODE_LATER. */
int sched_code_chmod(struct sched *s, struct sched_code_node *n, uint32_t perm,
		     sched_code_done_fn done, void *arg);

/* Sets the mtime of `n`. Returns 0 or -EIO; on a cluster
 * SCHED_CODE_LATER. */
int sched_code_touch(struct sched *s, struct sched_code_node *n,
		     int64_t mtime_ms, sched_code_done_fn done, void *arg);

/* Makes sure the content of file `n` can be read here (its object is in
 * DATA/code/objects, or it has open writes). Returns 0 when it can,
 * SCHED_CODE_LATER on a cluster while its object is fetched from etcd
 * (then `done`), or -EIO. */
int sched_code_fetch(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg);

/* Opens file `n` for writing (`trunc`: at size 0): its writes go to a
 * staging copy until closed (without `trunc`, a copy of its content:
 * on a cluster, sched_code_fetch it first). Returns 0, -EDQUOT, -ENOSPC
 * or -EIO. Each successful open is paired with sched_code_close_write. */
int sched_code_open_write(struct sched *s, struct sched_code_node *n,
			  int trunc);

/* Reads up to `size` bytes of file `n` at `off` into `buf` (what open
 * writes hold included). Returns the bytes read (0 at the end) or
 * -EIO (on a cluster, also when the object was not fetched first:
 * sched_code_fetch). */
long sched_code_read(struct sched *s, struct sched_code_node *n, char *buf,
		     size_t size, uint64_t off);

/* Writes `size` bytes at `off` of `n`, opened for writing. Returns 0,
 * -EDQUOT (the size limit; the reason in the function's error), -ENOSPC
 * or -EIO. */
int sched_code_write(struct sched *s, struct sched_code_node *n,
		     const char *buf, size_t size, uint64_t off);

/* Sets the size of `n`, opened for writing. Returns 0, -EDQUOT, -ENOSPC
 * or -EIO. */
int sched_code_truncate(struct sched *s, struct sched_code_node *n,
			uint64_t size);

/* A close of a descriptor that wrote: what open writes hold becomes the
 * file's content (stored as an object, the tree updated), if it
 * changed. The revision follows SCHED_CODE_QUIET_MS after the last
 * change. Returns 0, -ENOSPC or -EIO; on a cluster SCHED_CODE_LATER
 * when there is something to store (the object goes to etcd first). */
int sched_code_commit(struct sched *s, struct sched_code_node *n,
		      sched_code_done_fn done, void *arg);

/* The last close of one open for writing (commits what it holds). */
void sched_code_close_write(struct sched *s, struct sched_code_node *n);

/* The number of entries and the bytes of files of `fn`'s code now. */
void sched_code_usage(struct sched *s, const struct sched_function *fn,
		      int *entries, uint64_t *bytes);

/* ================================================== inside sched/ */

struct rt_msg;
struct sched_worker;
struct store;

struct sched_code_backend; /* code_internal.h */

/* The two backends: a controller alone (code_local.c) and a cluster's
 * (sched/cluster/code/code_cluster.c). */
extern const struct sched_code_backend sched_code_local;
extern const struct sched_code_backend sched_code_cluster;

/* Loads the trees and revisions of code (sched_open), kept by backend
 * `be`, chosen once by the role (sched_code_cluster when the model is
 * shared). Returns 0 or -errno. */
int sched__code_open(struct sched *s, const struct sched_code_backend *be);

/* Starts the timers of revisions, sending and garbage (sched_start). */
void sched__code_start(struct sched *s);

/* Stops them (shutdown). */
void sched__code_stop(struct sched *s);

/* Frees everything (sched_close). */
void sched__code_close(struct sched *s);

/* Deletes the rows of `fn`'s code, inside the caller's transaction
 * (sched_remove). Returns 0 or -errno. */
int sched__code_unstore(struct sched *s, struct sched_function *fn);

/* Forgets `fn`'s code in memory: its objects become garbage. */
void sched__code_drop(struct sched *s, struct sched_function *fn);

/* Adds "code": {"hash", "bytes", "files"} to the spec of a start when
 * `fn` has code. */
void sched__code_add_spec(struct sched *s, const struct sched_function *fn,
			  json_t *spec);

/* Whether a worker may be sent `object` (NULL: the revision itself) of
 * revision `hash`, given the revision `pub` of a function with an
 * instance on it and the `n` objects `objs` that revision references:
 * `hash` is `pub`, and `object` is one of `objs` (or `hash`). Pure. */
int sched_code_may_serve(const char *pub, const char (*objs)[65], size_t n,
			 const char *hash, const char *object);

/* A worker's code.want or code.get message. Only the code of a function
 * with an instance assigned to that worker is served (a prefetch is of
 * such a function too); anything else is refused with EACCES. */
void sched__code_on_message(struct sched *s, struct sched_worker *w,
			    const struct rt_msg *m);

#endif

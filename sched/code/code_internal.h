/*
 * code_internal.h - what the files of the code module share (code.c says
 * how it is cut): the module's state, the records of a function's code,
 * of a stage and of a send, small helpers, and the functions one file
 * calls in another. Private to sched/code*.c; the rest of sched/ uses
 * code.h.
 */
#ifndef FNFS_SCHED_CODE_INTERNAL_H
#define FNFS_SCHED_CODE_INTERNAL_H

#include <openssl/evp.h>
#include <stdint.h>
#include <sys/stat.h>

#include "code.h"
#include "../internal.h"

/* Writes of one file not yet closed. */
struct sched_code_stage {
	int fd;
	char *path;	  /* owned: DATA/code/tmp/stage-N */
	int writers;	  /* opens for writing */
	int dirty;	  /* written since the last commit */
	EVP_MD_CTX *seq;  /* hash of writes in order from 0, or NULL */
	uint64_t seq_off; /* bytes it has hashed */
	unsigned gen;	  /* changes so far: a commit under way on a cluster
			   * knows whether more came after it began */
};

/* The code of one function. */
struct code_fn {
	struct sched_function *fn;
	struct sched_code_node *root;
	int entries;	    /* files and directories below the root */
	uint64_t bytes;	    /* of the files, open writes included */
	uint64_t counted;   /* of them, counted in its tenant's use */
	int writers;	    /* opens for writing */
	int dirty;	    /* changed since the last revision was made */
	int64_t first_mono; /* of the first change since then */
	int64_t last_mono;  /* of the last one */
	char pub[65];	    /* the manifest of its revision, "" when none */
	uint64_t pub_bytes;
	int pub_files;
	char (*pub_objs)[65]; /* what the revision references (manifest
			       * included), owned */
	size_t npub;
	int publishing; /* a cluster: its revision is being written */
};

/* One object a worker asked for, for the download of `hash`. */
struct code_item {
	char hash[65];
	char object[65];
};

/* What is being sent to one worker. */
struct code_out {
	uint64_t worker_id;
	void *conn; /* the connection it was asked on */
	struct code_item *items;
	size_t head, n, cap;
	int fd; /* the object being sent, or -1 */
	uint64_t off, size;
};

struct sched_code_state {
	char *root;    /* DATA/code, owned */
	int made;      /* root, objects and tmp exist */
	char *objects; /* DATA/code/objects, owned */
	char *tmp;     /* DATA/code/tmp, owned */
	char empty[65];
	struct rt_idmap nodes; /* id -> struct sched_code_node * */
	struct rt_idmap fns;   /* function id -> struct code_fn * */
	struct rt_map refs;    /* object -> references (uintptr_t) */
	int refs_lost; /* a count failed (no memory): nothing is collected */
	struct rt_map unsynced; /* objects written since the last revision */
	char (*garbage)[65];	/* objects that lost their last reference */
	size_t ngarbage, capgarbage;
	struct rt_idmap outs; /* worker id -> struct code_out * */
	uv_timer_t timer;     /* revisions, garbage, the sweep */
	uv_timer_t pump;      /* sending, when a backlog was full */
	int started;
	int sweep;    /* the next objects/ prefix to sweep; 256: done */
	uint64_t seq; /* names of staging and temporary files */
	/* The backend, chosen once at sched__code_open. */
	const struct sched_code_backend *be;
	/* The cluster backend's transfers of objects: */
	struct rt_map gets; /* hash -> struct obj_xfer: fetches under way */
	struct rt_map puts; /* hash -> struct obj_xfer: uploads under way */
};

/* Called when an object transfer ends (`hash`: which one). */
typedef void (*obj_fn)(void *arg, int err, const char *hash);

/* What code/ does differently on a controller alone (its tree in the
 * store's SQLite, every object in DATA/code/objects: code_local.c) and
 * on a cluster's (the tree and the objects are the shared store's,
 * followed through its watch: sched/cluster/code/). One table per
 * backend, chosen once when the module opens (sched__code_open), like
 * the store's (store_ops.h) and the role (cluster.h). The front (code.h's
 * calls) checks what is common and calls the table. Every pointer is
 * set. */
struct sched_code_backend {
	const char *name; /* "local", "cluster" */

	/* After the trees and revisions are loaded at open, and before
	 * they are freed at close: a cluster follows its store's changes
	 * of code/ in between. */
	void (*open)(struct sched *s);
	void (*close)(struct sched *s);
	/* A revision of `f` loaded at open (f->pub, f->pub_objs holding
	 * its manifest, with room for f->pub_files more): counts the
	 * references of what it names. */
	void (*revision_loaded)(struct sched *s, struct code_fn *f);

	/* The changes of the tree, once the front checked them (code.h):
	 * sched_code_create (`path`: the new entry's), _remove, _rename
	 * (`from`, `to`: the paths of the entry before and after), _chmod
	 * and _touch (put: `n` gets `mode` and `mtime_ms`), _commit (`n`
	 * has dirty writes). Each returns 0 or -errno when it ended, or
	 * SCHED_CODE_LATER and then calls `done`. */
	int (*create)(struct sched *s, struct sched_code_node *dir,
		      const char *name, const char *path, uint32_t mode,
		      struct sched_code_node **out, sched_code_done_fn done,
		      void *arg);
	int (*remove)(struct sched *s, struct sched_code_node *dir,
		      const char *name, int want_dir, sched_code_done_fn done,
		      void *arg);
	int (*rename)(struct sched *s, struct sched_code_node *dir,
		      const char *name, struct sched_code_node *newdir,
		      const char *newname, unsigned flags, const char *from,
		      const char *to, sched_code_done_fn done, void *arg);
	int (*put)(struct sched *s, struct sched_code_node *n, uint32_t mode,
		   int64_t mtime_ms, sched_code_done_fn done, void *arg);
	int (*commit)(struct sched *s, struct sched_code_node *n,
		      sched_code_done_fn done, void *arg);
	/* The last close of file `n` of `f` left writes that were not
	 * stored: its size becomes the stored content's again. */
	void (*unstored)(struct sched *s, struct code_fn *f,
			 struct sched_code_node *n);

	/* Makes `f`'s tree as closed now, whose manifest is `text` (`hash`,
	 * "" for no code) and references the `nobjs` objects `*objs` (the
	 * manifest first; it may take them, leaving NULL), of `bytes` and
	 * `files`, its revision. Returns 0 (done, under way, or left for
	 * later with f->dirty set) or -errno (tried again later). */
	int (*publish)(struct sched *s, struct code_fn *f, const char *hash,
		       const struct rt_buf *text, char (**objs)[65],
		       size_t nobjs, uint64_t bytes, int files);

	/* sched_code_fetch of file `n` (code.h). */
	int (*fetch)(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg);
	/* Makes object `h`, which a worker asked for, one this controller
	 * may open and send: 0, SCHED_CODE_LATER (then `fn(arg, ...)`), or
	 * -errno with `*why` saying why not. */
	int (*obj_ready)(struct sched *s, const char *h, obj_fn fn, void *arg,
			 const char **why);
	/* Whether revision `h`, which nothing here references, can still
	 * be had (a cluster: it is whole in its store). */
	int (*obj_known)(struct sched *s, const char *h);
	/* Makes f->pub_objs name every object of f's revision (a cluster
	 * keeps its manifest alone until a worker asks). */
	void (*pub_objects)(struct sched *s, struct code_fn *f);
};

/* ---------------------------------------------- small helpers */

static inline struct sched_code_state *st_of(struct sched *s)
{
	return s->code;
}

/* The tenant, namespace and name of `fn`. */
static inline void fn_key(const struct sched_function *fn, const char *k[3])
{
	k[2] = fn->obj.name;
	k[1] = fn->obj.parent->name;
	k[0] = fn->obj.parent->parent->name;
}

static inline const struct sched_code_backend *be_of(struct sched *s)
{
	return s->code->be;
}

static inline int is_dir(const struct sched_code_node *n)
{
	return S_ISDIR(n->mode);
}

static inline struct code_fn *cfn_get(struct sched *s,
				      const struct sched_function *fn)
{
	return rt_idmap_get(&st_of(s)->fns, fn->obj.id);
}

static inline void object_path(struct sched_code_state *c, const char *h,
			       struct rt_buf *out)
{
	rt_buf_reset(out);
	rt_buf_printf(out, "%s/%.2s/%s", c->objects, h, h + 2);
}

static inline uintptr_t refs_of(struct sched_code_state *c, const char *h)
{
	return (uintptr_t)rt_map_get(&c->refs, h);
}

/* ------------------------------- calls from one file to another */

/* code.c */

/* The path of `n` below code/ ("" for code/ itself). */
int sched__code_node_path(const struct sched_code_node *n, struct rt_buf *out);

/* The path `name` would have in `dir`. */
int sched__code_child_path(const struct sched_code_node *dir, const char *name,
			   struct rt_buf *out);

/* Counts one more reference to object `h` (a failure for want of
 * memory is logged). */
void sched__code_ref_add(struct sched_code_state *c, const char *h);

/* Drops a reference to object `h`; after its last one, `h` is queued
 * in c->garbage, which the timer collects once no change waits for a
 * durable revision (a full queue leaves it to the next start's sweep). */
void sched__code_ref_drop(struct sched_code_state *c, const char *h);

/* Writes the row of node `n` (at `path`). */
int sched__code_row_put(struct sched *s, const struct sched_code_node *n,
			const char *path);

/* Deletes the row at `path` (a file or an empty directory). */
int sched__code_row_del(struct sched *s, const struct sched_function *fn,
			const char *path);

/* Ends the derived transaction of the rows changed before: commits
 * it when `rc` is 0 (and returns what the commit did), else rolls it
 * back and returns `rc`. */
int sched__code_derived(struct sched *s, int rc);

/* code_nodes.c */

/* A new node `name` of `fn` in `parent` (NULL: the root) with `mode`,
 * a new id and the time now, in c->nodes and its parent's children;
 * NULL for want of memory. */
struct sched_code_node *sched__code_node_new(struct sched *s,
					     struct sched_function *fn,
					     struct sched_code_node *parent,
					     const char *name, uint32_t mode);

/* Closes, unlinks and frees stage `g` (NULL is fine). */
void sched__code_stage_free(struct sched_code_stage *g);

/* Frees `n` and what it holds, dropping the references of its files. */
void sched__code_node_free(struct sched *s, struct sched_code_node *n);

/* The code of `fn`, made with an empty root when it has none yet;
 * NULL for want of memory. */
struct code_fn *sched__code_cfn_make(struct sched *s,
				     struct sched_function *fn);

/* Brings the code bytes counted in the tenant's use (quota.h) to
 * f->bytes. */
void sched__code_bytes_sync(struct code_fn *f);

/* The tree of `fn` changed: a revision follows the quiet time. */
void sched__code_changed(struct sched *s, struct code_fn *f);

/* Whether file `n` of `f` may grow to `size`: 0, or -EDQUOT (over the
 * tenant's quota or the function's limit) with the refusal recorded. */
int sched__code_over_bytes(struct sched *s, const struct sched_code_node *n,
			   struct code_fn *f, uint64_t size);

/* Stores node `n` as it is now. */
int sched__code_store_node(struct sched *s, struct sched_code_node *n);

/* The local backend's changes of the tree (struct sched_code_backend's
 * create, remove, rename and put): the rows in one derived transaction,
 * then the nodes. Each returns 0 or -errno; `done` is not called. */
int sched__code_local_create(struct sched *s, struct sched_code_node *dir,
			     const char *name, const char *path, uint32_t mode,
			     struct sched_code_node **out,
			     sched_code_done_fn done, void *arg);

int sched__code_local_remove(struct sched *s, struct sched_code_node *dir,
			     const char *name, int want_dir,
			     sched_code_done_fn done, void *arg);

int sched__code_local_rename(struct sched *s, struct sched_code_node *dir,
			     const char *name, struct sched_code_node *newdir,
			     const char *newname, unsigned flags,
			     const char *from, const char *to,
			     sched_code_done_fn done, void *arg);

int sched__code_local_put(struct sched *s, struct sched_code_node *n,
			  uint32_t mode, int64_t mtime_ms,
			  sched_code_done_fn done, void *arg);

/* code_contents.c */

/* Opens object `h` for reading. Returns an fd or -errno. */
int sched__code_object_open(struct sched_code_state *c, const char *h);

/* -ENOSPC when errno says a disk or a quota is full, else -EIO. */
int sched__code_errno_io(void);

/* A new temporary file in DATA/code/tmp. Returns an fd or -errno. */
int sched__code_tmp_file(struct sched_code_state *c, const char *what,
			 char **path);

/* The SHA-256 of what stage `g` holds (`size` bytes). */
int sched__code_stage_hash(struct sched_code_stage *g, uint64_t size,
			   char out[65]);

/* Makes object `h` hold what `fd` holds, or (fd -1) the `len` bytes at
 * `buf`, unless it exists: a temporary copy renamed into place. */
int sched__code_object_put(struct sched_code_state *c, const char *h, int fd,
			   const char *buf, size_t len);

/* The local backend's commit (struct sched_code_backend): the stage's
 * bytes become an object and the node's row names it. Returns 0,
 * -ENOSPC or -EIO; `done` is not called. */
int sched__code_local_commit(struct sched *s, struct sched_code_node *n,
			     sched_code_done_fn done, void *arg);

/* code_revisions.c */

/* The manifest of `f`'s tree as closed now, its hash ("" for no code),
 * and what it references (the manifest first). */
int sched__code_manifest_of(struct code_fn *f, struct rt_buf *text,
			    char hash[65], char (**objs)[65], size_t *nobjs,
			    uint64_t *bytes, int *files);

/* Tells every online worker with an instance of `fn` to download
 * revision `hash` of its code now (code.prefetch), before the instance is
 * replaced: a rolling deploy replaces the instances one at a time, and
 * without it each worker's download would wait for the replacements
 * before it. The downloads then go side by side, and each replacement
 * finds its code unpacked. Best effort: a start fetches what a prefetch
 * did not. */
void sched__code_prefetch(struct sched *s, struct sched_function *fn,
			  const char *hash, uint64_t bytes);

/* The module's timer (c->timer, data the sched): makes the revisions
 * whose quiet time has passed, collects garbage and sweeps when no
 * change waits for one, and starts itself again when more is due. */
void sched__code_on_timer(uv_timer_t *t);

/* The local backend's publish (struct sched_code_backend): the manifest
 * and the objects written since the last revision synced, the revision
 * stored durably, then the model, the journal, the workers' prefetch and
 * reconciling. Takes `*objs`. Returns 0 or -errno. */
int sched__code_local_publish(struct sched *s, struct code_fn *f,
			      const char *hash, const struct rt_buf *text,
			      char (**objs)[65], size_t nobjs, uint64_t bytes,
			      int files);

/* code_load.c */

/* The node at `path` of `f`'s tree, or NULL. */
struct sched_code_node *sched__code_node_at(struct code_fn *f,
					    const char *path);

/* The function tenant/ns/name, or NULL. */
struct sched_function *sched__code_fn_named(struct sched *s, const char *t,
					    const char *ns, const char *name);

/* One entry of a function's code/. */
int sched__code_load_file(const struct store_code_file *r, void *arg);

/* An rt_code_manifest_parse callback: adds the object of file entry
 * `e` to the pub_objs of `arg` (a struct code_fn), which has room. */
int sched__code_pub_obj_cb(const struct rt_code_entry *e, void *arg);

/* Makes DATA/code, its objects/ and tmp/ (0700) unless they are there:
 * a data directory whose functions never had code has none. */
int sched__code_make_dirs(struct sched_code_state *c);

/* Closes the object being sent of `o`, and frees it. */
void sched__code_out_free(struct code_out *o);

#endif

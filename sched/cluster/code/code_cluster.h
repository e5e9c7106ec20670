/*
 * code_cluster.h - what the files of the code module's cluster backend
 * (sched/cluster/code/: code_cluster.c, its table and small differences;
 * code_cluster_tree.c, the tree's changes to and from etcd;
 * code_cluster_submit.c, a change sent as one compare-and-set;
 * code_cluster_objects.c, objects uploaded and fetched) share. They use
 * the module's own part, sched/code/code_internal.h; nothing else
 * includes this file: the module reaches them through the table
 * (struct sched_code_backend, sched_code_cluster).
 *
 * The tree is etcd's: a change here is a compare-and-set of P/cf keys
 * (store_code_submit), and the tree changes when the watch brings it
 * back (sched__code_on_remote), for this controller's changes as for the
 * others'. An object goes to etcd before the entry that names it; one
 * that this controller lacks is fetched when a read or a worker needs it.
 */
#ifndef FNFS_SCHED_CLUSTER_CODE_CLUSTER_H
#define FNFS_SCHED_CLUSTER_CODE_CLUSTER_H

#include "../../code/code_internal.h"
#include "../../store/etcd/etcd_keys.h"
#include "../../store/etcd/store_cluster.h"

enum req_kind {
	REQ_CREATE,  /* child `name` of `dir_id`, of `mode` */
	REQ_REMOVE,  /* child `name` of `dir_id` */
	REQ_RENAME,  /* `name` of `dir_id` to `newname` of `newdir_id` */
	REQ_PUT,     /* node `node_id` with `mode` and `mtime_ms` */
	REQ_COMMIT,  /* node `node_id` holds object `hash` of `size` */
	REQ_PUBLISH, /* function `fn_id`'s revision is `hash` */
};

/* A change of code/ sent to etcd, tried again when it lost a race. */
struct code_req {
	struct sched *s;
	enum req_kind kind;
	uint64_t fn_id, dir_id, newdir_id, node_id; /* found again each try */
	char *name, *newname;			    /* owned */
	uint32_t mode;
	int64_t mtime_ms;
	int is_dir;
	unsigned flags;
	char hash[65]; /* COMMIT: the new content; PUBLISH: the manifest */
	char path[16]; /* what the error names: "code" */
	uint64_t size; /* COMMIT; PUBLISH: bytes */
	int files;     /* PUBLISH */
	unsigned gen;  /* COMMIT: the stage's when it began */
	int uploaded;  /* `hash` is whole in etcd */
	int tries;
	int64_t until; /* rt_mono_ms: no try starts after it (0: none lost) */
	sched_code_done_fn done;
	void *arg;
};

/* code_cluster_objects.c */

/* Makes object `h` (of this controller's objects) whole in etcd. Returns
 * 0 when it is, SCHED_CODE_LATER (then `fn`, unless NULL) or -errno. */
int sched__code_obj_upload(struct sched *s, const char *h, obj_fn fn,
			   void *arg);

/* Makes object `h` one of this controller's objects: there already, the
 * empty one made, or fetched from etcd. Returns 0 when it is,
 * SCHED_CODE_LATER (then `fn`, unless NULL) or -errno (-ENOENT: etcd has
 * no such object). */
int sched__code_obj_fetch(struct sched *s, const char *h, obj_fn fn, void *arg);

/* Leaves transfer `value` to end alone (sched__code_close). */
int sched__code_orphan_xfer(const char *key, void *value, void *arg);

/* The cluster backend's fetch (sched_code_fetch, code.h). */
int sched__code_cl_fetch(struct sched *s, struct sched_code_node *n,
			 sched_code_done_fn done, void *arg);

/* code_cluster_submit.c */

/* A new request of `kind` on `fn` that calls `done(arg)` at its end
 * (sched__code_req_start), or NULL for want of memory. */
struct code_req *sched__code_req_new(struct sched *s, enum req_kind kind,
				     const struct sched_function *fn,
				     sched_code_done_fn done, void *arg);

/* The nodes of the subtree of `n`, `n` included. */
size_t sched__code_subtree_size(const struct sched_code_node *n);

/* Runs a new request: SCHED_CODE_LATER, or what it ended with at once
 * (then `done` is not called). */
int sched__code_req_start(struct code_req *q);

/* Copies `name` and `newname` (either may be NULL) into `q`: 0, or
 * -ENOMEM once `q` is freed. */
int sched__code_req_named(struct code_req *q, const char *name,
			  const char *newname);

/* code_cluster_tree.c */

/* The changes of a cluster's code/: what
 * sched_code_create, _remove, _rename, _chmod or _touch and a commit do
 * there (code.h). Each sends a request to etcd and returns
 * SCHED_CODE_LATER (then `done`), or what it ended with at once
 * (-ENOMEM, -ENOENT, -EXDEV, -EIO...; `done` is not called). */
int sched__code_cl_create(struct sched *s, struct sched_code_node *dir,
			  const char *name, const char *path, uint32_t mode,
			  struct sched_code_node **out, sched_code_done_fn done,
			  void *arg);

int sched__code_cl_remove(struct sched *s, struct sched_code_node *dir,
			  const char *name, int want_dir,
			  sched_code_done_fn done, void *arg);

int sched__code_cl_rename(struct sched *s, struct sched_code_node *dir,
			  const char *name, struct sched_code_node *newdir,
			  const char *newname, unsigned flags, const char *from,
			  const char *to, sched_code_done_fn done, void *arg);

int sched__code_cl_put(struct sched *s, struct sched_code_node *n,
		       uint32_t mode, int64_t mtime_ms, sched_code_done_fn done,
		       void *arg);

int sched__code_cl_commit(struct sched *s, struct sched_code_node *n,
			  sched_code_done_fn done, void *arg);

/* Makes `f`'s tree, whose manifest is `text` (`hash`, "" for none), its
 * revision in etcd: the manifest goes up, then P/cr and the function's
 * next revision in one txn. The watch then brings both to every
 * controller (sched__code_on_remote, the store's listener). */
int sched__code_cl_publish(struct sched *s, struct code_fn *f, const char *hash,
			   const struct rt_buf *text, char (**objs)[65],
			   size_t nobjs, uint64_t bytes, int files);

/* The store's code listener. */
void sched__code_on_remote(void *arg, const struct etcd_keys_rec *r,
			   int deleted);

#endif

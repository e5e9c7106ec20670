/*
 * store_ops.h - the store's backends (private to sched/store/): what a
 * backend does, as one table of operations, and the part of a store that
 * every backend shares (the transaction depth, the changes of tenants,
 * namespaces and functions staged for the listener, the listener).
 *
 * store.c is the front: each function of store.h checks what is common
 * and calls the table. sqlite.c is the embedded backend; etcd/shared.c
 * the cluster's, which keeps a SQLite store of its own for what a
 * controller keeps alone. The backend is chosen once, when the store is
 * opened (store_open, store_open_config), like redis's ae backends.
 */
#ifndef FNFS_SCHED_STORE_OPS_H
#define FNFS_SCHED_STORE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "../model/staged.h"
#include "etcd/store_cluster.h"
#include "store.h"

/* Transactions nest at most this deep (the write paths use 3). */
#define STORE_DEPTH_MAX 16

/* One backend. Every pointer is set (store__ops_complete checks it). */
struct store_ops {
	const char *name; /* "sqlite", "etcd" */
	int shared;	  /* store_shared: rows commit later, elsewhere */

	/* Frees the backend's part of `st` and `st` itself. */
	void (*close)(struct store *st);
	void (*stop)(struct store *st);
	int (*load)(struct store *st,
		    int (*fn)(const struct store_row *, void *), void *arg);

	/* Transactions. The front keeps `depth` and the staged changes:
	 * begin is called at st->depth (before it grows), commit and
	 * rollback at st->depth >= 1 (before it shrinks). A commit at depth
	 * 1 that fails is followed by the front's rollback. */
	int (*begin)(struct store *st, int derived);
	int (*commit)(struct store *st);
	void (*rollback)(struct store *st);
	int (*commit_then)(struct store *st, store_done_fn done, void *arg);

	/* A change of a tenant, namespace or function (store_insert,
	 * store_update, store_delete, store_tenant_owner). */
	int (*change)(struct store *st, enum store_op op,
		      const struct store_row *r);
	int (*function_code)(struct store *st, const struct store_row *r);
	void (*inject_failure)(struct store *st, int after, int err);

	/* The shared store's state and its leader's writes. */
	int (*shared_state)(const struct store *st, int64_t *revision,
			    int *watching, int64_t *stale_since,
			    const char **endpoint, const char **error);
	void (*mirror_start)(struct store *st,
			     int (*fence)(void *arg, struct etcd_cmp *out),
			     void (*deposed)(void *arg), void *arg,
			     int64_t term);
	void (*mirror_stop)(struct store *st);
	size_t (*mirror_pending)(const struct store *st);
	int (*mirror_flush)(struct store *st, store_done_fn done, void *arg);
	int (*barrier)(struct store *st, store_done_fn done, void *arg);
	struct etcd_client *(*client)(struct store *st);
	const char *(*cluster)(const struct store *st);
	void (*derived_listen)(struct store *st, store_derived_fn fn,
			       void *arg);
	void (*code_listen)(struct store *st, store_code_fn fn, void *arg);
	int (*code_submit)(struct store *st, const struct store_row *fn,
			   const struct store_code_op *v, size_t n,
			   store_done_fn done, void *arg);
	int (*object_known)(struct store *st, const char *hash, uint64_t *size);

	/* Derived state: instances, workers, settings, revocations. */
	int (*instance_put)(struct store *st, const struct store_instance *r);
	int (*instance_publish)(struct store *st,
				const struct store_instance *r);
	int (*worker_publish)(struct store *st, const struct store_worker *r);
	int (*instance_delete)(struct store *st, const char *tenant,
			       const char *ns, const char *fn, int n);
	int (*instance_load)(struct store *st,
			     int (*fn)(const struct store_instance *, void *),
			     void *arg);
	int (*worker_put)(struct store *st, const struct store_worker *r);
	int (*worker_delete)(struct store *st, const char *id);
	int (*worker_load)(struct store *st,
			   int (*fn)(const struct store_worker *, void *),
			   void *arg);
	int (*setting_put)(struct store *st, const char *key,
			   const char *value);
	int (*setting_delete)(struct store *st, const char *key);
	int (*setting_get)(struct store *st, const char *key, char *out,
			   size_t n);
	int (*setting_each)(struct store *st, const char *prefix,
			    int (*fn)(const char *key, void *arg), void *arg);
	int (*revoke)(struct store *st, const char *worker, const char *serial,
		      int64_t revoked_ms);
	int (*revoked)(struct store *st, const char *cn, const char *serial,
		       int64_t not_before_s);

	/* code/. */
	int (*code_file_put)(struct store *st, const struct store_code_file *r);
	int (*code_file_delete)(struct store *st, const char *tenant,
				const char *ns, const char *fn,
				const char *path);
	int (*code_file_rename)(struct store *st, const char *tenant,
				const char *ns, const char *fn,
				const char *from, const char *to);
	int (*code_files_delete)(struct store *st, const char *tenant,
				 const char *ns, const char *fn);
	int (*code_file_load)(struct store *st,
			      int (*fn)(const struct store_code_file *, void *),
			      void *arg);
	int (*code_revision_put)(struct store *st,
				 const struct store_code_revision *r);
	int (*code_revision_delete)(struct store *st, const char *tenant,
				    const char *ns, const char *fn);
	int (*code_revision_load)(struct store *st,
				  int (*fn)(const struct store_code_revision *,
					    void *),
				  void *arg);
};

/* What every store has, first in each backend's own struct. */
struct store {
	const struct store_ops *ops;   /* its backend, set once at open */
	int depth;		       /* open transactions, nested */
	struct staged staged;	       /* changes of the open transaction */
	size_t marks[STORE_DEPTH_MAX]; /* staged.n where each level began */
	store_listen_fn listen;
	void *listen_arg;
};

extern const struct store_ops store__sqlite_ops;
extern const struct store_ops store__etcd_ops;

/* Starts `st` (zeroed) with backend `ops`, whose every operation must be
 * set. */
void store__init(struct store *st, const struct store_ops *ops);

/* Hands the changes of the transaction just committed to the listener.
 * The list is emptied first: the listener may write again. */
void store__announce(struct store *st);

/* Opens a shared store for `c` (an "etcd://" url: etcd/shared.c). */
int store__etcd_open(struct store **out, const struct store_config *c,
		     struct uv_loop_s *loop);

#endif

/*
 * shared.h - the shared store's parts (private to sched/store/etcd/):
 * shared.c opens it, runs its transactions, hears etcd and queues the
 * leader's writes; shared_rows.c holds its operations on the rows of
 * derived state and code/.
 */
#ifndef FNFS_SCHED_STORE_SHARED_H
#define FNFS_SCHED_STORE_SHARED_H

#include <assert.h>

#include "../store_ops.h"
#include "etcd_keys.h"

struct store_shared {
	struct store base;	   /* first: a struct store * is one of these */
	struct store *local;	   /* SQLite: what this controller keeps */
	struct store_etcd *remote; /* the rows of tenants, namespaces and
				      functions are there */
	char *cluster;		   /* its name */
	/* The leader's writes of derived state in the open transaction,
	 * handed to the shared store when it commits (keys and values;
	 * a NULL value deletes). */
	char **mkeys, **mvals;
	size_t *mlens, mn, mcap;
	size_t mmarks[STORE_DEPTH_MAX];
	int64_t mterm; /* the term of the leader's writes (mirror_start) */
	store_derived_fn derived;
	void *derived_arg;
	store_code_fn code; /* code/'s changes */
	void *code_arg;
	int loading; /* store_open_shared reads the cluster */
};

/* The shared store `st` is. */
static inline struct store_shared *shared(struct store *st)
{
	assert(st->ops == &store__etcd_ops);
	return (struct store_shared *)st;
}

static inline const struct store_shared *shared_c(const struct store *st)
{
	assert(st->ops == &store__etcd_ops);
	return (const struct store_shared *)st;
}

/* Queues the leader's write of record `r` (a delete when `del`) when
 * this store mirrors (an instance says the term that writes it); handed
 * to etcd at once outside a transaction. Returns 0 or -ENOMEM, -EINVAL
 * (logged). */
int store__shared_mirror_rec(struct store_shared *st,
			     const struct etcd_keys_rec *r, int del);

/* The operations of shared_rows.c, for the table in shared.c. */
int shared_code_submit(struct store *s, const struct store_row *fn,
		       const struct store_code_op *v, size_t n,
		       store_done_fn done, void *arg);
int shared_object_known(struct store *s, const char *hash, uint64_t *size);
int shared_code_file_load(struct store *s,
			  int (*fn)(const struct store_code_file *, void *),
			  void *arg);
int shared_code_revision_load(struct store *s,
			      int (*fn)(const struct store_code_revision *,
					void *),
			      void *arg);
int shared_instance_put(struct store *s, const struct store_instance *r);
int shared_instance_publish(struct store *s, const struct store_instance *r);
int shared_worker_publish(struct store *s, const struct store_worker *r);
int shared_instance_delete(struct store *s, const char *tenant, const char *ns,
			   const char *fn, int n);
int shared_worker_put(struct store *s, const struct store_worker *r);
int shared_worker_delete(struct store *s, const char *id);
int shared_setting_put(struct store *s, const char *key, const char *value);
int shared_setting_delete(struct store *s, const char *key);
int shared_revoke(struct store *s, const char *worker, const char *serial,
		  int64_t revoked_ms);
int shared_instance_load(struct store *s,
			 int (*fn)(const struct store_instance *, void *),
			 void *arg);
int shared_worker_load(struct store *s,
		       int (*fn)(const struct store_worker *, void *),
		       void *arg);
int shared_setting_get(struct store *s, const char *key, char *out, size_t n);
int shared_setting_each(struct store *s, const char *prefix,
			int (*fn)(const char *key, void *arg), void *arg);
int shared_revoked(struct store *s, const char *cn, const char *serial,
		   int64_t not_before_s);
int shared_code_file_put(struct store *s, const struct store_code_file *r);
int shared_code_file_delete(struct store *s, const char *tenant, const char *ns,
			    const char *fn, const char *path);
int shared_code_file_rename(struct store *s, const char *tenant, const char *ns,
			    const char *fn, const char *from, const char *to);
int shared_code_files_delete(struct store *s, const char *tenant,
			     const char *ns, const char *fn);
int shared_code_revision_put(struct store *s,
			     const struct store_code_revision *r);
int shared_code_revision_delete(struct store *s, const char *tenant,
				const char *ns, const char *fn);

#endif

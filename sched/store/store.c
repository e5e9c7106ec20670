/*
 * store.c - the store's front (store.h): what every backend shares (the
 * nesting of transactions, the changes staged for the listener, the
 * listener); everything else goes to the backend's table (store_ops.h).
 * The one choice of the backend, at open, is store_open.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_ops.h"

/* Whether every operation of `ops` is set: a backend that forgot one
 * would crash on its first use, far from here. */
static int ops_complete(const struct store_ops *o)
{
	return o->name && o->close && o->stop && o->load && o->begin &&
	       o->commit && o->rollback && o->commit_then && o->change &&
	       o->function_code && o->inject_failure && o->shared_state &&
	       o->mirror_start && o->mirror_stop && o->mirror_pending &&
	       o->mirror_flush && o->barrier && o->client && o->cluster &&
	       o->derived_listen && o->code_listen && o->code_submit &&
	       o->object_known && o->instance_put && o->instance_publish &&
	       o->instance_delete && o->worker_publish && o->instance_load &&
	       o->worker_put && o->worker_delete && o->worker_load &&
	       o->setting_put && o->setting_delete && o->setting_get &&
	       o->setting_each && o->revoke && o->revoked && o->code_file_put &&
	       o->code_file_delete && o->code_file_rename &&
	       o->code_files_delete && o->code_file_load &&
	       o->code_revision_put && o->code_revision_delete &&
	       o->code_revision_load;
}

void store__init(struct store *st, const struct store_ops *ops)
{
	assert(ops_complete(ops));
	assert(st->ops == NULL && st->depth == 0);
	st->ops = ops;
}

void store_close(struct store *st)
{
	if (st == NULL)
		return;
	staged_free(&st->staged);
	st->ops->close(st);
}

void store_stop(struct store *st)
{
	st->ops->stop(st);
}

int store_load(struct store *st, int (*fn)(const struct store_row *, void *),
	       void *arg)
{
	return st->ops->load(st, fn, arg);
}

/* ======================================================== transactions */

/* Transactions nest: the outermost is a real transaction, inner ones are
 * savepoints, so that a batch (a whole reconciliation) is one commit and
 * one fsync while its parts keep their own all-or-nothing. */
static int begin(struct store *st, int derived)
{
	int rc;

	assert(st->depth >= 0 && st->depth <= STORE_DEPTH_MAX);
	if (st->depth >= STORE_DEPTH_MAX)
		return -EINVAL;
	/* What an outer level staged stays; a new transaction starts
	 * with nothing staged. */
	assert(st->depth > 0 || st->staged.n == 0);
	rc = st->ops->begin(st, derived && st->depth == 0);
	if (rc == 0)
		st->marks[st->depth++] = st->staged.n;
	return rc;
}

int store_begin(struct store *st)
{
	return begin(st, 0);
}

int store_begin_derived(struct store *st)
{
	return begin(st, 1);
}

void store__announce(struct store *st)
{
	struct staged done = st->staged;
	size_t i;

	/* Only what committed is told: no transaction is open. */
	assert(st->depth == 0);
	memset(&st->staged, 0, sizeof(st->staged));
	for (i = 0; i < done.n && st->listen != NULL; i++)
		st->listen(st->listen_arg, &done.v[i]);
	staged_free(&done);
}

int store_commit(struct store *st)
{
	int rc;

	assert(st->depth >= 0);
	if (st->depth == 0)
		return -EINVAL;
	rc = st->ops->commit(st);
	if (st->depth == 1) {
		if (rc < 0) {
			store_rollback(st);
			return rc;
		}
		st->depth--;
		store__announce(st);
		return 0;
	}
	st->depth--;
	/* An inner level's changes stay staged for the outer commit. */
	assert(st->staged.n >= st->marks[st->depth]);
	return rc;
}

void store_rollback(struct store *st)
{
	assert(st->depth >= 0);
	if (st->depth == 0)
		return;
	assert(st->marks[st->depth - 1] <= st->staged.n);
	staged_truncate(&st->staged, st->marks[st->depth - 1]);
	st->ops->rollback(st);
	st->depth--;
}

int store_commit_then(struct store *st, store_done_fn done, void *arg)
{
	return st->ops->commit_then(st, done, arg);
}

void store_listen(struct store *st, store_listen_fn fn, void *arg)
{
	/* One listener: set once, or taken away. */
	assert(fn == NULL || st->listen == NULL || st->listen == fn);
	st->listen = fn;
	st->listen_arg = arg;
}

int store_shared(const struct store *st)
{
	return st->ops->shared;
}

void store_inject_failure(struct store *st, int after, int err)
{
	st->ops->inject_failure(st, after, err);
}

/* ============================================== tenants, namespaces, functions
 */

int store_insert(struct store *st, const struct store_row *r)
{
	return st->ops->change(st, STORE_INSERT, r);
}

int store_update(struct store *st, const struct store_row *r)
{
	return st->ops->change(st, STORE_UPDATE, r);
}

int store_delete(struct store *st, const struct store_row *r)
{
	return st->ops->change(st, STORE_DELETE, r);
}

int store_tenant_owner(struct store *st, const struct store_row *r)
{
	return st->ops->change(st, STORE_OWNER, r);
}

int store_function_code(struct store *st, const struct store_row *r)
{
	return st->ops->function_code(st, r);
}

/* ================================================= the shared store */

int store_shared_state(const struct store *st, int64_t *revision, int *watching,
		       int64_t *stale_since, const char **endpoint,
		       const char **error)
{
	return st->ops->shared_state(st, revision, watching, stale_since,
				     endpoint, error);
}

void store_mirror_start(struct store *st,
			int (*fence)(void *arg, struct etcd_cmp *out),
			void (*deposed)(void *arg), void *arg, int64_t term)
{
	st->ops->mirror_start(st, fence, deposed, arg, term);
}

void store_mirror_stop(struct store *st)
{
	st->ops->mirror_stop(st);
}

size_t store_mirror_pending(const struct store *st)
{
	return st->ops->mirror_pending(st);
}

int store_mirror_flush(struct store *st, store_done_fn done, void *arg)
{
	return st->ops->mirror_flush(st, done, arg);
}

int store_barrier(struct store *st, store_done_fn done, void *arg)
{
	return st->ops->barrier(st, done, arg);
}

struct etcd_client *store_client(struct store *st)
{
	return st->ops->client(st);
}

const char *store_cluster(const struct store *st)
{
	return st->ops->cluster(st);
}

void store_derived_listen(struct store *st, store_derived_fn fn, void *arg)
{
	st->ops->derived_listen(st, fn, arg);
}

void store_code_listen(struct store *st, store_code_fn fn, void *arg)
{
	st->ops->code_listen(st, fn, arg);
}

int store_code_submit(struct store *st, const struct store_row *fn,
		      const struct store_code_op *v, size_t n,
		      store_done_fn done, void *arg)
{
	return st->ops->code_submit(st, fn, v, n, done, arg);
}

int store_object_known(struct store *st, const char *hash, uint64_t *size)
{
	return st->ops->object_known(st, hash, size);
}

/* ============================================== instances, workers, settings
 */

int store_instance_put(struct store *st, const struct store_instance *r)
{
	return st->ops->instance_put(st, r);
}

int store_instance_publish(struct store *st, const struct store_instance *r)
{
	return st->ops->instance_publish(st, r);
}

int store_worker_publish(struct store *st, const struct store_worker *r)
{
	return st->ops->worker_publish(st, r);
}

int store_instance_delete(struct store *st, const char *tenant, const char *ns,
			  const char *fn, int n)
{
	return st->ops->instance_delete(st, tenant, ns, fn, n);
}

int store_instance_load(struct store *st,
			int (*fn)(const struct store_instance *, void *),
			void *arg)
{
	return st->ops->instance_load(st, fn, arg);
}

int store_worker_put(struct store *st, const struct store_worker *r)
{
	return st->ops->worker_put(st, r);
}

int store_worker_delete(struct store *st, const char *id)
{
	return st->ops->worker_delete(st, id);
}

int store_worker_load(struct store *st,
		      int (*fn)(const struct store_worker *, void *), void *arg)
{
	return st->ops->worker_load(st, fn, arg);
}

int store_setting_put(struct store *st, const char *key, const char *value)
{
	return st->ops->setting_put(st, key, value);
}

int store_setting_delete(struct store *st, const char *key)
{
	return st->ops->setting_delete(st, key);
}

int store_setting_get(struct store *st, const char *key, char *out, size_t n)
{
	return st->ops->setting_get(st, key, out, n);
}

int store_setting_each(struct store *st, const char *prefix,
		       int (*fn)(const char *key, void *arg), void *arg)
{
	return st->ops->setting_each(st, prefix, fn, arg);
}

int store_revoke(struct store *st, const char *worker, const char *serial,
		 int64_t revoked_ms)
{
	return st->ops->revoke(st, worker, serial, revoked_ms);
}

int store_revoked(struct store *st, const char *cn, const char *serial,
		  int64_t not_before_s)
{
	return st->ops->revoked(st, cn, serial, not_before_s);
}

/* ================================================================ code/ */

int store_code_file_put(struct store *st, const struct store_code_file *r)
{
	return st->ops->code_file_put(st, r);
}

int store_code_file_delete(struct store *st, const char *tenant, const char *ns,
			   const char *fn, const char *path)
{
	return st->ops->code_file_delete(st, tenant, ns, fn, path);
}

int store_code_file_rename(struct store *st, const char *tenant, const char *ns,
			   const char *fn, const char *from, const char *to)
{
	return st->ops->code_file_rename(st, tenant, ns, fn, from, to);
}

int store_code_files_delete(struct store *st, const char *tenant,
			    const char *ns, const char *fn)
{
	return st->ops->code_files_delete(st, tenant, ns, fn);
}

int store_code_file_load(struct store *st,
			 int (*fn)(const struct store_code_file *, void *),
			 void *arg)
{
	return st->ops->code_file_load(st, fn, arg);
}

int store_code_revision_put(struct store *st,
			    const struct store_code_revision *r)
{
	return st->ops->code_revision_put(st, r);
}

int store_code_revision_delete(struct store *st, const char *tenant,
			       const char *ns, const char *fn)
{
	return st->ops->code_revision_delete(st, tenant, ns, fn);
}

int store_code_revision_load(struct store *st,
			     int (*fn)(const struct store_code_revision *,
				       void *),
			     void *arg)
{
	return st->ops->code_revision_load(st, fn, arg);
}

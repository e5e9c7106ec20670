/*
 * shared.c - the store of a cluster's controller (store_ops.h): the
 * tenants, namespaces, functions and code/ are etcd's (store_etcd.c),
 * followed by a watch; what this controller keeps alone (and the derived
 * state, which the leader also writes to etcd) is in a SQLite store of
 * its own, whose operations it calls.
 *
 * A change of a tenant, namespace or function is staged by the front and
 * sent to etcd by store_commit_then; the listener hears of it when etcd
 * brings it back. The leader's writes of derived state are queued while
 * their transaction is open and handed to etcd when it commits.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../../runtime/base/rt.h"
#include "../sqlite.h"
#include "../store_ops.h"
#include "etcd_keys.h"
#include "shared.h"
#include "store_etcd.h"

/* ================================================ the leader's writes */

static void mirror_truncate(struct store_shared *st, size_t n)
{
	assert(n <= st->mn || n == 0);
	while (st->mn > n) {
		st->mn--;
		free(st->mkeys[st->mn]);
		free(st->mvals[st->mn]);
	}
}

/* Hands what the transaction queued to the shared store (from `from`). */
static void mirror_hand(struct store_shared *st, size_t from)
{
	size_t i;

	assert(from <= st->mn && st->mn <= st->mcap);
	for (i = from; i < st->mn; i++)
		if (store_etcd_mirror(st->remote, st->mkeys[i], st->mvals[i],
				      st->mlens[i]) < 0)
			rt_log(RT_LOG_ERROR,
			       "etcd: %s: not queued: out of "
			       "memory",
			       st->mkeys[i]);
	mirror_truncate(st, from);
}

/* Queues the leader's write of key `k` (value `v` or NULL) when this
 * store mirrors; handed over at once outside a transaction. */
static int mirror_add(struct store_shared *st, struct rt_buf *k,
		      struct rt_buf *v)
{
	if (!store_etcd_mirroring(st->remote))
		return 0;
	if (st->mn == st->mcap) {
		size_t cap = st->mcap ? st->mcap * 2 : 64;
		char **nk = realloc(st->mkeys, cap * sizeof(*nk));
		char **nv;
		size_t *nl;

		if (nk == NULL)
			return -ENOMEM;
		st->mkeys = nk;
		nv = realloc(st->mvals, cap * sizeof(*nv));
		if (nv == NULL)
			return -ENOMEM;
		st->mvals = nv;
		nl = realloc(st->mlens, cap * sizeof(*nl));
		if (nl == NULL)
			return -ENOMEM;
		st->mlens = nl;
		st->mcap = cap;
	}
	st->mkeys[st->mn] = k->data;
	st->mvals[st->mn] = v ? v->data : NULL;
	st->mlens[st->mn] = v ? v->len : 0;
	st->mn++;
	k->data = NULL;
	if (v != NULL)
		v->data = NULL;
	if (st->base.depth == 0)
		mirror_hand(st, st->mn - 1);
	return 0;
}

int store__shared_mirror_rec(struct store_shared *st,
			     const struct etcd_keys_rec *r, int del)
{
	struct rt_buf k = { 0 }, v = { 0 };
	struct etcd_keys_rec stamped;
	int rc;

	if (!store_etcd_mirroring(st->remote))
		return 0;
	if (r->kind == ETCD_KEYS_INSTANCE) {
		stamped = *r;
		stamped.instance.term = st->mterm;
		r = &stamped;
	}
	rc = etcd_keys_encode(st->cluster, r, &k, del ? NULL : &v);
	if (rc == 0)
		rc = mirror_add(st, &k, del ? NULL : &v);
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "etcd: the leader's write not queued: %s",
		       strerror(-rc));
	rt_buf_free(&k);
	rt_buf_free(&v);
	return rc;
}

static void shared_mirror_start(struct store *s,
				int (*fence)(void *arg, struct etcd_cmp *out),
				void (*deposed)(void *arg), void *arg,
				int64_t term)
{
	struct store_shared *st = shared(s);

	st->mterm = term;
	store_etcd_mirror_start(st->remote, fence, deposed, arg, term);
}

static void shared_mirror_stop(struct store *s)
{
	store_etcd_mirror_stop(shared(s)->remote);
}

static size_t shared_mirror_pending(const struct store *s)
{
	return store_etcd_mirror_pending(shared_c(s)->remote);
}

static int shared_mirror_flush(struct store *s, store_done_fn done, void *arg)
{
	int rc = store_etcd_mirror_flush(shared(s)->remote, done, arg);

	return rc == 0 ? STORE_LATER : rc == 1 ? 0 : rc;
}

static int shared_barrier(struct store *s, store_done_fn done, void *arg)
{
	return store_etcd_barrier(shared(s)->remote, done, arg);
}

static struct etcd_client *shared_client(struct store *s)
{
	return store_etcd_client(shared(s)->remote);
}

static const char *shared_cluster(const struct store *s)
{
	return shared_c(s)->cluster;
}

static void shared_derived_listen(struct store *s, store_derived_fn fn,
				  void *arg)
{
	struct store_shared *st = shared(s);

	assert(fn == NULL || st->derived == NULL || st->derived == fn);
	st->derived = fn;
	st->derived_arg = arg;
	/* What the load read: the local tables lack the leader's word on
	 * each instance and worker (its state and pid). */
	if (fn != NULL)
		store_etcd_replay(st->remote, fn, arg);
}

static void shared_code_listen(struct store *s, store_code_fn fn, void *arg)
{
	struct store_shared *st = shared(s);

	assert(fn == NULL || st->code == NULL || st->code == fn);
	st->code = fn;
	st->code_arg = arg;
}

static int shared_shared_state(const struct store *s, int64_t *revision,
			       int *watching, int64_t *stale_since,
			       const char **endpoint, const char **error)
{
	struct store_etcd_state es;

	store_etcd_state(shared_c(s)->remote, &es);
	*revision = es.revision;
	*watching = es.watching;
	*stale_since = es.stale_since;
	*endpoint = es.endpoint;
	*error = es.error;
	return 0;
}

/* ========================================================= transactions */

/* The local store's transactions nest with the front's, level for level;
 * each level remembers where its leader's writes began. */
static int shared_begin(struct store *s, int derived)
{
	struct store_shared *st = shared(s);
	int rc;

	assert(st->local->depth == s->depth);
	rc = derived ? store_begin_derived(st->local) : store_begin(st->local);
	if (rc == 0)
		st->mmarks[s->depth] = st->mn;
	return rc;
}

static int shared_commit(struct store *s)
{
	struct store_shared *st = shared(s);
	int rc;

	assert(st->local->depth == s->depth && s->depth >= 1);
	rc = store_commit(st->local);
	if (rc == 0 && s->depth == 1)
		mirror_hand(st, 0);
	return rc; /* a failure at depth 1: the front rolls back */
}

static void shared_rollback(struct store *s)
{
	struct store_shared *st = shared(s);

	assert(s->depth >= 1);
	mirror_truncate(st, st->mmarks[s->depth - 1]);
	store_rollback(st->local); /* a no-op after a failed commit */
}

/* The local part commits alone; the rows go to etcd, and `done` is
 * called once the listener has them. */
static int shared_commit_then(struct store *s, store_done_fn done, void *arg)
{
	struct store_shared *st = shared(s);
	struct staged sent;
	int rc;

	if (s->depth != 1)
		return store_commit(s);
	sent = s->staged;
	memset(&s->staged, 0, sizeof(s->staged));
	rc = store_commit(s);
	assert(s->depth == 0);
	if (rc == 0 && sent.n > 0)
		rc = store_etcd_submit(st->remote, sent.v, sent.n, done, arg);
	staged_free(&sent);
	return rc;
}

/* Staged for store_commit_then, which sends them. */
static int shared_change(struct store *s, enum store_op op,
			 const struct store_row *r)
{
	return s->depth > 0 ? staged_add(&s->staged, op, r) : -EINVAL;
}

/* A cluster publishes a function's code through store_code_submit. */
static int shared_function_code(struct store *s, const struct store_row *r)
{
	(void)s;
	(void)r;
	return -EOPNOTSUPP;
}

static void shared_inject_failure(struct store *s, int after, int err)
{
	store_inject_failure(shared(s)->local, after, err);
}

/* ================================================= what etcd brings */

/* A change from the shared store, for the listener. */
static void from_remote(void *arg, const struct store_change *c)
{
	struct store_shared *st = arg;

	if (st->base.listen != NULL)
		st->base.listen(st->base.listen_arg, c);
}

/* Derived state from the shared store, written by the leader: kept in
 * the local tables too (a controller that becomes leader, or starts,
 * loads them from there), then told to the listener. The leader's own
 * writes come back too, and are already there. */
static void from_remote_derived(void *arg, const struct etcd_keys_rec *r,
				int deleted)
{
	struct store_shared *st = arg;
	struct store *local = st->local;
	const struct store_instance *in = &r->instance;
	int rc = 0;

	/* What the open reads goes in its one local transaction. */
	assert(!st->loading || local->depth == 1);

	/* code/ is etcd's alone, and every controller writes it. */
	if (r->kind == ETCD_KEYS_CODE_FILE ||
	    r->kind == ETCD_KEYS_CODE_REVISION || r->kind == ETCD_KEYS_OBJECT) {
		if (st->code != NULL)
			st->code(st->code_arg, r, deleted);
		return;
	}
	if (store_etcd_mirroring(st->remote))
		return;
	/* After the load, instances and workers live in the model alone
	 * (a new start reads them from etcd again): no write, and no fsync,
	 * per instance on the loop. */
	if (!st->loading &&
	    (r->kind == ETCD_KEYS_INSTANCE || r->kind == ETCD_KEYS_WORKER))
		goto tell;
	switch (r->kind) {
	case ETCD_KEYS_INSTANCE:
		rc = deleted ? store_instance_delete(local, in->tenant, in->ns,
						     in->fn, in->n)
			     : store_instance_put(local, in);
		break;
	case ETCD_KEYS_WORKER:
		rc = deleted ? store_worker_delete(local, r->worker.id)
			     : store_worker_put(local, &r->worker);
		break;
	case ETCD_KEYS_SETTING:
		rc = deleted ? store_setting_delete(local, r->key)
			     : store_setting_put(local, r->key, r->value);
		break;
	case ETCD_KEYS_REVOKED:
		rc = deleted ? store_sqlite_unrevoke(local, r->revoked.worker,
						     r->revoked.serial)
			     : store_revoke(local, r->revoked.worker,
					    r->revoked.serial,
					    r->revoked.revoked_ms);
		break;
	default: return;
	}
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "store: the leader's state not kept: %s",
		       strerror(-rc));
tell:
	if (st->derived != NULL)
		st->derived(st->derived_arg, r, deleted);
}
/* ============================================================ the store */

static int shared_load(struct store *s,
		       int (*fn)(const struct store_row *, void *), void *arg)
{
	return store_etcd_load(shared(s)->remote, fn, arg);
}

static void shared_stop(struct store *s)
{
	store_etcd_stop(shared(s)->remote);
}

static void shared_close(struct store *s)
{
	struct store_shared *st = shared(s);

	store_etcd_close(st->remote);
	store_close(st->local);
	mirror_truncate(st, 0);
	free(st->mkeys);
	free(st->mvals);
	free(st->mlens);
	free(st->cluster);
	free(st);
}

int store_open_shared(struct store **out, const char *path,
		      struct uv_loop_s *loop, const struct etcd_config *cfg,
		      const char *cluster)
{
	struct store_shared *st = calloc(1, sizeof(*st));
	int rc = -ENOMEM;

	if (st == NULL)
		goto out;
	store__init(&st->base, &store__etcd_ops);
	rc = store_open(&st->local, path);
	/* The cluster's derived state is etcd's: what this file kept from
	 * before is replaced by what the load reads. */
	if (rc == 0)
		rc = store_begin(st->local);
	if (rc == 0)
		rc = store_sqlite_forget_derived(st->local);
	if (rc == 0) {
		st->cluster = strdup(cluster);
		rc = st->cluster ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		/* What the load reads goes in the same transaction. */
		st->loading = 1;
		rc = store_etcd_open(&st->remote, loop, cfg, cluster,
				     from_remote, from_remote_derived, st);
		st->loading = 0;
	}
	if (rc == 0)
		rc = store_commit(st->local);
	else if (st->local != NULL)
		store_rollback(st->local);
out:
	if (rc < 0 && st != NULL) {
		store_close(&st->base);
		st = NULL;
	}
	*out = st ? &st->base : NULL;
	return rc;
}

void store_etcd_config(const struct store_config *c, struct etcd_config *out)
{
	assert(c->url != NULL && strncmp(c->url, "etcd://", 7) == 0);
	memset(out, 0, sizeof(*out));
	out->endpoints = c->url + 7;
	out->ca = c->ca;
	out->cert = c->cert;
	out->key = c->key;
}

int store__etcd_open(struct store **out, const struct store_config *c,
		     struct uv_loop_s *loop)
{
	struct etcd_config ec;

	store_etcd_config(c, &ec);
	return store_open_shared(out, c->path, loop, &ec, c->cluster);
}

const struct store_ops store__etcd_ops = {
	.name = "etcd",
	.shared = 1,
	.close = shared_close,
	.stop = shared_stop,
	.load = shared_load,
	.begin = shared_begin,
	.commit = shared_commit,
	.rollback = shared_rollback,
	.commit_then = shared_commit_then,
	.change = shared_change,
	.function_code = shared_function_code,
	.inject_failure = shared_inject_failure,
	.shared_state = shared_shared_state,
	.mirror_start = shared_mirror_start,
	.mirror_stop = shared_mirror_stop,
	.mirror_pending = shared_mirror_pending,
	.mirror_flush = shared_mirror_flush,
	.barrier = shared_barrier,
	.client = shared_client,
	.cluster = shared_cluster,
	.derived_listen = shared_derived_listen,
	.code_listen = shared_code_listen,
	.code_submit = shared_code_submit,
	.object_known = shared_object_known,
	.instance_put = shared_instance_put,
	.instance_publish = shared_instance_publish,
	.worker_publish = shared_worker_publish,
	.instance_delete = shared_instance_delete,
	.instance_load = shared_instance_load,
	.worker_put = shared_worker_put,
	.worker_delete = shared_worker_delete,
	.worker_load = shared_worker_load,
	.setting_put = shared_setting_put,
	.setting_delete = shared_setting_delete,
	.setting_get = shared_setting_get,
	.setting_each = shared_setting_each,
	.revoke = shared_revoke,
	.revoked = shared_revoked,
	.code_file_put = shared_code_file_put,
	.code_file_delete = shared_code_file_delete,
	.code_file_rename = shared_code_file_rename,
	.code_files_delete = shared_code_files_delete,
	.code_file_load = shared_code_file_load,
	.code_revision_put = shared_code_revision_put,
	.code_revision_delete = shared_code_revision_delete,
	.code_revision_load = shared_code_revision_load,
};

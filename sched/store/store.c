/*
 * store.c - the SQLite store: tenants, namespaces and functions.
 *
 * WAL mode with synchronous=FULL: a commit is on disk before the write(2)
 * that caused it returns, so it survives kill -9 and a power cut.
 * Statements are prepared once and reused.
 */
#include <assert.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/base/rt.h"
#include "store.h"
#include "../model/staged.h"
#include "etcd/etcd_keys.h"
#include "etcd/store_etcd.h"

enum {
	ST_INS_T,
	ST_INS_N,
	ST_INS_F,
	ST_UPD_T,
	ST_UPD_N,
	ST_UPD_F,
	ST_DEL_T,
	ST_DEL_N,
	ST_DEL_F,
	ST_OWN_T,
	ST_COUNT
};

static const char *const sql_text[ST_COUNT] = {
	[ST_INS_T] = "INSERT INTO tenants(name, created_ms, updated_ms, uid, "
		     "gid, mode) VALUES(?1, ?4, ?5, ?9, ?10, ?11)",
	[ST_INS_N] = "INSERT INTO namespaces(tenant, name, created_ms, "
		     "updated_ms) VALUES(?1, ?2, ?4, ?5)",
	[ST_INS_F] = "INSERT INTO functions(tenant, namespace, name, "
		     "created_ms, updated_ms, spec, revision, run_revision) "
		     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_UPD_T] = "UPDATE tenants SET updated_ms = ?5 WHERE name = ?1",
	[ST_UPD_N] = "UPDATE namespaces SET updated_ms = ?5 "
		     "WHERE tenant = ?1 AND name = ?2",
	[ST_UPD_F] = "UPDATE functions SET updated_ms = ?5, spec = ?6, "
		     "revision = ?7, run_revision = ?8 WHERE tenant = ?1 AND "
		     "namespace = ?2 AND name = ?3",
	[ST_DEL_T] = "DELETE FROM tenants WHERE name = ?1",
	[ST_DEL_N] = "DELETE FROM namespaces WHERE tenant = ?1 AND name = ?2",
	[ST_DEL_F] = "DELETE FROM functions WHERE tenant = ?1 AND "
		     "namespace = ?2 AND name = ?3",
	[ST_OWN_T] = "UPDATE tenants SET uid = ?9, gid = ?10, mode = ?11 "
		     "WHERE name = ?1",
};

/* Version 2: instances (desired state and assignment) and known
 * workers. */
static const char schema_v2[] =
	"CREATE TABLE instances("
	"  tenant TEXT NOT NULL,"
	"  namespace TEXT NOT NULL,"
	"  function TEXT NOT NULL,"
	"  n INTEGER NOT NULL,"
	"  desired INTEGER NOT NULL,"
	"  worker TEXT,"
	"  PRIMARY KEY(tenant, namespace, function, n));"
	"CREATE TABLE workers("
	"  id TEXT PRIMARY KEY,"
	"  memory INTEGER NOT NULL,"
	"  tags TEXT NOT NULL,"
	"  namespaces TEXT NOT NULL,"
	"  local INTEGER NOT NULL);"
	"ALTER TABLE functions ADD COLUMN run_revision INTEGER NOT NULL "
	"DEFAULT 0;";

/* Version 3: a worker remembers that it was drained. */
static const char schema_v3[] =
	"ALTER TABLE workers ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;";

/* Version 4: a tenant has a Unix owner, group and mode; tenants of an
 * older database become root's, mode 0750 (488). */
static const char schema_v4[] =
	"ALTER TABLE tenants ADD COLUMN uid INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE tenants ADD COLUMN gid INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE tenants ADD COLUMN mode INTEGER NOT NULL DEFAULT 488;";

/* Version 5: revoked worker certificates (docs/decisions.md, "What revoke
 * means"): a row refuses the certificate with `serial`, and every
 * certificate of `worker` issued (notBefore) at or before `revoked_ms`.
 * `serial` is '' when no certificate of the worker was seen. */
static const char schema_v5[] = "CREATE TABLE IF NOT EXISTS revoked("
				"  worker TEXT NOT NULL,"
				"  serial TEXT NOT NULL,"
				"  revoked_ms INTEGER NOT NULL,"
				"  PRIMARY KEY(worker, serial));";

/* Version 6: the code/ of functions: the tree of each (files with their
 * object's SHA-256, directories) and its revision of code (the
 * manifest's hash). */
static const char schema_v6[] =
	"CREATE TABLE IF NOT EXISTS code_files("
	"  tenant TEXT NOT NULL,"
	"  namespace TEXT NOT NULL,"
	"  function TEXT NOT NULL,"
	"  path TEXT NOT NULL,"
	"  mode INTEGER NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  hash TEXT NOT NULL,"
	"  mtime_ms INTEGER NOT NULL,"
	"  PRIMARY KEY(tenant, namespace, function, path));"
	"CREATE TABLE IF NOT EXISTS code_revisions("
	"  tenant TEXT NOT NULL,"
	"  namespace TEXT NOT NULL,"
	"  function TEXT NOT NULL,"
	"  hash TEXT NOT NULL,"
	"  bytes INTEGER NOT NULL,"
	"  files INTEGER NOT NULL,"
	"  PRIMARY KEY(tenant, namespace, function));";

/* Version 7: an instance keeps the epoch of its assignment, so that the
 * fence outlives a restart of the controller; older rows start at 0 (no
 * epoch: what a worker reports of them is taken as it is). */
static const char schema_v7[] =
	"ALTER TABLE instances ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;";

/* Version 1 of the schema. Later versions add migrations after it. */
static const char schema_v1[] = "CREATE TABLE tenants("
				"  name TEXT PRIMARY KEY,"
				"  created_ms INTEGER NOT NULL,"
				"  updated_ms INTEGER NOT NULL);"
				"CREATE TABLE namespaces("
				"  tenant TEXT NOT NULL,"
				"  name TEXT NOT NULL,"
				"  created_ms INTEGER NOT NULL,"
				"  updated_ms INTEGER NOT NULL,"
				"  PRIMARY KEY(tenant, name));"
				"CREATE TABLE functions("
				"  tenant TEXT NOT NULL,"
				"  namespace TEXT NOT NULL,"
				"  name TEXT NOT NULL,"
				"  created_ms INTEGER NOT NULL,"
				"  updated_ms INTEGER NOT NULL,"
				"  spec TEXT NOT NULL,"
				"  revision INTEGER NOT NULL,"
				"  PRIMARY KEY(tenant, namespace, name));"
				"CREATE TABLE settings("
				"  key TEXT PRIMARY KEY,"
				"  value TEXT NOT NULL);";

/* Statements of run_sql, prepared once: keyed by the address of their
 * (static) text. */
#define STORE_CACHE 16

/* Transactions nest at most this deep (the write paths use 3). */
#define STORE_DEPTH_MAX 16

struct store {
	int relaxed; /* the open transaction is derived */
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT]; /* prepared on open */
	const char *cache_sql[STORE_CACHE];
	sqlite3_stmt *cache[STORE_CACHE];
	int depth;	      /* open transactions, nested */
	int fail_after;	      /* writes before an injected failure; -1: none */
	int fail_err;	      /* the -errno it gives */
	struct staged staged; /* changes of the open transaction */
	size_t marks[STORE_DEPTH_MAX]; /* staged.n where each level began */
	store_listen_fn listen;
	void *listen_arg;
	struct store_etcd *remote; /* shared: the rows of tenants, namespaces
				      and functions are there */
	char *cluster;		   /* shared: its name */
	/* The leader's writes of derived state in the open transaction,
	 * handed to the shared store when it commits (keys and values;
	 * a NULL value deletes). */
	char **mkeys, **mvals;
	size_t *mlens, mn, mcap;
	size_t mmarks[STORE_DEPTH_MAX];
	int64_t mterm; /* the term of the leader's writes (mirror_start) */
	store_derived_fn derived;
	void *derived_arg;
	store_code_fn code; /* shared: code/'s changes */
	void *code_arg;
	int loading; /* store_open_shared reads the cluster */
};

/* The errno of SQLite's last error: a full disk or database is ENOSPC,
 * anything else EIO. */
static int db_errno(struct store *st)
{
	int e = sqlite3_errcode(st->db);

	return e == SQLITE_FULL ? -ENOSPC : -EIO;
}

static int db_fail(struct store *st, const char *what)
{
	rt_log(RT_LOG_ERROR, "store: %s: %s", what, sqlite3_errmsg(st->db));
	return db_errno(st);
}

/* Whether the failure injected by store_inject_failure is due now. */
static int injected(struct store *st)
{
	if (st->fail_after < 0)
		return 0;
	if (st->fail_after > 0) {
		st->fail_after--;
		return 0;
	}
	st->fail_after = -1;
	return st->fail_err;
}

void store_inject_failure(struct store *st, int after, int err)
{
	st->fail_after = after;
	st->fail_err = err;
}

static int exec(struct store *st, const char *sql)
{
	char *msg = NULL;
	int rc = strncmp(sql, "PRAGMA", 6) != 0 && strncmp(sql, "ROLLBACK", 8)
			 ? injected(st)
			 : 0;

	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "store: %s: injected failure", sql);
		return rc;
	}
	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		rt_log(RT_LOG_ERROR, "store: %s: %s", sql, msg ? msg : "?");
		sqlite3_free(msg);
		return db_errno(st);
	}
	return 0;
}

static int user_version(struct store *st, int *v)
{
	sqlite3_stmt *q = NULL;
	int rc = -EIO;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) !=
	    SQLITE_OK)
		goto out;
	if (sqlite3_step(q) == SQLITE_ROW) {
		*v = sqlite3_column_int(q, 0);
		rc = 0;
	}
out:
	sqlite3_finalize(q);
	return rc < 0 ? db_fail(st, "user_version") : 0;
}

/* Whether `table` has a column `col` (a migration that adds one is then
 * done already). Returns 1, 0 or -EIO. */
static int has_column(struct store *st, const char *table, const char *col)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, step;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT 1 FROM pragma_table_info(?1) WHERE "
			       "name = ?2",
			       -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, "table_info");
	sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, col, -1, SQLITE_STATIC);
	step = sqlite3_step(q);
	if (step == SQLITE_ROW)
		rc = 1;
	else if (step != SQLITE_DONE)
		rc = db_fail(st, "table_info");
	sqlite3_finalize(q);
	return rc;
}

/* Brings the schema up to STORE_SCHEMA_VERSION in one transaction. */
static int migrate(struct store *st)
{
	char sql[64];
	int v = 0, rc;

	rc = user_version(st, &v);
	if (rc < 0)
		return rc;
	if (v == STORE_SCHEMA_VERSION)
		return 0;
	if (v > STORE_SCHEMA_VERSION) {
		rt_log(RT_LOG_ERROR,
		       "store: schema version %d is newer than this fnfs (%d)",
		       v, STORE_SCHEMA_VERSION);
		return -EPROTO;
	}
	rc = exec(st, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	if (v < 1)
		rc = exec(st, schema_v1);
	if (rc == 0 && v < 2)
		rc = exec(st, schema_v2);
	if (rc == 0 && v < 3)
		rc = exec(st, schema_v3);
	if (rc == 0 && v < 4)
		rc = exec(st, schema_v4);
	if (rc == 0 && v < 5)
		rc = exec(st, schema_v5);
	if (rc == 0 && v < 6)
		rc = exec(st, schema_v6);
	if (rc == 0 && v < 7) {
		rc = has_column(st, "instances", "epoch");
		if (rc == 0)
			rc = exec(st, schema_v7);
		else if (rc > 0)
			rc = 0;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 STORE_SCHEMA_VERSION);
	if (rc == 0)
		rc = exec(st, sql);
	if (rc == 0)
		rc = exec(st, "COMMIT");
	if (rc < 0)
		exec(st, "ROLLBACK");
	return rc;
}

int store_open(struct store **out, const char *path)
{
	struct store *st = calloc(1, sizeof(*st));
	int i, rc = -ENOMEM;

	if (st == NULL)
		goto out;
	st->fail_after = -1;
	if (sqlite3_open_v2(path, &st->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = db_fail(st, path);
		goto out;
	}
	/* Only fnfs writes this file; another process holding it (sqlite3 by
	 * hand) must not stall the loop for long. */
	sqlite3_busy_timeout(st->db, 100);
	rc = exec(st, "PRAGMA journal_mode = WAL");
	if (rc == 0)
		rc = exec(st, "PRAGMA synchronous = FULL");
	if (rc == 0)
		rc = migrate(st);
	for (i = 0; i < ST_COUNT && rc == 0; i++)
		if (sqlite3_prepare_v3(st->db, sql_text[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
				       NULL) != SQLITE_OK)
			rc = db_fail(st, sql_text[i]);
out:
	if (rc < 0 && st != NULL) {
		store_close(st);
		st = NULL;
	}
	*out = st;
	return rc;
}

static void mirror_truncate(struct store *st, size_t n);

void store_close(struct store *st)
{
	int i;

	if (st == NULL)
		return;
	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	for (i = 0; i < STORE_CACHE; i++)
		sqlite3_finalize(st->cache[i]);
	sqlite3_close(st->db);
	staged_free(&st->staged);
	store_etcd_close(st->remote);
	mirror_truncate(st, 0);
	free(st->mkeys);
	free(st->mvals);
	free(st->mlens);
	free(st->cluster);
	free(st);
}

static const char *col_text(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : "";
}

int store_load(struct store *st, int (*fn)(const struct store_row *, void *),
	       void *arg)
{
	static const char *const q_text[] = {
		"SELECT name, NULL, NULL, created_ms, updated_ms, NULL, 0, 0, "
		"uid, gid, mode FROM tenants ORDER BY name",
		"SELECT tenant, name, NULL, created_ms, updated_ms, NULL, 0, "
		"0, "
		"0, 0, 0 FROM namespaces ORDER BY tenant, name",
		"SELECT tenant, namespace, name, created_ms, updated_ms, spec, "
		"revision, run_revision, 0, 0, 0 FROM functions ORDER BY "
		"tenant, namespace, name",
	};
	sqlite3_stmt *q = NULL;
	int k, step, rc = 0;

	if (st->remote != NULL)
		return store_etcd_load(st->remote, fn, arg);
	for (k = 0; k < 3 && rc == 0; k++) {
		if (sqlite3_prepare_v2(st->db, q_text[k], -1, &q, NULL) !=
		    SQLITE_OK)
			return db_fail(st, q_text[k]);
		while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
			struct store_row r = {
				.kind = (enum store_kind)k,
				.tenant = col_text(q, 0),
				.ns = k >= 1 ? col_text(q, 1) : NULL,
				.name = k >= 2 ? col_text(q, 2) : NULL,
				.created_ms = sqlite3_column_int64(q, 3),
				.updated_ms = sqlite3_column_int64(q, 4),
				.spec = k >= 2 ? col_text(q, 5) : NULL,
				.revision = (uint64_t)sqlite3_column_int64(q,
									   6),
				.run_revision = (uint64_t)sqlite3_column_int64(
					q, 7),
				.uid = (uint32_t)sqlite3_column_int64(q, 8),
				.gid = (uint32_t)sqlite3_column_int64(q, 9),
				.mode = (uint32_t)sqlite3_column_int64(q, 10),
			};
			rc = fn(&r, arg);
		}
		if (rc == 0 && step != SQLITE_DONE)
			rc = db_fail(st, "load");
		sqlite3_finalize(q);
		q = NULL;
	}
	return rc;
}

static int run_sql(struct store *st, const char *sql, int ntext,
		   const char *const *text, int nint, const long long *ints);

/* ================================================ the leader's writes */

static void mirror_truncate(struct store *st, size_t n)
{
	while (st->mn > n) {
		st->mn--;
		free(st->mkeys[st->mn]);
		free(st->mvals[st->mn]);
	}
}

/* Hands what the transaction queued to the shared store (from `from`). */
static void mirror_hand(struct store *st, size_t from)
{
	size_t i;

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
static int mirror_add(struct store *st, struct rt_buf *k, struct rt_buf *v)
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
	if (st->depth == 0)
		mirror_hand(st, st->mn - 1);
	return 0;
}

/* Queues record `r` (a delete when `del`); an instance says the term
 * that writes it. */
static int mirror_rec(struct store *st, const struct etcd_keys_rec *r, int del)
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

void store_mirror_start(struct store *st, store_etcd_fence_fn fence,
			store_etcd_deposed_fn deposed, void *arg, int64_t term)
{
	st->mterm = term;
	if (st->remote != NULL)
		store_etcd_mirror_start(st->remote, fence, deposed, arg, term);
}

void store_mirror_stop(struct store *st)
{
	if (st->remote != NULL)
		store_etcd_mirror_stop(st->remote);
}

size_t store_mirror_pending(const struct store *st)
{
	return st->remote ? store_etcd_mirror_pending(st->remote) : 0;
}

int store_barrier(struct store *st, store_done_fn done, void *arg)
{
	return st->remote ? store_etcd_barrier(st->remote, done, arg) : -ENOENT;
}

struct etcd_client *store_client(struct store *st)
{
	return st->remote ? store_etcd_client(st->remote) : NULL;
}

const char *store_cluster(const struct store *st)
{
	return st->cluster;
}

void store_derived_listen(struct store *st, store_derived_fn fn, void *arg)
{
	st->derived = fn;
	st->derived_arg = arg;
	/* What the load read: the local tables lack the leader's word on
	 * each instance (its state and pid). */
	if (st->remote != NULL && fn != NULL)
		store_etcd_replay(st->remote, fn, arg);
}

/* Transactions nest: the outermost is a real transaction, inner ones are
 * savepoints, so that a batch (a whole reconciliation) is one commit and
 * one fsync while its parts keep their own all-or-nothing. */
int store_begin(struct store *st)
{
	char sql[32];
	int rc;

	assert(st->depth >= 0);
	if (st->depth >= STORE_DEPTH_MAX)
		return -EINVAL;
	if (st->depth == 0)
		rc = exec(st, "BEGIN IMMEDIATE");
	else {
		snprintf(sql, sizeof(sql), "SAVEPOINT sp%d", st->depth);
		rc = exec(st, sql);
	}
	if (rc == 0) {
		st->mmarks[st->depth] = st->mn;
		st->marks[st->depth++] = st->staged.n;
	}
	return rc;
}

int store_begin_derived(struct store *st)
{
	int rc;

	if (st->depth > 0)
		return store_begin(st);
	rc = exec(st, "PRAGMA synchronous = NORMAL");
	if (rc == 0)
		rc = store_begin(st);
	if (rc == 0)
		st->relaxed = 1;
	else
		exec(st, "PRAGMA synchronous = FULL");
	return rc;
}

/* Puts durability back after a derived transaction. */
static void unrelax(struct store *st)
{
	if (st->relaxed) {
		st->relaxed = 0;
		exec(st, "PRAGMA synchronous = FULL");
	}
}

/* Hands the changes of the transaction just committed to the listener.
 * The list is emptied first: the listener may write again. */
static void announce(struct store *st)
{
	struct staged done = st->staged;
	size_t i;

	memset(&st->staged, 0, sizeof(st->staged));
	for (i = 0; i < done.n && st->listen != NULL; i++)
		st->listen(st->listen_arg, &done.v[i]);
	staged_free(&done);
}

void store_listen(struct store *st, store_listen_fn fn, void *arg)
{
	st->listen = fn;
	st->listen_arg = arg;
}

int store_shared(const struct store *st)
{
	return st->remote != NULL;
}

int store_commit_then(struct store *st, store_done_fn done, void *arg)
{
	struct staged sent;
	int rc;

	if (st->remote == NULL || st->depth != 1)
		return store_commit(st);
	sent = st->staged; /* the local part commits alone */
	memset(&st->staged, 0, sizeof(st->staged));
	rc = store_commit(st);
	if (rc == 0 && sent.n > 0)
		rc = store_etcd_submit(st->remote, sent.v, sent.n, done, arg);
	staged_free(&sent);
	return rc;
}

/* A change from the shared store, for the listener. */
static void from_remote(void *arg, const struct store_change *c)
{
	struct store *st = arg;

	if (st->listen != NULL)
		st->listen(st->listen_arg, c);
}

/* Derived state from the shared store, written by the leader: kept in
 * the local tables too (a controller that becomes leader, or starts,
 * loads them from there), then told to the listener. The leader's own
 * writes come back too, and are already there. */
static void from_remote_derived(void *arg, const struct etcd_keys_rec *r,
				int deleted)
{
	struct store *st = arg;
	const struct store_instance *in = &r->instance;
	int rc = 0;

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
		rc = deleted ? store_instance_delete(st, in->tenant, in->ns,
						     in->fn, in->n)
			     : store_instance_put(st, in);
		break;
	case ETCD_KEYS_WORKER:
		rc = deleted ? store_worker_delete(st, r->worker.id)
			     : store_worker_put(st, &r->worker);
		break;
	case ETCD_KEYS_SETTING:
		rc = deleted ? store_setting_delete(st, r->key)
			     : store_setting_put(st, r->key, r->value);
		break;
	case ETCD_KEYS_REVOKED: {
		const char *text[2] = { r->revoked.worker, r->revoked.serial };

		rc = deleted ? run_sql(st,
				       "DELETE FROM revoked WHERE worker = ?1 "
				       "AND serial = ?2",
				       2, text, 0, NULL)
			     : store_revoke(st, r->revoked.worker,
					    r->revoked.serial,
					    r->revoked.revoked_ms);
		break;
	}
	default: return;
	}
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "store: the leader's state not kept: %s",
		       strerror(-rc));
tell:
	if (st->derived != NULL)
		st->derived(st->derived_arg, r, deleted);
}

void store_code_listen(struct store *st, store_code_fn fn, void *arg)
{
	st->code = fn;
	st->code_arg = arg;
}

int store_code_submit(struct store *st, const struct store_row *fn,
		      const struct store_code_op *v, size_t n,
		      store_done_fn done, void *arg)
{
	struct store_change c;

	if (st->remote == NULL)
		return -ENOTSUP;
	if (fn != NULL) {
		memset(&c, 0, sizeof(c));
		c.op = STORE_UPDATE;
		c.row = *fn;
		c.own = 1;
	}
	return store_etcd_submit_code(st->remote, fn ? &c : NULL, fn ? 1 : 0, v,
				      n, done, arg);
}

int store_object_known(struct store *st, const char *hash, uint64_t *size)
{
	if (st->remote == NULL)
		return -ENOTSUP;
	return store_etcd_object_known(st->remote, hash, size);
}

int store_open_shared(struct store **out, const char *path,
		      struct uv_loop_s *loop, const struct etcd_config *cfg,
		      const char *cluster)
{
	int rc = store_open(out, path);

	/* The cluster's derived state is etcd's: what this file kept from
	 * before is replaced by what the load reads. */
	if (rc == 0)
		rc = store_begin(*out);
	if (rc == 0)
		rc = exec(*out, "DELETE FROM instances; DELETE FROM workers; "
				"DELETE FROM settings; DELETE FROM revoked");
	if (rc == 0) {
		(*out)->cluster = strdup(cluster);
		rc = (*out)->cluster ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		/* What the load reads goes in the same transaction. */
		(*out)->loading = 1;
		rc = store_etcd_open(&(*out)->remote, loop, cfg, cluster,
				     from_remote, from_remote_derived, *out);
		(*out)->loading = 0;
	}
	if (rc == 0)
		rc = store_commit(*out);
	else if (*out != NULL)
		store_rollback(*out);
	if (rc < 0 && *out != NULL) {
		store_close(*out);
		*out = NULL;
	}
	return rc;
}

void store_stop(struct store *st)
{
	store_etcd_stop(st->remote);
}

int store_shared_state(const struct store *st, int64_t *revision, int *watching,
		       int64_t *stale_since, const char **endpoint,
		       const char **error)
{
	struct store_etcd_state es;

	if (st->remote == NULL)
		return -ENOENT;
	store_etcd_state(st->remote, &es);
	*revision = es.revision;
	*watching = es.watching;
	*stale_since = es.stale_since;
	*endpoint = es.endpoint;
	*error = es.error;
	return 0;
}

int store_commit(struct store *st)
{
	char sql[32];
	int rc;

	assert(st->depth >= 0);
	if (st->depth == 0)
		return -EINVAL;
	if (st->depth == 1) {
		rc = exec(st, "COMMIT");
		if (rc < 0) {
			store_rollback(st);
			return rc;
		}
		st->depth--;
		unrelax(st);
		mirror_hand(st, 0);
		announce(st);
		return 0;
	} else {
		snprintf(sql, sizeof(sql), "RELEASE sp%d", st->depth - 1);
		rc = exec(st, sql);
	}
	st->depth--;
	return rc;
}

void store_rollback(struct store *st)
{
	char sql[64];

	assert(st->depth >= 0);
	if (st->depth == 0)
		return;
	staged_truncate(&st->staged, st->marks[st->depth - 1]);
	mirror_truncate(st, st->mmarks[st->depth - 1]);
	if (st->depth == 1) {
		if (!sqlite3_get_autocommit(st->db))
			exec(st, "ROLLBACK");
		st->depth--;
		unrelax(st);
		return;
	} else {
		snprintf(sql, sizeof(sql), "ROLLBACK TO sp%d; RELEASE sp%d",
			 st->depth - 1, st->depth - 1);
		exec(st, sql);
	}
	st->depth--;
}

/* Binds the row to the statement's numbered parameters and runs it. */
static int run(struct store *st, int which, const struct store_row *r)
{
	sqlite3_stmt *q = st->stmt[which];
	int step = injected(st);

	if (step < 0)
		return step;
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_bind_text(q, 1, r->tenant, -1, SQLITE_STATIC);
	if (r->ns)
		sqlite3_bind_text(q, 2, r->ns, -1, SQLITE_STATIC);
	if (r->name)
		sqlite3_bind_text(q, 3, r->name, -1, SQLITE_STATIC);
	/* A statement that does not use a parameter ignores its binding. */
	if (sqlite3_bind_parameter_index(q, "?4"))
		sqlite3_bind_int64(q, 4, r->created_ms);
	if (sqlite3_bind_parameter_index(q, "?5"))
		sqlite3_bind_int64(q, 5, r->updated_ms);
	if (sqlite3_bind_parameter_index(q, "?6"))
		sqlite3_bind_text(q, 6, r->spec ? r->spec : "{}", -1,
				  SQLITE_STATIC);
	if (sqlite3_bind_parameter_index(q, "?7"))
		sqlite3_bind_int64(q, 7, (sqlite3_int64)r->revision);
	if (sqlite3_bind_parameter_index(q, "?8"))
		sqlite3_bind_int64(q, 8, (sqlite3_int64)r->run_revision);
	if (sqlite3_bind_parameter_index(q, "?9")) {
		sqlite3_bind_int64(q, 9, (sqlite3_int64)r->uid);
		sqlite3_bind_int64(q, 10, (sqlite3_int64)r->gid);
		sqlite3_bind_int64(q, 11, (sqlite3_int64)r->mode);
	}
	step = sqlite3_step(q);
	sqlite3_reset(q);
	if (step == SQLITE_CONSTRAINT)
		return -EEXIST;
	if (step != SQLITE_DONE)
		return db_fail(st, sql_text[which]);
	if (sqlite3_changes(st->db) == 0)
		return -ENOENT;
	return 0;
}

static void announce(struct store *st);

/* Runs a change of a tenant, namespace or function and stages it for the
 * listener. */
static int change(struct store *st, enum store_op op, int which,
		  const struct store_row *r)
{
	int rc;

	if (st->remote != NULL) /* sent by store_commit_then */
		return st->depth > 0 ? staged_add(&st->staged, op, r) : -EINVAL;
	rc = run(st, which, r);
	if (rc == 0)
		rc = staged_add(&st->staged, op, r);
	if (rc == 0 && st->depth == 0)
		announce(st); /* outside a transaction: committed at once */
	return rc;
}

int store_function_code(struct store *st, const struct store_row *r)
{
	if (st->remote != NULL)
		return -EOPNOTSUPP; /* a cluster publishes through
				     * store_code_submit */
	return run(st, ST_UPD_F, r);
}

int store_insert(struct store *st, const struct store_row *r)
{
	return change(st, STORE_INSERT, ST_INS_T + (int)r->kind, r);
}

int store_update(struct store *st, const struct store_row *r)
{
	return change(st, STORE_UPDATE, ST_UPD_T + (int)r->kind, r);
}

int store_delete(struct store *st, const struct store_row *r)
{
	return change(st, STORE_DELETE, ST_DEL_T + (int)r->kind, r);
}

int store_tenant_owner(struct store *st, const struct store_row *r)
{
	return change(st, STORE_OWNER, ST_OWN_T, r);
}

/* ============================================== instances, workers, settings
 */

/* Prepares, binds text parameters (NULL binds NULL) and steps `sql` once.
 * Returns 0 or -EIO. */
static int run_sql(struct store *st, const char *sql, int ntext,
		   const char *const *text, int nint, const long long *ints)
{
	sqlite3_stmt *q = NULL;
	int i, step, rc = injected(st);

	if (rc < 0)
		return rc;
	for (i = 0; i < STORE_CACHE && st->cache_sql[i] != NULL; i++)
		if (st->cache_sql[i] == sql) {
			q = st->cache[i];
			break;
		}
	if (q == NULL) {
		if (sqlite3_prepare_v3(st->db, sql, -1,
				       SQLITE_PREPARE_PERSISTENT, &q,
				       NULL) != SQLITE_OK)
			return db_fail(st, sql);
		if (i < STORE_CACHE) {
			st->cache_sql[i] = sql;
			st->cache[i] = q;
		}
	}
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	for (i = 0; i < ntext; i++)
		if (text[i] != NULL)
			sqlite3_bind_text(q, i + 1, text[i], -1, SQLITE_STATIC);
	for (i = 0; i < nint; i++)
		sqlite3_bind_int64(q, ntext + i + 1, ints[i]);
	step = sqlite3_step(q);
	if (step != SQLITE_DONE)
		rc = db_fail(st, sql);
	sqlite3_reset(q);
	for (i = 0; i < STORE_CACHE; i++)
		if (st->cache[i] == q)
			return rc;
	sqlite3_finalize(q); /* the cache was full */
	return rc;
}

int store_instance_put(struct store *st, const struct store_instance *r)
{
	const char *text[4] = { r->tenant, r->ns, r->fn, r->worker };
	long long ints[3] = { r->n, r->desired_run, (long long)r->epoch };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };
	int rc = run_sql(st,
			 "INSERT OR REPLACE INTO instances(tenant, namespace, "
			 "function, worker, n, desired, epoch) VALUES(?1, ?2, "
			 "?3, ?4, ?5, ?6, ?7)",
			 4, text, 3, ints);

	rec.instance = *r;
	return rc < 0 ? rc : mirror_rec(st, &rec, 0);
}

int store_instance_publish(struct store *st, const struct store_instance *r)
{
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };

	rec.instance = *r;
	return mirror_rec(st, &rec, 0);
}

int store_instance_delete(struct store *st, const char *tenant, const char *ns,
			  const char *fn, int n)
{
	const char *text[3] = { tenant, ns, fn };
	long long ints[1] = { n };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };
	int rc = run_sql(st,
			 "DELETE FROM instances WHERE tenant = ?1 AND "
			 "namespace = ?2 AND function = ?3 AND n = ?4",
			 3, text, 1, ints);

	rec.instance.tenant = tenant;
	rec.instance.ns = ns;
	rec.instance.fn = fn;
	rec.instance.n = n;
	return rc < 0 ? rc : mirror_rec(st, &rec, 1);
}

int store_instance_load(struct store *st,
			int (*fn)(const struct store_instance *, void *),
			void *arg)
{
	static const char sql[] =
		"SELECT tenant, namespace, function, n, "
		"desired, worker, epoch FROM instances ORDER BY "
		"tenant, namespace, function, n";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_instance r = {
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.fn = col_text(q, 2),
			.n = sqlite3_column_int(q, 3),
			.desired_run = sqlite3_column_int(q, 4),
			.worker = sqlite3_column_type(q, 5) == SQLITE_NULL
					  ? NULL
					  : col_text(q, 5),
			.epoch = (uint64_t)sqlite3_column_int64(q, 6),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store_worker_put(struct store *st, const struct store_worker *r)
{
	const char *text[3] = { r->id, r->tags, r->namespaces };
	long long ints[3] = { r->memory_mb, r->local, r->drained };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_WORKER };
	int rc = run_sql(st,
			 "INSERT OR REPLACE INTO workers(id, tags, namespaces, "
			 "memory, local, drained) VALUES(?1, ?2, ?3, ?4, ?5, "
			 "?6)",
			 3, text, 3, ints);

	rec.worker = *r;
	return rc < 0 ? rc : mirror_rec(st, &rec, 0);
}

int store_worker_delete(struct store *st, const char *id)
{
	const char *text[1] = { id };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_WORKER };
	int rc = run_sql(st, "DELETE FROM workers WHERE id = ?1", 1, text, 0,
			 NULL);

	rec.worker.id = id;
	return rc < 0 ? rc : mirror_rec(st, &rec, 1);
}

int store_worker_load(struct store *st,
		      int (*fn)(const struct store_worker *, void *), void *arg)
{
	static const char sql[] = "SELECT id, memory, tags, namespaces, local, "
				  "drained FROM workers ORDER BY id";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_worker r = {
			col_text(q, 0),		  sqlite3_column_int(q, 1),
			col_text(q, 2),		  col_text(q, 3),
			sqlite3_column_int(q, 4), sqlite3_column_int(q, 5),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store_setting_put(struct store *st, const char *key, const char *value)
{
	const char *text[2] = { key, value };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_SETTING };
	int rc = run_sql(st,
			 "INSERT OR REPLACE INTO settings(key, value) "
			 "VALUES(?1, ?2)",
			 2, text, 0, NULL);

	rec.key = key;
	rec.value = value;
	return rc < 0 ? rc : mirror_rec(st, &rec, 0);
}

int store_setting_delete(struct store *st, const char *key)
{
	const char *text[1] = { key };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_SETTING };
	int rc = run_sql(st, "DELETE FROM settings WHERE key = ?1", 1, text, 0,
			 NULL);

	rec.key = key;
	return rc < 0 ? rc : mirror_rec(st, &rec, 1);
}

int store_setting_each(struct store *st, const char *prefix,
		       int (*fn)(const char *key, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, step;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT key FROM settings WHERE substr(key, 1, "
			       "length(?1)) = ?1 ORDER BY key",
			       -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, "settings");
	sqlite3_bind_text(q, 1, prefix, -1, SQLITE_STATIC);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW)
		rc = fn(col_text(q, 0), arg);
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(st, "settings");
	sqlite3_finalize(q);
	return rc;
}

int store_setting_get(struct store *st, const char *key, char *out, size_t n)
{
	sqlite3_stmt *q = NULL;
	int rc = -ENOENT;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT value FROM settings WHERE key = ?1", -1,
			       &q, NULL) != SQLITE_OK)
		return db_fail(st, "settings");
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW) {
		snprintf(out, n, "%s", col_text(q, 0));
		rc = 0;
	}
	sqlite3_finalize(q);
	return rc;
}

sqlite3 *store_db(struct store *st)
{
	return st->db;
}

int store_revoke(struct store *st, const char *worker, const char *serial,
		 int64_t revoked_ms)
{
	const char *text[2] = { worker, serial ? serial : "" };
	long long ints[1] = { revoked_ms };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_REVOKED };
	int rc = run_sql(st,
			 "INSERT OR REPLACE INTO revoked(worker, serial, "
			 "revoked_ms) VALUES(?1, ?2, ?3)",
			 2, text, 1, ints);

	rec.revoked.worker = worker;
	rec.revoked.serial = text[1];
	rec.revoked.revoked_ms = revoked_ms;
	return rc < 0 ? rc : mirror_rec(st, &rec, 0);
}

/* ================================================================ code/ */

int store_code_file_put(struct store *st, const struct store_code_file *r)
{
	const char *text[5] = { r->tenant, r->ns, r->fn, r->path,
				r->hash ? r->hash : "" };
	long long ints[3] = { r->mode, (long long)r->size, r->mtime_ms };

	return run_sql(st,
		       "INSERT OR REPLACE INTO code_files(tenant, namespace, "
		       "function, path, hash, mode, size, mtime_ms) VALUES(?1, "
		       "?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		       5, text, 3, ints);
}

int store_code_file_delete(struct store *st, const char *tenant, const char *ns,
			   const char *fn, const char *path)
{
	const char *text[4] = { tenant, ns, fn, path };

	return run_sql(st,
		       "DELETE FROM code_files WHERE tenant = ?1 AND namespace "
		       "= ?2 AND function = ?3 AND path = ?4",
		       4, text, 0, NULL);
}

int store_code_file_rename(struct store *st, const char *tenant, const char *ns,
			   const char *fn, const char *from, const char *to)
{
	const char *text[5] = { tenant, ns, fn, from, to };
	long long ints[1] = { (long long)strlen(from) + 1 };

	return run_sql(st,
		       "UPDATE code_files SET path = ?5 || substr(path, ?6) "
		       "WHERE tenant = ?1 AND namespace = ?2 AND function = ?3 "
		       "AND (path = ?4 OR (path > ?4 || '/' AND path < ?4 || "
		       "'0'))",
		       5, text, 1, ints);
}

int store_code_files_delete(struct store *st, const char *tenant,
			    const char *ns, const char *fn)
{
	const char *text[3] = { tenant, ns, fn };

	return run_sql(st,
		       "DELETE FROM code_files WHERE tenant = ?1 AND namespace "
		       "= ?2 AND function = ?3",
		       3, text, 0, NULL);
}

/* A shared store's code/ as the load callbacks want it. */
struct code_load {
	int (*file)(const struct store_code_file *, void *);
	int (*rev)(const struct store_code_revision *, void *);
	void *arg;
};

static int code_file_cb(const struct etcd_keys_rec *r, void *arg)
{
	struct code_load *x = arg;

	return x->file(&r->file, x->arg);
}

static int code_revision_cb(const struct etcd_keys_rec *r, void *arg)
{
	struct code_load *x = arg;

	return x->rev(&r->code, x->arg);
}

int store_code_file_load(struct store *st,
			 int (*fn)(const struct store_code_file *, void *),
			 void *arg)
{
	static const char sql[] =
		"SELECT tenant, namespace, function, path, mode, size, hash, "
		"mtime_ms FROM code_files ORDER BY tenant, namespace, "
		"function, path";
	struct code_load x = { fn, NULL, arg };
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (st->remote != NULL)
		return store_etcd_code_each(st->remote, ETCD_KEYS_CODE_FILE,
					    code_file_cb, &x);

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_code_file r = {
			col_text(q, 0),
			col_text(q, 1),
			col_text(q, 2),
			col_text(q, 3),
			(uint32_t)sqlite3_column_int64(q, 4),
			(uint64_t)sqlite3_column_int64(q, 5),
			col_text(q, 6),
			sqlite3_column_int64(q, 7),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store_code_revision_put(struct store *st,
			    const struct store_code_revision *r)
{
	const char *text[4] = { r->tenant, r->ns, r->fn, r->hash };
	long long ints[2] = { (long long)r->bytes, r->files };

	return run_sql(st,
		       "INSERT OR REPLACE INTO code_revisions(tenant, "
		       "namespace, function, hash, bytes, files) VALUES(?1, "
		       "?2, ?3, ?4, ?5, ?6)",
		       4, text, 2, ints);
}

int store_code_revision_delete(struct store *st, const char *tenant,
			       const char *ns, const char *fn)
{
	const char *text[3] = { tenant, ns, fn };

	return run_sql(st,
		       "DELETE FROM code_revisions WHERE tenant = ?1 AND "
		       "namespace = ?2 AND function = ?3",
		       3, text, 0, NULL);
}

int store_code_revision_load(struct store *st,
			     int (*fn)(const struct store_code_revision *,
				       void *),
			     void *arg)
{
	static const char sql[] = "SELECT tenant, namespace, function, hash, "
				  "bytes, files FROM code_revisions";
	struct code_load x = { NULL, fn, arg };
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (st->remote != NULL)
		return store_etcd_code_each(st->remote, ETCD_KEYS_CODE_REVISION,
					    code_revision_cb, &x);

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_code_revision r = {
			col_text(q, 0),
			col_text(q, 1),
			col_text(q, 2),
			col_text(q, 3),
			(uint64_t)sqlite3_column_int64(q, 4),
			sqlite3_column_int(q, 5),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store_revoked(struct store *st, const char *cn, const char *serial,
		  int64_t not_before_s)
{
	static const char sql[] =
		"SELECT 1 FROM revoked WHERE (serial <> '' AND serial = ?2) "
		"OR (worker = ?1 AND ?3 * 1000 <= revoked_ms) LIMIT 1";
	sqlite3_stmt *q = NULL;
	int step, rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(st, sql);
	sqlite3_bind_text(q, 1, cn, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, serial, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, not_before_s);
	step = sqlite3_step(q);
	rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -EIO;
	if (rc < 0)
		db_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

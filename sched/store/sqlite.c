/*
 * sqlite.c - the SQLite backend (store_ops.h): the database, its schema,
 * transactions, and the tenants, namespaces and functions; the other
 * tables are sqlite_tables.c.
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
#include "sqlite.h"

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

/* The errno of SQLite's last error: a full disk or database is ENOSPC,
 * anything else EIO. */
static int db_errno(struct store_sqlite *st)
{
	int e = sqlite3_errcode(st->db);

	return e == SQLITE_FULL ? -ENOSPC : -EIO;
}

int store__sqlite_fail(struct store_sqlite *st, const char *what)
{
	rt_log(RT_LOG_ERROR, "store: %s: %s", what, sqlite3_errmsg(st->db));
	return db_errno(st);
}

int store__sqlite_injected(struct store_sqlite *st)
{
	assert(st->fail_after >= -1);
	if (st->fail_after < 0)
		return 0;
	if (st->fail_after > 0) {
		st->fail_after--;
		return 0;
	}
	st->fail_after = -1;
	return st->fail_err;
}

static void inject_failure(struct store *s, int after, int err)
{
	struct store_sqlite *st = store__sqlite(s);

	st->fail_after = after;
	st->fail_err = err;
}

int store__sqlite_exec(struct store_sqlite *st, const char *sql)
{
	char *msg = NULL;
	int rc = strncmp(sql, "PRAGMA", 6) != 0 && strncmp(sql, "ROLLBACK", 8)
			 ? store__sqlite_injected(st)
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

static void sqlite_close(struct store *s);

int store_open(struct store **out, const char *path)
{
	struct store_sqlite *st = calloc(1, sizeof(*st));
	int i, rc = -ENOMEM;

	if (st == NULL)
		goto out;
	store__init(&st->base, &store__sqlite_ops);
	st->fail_after = -1;
	if (sqlite3_open_v2(path, &st->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = store__sqlite_fail(st, path);
		goto out;
	}
	/* Only fnfs writes this file; another process holding it (sqlite3 by
	 * hand) must not stall the loop for long. */
	sqlite3_busy_timeout(st->db, 100);
	rc = store__sqlite_exec(st, "PRAGMA journal_mode = WAL");
	if (rc == 0)
		rc = store__sqlite_exec(st, "PRAGMA synchronous = FULL");
	if (rc == 0)
		rc = store__sqlite_migrate(st);
	for (i = 0; i < ST_COUNT && rc == 0; i++)
		if (sqlite3_prepare_v3(st->db, sql_text[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
				       NULL) != SQLITE_OK)
			rc = store__sqlite_fail(st, sql_text[i]);
out:
	if (rc < 0 && st != NULL) {
		store_close(&st->base);
		st = NULL;
	}
	*out = st ? &st->base : NULL;
	return rc;
}

static void sqlite_close(struct store *s)
{
	struct store_sqlite *st = store__sqlite(s);
	int i;

	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	for (i = 0; i < STORE_CACHE; i++)
		sqlite3_finalize(st->cache[i]);
	sqlite3_close(st->db);
	free(st);
}

static void sqlite_stop(struct store *s)
{
	(void)s; /* nothing runs on the loop */
}

const char *store__sqlite_text(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : "";
}

static int sqlite_load(struct store *s,
		       int (*fn)(const struct store_row *, void *), void *arg)
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
	struct store_sqlite *st = store__sqlite(s);
	sqlite3_stmt *q = NULL;
	int k, step, rc = 0;

	for (k = 0; k < 3 && rc == 0; k++) {
		if (sqlite3_prepare_v2(st->db, q_text[k], -1, &q, NULL) !=
		    SQLITE_OK)
			return store__sqlite_fail(st, q_text[k]);
		while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
			struct store_row r = {
				.kind = (enum store_kind)k,
				.tenant = store__sqlite_text(q, 0),
				.ns = k >= 1 ? store__sqlite_text(q, 1) : NULL,
				.name = k >= 2 ? store__sqlite_text(q, 2)
					       : NULL,
				.created_ms = sqlite3_column_int64(q, 3),
				.updated_ms = sqlite3_column_int64(q, 4),
				.spec = k >= 2 ? store__sqlite_text(q, 5)
					       : NULL,
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
			rc = store__sqlite_fail(st, "load");
		sqlite3_finalize(q);
		q = NULL;
	}
	return rc;
}

/* ========================================================= transactions */

/* Transactions nest (store.c): the outermost is a real transaction,
 * inner ones are savepoints. A derived one does not wait for the disk. */
static int sqlite_begin(struct store *s, int derived)
{
	struct store_sqlite *st = store__sqlite(s);
	char sql[32];
	int rc;

	assert(!st->relaxed || s->depth > 0);
	if (derived) {
		assert(s->depth == 0);
		rc = store__sqlite_exec(st, "PRAGMA synchronous = NORMAL");
		if (rc < 0)
			return rc;
	}
	if (s->depth == 0)
		rc = store__sqlite_exec(st, "BEGIN IMMEDIATE");
	else {
		snprintf(sql, sizeof(sql), "SAVEPOINT sp%d", s->depth);
		rc = store__sqlite_exec(st, sql);
	}
	if (rc == 0 && derived)
		st->relaxed = 1;
	else if (derived)
		store__sqlite_exec(st, "PRAGMA synchronous = FULL");
	return rc;
}

/* Puts durability back after a derived transaction. */
static void unrelax(struct store_sqlite *st)
{
	if (st->relaxed) {
		st->relaxed = 0;
		store__sqlite_exec(st, "PRAGMA synchronous = FULL");
	}
}

static int sqlite_commit(struct store *s)
{
	struct store_sqlite *st = store__sqlite(s);
	char sql[32];
	int rc;

	assert(s->depth >= 1);
	if (s->depth == 1) {
		rc = store__sqlite_exec(st, "COMMIT");
		if (rc == 0)
			unrelax(st);
		return rc; /* a failure: the front rolls back */
	}
	snprintf(sql, sizeof(sql), "RELEASE sp%d", s->depth - 1);
	return store__sqlite_exec(st, sql);
}

static void sqlite_rollback(struct store *s)
{
	struct store_sqlite *st = store__sqlite(s);
	char sql[64];

	assert(s->depth >= 1);
	if (s->depth == 1) {
		if (!sqlite3_get_autocommit(st->db))
			store__sqlite_exec(st, "ROLLBACK");
		unrelax(st);
		return;
	}
	snprintf(sql, sizeof(sql), "ROLLBACK TO sp%d; RELEASE sp%d",
		 s->depth - 1, s->depth - 1);
	store__sqlite_exec(st, sql);
}

/* SQLite commits at once: the listener has the changes when this
 * returns, and `done` is never called. */
static int sqlite_commit_then(struct store *s, store_done_fn done, void *arg)
{
	(void)done;
	(void)arg;
	return store_commit(s);
}

/* ============================================ tenants, namespaces, functions
 */

/* Binds the row to the statement's numbered parameters and runs it. */
static int run(struct store_sqlite *st, int which, const struct store_row *r)
{
	sqlite3_stmt *q;
	int step;

	assert(which >= 0 && which < ST_COUNT && st->stmt[which] != NULL);
	q = st->stmt[which];
	step = store__sqlite_injected(st);
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
		return store__sqlite_fail(st, sql_text[which]);
	if (sqlite3_changes(st->db) == 0)
		return -ENOENT;
	return 0;
}

/* Runs a change of a tenant, namespace or function and stages it for the
 * listener. */
static int sqlite_change(struct store *s, enum store_op op,
			 const struct store_row *r)
{
	struct store_sqlite *st = store__sqlite(s);
	int which, rc;

	assert(r->kind >= STORE_TENANT && r->kind <= STORE_FUNCTION);
	which = op == STORE_INSERT   ? ST_INS_T + (int)r->kind
		: op == STORE_UPDATE ? ST_UPD_T + (int)r->kind
		: op == STORE_DELETE ? ST_DEL_T + (int)r->kind
				     : ST_OWN_T;
	rc = run(st, which, r);
	if (rc == 0)
		rc = staged_add(&s->staged, op, r);
	if (rc == 0 && s->depth == 0)
		store__announce(s); /* outside a transaction: committed */
	return rc;
}

static int sqlite_function_code(struct store *s, const struct store_row *r)
{
	return run(store__sqlite(s), ST_UPD_F, r);
}

/* ===================================================== alone, not shared */

static int sqlite_shared_state(const struct store *s, int64_t *revision,
			       int *watching, int64_t *stale_since,
			       const char **endpoint, const char **error)
{
	(void)s;
	(void)revision;
	(void)watching;
	(void)stale_since;
	(void)endpoint;
	(void)error;
	return -ENOENT;
}

static void sqlite_mirror_start(struct store *s,
				int (*fence)(void *arg, struct etcd_cmp *out),
				void (*deposed)(void *arg), void *arg,
				int64_t term)
{
	(void)s;
	(void)fence;
	(void)deposed;
	(void)arg;
	(void)term;
}

static void sqlite_mirror_stop(struct store *s)
{
	(void)s;
}

static size_t sqlite_mirror_pending(const struct store *s)
{
	(void)s;
	return 0;
}

/* Nothing is mirrored: nothing to wait for. */
static int sqlite_mirror_flush(struct store *s, store_done_fn done, void *arg)
{
	(void)s;
	(void)done;
	(void)arg;
	return 0;
}

static int sqlite_barrier(struct store *s, store_done_fn done, void *arg)
{
	(void)s;
	(void)done;
	(void)arg;
	return -ENOENT;
}

static struct etcd_client *sqlite_client(struct store *s)
{
	(void)s;
	return NULL;
}

static const char *sqlite_cluster(const struct store *s)
{
	(void)s;
	return NULL;
}

/* Nothing comes from elsewhere: the listeners are never called. */
static void sqlite_derived_listen(struct store *s, store_derived_fn fn,
				  void *arg)
{
	(void)s;
	(void)fn;
	(void)arg;
}

static void sqlite_code_listen(struct store *s, store_code_fn fn, void *arg)
{
	(void)s;
	(void)fn;
	(void)arg;
}

static int sqlite_code_submit(struct store *s, const struct store_row *fn,
			      const struct store_code_op *v, size_t n,
			      store_done_fn done, void *arg)
{
	(void)s;
	(void)fn;
	(void)v;
	(void)n;
	(void)done;
	(void)arg;
	return -ENOTSUP;
}

static int sqlite_object_known(struct store *s, const char *hash,
			       uint64_t *size)
{
	(void)s;
	(void)hash;
	(void)size;
	return -ENOTSUP;
}

sqlite3 *store_db(struct store *s)
{
	return store__sqlite(s)->db;
}

int store_sqlite_forget_derived(struct store *s)
{
	return store__sqlite_exec(store__sqlite(s),
				  "DELETE FROM instances; DELETE FROM workers; "
				  "DELETE FROM settings; DELETE FROM revoked");
}

const struct store_ops store__sqlite_ops = {
	.name = "sqlite",
	.shared = 0,
	.close = sqlite_close,
	.stop = sqlite_stop,
	.load = sqlite_load,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.commit_then = sqlite_commit_then,
	.change = sqlite_change,
	.function_code = sqlite_function_code,
	.inject_failure = inject_failure,
	.shared_state = sqlite_shared_state,
	.mirror_start = sqlite_mirror_start,
	.mirror_stop = sqlite_mirror_stop,
	.mirror_pending = sqlite_mirror_pending,
	.mirror_flush = sqlite_mirror_flush,
	.barrier = sqlite_barrier,
	.client = sqlite_client,
	.cluster = sqlite_cluster,
	.derived_listen = sqlite_derived_listen,
	.code_listen = sqlite_code_listen,
	.code_submit = sqlite_code_submit,
	.object_known = sqlite_object_known,
	.instance_put = store__sqlite_instance_put,
	.instance_publish = store__sqlite_instance_publish,
	.worker_publish = store__sqlite_worker_publish,
	.instance_delete = store__sqlite_instance_delete,
	.instance_load = store__sqlite_instance_load,
	.worker_put = store__sqlite_worker_put,
	.worker_delete = store__sqlite_worker_delete,
	.worker_load = store__sqlite_worker_load,
	.setting_put = store__sqlite_setting_put,
	.setting_delete = store__sqlite_setting_delete,
	.setting_get = store__sqlite_setting_get,
	.setting_each = store__sqlite_setting_each,
	.revoke = store__sqlite_revoke,
	.revoked = store__sqlite_revoked,
	.code_file_put = store__sqlite_code_file_put,
	.code_file_delete = store__sqlite_code_file_delete,
	.code_file_rename = store__sqlite_code_file_rename,
	.code_files_delete = store__sqlite_code_files_delete,
	.code_file_load = store__sqlite_code_file_load,
	.code_revision_put = store__sqlite_code_revision_put,
	.code_revision_delete = store__sqlite_code_revision_delete,
	.code_revision_load = store__sqlite_code_revision_load,
};

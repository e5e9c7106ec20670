/*
 * sqlite_tables.c - the SQLite backend's tables beside the rows of
 * tenants, namespaces and functions (sqlite.c): instances (desired state
 * and assignment), known workers, settings, revoked certificates, and
 * the code/ of functions (its entries and revisions).
 */
#include <assert.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/base/rt.h"
#include "sqlite.h"

int store__sqlite_run(struct store_sqlite *st, const char *sql, int ntext,
		      const char *const *text, int nint, const long long *ints)
{
	sqlite3_stmt *q = NULL;
	int i, step, rc = store__sqlite_injected(st);

	assert(ntext >= 0 && nint >= 0 && (nint == 0 || ints != NULL));
	if (rc < 0)
		return rc;
	for (i = 0; i < STORE_CACHE && st->cache_sql[i] != NULL; i++)
		if (st->cache_sql[i] == sql) {
			q = st->cache[i];
			break;
		}
	assert(i == STORE_CACHE || st->cache_sql[i] == NULL ||
	       st->cache_sql[i] == sql);
	if (q == NULL) {
		if (sqlite3_prepare_v3(st->db, sql, -1,
				       SQLITE_PREPARE_PERSISTENT, &q,
				       NULL) != SQLITE_OK)
			return store__sqlite_fail(st, sql);
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
		rc = store__sqlite_fail(st, sql);
	sqlite3_reset(q);
	for (i = 0; i < STORE_CACHE; i++)
		if (st->cache[i] == q)
			return rc;
	sqlite3_finalize(q); /* the cache was full */
	return rc;
}

int store__sqlite_instance_put(struct store *s, const struct store_instance *r)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[4] = { r->tenant, r->ns, r->fn, r->worker };
	long long ints[3] = { r->n, r->desired_run, (long long)r->epoch };
	return store__sqlite_run(
		st,
		"INSERT OR REPLACE INTO instances(tenant, namespace, "
		"function, worker, n, desired, epoch) VALUES(?1, ?2, "
		"?3, ?4, ?5, ?6, ?7)",
		4, text, 3, ints);
}

/* Only a cluster's leader tells others what it knows of an instance. */
int store__sqlite_instance_publish(struct store *s,
				   const struct store_instance *r)
{
	(void)s;
	(void)r;
	return 0;
}

/* Nor of a worker. */
int store__sqlite_worker_publish(struct store *s, const struct store_worker *r)
{
	(void)s;
	(void)r;
	return 0;
}

int store__sqlite_instance_delete(struct store *s, const char *tenant,
				  const char *ns, const char *fn, int n)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[3] = { tenant, ns, fn };
	long long ints[1] = { n };
	return store__sqlite_run(st,
				 "DELETE FROM instances WHERE tenant = ?1 AND "
				 "namespace = ?2 AND function = ?3 AND n = ?4",
				 3, text, 1, ints);
}

int store__sqlite_instance_load(struct store *s,
				int (*fn)(const struct store_instance *,
					  void *),
				void *arg)
{
	struct store_sqlite *st = store__sqlite(s);
	static const char sql[] =
		"SELECT tenant, namespace, function, n, "
		"desired, worker, epoch FROM instances ORDER BY "
		"tenant, namespace, function, n";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_instance r = {
			.tenant = store__sqlite_text(q, 0),
			.ns = store__sqlite_text(q, 1),
			.fn = store__sqlite_text(q, 2),
			.n = sqlite3_column_int(q, 3),
			.desired_run = sqlite3_column_int(q, 4),
			.worker = sqlite3_column_type(q, 5) == SQLITE_NULL
					  ? NULL
					  : store__sqlite_text(q, 5),
			.epoch = (uint64_t)sqlite3_column_int64(q, 6),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store__sqlite_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_worker_put(struct store *s, const struct store_worker *r)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[3] = { r->id, r->tags, r->namespaces };
	long long ints[3] = { r->memory_mb, r->local, r->drained };
	return store__sqlite_run(
		st,
		"INSERT OR REPLACE INTO workers(id, tags, namespaces, "
		"memory, local, drained) VALUES(?1, ?2, ?3, ?4, ?5, "
		"?6)",
		3, text, 3, ints);
}

int store__sqlite_worker_delete(struct store *s, const char *id)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[1] = { id };
	return store__sqlite_run(st, "DELETE FROM workers WHERE id = ?1", 1,
				 text, 0, NULL);
}

int store__sqlite_worker_load(struct store *s,
			      int (*fn)(const struct store_worker *, void *),
			      void *arg)
{
	struct store_sqlite *st = store__sqlite(s);
	static const char sql[] = "SELECT id, memory, tags, namespaces, local, "
				  "drained FROM workers ORDER BY id";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_worker r = {
			.id = store__sqlite_text(q, 0),
			.memory_mb = sqlite3_column_int(q, 1),
			.tags = store__sqlite_text(q, 2),
			.namespaces = store__sqlite_text(q, 3),
			.local = sqlite3_column_int(q, 4),
			.drained = sqlite3_column_int(q, 5),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store__sqlite_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_setting_put(struct store *s, const char *key,
			      const char *value)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[2] = { key, value };
	return store__sqlite_run(st,
				 "INSERT OR REPLACE INTO settings(key, value) "
				 "VALUES(?1, ?2)",
				 2, text, 0, NULL);
}

int store__sqlite_setting_delete(struct store *s, const char *key)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[1] = { key };
	return store__sqlite_run(st, "DELETE FROM settings WHERE key = ?1", 1,
				 text, 0, NULL);
}

int store__sqlite_setting_each(struct store *s, const char *prefix,
			       int (*fn)(const char *key, void *arg), void *arg)
{
	struct store_sqlite *st = store__sqlite(s);
	sqlite3_stmt *q = NULL;
	int rc = 0, step;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT key FROM settings WHERE substr(key, 1, "
			       "length(?1)) = ?1 ORDER BY key",
			       -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, "settings");
	sqlite3_bind_text(q, 1, prefix, -1, SQLITE_STATIC);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW)
		rc = fn(store__sqlite_text(q, 0), arg);
	if (rc == 0 && step != SQLITE_DONE)
		rc = store__sqlite_fail(st, "settings");
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_setting_get(struct store *s, const char *key, char *out,
			      size_t n)
{
	struct store_sqlite *st = store__sqlite(s);
	sqlite3_stmt *q = NULL;
	int rc = -ENOENT;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT value FROM settings WHERE key = ?1", -1,
			       &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, "settings");
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW) {
		snprintf(out, n, "%s", store__sqlite_text(q, 0));
		rc = 0;
	}
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_revoke(struct store *s, const char *worker,
			 const char *serial, int64_t revoked_ms)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[2] = { worker, serial ? serial : "" };
	long long ints[1] = { revoked_ms };
	return store__sqlite_run(
		st,
		"INSERT OR REPLACE INTO revoked(worker, serial, "
		"revoked_ms) VALUES(?1, ?2, ?3)",
		2, text, 1, ints);
}

/* ================================================================ code/ */

int store__sqlite_code_file_put(struct store *s,
				const struct store_code_file *r)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[5] = { r->tenant, r->ns, r->fn, r->path,
				r->hash ? r->hash : "" };
	long long ints[3] = { r->mode, (long long)r->size, r->mtime_ms };

	return store__sqlite_run(
		st,
		"INSERT OR REPLACE INTO code_files(tenant, namespace, "
		"function, path, hash, mode, size, mtime_ms) VALUES(?1, "
		"?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		5, text, 3, ints);
}

int store__sqlite_code_file_delete(struct store *s, const char *tenant,
				   const char *ns, const char *fn,
				   const char *path)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[4] = { tenant, ns, fn, path };

	return store__sqlite_run(
		st,
		"DELETE FROM code_files WHERE tenant = ?1 AND namespace "
		"= ?2 AND function = ?3 AND path = ?4",
		4, text, 0, NULL);
}

int store__sqlite_code_file_rename(struct store *s, const char *tenant,
				   const char *ns, const char *fn,
				   const char *from, const char *to)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[5] = { tenant, ns, fn, from, to };
	long long ints[1] = { (long long)strlen(from) + 1 };

	return store__sqlite_run(
		st,
		"UPDATE code_files SET path = ?5 || substr(path, ?6) "
		"WHERE tenant = ?1 AND namespace = ?2 AND function = ?3 "
		"AND (path = ?4 OR (path > ?4 || '/' AND path < ?4 || "
		"'0'))",
		5, text, 1, ints);
}

int store__sqlite_code_files_delete(struct store *s, const char *tenant,
				    const char *ns, const char *fn)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[3] = { tenant, ns, fn };

	return store__sqlite_run(
		st,
		"DELETE FROM code_files WHERE tenant = ?1 AND namespace "
		"= ?2 AND function = ?3",
		3, text, 0, NULL);
}

int store__sqlite_code_file_load(struct store *s,
				 int (*fn)(const struct store_code_file *,
					   void *),
				 void *arg)
{
	struct store_sqlite *st = store__sqlite(s);
	static const char sql[] =
		"SELECT tenant, namespace, function, path, mode, size, hash, "
		"mtime_ms FROM code_files ORDER BY tenant, namespace, "
		"function, path";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_code_file r = {
			store__sqlite_text(q, 0),
			store__sqlite_text(q, 1),
			store__sqlite_text(q, 2),
			store__sqlite_text(q, 3),
			(uint32_t)sqlite3_column_int64(q, 4),
			(uint64_t)sqlite3_column_int64(q, 5),
			store__sqlite_text(q, 6),
			sqlite3_column_int64(q, 7),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store__sqlite_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_code_revision_put(struct store *s,
				    const struct store_code_revision *r)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[4] = { r->tenant, r->ns, r->fn, r->hash };
	long long ints[2] = { (long long)r->bytes, r->files };

	return store__sqlite_run(
		st,
		"INSERT OR REPLACE INTO code_revisions(tenant, "
		"namespace, function, hash, bytes, files) VALUES(?1, "
		"?2, ?3, ?4, ?5, ?6)",
		4, text, 2, ints);
}

int store__sqlite_code_revision_delete(struct store *s, const char *tenant,
				       const char *ns, const char *fn)
{
	struct store_sqlite *st = store__sqlite(s);
	const char *text[3] = { tenant, ns, fn };

	return store__sqlite_run(
		st,
		"DELETE FROM code_revisions WHERE tenant = ?1 AND "
		"namespace = ?2 AND function = ?3",
		3, text, 0, NULL);
}

int store__sqlite_code_revision_load(
	struct store *s, int (*fn)(const struct store_code_revision *, void *),
	void *arg)
{
	struct store_sqlite *st = store__sqlite(s);
	static const char sql[] = "SELECT tenant, namespace, function, hash, "
				  "bytes, files FROM code_revisions";
	sqlite3_stmt *q = NULL;
	int step, rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, sql);
	while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_code_revision r = {
			store__sqlite_text(q, 0),
			store__sqlite_text(q, 1),
			store__sqlite_text(q, 2),
			store__sqlite_text(q, 3),
			(uint64_t)sqlite3_column_int64(q, 4),
			sqlite3_column_int(q, 5),
		};
		rc = fn(&r, arg);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = store__sqlite_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_revoked(struct store *s, const char *cn, const char *serial,
			  int64_t not_before_s)
{
	struct store_sqlite *st = store__sqlite(s);
	static const char sql[] =
		"SELECT 1 FROM revoked WHERE (serial <> '' AND serial = ?2) "
		"OR (worker = ?1 AND ?3 * 1000 <= revoked_ms) LIMIT 1";
	sqlite3_stmt *q = NULL;
	int step, rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, sql);
	sqlite3_bind_text(q, 1, cn, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, serial, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, not_before_s);
	step = sqlite3_step(q);
	rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -EIO;
	if (rc < 0)
		store__sqlite_fail(st, sql);
	sqlite3_finalize(q);
	return rc;
}

int store_sqlite_unrevoke(struct store *s, const char *worker,
			  const char *serial)
{
	const char *text[2] = { worker, serial };

	return store__sqlite_run(store__sqlite(s),
				 "DELETE FROM revoked WHERE worker = ?1 "
				 "AND serial = ?2",
				 2, text, 0, NULL);
}

/*
 * sqlite_schema.c - the SQLite backend's schema (sqlite.h): each version's
 * tables, and the migration of an older database to this fnfs's
 * STORE_SCHEMA_VERSION when it is opened.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

#include "../../runtime/base/rt.h"
#include "sqlite.h"

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

static int user_version(struct store_sqlite *st, int *v)
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
	return rc < 0 ? store__sqlite_fail(st, "user_version") : 0;
}

/* Whether `table` has a column `col` (a migration that adds one is then
 * done already). Returns 1, 0 or -EIO. */
static int has_column(struct store_sqlite *st, const char *table,
		      const char *col)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, step;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT 1 FROM pragma_table_info(?1) WHERE "
			       "name = ?2",
			       -1, &q, NULL) != SQLITE_OK)
		return store__sqlite_fail(st, "table_info");
	sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, col, -1, SQLITE_STATIC);
	step = sqlite3_step(q);
	if (step == SQLITE_ROW)
		rc = 1;
	else if (step != SQLITE_DONE)
		rc = store__sqlite_fail(st, "table_info");
	sqlite3_finalize(q);
	return rc;
}

int store__sqlite_migrate(struct store_sqlite *st)
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
	rc = store__sqlite_exec(st, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	if (v < 1)
		rc = store__sqlite_exec(st, schema_v1);
	if (rc == 0 && v < 2)
		rc = store__sqlite_exec(st, schema_v2);
	if (rc == 0 && v < 3)
		rc = store__sqlite_exec(st, schema_v3);
	if (rc == 0 && v < 4)
		rc = store__sqlite_exec(st, schema_v4);
	if (rc == 0 && v < 5)
		rc = store__sqlite_exec(st, schema_v5);
	if (rc == 0 && v < 6)
		rc = store__sqlite_exec(st, schema_v6);
	if (rc == 0 && v < 7) {
		rc = has_column(st, "instances", "epoch");
		if (rc == 0)
			rc = store__sqlite_exec(st, schema_v7);
		else if (rc > 0)
			rc = 0;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 STORE_SCHEMA_VERSION);
	if (rc == 0)
		rc = store__sqlite_exec(st, sql);
	if (rc == 0)
		rc = store__sqlite_exec(st, "COMMIT");
	if (rc < 0)
		store__sqlite_exec(st, "ROLLBACK");
	return rc;
}

/*
 * sqlite.h - the SQLite backend (private to sched/store/): its store,
 * the helpers its files share, and what the rest of sched/store/ may ask
 * of a SQLite store beyond store.h: its connection (for fnfs store export
 * and import, dump.c, and tests) and the shared store's upkeep of its
 * local tables.
 *
 * sqlite.c: open, transactions, tenants, namespaces, functions.
 * sqlite_schema.c: the tables of each version, the migration.
 * sqlite_tables.c: instances, workers, settings, revocations, code/.
 */
#ifndef FNFS_SCHED_STORE_SQLITE_H
#define FNFS_SCHED_STORE_SQLITE_H

#include <assert.h>
#include <sqlite3.h>

#include "store_ops.h"

/* Statements of store__sqlite_run, prepared once: keyed by the address of
 * their (static) text. */
#define STORE_CACHE 16

/* The row statements, prepared at open (sqlite.c). */
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

struct store_sqlite {
	struct store base; /* first: a struct store * is one of these */
	int relaxed;	   /* the open transaction is derived */
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT]; /* prepared on open */
	const char *cache_sql[STORE_CACHE];
	sqlite3_stmt *cache[STORE_CACHE];
	int fail_after; /* writes before an injected failure; -1: none */
	int fail_err;	/* the -errno it gives */
};

/* The SQLite store `st` is. */
static inline struct store_sqlite *store__sqlite(struct store *st)
{
	assert(st->ops == &store__sqlite_ops);
	return (struct store_sqlite *)st;
}

/* Logs SQLite's last error with `what`; returns -ENOSPC for a full disk
 * or database, else -EIO. */
int store__sqlite_fail(struct store_sqlite *q, const char *what);

/* The failure injected by store_inject_failure when it is due now (a
 * -errno), else 0. */
int store__sqlite_injected(struct store_sqlite *q);

/* Prepares (once, cached), binds `ntext` text parameters (NULL binds
 * NULL) then `nint` integers, and steps `sql` once. Returns 0 or -EIO,
 * -ENOSPC. */
int store__sqlite_run(struct store_sqlite *q, const char *sql, int ntext,
		      const char *const *text, int nint, const long long *ints);

/* Runs `sql` (statements without parameters), logging a failure.
 * Returns 0 or -EIO, -ENOSPC, or the failure store_inject_failure set
 * (not for PRAGMA and ROLLBACK). */
int store__sqlite_exec(struct store_sqlite *q, const char *sql);

/* Brings the schema of a database just opened up to
 * STORE_SCHEMA_VERSION in one transaction (sqlite_schema.c). Returns 0,
 * -EPROTO (written by a newer fnfs, logged) or -EIO, -ENOSPC. */
int store__sqlite_migrate(struct store_sqlite *q);

/* Column `i` of a row as text ("" for NULL). */
const char *store__sqlite_text(sqlite3_stmt *q, int i);

/* The operations of sqlite_tables.c, for the table in sqlite.c. */
int store__sqlite_instance_put(struct store *st,
			       const struct store_instance *r);
int store__sqlite_instance_publish(struct store *st,
				   const struct store_instance *r);
int store__sqlite_worker_publish(struct store *st,
				 const struct store_worker *r);
int store__sqlite_instance_delete(struct store *st, const char *tenant,
				  const char *ns, const char *fn, int n);
int store__sqlite_instance_load(struct store *st,
				int (*fn)(const struct store_instance *,
					  void *),
				void *arg);
int store__sqlite_worker_put(struct store *st, const struct store_worker *r);
int store__sqlite_worker_delete(struct store *st, const char *id);
int store__sqlite_worker_load(struct store *st,
			      int (*fn)(const struct store_worker *, void *),
			      void *arg);
int store__sqlite_setting_put(struct store *st, const char *key,
			      const char *value);
int store__sqlite_setting_delete(struct store *st, const char *key);
int store__sqlite_setting_get(struct store *st, const char *key, char *out,
			      size_t n);
int store__sqlite_setting_each(struct store *st, const char *prefix,
			       int (*fn)(const char *key, void *arg),
			       void *arg);
int store__sqlite_revoke(struct store *st, const char *worker,
			 const char *serial, int64_t revoked_ms);
int store__sqlite_revoked(struct store *st, const char *cn, const char *serial,
			  int64_t not_before_s);
int store__sqlite_code_file_put(struct store *st,
				const struct store_code_file *r);
int store__sqlite_code_file_delete(struct store *st, const char *tenant,
				   const char *ns, const char *fn,
				   const char *path);
int store__sqlite_code_file_rename(struct store *st, const char *tenant,
				   const char *ns, const char *fn,
				   const char *from, const char *to);
int store__sqlite_code_files_delete(struct store *st, const char *tenant,
				    const char *ns, const char *fn);
int store__sqlite_code_file_load(struct store *st,
				 int (*fn)(const struct store_code_file *,
					   void *),
				 void *arg);
int store__sqlite_code_revision_put(struct store *st,
				    const struct store_code_revision *r);
int store__sqlite_code_revision_delete(struct store *st, const char *tenant,
				       const char *ns, const char *fn);
int store__sqlite_code_revision_load(
	struct store *st, int (*fn)(const struct store_code_revision *, void *),
	void *arg);

/* The connection of SQLite store `st`, for fnfs store export and import
 * (dump.c) and tests; the daemon goes through store.h. */
sqlite3 *store_db(struct store *st);

/* A shared store's local tables (etcd/shared.c), on its SQLite store
 * `st`: deletes every instance, worker, setting and revocation (etcd's
 * load puts them back). Returns 0 or -EIO, -ENOSPC. */
int store_sqlite_forget_derived(struct store *st);

/* Deletes the revocation of `worker` with `serial` ("" for none known).
 * Returns 0 or -EIO, -ENOSPC. */
int store_sqlite_unrevoke(struct store *st, const char *worker,
			  const char *serial);

#endif

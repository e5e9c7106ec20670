/*
 * dump_etcd.c - a dump into a cluster's keys in etcd and back
 * (dump_etcd.h), through a data directory in a temporary directory: the
 * dump is imported there (dump.c: every check), its rows and objects are
 * read from there and written to etcd; an export fills one there from
 * etcd and dumps it (dump.c again).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <sqlite3.h>

#include "../dump.h"
#include "dump_etcd.h"
#include "etcd_keys.h"
#include "etcd_sync.h"
#include "../sqlite.h"
#include "../store.h"
#include "dump_etcd_internal.h"

/* ===================================================== temporary dirs */

static int rm_entry(const char *p, const struct stat *sb, int flag,
		    struct FTW *f)
{
	(void)sb;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* Makes a temporary directory `tmp` ($TMPDIR or /tmp) and in it the data
 * directory `data`. */
int dump_etcd__make_tmp(struct rt_buf *tmp, struct rt_buf *data,
			struct rt_buf *why)
{
	const char *dir = getenv("TMPDIR");

	rt_buf_printf(tmp, "%s/fnfs-store.XXXXXX",
		      dir != NULL && dir[0] == '/' ? dir : "/tmp");
	if (tmp->data == NULL || mkdtemp(tmp->data) == NULL) {
		rt_buf_printf(why, "cannot make a temporary directory: %s",
			      strerror(errno));
		rt_buf_reset(tmp);
		return -EIO;
	}
	return rt_buf_printf(data, "%s/data", tmp->data);
}

/* Removes the temporary directory `tmp` and everything in it. */
void dump_etcd__remove_tmp(struct rt_buf *tmp)
{
	if (tmp->data != NULL && tmp->len > 0)
		nftw(tmp->data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ================================================= the tables of etcd */

/* The tables the layout holds, with their columns (as SELECT reads them;
 * the store's schema has exactly these, checked). */
static const struct table {
	const char *name;
	const char *select;
	int columns;
	enum etcd_keys_kind kind;
} tables[] = {
	{ "tenants",
	  "SELECT name, created_ms, updated_ms, uid, gid, mode FROM tenants", 6,
	  ETCD_KEYS_TENANT },
	{ "namespaces",
	  "SELECT tenant, name, created_ms, updated_ms FROM namespaces", 4,
	  ETCD_KEYS_NAMESPACE },
	{ "functions",
	  "SELECT tenant, namespace, name, created_ms, updated_ms, spec, "
	  "revision, run_revision FROM functions",
	  8, ETCD_KEYS_FUNCTION },
	{ "instances",
	  "SELECT tenant, namespace, function, n, desired, worker, epoch FROM "
	  "instances",
	  7, ETCD_KEYS_INSTANCE },
	{ "workers",
	  "SELECT id, memory, tags, namespaces, local, drained FROM workers", 6,
	  ETCD_KEYS_WORKER },
	{ "settings", "SELECT key, value FROM settings", 2, ETCD_KEYS_SETTING },
	{ "revoked", "SELECT worker, serial, revoked_ms FROM revoked", 3,
	  ETCD_KEYS_REVOKED },
	{ "code_files",
	  "SELECT tenant, namespace, function, path, mode, size, hash, "
	  "mtime_ms FROM code_files",
	  8, ETCD_KEYS_CODE_FILE },
	{ "code_revisions",
	  "SELECT tenant, namespace, function, hash, bytes, files FROM "
	  "code_revisions",
	  6, ETCD_KEYS_CODE_REVISION },
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

int dump_etcd__sql_fail(sqlite3 *db, struct rt_buf *why, const char *what)
{
	rt_buf_printf(why, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
	return -EIO;
}

/* How many columns table `t` of `db` has (0: no such table). */
static int column_count(sqlite3 *db, const char *t)
{
	sqlite3_stmt *q = NULL;
	char sql[96];
	int n = 0;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(\"%s\")", t);
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK)
		while (sqlite3_step(q) == SQLITE_ROW)
			n++;
	sqlite3_finalize(q);
	return n;
}

/* Checks that the store's tables are the layout's, column for column, so
 * that nothing of a store is left out of etcd. */
static int check_schema(sqlite3 *db, struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	size_t i;
	int rc = 0, n = 0;

	for (i = 0; i < NTABLES && rc == 0; i++)
		if (column_count(db, tables[i].name) != tables[i].columns) {
			rt_buf_printf(why,
				      "table %s has columns the etcd layout "
				      "does not know",
				      tables[i].name);
			rc = -EPROTO;
		}
	if (rc == 0 &&
	    sqlite3_prepare_v2(db,
			       "SELECT count(*) FROM sqlite_master WHERE type "
			       "= 'table' AND name NOT LIKE 'sqlite_%'",
			       -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	if (rc == 0 && n != (int)NTABLES) {
		rt_buf_printf(why,
			      "the store has %d tables, the etcd layout %d", n,
			      (int)NTABLES);
		rc = -EPROTO;
	}
	return rc;
}

static const char *col_text(sqlite3_stmt *q, int i)
{
	return (const char *)sqlite3_column_text(q, i);
}

/* Fills `r` from the current row of table `t`'s SELECT (strings point
 * into the statement's row). */
static void rec_from_row(const struct table *t, sqlite3_stmt *q,
			 struct etcd_keys_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->kind = t->kind;
	switch (t->kind) {
	case ETCD_KEYS_TENANT:
		r->row = (struct store_row){
			.kind = STORE_TENANT,
			.tenant = col_text(q, 0),
			.created_ms = sqlite3_column_int64(q, 1),
			.updated_ms = sqlite3_column_int64(q, 2),
			.uid = (uint32_t)sqlite3_column_int64(q, 3),
			.gid = (uint32_t)sqlite3_column_int64(q, 4),
			.mode = (uint32_t)sqlite3_column_int64(q, 5),
		};
		break;
	case ETCD_KEYS_NAMESPACE:
		r->row = (struct store_row){
			.kind = STORE_NAMESPACE,
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.created_ms = sqlite3_column_int64(q, 2),
			.updated_ms = sqlite3_column_int64(q, 3),
		};
		break;
	case ETCD_KEYS_FUNCTION:
		r->row = (struct store_row){
			.kind = STORE_FUNCTION,
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.name = col_text(q, 2),
			.created_ms = sqlite3_column_int64(q, 3),
			.updated_ms = sqlite3_column_int64(q, 4),
			.spec = col_text(q, 5),
			.revision = (uint64_t)sqlite3_column_int64(q, 6),
			.run_revision = (uint64_t)sqlite3_column_int64(q, 7),
		};
		break;
	case ETCD_KEYS_INSTANCE:
		r->instance = (struct store_instance){
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.fn = col_text(q, 2),
			.n = sqlite3_column_int(q, 3),
			.desired_run = sqlite3_column_int(q, 4),
			.worker = col_text(q, 5),
			.epoch = (uint64_t)sqlite3_column_int64(q, 6),
		};
		break;
	case ETCD_KEYS_WORKER:
		r->worker = (struct store_worker){
			.id = col_text(q, 0),
			.memory_mb = sqlite3_column_int(q, 1),
			.tags = col_text(q, 2),
			.namespaces = col_text(q, 3),
			.local = sqlite3_column_int(q, 4),
			.drained = sqlite3_column_int(q, 5),
		};
		break;
	case ETCD_KEYS_SETTING:
		r->key = col_text(q, 0);
		r->value = col_text(q, 1);
		break;
	case ETCD_KEYS_REVOKED:
		r->revoked = (struct etcd_keys_revoked){
			col_text(q, 0), col_text(q, 1),
			sqlite3_column_int64(q, 2)
		};
		break;
	case ETCD_KEYS_CODE_FILE:
		r->file = (struct store_code_file){
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.fn = col_text(q, 2),
			.path = col_text(q, 3),
			.mode = (uint32_t)sqlite3_column_int64(q, 4),
			.size = (uint64_t)sqlite3_column_int64(q, 5),
			.hash = col_text(q, 6),
			.mtime_ms = sqlite3_column_int64(q, 7),
		};
		break;
	default:
		r->code = (struct store_code_revision){
			.tenant = col_text(q, 0),
			.ns = col_text(q, 1),
			.fn = col_text(q, 2),
			.hash = col_text(q, 3),
			.bytes = (uint64_t)sqlite3_column_int64(q, 4),
			.files = sqlite3_column_int(q, 5),
		};
	}
}

void dump_etcd__kvlist_free(struct kvlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		rt_buf_free(&l->k[i]);
		rt_buf_free(&l->v[i]);
	}
	free(l->k);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* A new empty pair at the end of `l`, or NULL. */
static struct kvlist *kvlist_grow(struct kvlist *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct rt_buf *k = realloc(l->k, cap * sizeof(*k)),
			      *v = k ? realloc(l->v, cap * sizeof(*v)) : NULL;

		if (k != NULL)
			l->k = k;
		if (v == NULL)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	memset(&l->k[l->n], 0, sizeof(l->k[0]));
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	l->n++;
	return l;
}

/* Encodes every row of the store `db` into `l`, in the order of
 * `tables`: all of them, before anything is written. */
int dump_etcd__encode_rows(sqlite3 *db, const char *cluster, struct kvlist *l,
			   struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	size_t i;
	int rc = check_schema(db, why), st = SQLITE_DONE;

	for (i = 0; i < NTABLES && rc == 0; i++) {
		if (sqlite3_prepare_v2(db, tables[i].select, -1, &q, NULL) !=
		    SQLITE_OK) {
			rc = dump_etcd__sql_fail(db, why, tables[i].name);
			break;
		}
		while (rc == 0 && (st = sqlite3_step(q)) == SQLITE_ROW) {
			struct etcd_keys_rec r;

			rec_from_row(&tables[i], q, &r);
			if (kvlist_grow(l) == NULL) {
				rc = -ENOMEM;
				break;
			}
			rc = etcd_keys_encode(cluster, &r, &l->k[l->n - 1],
					      &l->v[l->n - 1]);
			if (rc == -EINVAL)
				rt_buf_printf(why,
					      "table %s: a row that the etcd "
					      "layout cannot hold (%s)",
					      tables[i].name,
					      l->k[l->n - 1].data
						      ? l->k[l->n - 1].data
						      : "a bad name");
		}
		if (rc == 0 && st != SQLITE_DONE)
			rc = dump_etcd__sql_fail(db, why, tables[i].name);
		sqlite3_finalize(q);
		q = NULL;
	}
	return rc;
}

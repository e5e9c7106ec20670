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

#define TXN_OPS 128 /* etcd 3.4's default --max-txn-ops */
#define TXN_BYTES                                                              \
	(ETCD_KEYS_CHUNK_BYTES + 8192) /* keys and values of one txn */
#define OP_BYTES  64		       /* what etcd adds to each op (about) */
#define PAGE_KEYS 32 /* keys of one range page (chunks: <= 32 MiB of it) */

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
static int make_tmp(struct rt_buf *tmp, struct rt_buf *data, struct rt_buf *why)
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
static void remove_tmp(struct rt_buf *tmp)
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

static int sql_fail(sqlite3 *db, struct rt_buf *why, const char *what)
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

/* Keys and values to write, in order (owned). */
struct kvlist {
	struct rt_buf *k, *v;
	size_t n, cap;
};

static void kvlist_free(struct kvlist *l)
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
static int encode_rows(sqlite3 *db, const char *cluster, struct kvlist *l,
		       struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	size_t i;
	int rc = check_schema(db, why), st = SQLITE_DONE;

	for (i = 0; i < NTABLES && rc == 0; i++) {
		if (sqlite3_prepare_v2(db, tables[i].select, -1, &q, NULL) !=
		    SQLITE_OK) {
			rc = sql_fail(db, why, tables[i].name);
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
			rc = sql_fail(db, why, tables[i].name);
		sqlite3_finalize(q);
		q = NULL;
	}
	return rc;
}

/* ========================================================= the writes */

/* Operations gathered into one txn, sent when full. */
struct batch {
	struct etcd_sync *s;
	const char *meta;   /* P/meta: every txn needs it absent */
	const char *import; /* P/import: every txn needs it to hold `id` */
	struct rt_buf id;   /* this import's id */
	struct etcd_op ops[TXN_OPS];
	struct rt_buf k[TXN_OPS], v[TXN_OPS];
	size_t n, bytes;
	long long txns, keys;
};

/* Sends the txn of `ops` (`n`), if P/meta is absent and P/import holds
 * this import's id (`claim`: if P/import is absent too). */
static int batch_txn(struct batch *b, const struct etcd_op *ops, size_t n,
		     int claim, struct rt_buf *why)
{
	struct etcd_cmp cmp[2] = {
		{ .key = b->meta,
		  .target = ETCD_VERSION,
		  .result = ETCD_EQUAL },
		{ .key = b->import,
		  .target = claim ? ETCD_VERSION : ETCD_VALUE,
		  .result = ETCD_EQUAL,
		  .value = b->id.data,
		  .value_len = b->id.len },
	};
	int ok = 0, rc = etcd_sync_txn(b->s, cmp, 2, ops, n, &ok, why);

	if (rc == 0 && !ok) {
		rt_buf_printf(why,
			      "%s appeared, or another import took %s over "
			      "(--force): this one stops",
			      b->meta, b->import);
		rc = -EEXIST;
	}
	if (rc == 0) {
		b->txns++;
		b->keys += (long long)n;
	}
	return rc;
}

static int batch_flush(struct batch *b, struct rt_buf *why)
{
	size_t i;
	int rc;

	if (b->n == 0)
		return 0;
	for (i = 0; i < b->n; i++)
		b->ops[i] = (struct etcd_op){ .kind = ETCD_OP_PUT,
					      .key = b->k[i].data,
					      .value = b->v[i].data
							       ? b->v[i].data
							       : "",
					      .value_len = b->v[i].len };
	rc = batch_txn(b, b->ops, b->n, 0, why);
	b->n = 0;
	b->bytes = 0;
	return rc;
}

/* Takes the cluster for this import: P/import := its id (host, pid and
 * a random part), if neither P/meta nor P/import is there. */
static int batch_claim(struct batch *b, struct rt_buf *why)
{
	struct etcd_op op = { .kind = ETCD_OP_PUT, .key = b->import };
	unsigned char r[8] = { 0 };
	char host[64] = "?";
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC), rc;

	if (fd >= 0) {
		if (read(fd, r, sizeof(r)) != (ssize_t)sizeof(r))
			memset(r, 0, sizeof(r));
		close(fd);
	}
	gethostname(host, sizeof(host) - 1);
	rt_buf_printf(&b->id, "%s pid %d %02x%02x%02x%02x%02x%02x%02x%02x",
		      host, (int)getpid(), r[0], r[1], r[2], r[3], r[4], r[5],
		      r[6], r[7]);
	if (b->id.data == NULL)
		return -ENOMEM;
	op.value = b->id.data;
	op.value_len = b->id.len;
	rc = batch_txn(b, &op, 1, 1, why);
	return rc;
}

/* After a write that failed (a timeout: this process may have been
 * stopped while another import took over): whether the claim is lost,
 * asked with a txn of no operations under the same compares. Returns
 * -EEXIST with the takeover in `why` (which --force must not follow),
 * else 0, `why` as it was. */
static int lost_claim(struct batch *b, struct rt_buf *why)
{
	struct rt_buf w = { 0 };
	int rc = batch_txn(b, NULL, 0, 0, &w);

	if (rc == -EEXIST && w.data != NULL) {
		rt_buf_reset(why);
		rt_buf_puts(why, w.data);
	}
	rt_buf_free(&w);
	return rc == -EEXIST ? rc : 0;
}

/* Ends the import: P/meta, and P/import goes, in one txn. */
static int batch_finish(struct batch *b, const struct rt_buf *mk,
			const struct rt_buf *mv, struct rt_buf *why)
{
	struct etcd_op ops[2] = {
		{ .kind = ETCD_OP_PUT,
		  .key = mk->data,
		  .value = mv->data,
		  .value_len = mv->len },
		{ .kind = ETCD_OP_DELETE, .key = b->import },
	};
	int rc = batch_flush(b, why);

	return rc < 0 ? rc : batch_txn(b, ops, 2, 0, why);
}

/* Adds a put of key `k` = `v` (`vn` bytes) to `b`, sending the txn
 * first when it would grow past etcd's limits. */
static int batch_put(struct batch *b, const char *k, size_t kn, const char *v,
		     size_t vn, struct rt_buf *why)
{
	size_t add = kn + vn + OP_BYTES;
	int rc = 0;

	if (b->n == TXN_OPS || (b->n > 0 && b->bytes + add > TXN_BYTES))
		rc = batch_flush(b, why);
	if (rc < 0)
		return rc;
	rt_buf_reset(&b->k[b->n]);
	rt_buf_reset(&b->v[b->n]);
	if (rt_buf_append(&b->k[b->n], k, kn) < 0 ||
	    (vn > 0 ? rt_buf_append(&b->v[b->n], v, vn)
		    : rt_buf_puts(&b->v[b->n], "")) < 0)
		return -ENOMEM;
	b->n++;
	b->bytes += add;
	return 0;
}

static void batch_free(struct batch *b)
{
	size_t i;

	rt_buf_free(&b->id);
	for (i = 0; i < TXN_OPS; i++) {
		rt_buf_free(&b->k[i]);
		rt_buf_free(&b->v[i]);
	}
}

/* Puts object file `path` (named `hash`): its chunks, then its P/om. */
static int put_object(struct batch *b, const char *cluster, const char *path,
		      const char *hash, struct rt_buf *why)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_CHUNK, .hash = hash };
	struct rt_buf k = { 0 }, v = { 0 }, chunk = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	uint64_t size = 0;
	ssize_t got;

	if (fd < 0) {
		rt_buf_printf(why, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	if (rt_buf_reserve(&chunk, ETCD_KEYS_CHUNK_BYTES) < 0)
		rc = -ENOMEM;
	while (rc == 0) {
		size_t have = 0;

		while (have < ETCD_KEYS_CHUNK_BYTES &&
		       (got = read(fd, chunk.data + have,
				   ETCD_KEYS_CHUNK_BYTES - have)) > 0)
			have += (size_t)got;
		if (have == 0)
			break;
		r.data = chunk.data;
		r.len = have;
		rc = etcd_keys_encode(cluster, &r, &k, NULL);
		if (rc == 0)
			rc = batch_put(b, k.data, k.len, chunk.data, have, why);
		r.index++;
		size += have;
		if (have < ETCD_KEYS_CHUNK_BYTES)
			break;
	}
	close(fd);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_OBJECT,
				    .hash = hash,
				    .size = size,
				    .chunks = etcd_keys_chunks(size) };
	if (rc == 0)
		rc = etcd_keys_encode(cluster, &r, &k, &v);
	if (rc == 0)
		rc = batch_put(b, k.data, k.len, v.data, v.len, why);
	rt_buf_free(&k);
	rt_buf_free(&v);
	rt_buf_free(&chunk);
	return rc;
}

/* Puts every object of data directory `data` (code/objects/XX/REST). */
static int put_objects(struct batch *b, const char *cluster, const char *data,
		       struct rt_buf *why)
{
	struct rt_buf dir = { 0 }, sub = { 0 }, path = { 0 }, hash = { 0 };
	DIR *top, *d;
	struct dirent *e, *f;
	int rc = 0;

	rt_buf_printf(&dir, "%s/code/objects", data);
	top = dir.data ? opendir(dir.data) : NULL;
	if (top == NULL)
		goto out; /* no code at all */
	while (rc == 0 && (e = readdir(top)) != NULL) {
		if (strlen(e->d_name) != 2)
			continue;
		rt_buf_reset(&sub);
		rt_buf_printf(&sub, "%s/%s", dir.data, e->d_name);
		d = sub.data ? opendir(sub.data) : NULL;
		while (rc == 0 && d != NULL && (f = readdir(d)) != NULL) {
			if (strlen(f->d_name) != 62)
				continue;
			rt_buf_reset(&path);
			rt_buf_reset(&hash);
			rt_buf_printf(&path, "%s/%s", sub.data, f->d_name);
			rt_buf_printf(&hash, "%s%s", e->d_name, f->d_name);
			rc = path.data && hash.data
				     ? put_object(b, cluster, path.data,
						  hash.data, why)
				     : -ENOMEM;
		}
		if (d != NULL)
			closedir(d);
	}
	closedir(top);
out:
	rt_buf_free(&dir);
	rt_buf_free(&sub);
	rt_buf_free(&path);
	rt_buf_free(&hash);
	return rc;
}

/* Whether cluster `cluster` may be imported into: no keys under P/, or
 * only a partial import's and `force` (then they go). */
static int check_empty(struct etcd_sync *s, const struct sched_dump_etcd *t,
		       const char *prefix, struct rt_buf *why)
{
	struct etcd_sync_kvs got = { 0 };
	struct rt_buf meta = { 0 };
	char *end = malloc(strlen(prefix) + 2);
	int64_t gone = 0;
	int rc = end ? 0 : -ENOMEM;

	if (rc == 0) {
		etcd_prefix_end(prefix, end);
		rc = etcd_keys_kind_prefix(t->cluster, ETCD_KEYS_META, &meta);
	}
	if (rc == 0)
		rc = etcd_sync_range(s, meta.data, NULL, 0, 1, &got, why);
	if (rc == 0 && got.n > 0) {
		rt_buf_printf(why,
			      "cluster %s exists in etcd already (%s): "
			      "import goes into a new cluster",
			      t->cluster, meta.data);
		rc = -EEXIST;
	}
	if (rc == 0)
		rc = etcd_sync_range(s, prefix, end, 0, 1, &got, why);
	if (rc == 0 && got.n > 0 && !t->force) {
		rt_buf_printf(why,
			      "%s holds keys but no %s: an import that did "
			      "not finish; --force deletes them and imports "
			      "again",
			      prefix, meta.data);
		rc = -EEXIST;
	}
	if (rc == 0 && got.n > 0)
		rc = etcd_sync_delete(s, prefix, end, &gone, why);
	if (rc == 0 && gone > 0)
		fprintf(stderr,
			"fnfs store import: deleted %lld keys of an "
			"import that did not finish\n",
			(long long)gone);
	etcd_sync_kvs_free(&got);
	rt_buf_free(&meta);
	free(end);
	return rc;
}

int sched_dump_etcd_import(const struct sched_dump_etcd *t, FILE *in,
			   struct rt_buf *why)
{
	struct rt_buf tmp = { 0 }, data = { 0 }, db = { 0 }, prefix = { 0 };
	struct rt_buf mk = { 0 }, mv = { 0 }, ik = { 0 };
	struct etcd_keys_rec meta = { .kind = ETCD_KEYS_META,
				      .version = ETCD_KEYS_VERSION };
	struct etcd_sync s = { 0 };
	struct kvlist rows = { 0 };
	struct batch *b = calloc(1, sizeof(*b));
	struct store *st = NULL;
	size_t i;
	int rc = b ? 0 : -ENOMEM;

	if (rc == 0 && !etcd_keys_cluster_valid(t->cluster)) {
		rt_buf_printf(why,
			      "bad cluster name \"%s\": 1 to 63 of "
			      "[A-Za-z0-9._-], starting with a letter or digit",
			      t->cluster ? t->cluster : "");
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = etcd_keys_prefix(t->cluster, &prefix);
	if (rc == 0)
		rc = etcd_keys_encode(t->cluster, &meta, &mk, &mv);
	if (rc == 0)
		rc = etcd_keys_kind_prefix(t->cluster, ETCD_KEYS_IMPORT, &ik);
	if (rc == 0)
		rc = make_tmp(&tmp, &data, why);
	/* Every check of a dump, as into a data directory. */
	if (rc == 0)
		rc = sched_dump_import(data.data, in, why);
	if (rc == 0) {
		rt_buf_printf(&db, "%s/fnfs.db", data.data);
		rc = store_open(&st, db.data);
		if (rc < 0)
			rt_buf_printf(why, "cannot open %s", db.data);
	}
	if (rc == 0)
		rc = encode_rows(store_db(st), t->cluster, &rows, why);
	if (rc == 0)
		rc = etcd_sync_open(&s, &t->etcd, why);
	if (rc == 0)
		rc = check_empty(&s, t, prefix.data, why);
	if (rc < 0)
		goto out;
	b->s = &s;
	b->meta = mk.data;
	b->import = ik.data;
	rc = batch_claim(b, why);
	if (rc == 0)
		rc = put_objects(b, t->cluster, data.data, why);
	for (i = 0; i < rows.n && rc == 0; i++)
		rc = batch_put(b, rows.k[i].data, rows.k[i].len, rows.v[i].data,
			       rows.v[i].len, why);
	/* P/meta last: with it, the import is whole. */
	if (rc == 0)
		rc = batch_finish(b, &mk, &mv, why);
	if (rc < 0 && rc != -EEXIST && b->id.len > 0 && lost_claim(b, why) < 0)
		rc = -EEXIST;
	if (rc == 0)
		fprintf(stderr,
			"fnfs store import: %lld keys in %lld transactions "
			"under %s\n",
			b->keys, b->txns, prefix.data);
	else if (rc != -EEXIST)
		rt_buf_printf(why,
			      " (the import did not finish: %s has no "
			      "meta; run it again with --force)",
			      prefix.data);
out:
	store_close(st);
	etcd_sync_close(&s);
	remove_tmp(&tmp);
	kvlist_free(&rows);
	if (b != NULL)
		batch_free(b);
	free(b);
	rt_buf_free(&tmp);
	rt_buf_free(&data);
	rt_buf_free(&db);
	rt_buf_free(&prefix);
	rt_buf_free(&mk);
	rt_buf_free(&mv);
	rt_buf_free(&ik);
	return rc;
}

/* ============================================================ export */

/* An export under way: the data directory being rebuilt. */
struct rebuild {
	sqlite3 *db;
	const char *data;
	json_t *next; /* hash -> the next chunk index expected */
	int meta;     /* P/meta was read */
	long long keys;
};

/* Runs INSERT `sql` with the values `types` says: 't' text, 'b' text of
 * a length (const char *, size_t), 'n' text or NULL, 'i' int64. */
static int insert(struct rebuild *rb, const char *sql, const char *types, ...)
{
	sqlite3_stmt *q = NULL;
	va_list ap;
	int i, rc = 0;

	if (sqlite3_prepare_v2(rb->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	va_start(ap, types);
	for (i = 0; types[i] != '\0'; i++) {
		const char *s;
		size_t n;

		switch (types[i]) {
		case 'b':
			s = va_arg(ap, const char *);
			n = va_arg(ap, size_t);
			sqlite3_bind_text(q, i + 1, s, (int)n, SQLITE_STATIC);
			break;
		case 'i':
			sqlite3_bind_int64(q, i + 1, va_arg(ap, int64_t));
			break;
		default:
			s = va_arg(ap, const char *);
			if (s == NULL)
				sqlite3_bind_null(q, i + 1);
			else
				sqlite3_bind_text(q, i + 1, s, -1,
						  SQLITE_STATIC);
		}
	}
	va_end(ap);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(q);
	return rc;
}

/* The row of `r` into the store being rebuilt. */
static int insert_rec(struct rebuild *rb, const struct etcd_keys_rec *r)
{
	const struct store_row *w = &r->row;

	switch (r->kind) {
	case ETCD_KEYS_TENANT:
		return insert(rb,
			      "INSERT INTO tenants(name, created_ms, "
			      "updated_ms, uid, gid, mode) VALUES(?, ?, ?, ?, "
			      "?, ?)",
			      "tiiiii", w->tenant, w->created_ms, w->updated_ms,
			      (int64_t)w->uid, (int64_t)w->gid,
			      (int64_t)w->mode);
	case ETCD_KEYS_NAMESPACE:
		return insert(rb,
			      "INSERT INTO namespaces(tenant, name, "
			      "created_ms, updated_ms) VALUES(?, ?, ?, ?)",
			      "ttii", w->tenant, w->ns, w->created_ms,
			      w->updated_ms);
	case ETCD_KEYS_FUNCTION:
		return insert(rb,
			      "INSERT INTO functions(tenant, namespace, name, "
			      "created_ms, updated_ms, spec, revision, "
			      "run_revision) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
			      "tttiitii", w->tenant, w->ns, w->name,
			      w->created_ms, w->updated_ms, w->spec,
			      (int64_t)w->revision, (int64_t)w->run_revision);
	case ETCD_KEYS_INSTANCE:
		return insert(rb,
			      "INSERT INTO instances(tenant, namespace, "
			      "function, n, desired, worker, epoch) VALUES(?, "
			      "?, ?, ?, ?, ?, ?)",
			      "tttiini", r->instance.tenant, r->instance.ns,
			      r->instance.fn, (int64_t)r->instance.n,
			      (int64_t)r->instance.desired_run,
			      r->instance.worker, (int64_t)r->instance.epoch);
	case ETCD_KEYS_WORKER:
		return insert(rb,
			      "INSERT INTO workers(id, memory, tags, "
			      "namespaces, local, drained) VALUES(?, ?, ?, ?, "
			      "?, ?)",
			      "tittii", r->worker.id,
			      (int64_t)r->worker.memory_mb, r->worker.tags,
			      r->worker.namespaces, (int64_t)r->worker.local,
			      (int64_t)r->worker.drained);
	case ETCD_KEYS_SETTING:
		return insert(rb,
			      "INSERT INTO settings(key, value) VALUES(?, ?)",
			      "tt", r->key, r->value);
	case ETCD_KEYS_REVOKED:
		return insert(rb,
			      "INSERT INTO revoked(worker, serial, "
			      "revoked_ms) VALUES(?, ?, ?)",
			      "tti", r->revoked.worker, r->revoked.serial,
			      r->revoked.revoked_ms);
	case ETCD_KEYS_CODE_FILE:
		return insert(rb,
			      "INSERT INTO code_files(tenant, namespace, "
			      "function, path, mode, size, hash, mtime_ms) "
			      "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
			      "tttbiiti", r->file.tenant, r->file.ns,
			      r->file.fn, r->file.path, strlen(r->file.path),
			      (int64_t)r->file.mode, (int64_t)r->file.size,
			      r->file.hash, r->file.mtime_ms);
	default:
		return insert(rb,
			      "INSERT INTO code_revisions(tenant, namespace, "
			      "function, hash, bytes, files) VALUES(?, ?, ?, "
			      "?, ?, ?)",
			      "ttttii", r->code.tenant, r->code.ns, r->code.fn,
			      r->code.hash, (int64_t)r->code.bytes,
			      (int64_t)r->code.files);
	}
}

/* Where object `h`'s chunks gather while they are read. */
static void part_path(struct rt_buf *p, const struct rebuild *rb, const char *h)
{
	rt_buf_reset(p);
	rt_buf_printf(p, "%s/../%s.part", rb->data, h);
}

/* Appends chunk `r` to its object's part file, in order. */
static int add_chunk(struct rebuild *rb, const struct etcd_keys_rec *r,
		     struct rt_buf *why)
{
	json_t *next = json_object_get(rb->next, r->hash);
	uint32_t want = next ? (uint32_t)json_integer_value(next) : 0;
	struct rt_buf p = { 0 };
	int fd, rc = 0;

	if (r->index != want) {
		rt_buf_printf(why, "object %s: chunk %u where %u was due",
			      r->hash, r->index, want);
		return -EINVAL;
	}
	part_path(&p, rb, r->hash);
	fd = p.data ? open(p.data,
			   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
				   (want == 0 ? O_EXCL : 0),
			   0600)
		    : -1;
	if (fd < 0 ||
	    (r->len > 0 && write(fd, r->data, r->len) != (ssize_t)r->len)) {
		rt_buf_printf(why, "cannot write %s: %s", p.data ? p.data : "?",
			      strerror(errno));
		rc = errno == ENOSPC ? -ENOSPC : -EIO;
	}
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		json_object_set_new(rb->next, r->hash,
				    json_integer((json_int_t)want + 1));
	rt_buf_free(&p);
	return rc;
}

/* SHA-256 (hex) and size of file `path`. */
static int file_sum(const char *path, char hex[65], uint64_t *size)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char buf[65536], sum[32];
	unsigned int sl = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i, rc = 0;
	ssize_t got;

	*size = 0;
	if (md == NULL || fd < 0 ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		rc = -EIO;
	while (rc == 0 && (got = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(md, buf, (size_t)got);
		*size += (uint64_t)got;
	}
	if (rc == 0 && EVP_DigestFinal_ex(md, sum, &sl) == 1)
		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(md);
	return rc;
}

/* Object `r` (P/om) is whole: its part file becomes the object, once its
 * chunks, size and hash agree. */
static int finish_object(struct rebuild *rb, const struct etcd_keys_rec *r,
			 struct rt_buf *why)
{
	json_t *next = json_object_get(rb->next, r->hash);
	struct rt_buf part = { 0 }, dst = { 0 };
	char hex[65] = "";
	uint64_t size = 0;
	int rc = 0, fd;

	part_path(&part, rb, r->hash);
	if (r->chunks == 0 && next == NULL) {
		fd = part.data ? open(part.data,
				      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				      0600)
			       : -1;
		if (fd < 0)
			rc = -EIO;
		else
			close(fd);
	} else if (next == NULL ||
		   json_integer_value(next) != (json_int_t)r->chunks) {
		rt_buf_printf(why, "object %s: %lld of its %u chunks", r->hash,
			      next ? (long long)json_integer_value(next) : 0LL,
			      r->chunks);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = file_sum(part.data, hex, &size);
	if (rc == 0 && (size != r->size || strcmp(hex, r->hash) != 0)) {
		rt_buf_printf(why,
			      "object %s: its chunks do not match its hash "
			      "or size",
			      r->hash);
		rc = -EINVAL;
	}
	rt_buf_printf(&dst, "%s/code/objects/%.2s", rb->data, r->hash);
	if (rc == 0)
		mkdir(dst.data, 0700);
	rt_buf_printf(&dst, "/%s", r->hash + 2);
	if (rc == 0 &&
	    (chmod(part.data, 0400) < 0 || rename(part.data, dst.data) < 0)) {
		rt_buf_printf(why, "cannot write %s: %s", dst.data,
			      strerror(errno));
		rc = -EIO;
	}
	json_object_del(rb->next, r->hash);
	rt_buf_free(&part);
	rt_buf_free(&dst);
	return rc;
}

/* Takes one key of the cluster into the rebuilt data directory. */
static int take_kv(struct rebuild *rb, const char *cluster,
		   const struct etcd_kv *kv, struct rt_buf *why)
{
	struct etcd_keys_rec r;
	int rc = etcd_keys_decode(cluster, kv->key, kv->key_len, kv->value,
				  kv->value_len, &r);

	rb->keys++;
	if (rc == -EINVAL)
		rt_buf_printf(why, "etcd key %.*s: not fnfs's layout",
			      (int)(kv->key_len > 200 ? 200 : kv->key_len),
			      kv->key);
	if (rc < 0)
		goto out;
	switch (r.kind) {
	case ETCD_KEYS_META:
		rb->meta = 1;
		if (r.version != ETCD_KEYS_VERSION) {
			rt_buf_printf(why,
				      "cluster layout version %d; this fnfs "
				      "reads version %d",
				      r.version, ETCD_KEYS_VERSION);
			rc = -EPROTO;
		}
		break;
	case ETCD_KEYS_CHUNK: rc = add_chunk(rb, &r, why); break;
	case ETCD_KEYS_OBJECT: rc = finish_object(rb, &r, why); break;
	case ETCD_KEYS_EVENT:
	case ETCD_KEYS_LEADER:
	case ETCD_KEYS_IMPORT:
	case ETCD_KEYS_MEMBER:
	case ETCD_KEYS_EVENT_HEAD: break; /* not the store's */
	default:
		rc = insert_rec(rb, &r);
		if (rc < 0)
			rc = sql_fail(rb->db, why, "cannot rebuild the store");
	}
out:
	etcd_keys_rec_free(&r);
	return rc;
}

/* Reads every key under `prefix` at one revision into `rb`. */
static int read_cluster(struct etcd_sync *s, const char *cluster,
			const char *prefix, struct rebuild *rb,
			struct rt_buf *why)
{
	struct etcd_sync_kvs page = { 0 };
	struct rt_buf from = { 0 };
	char *end = malloc(strlen(prefix) + 2);
	int64_t rev = 0;
	size_t i;
	int rc = end ? rt_buf_puts(&from, prefix) : -ENOMEM, first = 1;

	if (end != NULL)
		etcd_prefix_end(prefix, end);
	while (rc == 0) {
		rc = etcd_sync_range(s, from.data, end, rev, PAGE_KEYS, &page,
				     why);
		if (rc == -ERANGE)
			rt_buf_printf(why, " (compacted during the read: "
					   "export again)");
		if (rc < 0)
			break;
		if (rev == 0)
			rev = page.revision;
		/* A later page starts at the last key of the one before. */
		for (i = first ? 0 : 1; i < page.n && rc == 0; i++)
			rc = take_kv(rb, cluster, &page.kvs[i], why);
		first = 0;
		if (rc < 0 || !page.more || page.n == 0)
			break;
		rt_buf_reset(&from);
		rc = rt_buf_append(&from, page.kvs[page.n - 1].key,
				   page.kvs[page.n - 1].key_len);
	}
	etcd_sync_kvs_free(&page);
	rt_buf_free(&from);
	free(end);
	return rc;
}

/* Removes the part files of objects whose P/om was not read (being
 * written when the export read the cluster). */
static void drop_parts(struct rebuild *rb)
{
	struct rt_buf p = { 0 };
	const char *h;
	json_t *v;

	json_object_foreach (rb->next, h, v) {
		part_path(&p, rb, h);
		if (p.data != NULL)
			unlink(p.data);
	}
	rt_buf_free(&p);
}

int sched_dump_etcd_export(const struct sched_dump_etcd *t, FILE *out,
			   struct rt_buf *why)
{
	struct rt_buf tmp = { 0 }, data = { 0 }, db = { 0 }, prefix = { 0 };
	struct rebuild rb = { 0 };
	struct etcd_sync s = { 0 };
	struct store *st = NULL;
	int rc = 0;

	if (!etcd_keys_cluster_valid(t->cluster)) {
		rt_buf_printf(why, "bad cluster name \"%s\"",
			      t->cluster ? t->cluster : "");
		return -EINVAL;
	}
	rc = etcd_keys_prefix(t->cluster, &prefix);
	if (rc == 0)
		rc = make_tmp(&tmp, &data, why);
	if (rc == 0 &&
	    (mkdir(data.data, 0700) < 0 ||
	     rt_buf_printf(&db, "%s/code", data.data) < 0 ||
	     mkdir(db.data, 0700) < 0 || rt_buf_puts(&db, "/objects") < 0 ||
	     mkdir(db.data, 0700) < 0)) {
		rt_buf_printf(why, "cannot make %s: %s", data.data,
			      strerror(errno));
		rc = -EIO;
	}
	rt_buf_reset(&db);
	if (rc == 0) {
		rt_buf_printf(&db, "%s/fnfs.db", data.data);
		rc = store_open(&st, db.data);
		if (rc < 0)
			rt_buf_printf(why, "cannot make %s", db.data);
	}
	rb.data = data.data;
	rb.next = json_object();
	if (rc == 0 && rb.next == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		rb.db = store_db(st);
		if (sqlite3_exec(rb.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
			rc = sql_fail(rb.db, why, db.data);
	}
	if (rc == 0)
		rc = etcd_sync_open(&s, &t->etcd, why);
	if (rc == 0)
		rc = read_cluster(&s, t->cluster, prefix.data, &rb, why);
	if (rc == 0 && !rb.meta) {
		if (rb.keys == 0) {
			rt_buf_printf(why,
				      "no cluster %s in etcd (no keys "
				      "under %s)",
				      t->cluster, prefix.data);
			rc = -ENOENT;
		} else {
			rt_buf_printf(why,
				      "cluster %s in etcd has no meta: an "
				      "import that did not finish (import "
				      "again with --force)",
				      t->cluster);
			rc = -EPROTO;
		}
	}
	if (rc == 0 &&
	    sqlite3_exec(rb.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = sql_fail(rb.db, why, db.data);
	drop_parts(&rb);
	etcd_sync_close(&s);
	store_close(st);
	st = NULL;
	if (rc == 0)
		rc = sched_dump_export(data.data, out, why);
	remove_tmp(&tmp);
	json_decref(rb.next);
	rt_buf_free(&tmp);
	rt_buf_free(&data);
	rt_buf_free(&db);
	rt_buf_free(&prefix);
	return rc;
}

/*
 * dump_etcd_import.c - a dump into a cluster's keys (dump_etcd.h): checked
 * as an import into a data directory, then written in batches within
 * etcd's limits, P/meta last.
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

#define LOST_CLAIM_MS 1500 /* the bound of lost_claim's question */

/* After a write that failed (a timeout: this process may have been
 * stopped while another import took over): whether the claim is lost,
 * asked with a txn of no operations under the same compares. Returns
 * -EEXIST with the takeover in `why` (which --force must not follow),
 * else 0, `why` as it was. */
static int lost_claim(struct batch *b, struct rt_buf *why)
{
	struct rt_buf w = { 0 };
	int was = etcd_sync_bound(b->s, LOST_CLAIM_MS), rc;

	/* A healthy etcd (this process was stopped) answers at once; one
	 * without quorum is not waited for a second time. */
	rc = batch_txn(b, NULL, 0, 0, &w);
	etcd_sync_bound(b->s, was);
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
		rc = dump_etcd__make_tmp(&tmp, &data, why);
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
		rc = dump_etcd__encode_rows(store_db(st), t->cluster, &rows,
					    why);
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
	dump_etcd__remove_tmp(&tmp);
	dump_etcd__kvlist_free(&rows);
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

/*
 * dump_etcd_export.c - a cluster's keys back into a dump (dump_etcd.h):
 * read at one revision, rebuilt into a data directory, dumped from there.
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
			rc = dump_etcd__sql_fail(rb->db, why,
						 "cannot rebuild the store");
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
		rc = dump_etcd__make_tmp(&tmp, &data, why);
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
			rc = dump_etcd__sql_fail(rb.db, why, db.data);
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
		rc = dump_etcd__sql_fail(rb.db, why, db.data);
	drop_parts(&rb);
	etcd_sync_close(&s);
	store_close(st);
	st = NULL;
	if (rc == 0)
		rc = sched_dump_export(data.data, out, why);
	dump_etcd__remove_tmp(&tmp);
	json_decref(rb.next);
	rt_buf_free(&tmp);
	rt_buf_free(&data);
	rt_buf_free(&db);
	rt_buf_free(&prefix);
	return rc;
}

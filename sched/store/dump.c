/*
 * dump.c - `fnfs store export` and `fnfs store import` (dump.h): every
 * table of a data directory's fnfs.db and the code objects it references
 * as one JSON document, and back into a new data directory.
 *
 * Export reads the database in one read transaction (WAL: a running
 * mount goes on writing beside it) and streams the objects in base64
 * after the tables into a temporary file, so a dump of large code is
 * never whole in memory; an object the mount removed meanwhile (its code
 * changed) makes it start again from a new snapshot, and only a whole
 * dump reaches the output. Text that is not UTF-8 (a name in code/ may
 * hold any byte) is written as {"base64": "..."}.
 * Import reads the document, checks all of it, builds the database aside
 * (fnfs.db.import), writes the objects (each verified against its name,
 * to a temporary file renamed into place), and renames the database into
 * place last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <sqlite3.h>

#include "../../runtime/base/code.h"
#include "../../runtime/base/base64.h"
#include "dump.h"
#include "../sched.h"
#include "sqlite.h"
#include "store.h"
#include "dump_internal.h"

#define B64_IN_CHUNK (48u << 10) /* bytes read per base64 block (x3) */
#define EXPORT_TRIES 5		 /* snapshots tried while objects go */
#define MANIFEST_MAX 1000000	 /* entries read of one manifest */
#define BUSY_MS	     5000	 /* a busy database is waited for */

/* ============================================================= helpers */

/* `out` := the bytes base64 `text` (`len` bytes) stands for. Returns 0,
 * -EINVAL or -ENOMEM. */
int dump__decode_into(const char *text, size_t len, struct rt_buf *out)
{
	rt_buf_reset(out);
	return sched_b64_decode(text, len, out);
}

int dump__db_path(struct rt_buf *p, const char *datadir, const char *suffix)
{
	rt_buf_reset(p);
	return rt_buf_printf(p, "%s/fnfs.db%s", datadir, suffix);
}

void dump__object_path(struct rt_buf *p, const char *datadir, const char *h)
{
	rt_buf_reset(p);
	rt_buf_printf(p, "%s/code/objects/%.2s/%s", datadir, h, h + 2);
}

int dump__hex64(const char *h)
{
	size_t i;

	for (i = 0; h[i] != '\0'; i++)
		if (!((h[i] >= '0' && h[i] <= '9') ||
		      (h[i] >= 'a' && h[i] <= 'f')))
			return 0;
	return i == 64;
}

void dump__sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int len = 0;
	int i;

	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* A table or column name as SQLite keeps it: plain letters, digits and
 * underscores (fnfs's own), so it can be quoted without escaping. */
int dump__plain_name(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
		      (s[i] >= '0' && s[i] <= '9' && i > 0)))
			return 0;
	return i > 0 && i < 64;
}

int dump__sql_fail(sqlite3 *db, struct rt_buf *why, const char *what)
{
	rt_buf_printf(why, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
	return -EIO;
}

/* The names of the tables of `db` in order (sqlite's own left out). */
int dump__table_names(sqlite3 *db, json_t **out, struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	json_t *v = json_array();
	int rc = 0, st;

	if (v == NULL ||
	    sqlite3_prepare_v2(db,
			       "SELECT name FROM sqlite_master WHERE type = "
			       "'table' AND name NOT LIKE 'sqlite_%' ORDER BY "
			       "name",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = dump__sql_fail(db, why, "cannot list the tables");
		goto out;
	}
	while ((st = sqlite3_step(q)) == SQLITE_ROW)
		json_array_append_new(
			v,
			json_string((const char *)sqlite3_column_text(q, 0)));
	if (st != SQLITE_DONE)
		rc = dump__sql_fail(db, why, "cannot list the tables");
out:
	sqlite3_finalize(q);
	if (rc < 0)
		json_decref(v);
	*out = rc < 0 ? NULL : v;
	return rc;
}

static int user_version(sqlite3 *db, int *out)
{
	sqlite3_stmt *q = NULL;
	int rc = -EIO;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW) {
		*out = sqlite3_column_int(q, 0);
		rc = 0;
	}
	sqlite3_finalize(q);
	return rc;
}

/* ============================================================== export */

/* Text as a JSON string, or {"base64": ...} when it is not UTF-8. */
static json_t *text_value(const char *p, size_t n)
{
	json_t *v = json_stringn(p, n);
	struct rt_buf enc = { 0 };

	if (v == NULL && sched_b64_encode(p, n, &enc) == 0)
		v = json_pack("{s:s%}", "base64", enc.data, enc.len);
	rt_buf_free(&enc);
	return v;
}

/* The rows of table `name` as an array of objects. */
static int dump_table(sqlite3 *db, const char *name, json_t **out,
		      struct rt_buf *why)
{
	struct rt_buf sql = { 0 };
	sqlite3_stmt *q = NULL;
	json_t *rows = json_array();
	int rc = 0, st, i, n;

	rt_buf_printf(&sql, "SELECT * FROM \"%s\" ORDER BY rowid", name);
	if (rows == NULL || sql.data == NULL ||
	    sqlite3_prepare_v2(db, sql.data, -1, &q, NULL) != SQLITE_OK) {
		rc = dump__sql_fail(db, why, name);
		goto out;
	}
	n = sqlite3_column_count(q);
	while (rc == 0 && (st = sqlite3_step(q)) == SQLITE_ROW) {
		json_t *row = json_object(), *val = NULL;

		for (i = 0; row != NULL && i < n && rc == 0; i++) {
			switch (sqlite3_column_type(q, i)) {
			case SQLITE_INTEGER:
				val = json_integer(sqlite3_column_int64(q, i));
				break;
			case SQLITE_FLOAT:
				val = json_real(sqlite3_column_double(q, i));
				break;
			case SQLITE_NULL: val = json_null(); break;
			case SQLITE_TEXT:
				val = text_value(
					(const char *)sqlite3_column_text(q, i),
					(size_t)sqlite3_column_bytes(q, i));
				break;
			default: val = NULL;
			}
			if (val == NULL) {
				rt_buf_printf(why,
					      "table %s, column %s: a value "
					      "that is not text, a number or "
					      "null",
					      name, sqlite3_column_name(q, i));
				rc = -EIO;
			} else {
				json_object_set_new(
					row, sqlite3_column_name(q, i), val);
			}
		}
		if (row == NULL || json_array_append_new(rows, row) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 && st != SQLITE_DONE)
		rc = dump__sql_fail(db, why, name);
out:
	sqlite3_finalize(q);
	rt_buf_free(&sql);
	if (rc < 0)
		json_decref(rows);
	*out = rc < 0 ? NULL : rows;
	return rc;
}

static int add_entry_cb(const struct rt_code_entry *e, void *arg)
{
	if (!e->dir)
		json_object_set_new(arg, e->hash, json_true());
	return 0;
}

/* Reads object `h` of `datadir` into `text`. Returns 0, -ENOENT (gone)
 * or -EIO. */
static int read_object(const char *datadir, const char *h, struct rt_buf *text,
		       struct rt_buf *why)
{
	struct rt_buf p = { 0 };
	char buf[65536];
	ssize_t r;
	int fd, rc = 0;

	rt_buf_reset(text);
	dump__object_path(&p, datadir, h);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		rc = errno == ENOENT ? -ENOENT : -EIO;
		rt_buf_printf(why, "code object %s: %s", h, strerror(errno));
	}
	while (fd >= 0 && (r = read(fd, buf, sizeof(buf))) > 0)
		if (rt_buf_append(text, buf, (size_t)r) < 0)
			rc = -ENOMEM;
	if (fd >= 0)
		close(fd);
	rt_buf_free(&p);
	return rc;
}

/* Adds to `set` the objects manifest `text` names. */
int dump__add_manifest(json_t *set, const char *h, const char *text, size_t len,
		       struct rt_buf *why)
{
	struct rt_buf w = { 0 };
	int rc = rt_code_manifest_parse(text ? text : "", len, MANIFEST_MAX,
					add_entry_cb, set, &w);

	if (rc < 0)
		rt_buf_printf(why, "the manifest of code revision %s: %s", h,
			      w.data ? w.data : "unreadable");
	rt_buf_free(&w);
	return rc < 0 ? -EINVAL : 0;
}

/* The objects the code tables reference, each once, sorted: the files of
 * every function's code/, its revision's manifest and what the manifest
 * names (a revision names objects code/ may no longer have until the
 * next revision is made). */
static int object_names(sqlite3 *db, const char *datadir, json_t *tables,
			json_t **out, struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	json_t *set = json_object(), *v;
	struct rt_buf text = { 0 };
	const char *h;
	int rc = 0, st = SQLITE_DONE;

	*out = NULL;
	if (set == NULL)
		return -ENOMEM;
	if (json_object_get(tables, "code_files") == NULL)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "SELECT hash, 0 FROM code_files WHERE "
			       "length(hash) = 64 UNION SELECT hash, 1 FROM "
			       "code_revisions WHERE length(hash) = 64",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = dump__sql_fail(db, why, "cannot list the code objects");
		goto out;
	}
	while (rc == 0 && (st = sqlite3_step(q)) == SQLITE_ROW) {
		h = (const char *)sqlite3_column_text(q, 0);
		json_object_set_new(set, h, json_true());
		if (sqlite3_column_int(q, 1) == 1) {
			rc = read_object(datadir, h, &text, why);
			if (rc == 0)
				rc = dump__add_manifest(set, h, text.data,
							text.len, why);
			if (rc == -EINVAL)
				rc = -EIO; /* damaged on disk */
		}
	}
	if (rc == 0 && st != SQLITE_DONE)
		rc = dump__sql_fail(db, why, "cannot list the code objects");
out:
	sqlite3_finalize(q);
	rt_buf_free(&text);
	if (rc == 0 && (*out = json_array()) != NULL) {
		json_object_foreach (set, h, v) {
			json_array_append_new(*out, json_string(h));
		}
	}
	json_decref(set);
	return rc == 0 && *out == NULL ? -ENOMEM : rc;
}

/* Writes object `h` of `datadir` to `out` as a JSON string of base64. */
static int write_object(const char *datadir, const char *h, FILE *out,
			struct rt_buf *why)
{
	static unsigned char in[B64_IN_CHUNK * 3];
	struct rt_buf p = { 0 }, enc = { 0 };
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char sum[32];
	char hex[65];
	unsigned int sl = 0;
	int fd = -1, rc = 0, i;
	size_t got = 0;
	ssize_t r;

	dump__object_path(&p, datadir, h);
	if (md == NULL || p.data == NULL ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		rc = -ENOMEM;
		goto out;
	}
	fd = open(p.data, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? -ENOENT : -EIO;
		rt_buf_printf(why, "code object %s: %s", h, strerror(errno));
		goto out;
	}
	fprintf(out, "\"%s\": \"", h);
	for (;;) {
		r = read(fd, in + got, sizeof(in) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rt_buf_printf(why, "code object %s: %s", h,
				      strerror(errno));
			rc = -EIO;
			goto out;
		}
		EVP_DigestUpdate(md, in + got, (size_t)r);
		got += (size_t)r;
		/* Whole groups of 3 bytes, except at the end. */
		if (r == 0 || got == sizeof(in)) {
			rt_buf_reset(&enc);
			if (sched_b64_encode(in, got, &enc) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			fwrite(enc.data, 1, enc.len, out);
			got = 0;
		}
		if (r == 0)
			break;
	}
	fputs("\"", out);
	EVP_DigestFinal_ex(md, sum, &sl);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (strcmp(hex, h) != 0) {
		rt_buf_printf(why,
			      "code object %s does not match its hash "
			      "(damaged on disk)",
			      h);
		rc = -EIO;
	}
out:
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(md);
	rt_buf_free(&p);
	rt_buf_free(&enc);
	return rc;
}

/* Writes the dump of one snapshot to `out`. */
static int export_once(const char *datadir, FILE *out, struct rt_buf *why)
{
	struct rt_buf p = { 0 };
	sqlite3 *db = NULL;
	json_t *names = NULL, *tables = json_object(), *objs = NULL, *v;
	size_t i;
	int rc = 0, version = 0, began = 0;
	struct stat sb;

	dump__db_path(&p, datadir, "");
	if (p.data == NULL || tables == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (stat(p.data, &sb) < 0) {
		rt_buf_printf(why, "no store in %s (%s): %s", datadir, p.data,
			      strerror(errno));
		rc = -ENOENT;
		goto out;
	}
	/* Read-write without create, but only reading: the last connection
	 * to close removes the -wal and -shm files it made (a read-only one
	 * would leave them behind). */
	if (sqlite3_open_v2(p.data, &db, SQLITE_OPEN_READWRITE, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL) !=
		    SQLITE_OK) {
		rc = dump__sql_fail(db, why, p.data);
		goto out;
	}
	sqlite3_busy_timeout(db, BUSY_MS);
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = dump__sql_fail(db, why, "cannot read the store");
		goto out;
	}
	began = 1;
	rc = user_version(db, &version);
	if (rc < 0) {
		rc = dump__sql_fail(db, why, "cannot read the store");
		goto out;
	}
	if (version != STORE_SCHEMA_VERSION) {
		rt_buf_printf(why,
			      "the store has schema version %d, this fnfs "
			      "exports version %d: mount it once with this "
			      "fnfs first",
			      version, STORE_SCHEMA_VERSION);
		rc = -EPROTO;
		goto out;
	}
	rc = dump__table_names(db, &names, why);
	json_array_foreach (names, i, v) {
		json_t *rows = NULL;

		if (rc == 0)
			rc = dump_table(db, json_string_value(v), &rows, why);
		if (rc == 0)
			json_object_set_new(tables, json_string_value(v), rows);
	}
	if (rc == 0)
		rc = object_names(db, datadir, tables, &objs, why);
	if (rc < 0)
		goto out;
	fprintf(out,
		"{\"format\": \"%s\", \"version\": %d, \"schema\": %d, "
		"\"exported_ms\": %lld,\n\"tables\": ",
		DUMP_FORMAT, SCHED_DUMP_VERSION, STORE_SCHEMA_VERSION,
		(long long)rt_now_ms());
	if (json_dumpf(tables, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) < 0) {
		rc = -EIO;
		goto out;
	}
	fputs(",\n\"objects\": {", out);
	json_array_foreach (objs, i, v) {
		if (rc == 0 && i > 0)
			fputs(",\n", out);
		if (rc == 0)
			rc = write_object(datadir, json_string_value(v), out,
					  why);
	}
	if (rc == 0)
		fputs("}}\n", out);
out:
	if (began)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
	json_decref(names);
	json_decref(tables);
	json_decref(objs);
	rt_buf_free(&p);
	return rc;
}

/* Copies `in` from its start to `out`. */
static int copy_out(FILE *in, FILE *out, struct rt_buf *why)
{
	char buf[65536];
	size_t n;

	if (fflush(in) != 0 || ferror(in) || fseek(in, 0, SEEK_SET) != 0) {
		rt_buf_printf(why, "cannot write the dump aside: %s",
			      strerror(errno));
		return errno == ENOSPC ? -ENOSPC : -EIO;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (ferror(in) || fflush(out) != 0 || ferror(out)) {
		rt_buf_printf(why, "cannot write the dump: %s",
			      strerror(errno));
		return -EIO;
	}
	return 0;
}

int sched_dump_export(const char *datadir, FILE *out, struct rt_buf *why)
{
	int rc = -ENOENT, i, gone = 1;

	for (i = 0; i < EXPORT_TRIES && rc == -ENOENT && gone; i++) {
		FILE *tmp = tmpfile();

		rt_buf_reset(why);
		if (tmp == NULL) {
			rt_buf_printf(why, "no temporary file: %s",
				      strerror(errno));
			return -EIO;
		}
		rc = export_once(datadir, tmp, why);
		/* An object named but gone: it went since the snapshot (the
		 * code changed), so again; a missing store is final. */
		gone = rc == -ENOENT && why->data != NULL &&
		       strncmp(why->data, "code object", 11) == 0;
		if (rc == 0)
			rc = copy_out(tmp, out, why);
		fclose(tmp);
	}
	return rc;
}

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

#define DUMP_FORMAT  "fnfs-dump"
#define B64_IN_CHUNK (48u << 10) /* bytes read per base64 block (x3) */
#define EXPORT_TRIES 5		 /* snapshots tried while objects go */
#define MANIFEST_MAX 1000000	 /* entries read of one manifest */
#define BUSY_MS	     5000	 /* a busy database is waited for */

/* ============================================================= helpers */

/* `out` := the bytes base64 `text` (`len` bytes) stands for. Returns 0,
 * -EINVAL or -ENOMEM. */
static int decode_into(const char *text, size_t len, struct rt_buf *out)
{
	rt_buf_reset(out);
	return sched_b64_decode(text, len, out);
}

static int db_path(struct rt_buf *p, const char *datadir, const char *suffix)
{
	rt_buf_reset(p);
	return rt_buf_printf(p, "%s/fnfs.db%s", datadir, suffix);
}

static void object_path(struct rt_buf *p, const char *datadir, const char *h)
{
	rt_buf_reset(p);
	rt_buf_printf(p, "%s/code/objects/%.2s/%s", datadir, h, h + 2);
}

static int hex64(const char *h)
{
	size_t i;

	for (i = 0; h[i] != '\0'; i++)
		if (!((h[i] >= '0' && h[i] <= '9') ||
		      (h[i] >= 'a' && h[i] <= 'f')))
			return 0;
	return i == 64;
}

static void sha256_hex(const void *p, size_t n, char out[65])
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
static int plain_name(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
		      (s[i] >= '0' && s[i] <= '9' && i > 0)))
			return 0;
	return i > 0 && i < 64;
}

static int sql_fail(sqlite3 *db, struct rt_buf *why, const char *what)
{
	rt_buf_printf(why, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
	return -EIO;
}

/* The names of the tables of `db` in order (sqlite's own left out). */
static int table_names(sqlite3 *db, json_t **out, struct rt_buf *why)
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
		rc = sql_fail(db, why, "cannot list the tables");
		goto out;
	}
	while ((st = sqlite3_step(q)) == SQLITE_ROW)
		json_array_append_new(
			v,
			json_string((const char *)sqlite3_column_text(q, 0)));
	if (st != SQLITE_DONE)
		rc = sql_fail(db, why, "cannot list the tables");
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
		rc = sql_fail(db, why, name);
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
		rc = sql_fail(db, why, name);
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
	object_path(&p, datadir, h);
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
static int add_manifest(json_t *set, const char *h, const char *text,
			size_t len, struct rt_buf *why)
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
		rc = sql_fail(db, why, "cannot list the code objects");
		goto out;
	}
	while (rc == 0 && (st = sqlite3_step(q)) == SQLITE_ROW) {
		h = (const char *)sqlite3_column_text(q, 0);
		json_object_set_new(set, h, json_true());
		if (sqlite3_column_int(q, 1) == 1) {
			rc = read_object(datadir, h, &text, why);
			if (rc == 0)
				rc = add_manifest(set, h, text.data, text.len,
						  why);
			if (rc == -EINVAL)
				rc = -EIO; /* damaged on disk */
		}
	}
	if (rc == 0 && st != SQLITE_DONE)
		rc = sql_fail(db, why, "cannot list the code objects");
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

	object_path(&p, datadir, h);
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

	db_path(&p, datadir, "");
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
		rc = sql_fail(db, why, p.data);
		goto out;
	}
	sqlite3_busy_timeout(db, BUSY_MS);
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = sql_fail(db, why, "cannot read the store");
		goto out;
	}
	began = 1;
	rc = user_version(db, &version);
	if (rc < 0) {
		rc = sql_fail(db, why, "cannot read the store");
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
	rc = table_names(db, &names, why);
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

/* ============================================================== import */

/* Checks the objects of dump `d`: each decodes and matches its name. */
static int check_objects(json_t *objs, struct rt_buf *why)
{
	struct rt_buf bytes = { 0 };
	const char *h;
	json_t *v;
	char hex[65];
	int rc = 0;

	json_object_foreach (objs, h, v) {
		if (!hex64(h) || !json_is_string(v)) {
			rt_buf_printf(why,
				      "objects: \"%.70s\" is not a "
				      "SHA-256 with a base64 string",
				      h);
			rc = -EINVAL;
			break;
		}
		rc = decode_into(json_string_value(v), json_string_length(v),
				 &bytes);
		if (rc < 0) {
			rt_buf_printf(why, "object %s: not base64", h);
			break;
		}
		sha256_hex(bytes.data, bytes.len, hex);
		if (strcmp(hex, h) != 0) {
			rt_buf_printf(why,
				      "object %s: its bytes do not match its "
				      "hash",
				      h);
			rc = -EINVAL;
			break;
		}
	}
	rt_buf_free(&bytes);
	return rc;
}

/* Checks a functions row's spec as a mount would read it. */
static int check_spec(json_t *row, struct rt_buf *why)
{
	json_t *spec = json_object_get(row, "spec");
	struct sched_spec s;
	struct rt_buf w = { 0 };
	int rc;

	if (!json_is_string(spec)) {
		rt_buf_printf(why, "a function without a spec");
		return -EINVAL;
	}
	rc = sched_spec_from_json(&s, json_string_value(spec),
				  json_string_length(spec), &w);
	if (rc < 0) {
		const char *k[3] = { "tenant", "namespace", "name" }, *v[3];
		int i;

		for (i = 0; i < 3; i++) {
			v[i] = json_string_value(json_object_get(row, k[i]));
			v[i] = v[i] ? v[i] : "?";
		}
		rt_buf_printf(why, "function %s/%s/%s: %s", v[0], v[1], v[2],
			      w.data ? w.data : "a bad spec");
	}
	sched_spec_free(&s);
	rt_buf_free(&w);
	return rc;
}

/* The columns of table `t` of `db`, as an object of names. */
static json_t *columns_of(sqlite3 *db, const char *t)
{
	sqlite3_stmt *q = NULL;
	struct rt_buf sql = { 0 };
	json_t *cols = json_object();

	rt_buf_printf(&sql, "PRAGMA table_info(\"%s\")", t);
	if (cols != NULL && sql.data != NULL &&
	    sqlite3_prepare_v2(db, sql.data, -1, &q, NULL) == SQLITE_OK)
		while (sqlite3_step(q) == SQLITE_ROW)
			json_object_set_new(
				cols, (const char *)sqlite3_column_text(q, 1),
				json_true());
	sqlite3_finalize(q);
	rt_buf_free(&sql);
	return cols;
}

/* The rows of one table being inserted: its columns, and the INSERT of
 * the last column list (the rows of a dump all have the same). */
struct table_in {
	const char *name;
	json_t *cols;
	struct rt_buf sql;
	sqlite3_stmt *q;
};

/* Binds value `v` of column `col` as parameter `i` of `q`: an integer, a
 * real, text (a string, or {"base64": ...} for bytes that are not
 * UTF-8) or null. */
static int bind_value(sqlite3_stmt *q, int i, const char *t, const char *col,
		      json_t *v, struct rt_buf *bytes, struct rt_buf *why)
{
	json_t *b = json_object_get(v, "base64");

	if (json_is_integer(v))
		sqlite3_bind_int64(q, i, json_integer_value(v));
	else if (json_is_real(v))
		sqlite3_bind_double(q, i, json_real_value(v));
	else if (json_is_string(v))
		sqlite3_bind_text(q, i, json_string_value(v),
				  (int)json_string_length(v), SQLITE_STATIC);
	else if (json_is_null(v))
		sqlite3_bind_null(q, i);
	else if (json_is_object(v) && json_object_size(v) == 1 &&
		 json_is_string(b) &&
		 decode_into(json_string_value(b), json_string_length(b),
			     bytes) == 0)
		sqlite3_bind_text(q, i, bytes->data ? bytes->data : "",
				  (int)bytes->len, SQLITE_TRANSIENT);
	else {
		rt_buf_printf(why,
			      "table %s, column %s: not text, a number or "
			      "null",
			      t, col);
		return -EINVAL;
	}
	return 0;
}

/* Inserts row `row` into table `ti`. */
static int insert_row(sqlite3 *db, struct table_in *ti, json_t *row,
		      struct rt_buf *why)
{
	struct rt_buf sql = { 0 }, vals = { 0 }, bytes = { 0 };
	const char *col;
	json_t *v;
	int rc = 0, i = 0;

	rt_buf_printf(&sql, "INSERT INTO \"%s\"(", ti->name);
	json_object_foreach (row, col, v) {
		if (!plain_name(col) ||
		    json_object_get(ti->cols, col) == NULL) {
			rt_buf_printf(why, "table %s has no column \"%.64s\"",
				      ti->name, col);
			rc = -EINVAL;
			goto out;
		}
		rt_buf_printf(&sql, "%s\"%s\"", i ? ", " : "", col);
		rt_buf_printf(&vals, "%s?", i++ ? ", " : "");
	}
	if (i == 0) {
		rt_buf_printf(why, "table %s: an empty row", ti->name);
		rc = -EINVAL;
		goto out;
	}
	rt_buf_printf(&sql, ") VALUES(%s)", vals.data);
	if (sql.data == NULL || vals.data == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (ti->q == NULL || ti->sql.data == NULL ||
	    strcmp(ti->sql.data, sql.data) != 0) {
		sqlite3_finalize(ti->q);
		ti->q = NULL;
		rt_buf_reset(&ti->sql);
		if (sqlite3_prepare_v2(db, sql.data, -1, &ti->q, NULL) !=
			    SQLITE_OK ||
		    rt_buf_puts(&ti->sql, sql.data) < 0) {
			rc = sql_fail(db, why, ti->name);
			goto out;
		}
	}
	sqlite3_reset(ti->q);
	sqlite3_clear_bindings(ti->q);
	i = 1;
	json_object_foreach (row, col, v) {
		rc = bind_value(ti->q, i++, ti->name, col, v, &bytes, why);
		if (rc < 0)
			goto out;
	}
	switch (sqlite3_step(ti->q)) {
	case SQLITE_DONE: break;
	case SQLITE_CONSTRAINT:
		rt_buf_printf(why, "table %s: %s", ti->name,
			      sqlite3_errmsg(db));
		rc = -EINVAL;
		break;
	case SQLITE_FULL:
		rt_buf_printf(why, "the disk is full");
		rc = -ENOSPC;
		break;
	default: rc = sql_fail(db, why, ti->name);
	}
	sqlite3_reset(ti->q);
out:
	rt_buf_free(&sql);
	rt_buf_free(&vals);
	rt_buf_free(&bytes);
	return rc;
}

/* Inserts the rows of table `t`. */
static int fill_table(sqlite3 *db, const char *t, json_t *rows,
		      struct rt_buf *why)
{
	struct table_in ti = { t, columns_of(db, t), { 0 }, NULL };
	json_t *row;
	size_t i;
	int rc = ti.cols != NULL ? 0 : -ENOMEM;

	json_array_foreach (rows, i, row) {
		if (rc < 0)
			break;
		if (!json_is_object(row)) {
			rt_buf_printf(why,
				      "table %s: a row that is not an "
				      "object",
				      t);
			rc = -EINVAL;
		} else if (strcmp(t, "functions") == 0) {
			rc = check_spec(row, why);
		}
		if (rc == 0)
			rc = insert_row(db, &ti, row, why);
	}
	sqlite3_finalize(ti.q);
	rt_buf_free(&ti.sql);
	json_decref(ti.cols);
	return rc;
}

/* Fills database `path` (made by store_open, empty) with the tables of
 * `tables` in one transaction, and moves everything out of its WAL into
 * the file itself (which is renamed into place without its -wal). */
static int fill_db(const char *path, json_t *tables, struct rt_buf *why)
{
	struct store *st = NULL;
	sqlite3 *db = NULL;
	json_t *names = NULL, *rows;
	const char *t;
	int rc = store_open(&st, path), st_rc;

	if (rc < 0) {
		rt_buf_printf(why, "cannot make %s", path);
		goto out;
	}
	db = store_db(st);
	rc = table_names(db, &names, why);
	if (rc == 0 && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		rc = sql_fail(db, why, path);
	json_object_foreach (tables, t, rows) {
		size_t k, known = 0;
		json_t *v;

		if (rc < 0)
			break;
		json_array_foreach (names, k, v)
			known |= strcmp(json_string_value(v), t) == 0;
		if (!plain_name(t) || !known || !json_is_array(rows)) {
			rt_buf_printf(why,
				      "\"%.64s\" is not a table of this fnfs "
				      "with an array of rows",
				      t);
			rc = -EINVAL;
			break;
		}
		rc = fill_table(db, t, rows, why);
	}
	if (rc == 0) {
		st_rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		if (st_rc == SQLITE_OK)
			st_rc = sqlite3_exec(db,
					     "PRAGMA wal_checkpoint(TRUNCATE)",
					     NULL, NULL, NULL);
		if (st_rc != SQLITE_OK)
			rc = (sqlite3_errcode(db) == SQLITE_FULL)
				     ? -ENOSPC
				     : sql_fail(db, why, path);
		if (rc == -ENOSPC)
			rt_buf_printf(why, "the disk is full");
	}
out:
	json_decref(names);
	store_close(st);
	return rc;
}

/* Makes `path` a directory (0700) unless it is one. */
static int make_dir(const char *path, struct rt_buf *why)
{
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return 0;
	rt_buf_printf(why, "cannot make %s: %s", path, strerror(errno));
	return -EIO;
}

/* Writes the objects of `objs` into datadir's code/objects. */
static int write_objects(const char *datadir, json_t *objs, struct rt_buf *why)
{
	struct rt_buf p = { 0 }, tmp = { 0 }, bytes = { 0 }, dir = { 0 };
	const char *h;
	json_t *v;
	int rc = 0, fd;

	rt_buf_printf(&dir, "%s/code", datadir);
	if (dir.data != NULL)
		rc = make_dir(dir.data, why);
	rt_buf_puts(&dir, "/objects");
	if (rc == 0 && dir.data != NULL)
		rc = make_dir(dir.data, why);
	json_object_foreach (objs, h, v) {
		if (rc < 0)
			break;
		rt_buf_reset(&tmp);
		rt_buf_printf(&tmp, "%s/code/objects/%.2s", datadir, h);
		rc = tmp.data ? make_dir(tmp.data, why) : -ENOMEM;
		if (rc == 0)
			rc = decode_into(json_string_value(v),
					 json_string_length(v), &bytes);
		if (rc < 0)
			break;
		object_path(&p, datadir, h);
		rt_buf_puts(&tmp, "/import.tmp");
		if (tmp.data != NULL)
			unlink(tmp.data); /* 0400: left by a killed import */
		fd = p.data && tmp.data
			     ? open(tmp.data,
				    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				    0400)
			     : -1;
		if (fd < 0 ||
		    (bytes.len > 0 &&
		     write(fd, bytes.data, bytes.len) != (ssize_t)bytes.len) ||
		    fsync(fd) < 0 || rename(tmp.data, p.data) < 0) {
			rc = errno == ENOSPC ? -ENOSPC : -EIO;
			rt_buf_printf(why, "cannot write object %s: %s", h,
				      strerror(errno));
			if (tmp.data != NULL)
				unlink(tmp.data);
		}
		if (fd >= 0)
			close(fd);
	}
	rt_buf_free(&p);
	rt_buf_free(&tmp);
	rt_buf_free(&bytes);
	rt_buf_free(&dir);
	return rc;
}

/* Checks the top of a dump: its format, version and schema. */
static int check_head(json_t *d, struct rt_buf *why)
{
	json_t *tables = json_object_get(d, "tables"),
	       *objs = json_object_get(d, "objects");

	if (!json_is_object(d) ||
	    !json_is_string(json_object_get(d, "format")) ||
	    strcmp(json_string_value(json_object_get(d, "format")),
		   DUMP_FORMAT) != 0) {
		rt_buf_printf(why, "not an fnfs dump (no \"format\": \"%s\")",
			      DUMP_FORMAT);
		return -EINVAL;
	}
	if (json_integer_value(json_object_get(d, "version")) !=
	    SCHED_DUMP_VERSION) {
		rt_buf_printf(why,
			      "a dump of version %lld; this fnfs reads "
			      "version %d",
			      (long long)json_integer_value(
				      json_object_get(d, "version")),
			      SCHED_DUMP_VERSION);
		return -EPROTO;
	}
	if (json_integer_value(json_object_get(d, "schema")) !=
	    STORE_SCHEMA_VERSION) {
		rt_buf_printf(
			why,
			"a dump of schema version %lld; this fnfs stores "
			"version %d: import it with the fnfs that exported it",
			(long long)json_integer_value(
				json_object_get(d, "schema")),
			STORE_SCHEMA_VERSION);
		return -EPROTO;
	}
	if (!json_is_object(tables) || !json_is_object(objs)) {
		rt_buf_printf(why, "a dump needs \"tables\" and \"objects\" "
				   "objects");
		return -EINVAL;
	}
	return 0;
}

/* Removes what an import leaves aside: fnfs.db.import and its WAL files
 * (of this import, or of one killed before). */
static void remove_aside(const char *datadir)
{
	static const char *const left[] = { ".import", ".import-wal",
					    ".import-shm" };
	struct rt_buf p = { 0 };
	size_t i;

	for (i = 0; i < sizeof(left) / sizeof(left[0]); i++)
		if (db_path(&p, datadir, left[i]) == 0)
			unlink(p.data);
	rt_buf_free(&p);
}

/* Whether `objs` holds object `h`, else says what needs it. */
static int has_object(json_t *objs, const char *h, const char *what,
		      struct rt_buf *why)
{
	if (json_object_get(objs, h) != NULL)
		return 0;
	rt_buf_printf(why, "%s names object %s, which the dump lacks", what, h);
	return -EINVAL;
}

/* Checks that every object the code tables name is in `objs`: each
 * file's, each revision's manifest, and what each manifest names. */
static int check_references(json_t *tables, json_t *objs, struct rt_buf *why)
{
	struct rt_buf text = { 0 };
	json_t *row, *set = json_object(), *v;
	const char *h;
	size_t i;
	int rc = set != NULL ? 0 : -ENOMEM;

	json_array_foreach (json_object_get(tables, "code_files"), i, row) {
		h = json_string_value(json_object_get(row, "hash"));
		if (rc == 0 && h != NULL && strlen(h) == 64)
			rc = has_object(objs, h, "a file of code/", why);
	}
	json_array_foreach (json_object_get(tables, "code_revisions"), i, row) {
		h = json_string_value(json_object_get(row, "hash"));
		if (rc < 0 || h == NULL || strlen(h) != 64)
			continue;
		rc = has_object(objs, h, "a code revision", why);
		v = json_object_get(objs, h);
		if (rc == 0)
			rc = decode_into(json_string_value(v),
					 json_string_length(v), &text);
		if (rc == 0)
			rc = add_manifest(set, h, text.data, text.len, why);
	}
	json_object_foreach (set, h, v) {
		if (rc == 0)
			rc = has_object(objs, h, "a code revision's manifest",
					why);
	}
	json_decref(set);
	rt_buf_free(&text);
	return rc;
}

int sched_dump_import(const char *datadir, FILE *in, struct rt_buf *why)
{
	struct rt_buf p = { 0 }, tmp = { 0 };
	json_error_t jerr;
	json_t *d = NULL;
	struct stat sb;
	int rc = 0;

	db_path(&p, datadir, "");
	db_path(&tmp, datadir, ".import");
	if (p.data == NULL || tmp.data == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (stat(p.data, &sb) == 0) {
		rt_buf_printf(why,
			      "%s has a store already (%s): import goes into "
			      "a new data directory",
			      datadir, p.data);
		rc = -EEXIST;
		goto out;
	}
	d = json_loadf(in, JSON_REJECT_DUPLICATES, &jerr);
	if (d == NULL) {
		rt_buf_printf(why, "not JSON: line %d: %s", jerr.line,
			      jerr.text);
		rc = -EINVAL;
		goto out;
	}
	rc = check_head(d, why);
	if (rc == 0)
		rc = check_objects(json_object_get(d, "objects"), why);
	if (rc == 0)
		rc = check_references(json_object_get(d, "tables"),
				      json_object_get(d, "objects"), why);
	if (rc == 0)
		rc = make_dir(datadir, why);
	if (rc < 0)
		goto out;
	remove_aside(datadir);
	rc = fill_db(tmp.data, json_object_get(d, "tables"), why);
	if (rc == 0)
		rc = write_objects(datadir, json_object_get(d, "objects"), why);
	rt_buf_puts(&tmp, "-wal");
	/* Everything is in the file: fill_db emptied the WAL. */
	if (rc == 0 && tmp.data != NULL && stat(tmp.data, &sb) == 0 &&
	    sb.st_size > 0) {
		rt_buf_printf(why, "%s still holds rows", tmp.data);
		rc = -EIO;
	}
	db_path(&tmp, datadir, ".import");
	if (rc == 0 && rename(tmp.data, p.data) < 0) {
		rt_buf_printf(why, "cannot rename %s: %s", tmp.data,
			      strerror(errno));
		rc = -EIO;
	}
	if (rc == 0)
		remove_aside(datadir); /* an empty -wal or -shm */
out:
	if (rc < 0 && rc != -EEXIST && p.data != NULL)
		remove_aside(datadir);
	json_decref(d);
	rt_buf_free(&p);
	rt_buf_free(&tmp);
	return rc;
}

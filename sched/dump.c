/*
 * dump.c - `fnfs store export` and `fnfs store import` (dump.h): every
 * table of a data directory's fnfs.db and the code objects it references
 * as one JSON document, and back into a new data directory.
 *
 * Export reads the database in one read transaction (WAL: a running
 * mount goes on writing beside it) and streams the objects in base64
 * after the tables, so a dump of large code is never whole in memory.
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

#include "dump.h"
#include "sched.h"
#include "store.h"

#define DUMP_FORMAT  "fnfs-dump"
#define B64_IN_CHUNK (48u << 10) /* bytes read per base64 block (x3) */
#define BUSY_MS	     5000	 /* a busy database is waited for */

/* ============================================================== base64 */

int sched_dump_base64_decode(const char *text, size_t len, struct rt_buf *out)
{
	size_t i, pad = 0;
	int n;

	rt_buf_reset(out);
	if (len % 4 != 0)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char ch = text[i];
		int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			 (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';

		if (ch == '=' && i >= len - 2) {
			pad++;
			continue;
		}
		if (!ok || pad > 0)
			return -EINVAL;
	}
	if (len == 0)
		return rt_buf_append(out, "", 0);
	if (rt_buf_reserve(out, len / 4 * 3 + 1) < 0)
		return -ENOMEM;
	n = EVP_DecodeBlock((unsigned char *)out->data,
			    (const unsigned char *)text, (int)len);
	if (n < 0 || (size_t)n < pad)
		return -EINVAL;
	out->len = (size_t)n - pad;
	out->data[out->len] = '\0';
	return 0;
}

/* ============================================================= helpers */

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
				val = json_stringn(
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

/* The objects the code tables reference, each once, sorted. */
static int object_names(sqlite3 *db, json_t *tables, json_t **out,
			struct rt_buf *why)
{
	sqlite3_stmt *q = NULL;
	json_t *v = json_array();
	int rc = 0, st;

	*out = NULL;
	if (v == NULL)
		return -ENOMEM;
	if (json_object_get(tables, "code_files") == NULL) {
		*out = v;
		return 0;
	}
	if (sqlite3_prepare_v2(db,
			       "SELECT hash FROM code_files WHERE length(hash) "
			       "= 64 UNION SELECT hash FROM code_revisions "
			       "WHERE length(hash) = 64 ORDER BY 1",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = sql_fail(db, why, "cannot list the code objects");
		goto out;
	}
	while ((st = sqlite3_step(q)) == SQLITE_ROW)
		json_array_append_new(
			v,
			json_string((const char *)sqlite3_column_text(q, 0)));
	if (st != SQLITE_DONE)
		rc = sql_fail(db, why, "cannot list the code objects");
out:
	sqlite3_finalize(q);
	if (rc < 0)
		json_decref(v);
	else
		*out = v;
	return rc;
}

/* Writes object `h` of `datadir` to `out` as a JSON string of base64. */
static int write_object(const char *datadir, const char *h, FILE *out,
			struct rt_buf *why)
{
	static unsigned char in[B64_IN_CHUNK * 3];
	static unsigned char enc[B64_IN_CHUNK * 4 + 1];
	struct rt_buf p = { 0 };
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
		rt_buf_printf(why, "code object %s: %s", h, strerror(errno));
		rc = -EIO;
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
			int n = EVP_EncodeBlock(enc, in, (int)got);

			fwrite(enc, 1, (size_t)n, out);
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
	return rc;
}

int sched_dump_export(const char *datadir, FILE *out, struct rt_buf *why)
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
	if (sqlite3_open_v2(p.data, &db, SQLITE_OPEN_READONLY, NULL) !=
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
		rc = object_names(db, tables, &objs, why);
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
	if (rc == 0 && (fflush(out) != 0 || ferror(out))) {
		rt_buf_printf(why, "cannot write the dump: %s",
			      strerror(errno));
		rc = -EIO;
	}
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
		rc = sched_dump_base64_decode(json_string_value(v),
					      json_string_length(v), &bytes);
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

/* Whether table `t` of `db` has column `col`. */
static int has_column(sqlite3 *db, const char *t, const char *col)
{
	sqlite3_stmt *q = NULL;
	struct rt_buf sql = { 0 };
	int found = 0;

	rt_buf_printf(&sql, "PRAGMA table_info(\"%s\")", t);
	if (sql.data != NULL &&
	    sqlite3_prepare_v2(db, sql.data, -1, &q, NULL) == SQLITE_OK)
		while (!found && sqlite3_step(q) == SQLITE_ROW)
			found = strcmp((const char *)sqlite3_column_text(q, 1),
				       col) == 0;
	sqlite3_finalize(q);
	rt_buf_free(&sql);
	return found;
}

/* Inserts row `row` into table `t`. */
static int insert_row(sqlite3 *db, const char *t, json_t *row,
		      struct rt_buf *why)
{
	struct rt_buf sql = { 0 }, vals = { 0 };
	sqlite3_stmt *q = NULL;
	const char *col;
	json_t *v;
	int rc = 0, i = 0;

	rt_buf_printf(&sql, "INSERT INTO \"%s\"(", t);
	json_object_foreach (row, col, v) {
		if (!plain_name(col) || !has_column(db, t, col)) {
			rt_buf_printf(why, "table %s has no column \"%.64s\"",
				      t, col);
			rc = -EINVAL;
			goto out;
		}
		rt_buf_printf(&sql, "%s\"%s\"", i ? ", " : "", col);
		rt_buf_printf(&vals, "%s?", i++ ? ", " : "");
	}
	if (i == 0) {
		rt_buf_printf(why, "table %s: an empty row", t);
		rc = -EINVAL;
		goto out;
	}
	rt_buf_printf(&sql, ") VALUES(%s)", vals.data);
	if (sql.data == NULL || vals.data == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (sqlite3_prepare_v2(db, sql.data, -1, &q, NULL) != SQLITE_OK) {
		rc = sql_fail(db, why, t);
		goto out;
	}
	i = 1;
	json_object_foreach (row, col, v) {
		if (json_is_integer(v))
			sqlite3_bind_int64(q, i, json_integer_value(v));
		else if (json_is_real(v))
			sqlite3_bind_double(q, i, json_real_value(v));
		else if (json_is_string(v))
			sqlite3_bind_text(q, i, json_string_value(v),
					  (int)json_string_length(v),
					  SQLITE_STATIC);
		else if (json_is_null(v))
			sqlite3_bind_null(q, i);
		else {
			rt_buf_printf(why,
				      "table %s, column %s: not text, a number "
				      "or null",
				      t, col);
			rc = -EINVAL;
			goto out;
		}
		i++;
	}
	switch (sqlite3_step(q)) {
	case SQLITE_DONE: break;
	case SQLITE_CONSTRAINT:
		rt_buf_printf(why, "table %s: %s", t, sqlite3_errmsg(db));
		rc = -EINVAL;
		break;
	case SQLITE_FULL:
		rt_buf_printf(why, "the disk is full");
		rc = -ENOSPC;
		break;
	default: rc = sql_fail(db, why, t);
	}
out:
	sqlite3_finalize(q);
	rt_buf_free(&sql);
	rt_buf_free(&vals);
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

/* Fills database `path` (made by store_open, empty) with the tables of
 * `tables`, in one transaction. */
static int fill_db(const char *path, json_t *tables, struct rt_buf *why)
{
	struct store *st = NULL;
	sqlite3 *db;
	json_t *names = NULL, *rows, *row;
	const char *t;
	size_t i;
	int rc = store_open(&st, path);

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
		json_array_foreach (rows, i, row) {
			if (!json_is_object(row)) {
				rt_buf_printf(why,
					      "table %s: a row that is "
					      "not an object",
					      t);
				rc = -EINVAL;
			} else if (strcmp(t, "functions") == 0) {
				rc = check_spec(row, why);
			}
			if (rc == 0)
				rc = insert_row(db, t, row, why);
			if (rc < 0)
				break;
		}
	}
	if (rc == 0 &&
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = sql_fail(db, why, path);
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
			rc = sched_dump_base64_decode(json_string_value(v),
						      json_string_length(v),
						      &bytes);
		if (rc < 0)
			break;
		object_path(&p, datadir, h);
		rt_buf_puts(&tmp, "/import.tmp");
		fd = p.data && tmp.data
			     ? open(tmp.data,
				    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				    0600)
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
		rc = make_dir(datadir, why);
	if (rc < 0)
		goto out;
	unlink(tmp.data);
	rc = fill_db(tmp.data, json_object_get(d, "tables"), why);
	if (rc == 0)
		rc = write_objects(datadir, json_object_get(d, "objects"), why);
	if (rc == 0 && rename(tmp.data, p.data) < 0) {
		rt_buf_printf(why, "cannot rename %s: %s", tmp.data,
			      strerror(errno));
		rc = -EIO;
	}
out:
	if (rc < 0 && rc != -EEXIST && p.data != NULL) {
		static const char *const left[] = { ".import", ".import-wal",
						    ".import-shm" };
		size_t i;

		for (i = 0; i < sizeof(left) / sizeof(left[0]); i++)
			if (db_path(&p, datadir, left[i]) == 0)
				unlink(p.data);
	}
	json_decref(d);
	rt_buf_free(&p);
	rt_buf_free(&tmp);
	return rc;
}

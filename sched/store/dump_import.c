/*
 * dump_import.c - a dump into a data directory (dump.h): every part
 * checked before anything is written, the database built aside and
 * renamed into place last.
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
		if (!dump__hex64(h) || !json_is_string(v)) {
			rt_buf_printf(why,
				      "objects: \"%.70s\" is not a "
				      "SHA-256 with a base64 string",
				      h);
			rc = -EINVAL;
			break;
		}
		rc = dump__decode_into(json_string_value(v),
				       json_string_length(v), &bytes);
		if (rc < 0) {
			rt_buf_printf(why, "object %s: not base64", h);
			break;
		}
		dump__sha256_hex(bytes.data, bytes.len, hex);
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
		 dump__decode_into(json_string_value(b), json_string_length(b),
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
		if (!dump__plain_name(col) ||
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
			rc = dump__sql_fail(db, why, ti->name);
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
	default: rc = dump__sql_fail(db, why, ti->name);
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
	rc = dump__table_names(db, &names, why);
	if (rc == 0 && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		rc = dump__sql_fail(db, why, path);
	json_object_foreach (tables, t, rows) {
		size_t k, known = 0;
		json_t *v;

		if (rc < 0)
			break;
		json_array_foreach (names, k, v)
			known |= strcmp(json_string_value(v), t) == 0;
		if (!dump__plain_name(t) || !known || !json_is_array(rows)) {
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
				     : dump__sql_fail(db, why, path);
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
			rc = dump__decode_into(json_string_value(v),
					       json_string_length(v), &bytes);
		if (rc < 0)
			break;
		dump__object_path(&p, datadir, h);
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
		if (dump__db_path(&p, datadir, left[i]) == 0)
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
			rc = dump__decode_into(json_string_value(v),
					       json_string_length(v), &text);
		if (rc == 0)
			rc = dump__add_manifest(set, h, text.data, text.len,
						why);
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

	dump__db_path(&p, datadir, "");
	dump__db_path(&tmp, datadir, ".import");
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
	dump__db_path(&tmp, datadir, ".import");
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

/*
 * test_store.c - the SQLite store, the event journal and the model on top
 * of them, each against a fresh temporary directory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sched/model/events.h"
#include "../../sched/sched.h"
#include "../../sched/store/store.h"
#include "unit.h"

static char tmp_path[64];

static void tmp_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_path);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", tmp_path);
}

/* Makes a fresh temporary directory, removed when the test's process
 * exits; returns its path. One per test. */
static const char *tmpdir(void)
{
	snprintf(tmp_path, sizeof(tmp_path), "/tmp/fnfs-unit.XXXXXX");
	if (mkdtemp(tmp_path) == NULL)
		return "/nonexistent";
	atexit(tmp_remove);
	return tmp_path;
}

struct rows {
	int n;
	char last[128];
	uint64_t revision;
};

static int collect(const struct store_row *r, void *arg)
{
	struct rows *c = arg;

	c->n++;
	snprintf(c->last, sizeof(c->last), "%d:%s/%s/%s:%s", (int)r->kind,
		 r->tenant, r->ns ? r->ns : "-", r->name ? r->name : "-",
		 r->spec ? r->spec : "-");
	c->revision = r->revision;
	return 0;
}

TEST(store_roundtrip)
{
	const char *dir = tmpdir();
	char path[128];
	struct store *st;
	struct rows c = { 0 };
	struct store_row t = { .kind = STORE_TENANT,
			       .tenant = "acme",
			       .created_ms = 1,
			       .updated_ms = 1 };
	struct store_row n = { .kind = STORE_NAMESPACE,
			       .tenant = "acme",
			       .ns = "prod",
			       .created_ms = 1,
			       .updated_ms = 1 };
	struct store_row f = { .kind = STORE_FUNCTION,
			       .tenant = "acme",
			       .ns = "prod",
			       .name = "fn",
			       .spec = "{}",
			       .revision = 1,
			       .created_ms = 1,
			       .updated_ms = 1 };

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_begin(st) == 0);
	CHECK(store_insert(st, &t) == 0);
	CHECK(store_insert(st, &n) == 0);
	CHECK(store_insert(st, &f) == 0);
	CHECK(store_commit(st) == 0);
	CHECK(store_insert(st, &f) == -EEXIST);
	f.spec = "{\"memory\":64}";
	f.revision = 2;
	CHECK(store_update(st, &f) == 0);
	store_close(st);

	CHECK(store_open(&st, path) == 0);
	CHECK(store_load(st, collect, &c) == 0);
	CHECK(c.n == 3);
	CHECK_STR(c.last, "2:acme/prod/fn:{\"memory\":64}");
	CHECK(c.revision == 2);
	CHECK(store_delete(st, &f) == 0);
	CHECK(store_delete(st, &f) == -ENOENT);
	f.name = "nope";
	CHECK(store_update(st, &f) == -ENOENT);
	store_close(st);
}

TEST(store_rollback_keeps_nothing)
{
	const char *dir = tmpdir();
	char path[128];
	struct store *st;
	struct rows c = { 0 };
	struct store_row t = { .kind = STORE_TENANT,
			       .tenant = "acme",
			       .created_ms = 1,
			       .updated_ms = 1 };

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_begin(st) == 0);
	CHECK(store_insert(st, &t) == 0);
	store_rollback(st);
	CHECK(store_load(st, collect, &c) == 0);
	CHECK(c.n == 0);
	store_close(st);
}

static int keys_cb(const char *key, void *arg)
{
	struct rows *c = arg;
	size_t n = strlen(c->last);

	c->n++;
	snprintf(c->last + n, sizeof(c->last) - n, "%s,", key);
	return strcmp(key, "quota:stop") == 0 ? 7 : 0;
}

/* The settings of one prefix, in key order, and nothing else: a prefix
 * with LIKE's own characters is taken literally. */
TEST(store_setting_each_prefix)
{
	const char *dir = tmpdir();
	char path[128];
	struct store *st;
	struct rows c = { 0 };

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_begin(st) == 0);
	CHECK(store_setting_put(st, "quota:zed", "functions=1") == 0);
	CHECK(store_setting_put(st, "strategy", "pack") == 0);
	CHECK(store_setting_put(st, "quota:acme", "memory=10") == 0);
	CHECK(store_setting_put(st, "quotas", "x") == 0);
	CHECK(store_setting_put(st, "q%ota:x", "x") == 0);
	CHECK(store_commit(st) == 0);
	CHECK(store_setting_each(st, "quota:", keys_cb, &c) == 0);
	CHECK(c.n == 2);
	CHECK(strcmp(c.last, "quota:acme,quota:zed,") == 0);
	memset(&c, 0, sizeof(c));
	CHECK(store_setting_each(st, "q%ota:", keys_cb, &c) == 0);
	CHECK(strcmp(c.last, "q%ota:x,") == 0);
	memset(&c, 0, sizeof(c));
	CHECK(store_begin(st) == 0);
	CHECK(store_setting_put(st, "quota:stop", "x") == 0);
	CHECK(store_commit(st) == 0);
	CHECK(store_setting_each(st, "quota:", keys_cb, &c) == 7);
	CHECK(c.n == 2); /* acme, then stop, which ends it */
	store_close(st);
}

TEST(store_refuses_newer_schema)
{
	const char *dir = tmpdir();
	char cmd[256], path[128];
	struct store *st = NULL;

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	store_close(st);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s 'PRAGMA user_version = 99'",
		 path);
	CHECK(system(cmd) == 0);
	CHECK(store_open(&st, path) == -EPROTO);
	CHECK(st == NULL);
}

TEST(events_offsets_and_trim)
{
	struct events ev;
	const char *p;
	uint64_t first, end_before;
	size_t n;
	int i;

	events_init(&ev, 1000);
	events_append(&ev, 0, "function.created", "a/b/c", " revision=1");
	n = events_at(&ev, 0, &p, &first);
	CHECK(n == ev.text.len && first == 0);
	CHECK(strncmp(p,
		      "1970-01-01T00:00:00.000Z function.created a/b/c "
		      "revision=1\n",
		      n) == 0);
	for (i = 0; i < 100; i++)
		events_append(&ev, 1000, "x.y", "obj", NULL);
	end_before = ev.first + ev.text.len;
	/* Trimmed: the front moved, offsets of kept text did not. */
	CHECK(ev.first > 0);
	CHECK(ev.text.len <= 1000);
	CHECK(events_at(&ev, 0, &p, &first) == 0 && first == ev.first);
	n = events_at(&ev, ev.first, &p, &first);
	CHECK(n == ev.text.len);
	CHECK(p[n - 1] == '\n');
	CHECK(strncmp(p, "1970", 4) == 0); /* starts on a line */
	CHECK(events_at(&ev, end_before, &p, &first) == 0);
	events_close(&ev);
}

TEST(sched_tree_and_persistence)
{
	const char *dir = tmpdir();
	struct sched *s;
	struct sched_obj *root, *t, *n, *f, *x;
	struct sched_function *fn;
	struct rt_buf out = { 0 };

	CHECK(sched_open(&s, dir) == 0);
	root = sched_find(s, SCHED_ROOT_ID);
	CHECK(sched_create(s, root, "acme", NULL, &t) == 0);
	CHECK(sched_create(s, root, "acme", NULL, &x) == -EEXIST);
	CHECK(sched_create(s, root, "bad name", NULL, &x) == -EINVAL);
	CHECK(sched_create(s, t, "prod", NULL, &n) == 0);
	CHECK(sched_create(s, n, "fn", NULL, &f) == 0);
	CHECK(sched_create(s, f, "deeper", NULL, &x) == -EPERM);
	fn = (struct sched_function *)f;
	CHECK(fn->revision == 1);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "64\n", 3, NULL) ==
	      0);
	CHECK(fn->revision == 2);
	/* Same value: accepted, no new revision. */
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "64\n", 3, NULL) ==
	      0);
	CHECK(fn->revision == 2);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "x", 1, NULL) ==
	      -EINVAL);
	CHECK(fn->spec.memory == 64 && fn->revision == 2);
	CHECK(fn->error != NULL && strstr(fn->error, "memory") != NULL);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_REVISION, "9", 1, NULL) ==
	      -EACCES);
	CHECK(sched_remove(s, root, "acme", NULL) == -ENOTEMPTY);
	CHECK(sched_remove(s, root, "nope", NULL) == -ENOENT);
	sched_close(s);

	CHECK(sched_open(&s, dir) == 0);
	root = sched_find(s, SCHED_ROOT_ID);
	t = sched_child(root, "acme");
	CHECK(t != NULL);
	n = t ? sched_child(t, "prod") : NULL;
	f = n ? sched_child(n, "fn") : NULL;
	CHECK(f != NULL);
	if (f != NULL) {
		uint64_t id = f->id;

		fn = (struct sched_function *)f;
		CHECK(fn->revision == 2 && fn->spec.memory == 64);
		CHECK(sched_find(s, f->id) == f);
		CHECK(sched_obj_path(f, &out) == 0);
		CHECK_STR(out.data, "acme/prod/fn");
		CHECK(sched_remove(s, n, "fn", NULL) == 0);
		CHECK(sched_find(s, id) == NULL);
	}
	CHECK(sched_remove(s, t, "prod", NULL) == 0);
	CHECK(sched_remove(s, root, "acme", NULL) == 0);
	rt_buf_free(&out);
	sched_close(s);
}

TEST(sched_journal_lines)
{
	const char *dir = tmpdir();
	struct sched *s;
	struct sched_obj *root, *t, *x;
	const char *p;
	uint64_t first;
	size_t n;
	char *text;

	CHECK(sched_open(&s, dir) == 0);
	root = sched_find(s, SCHED_ROOT_ID);
	CHECK(sched_create(s, root, "acme", NULL, &t) == 0);
	CHECK(sched_create(s, t, "-bad", NULL, &x) == -EINVAL);
	n = sched_events_at(s, 0, &p, &first);
	CHECK(n == sched_events_end(s));
	text = strndup(p, n);
	CHECK(strstr(text, " tenant.created acme\n") != NULL);
	CHECK(strstr(text, " namespace.rejected acme op=mkdir name=-bad "
			   "errno=EINVAL reason=") != NULL);
	free(text);
	sched_close(s);
}

TEST(store_nested_transactions)
{
	const char *dir = tmpdir();
	char path[128];
	struct store *st;
	struct rows c = { 0 };
	struct store_row a = { .kind = STORE_TENANT, .tenant = "a" };
	struct store_row b = { .kind = STORE_TENANT, .tenant = "b" };

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_begin(st) == 0);
	CHECK(store_insert(st, &a) == 0);
	CHECK(store_begin(st) == 0); /* inner: rolled back alone */
	CHECK(store_insert(st, &b) == 0);
	store_rollback(st);
	CHECK(store_commit(st) == 0);
	CHECK(store_commit(st) == -EINVAL); /* nothing open */
	CHECK(store_load(st, collect, &c) == 0);
	CHECK(c.n == 1);
	CHECK_STR(c.last, "0:a/-/-:-");
	store_close(st);
}

TEST(store_derived_transaction)
{
	const char *dir = tmpdir();
	char path[128];
	struct store *st;
	struct rows c = { 0 };
	struct store_row a = { .kind = STORE_TENANT, .tenant = "a" };

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_begin_derived(st) == 0);
	CHECK(store_insert(st, &a) == 0);
	CHECK(store_commit(st) == 0);
	store_close(st);
	/* Committed (the process did not die): visible after a reopen. */
	CHECK(store_open(&st, path) == 0);
	CHECK(store_load(st, collect, &c) == 0);
	CHECK(c.n == 1);
	/* Nested in a durable transaction, a derived one is part of it. */
	CHECK(store_begin(st) == 0);
	CHECK(store_begin_derived(st) == 0);
	store_rollback(st);
	CHECK(store_commit(st) == 0);
	store_close(st);
}

/*
 * test_owners.c - owners of tenants: the permission check, chown and
 * chmod with their store and its migration, a tenant's part of the
 * journal, and the root's files rendered per caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../sched/model/events.h"
#include "../../sched/sched.h"
#include "../../sched/store/store.h"
#include "unit.h"

static char dir_path[64];

static void dir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir_path);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", dir_path);
}

static const char *tmpdir(void)
{
	snprintf(dir_path, sizeof(dir_path), "/tmp/fnfs-unit.XXXXXX");
	if (mkdtemp(dir_path) == NULL)
		return "/nonexistent";
	atexit(dir_remove);
	return dir_path;
}

TEST(owners_caller_may)
{
	static const uint32_t extra[] = { 300, 301 };
	struct sched_caller alice = { 1000, 1000, NULL, 0 };
	struct sched_caller bob = { 1001, 1001, extra, 2 };
	struct sched_caller root = { 0, 0, NULL, 0 };

	CHECK(sched_caller_may(NULL, 1000, 1000, 0, SCHED_MAY_WRITE));
	CHECK(sched_caller_may(&root, 1000, 1000, 0, SCHED_MAY_READ));
	CHECK(sched_caller_may(&alice, 1000, 1000, 0750,
			       SCHED_MAY_READ | SCHED_MAY_WRITE |
				       SCHED_MAY_EXEC));
	/* The owner's bits, not the group's, apply to the owner. */
	CHECK(!sched_caller_may(&alice, 1000, 1000, 0070, SCHED_MAY_READ));
	CHECK(!sched_caller_may(&bob, 1000, 1000, 0750, SCHED_MAY_READ));
	/* A supplementary group counts. */
	CHECK(sched_caller_may(&bob, 1000, 301, 0750, SCHED_MAY_READ));
	CHECK(!sched_caller_may(&bob, 1000, 301, 0750, SCHED_MAY_WRITE));
	CHECK(sched_caller_may(&bob, 1000, 1000, 0755, SCHED_MAY_EXEC));
	CHECK(sched_caller_is_root(NULL) && sched_caller_is_root(&root) &&
	      !sched_caller_is_root(&alice));
}

/* Counts the lines of the root's status (header included) as `who`
 * reads it, and whether `needle` is in it. */
static int status_lines(struct sched *s, const struct sched_caller *who,
			const char *needle, int *found)
{
	struct sched_cursor *c;
	struct rt_buf out = { 0 };
	size_t i;
	int lines = 0;

	*found = 0;
	if (sched_cursor_open(s, SCHED_ROOT_STATUS, who, &c) != 0)
		return -1;
	for (;;) {
		size_t before = out.len;

		if (sched_cursor_next(s, c, &out, 65536) != 0 ||
		    out.len == before)
			break;
	}
	sched_cursor_close(c);
	for (i = 0; i < out.len; i++)
		lines += out.data[i] == '\n';
	*found = out.data != NULL && strstr(out.data, needle) != NULL;
	rt_buf_free(&out);
	return lines;
}

TEST(owners_chown_persists_and_filters)
{
	const char *dir = tmpdir();
	struct sched_caller alice = { 1000, 1000, NULL, 0 };
	struct sched_caller bob = { 1001, 1001, NULL, 0 };
	struct sched_obj *root, *acme, *other, *ns, *fn, *x;
	struct sched_owner w;
	struct sched *s;
	int found;

	CHECK(sched_open(&s, dir) == 0);
	root = sched_find(s, SCHED_ROOT_ID);
	CHECK(sched_create(s, root, "acme", NULL, &acme) == 0);
	CHECK(sched_create(s, root, "other", NULL, &other) == 0);
	CHECK(sched_create(s, acme, "prod", NULL, &ns) == 0);
	CHECK(sched_create(s, ns, "fn", NULL, &fn) == 0);
	CHECK(sched_create(s, other, "prod", NULL, &ns) == 0);
	CHECK(sched_create(s, ns, "fn", NULL, &x) == 0);
	sched_owner_of(fn, &w);
	CHECK(w.uid == 0 && w.gid == 0 && w.mode == 0750);
	CHECK(sched_tenant_of(fn) == acme && sched_tenant_of(root) == NULL);

	/* chown is root's; chmod the owner's or root's. */
	CHECK(sched_tenant_chown(s, acme, &alice, 1000, 1000, -1) == -EPERM);
	CHECK(sched_tenant_chown(s, acme, &alice, -1, -1, 0700) == -EPERM);
	CHECK(sched_tenant_chown(s, acme, NULL, 1000, 1000, -1) == 0);
	CHECK(sched_tenant_chown(s, acme, &alice, -1, -1, 04700) == -EINVAL);
	CHECK(sched_tenant_chown(s, acme, &bob, -1, -1, 0777) == -EPERM);
	CHECK(sched_tenant_chown(s, acme, &alice, -1, -1, 0710) == 0);
	CHECK(sched_tenant_chown(s, fn, NULL, 1, 1, -1) == -EPERM);
	sched_owner_of(fn, &w);
	CHECK(w.uid == 1000 && w.gid == 1000 && w.mode == 0710);

	/* status: root sees both, alice acme only, bob neither. */
	CHECK(status_lines(s, NULL, "acme/prod/fn", &found) == 3 && found);
	CHECK(status_lines(s, &alice, "acme/prod/fn", &found) == 2 && found);
	CHECK(status_lines(s, &alice, "other/", &found) == 2 && !found);
	CHECK(status_lines(s, &bob, "acme/", &found) == 1 && !found);
	/* ... until acme lets others read. */
	CHECK(sched_tenant_chown(s, acme, &alice, -1, -1, 0714) == 0);
	CHECK(status_lines(s, &bob, "acme/prod/fn", &found) == 2 && found);

	/* A non-root creator owns its tenant (a user's own mount). */
	CHECK(sched_create(s, root, "mine", &bob, &x) == 0);
	sched_owner_of(x, &w);
	CHECK(w.uid == 1001 && w.gid == 1001 && w.mode == 0750);
	sched_close(s);

	CHECK(sched_open(&s, dir) == 0);
	acme = sched_child(sched_find(s, SCHED_ROOT_ID), "acme");
	CHECK(acme != NULL);
	if (acme != NULL) {
		sched_owner_of(acme, &w);
		CHECK(w.uid == 1000 && w.gid == 1000 && w.mode == 0714);
	}
	sched_close(s);
}

static int count_rows(const struct store_row *r, void *arg)
{
	if (r->kind == STORE_TENANT && r->uid == 0 && r->gid == 0 &&
	    r->mode == 0750)
		(*(int *)arg)++;
	return 0;
}

TEST(owners_schema_v3_upgrades)
{
	const char *dir = tmpdir();
	char cmd[512], path[128];
	struct store *st = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	store_close(st);
	/* Back to a version 3 tenants table, with a tenant in it. */
	snprintf(cmd, sizeof(cmd),
		 "sqlite3 %s 'DROP TABLE tenants; CREATE TABLE tenants(name "
		 "TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, updated_ms "
		 "INTEGER NOT NULL); INSERT INTO tenants VALUES(\"old\", 1, "
		 "1); PRAGMA user_version = 3'",
		 path);
	CHECK(system(cmd) == 0);
	CHECK(store_open(&st, path) == 0);
	if (st == NULL)
		return;
	CHECK(store_load(st, count_rows, &n) == 0);
	CHECK(n == 1); /* root's, 0750 */
	store_close(st);
}

TEST(owners_tenant_journal)
{
	struct events ev;
	struct events_part a = { 0 }, b = { 0 };
	char buf[4096];
	uint64_t first, at;
	size_t n;
	int i;

	events_init(&ev, 2000);
	for (i = 0; i < 10; i++) {
		at = ev.first + ev.text.len;
		events_append(&ev, 0, "x.y", i % 2 ? "b/ns" : "a/ns", NULL);
		events_part_add(i % 2 ? &b : &a, &ev, at);
	}
	/* Each line is 34 bytes: "1970-01-01T00:00:00.000Z x.y a/ns\n". */
	CHECK(a.end == 5 * 34 && b.end == 5 * 34);
	n = events_part_at(&a, &ev, 0, buf, sizeof(buf), &first);
	CHECK(n == 5 * 34 && first == 0);
	buf[n] = '\0';
	CHECK(strstr(buf, "b/ns") == NULL && strstr(buf, "a/ns") != NULL);
	/* A read from the middle of a line, and a short one. */
	n = events_part_at(&b, &ev, 40, buf, 10, &first);
	CHECK(n == 10 && memcmp(buf, ev.text.data + 34 + 6, 10) == 0);
	/* The journal drops its front: the part's offsets stay. */
	for (i = 0; i < 100; i++) {
		at = ev.first + ev.text.len;
		events_append(&ev, 0, "x.y", "c/ns", NULL);
	}
	at = ev.first + ev.text.len;
	events_append(&ev, 0, "x.y", "a/ns", NULL);
	events_part_add(&a, &ev, at);
	CHECK(a.end == 6 * 34);
	CHECK(events_part_at(&a, &ev, 0, buf, sizeof(buf), &first) == 0);
	CHECK(first == 5 * 34);
	n = events_part_at(&a, &ev, first, buf, sizeof(buf), &first);
	CHECK(n == 34 && memcmp(buf, "1970", 4) == 0);
	CHECK(events_part_first(&b, &ev) == b.end);
	events_part_free(&a);
	events_part_free(&b);
	events_close(&ev);
}

TEST(owners_tenant_budget)
{
	struct events ev;
	struct events_part a = { 0 }, b = { 0 };
	char buf[8192];
	const char *p;
	uint64_t first, at, b_at;
	size_t n;
	int i;

	/* 34-byte lines; a part keeps at most 4000 / 8 = 500 bytes. */
	events_init(&ev, 4000);
	at = events_end(&ev);
	events_append(&ev, 0, "x.y", "r/ns", NULL); /* a root line */
	b_at = events_end(&ev);
	events_append(&ev, 0, "x.y", "b/ns", NULL);
	events_part_add(&b, &ev, b_at);
	/* a floods: only its own lines go. */
	for (i = 0; i < 1000; i++) {
		uint64_t x = events_end(&ev);

		events_append(&ev, 0, "x.y", "a/ns", NULL);
		events_part_add(&a, &ev, x);
	}
	CHECK(events_end(&ev) == 1002 * 34);
	CHECK(ev.text.len <= 2 * 34 + 500);
	/* The root's line and b's are where they were. */
	n = events_at(&ev, at, &p, &first);
	CHECK(n == 2 * 34 && memcmp(p + 25, "x.y r/ns", 8) == 0 &&
	      memcmp(p + 34 + 25, "x.y b/ns", 8) == 0);
	/* Past them, a hole: a reader is sent to a's oldest kept line. */
	n = events_at(&ev, 2 * 34, &p, &first);
	CHECK(n == 0 && first > 2 * 34 && first == a.lines[a.head].at);
	n = events_at(&ev, first, &p, &first);
	CHECK(n > 0 && n <= 500 && memcmp(p + 25, "x.y a/ns", 8) == 0);
	/* b's part is whole, a's offsets stay. */
	n = events_part_at(&b, &ev, 0, buf, sizeof(buf), &first);
	CHECK(n == 34 && first == 0);
	CHECK(a.end == 1000 * 34);
	n = events_part_at(&a, &ev, 0, buf, sizeof(buf), &first);
	CHECK(n == 0 && first > 0 && first < a.end);
	n = events_part_at(&a, &ev, first, buf, sizeof(buf), &first);
	CHECK(n == a.end - first && n <= 500);
	events_part_free(&a);
	events_part_free(&b);
	events_close(&ev);
}

struct held_lines {
	int n;
	char last[256];
};

static void held_line(void *arg, const char *kind, const char *object,
		      const char *kvs)
{
	struct held_lines *h = arg;

	h->n++;
	snprintf(h->last, sizeof(h->last), "%s %s%s", kind, object, kvs);
}

TEST(owners_refusals_limited)
{
	struct events_limit lm = { 0 };
	struct held_lines h = { 0 };
	int i, now = 0;

	for (i = 0; i < 40000; i++)
		now += events_limit_offer(&lm, 5000, "namespace.rejected", "a",
					  " op=mkdir");
	CHECK(now == EVENTS_LIMIT_BURST);
	/* Another kind is limited apart. */
	CHECK(events_limit_offer(&lm, 5000, "function.rejected", "a/n/f",
				 " file=memory") == 1);
	/* Not within the second; after it, one line with the count. */
	CHECK(events_limit_flush(&lm, 5999, 0, held_line, &h) == 1);
	CHECK(h.n == 0);
	CHECK(events_limit_flush(&lm, 6000, 0, held_line, &h) == 0);
	CHECK(h.n == 1);
	CHECK_STR(h.last, "namespace.rejected a op=mkdir count=39995");
	/* A summary is that second's line: more wait for the next. */
	CHECK(events_limit_offer(&lm, 6100, "namespace.rejected", "a",
				 " op=rmdir") == 0);
	CHECK(events_limit_offer(&lm, 7000, "namespace.rejected", "a",
				 " op=rmdir") == 0);
	CHECK(events_limit_flush(&lm, 7000, 1, held_line, &h) == 0);
	CHECK_STR(h.last, "namespace.rejected a op=rmdir count=2");
	CHECK(events_limit_offer(&lm, 8000, "namespace.rejected", "a",
				 " op=rmdir") == 1);
	events_limit_free(&lm);
}

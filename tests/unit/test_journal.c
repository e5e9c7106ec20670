/*
 * test_journal.c - the cluster's journal in etcd
 * (sched/store/etcd/journal_etcd.c): its values and keys, and, on a real etcd
 * member, several controllers' journals that end the same, line for line at the
 * same offsets, with each line once, within the bound kept in etcd.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sched/store/etcd/journal_etcd.h"
#include "etcd_cluster.h"
#include "unit.h"

#define CLUSTER "jt"
#define PRE	"/fnfs/" CLUSTER "/ev/"

/* ---------------------------------------------------- values and keys */

TEST(journal_value_parse)
{
	struct rt_buf v = { 0 };
	struct journal_etcd_entry e;
	uint64_t off = 0;
	const char *w = "0123456789abcdef";

	CHECK(journal_etcd_value(&v, "acme", 1700000000123, w, "x y\n", 4) ==
	      0);
	CHECK_STR(v.data, "acme 1700000000123 0123456789abcdef x y\n");
	CHECK(journal_etcd_parse(v.data, v.len, &e) == 0);
	CHECK_STR(e.tenant, "acme");
	CHECK(e.ms == 1700000000123);
	CHECK_STR(e.writer, w);
	CHECK(e.len == 4 && memcmp(e.line, "x y\n", 4) == 0);

	CHECK(journal_etcd_value(&v, NULL, 5, w, "l\n", 2) == 0);
	CHECK_STR(v.data, "- 5 0123456789abcdef l\n");
	CHECK(journal_etcd_parse(v.data, v.len, &e) == 0);
	CHECK_STR(e.tenant, "");
	/* refused */
	CHECK(journal_etcd_value(&v, "a/b", 5, w, "l\n", 2) == -EINVAL);
	CHECK(journal_etcd_value(&v, NULL, 5, "xyz", "l\n", 2) == -EINVAL);
	CHECK(journal_etcd_value(&v, NULL, -1, w, "l\n", 2) == -EINVAL);
	CHECK(journal_etcd_parse("- 5 0123456789abcdef l", 22, &e) == -EINVAL);
	CHECK(journal_etcd_parse("- 5 0123456789abcdef ", 21, &e) == -EINVAL);
	CHECK(journal_etcd_parse("- x 0123456789abcdef l\n", 23, &e) ==
	      -EINVAL);
	CHECK(journal_etcd_parse("- -5 0123456789abcdef l\n", 24, &e) ==
	      -EINVAL);
	CHECK(journal_etcd_parse("a/b 5 0123456789abcdef l\n", 25, &e) ==
	      -EINVAL);
	CHECK(journal_etcd_parse("- 5 0123456789ABCDEF l\n", 23, &e) ==
	      -EINVAL);
	CHECK(journal_etcd_parse("- 5 0123 l\n", 11, &e) == -EINVAL);
	CHECK(journal_etcd_parse("", 0, &e) == -EINVAL);

	CHECK(journal_etcd_key_offset(PRE, PRE "00000000000000000042",
				      strlen(PRE) + 20, &off) == 0);
	CHECK(off == 42);
	CHECK(journal_etcd_key_offset(PRE, PRE "18446744073709551615",
				      strlen(PRE) + 20, &off) == 0);
	CHECK(off == UINT64_MAX);
	CHECK(journal_etcd_key_offset(PRE, PRE "0000000000000000004",
				      strlen(PRE) + 19, &off) == -EINVAL);
	CHECK(journal_etcd_key_offset(PRE, PRE "0000000000000000004x",
				      strlen(PRE) + 20, &off) == -EINVAL);
	CHECK(journal_etcd_key_offset(PRE, "/fnfs/jx/ev/00000000000000000042",
				      strlen(PRE) + 20, &off) == -EINVAL);
	CHECK(journal_etcd_key_offset(PRE, PRE "99999999999999999999",
				      strlen(PRE) + 20, &off) == -EINVAL);
	rt_buf_free(&v);
}

/* ------------------------------------------------------------- live */

/* One controller's side: its journal and what it heard. */
struct side {
	struct events ev;
	struct journal_etcd *j;
	int tenant_lines; /* lines of tenant "t1" heard */
	uint64_t last_at; /* the last line's offset */
};

static void on_line(void *arg, const char *tenant, uint64_t at)
{
	struct side *d = arg;

	if (tenant != NULL && strcmp(tenant, "t1") == 0)
		d->tenant_lines++;
	d->last_at = at;
}

static int side_open(struct side *d, uv_loop_t *loop,
		     const struct etcd_cluster *k, size_t keep)
{
	struct etcd_config cfg = { 0 };

	memset(d, 0, sizeof(*d));
	events_init(&d->ev, 4u << 20);
	cfg.endpoints = k->endpoints;
	cfg.timeout_ms = 3000;
	return journal_etcd_open(&d->j, loop, &cfg, CLUSTER, keep, &d->ev,
				 on_line, d);
}

static void side_close(struct side *d)
{
	journal_etcd_close(d->j);
	d->j = NULL;
	events_close(&d->ev);
}

static uint64_t side_end(const struct side *d)
{
	return d->ev.first + d->ev.text.len;
}

static size_t lines_of(const struct side *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->ev.text.len; i++)
		n += d->ev.text.data[i] == '\n';
	return n;
}

static void on_bound(uv_timer_t *t)
{
	*(int *)t->data = 1;
	uv_stop(t->loop);
}

/* Runs `loop` until every side's journal ends at `end` or `ms` passed.
 * Returns 0 or -ETIMEDOUT. */
static int run_until_end(uv_loop_t *loop, struct side **v, int n, uint64_t end,
			 int ms)
{
	uv_timer_t t;
	int expired = 0, i, done = 0;

	uv_timer_init(loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_bound, (uint64_t)ms, 0);
	while (!done && !expired) {
		uv_run(loop, UV_RUN_ONCE);
		for (done = 1, i = 0; i < n; i++)
			done = done && side_end(v[i]) >= end;
	}
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return done ? 0 : -ETIMEDOUT;
}

static void loop_end(uv_loop_t *loop)
{
	int i;

	for (i = 0; i < 200 && uv_run(loop, UV_RUN_NOWAIT) != 0; i++)
		;
	CHECK(uv_loop_close(loop) == 0);
}

static int cluster_up(struct etcd_cluster *k, int n)
{
	int rc = etcd_cluster_start(k, n, 12000);

	if (rc < 0)
		CHECK(!"etcd runs (scripts/install-deps installs it)");
	return rc;
}

/* Sends line `tag`-`i` of tenant "t1" (odd i) or none, and returns its
 * length. */
static size_t send_line(struct side *d, const char *tag, int i, size_t pad)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%s-%04d %.*s\n", tag, i, (int)pad,
			 "............................................"
			 "............................................");

	journal_etcd_send(d->j, 1000 + i, i % 2 ? "t1" : NULL, line, (size_t)n);
	return (size_t)n;
}

/* Three controllers write at once: each line is in every journal once,
 * at the same offset on each; the tenant's lines are heard by all. */
TEST(journal_live_three_writers)
{
	struct etcd_cluster cl;
	struct side s[3];
	struct side *all[3] = { &s[0], &s[1], &s[2] };
	uv_loop_t loop;
	uint64_t total = 0;
	char tag[8], want[32];
	int i, k;

	uv_loop_init(&loop);
	if (cluster_up(&cl, 1) < 0)
		goto out;
	for (k = 0; k < 3; k++)
		CHECK(side_open(&s[k], &loop, &cl, 0) == 0);
	CHECK(s[0].ev.first == 0 && s[0].ev.text.len == 0);
	for (i = 0; i < 60; i++) {
		for (k = 0; k < 3; k++) {
			snprintf(tag, sizeof(tag), "w%d", k);
			total += send_line(&s[k], tag, i, (size_t)(i % 7));
		}
		if (i % 10 == 0) /* some batches cross others' */
			uv_run(&loop, UV_RUN_NOWAIT);
	}
	CHECK(run_until_end(&loop, all, 3, total, 15000) == 0);
	for (k = 0; k < 3; k++) {
		CHECK(side_end(&s[k]) == total);
		CHECK(s[k].ev.first == 0);
		CHECK(lines_of(&s[k]) == 180);
		CHECK(s[k].tenant_lines == 90);
		CHECK(s[k].ev.last_ms >= 1000);
	}
	CHECK(s[1].ev.text.len == s[0].ev.text.len &&
	      memcmp(s[0].ev.text.data, s[1].ev.text.data, s[0].ev.text.len) ==
		      0);
	CHECK(s[2].ev.text.len == s[0].ev.text.len &&
	      memcmp(s[0].ev.text.data, s[2].ev.text.data, s[0].ev.text.len) ==
		      0);
	/* Each line once, in the order its writer sent them. */
	for (k = 0; k < 3; k++) {
		const char *prev = s[0].ev.text.data, *p;

		for (i = 0; i < 60; i++) {
			snprintf(want, sizeof(want), "w%d-%04d ", k, i);
			p = strstr(s[0].ev.text.data, want);
			CHECK(p != NULL && p >= prev);
			CHECK(p == NULL || strstr(p + 1, want) == NULL);
			if (p != NULL)
				prev = p;
		}
	}
	/* A controller that comes later reads the same journal. */
	{
		struct side late;

		CHECK(side_open(&late, &loop, &cl, 0) == 0);
		CHECK(late.ev.first == 0);
		CHECK(late.ev.text.len == s[0].ev.text.len &&
		      memcmp(late.ev.text.data, s[0].ev.text.data,
			     late.ev.text.len) == 0);
		CHECK(late.tenant_lines == 90);
		side_close(&late);
	}
	for (k = 0; k < 3; k++)
		side_close(&s[k]);
out:
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

static void on_range(void *arg, const struct etcd_answer *a)
{
	int64_t *v = arg;
	size_t i;

	v[0] = a->rc == 0 ? (int64_t)a->nkvs : -1;
	v[1] = -1;
	v[2] = 0;
	for (i = 0; a->rc == 0 && i < a->nkvs; i++) {
		uint64_t off;

		if (journal_etcd_key_offset(PRE, a->kvs[i].key,
					    a->kvs[i].key_len, &off) == 0 &&
		    v[1] < 0)
			v[1] = (int64_t)off;
		v[2] += (int64_t)a->kvs[i].value_len;
	}
	v[3] = 1;
}

static void on_range_done(uv_timer_t *t)
{
	(void)t;
}

/* The bound: etcd keeps about `keep` bytes; the older lines' keys are
 * deleted, offsets stay absolute, and a controller that comes later
 * starts at the first kept line. */
TEST(journal_live_bound)
{
	struct etcd_cluster cl;
	struct etcd_client *c = NULL;
	struct etcd_config cfg = { 0 };
	struct side a, late;
	struct side *pa = &a, *both[2] = { &a, &late };
	uv_loop_t loop;
	uv_timer_t t;
	uint64_t total = 0, first;
	int64_t got[4] = { 0 };
	size_t keep = 4096;
	int i, spins;

	uv_loop_init(&loop);
	if (cluster_up(&cl, 1) < 0)
		goto out;
	CHECK(side_open(&a, &loop, &cl, keep) == 0);
	/* In rounds, so that batches are small against the bound. */
	for (i = 0; i < 400; i++) {
		total += send_line(&a, "b", i, 40);
		if (i % 20 == 19)
			CHECK(run_until_end(&loop, &pa, 1, total, 8000) == 0);
	}
	CHECK(run_until_end(&loop, &pa, 1, total, 8000) == 0);
	CHECK(side_end(&a) == total);
	/* What etcd keeps. */
	cfg.endpoints = cl.endpoints;
	CHECK(etcd_client_new(&loop, &cfg, &c) == 0);
	CHECK(etcd_range(c, PRE, "/fnfs/" CLUSTER "/ev0", 0, 0,
			 (etcd_cb)on_range, got) == 0);
	uv_timer_init(&loop, &t);
	uv_timer_start(&t, on_range_done, 100, 100);
	for (spins = 0; !got[3] && spins < 200; spins++)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	CHECK(got[3] == 1);
	CHECK(got[0] > 0 && got[0] < 400);
	first = (uint64_t)got[1];
	CHECK(got[1] > 0);
	CHECK(total - first <= keep + 20 * 80);
	CHECK(total - first >= keep / 4 * 3 - 80);
	/* Later: the first kept line's offset is its journal's first. */
	CHECK(side_open(&late, &loop, &cl, keep) == 0);
	CHECK(late.ev.first == first);
	CHECK(side_end(&late) == total);
	CHECK(a.ev.first == 0); /* the memory's bound is its own */
	CHECK(late.ev.text.len == total - first &&
	      memcmp(late.ev.text.data, a.ev.text.data + first,
		     late.ev.text.len) == 0);
	/* and both go on at the same offsets */
	total += send_line(&late, "c", 1, 3);
	CHECK(run_until_end(&loop, both, 2, total, 8000) == 0);
	CHECK(side_end(&a) == total && side_end(&late) == total);
	side_close(&late);
	side_close(&a);
	etcd_client_free(c);
out:
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* A flush (an unmount): the lines queued go at once, and a journal
 * opened after the first one stopped reads them all. */
TEST(journal_live_flush)
{
	struct etcd_cluster cl;
	struct side a, late;
	uv_loop_t loop;
	uv_timer_t t;
	uint64_t total = 0;
	int i, expired = 0;

	uv_loop_init(&loop);
	if (cluster_up(&cl, 1) < 0)
		goto out;
	CHECK(side_open(&a, &loop, &cl, 0) == 0);
	CHECK(journal_etcd_flushed(a.j)); /* nothing queued */
	for (i = 0; i < 5; i++)
		total += send_line(&a, "f", i, 20);
	journal_etcd_flush(a.j);
	CHECK(!journal_etcd_flushed(a.j));
	uv_timer_init(&loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_bound, 5000, 0);
	while (!journal_etcd_flushed(a.j) && !expired)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	CHECK(!expired && journal_etcd_flushed(a.j));
	/* Stopped at once, before its watch brought the lines back. */
	journal_etcd_stop(a.j);
	CHECK(side_open(&late, &loop, &cl, 0) == 0);
	CHECK(side_end(&late) == total && lines_of(&late) == 5);
	side_close(&late);
	side_close(&a);
out:
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* etcd away: the journal starts empty, lines wait in a bounded queue,
 * the oldest dropped and counted; the journal itself stays as it was. */
TEST(journal_queue_bound_while_away)
{
	struct etcd_config cfg = { 0 };
	struct journal_etcd_state st;
	struct side d;
	uv_loop_t loop;
	int i;

	uv_loop_init(&loop);
	memset(&d, 0, sizeof(d));
	events_init(&d.ev, 4u << 20);
	cfg.endpoints = "127.0.0.1:1"; /* nobody */
	cfg.timeout_ms = 1000;
	CHECK(journal_etcd_open(&d.j, &loop, &cfg, CLUSTER, 0, &d.ev, on_line,
				&d) == 0);
	CHECK(d.ev.first == 0 && d.ev.text.len == 0);
	for (i = 0; i < JOURNAL_ETCD_QUEUE_LINES; i++)
		send_line(&d, "q", i, 10);
	uv_run(&loop, UV_RUN_NOWAIT);
	journal_etcd_state(d.j, &st);
	CHECK(st.queued == JOURNAL_ETCD_QUEUE_LINES);
	CHECK(st.dropped == 0);
	/* One more: the oldest eighth goes, at once. */
	send_line(&d, "q", i, 10);
	journal_etcd_state(d.j, &st);
	CHECK(st.queued == JOURNAL_ETCD_QUEUE_LINES / 8 * 7 + 1);
	CHECK(st.dropped == JOURNAL_ETCD_QUEUE_LINES / 8);
	CHECK(st.watching == 0);
	CHECK(d.ev.text.len == 0);
	/* An unmount does not wait for lines that cannot go. */
	journal_etcd_flush(d.j);
	CHECK(journal_etcd_flushed(d.j));
	side_close(&d);
	loop_end(&loop);
}

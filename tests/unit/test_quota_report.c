/*
 * test_quota_report.c - use against quota in the root's stats and
 * metrics: the lines of each tenant a caller may read, the same through
 * a cursor in pieces as whole, and none of a tenant hidden from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sched/model/quota.h"
#include "../../sched/sched.h"
#include "unit.h"

static char qdir[64];

static void qdir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", qdir);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", qdir);
}

/* Renders `f` for `who` through a cursor, `want` bytes a step. */
static void rendered(struct sched *s, enum sched_file f,
		     const struct sched_caller *who, size_t want,
		     struct rt_buf *out)
{
	struct sched_cursor *c;

	CHECK(sched_cursor_open(s, f, who, &c) == 0);
	for (;;) {
		size_t before = out->len;

		CHECK(sched_cursor_next(s, c, out, want) == 0);
		if (out->len == before)
			break;
		CHECK(out->data[out->len - 1] == '\n');
	}
	sched_cursor_close(c);
}

TEST(quota_report_stats_and_metrics)
{
	static const size_t wants[] = { 0, 1, 7, 4096 };
	static const enum sched_file files[] = { SCHED_ROOT_STATS,
						 SCHED_ROOT_METRICS };
	struct sched_caller bob = { 1001, 1001, NULL, 0 };
	struct sched_obj *root, *acme, *beta, *ns, *fn;
	struct sched_wait *w;
	struct sched *s;
	long long used, limit;
	size_t i, j, size;

	snprintf(qdir, sizeof(qdir), "/tmp/fnfs-unit-qr.XXXXXX");
	CHECK(mkdtemp(qdir) != NULL);
	atexit(qdir_remove);
	CHECK(sched_open(&s, qdir) == 0);
	if (s == NULL)
		return;
	root = sched_find(s, SCHED_ROOT_ID);
	CHECK(sched_create(s, root, "acme", NULL, &acme) == 0);
	CHECK(sched_create(s, root, "beta", NULL, &beta) == 0);
	CHECK(sched_create(s, acme, "dev", NULL, &ns) == 0);
	CHECK(sched_create(s, ns, "f", NULL, &fn) == 0);
	CHECK(sched_quota_write(s, acme, SCHED_QUOTA_MEMORY, "2048\n", 5,
				NULL) == 0);
	/* acme is alice's alone; beta is root's, readable by others. */
	CHECK(sched_tenant_chown(s, acme, NULL, 1000, 1000, 0700) == 0);
	CHECK(sched_tenant_chown(s, beta, NULL, -1, -1, 0755) == 0);

	CHECK(sched_quota_get(s, acme, SCHED_QUOTA_MEMORY, &used, &limit) == 0);
	CHECK(used == 128 && limit == 2048);
	CHECK(sched_quota_get(s, beta, SCHED_QUOTA_CODE_BYTES, &used, &limit) ==
	      0);
	CHECK(used == 0 && limit == SCHED_QUOTA_NONE);
	CHECK(sched_quota_get(s, ns, SCHED_QUOTA_MEMORY, &used, &limit) ==
	      -ENOENT);
	CHECK(sched_quota_get(s, acme, SCHED_QUOTA_COUNT, &used, &limit) ==
	      -ENOENT);

	for (i = 0; i < 2; i++) {
		struct rt_buf whole = { 0 };

		CHECK(sched_file_read(s, root, files[i], &whole, NULL, NULL,
				      &w) == 0);
		CHECK(sched_cursor_size(s, files[i], NULL, &size) == 0);
		CHECK(size == whole.len);
		for (j = 0; j < sizeof(wants) / sizeof(wants[0]); j++) {
			struct rt_buf all = { 0 };

			rendered(s, files[i], NULL, wants[j], &all);
			CHECK(all.len == whole.len && all.data != NULL &&
			      memcmp(all.data, whole.data, whole.len) == 0);
			rt_buf_free(&all);
		}
		if (files[i] == SCHED_ROOT_STATS) {
			CHECK(strstr(whole.data,
				     "\nquota/acme/memory_used 128\n"
				     "quota/acme/memory_limit 2048\n"
				     "quota/acme/instances_used 1\n"
				     "quota/acme/instances_limit 32\n") !=
			      NULL);
			CHECK(strstr(whole.data,
				     "\nquota/beta/memory_limit none\n") !=
			      NULL);
			CHECK(strstr(whole.data, "quota/acme/") <
			      strstr(whole.data, "quota/beta/"));
		} else {
			CHECK(strstr(whole.data,
				     "\nfnfs_tenant_quota_used{tenant=\"acme\","
				     "resource=\"memory\"} 128\n") != NULL);
			CHECK(strstr(whole.data,
				     "\nfnfs_tenant_quota_limit{tenant="
				     "\"acme\","
				     "resource=\"memory\"} 2048\n") != NULL);
			CHECK(strstr(whole.data,
				     "\nfnfs_tenant_quota_limit{tenant="
				     "\"beta\","
				     "resource=\"functions\"} +Inf\n") != NULL);
		}
		rt_buf_free(&whole);

		/* bob may read beta, not acme. */
		rendered(s, files[i], &bob, 100, &whole);
		CHECK(whole.data != NULL && strstr(whole.data, "acme") == NULL);
		CHECK(strstr(whole.data, "beta") != NULL);
		CHECK(sched_cursor_size(s, files[i], &bob, &size) == 0);
		CHECK(size == whole.len);
		rt_buf_free(&whole);
	}
	sched_close(s);
}

/*
 * test_render.c - the root's status and metrics rendered through a
 * cursor, a piece at a time: the same bytes as a whole rendering, whole
 * lines in every piece, the size measured without rendering, and
 * functions removed or created in the middle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sched/sched.h"
#include "unit.h"

static char dir[] = "/tmp/fnfs-unit-render.XXXXXX";

static const char *tmpdir(void)
{
	memcpy(dir + sizeof(dir) - 7, "XXXXXX", 6);
	return mkdtemp(dir);
}

/* Closes the tree and removes its data directory. */
static void done(struct sched *s)
{
	static const char *const files[] = { "fnfs.db", "fnfs.db-wal",
					     "fnfs.db-shm", "fnfs.db-journal" };
	char path[sizeof(dir) + 32];
	size_t i;

	sched_close(s);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	CHECK(rmdir(dir) == 0);
}

/* A tree of 3 tenants x 2 namespaces x 30 functions. */
static struct sched *tree(void)
{
	static const char *const tenants[] = { "acme", "beta", "gamma" };
	static const char *const spaces[] = { "dev", "prod" };
	struct sched *s = NULL;
	struct sched_obj *root, *t, *n, *f;
	char name[16];
	int i, j, k;

	CHECK(sched_open(&s, tmpdir()) == 0);
	if (s == NULL)
		return NULL;
	root = sched_find(s, SCHED_ROOT_ID);
	for (i = 0; i < 3; i++) {
		CHECK(sched_create(s, root, tenants[i], NULL, &t) == 0);
		for (j = 0; j < 2; j++) {
			CHECK(sched_create(s, t, spaces[j], NULL, &n) == 0);
			for (k = 29; k >= 0; k--) {
				snprintf(name, sizeof(name), "f%02d", k);
				CHECK(sched_create(s, n, name, NULL, &f) == 0);
			}
		}
	}
	return s;
}

/* Renders `f` through a cursor, `want` bytes a step: every step whole
 * lines, none empty before the end. */
static void pieces(struct sched *s, enum sched_file f, size_t want,
		   struct rt_buf *all)
{
	struct sched_cursor *c;
	struct rt_buf piece = { 0 };

	CHECK(sched_cursor_open(s, f, NULL, &c) == 0);
	for (;;) {
		rt_buf_reset(&piece);
		CHECK(sched_cursor_next(s, c, &piece, want) == 0);
		if (piece.len == 0)
			break;
		CHECK(piece.data[piece.len - 1] == '\n');
		rt_buf_append(all, piece.data, piece.len);
	}
	rt_buf_reset(&piece);
	CHECK(sched_cursor_next(s, c, &piece, want) == 0 && piece.len == 0);
	sched_cursor_close(c);
	rt_buf_free(&piece);
}

TEST(render_pieces_are_the_whole_rendering)
{
	static const enum sched_file files[] = { SCHED_ROOT_STATUS,
						 SCHED_ROOT_METRICS };
	static const size_t wants[] = { 0, 1, 7, 100, 4096, (size_t)-1 };
	struct sched *s = tree();
	struct sched_wait *w;
	size_t i, j, size;

	if (s == NULL)
		return;
	for (i = 0; i < 2; i++) {
		struct rt_buf whole = { 0 };

		CHECK(sched_file_read(s, sched_find(s, SCHED_ROOT_ID), files[i],
				      &whole, NULL, NULL, &w) == 0);
		CHECK(whole.len > 1000);
		CHECK(sched_cursor_size(s, files[i], NULL, &size) == 0);
		CHECK(size == whole.len);
		for (j = 0; j < sizeof(wants) / sizeof(wants[0]); j++) {
			struct rt_buf all = { 0 };

			pieces(s, files[i], wants[j], &all);
			CHECK(all.len == whole.len);
			CHECK(all.data != NULL &&
			      memcmp(all.data, whole.data, whole.len) == 0);
			rt_buf_free(&all);
		}
		rt_buf_free(&whole);
	}
	done(s);
}

TEST(render_order_is_by_path)
{
	struct sched *s = tree();
	struct sched_wait *w;
	struct rt_buf out = { 0 };
	char *a, *b, *c;

	if (s == NULL)
		return;
	CHECK(sched_file_read(s, sched_find(s, SCHED_ROOT_ID),
			      SCHED_ROOT_STATUS, &out, NULL, NULL, &w) == 0);
	a = strstr(out.data, "\nacme/dev/f00 ");
	b = strstr(out.data, "\nacme/dev/f29 ");
	c = strstr(out.data, "\nbeta/dev/f00 ");
	CHECK(a != NULL && b != NULL && c != NULL && a < b && b < c);
	CHECK(strncmp(out.data, "FUNCTION", 8) == 0);
	rt_buf_free(&out);
	done(s);
}

TEST(render_functions_removed_or_created_midway)
{
	struct sched *s = tree();
	struct sched_cursor *c;
	struct sched_obj *root, *ns, *f;
	struct rt_buf out = { 0 };
	const char *first_family = "fnfs_function_calls_received_total{";
	char *copy, *line, *save = NULL;
	int seen_early = 0;

	if (s == NULL)
		return;
	root = sched_find(s, SCHED_ROOT_ID);
	ns = sched_child(sched_child(root, "acme"), "dev");
	CHECK(sched_cursor_open(s, SCHED_ROOT_METRICS, NULL, &c) == 0);
	/* The HELP and TYPE lines, then acme/dev/f00 and f01. */
	CHECK(sched_cursor_next(s, c, &out, 1) == 0);
	CHECK(sched_cursor_next(s, c, &out, 1) == 0);
	CHECK(sched_cursor_next(s, c, &out, 1) == 0);
	CHECK(strstr(out.data, "function=\"f01\"") != NULL);
	CHECK(sched_remove(s, ns, "f00", NULL) == 0);
	CHECK(sched_remove(s, ns, "f20", NULL) == 0);
	CHECK(sched_create(s, ns, "f10x", NULL, &f) == 0);
	while (1) {
		size_t before = out.len;

		CHECK(sched_cursor_next(s, c, &out, 4096) == 0);
		if (out.len == before)
			break;
	}
	sched_cursor_close(c);
	CHECK(strstr(out.data, "function=\"f10x\"") == NULL);
	CHECK(strstr(out.data,
		     "tenant=\"acme\",namespace=\"dev\",function=\"f20\"") ==
	      NULL);
	/* f00 was rendered before its removal in the first family only. */
	copy = strdup(out.data ? out.data : "");
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "tenant=\"acme\",namespace=\"dev\",function="
				 "\"f00\"") == NULL)
			continue;
		CHECK(strncmp(line, first_family, strlen(first_family)) == 0);
		seen_early++;
	}
	free(copy);
	CHECK(seen_early == 1);
	rt_buf_free(&out);
	done(s);
}

TEST(render_cursor_only_for_large_files)
{
	struct sched *s = tree();
	struct sched_cursor *c = (struct sched_cursor *)&c;

	if (s == NULL)
		return;
	CHECK(sched_cursor_open(s, SCHED_FN_STATS, NULL, &c) == -EINVAL);
	CHECK(c == NULL);
	sched_cursor_close(NULL);
	done(s);
}

/*
 * test_store_fail.c - a store failure is an error, never a silent success
 * (issue 10, item 6): with a failure injected into SQLite, every write
 * returns the errno and leaves the model, and what a reopen loads, as it
 * was.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

#include "../../sched/common.h"
#include "../../sched/internal.h"
#include "../../sched/face/workers.h"
#include "unit.h"

static char dir_path[64];
static uv_loop_t loop;

static void shut(void *arg)
{
	*(int *)arg = 1;
}

/* Shuts the controller down on its loop and frees it (no leak for the
 * sanitizer's run). */
static void finish(struct sched *s)
{
	int done = 0;

	sched_shutdown(s, shut, &done);
	while (!done && uv_run(&loop, UV_RUN_ONCE))
		;
	uv_run(&loop, UV_RUN_NOWAIT);
	sched_close(s);
	uv_loop_close(&loop);
}

static void dir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir_path);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", dir_path);
}

/* A fresh data directory with acme/prod/fn running `sleep 1` twice. */
static struct sched_function *fixture(struct sched **out)
{
	struct sched_obj *t, *n, *f;
	struct sched *s;

	snprintf(dir_path, sizeof(dir_path), "/tmp/fnfs-unit.XXXXXX");
	if (mkdtemp(dir_path) == NULL)
		return NULL;
	atexit(dir_remove);
	struct sched_options opt = { 0 };

	if (sched_open(&s, dir_path) != 0 || uv_loop_init(&loop) != 0)
		return NULL;
	opt.workers = 0;
	opt.self = "/bin/false";
	if (sched_start(s, &loop, &opt) != 0)
		return NULL;
	if (sched_create(s, sched_find(s, SCHED_ROOT_ID), "acme", NULL, &t) !=
		    0 ||
	    sched_create(s, t, "prod", NULL, &n) != 0 ||
	    sched_create(s, n, "fn", NULL, &f) != 0)
		return NULL;
	if (sched_function_write(s, (struct sched_function *)f,
				 SCHED_ATTR_COMMAND, "sleep 1\n", 8,
				 NULL) != 0 ||
	    sched_function_write(s, (struct sched_function *)f,
				 SCHED_ATTR_PARALLELISM, "2\n", 2, NULL) != 0)
		return NULL;
	*out = s;
	return (struct sched_function *)f;
}

static int write_state(struct sched *s, struct sched_obj *o, const char *v)
{
	struct sched_wait *w;

	return sched_file_write(s, o, SCHED_FN_STATE, v, strlen(v), NULL, NULL,
				&w);
}

struct want {
	int n;
	int run;
};

static int want_cb(const struct store_instance *r, void *arg)
{
	struct want *w = arg;

	if (r->n == w->n)
		w->run = r->desired_run;
	return 0;
}

/* The desired state of instance N as stored (-1: no row). */
static int stored_desired(int n)
{
	struct store *st;
	struct want w = { n, -1 };
	char path[128];

	snprintf(path, sizeof(path), "%s/fnfs.db", dir_path);
	if (store_open(&st, path) != 0)
		return -2;
	store_instance_load(st, want_cb, &w);
	store_close(st);
	return w.run;
}

TEST(store_fail_attribute_write)
{
	struct sched *s = NULL;
	struct sched_function *fn = fixture(&s);
	uint64_t rev;

	CHECK(fn != NULL);
	if (fn == NULL)
		return;
	rev = fn->revision;
	store_inject_failure(s->store, 0, -EIO);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "64\n", 3, NULL) ==
	      -EIO);
	CHECK(fn->spec.memory == 128);
	CHECK(fn->revision == rev);
	CHECK(fn->error != NULL && strstr(fn->error, "store") != NULL);
	/* A full disk is ENOSPC, at the commit this time. */
	store_inject_failure(s->store, 2, -ENOSPC);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "64\n", 3, NULL) ==
	      -ENOSPC);
	CHECK(fn->spec.memory == 128);
	CHECK(sched_function_write(s, fn, SCHED_ATTR_MEMORY, "64\n", 3, NULL) ==
	      0);
	CHECK(fn->spec.memory == 64);
	finish(s);
}

TEST(store_fail_state_write)
{
	struct sched *s = NULL;
	struct sched_function *fn = fixture(&s);
	struct sched_instance *in;
	int k;

	CHECK(fn != NULL);
	if (fn == NULL)
		return;
	in = sched__instance_by_id(s, "acme/prod/fn/1");
	CHECK(in != NULL && in->desired_run == 1);
	/* Whichever statement fails (a row, or the commit), nothing
	 * changes. */
	for (k = 0; k < 4; k++) {
		store_inject_failure(s->store, k, -EIO);
		CHECK(write_state(s, &fn->obj, "stop\n") == -EIO);
		CHECK(in->desired_run == 1);
		CHECK(sched__instance_by_id(s, "acme/prod/fn/0")->desired_run ==
		      1);
	}
	store_inject_failure(s->store, -1, 0);
	CHECK(stored_desired(0) == 1);
	CHECK(stored_desired(1) == 1);
	finish(s);
}

TEST(store_fail_state_write_then_success)
{
	struct sched *s = NULL;
	struct sched_function *fn = fixture(&s);

	CHECK(fn != NULL);
	if (fn == NULL)
		return;
	CHECK(write_state(s, &fn->obj, "stop\n") == 0);
	CHECK(sched__instance_by_id(s, "acme/prod/fn/1")->desired_run == 0);
	CHECK(stored_desired(0) == 0);
	CHECK(stored_desired(1) == 0);
	finish(s);
}

TEST(store_fail_create_and_remove)
{
	struct sched *s = NULL;
	struct sched_function *fn = fixture(&s);
	struct sched_obj *ns, *x = NULL;

	CHECK(fn != NULL);
	if (fn == NULL)
		return;
	ns = fn->obj.parent;
	store_inject_failure(s->store, 0, -ENOSPC);
	CHECK(sched_create(s, ns, "other", NULL, &x) == -ENOSPC);
	CHECK(x == NULL && sched_child(ns, "other") == NULL);
	/* The failure at the function's own row, after its instances'. */
	store_inject_failure(s->store, 3, -EIO);
	CHECK(sched_remove(s, ns, "fn", NULL) == -EIO);
	CHECK(sched_child(ns, "fn") == &fn->obj);
	CHECK(fn->obj.children.count == 2);
	CHECK(stored_desired(0) == 1);
	CHECK(stored_desired(1) == 1);
	finish(s);
}

/* Issue 24: a store result the controller dropped. A --workers that the
 * store cannot take fails the start, and the pool's size stays. */
TEST(store_fail_start_pool_size)
{
	struct sched *s = NULL;
	struct sched_options opt = { 0 };
	char v[32];

	snprintf(dir_path, sizeof(dir_path), "/tmp/fnfs-unit.XXXXXX");
	CHECK(mkdtemp(dir_path) != NULL);
	atexit(dir_remove);
	CHECK(sched_open(&s, dir_path) == 0);
	CHECK(uv_loop_init(&loop) == 0);
	if (s == NULL)
		return;
	opt.workers = 3;
	opt.self = "/bin/false";
	store_inject_failure(s->store, 0, -ENOSPC);
	CHECK(sched_start(s, &loop, &opt) == -ENOSPC);
	CHECK(s->pool_state.size == 0);
	CHECK(store_setting_get(s->store, "pool_size", v, sizeof(v)) ==
	      -ENOENT);
	sched_close(s);
	uv_loop_close(&loop);
}

/* A leaving worker whose row the store cannot delete stays, offline,
 * with its row; once the store takes it, it goes. */
TEST(store_fail_worker_removed)
{
	struct sched *s = NULL;
	struct sched_function *fn = fixture(&s);
	struct sched_worker *w;
	struct store_worker row = {
		.id = "wx", .memory_mb = 1024, .tags = "[]", .namespaces = "[]"
	};
	int k;

	CHECK(fn != NULL);
	if (fn == NULL)
		return;
	CHECK(store_worker_put(s->store, &row) == 0);
	w = (struct sched_worker *)sched__obj_new(s, SCHED_WORKER, &s->pool,
						  "wx", 1, 1);
	CHECK(w != NULL);
	if (w == NULL)
		return;
	w->memory_mb = 1024;
	/* Whichever of its writes fails (after the two of its lost
	 * instances' transaction: begin, the row, the process, the
	 * commit), the worker stays. */
	for (k = 2; k < 6; k++) {
		w->online = 1;
		w->leaving = 1;
		store_inject_failure(s->store, k, -EIO);
		sched__worker_gone(s, w, "test");
		CHECK(sched_child(&s->pool, "wx") == &w->obj);
		if (sched_child(&s->pool, "wx") != &w->obj)
			return; /* dropped: w is gone */
		CHECK(!w->online);
	}
	store_inject_failure(s->store, -1, 0);
	w->online = 1;
	sched__worker_gone(s, w, "test");
	CHECK(sched_child(&s->pool, "wx") == NULL);
	finish(s);
}

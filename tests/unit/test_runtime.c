/*
 * test_runtime.c - buffers, names, quoting, time and the hash maps.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../runtime/base/rt.h"
#include "unit.h"

TEST(names)
{
	char long64[65];

	CHECK(rt_name_valid("acme"));
	CHECK(rt_name_valid("a"));
	CHECK(rt_name_valid("9-lives_v1.2"));
	CHECK(!rt_name_valid(""));
	CHECK(!rt_name_valid("-x"));
	CHECK(!rt_name_valid(".hidden"));
	CHECK(!rt_name_valid("_x"));
	CHECK(!rt_name_valid("a b"));
	CHECK(!rt_name_valid("a/b"));
	CHECK(!rt_name_valid("caf\xc3\xa9"));
	memset(long64, 'a', 64);
	long64[64] = '\0';
	CHECK(!rt_name_valid(long64));
	long64[63] = '\0';
	CHECK(rt_name_valid(long64));
}

TEST(kv_quoting)
{
	struct rt_buf b = { 0 };

	rt_buf_kv(&b, "a", "plain");
	rt_buf_kv(&b, "b", "two words");
	rt_buf_kv(&b, "c", "");
	rt_buf_kv(&b, "d", "q\"b\\n\nt\t\x01");
	CHECK_STR(b.data, " a=plain b=\"two words\" c=\"\" "
			  "d=\"q\\\"b\\\\n\\nt\\t\\x01\"");
	rt_buf_free(&b);
}

TEST(buf_printf_grows)
{
	struct rt_buf b = { 0 };
	int i;

	for (i = 0; i < 1000; i++)
		CHECK(rt_buf_printf(&b, "%04d", i) == 0);
	CHECK(b.len == 4000);
	CHECK(strncmp(b.data + 3996, "0999", 4) == 0);
	CHECK(b.data[b.len] == '\0');
	rt_buf_reset(&b);
	CHECK(b.len == 0 && b.data[0] == '\0');
	rt_buf_free(&b);
}

TEST(time_format)
{
	char out[32];

	rt_format_time(1795885200123LL, out);
	CHECK_STR(out, "2026-11-28T17:00:00.123Z");
	rt_format_time(0, out);
	CHECK_STR(out, "1970-01-01T00:00:00.000Z");
}

TEST(map_basics)
{
	struct rt_map m = { 0 };
	char key[32];
	int i, v[5000];

	for (i = 0; i < 5000; i++) {
		v[i] = i;
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(rt_map_put(&m, key, &v[i]) == 0);
	}
	CHECK(rt_map_put(&m, "k7", &v[0]) == -EEXIST);
	CHECK(m.count == 5000);
	for (i = 0; i < 5000; i += 7) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(rt_map_get(&m, key) == &v[i]);
	}
	CHECK(rt_map_del(&m, "k42") == &v[42]);
	CHECK(rt_map_get(&m, "k42") == NULL);
	CHECK(rt_map_del(&m, "k42") == NULL);
	CHECK(m.count == 4999);
	rt_map_free(&m);
}

static int count_cb(const char *key, void *value, void *arg)
{
	(void)key;
	(void)value;
	(*(int *)arg)++;
	return 0;
}

TEST(map_update_replaces_in_place)
{
	struct rt_map m = { 0 };
	int a, b;

	CHECK(rt_map_update(&m, "x", &a) == -ENOENT);
	CHECK(rt_map_put(&m, "x", &a) == 0);
	CHECK(rt_map_update(&m, "x", &b) == 0);
	CHECK(rt_map_get(&m, "x") == &b);
	CHECK(m.count == 1);
	CHECK(rt_map_update(&m, "y", &a) == -ENOENT);
	CHECK(rt_map_get(&m, "y") == NULL);
	rt_map_free(&m);
}

TEST(map_ref_counts)
{
	struct rt_map m = { 0 };

	CHECK(rt_map_unref(&m, "x") == 0);
	CHECK(rt_map_ref(&m, "x") == 0);
	CHECK(rt_map_ref(&m, "x") == 0);
	CHECK((uintptr_t)rt_map_get(&m, "x") == 2);
	CHECK(rt_map_unref(&m, "x") == 1);
	CHECK(rt_map_unref(&m, "x") == 0);
	CHECK(rt_map_get(&m, "x") == NULL && m.count == 0);
	rt_map_free(&m);
}

TEST(map_each)
{
	struct rt_map m = { 0 };
	int n = 0, x;

	CHECK(rt_map_put(&m, "a", &x) == 0);
	CHECK(rt_map_put(&m, "b", &x) == 0);
	CHECK(rt_map_put(&m, "c", &x) == 0);
	CHECK(rt_map_each(&m, count_cb, &n) == 0);
	CHECK(n == 3);
	rt_map_free(&m);
}

TEST(idmap_basics)
{
	struct rt_idmap m = { 0 };
	static int v;
	uint64_t i;

	for (i = 1; i <= 20000; i++)
		CHECK(rt_idmap_put(&m, i, &v) == 0);
	CHECK(rt_idmap_put(&m, 5, &v) == -EEXIST);
	CHECK(rt_idmap_put(&m, 0, &v) == -EINVAL);
	for (i = 1; i <= 20000; i += 2)
		rt_idmap_del(&m, i);
	CHECK(m.count == 10000);
	CHECK(rt_idmap_get(&m, 3) == NULL);
	CHECK(rt_idmap_get(&m, 4) == &v);
	/* Re-adding after removal reuses tombstones without duplicates. */
	CHECK(rt_idmap_put(&m, 3, &v) == 0);
	CHECK(rt_idmap_put(&m, 4, &v) == -EEXIST);
	for (i = 20001; i <= 40000; i++)
		CHECK(rt_idmap_put(&m, i, &v) == 0);
	CHECK(rt_idmap_get(&m, 40000) == &v);
	CHECK(rt_idmap_get(&m, 40001) == NULL);
	rt_idmap_free(&m);
}

TEST(map_values_snapshot)
{
	struct rt_map m = { 0 };
	int a, b, c;
	size_t n;
	void **v;

	v = rt_map_values(&m, &n);
	CHECK(v != NULL && n == 0);
	free(v);
	CHECK(rt_map_put(&m, "a", &a) == 0);
	CHECK(rt_map_put(&m, "b", &b) == 0);
	CHECK(rt_map_put(&m, "c", &c) == 0);
	v = rt_map_values(&m, &n);
	CHECK(n == 3);
	/* The snapshot stays valid while the map changes. */
	rt_map_del(&m, "b");
	CHECK((v[0] == &a || v[1] == &a || v[2] == &a) &&
	      (v[0] == &b || v[1] == &b || v[2] == &b));
	free(v);
	rt_map_free(&m);
}

TEST(sigpending_only_a_real_signal_interrupts)
{
	/* SIGCHLD (17) pending: a shell's background job ended. */
	const char chld[] =
		"Name:\tbash\nSigQ:\t0/1\nSigPnd:\t0000000000000000\n"
		"ShdPnd:\t0000000000010000\nSigBlk:\t0000000000000000\n"
		"SigIgn:\t0000000000000004\nSigCgt:\t000000004b817efb\n";
	/* SIGINT (2) pending, to the thread. */
	const char intr[] =
		"SigPnd:\t0000000000000002\nShdPnd:\t0000000000000000\n"
		"SigBlk:\t0000000000000000\n";
	/* SIGWINCH (28) and SIGINT pending, SIGINT blocked. */
	const char blocked[] = "SigPnd:\t0000000008000002\nShdPnd:\t0\n"
			       "SigBlk:\t0000000000000002\n";
	/* SIGTERM (15) with SIGCHLD. */
	const char both[] =
		"SigPnd:\t0\nShdPnd:\t0000000000014000\nSigBlk:\t0\n";

	CHECK(rt_status_interrupts(chld) == 0);
	CHECK(rt_status_interrupts(intr) == 1);
	CHECK(rt_status_interrupts(blocked) == 0);
	CHECK(rt_status_interrupts(both) == 1);
	/* Nothing pending, or no masks: cannot tell. */
	CHECK(rt_status_interrupts("SigPnd:\t0\nShdPnd:\t0\nSigBlk:\t0\n") ==
	      -1);
	CHECK(rt_status_interrupts("Name:\tx\n") == -1);
	CHECK(rt_status_interrupts("SigPnd:\tzz\nShdPnd:\t0\nSigBlk:\t0\n") ==
	      -1);
	CHECK(rt_status_interrupts("") == -1);
	/* A thread that is gone: as asked. */
	CHECK(rt_interrupt_wanted(0) == 1);
}

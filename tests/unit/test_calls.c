/*
 * test_calls.c - the pieces of calls that need no loop: the line and json
 * framing of hot calls, the latency histogram and the one-minute window,
 * dispatch by free slots and Fn's launch rule in slots.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "../../runtime/base/frame.h"
#include "../../sched/decide/slots.h"
#include "../../sched/model/stats.h"
#include "unit.h"

TEST(frame_line_request_and_response)
{
	struct rt_buf b = { 0 };
	int user = -1;

	CHECK(rt_frame_request(0, "1", "hello", 5, 0, &b) == 0);
	CHECK(b.len == 6 && memcmp(b.data, "hello\n", 6) == 0);
	rt_buf_reset(&b);
	CHECK(rt_frame_request(0, "1", "a\nb", 3, 0, &b) == -EINVAL);
	CHECK(rt_frame_check(0, "a\nb", 3, NULL) == -EINVAL);
	CHECK(rt_frame_response(0, "1", "HELLO", 5, &user, &b) == 0);
	CHECK(user == 0 && b.len == 6 && memcmp(b.data, "HELLO\n", 6) == 0);
	rt_buf_free(&b);
}

TEST(frame_json_request_is_one_line_and_binary_safe)
{
	struct rt_buf b = { 0 };
	const char body[] = { 'x', '\0', '\n', '"', 'y' };
	json_t *o;

	CHECK(rt_frame_request(1, "42", body, sizeof(body), 1234, &b) == 0);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
	CHECK(memchr(b.data, '\n', b.len - 1) == NULL);
	o = json_loadb(b.data, b.len, JSON_ALLOW_NUL, NULL);
	CHECK(o != NULL);
	CHECK_STR(json_string_value(json_object_get(o, "id")), "42");
	CHECK(json_string_length(json_object_get(o, "body")) == sizeof(body));
	CHECK(memcmp(json_string_value(json_object_get(o, "body")), body,
		     sizeof(body)) == 0);
	CHECK(json_integer_value(json_object_get(o, "deadline_ms")) == 1234);
	json_decref(o);
	rt_buf_reset(&b);
	/* Not UTF-8: refused, since it cannot be a JSON string. */
	CHECK(rt_frame_request(1, "1", "\xff\xfe", 2, 0, &b) == -EINVAL);
	CHECK(rt_frame_check(1, "\xc0\x80", 2, NULL) == -EINVAL); /* overlong */
	CHECK(rt_frame_check(1, "\xed\xa0\x80", 3, NULL) == -EINVAL);
	CHECK(rt_frame_check(1, "\xe2\x82", 2, NULL) == -EINVAL); /* cut */
	CHECK(rt_frame_check(1, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
			     NULL) == 0);
	rt_buf_free(&b);
}

TEST(frame_json_responses)
{
	struct rt_buf b = { 0 };
	int user = -1;
	const char *ok = "{\"id\":\"7\",\"body\":\"HI\"}";
	const char *bad = "{\"id\":\"7\",\"error\":\"no such user\"}";
	const char *other = "{\"id\":\"6\",\"body\":\"late\"}";

	CHECK(rt_frame_response(1, "7", ok, strlen(ok), &user, &b) == 0);
	CHECK(user == 0 && b.len == 2 && memcmp(b.data, "HI", 2) == 0);
	rt_buf_reset(&b);
	CHECK(rt_frame_response(1, "7", bad, strlen(bad), &user, &b) == 0);
	CHECK(user == 1 && b.len == 12);
	rt_buf_reset(&b);
	CHECK(rt_frame_response(1, "7", other, strlen(other), &user, &b) == 1);
	rt_buf_reset(&b);
	CHECK(rt_frame_response(1, "7", "HI", 2, &user, &b) == -EPROTO);
	rt_buf_reset(&b);
	CHECK(rt_frame_response(1, "7", "[1]", 3, &user, &b) == -EPROTO);
	rt_buf_reset(&b);
	CHECK(rt_frame_response(1, "7", "{\"id\":\"7\"}", 10, &user, &b) ==
	      -EPROTO);
	rt_buf_free(&b);
}

TEST(hist_buckets_are_monotonic_and_tight)
{
	uint64_t v;
	int last = -1;

	for (v = 0; v < (1ull << 33); v = v < 64 ? v + 1 : v + v / 13) {
		int b = sched_hist_bucket(v);
		double mid = sched_hist_value(b);

		CHECK(b >= last);
		CHECK(b >= 0 && b < SCHED_HIST_BUCKETS);
		last = b;
		if (v >= 16 && v < (1ull << 32))
			CHECK(fabs(mid - (double)v) <= (double)v / 16 + 1);
		if (v < 16)
			CHECK(mid == (double)v);
	}
	CHECK(sched_hist_bucket(~0ull) == SCHED_HIST_BUCKETS - 1);
}

TEST(hist_quantiles)
{
	uint32_t h[SCHED_HIST_BUCKETS] = { 0 };
	int i;

	CHECK(sched_hist_quantile(h, 0, 0.5) == 0);
	/* 99 calls of 1 ms and one of 1 s. */
	for (i = 0; i < 99; i++)
		h[sched_hist_bucket(1000)]++;
	h[sched_hist_bucket(1000000)]++;
	CHECK(fabs(sched_hist_quantile(h, 100, 0.5) - 1.0) < 0.07);
	CHECK(fabs(sched_hist_quantile(h, 100, 0.99) - 1.0) < 0.07);
	CHECK(fabs(sched_hist_quantile(h, 100, 1.0) - 1000.0) < 63);
	h[sched_hist_bucket(1000000)]++; /* now 2 of 101 are slow */
	CHECK(sched_hist_quantile(h, 101, 0.99) > 900);
}

TEST(stats_outcomes_add_up)
{
	struct sched_stats *st = calloc(1, sizeof(*st));
	struct sched_stats_view v;
	struct rt_buf b = { 0 };
	int64_t t = 1700000000000;

	sched_stats_received(st, t);
	sched_stats_received(st, t);
	sched_stats_received(st, t);
	sched_stats_received(st, t + 10);
	sched_stats_done(st, t + 1, SCHED_PROCESSED, 0, 2000);
	sched_stats_done(st, t + 2, SCHED_USER_ERROR, 0, 4000);
	sched_stats_done(st, t + 3, SCHED_SYSTEM_ERROR, 1, -1);
	sched_stats_view(st, t + 20, &v);
	CHECK(v.received == 4 && v.processed == 1 && v.user_errors == 1 &&
	      v.system_errors == 1 && v.timeouts == 1);
	CHECK(fabs(v.latency_avg_ms - 3.0) < 1e-9);
	CHECK(v.last_ms == t + 10);
	CHECK(v.received_1min == 4 && v.processed_1min == 1);
	CHECK(sched_stats_render(&v, &b) == 0);
	CHECK(strstr(b.data, "received_total 4\n") != NULL);
	CHECK(strstr(b.data, "latency_avg_ms 3.000\n") != NULL);
	CHECK(strstr(b.data, "timeouts_total 1\n") != NULL);
	rt_buf_free(&b);
	free(st);
}

TEST(stats_window_slides)
{
	struct sched_stats *st = calloc(1, sizeof(*st));
	struct sched_stats_view v;
	int64_t t = 1700000000000; /* a whole second */
	int i;

	/* One call a second for 90 seconds, each of i ms. */
	for (i = 0; i < 90; i++) {
		sched_stats_received(st, t + i * 1000 + 500);
		sched_stats_done(st, t + i * 1000 + 600, SCHED_PROCESSED, 0,
				 (int64_t)i * 1000);
	}
	sched_stats_view(st, t + 89 * 1000 + 700, &v);
	CHECK(v.received == 90 && v.received_1min == 60);
	/* The last 60 calls took 30 .. 89 ms. */
	CHECK(fabs(v.latency_avg_1min_ms - 59.5) < 1e-9);
	/* 30 s of silence: half the window is empty. */
	sched_stats_view(st, t + 119 * 1000 + 700, &v);
	CHECK(v.received_1min == 30 && v.processed_1min == 30);
	/* A bucket reused for a new second starts from zero. */
	sched_stats_received(st, t + 150 * 1000);
	sched_stats_view(st, t + 150 * 1000, &v);
	CHECK(v.received_1min == 1 + 0);
	sched_stats_view(st, t + 1000 * 1000, &v);
	CHECK(v.received_1min == 0 && v.received == 91);
	free(st);
}

TEST(frame_json_response_id)
{
	char id[24];
	const char *ok = "{\"id\":\"17\",\"body\":\"x\"}";
	const char *none = "{\"body\":\"x\"}";
	const char *num = "{\"id\":17,\"body\":\"x\"}";
	const char *nul = "{\"id\":\"1\\u00002\",\"body\":\"x\"}";
	char big[128];

	CHECK(rt_frame_response_id(ok, strlen(ok), id, sizeof(id)) == 1);
	CHECK_STR(id, "17");
	CHECK(rt_frame_response_id(none, strlen(none), id, sizeof(id)) == 0);
	CHECK(rt_frame_response_id(num, strlen(num), id, sizeof(id)) == 0);
	CHECK(rt_frame_response_id("HI", 2, id, sizeof(id)) == 0);
	CHECK(rt_frame_response_id(nul, strlen(nul), id, sizeof(id)) ==
	      -ERANGE);
	snprintf(big, sizeof(big), "{\"id\":\"%040d\"}", 1);
	CHECK(rt_frame_response_id(big, strlen(big), id, sizeof(id)) ==
	      -ERANGE);
}

/* Picks the instance of `v` a call goes to, as calls.c does: index or -1. */
static int pick(const struct slots_instance *v, int n, int slots)
{
	int i, best = -1;

	for (i = 0; i < n; i++)
		if (sched_slots_prefer(&v[i], best < 0 ? NULL : &v[best],
				       slots))
			best = i;
	return best;
}

TEST(slots_dispatch_fills_the_lowest_first)
{
	/* Listed out of order, as a map gives them. */
	struct slots_instance v[3] = { { 2, 1, 0 }, { 0, 1, 0 }, { 1, 1, 0 } };
	int i, k, seen[3] = { 0, 0, 0 };

	/* Concurrency 4: instance 0 takes four calls, then instance 1. */
	for (k = 0; k < 4; k++) {
		CHECK(pick(v, 3, 4) == 1);
		v[1].busy++;
	}
	CHECK(sched_slots_free(&v[1], 4) == 0);
	CHECK(pick(v, 3, 4) == 2);
	/* Twelve slots in all: the thirteenth call finds none. */
	for (k = 0; k < 8; k++) {
		i = pick(v, 3, 4);
		CHECK(i >= 0);
		if (i < 0)
			break;
		v[i].busy++;
		seen[v[i].n]++;
	}
	CHECK(seen[1] == 4 && seen[2] == 4);
	CHECK(pick(v, 3, 4) == -1);
	/* A call ends on instance 2: its slot is free. */
	v[0].busy--;
	CHECK(pick(v, 3, 4) == 0);
	/* Concurrency lowered to 2: over it, no free slot, not negative. */
	CHECK(sched_slots_free(&v[1], 2) == 0);
	CHECK(pick(v, 3, 2) == -1);
	/* An instance that does not take calls (stopping, replaced) has
	 * none free, however idle. */
	v[1].busy = 0;
	v[1].usable = 0;
	CHECK(sched_slots_free(&v[1], 4) == 0);
	CHECK(pick(v, 3, 4) == 0);
}

TEST(slots_launch_rule)
{
	/* Fn's rule with one slot each: waiting calls outnumber the
	 * instances starting. */
	CHECK(sched_slots_launch(0, 0, 1, 0, 10) == 0);
	CHECK(sched_slots_launch(3, 0, 1, 1, 10) == 3);
	CHECK(sched_slots_launch(3, 1, 1, 2, 10) == 2);
	CHECK(sched_slots_launch(3, 3, 1, 4, 10) == 0);
	/* Slots: one instance starting brings four, enough for four. */
	CHECK(sched_slots_launch(4, 1, 4, 2, 10) == 0);
	CHECK(sched_slots_launch(5, 1, 4, 2, 10) == 1);
	CHECK(sched_slots_launch(9, 0, 4, 1, 10) == 3);
	CHECK(sched_slots_launch(200, 0, 4, 0, 2) == 2);
	/* Never past max_instances. */
	CHECK(sched_slots_launch(100, 0, 4, 2, 2) == 0);
	CHECK(sched_slots_launch(100, 0, 4, 3, 2) == 0);
	/* A bad slot count counts as one. */
	CHECK(sched_slots_launch(2, 0, 0, 0, 10) == 2);
}

/*
 * test_calls.c - the pieces of calls that need no loop: the line and json
 * framing of hot calls, the latency histogram and the one-minute window.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "../../runtime/frame.h"
#include "../../sched/stats.h"
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

/*
 * stats.c - call counters: totals, a log-linear latency histogram and a
 * ring of per-second buckets for the last minute.
 */
#include <assert.h>
#include <string.h>

#include "stats.h"

int sched_hist_bucket(uint64_t us)
{
	int e = 63 - __builtin_clzll(us | 1);

	if (us < 16)
		return (int)us;
	if (e > 31)
		return SCHED_HIST_BUCKETS - 1;
	return 16 + (e - 4) * 8 + (int)((us >> (e - 3)) & 7);
}

double sched_hist_value(int bucket)
{
	int e, sub;
	double lo, width;

	if (bucket < 16)
		return bucket;
	e = (bucket - 16) / 8 + 4;
	sub = (bucket - 16) % 8;
	width = (double)(1ull << (e - 3));
	lo = (double)(1ull << e) + sub * width;
	return lo + width / 2;
}

double sched_hist_quantile(const uint32_t *h, uint64_t n, double q)
{
	uint64_t rank, seen = 0;
	int i;

	if (n == 0)
		return 0;
	rank = (uint64_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < SCHED_HIST_BUCKETS; i++) {
		seen += h[i];
		if (seen >= rank)
			return sched_hist_value(i) / 1000.0;
	}
	return sched_hist_value(SCHED_HIST_BUCKETS - 1) / 1000.0;
}

/* The window's bucket for epoch ms `now`, cleared if it held an older
 * second. */
static struct sched_second *second_of(struct sched_stats *st, int64_t now)
{
	int64_t sec = now / 1000;
	struct sched_second *b = &st->window[sec % SCHED_WINDOW_S];

	if (b->sec != sec) {
		memset(b, 0, sizeof(*b));
		b->sec = sec;
	}
	return b;
}

void sched_stats_received(struct sched_stats *st, int64_t now)
{
	st->received++;
	st->last_ms = now;
	second_of(st, now)->received++;
}

void sched_stats_done(struct sched_stats *st, int64_t now, enum sched_outcome o,
		      int timeout, int64_t us)
{
	struct sched_second *b = second_of(st, now);

	/* A timeout is a system error, and only a call that ran to an answer
	 * has a latency (calls.c's finish). */
	assert(!timeout || o == SCHED_SYSTEM_ERROR);
	assert(us < 0 || o != SCHED_SYSTEM_ERROR);
	switch (o) {
	case SCHED_PROCESSED:
		st->processed++;
		b->processed++;
		break;
	case SCHED_USER_ERROR:
		st->user_errors++;
		b->user_errors++;
		break;
	case SCHED_SYSTEM_ERROR:
		st->system_errors++;
		b->system_errors++;
		break;
	}
	if (timeout)
		st->timeouts++;
	if (us >= 0) {
		st->latency_n++;
		st->latency_us += (uint64_t)us;
		st->hist[sched_hist_bucket((uint64_t)us)]++;
		b->latency_n++;
		b->latency_us += (uint64_t)us;
	}
}

void sched_stats_view(const struct sched_stats *st, int64_t now,
		      struct sched_stats_view *v)
{
	int64_t sec = now / 1000;
	uint64_t lat_n = 0, lat_us = 0;
	int i;

	memset(v, 0, sizeof(*v));
	v->received = st->received;
	v->processed = st->processed;
	v->user_errors = st->user_errors;
	v->system_errors = st->system_errors;
	v->timeouts = st->timeouts;
	v->cold_starts = st->cold_starts;
	v->last_ms = st->last_ms;
	if (st->latency_n > 0)
		v->latency_avg_ms = (double)st->latency_us /
				    (double)st->latency_n / 1000.0;
	v->latency_p50_ms = sched_hist_quantile(st->hist, st->latency_n, 0.5);
	v->latency_p99_ms = sched_hist_quantile(st->hist, st->latency_n, 0.99);
	for (i = 0; i < SCHED_WINDOW_S; i++) {
		const struct sched_second *b = &st->window[i];

		/* The current second and the 59 before it. */
		if (b->sec == 0 || b->sec > sec ||
		    b->sec <= sec - SCHED_WINDOW_S)
			continue;
		v->received_1min += b->received;
		v->processed_1min += b->processed;
		v->user_errors_1min += b->user_errors;
		v->system_errors_1min += b->system_errors;
		lat_n += b->latency_n;
		lat_us += b->latency_us;
	}
	if (lat_n > 0)
		v->latency_avg_1min_ms = (double)lat_us / (double)lat_n /
					 1000.0;
}

int sched_stats_render(const struct sched_stats_view *v, struct rt_buf *out)
{
	return rt_buf_printf(
		out,
		"received_total %llu\nprocessed_total %llu\n"
		"user_errors_total %llu\nsystem_errors_total %llu\n"
		"timeouts_total %llu\nlatency_avg_ms %.3f\n"
		"latency_p50_ms %.3f\nlatency_p99_ms %.3f\n"
		"last_invocation_ms %lld\nreceived_1min %llu\n"
		"processed_1min %llu\nuser_errors_1min %llu\n"
		"system_errors_1min %llu\nlatency_avg_1min_ms %.3f\n"
		"cold_starts_total %llu\n",
		(unsigned long long)v->received,
		(unsigned long long)v->processed,
		(unsigned long long)v->user_errors,
		(unsigned long long)v->system_errors,
		(unsigned long long)v->timeouts, v->latency_avg_ms,
		v->latency_p50_ms, v->latency_p99_ms, (long long)v->last_ms,
		(unsigned long long)v->received_1min,
		(unsigned long long)v->processed_1min,
		(unsigned long long)v->user_errors_1min,
		(unsigned long long)v->system_errors_1min,
		v->latency_avg_1min_ms, (unsigned long long)v->cold_starts);
}

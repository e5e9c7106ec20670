/*
 * stats.h - call counters of a function, an instance or the whole mount:
 * totals, a fixed-size latency histogram and a one-minute window of
 * per-second buckets. Pure: times are passed in, nothing is read from a
 * clock, so it is unit-tested with made-up times.
 */
#ifndef FNFS_SCHED_STATS_H
#define FNFS_SCHED_STATS_H

#include <stdint.h>

#include "../../runtime/base/rt.h"

/* Histogram of latencies in microseconds: values below 16 have a bucket
 * each, then every power of two is split into 8 buckets, up to 2^32 us
 * (71 minutes; longer values land in the last bucket). A bucket's width
 * is at most 1/8 of its value, so a percentile is within 6.25%. */
#define SCHED_HIST_BUCKETS (16 + 28 * 8)
#define SCHED_WINDOW_S	   60 /* seconds in the recent window */

/* How a call ended: exactly one per call. */
enum sched_outcome {
	SCHED_PROCESSED,    /* a response */
	SCHED_USER_ERROR,   /* the function reported an error */
	SCHED_SYSTEM_ERROR, /* timeout, crash, full queue, internal */
};

/* One second of the window. */
struct sched_second {
	int64_t sec; /* epoch second it counts, 0 when unused */
	uint32_t received, processed, user_errors, system_errors;
	uint32_t latency_n;
	uint64_t latency_us; /* sum */
};

struct sched_stats {
	uint64_t received, processed, user_errors, system_errors;
	uint64_t timeouts, cold_starts;
	uint64_t latency_n, latency_us; /* calls with a latency, and sum */
	int64_t last_ms;		/* last invocation, epoch ms, or 0 */
	uint32_t hist[SCHED_HIST_BUCKETS];
	struct sched_second window[SCHED_WINDOW_S];
};

/* What a reader sees at a moment. */
struct sched_stats_view {
	uint64_t received, processed, user_errors, system_errors;
	uint64_t timeouts, cold_starts;
	double latency_avg_ms, latency_p50_ms, latency_p99_ms;
	int64_t last_ms;
	uint64_t received_1min, processed_1min, user_errors_1min,
		system_errors_1min;
	double latency_avg_1min_ms;
};

/* The bucket of a latency of `us` microseconds. */
int sched_hist_bucket(uint64_t us);

/* The value a bucket stands for (its midpoint), in microseconds. */
double sched_hist_value(int bucket);

/* The `q` quantile (0 < q <= 1) of histogram `h` holding `n` values, in
 * milliseconds; 0 when empty. */
double sched_hist_quantile(const uint32_t *h, uint64_t n, double q);

/* Counts a call received at epoch ms `now`. */
void sched_stats_received(struct sched_stats *st, int64_t now);

/* Counts the end of a call: its outcome, whether it timed out, and its
 * latency (`us` < 0: none, as for a call that never ran). */
void sched_stats_done(struct sched_stats *st, int64_t now, enum sched_outcome o,
		      int timeout, int64_t us);

/* Reads the counters at epoch ms `now`: the window covers the last 60
 * whole seconds and the current one. */
void sched_stats_view(const struct sched_stats *st, int64_t now,
		      struct sched_stats_view *v);

/* Appends the flat keyed lines of `v` (received_total ...
 * latency_avg_1min_ms) to `out`. */
int sched_stats_render(const struct sched_stats_view *v, struct rt_buf *out);

#endif

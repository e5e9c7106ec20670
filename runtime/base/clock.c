/*
 * clock.c - wall and monotonic clocks, and RFC 3339 formatting.
 */
#include <stdio.h>
#include <time.h>

#include "rt.h"

int64_t rt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rt_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rt_format_time(int64_t ms, char out[32])
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	char date[24];

	gmtime_r(&sec, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.19s.%03dZ", date, (int)(ms % 1000));
}

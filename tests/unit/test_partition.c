/*
 * test_partition.c - partitions: the epoch fence on workers' reports and
 * on what a returning worker runs, the smoothed round-trip time, and the
 * worker's clock of the controller's silence.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../runtime/worker/silence.h"
#include "../../sched/workers/fence.h"
#include "../../sched/store/store.h"
#include "unit.h"

static char tmp_path[64];

static void tmp_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_path);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", tmp_path);
}

/* A fresh temporary directory, removed when the test's process exits. */
static const char *tmpdir(void)
{
	snprintf(tmp_path, sizeof(tmp_path), "/tmp/fnfs-unit.XXXXXX");
	if (mkdtemp(tmp_path) == NULL)
		return "/nonexistent";
	atexit(tmp_remove);
	return tmp_path;
}

/* ============================================================ the fence */

TEST(fence_accepts_the_current_epoch)
{
	CHECK(sched_fence_check(1, 7, 7) == SCHED_FENCE_ACCEPT);
	CHECK(sched_fence_check(1, 1, 1) == SCHED_FENCE_ACCEPT);
}

TEST(fence_ignores_a_late_report_of_the_assignee)
{
	/* An older start's `started` arriving after a newer start went
	 * out: it changes nothing, and stops nothing (the one copy there
	 * is the newer assignment's). */
	CHECK(sched_fence_check(1, 7, 6) == SCHED_FENCE_IGNORE);
	CHECK(sched_fence_check(1, 7, 1) == SCHED_FENCE_IGNORE);
	/* One the controller never gave (a store that lost a step). */
	CHECK(sched_fence_check(1, 7, 8) == SCHED_FENCE_IGNORE);
}

TEST(fence_stops_a_copy_that_is_not_assigned_there)
{
	/* Whatever its epoch: another worker, or nobody, holds it now. */
	CHECK(sched_fence_check(0, 7, 6) == SCHED_FENCE_STOP);
	CHECK(sched_fence_check(0, 7, 7) == SCHED_FENCE_STOP);
	CHECK(sched_fence_check(0, 7, 0) == SCHED_FENCE_STOP);
	CHECK(sched_fence_check(0, 0, 0) == SCHED_FENCE_STOP);
}

TEST(fence_takes_a_report_without_epoch_from_the_assignee)
{
	/* An older worker, or an instance started before epochs. */
	CHECK(sched_fence_check(1, 7, 0) == SCHED_FENCE_ACCEPT);
	CHECK(sched_fence_check(1, 0, 0) == SCHED_FENCE_ACCEPT);
}

TEST(fence_adopts_only_the_same_assignment)
{
	/* Still assigned there, same epoch: taken as it runs. */
	CHECK(sched_fence_adopt(1, 0, 5, 5) == 1);
	/* Assigned nowhere since (nobody took it), same epoch. */
	CHECK(sched_fence_adopt(0, 1, 5, 5) == 1);
	/* Placed elsewhere meanwhile, then lost again: this copy is of
	 * an older assignment and stops. */
	CHECK(sched_fence_adopt(0, 1, 6, 5) == 0);
	CHECK(sched_fence_adopt(1, 0, 6, 5) == 0);
	/* Runs elsewhere now. */
	CHECK(sched_fence_adopt(0, 0, 6, 5) == 0);
	CHECK(sched_fence_adopt(0, 0, 5, 5) == 0);
	/* No epoch named: as before epochs. */
	CHECK(sched_fence_adopt(1, 0, 5, 0) == 1);
	CHECK(sched_fence_adopt(0, 1, 5, 0) == 1);
	CHECK(sched_fence_adopt(0, 0, 5, 0) == 0);
}

/* ================================================================= rtt */

TEST(rtt_first_sample_is_taken_as_it_is)
{
	CHECK(fabs(sched_rtt_update(-1, 12.5) - 12.5) < 1e-9);
	CHECK(fabs(sched_rtt_update(0, 0.25) - 0.25) < 1e-9);
}

TEST(rtt_moves_an_eighth_toward_each_sample)
{
	double r = sched_rtt_update(-1, 8);

	r = sched_rtt_update(r, 16);
	CHECK(fabs(r - 9) < 1e-9);
	r = sched_rtt_update(r, 1);
	CHECK(fabs(r - 8) < 1e-9);
	/* A steady 50 ms (tc netem delay) is reached from 0.1 ms. */
	r = sched_rtt_update(-1, 0.1);
	for (int i = 0; i < 100; i++)
		r = sched_rtt_update(r, 50);
	CHECK(fabs(r - 50) < 0.01);
	/* A negative sample (a clock gone wrong) changes nothing. */
	CHECK(fabs(sched_rtt_update(r, -3) - r) < 1e-9);
}

/* ======================================================= the silence */

TEST(silence_counts_only_once_the_controller_pings)
{
	struct rt_silence c = { 0 };

	/* An older controller (no heartbeat_timeout in `registered`)
	 * sends nothing while idle: silence proves nothing. */
	rt_silence_registered(&c, 1000, 0);
	CHECK(rt_silence_lost(&c, 1000 + 60000, 1, 0) == 0);
	rt_silence_registered(&c, 1000, 2000);
	CHECK(rt_silence_timeout(&c) == 2000);
	CHECK(rt_silence_lost(&c, 3000, 1, 0) == 0);
	CHECK(rt_silence_lost(&c, 3001, 1, 0) == 1);
}

TEST(silence_is_reset_by_any_frame)
{
	struct rt_silence c = { 0 };

	rt_silence_registered(&c, 0, 3000);
	rt_silence_heard(&c, 2500);
	CHECK(rt_silence_lost(&c, 5000, 1, 0) == 0);
	CHECK(rt_silence_lost(&c, 5500, 1, 0) == 0);
	CHECK(rt_silence_lost(&c, 5501, 1, 0) == 1);
	/* The orphan timeout counts from the last frame heard. */
	CHECK(c.heard_mono == 2500);
}

TEST(silence_timeout_own_then_controller_then_default)
{
	struct rt_silence c = { 0 };

	CHECK(rt_silence_timeout(&c) == RT_HEARTBEAT_TIMEOUT_MS);
	rt_silence_registered(&c, 0, 1500);
	CHECK(rt_silence_timeout(&c) == 1500);
	c.own_ms = 4000;
	CHECK(rt_silence_timeout(&c) == 4000);
	CHECK(rt_silence_lost(&c, 4000, 1, 0) == 0);
	CHECK(rt_silence_lost(&c, 4001, 1, 0) == 1);
}

TEST(silence_gives_up_an_attempt_never_registered)
{
	struct rt_silence c = { 0 };

	/* First seen connecting at 100: the attempt's clock starts. */
	CHECK(rt_silence_lost(&c, 100, 0, 1) == 0);
	CHECK(rt_silence_lost(&c, 3100, 0, 1) == 0);
	CHECK(rt_silence_lost(&c, 3101, 0, 1) == 1);
	/* Then a new attempt counts anew. */
	CHECK(rt_silence_lost(&c, 3200, 0, 1) == 0);
	CHECK(rt_silence_lost(&c, 6200, 0, 1) == 0);
	/* Waiting between attempts resets it. */
	CHECK(rt_silence_lost(&c, 6300, 0, 0) == 0);
	CHECK(rt_silence_lost(&c, 6400, 0, 1) == 0);
	CHECK(rt_silence_lost(&c, 9400, 0, 1) == 0);
	/* Registered: the attempt is over. */
	rt_silence_registered(&c, 9000, 3000);
	CHECK(c.attempt_mono == 0);
	CHECK(rt_silence_lost(&c, 9500, 1, 0) == 0);
}

/* ====================================================== the store */

static int epoch_cb(const struct store_instance *r, void *arg)
{
	*(uint64_t *)arg = r->epoch;
	return 0;
}

TEST(epoch_is_stored_and_migrated)
{
	const char *dir = tmpdir();
	char path[128], cmd[512];
	struct store *st = NULL;
	struct store_instance r = { .tenant = "t",
				    .ns = "n",
				    .fn = "f",
				    .n = 0,
				    .desired_run = 1,
				    .worker = "w1",
				    .epoch = 41 };
	uint64_t got = 0;

	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	if (st == NULL)
		return;
	CHECK(store_instance_put(st, &r) == 0);
	r.epoch = 42; /* a new assignment replaces the row */
	CHECK(store_instance_put(st, &r) == 0);
	store_close(st);
	CHECK(store_open(&st, path) == 0);
	if (st == NULL)
		return;
	CHECK(store_instance_load(st, epoch_cb, &got) == 0);
	CHECK(got == 42);
	store_close(st);
	/* A database of version 4 (no epoch): rows start at 0. */
	snprintf(cmd, sizeof(cmd),
		 "sqlite3 %s 'ALTER TABLE instances DROP COLUMN epoch; "
		 "PRAGMA user_version = 4'",
		 path);
	CHECK(system(cmd) == 0);
	CHECK(store_open(&st, path) == 0);
	if (st == NULL)
		return;
	got = 99;
	CHECK(store_instance_load(st, epoch_cb, &got) == 0);
	CHECK(got == 0);
	r.epoch = 3;
	CHECK(store_instance_put(st, &r) == 0);
	CHECK(store_instance_load(st, epoch_cb, &got) == 0);
	CHECK(got == 3);
	store_close(st);
}

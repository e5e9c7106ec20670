/*
 * test_supervise.c - the supervisor alone, without a socket or a
 * controller: real short processes on a libuv loop, and the events it
 * reports (started, exited, backoff, restarts, stop within the grace
 * period, removal). Each test ends with every instance removed, the loop
 * closed and rt_sup_free, so the sanitizer build finds any leak.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/worker/supervise.h"
#include "unit.h"

#define MAX_EVENTS 32

/* What the supervisor reported. */
static struct {
	int states;			  /* state reports */
	enum rt_state seen[MAX_EVENTS];	  /* their states, in order */
	int spawned;			  /* successful spawns */
	pid_t pids[MAX_EVENTS];		  /* their pids */
	int64_t spawned_mono[MAX_EVENTS]; /* and when */
	int failed_spawns;		  /* spawns reported with why */
	char why[64];			  /* the last why */
	int exited;			  /* exits */
	struct rt_exit exits[MAX_EVENTS]; /* their records, in order */
	int64_t exited_mono[MAX_EVENTS];  /* and when */
	int removed;			  /* removals */
	int call_exits;			  /* cold runs reaped */
} rec;

static uv_loop_t loop;
static struct rt_sup sup;
static uv_signal_t chld;
static uv_timer_t limit;
static int timed_out;

static void ev_state(struct rt_instance *in)
{
	if (rec.states < MAX_EVENTS)
		rec.seen[rec.states] = in->state;
	rec.states++;
}

static void ev_spawned(struct rt_instance *in, const char *why)
{
	if (why != NULL) {
		rec.failed_spawns++;
		snprintf(rec.why, sizeof(rec.why), "%s", why);
		return;
	}
	if (rec.spawned < MAX_EVENTS) {
		rec.pids[rec.spawned] = in->pid;
		rec.spawned_mono[rec.spawned] = rt_mono_ms();
	}
	rec.spawned++;
}

static void ev_exited(struct rt_instance *in, const struct rt_exit *e)
{
	CHECK(e == &in->exits[0]);
	if (rec.exited < MAX_EVENTS) {
		rec.exits[rec.exited] = *e;
		rec.exited_mono[rec.exited] = rt_mono_ms();
	}
	rec.exited++;
}

static void ev_removed(struct rt_instance *in)
{
	CHECK(in->freeing);
	rec.removed++;
}

static void ev_call_exited(struct rt_run *r)
{
	CHECK(r->cold && r->reaped);
	rec.call_exits++;
}

static const struct rt_sup_events events = {
	.state = ev_state,
	.spawned = ev_spawned,
	.exited = ev_exited,
	.removed = ev_removed,
	.call_exited = ev_call_exited,
};

/* The calls a graceful stop waits for, as the worker's call.c counts. */
static int fake_busy;

static int ev_busy(const struct rt_instance *in)
{
	(void)in;
	return fake_busy;
}

static const struct rt_sup_events busy_events = {
	.state = ev_state,
	.spawned = ev_spawned,
	.exited = ev_exited,
	.removed = ev_removed,
	.call_exited = ev_call_exited,
	.busy = ev_busy,
};

static void on_chld(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	rt_sup_reap(&sup);
}

static void on_limit(uv_timer_t *t)
{
	(void)t;
	timed_out = 1;
}

static void setup(void)
{
	memset(&rec, 0, sizeof(rec));
	uv_loop_init(&loop);
	rt_sup_init(&sup, &loop, &events, NULL);
	uv_signal_init(&loop, &chld);
	uv_signal_start(&chld, on_chld, SIGCHLD);
	uv_timer_init(&loop, &limit);
}

/* Runs the loop until `done()` holds or `ms` have passed; returns
 * whether it holds. */
static int run_until(int (*done)(void), int ms)
{
	timed_out = 0;
	uv_timer_start(&limit, on_limit, (uint64_t)ms, 0);
	while (!done() && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&limit);
	return done();
}

static int idle(void)
{
	return rt_sup_idle(&sup) && sup.open_runs == NULL;
}

static int remove_cb(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	rt_instance_stop(value, 1);
	return 0;
}

/* Removes whatever is left, waits for every process, closes the loop and
 * frees the supervisor: nothing may be left. */
static void teardown(void)
{
	void **v;
	size_t i, n;

	v = rt_map_values(&sup.instances, &n);
	for (i = 0; v != NULL && i < n; i++)
		remove_cb(NULL, v[i], NULL);
	free(v);
	CHECK(run_until(idle, 8000));
	uv_close((uv_handle_t *)&chld, NULL);
	uv_close((uv_handle_t *)&limit, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	rt_sup_free(&sup, 500);
}

static json_t *daemon_spec(const char *cmd, const char *policy, int grace_ms)
{
	return json_pack("{s:s, s:s, s:s, s:i}", "command", cmd, "mode",
			 "daemon", "restart_policy", policy, "grace_ms",
			 grace_ms);
}

/* Starts a new instance `id` with `spec` (taken) at revision 1. */
static struct rt_instance *start_new(const char *id, json_t *spec)
{
	struct rt_instance *in = rt_instance_new(&sup, id);

	if (in == NULL) {
		fprintf(stderr, "  rt_instance_new: out of memory\n");
		exit(1);
	}
	CHECK(rt_instance_start(in, spec, 1) == 0);
	json_decref(spec);
	return in;
}

static int want_spawned, want_exited;

static int spawned_enough(void)
{
	return rec.spawned >= want_spawned;
}

static int exited_enough(void)
{
	return rec.exited >= want_exited;
}

static int never(void)
{
	return 0;
}

static int gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* ------------------------------------------------------------------ */

TEST(supervise_state_names)
{
	struct rt_exit e = { 0, 3, 0, 0 };
	char w[64];

	CHECK_STR(rt_state_name(RT_STARTING), "starting");
	CHECK_STR(rt_state_name(RT_RUNNING), "running");
	CHECK_STR(rt_state_name(RT_BACKOFF), "backoff");
	CHECK_STR(rt_state_name(RT_STOPPING), "stopping");
	CHECK_STR(rt_state_name(RT_STOPPED), "stopped");
	CHECK_STR(rt_state_name(RT_FAILED), "failed");
	rt_exit_words(&e, w, sizeof(w));
	CHECK_STR(w, "status 3");
	e.code = -1;
	e.signal = 9;
	rt_exit_words(&e, w, sizeof(w));
	CHECK_STR(w, "signal 9");
	e.oom = 1;
	rt_exit_words(&e, w, sizeof(w));
	CHECK_STR(w, "oom");
}

/* A process that keeps failing: restarted after 100, 200, 400, 800 and
 * 1600 ms, then failed for its start limit (more than 5 exits in 10 s). */
TEST(supervise_backoff_then_start_limit)
{
	struct rt_instance *in;
	int i, backoffs = 0, delay = RT_BACKOFF_FIRST_MS;

	setup();
	in = start_new("t/n/f/0", daemon_spec("sh -c 'exit 3'", "always", 0));
	CHECK(rec.spawned == 1 && rec.pids[0] > 0);
	CHECK(in->state == RT_RUNNING && in->pid == rec.pids[0]);
	want_exited = RT_START_LIMIT + 1;
	CHECK(run_until(exited_enough, 8000));
	CHECK(rec.exited == RT_START_LIMIT + 1);
	CHECK(rec.spawned == RT_START_LIMIT + 1);
	CHECK(in->restarts == RT_START_LIMIT);
	for (i = 0; i < rec.exited && i < MAX_EVENTS; i++) {
		CHECK(rec.exits[i].code == 3 && rec.exits[i].signal == 0);
		CHECK(!rec.exits[i].oom);
	}
	/* Each restart waited for its backoff, doubling from 100 ms. */
	for (i = 1; i < rec.spawned && i < MAX_EVENTS; i++) {
		int64_t gap = rec.spawned_mono[i] - rec.exited_mono[i - 1];

		if (gap < delay - 10) {
			fprintf(stderr, "  restart %d after %lld ms\n", i,
				(long long)gap);
			CHECK(!"a restart came before its backoff");
		}
		delay *= 2;
	}
	for (i = 0; i < rec.states && i < MAX_EVENTS; i++)
		backoffs += rec.seen[i] == RT_BACKOFF;
	CHECK(backoffs == RT_START_LIMIT);
	CHECK(in->state == RT_FAILED);
	CHECK(strstr(in->reason, "start limit") != NULL);
	CHECK(in->run == NULL && in->pid == 0);
	teardown();
	CHECK(rec.removed == 1);
}

TEST(supervise_policy_never)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/f/0", daemon_spec("true", "never", 0));
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	CHECK(rec.exits[0].code == 0);
	CHECK(in->state == RT_FAILED);
	CHECK(strstr(in->reason, "never restarts") != NULL);
	CHECK(rec.spawned == 1 && in->restarts == 0);
	teardown();
}

TEST(supervise_policy_on_failure)
{
	struct rt_instance *ok, *bad;

	setup();
	ok = start_new("t/n/ok/0", daemon_spec("true", "on-failure", 0));
	bad = start_new("t/n/bad/0",
			daemon_spec("sh -c 'exit 2'", "on-failure", 0));
	want_exited = 2;
	CHECK(run_until(exited_enough, 3000));
	CHECK(ok->state == RT_FAILED);
	CHECK(strstr(ok->reason, "only failures") != NULL);
	CHECK(bad->state == RT_BACKOFF);
	CHECK(strstr(bad->reason, "status 2") != NULL);
	teardown();
	CHECK(rec.removed == 2);
}

/* SIGTERM ends it at once; the stop reports the exit, then `stopped`. */
TEST(supervise_stop_within_grace)
{
	struct rt_instance *in;
	pid_t pid;
	int64_t t0;

	setup();
	in = start_new("t/n/f/0", daemon_spec("sleep 30", "always", 0));
	pid = in->pid;
	CHECK(pid > 0 && !gone(pid));
	t0 = rt_mono_ms();
	CHECK(rt_instance_stop(in, 0) == 0);
	CHECK(in->state == RT_STOPPING);
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	CHECK(rt_mono_ms() - t0 < 2000);
	CHECK(rec.exits[0].signal == SIGTERM && rec.exits[0].code == -1);
	CHECK(in->state == RT_STOPPED && in->pid == 0);
	CHECK(gone(pid));
	CHECK(rec.removed == 0);	     /* not forgotten */
	CHECK(rt_instance_stop(in, 0) == 1); /* nothing runs now */
	CHECK(rec.exited == 1);
	teardown();
}

/* A process that ignores SIGTERM is killed when the grace period ends. */
TEST(supervise_stop_kills_after_grace)
{
	struct rt_instance *in;
	int64_t t0, took;

	setup();
	in = start_new("t/n/f/0",
		       daemon_spec("trap '' TERM; sleep 30", "always", 300));
	/* Give the shell the time to set its trap (the loop runs, so that
	 * its clock is current). */
	run_until(never, 200);
	t0 = rt_mono_ms();
	CHECK(rt_instance_stop(in, 1) == 0);
	want_exited = 1;
	CHECK(run_until(exited_enough, 4000));
	took = rt_mono_ms() - t0;
	if (took < 290 || took > 2500)
		fprintf(stderr, "  stopped after %lld ms\n", (long long)took);
	CHECK(took >= 290 && took <= 2500);
	CHECK(rec.exits[0].signal == SIGKILL);
	CHECK(rec.removed == 1); /* forgotten once stopped */
	teardown();
}

TEST(supervise_restart_counts)
{
	struct rt_instance *in, *never;
	pid_t first;

	setup();
	in = start_new("t/n/f/0", daemon_spec("sleep 30", "always", 0));
	first = in->pid;
	CHECK(rt_instance_restart(in) == 0);
	want_spawned = 2;
	CHECK(run_until(spawned_enough, 3000));
	CHECK(rec.exited == 1 && rec.exits[0].signal == SIGTERM);
	CHECK(in->pid > 0 && in->pid != first && in->pid == rec.pids[1]);
	CHECK(in->restarts == 1 && in->state == RT_RUNNING);
	CHECK(gone(first));
	never = rt_instance_new(&sup, "t/n/g/0");
	CHECK(rt_instance_restart(never) == -ENOENT);
	teardown();
	CHECK(rec.removed == 2);
}

TEST(supervise_start_same_and_new_revision)
{
	struct rt_instance *in;
	json_t *spec2;
	pid_t first;

	setup();
	in = start_new("t/n/f/0", daemon_spec("sleep 30", "always", 0));
	first = in->pid;
	/* The same revision: nothing to do. */
	CHECK(rt_instance_start(in, NULL, 1) == 1);
	CHECK(rec.spawned == 1 && in->pid == first);
	/* Another: the old process is stopped, then the new one runs. */
	spec2 = daemon_spec("sleep 31", "always", 0);
	CHECK(rt_instance_start(in, spec2, 2) == 0);
	json_decref(spec2);
	want_spawned = 2;
	CHECK(run_until(spawned_enough, 3000));
	CHECK(rec.exited == 1 && rec.exits[0].signal == SIGTERM);
	CHECK(in->revision == 2 && in->pid != first && gone(first));
	CHECK(in->state == RT_RUNNING);
	teardown();
}

/* A spec without a command cannot be spawned: reported, then an exit of
 * status 127 and the usual backoff. */
TEST(supervise_spawn_failure)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/f/0", json_pack("{s:s}", "mode", "daemon"));
	CHECK(rec.failed_spawns == 1 && rec.spawned == 0);
	CHECK_STR(rec.why, "no command");
	CHECK(rec.exited == 1 && rec.exits[0].code == 127);
	CHECK(in->state == RT_BACKOFF);
	teardown();
}

/* Removing a cold instance kills the processes of its calls, and their
 * memory groups go too (where this machine has cgroups). */
TEST(supervise_remove_kills_cold_runs)
{
	struct rt_instance *in;
	struct rt_run *r;
	const char *why = NULL;
	char key[64], group[4200], root[4200] = "";
	struct stat st;
	pid_t pid;
	int cgroups, i;

	setup();
	snprintf(key, sizeof(key), "unit-test-%d", (int)getpid());
	rt_cg_open_host(&sup.cg, "unit", key);
	cgroups = rt_cg_has(&sup.cg, RT_CG_MEMORY);
	if (!cgroups)
		fprintf(stderr,
			"  # no memory cgroup here: groups unchecked\n");
	in = start_new("t/n/c/0",
		       json_pack("{s:s, s:s, s:i}", "command", "sleep 30",
				 "mode", "cold", "memory", 64));
	CHECK(in->state == RT_RUNNING && in->pid == 0 && rec.spawned == 1);
	r = rt_run_spawn(in, 1, "c1", &why);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	r->cold = 1;
	pid = r->pid;
	if (cgroups) {
		snprintf(root, sizeof(root), "%s", sup.cg.root[RT_CG_MEMORY]);
		snprintf(group, sizeof(group), "%s/t:n:c:0.c1", root);
		CHECK(r->cgroup != NULL &&
		      strcmp(r->cgroup, "t:n:c:0.c1") == 0);
		/* The child makes it and joins it. */
		for (i = 0; i < 100 && stat(group, &st) < 0; i++)
			usleep(10 * 1000);
		CHECK(stat(group, &st) == 0);
	}
	CHECK(rt_instance_stop(in, 1) == 1); /* removed at once */
	CHECK(rec.removed == 1);
	CHECK(run_until(idle, 3000));
	CHECK(rec.call_exits == 1);
	CHECK(gone(pid));
	if (cgroups)
		CHECK(stat(group, &st) < 0 && errno == ENOENT);
	teardown(); /* and the root with it */
	if (cgroups)
		CHECK(stat(root, &st) < 0 && errno == ENOENT);
}

/* The output of a process goes to its log, read back by the tail. */
TEST(supervise_log_capture)
{
	struct rt_instance *in;
	struct rt_buf tail = { 0 };
	char dir[] = "/tmp/fnfs-unit-XXXXXX", path[128];
	int i;

	setup();
	CHECK(mkdtemp(dir) != NULL);
	sup.log_dir = strdup(dir);
	in = start_new("t/n/f/0",
		       daemon_spec("echo out; echo err >&2", "never", 0));
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	for (i = 0; i < 100; i++) {
		rt_buf_reset(&tail);
		rt_instance_log_tail(in, 1024, &tail);
		if (tail.data != NULL && strcmp(tail.data, "out\nerr\n") == 0)
			break;
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
	CHECK_STR(tail.data, "out\nerr\n");
	rt_buf_free(&tail);
	teardown();
	snprintf(path, sizeof(path), "%s/t:n:f:0.log", dir);
	unlink(path);
	CHECK(rmdir(dir) == 0);
}

/* A failing exit's reason quotes the last line the process wrote, read
 * even when the exit is reaped before the output (issue 23); a line
 * without its newline counts, a successful exit quotes nothing. */
TEST(supervise_reason_quotes_last_words)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/f/0",
		       daemon_spec("echo first >&2; echo; printf 'cannot "
				   "open x\\r\\n' >&2; exit 3",
				   "never", 0));
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	CHECK(in->state == RT_FAILED);
	CHECK_STR(in->reason, "exited (status 3): cannot open x; "
			      "restart_policy never restarts it");
	rt_instance_remove(in);
	in = start_new("t/n/f/1", daemon_spec("printf 'no newline' >&2; exit 4",
					      "never", 0));
	want_exited = 2;
	CHECK(run_until(exited_enough, 3000));
	CHECK_STR(in->reason,
		  "exited (status 4): no newline; restart_policy never "
		  "restarts it");
	rt_instance_remove(in);
	in = start_new("t/n/f/2", daemon_spec("echo fine >&2", "never", 0));
	want_exited = 3;
	CHECK(run_until(exited_enough, 3000));
	CHECK(strstr(in->reason, "fine") == NULL);
	teardown();
}

/* The log of an instance the worker no longer holds is read from its
 * file (a stopped instance's `log`, issue 23). */
TEST(supervise_log_tail_of_a_forgotten_instance)
{
	struct rt_instance *in;
	struct rt_buf tail = { 0 };
	char dir[] = "/tmp/fnfs-unit-XXXXXX", path[128];
	int i;

	setup();
	CHECK(mkdtemp(dir) != NULL);
	sup.log_dir = strdup(dir);
	in = start_new("t/n/f/0", daemon_spec("echo kept >&2", "never", 0));
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	for (i = 0; i < 100 && in->log_size < 5; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
	rt_instance_remove(in);
	CHECK(rt_sup_log_tail(&sup, "t/n/f/0", 1024, &tail) == 0);
	CHECK_STR(tail.data, "kept\n");
	CHECK(rt_sup_log_tail(&sup, "t/n/f/9", 1024, &tail) == -ENOENT);
	CHECK(rt_sup_log_tail(&sup, "nothing", 1024, &tail) == -ENOENT);
	rt_buf_free(&tail);
	teardown();
	snprintf(path, sizeof(path), "%s/t:n:f:0.log", dir);
	unlink(path);
	CHECK(rmdir(dir) == 0);
}

/* A graceful stop: with calls in flight, a stop and a restart leave the
 * process alone and the instance `stopping` until the calls have ended;
 * then SIGTERM, and for the restart a new process. */
TEST(supervise_stop_waits_for_calls)
{
	struct rt_instance *in;
	pid_t pid;

	setup();
	sup.ev = &busy_events;
	in = start_new("t/n/f/0", daemon_spec("sleep 30", "always", 0));
	pid = in->pid;
	fake_busy = 1;
	CHECK(rt_instance_stop(in, 0) == 0);
	CHECK(in->state == RT_STOPPING && in->draining);
	CHECK(strstr(in->reason, "in flight") != NULL);
	CHECK(!run_until(never, 300));
	CHECK(rec.exited == 0 && !gone(pid));
	rt_instance_drained(in); /* still busy: nothing happens */
	CHECK(!run_until(never, 100));
	CHECK(rec.exited == 0 && !gone(pid));
	fake_busy = 0;
	rt_instance_drained(in);
	want_exited = 1;
	CHECK(run_until(exited_enough, 3000));
	CHECK(rec.exits[0].signal == SIGTERM);
	CHECK(in->state == RT_STOPPED && !in->draining && gone(pid));

	/* A restart waits the same way, then spawns anew. */
	CHECK(rt_instance_start(in, NULL, 1) == 0);
	CHECK(in->state == RT_RUNNING && rec.spawned == 2);
	pid = in->pid;
	fake_busy = 1;
	CHECK(rt_instance_restart(in) == 0);
	CHECK(in->state == RT_STOPPING);
	CHECK(!run_until(never, 300));
	CHECK(rec.exited == 1 && !gone(pid));
	/* A stop while the restart waits: the stop wins, still after the
	 * calls. */
	CHECK(rt_instance_stop(in, 1) == 0);
	CHECK(!run_until(never, 100));
	CHECK(rec.exited == 1 && rec.removed == 0);
	fake_busy = 0;
	rt_instance_drained(in);
	want_exited = 2;
	CHECK(run_until(exited_enough, 3000));
	CHECK(gone(pid) && rec.spawned == 2);
	CHECK(!run_until(never, 50));
	CHECK(rec.removed == 1); /* forgotten once stopped */
	teardown();
}

/*
 * test_ready.c - readiness: the pure parts (the `ready` word, the probe's
 * request, reading its answer, a notify line), then the supervisor on a
 * loop with real processes: starting until a line on FN_NOTIFY_FD or an
 * accepted connection, a ready that comes too late or from a process
 * being stopped changing nothing, and ready_timeout stopping a process
 * with its reason.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/worker/ready.h"
#include "../../runtime/worker/supervise.h"
#include "unit.h"

/* ========================================================== pure parts */

TEST(ready_parse_words)
{
	const char *path = "x";

	CHECK(rt_ready_parse(NULL, &path) == RT_READY_STARTED && !path);
	CHECK(rt_ready_parse("", &path) == RT_READY_STARTED);
	CHECK(rt_ready_parse("started", &path) == RT_READY_STARTED);
	CHECK(rt_ready_parse("tcp", &path) == RT_READY_TCP && path == NULL);
	CHECK(rt_ready_parse("notify", &path) == RT_READY_NOTIFY);
	CHECK(rt_ready_parse("lambda", &path) == RT_READY_LAMBDA);
	CHECK(rt_ready_parse("http:/healthz", &path) == RT_READY_HTTP);
	CHECK_STR(path, "/healthz");
	CHECK(rt_ready_parse("http:/", &path) == RT_READY_HTTP);
	CHECK_STR(path, "/");
	CHECK(rt_ready_parse("http:/a?b=1", &path) == RT_READY_HTTP);
	CHECK_STR(path, "/a?b=1");
	CHECK(rt_ready_parse("http", &path) == -1);
	CHECK(rt_ready_parse("tcpx", &path) == -1);
	CHECK(rt_ready_parse("TCP", &path) == -1);
	CHECK(rt_ready_parse("https:/x", &path) == -1);
}

TEST(ready_request_text)
{
	char buf[256], small[20];
	int n = rt_ready_request("/healthz", "127.0.0.1:41234", buf,
				 sizeof(buf));

	CHECK(n > 0 && (size_t)n == strlen(buf));
	CHECK(strncmp(buf, "GET /healthz HTTP/1.1\r\n", 23) == 0);
	CHECK(strstr(buf, "\r\nHost: 127.0.0.1:41234\r\n") != NULL);
	CHECK(strstr(buf, "\r\nConnection: close\r\n") != NULL);
	CHECK(n > 4 && strcmp(buf + n - 4, "\r\n\r\n") == 0);
	CHECK(rt_ready_request("/healthz", "localhost", small, sizeof(small)) ==
	      -1);
}

static int feed_all(const char *text)
{
	struct rt_ready_http h;

	rt_ready_http_init(&h);
	return rt_ready_http_feed(&h, text, strlen(text));
}

TEST(ready_http_answers)
{
	static const char ok[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
	struct rt_ready_http h;
	size_t i;
	int st = 0;

	CHECK(feed_all(ok) == 200);
	CHECK(feed_all("HTTP/1.0 204 No Content\r\n\r\n") == 204);
	CHECK(feed_all("HTTP/1.1 503 Service Unavailable\r\n\r\n") == 503);
	CHECK(feed_all("HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\n") == 301);
	/* An informational head is passed over. */
	CHECK(feed_all("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 "
		       "Accepted\r\n\r\n") == 202);
	CHECK(feed_all("HTTP/1.1 100 Continue\r\n\r\n") == 0);
	/* A head not read whole yet needs more. */
	CHECK(feed_all("HTTP/1.1 200 OK\r\nContent-") == 0);
	/* Not HTTP at all. */
	CHECK(feed_all("SSH-2.0-OpenSSH_9.2\r\n") == -1);
	CHECK(feed_all("\x16\x03\x01\x02\x00") == -1);
	/* Byte by byte: the status comes with the end of the head. */
	rt_ready_http_init(&h);
	for (i = 0; i < sizeof(ok) - 1 && st == 0; i++)
		st = rt_ready_http_feed(&h, ok + i, 1);
	CHECK(st == 200 && i == strlen("HTTP/1.1 200 OK\r\nContent-Length: "
				       "3\r\n\r\n"));
	CHECK(rt_ready_http_feed(&h, "more", 4) == 200); /* known: kept */
	/* Its end before a head. */
	rt_ready_http_init(&h);
	CHECK(rt_ready_http_feed(&h, "HTTP/1.1 20", 11) == 0);
	CHECK(rt_ready_http_feed(&h, NULL, 0) == -1);
	rt_ready_http_init(&h);
	CHECK(rt_ready_http_feed(&h, NULL, 0) == -1);
}

TEST(ready_http_status_decides)
{
	CHECK(rt_ready_http_ok(200) && rt_ready_http_ok(204) &&
	      rt_ready_http_ok(299));
	CHECK(!rt_ready_http_ok(199) && !rt_ready_http_ok(300) &&
	      !rt_ready_http_ok(404) && !rt_ready_http_ok(503) &&
	      !rt_ready_http_ok(-1) && !rt_ready_http_ok(0));
}

TEST(ready_notify_lines)
{
	CHECK(rt_ready_notify_line("\n", 1));
	CHECK(rt_ready_notify_line("READY=1\n", 8));
	CHECK(rt_ready_notify_line("a\nb", 3));
	CHECK(!rt_ready_notify_line("READY=1", 7));
	CHECK(!rt_ready_notify_line("", 0));
	CHECK(!rt_ready_notify_line("\n", 0));
}

/* ================================================= on a loop, for real */

static struct {
	int ready;	    /* ready reports with no why */
	int unready;	    /* ready reports with a why */
	char why[256];	    /* the last why */
	int spawned;	    /* spawns */
	int exited;	    /* exits */
	int states;	    /* state reports */
	enum rt_state last; /* the last state reported */
} rec;

static uv_loop_t loop;
static struct rt_sup sup;
static uv_signal_t chld;
static uv_timer_t limit;
static int timed_out;

static void ev_state(struct rt_instance *in)
{
	rec.states++;
	rec.last = in->state;
}

static void ev_spawned(struct rt_instance *in, const char *why)
{
	(void)in;
	if (why == NULL)
		rec.spawned++;
}

static void ev_ready(struct rt_instance *in, const char *why)
{
	if (why == NULL) {
		CHECK(in->state == RT_RUNNING);
		rec.ready++;
		return;
	}
	rec.unready++;
	snprintf(rec.why, sizeof(rec.why), "%s", why);
}

static void ev_exited(struct rt_instance *in, const struct rt_exit *e)
{
	(void)in;
	(void)e;
	rec.exited++;
}

static const struct rt_sup_events events = {
	.state = ev_state,
	.spawned = ev_spawned,
	.ready = ev_ready,
	.exited = ev_exited,
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

static int run_until(int (*done)(void), int ms)
{
	timed_out = 0;
	uv_update_time(&loop); /* a spawn may have taken a while */
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

static int never(void)
{
	return 0;
}

static void teardown(void)
{
	void **v;
	size_t i, n;

	v = rt_map_values(&sup.instances, &n);
	for (i = 0; v != NULL && i < n; i++)
		rt_instance_stop(v[i], 1);
	free(v);
	CHECK(run_until(idle, 8000));
	uv_close((uv_handle_t *)&chld, NULL);
	uv_close((uv_handle_t *)&limit, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	rt_sup_free(&sup, 500);
}

static struct rt_instance *start_new(const char *id, json_t *spec)
{
	struct rt_instance *in = rt_instance_new(&sup, id);

	if (in == NULL)
		exit(1);
	CHECK(rt_instance_start(in, spec, 1) == 0);
	json_decref(spec);
	return in;
}

static int is_ready(void)
{
	return rec.ready > 0;
}

static int is_unready(void)
{
	return rec.unready > 0;
}

static int is_ready2(void)
{
	return rec.ready > 1;
}

static int one_exit(void)
{
	return rec.exited > 0;
}

TEST(ready_notify_on_a_loop)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/f/0",
		       json_pack("{s:s, s:s, s:s, s:i, s:i}", "command",
				 "sleep 0.3; echo >&\"$FN_NOTIFY_FD\"; exec "
				 "sleep 30",
				 "mode", "daemon", "ready", "notify",
				 "ready_timeout", 10, "grace_ms", 500));
	/* Spawned, and starting until the line. */
	CHECK(rec.spawned == 1 && in->pid > 0);
	CHECK(in->state == RT_STARTING && rec.ready == 0);
	CHECK(strstr(in->reason, "waiting to be ready: a line on "
				 "FN_NOTIFY_FD") != NULL);
	CHECK(in->ready != NULL);
	/* A ready from elsewhere meanwhile would count: it is what lambda
	 * does. Here the line comes. */
	CHECK(run_until(is_ready, 20000));
	CHECK(in->state == RT_RUNNING && rec.ready == 1);
	CHECK_STR(in->reason, "ready (notify)");
	CHECK(in->ready == NULL); /* the watch ended */
	/* Once running, another ready changes nothing. */
	rt_instance_ready(in, "again");
	CHECK(rec.ready == 1 && in->state == RT_RUNNING);
	CHECK_STR(in->reason, "ready (notify)");
	/* Being stopped, a ready changes nothing either. */
	CHECK(rt_instance_restart(in) == 0);
	CHECK(in->state == RT_STOPPING);
	rt_instance_ready(in, "late");
	CHECK(in->state == RT_STOPPING && rec.ready == 1);
	/* The new process is starting once the old one has gone, then
	 * ready by its own line. */
	CHECK(run_until(one_exit, 20000));
	CHECK(in->state == RT_STARTING);
	CHECK(run_until(is_ready2, 20000));
	CHECK(rec.ready == 2 && rec.spawned == 2);
	CHECK_STR(in->reason, "ready (notify)");
	teardown();
}

TEST(ready_lambda_waits_for_its_caller)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/l/0", json_pack("{s:s, s:s, s:s, s:s, s:i}",
					    "command", "exec sleep 30", "mode",
					    "hot", "format", "lambda", "ready",
					    "lambda", "ready_timeout", 10));
	CHECK(in->state == RT_STARTING && in->ready != NULL);
	CHECK(strstr(in->reason, "first /next") != NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK(in->state == RT_STARTING);
	rt_instance_ready(in, "first /next");
	CHECK(in->state == RT_RUNNING && rec.ready == 1);
	CHECK_STR(in->reason, "ready (first /next)");
	teardown();
}

TEST(ready_timeout_stops_it)
{
	struct rt_instance *in;

	setup();
	in = start_new("t/n/t/0",
		       json_pack("{s:s, s:s, s:s, s:i, s:s, s:i}", "command",
				 "exec sleep 30", "mode", "daemon", "ready",
				 "notify", "ready_timeout", 1, "restart_policy",
				 "never", "grace_ms", 500));
	CHECK(in->state == RT_STARTING);
	CHECK(run_until(is_unready, 10000));
	CHECK_STR(rec.why, "not ready within 1 s: no line on FN_NOTIFY_FD yet");
	CHECK(in->state == RT_STOPPING);
	CHECK(strstr(in->reason, "not ready within 1 s") != NULL);
	CHECK(in->ready == NULL);
	CHECK(run_until(one_exit, 10000));
	CHECK(in->exits[0].signal == SIGTERM);
	CHECK(in->state == RT_FAILED);
	CHECK_STR(in->reason, "not ready within 1 s: no line on FN_NOTIFY_FD "
			      "yet; restart_policy never restarts it");
	CHECK(rec.ready == 0);
	teardown();
}

TEST(ready_tcp_probe)
{
	struct rt_instance *in;
	int64_t t0;

	setup();
	in = start_new(
		"t/n/p/0",
		json_pack("{s:s, s:s, s:s, s:i}", "command",
			  "sleep 1; exec /usr/bin/python3 -c 'import os, "
			  "socket, time; s = socket.socket(); "
			  "s.bind((\"127.0.0.1\", int(os.environ[\"PORT\"]))); "
			  "s.listen(); time.sleep(30)'",
			  "mode", "daemon", "ready", "tcp", "ready_timeout",
			  10));
	CHECK(in->state == RT_STARTING && in->port > 0);
	CHECK(strstr(in->reason, "waiting to be ready: tcp on ") != NULL);
	/* Nothing listens: it stays starting, probed again and again. */
	t0 = rt_mono_ms();
	run_until(never, 300);
	CHECK(rt_mono_ms() - t0 >= 250);
	CHECK(in->state == RT_STARTING && rec.ready == 0);
	CHECK(strstr(rt_ready_why(in), "connection refused on 127.0.0.1:") !=
	      NULL);
	/* Then its process listens on its PORT (only its own socket
	 * counts: test_peer.c, 116-attacks-ports.sh). */
	CHECK(run_until(is_ready, 20000));
	CHECK(in->state == RT_RUNNING);
	CHECK_STR(in->reason, "ready (tcp)");
	teardown();
}

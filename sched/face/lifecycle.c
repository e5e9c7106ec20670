/*
 * lifecycle.c - the cluster side's life: sched_start (settings, known
 * workers and instances, the socket, the tick), the tick once a second
 * (recovery window, pool, calls, capacity; health and pings are
 * fence.c's), and sched_shutdown (bounded).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../workers/admit.h"
#include "../common.h"
#include "../workers/conn.h"
#include "../workers/listen.h"
#include "../workers/fence.h"
#include "../workers/pool.h"
#include "../act/reconcile.h"
#include "../act/reports.h"
#include "../workers/requests.h"
#include "workers.h"
#include "../../runtime/worker/worker.h"

/* How long an unmount waits for the cluster journal's last lines. */
#define JOURNAL_FLUSH_MS 2000

/* After the recovery window: a known worker still away loses its
 * instances to the others. */
static int absent_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	if (!w->online && w->assignments.count > 0)
		sched__worker_lost(arg, w, 0);
	return 0;
}

/* How long the loop thread was held past the tick's second: a callback
 * that ran that long delayed every other (a leader's lease renewals
 * among them). The longest goes to `stats`; one of a second or more is
 * logged. */
static void note_held(struct sched *s)
{
	uint64_t now = rt_mono_ms();
	int64_t held;

	if (s->tick_last != 0) {
		held = (int64_t)(now - s->tick_last) - 1000;
		if (held > s->held_max_ms)
			s->held_max_ms = held;
		if (held >= 1000)
			rt_log(RT_LOG_WARN,
			       "the loop thread was held for about %lld ms",
			       (long long)held);
	}
	s->tick_last = now;
}

static void on_tick(uv_timer_t *t)
{
	struct sched *s = t->data;
	int was_recovering = s->recovery_until != 0;

	/* Silent workers and pings: fence.c's heartbeat, more often. */
	if (s->shutting_down)
		return;
	note_held(s);
	sched_cluster_tick(s);
	sched__journal_tick(s, 0);
	if (!sched__acting(s)) {
		/* A follower: the leader places and recovers. */
		sched__calls_tick(s);
		return;
	}
	was_recovering = s->recovery_until != 0;
	if (was_recovering && rt_mono_ms() >= s->recovery_until) {
		s->recovery_until = 0;
		/* Workers that did not come back: their instances move. */
		rt_map_each(&s->pool.children, absent_cb, s);
		sched_event(s, "recovery.done", "workers", NULL);
	}
	sched__pool_check(s);
	sched__workers_publish(s);
	sched__calls_tick(s);
	if (s->act.capacity_changed || was_recovering) {
		s->act.capacity_changed = 0;
		sched__reconcile_all(s);
	}
}

/* A fair share of the machine's memory for each local worker. */
static int fair_share(int workers)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	long long mb = pages > 0 && size > 0
			       ? (long long)pages * size / (1024 * 1024)
			       : 1024;

	return (int)(mb / (workers > 0 ? workers : 1));
}

int sched_start(struct sched *s, struct uv_loop_s *loop,
		const struct sched_options *opt)
{
	char v[32];
	int rc, i;
	long n;
	mode_t mask;

	static const struct sched_conn_ops ops = {
		.on_accept = sched__admit_peer,
		.on_register = sched__on_register,
		.on_message = sched__on_message,
		.on_gone = sched__worker_gone,
	};

	s->loop = loop;
	s->links.conn_ops = &ops;
	s->calls_state.no_direct = opt->no_direct_calls;
	s->links.next_seq = 1;
	s->heartbeat_timeout = opt->heartbeat_timeout > 0
				       ? opt->heartbeat_timeout
				       : SCHED_HEARTBEAT_TIMEOUT_MS;
	s->pool_state.starts_per_minute = opt->starts_per_minute > 0
						  ? opt->starts_per_minute
						  : SCHED_STARTS_PER_MINUTE;
	if (store_setting_get(s->store, "strategy", v, sizeof(v)) == 0 &&
	    sched_strategy_parse(v, strlen(v)) >= 0)
		s->strategy = sched_strategy_parse(v, strlen(v));
	s->run_as_uid = opt->run_as_uid;
	s->run_as_gid = opt->run_as_gid;
	s->pool_state.self = strdup(opt->self);
	s->pool_state.log_path = opt->log ? strdup(opt->log) : NULL;
	/* The pool's size: the command line, else the stored one, else 1. */
	if (opt->workers >= 0) {
		char was[32];

		/* Stored for the next start without --workers; a store that
		 * cannot take it fails the start, as the load above does. */
		snprintf(v, sizeof(v), "%d", opt->workers);
		if (store_setting_get(s->store, "pool_size", was, sizeof(was)) <
			    0 ||
		    strcmp(was, v) != 0) {
			rc = store_setting_put(s->store, "pool_size", v);
			if (rc < 0) {
				rt_log(RT_LOG_ERROR,
				       "cannot store pool_size %s: %s", v,
				       strerror(-rc));
				return rc;
			}
		}
		s->pool_state.size = opt->workers;
	} else if (store_setting_get(s->store, "pool_size", v, sizeof(v)) ==
			   0 &&
		   sched__parse_int(v, strlen(v), 0, SCHED_POOL_MAX, &n) == 0) {
		s->pool_state.size = (int)n;
	} else {
		s->pool_state.size = 1;
	}
	s->pool_state.worker_memory =
		opt->worker_memory > 0
			? opt->worker_memory
			: fair_share(s->pool_state.size > 0 ? s->pool_state.size
							    : 1);
	for (i = 0; i < SCHED_POOL_MAX; i++)
		snprintf(s->pool_state.locals[i].id,
			 sizeof(s->pool_state.locals[i].id), "local-%d", i + 1);

	/* Workers known from before: give them a moment to come back. */
	rc = sched__workers_load(s);
	if (rc < 0)
		return rc;
	if (s->pool.children.count > 0)
		s->recovery_until = rt_mono_ms() + SCHED_RECOVERY_MS;
	rc = sched__instances_load(s);
	if (rc < 0)
		return rc;

	{
		struct rt_buf p = { 0 };

		rt_buf_printf(&p, "%s/ctl.sock", s->datadir);
		s->links.sock_path = p.data;
	}
	unlink(s->links.sock_path);
	uv_pipe_init(loop, &s->links.server, 0);
	s->links.server.data = s;
	/* Born 0600 whatever the umask (bind takes its mode from it), and
	 * made so again for good measure. */
	mask = umask(0177);
	rc = uv_pipe_bind(&s->links.server, s->links.sock_path);
	umask(mask);
	if (rc == 0 && chmod(s->links.sock_path, RT_PRIVATE_FILE_MODE) < 0)
		rc = -errno;
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->links.server, 64,
			       sched__on_connection);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot listen on %s: %s",
		       s->links.sock_path, uv_strerror(rc));
		uv_close((uv_handle_t *)&s->links.server, NULL);
		return -EIO;
	}
	rc = rt_wire_flusher_start(&s->links.flusher, loop);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot start the frame flusher: %s",
		       uv_strerror(rc));
		uv_close((uv_handle_t *)&s->links.server, NULL);
		return -EIO;
	}
	if (opt->listen != NULL &&
	    sched__listen_start(s, opt->listen, opt->insecure) < 0) {
		rt_wire_flusher_stop(&s->links.flusher);
		uv_close((uv_handle_t *)&s->links.server, NULL);
		return -EIO;
	}
	uv_timer_init(loop, &s->tick);
	s->tick.data = s;
	uv_timer_init(loop, &s->act.reconcile_timer);
	s->act.reconcile_timer.data = s;
	uv_timer_start(&s->tick, on_tick, 1000, 1000);
	sched__code_start(s);
	sched__heartbeat_start(s);
	sched__pool_check(s);
	rc = sched_cluster_start(s, opt);
	if (rc < 0)
		return rc;
	sched__reconcile_all(s);
	return 0;
}

static int pending_local(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		n += s->pool_state.locals[i].live;
	return n;
}

static int online_local(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_worker *w = sched__local_worker(
			s, &s->pool_state.locals[i]);

		n += w != NULL && w->online;
	}
	return n;
}

static void close_noop(uv_handle_t *h)
{
	(void)h;
}

static int close_conn_cb(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	sched__conn_drop(value);
	return 0;
}

static void finish_shutdown(struct sched *s)
{
	void (*done)(void *) = s->shutdown_done;
	size_t i;

	if (done == NULL)
		return;
	s->shutdown_done = NULL;
	uv_timer_stop(&s->shutdown_timer);
	uv_close((uv_handle_t *)&s->shutdown_timer, close_noop);
	uv_timer_stop(&s->tick);
	uv_close((uv_handle_t *)&s->tick, close_noop);
	uv_timer_stop(&s->act.reconcile_timer);
	uv_close((uv_handle_t *)&s->act.reconcile_timer, close_noop);
	sched__code_stop(s);
	sched__journal_stop(s);
	sched__heartbeat_stop(s);
	uv_close((uv_handle_t *)&s->links.server, close_noop);
	sched__listen_close(s);
	unlink(s->links.sock_path);
	rt_map_each(&s->pool.children, close_conn_cb, NULL);
	sched__conn_close_all(s);
	rt_wire_flusher_stop(&s->links.flusher);
	sched__requests_end_all(s);
	sched_cluster_abort(s);
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		int killed = s->pool_state.locals[i].live;

		if (killed) {
			/* Past the bound: make sure nothing is left. */
			rt_log(RT_LOG_WARN,
			       "local worker %s did not exit; "
			       "killing it",
			       s->pool_state.locals[i].id);
			kill(-s->pool_state.locals[i].proc.pid, SIGKILL);
			uv_close((uv_handle_t *)&s->pool_state.locals[i].proc,
				 NULL);
			s->pool_state.locals[i].live = 0;
		}
		/* The empty memory groups of a local worker that was killed
		 * (now, or by kill -9 before) and cannot remove them: its
		 * instances die with it. Bounded, and at once where there is
		 * no group; the FUSE mount is gone. */
		rt_cgroup_prune(s->pool_state.locals[i].id, s->links.sock_path,
				killed ? 1000 : 100);
	}
	done(s->shutdown_arg);
}

static void on_shutdown_poll(uv_timer_t *t)
{
	struct sched *s = t->data;
	int64_t now = rt_mono_ms();

	if ((pending_local(s) == 0 && online_local(s) == 0 &&
	     s->links.requests.count == 0 && !sched_cluster_stopping(s) &&
	     (sched__journal_flushed(s) || now > s->journal_until)) ||
	    now > s->recovery_until)
		finish_shutdown(s);
}

static int stop_manual_cb(const char *key, void *value, void *arg)
{
	struct sched_instance *in = value;
	struct sched_wait *none = NULL;
	struct rt_buf id = { 0 };

	(void)key;
	(void)none;
	sched_obj_path(&in->obj, &id);
	sched__request(
		arg, in->worker,
		json_pack("{s:s, s:s}", "type", "stop", "instance", id.data),
		NULL, 0, in->obj.id);
	rt_buf_free(&id);
	return 0;
}

static int stop_workers_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;
	struct sched *s = arg;

	(void)key;
	if (w->local) {
		/* A failure leaves its row: the next start waits for it a
		 * moment (SCHED_RECOVERY_MS), as after a crash. */
		int rc = store_worker_delete(s->store, w->obj.name);

		if (rc == 0)
			rc = sched__admit_forget(s, w->obj.name);
		if (rc < 0)
			rt_log(RT_LOG_ERROR, "worker %s: the store failed: %s",
			       w->obj.name, strerror(-rc));
	}
	if (!w->online) {
		/* A hand-started worker that is away (killed, most likely)
		 * cannot remove its groups: remove those that are empty, in
		 * one pass (a live one's are not, and it re-creates its root
		 * when it comes back). */
		if (!w->local)
			rt_cgroup_prune(w->obj.name, s->links.sock_path, 0);
		return 0;
	}
	if (w->local)
		sched__send(s, w, json_pack("{s:s}", "type", "shutdown"));
	else if (!sched_cluster_shared(s))
		/* a worker started by hand stays; its instances stop */
		rt_map_each(&w->assignments, stop_manual_cb, s);
	/* On a cluster they go on: the next leader takes the worker over. */
	return 0;
}

void sched_shutdown(struct sched *s, void (*done)(void *arg), void *arg)
{
	if (s->shutting_down)
		return;
	s->shutting_down = 1;
	sched__calls_close(s);
	/* A cluster's leader resigns first (the store stops after it). */
	if (sched_cluster_stop(s) == 0)
		store_stop(s->store);
	/* The journal's last lines go before it stops (finish_shutdown),
	 * JOURNAL_FLUSH_MS at most. */
	sched__journal_tick(s, 1);
	sched__journal_flush(s);
	s->journal_until = rt_mono_ms() + JOURNAL_FLUSH_MS;
	s->shutdown_done = done;
	s->shutdown_arg = arg;
	if (s->loop == NULL) {
		s->shutdown_done = NULL;
		done(arg);
		return;
	}
	rt_log(RT_LOG_INFO, "stopping every instance and local worker");
	rt_map_each(&s->pool.children, stop_workers_cb, s);
	/* Bounded: the workers' stop grace, and a little more. */
	s->recovery_until = rt_mono_ms() + 5000 + 3000;
	uv_timer_init(s->loop, &s->shutdown_timer);
	s->shutdown_timer.data = s;
	uv_timer_start(&s->shutdown_timer, on_shutdown_poll, 0, 50);
}

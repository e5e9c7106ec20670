/*
 * worker.c - `fnfs worker`: connects to the controller's socket, registers,
 * sends heartbeats with /proc samples, runs the instances it is told to
 * run, and keeps them running when the controller goes away: it reconnects
 * with backoff, and only after the orphan timeout stops them and exits.
 * With a list of controllers (a cluster) it tries them in turn and follows
 * a follower's `refused` to the leader it names (connect_list.h).
 * Its supervisor (supervise.c) reports through events that this file turns
 * into messages and replies; the replies a request waits for are kept
 * here, per instance (struct rt_waits).
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "http.h"
#include "sandbox.h"
#include "worker.h"

/* A connection not registered this long after it was started (a connect
 * or a TLS handshake with no answer) is given up and tried again. */
#define CONNECT_TIMEOUT_MS 5000
/* The controller's messages are handled in slices of about this long:
 * a hundred starts at once (a failover) take the better part of a second,
 * and between slices the loop runs (the started reports go out as the
 * spawns proceed, pings are answered, exits reaped). */
#define SLICE_MS		 10
#define ORPHAN_TIMEOUT_DEFAULT_S 60

static void conn_lost(struct rt_worker *w, const char *why);
static void try_connect(struct rt_worker *w);
static void maybe_exit(struct rt_worker *w, int give_up);

/* ============================================================ sending */

void rt_worker_send(struct rt_worker *w, json_t *header, const void *body,
		    size_t len)
{
	const char *type = json_string_value(json_object_get(header, "type"));

	/* Before the controller has accepted us, only the registration
	 * goes out; what happened meanwhile is reported afterwards. */
	if (!w->connected &&
	    (!w->connecting || type == NULL || strcmp(type, "register") != 0)) {
		json_decref(header);
		return;
	}
	rt_wire_out_send(&w->out, header, body, len);
}

/* Describes `in` as the controller wants to know it. */
static json_t *describe(const struct rt_instance *in)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:s, s:I}",
			      "type", "instance", "instance", in->id, "state",
			      rt_state_name(in->state), "pid", (int)in->pid,
			      "revision", (json_int_t)in->revision,
			      "started_ms", (json_int_t)in->started_ms,
			      "restarts", (json_int_t)in->restarts, "reason",
			      in->reason, "epoch", (json_int_t)in->epoch);
	json_t *exits = json_array();
	struct stat st;
	char what[64];
	int i;

	for (i = 0; i < in->nexits; i++) {
		rt_exit_words(&in->exits[i], what, sizeof(what));
		json_array_append_new(exits,
				      json_pack("{s:I, s:s}", "ms",
						(json_int_t)in->exits[i].ms,
						"exit", what));
	}
	json_object_set_new(o, "exits", exits);
	/* Where its server listens, for the controller's direct calls:
	 * PORT only when the server shares our network namespace. */
	if (rt_http_is(in)) {
		const char *net = json_string_value(
				   json_object_get(in->spec, "network")),
			   *iso = json_string_value(
				   json_object_get(in->spec, "isolation"));

		if (in->port > 0 &&
		    ((iso != NULL && strcmp(iso, "none") == 0) || net == NULL ||
		     strcmp(net, "none") != 0))
			json_object_set_new(o, "port", json_integer(in->port));
		if (in->listener != NULL && in->listen_dir != NULL &&
		    stat(in->listen_dir, &st) == 0) {
			/* With its directory's identity: a controller in
			 * another mount namespace sees another file there. */
			json_object_set_new(o, "listener",
					    json_string(in->listener));
			json_object_set_new(
				o, "listen_dir_dev",
				json_integer((json_int_t)st.st_dev));
			json_object_set_new(
				o, "listen_dir_ino",
				json_integer((json_int_t)st.st_ino));
		}
	}
	return o;
}

/* Reports an instance's state to the controller. */
static void report(struct rt_worker *w, const struct rt_instance *in)
{
	rt_worker_send(w, describe(in), NULL, 0);
}

/* Answers the controller's request `seq` (none when <= 0). Takes
 * `extra`, the reply's other fields, or NULL. */
static void reply(struct rt_worker *w, long long seq, int err, json_t *extra)
{
	json_t *o = extra ? extra : json_object();

	if (seq <= 0) {
		json_decref(o);
		return;
	}
	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "seq", json_integer(seq));
	json_object_set_new(o, "err", json_integer(err));
	rt_worker_send(w, o, NULL, 0);
}

/* ============================================================= waits */

/* The requests on one instance that wait for what its supervisor reports:
 * every request gets one answer, also when another replaces it. */
struct rt_waits {
	long long spawn;     /* start, restart: answered when it is ready */
	long long exit;	     /* stop: answered when its process has exited */
	int64_t spawn_since; /* monotonic ms of the first spawn `spawn` has
				seen, or 0: its readiness is bounded from
				there (on_tick) */
};

static struct rt_waits *waits_get(struct rt_worker *w, const char *id)
{
	return rt_map_get(&w->waits, id);
}

/* Drops the record of `id` once nothing waits. */
static void waits_tidy(struct rt_worker *w, const char *id)
{
	struct rt_waits *q = waits_get(w, id);

	if (q != NULL && q->spawn <= 0 && q->exit <= 0)
		free(rt_map_del(&w->waits, id));
}

/* Makes request `seq` wait for the next spawn (or, with `exit`, the next
 * exit) of `id`, answering the one it replaces (0). A message nobody
 * waits for (`seq` <= 0) replaces nothing: a stop that is waited for is
 * answered when the process has exited, even if a plain stop follows
 * (the controller's healing relies on it). Returns 0 or -ENOMEM. */
static int wait_for(struct rt_worker *w, const char *id, long long seq,
		    int exit)
{
	struct rt_waits *q = waits_get(w, id);
	long long *slot;

	if (seq <= 0)
		return 0;
	if (q == NULL) {
		q = calloc(1, sizeof(*q));
		if (q == NULL || rt_map_put(&w->waits, id, q) < 0) {
			free(q);
			return -ENOMEM;
		}
	}
	slot = exit ? &q->exit : &q->spawn;
	if (*slot > 0 && *slot != seq)
		reply(w, *slot, 0, NULL);
	if (!exit && *slot != seq)
		q->spawn_since = 0;
	*slot = seq;
	waits_tidy(w, id);
	return 0;
}

/* Answers what waits for a spawn (with `pid` when >= 0) or an exit of
 * `id`, with `err` and, when not NULL, the reason `why`. */
static void answer_why(struct rt_worker *w, const char *id, int exit, int err,
		       int pid, const char *why)
{
	struct rt_waits *q = waits_get(w, id);
	struct rt_instance *in;
	json_t *extra = NULL;
	long long seq;

	if (q == NULL)
		return;
	if (pid >= 0) {
		/* A spawn names the assignment it is of. */
		in = rt_map_get(&w->sup.instances, id);
		extra = json_pack("{s:i, s:I}", "pid", pid, "epoch",
				  (json_int_t)(in ? in->epoch : 0));
	}
	if (why != NULL) {
		if (extra == NULL)
			extra = json_object();
		json_object_set_new(extra, "reason", json_string(why));
	}
	seq = exit ? q->exit : q->spawn;
	if (exit) {
		q->exit = 0;
	} else {
		q->spawn = 0;
		q->spawn_since = 0;
	}
	waits_tidy(w, id);
	reply(w, seq, err, extra);
}

static void answer(struct rt_worker *w, const char *id, int exit, int err,
		   int pid)
{
	answer_why(w, id, exit, err, pid, NULL);
}

/* Gathers the ids of instances whose start or restart has waited longer
 * than their ready_timeout since the first spawn it saw: that process
 * exited before it was ready, and no later one is ready either (or none
 * will come: it failed). */
static int late_cb(const char *key, void *value, void *arg)
{
	struct rt_waits *q = value;

	if (q->spawn > 0 && q->spawn_since > 0)
		json_array_append_new(arg, json_string(key));
	return 0;
}

/* Fails the waits gathered by late_cb that are past their bound with
 * ETIMEDOUT. */
static void answer_late(struct rt_worker *w)
{
	json_t *ids = json_array(), *v;
	size_t i;

	rt_map_each(&w->waits, late_cb, ids);
	json_array_foreach (ids, i, v) {
		const char *id = json_string_value(v);
		struct rt_instance *in = rt_map_get(&w->sup.instances, id);
		struct rt_waits *q = waits_get(w, id);
		char why[300];
		int limit;

		if (in == NULL || q == NULL)
			continue;
		limit = rt_ready_timeout_ms(in);
		/* The process it first saw is still watched: its own
		 * deadline answers (ev_ready), to the ms. */
		if (rt_mono_ms() - q->spawn_since <= limit ||
		    (in->ready != NULL && in->started_mono == q->spawn_since))
			continue;
		snprintf(why, sizeof(why), "not ready within %d s: %s",
			 limit / 1000, rt_ready_why(in));
		answer_why(w, id, 0, ETIMEDOUT, -1, why);
	}
	json_decref(ids);
}

/* ============================================== the supervisor's events */

static void ev_state(struct rt_instance *in)
{
	report(rt_worker_of(in), in);
	/* A stop that waited for calls ends here when no process ran (a
	 * cold instance); a process's exit answered it already. */
	if (in->state == RT_STOPPED)
		answer(rt_worker_of(in), in->id, 1, 0, -1);
}

static void ev_spawned(struct rt_instance *in, const char *why)
{
	struct rt_worker *w = rt_worker_of(in);
	struct rt_waits *q = waits_get(w, in->id);

	in->run_epoch = in->epoch;
	/* A failed spawn answers at once: the exit (status 127) follows.
	 * A process that runs answers once ready (ev_ready), within its
	 * ready_timeout from the first spawn the request sees. */
	if (why != NULL)
		answer(w, in->id, 0, 0, -1);
	else if (q != NULL && q->spawn > 0 && q->spawn_since == 0)
		q->spawn_since = in->started_mono;
}

static void ev_ready(struct rt_instance *in, const char *why)
{
	struct rt_worker *w = rt_worker_of(in);

	if (why != NULL) {
		/* Not ready in time: a restart waiting for it fails. */
		answer_why(w, in->id, 0, ETIMEDOUT, -1, why);
		return;
	}
	answer(w, in->id, 0, 0, (int)in->pid);
	rt_call_ready(in);
}

static void ev_exited(struct rt_instance *in, const struct rt_exit *e)
{
	struct rt_worker *w = rt_worker_of(in);
	char what[64];

	rt_call_process_gone(in);
	/* Whoever waited for this exit has it, whatever comes next. */
	answer(w, in->id, 1, 0, -1);
	rt_exit_words(e, what, sizeof(what));
	rt_worker_send(w,
		       json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:I}", "type",
				 "exited", "instance", in->id, "exit", what,
				 "code", e->code, "signal", e->signal, "oom",
				 e->oom, "epoch",
				 (json_int_t)(in->run_epoch ? in->run_epoch
							    : in->epoch)),
		       NULL, 0);
}

static void ev_removed(struct rt_instance *in)
{
	struct rt_worker *w = rt_worker_of(in);

	rt_call_abort(in, "the instance is gone");
	rt_code_cancel(w, in->id);
	rt_code_release(w, in->id);
	answer(w, in->id, 0, ECANCELED, -1);
	answer(w, in->id, 1, 0, -1);
	assert(waits_get(w, in->id) == NULL);
	maybe_exit(w, 0);
}

static const struct rt_sup_events events = {
	.state = ev_state,
	.spawned = ev_spawned,
	.ready = ev_ready,
	.exited = ev_exited,
	.removed = ev_removed,
	.call_output = rt_call_on_output,
	.call_exited = rt_call_cold_exited,
	.busy = rt_call_busy,
};

/* ====================================================== instance requests */

/* start: answered with the pid once it runs the revision. */
static void start_instance(struct rt_worker *w, struct rt_instance *in,
			   json_t *spec, long long revision, long long seq)
{
	if (wait_for(w, in->id, seq, 0) < 0) {
		reply(w, seq, ENOMEM, NULL);
		return;
	}
	if (rt_instance_start(in, spec, revision) == 1) {
		struct rt_waits *q = waits_get(w, in->id);

		if (in->state != RT_STARTING)
			answer(w, in->id, 0, 0, (int)in->pid); /* it runs */
		else if (q != NULL && q->spawn_since == 0)
			/* Its process is waiting to be ready: so is this. */
			q->spawn_since = in->started_mono;
	}
}

void rt_worker_start(struct rt_worker *w, struct rt_instance *in, json_t *spec,
		     long long revision, long long seq)
{
	start_instance(w, in, spec, revision, seq);
}

void rt_worker_reply(struct rt_worker *w, long long seq, int err)
{
	reply(w, seq, err, NULL);
}

/* stop: answered once its process has exited (at once if none runs).
 * A graceful stop: the calls under way end first (rt_call_busy), each by
 * its deadline, and the instance is `stopping` meanwhile. */
static void stop_instance(struct rt_worker *w, struct rt_instance *in,
			  long long seq, int forget)
{
	rt_code_cancel(w, in->id);
	answer(w, in->id, 0, ECANCELED, -1);
	if (wait_for(w, in->id, seq, 1) < 0)
		reply(w, seq, ENOMEM, NULL);
	/* Even when removed, `in` may be read until the loop runs again. */
	if (rt_instance_stop(in, forget) == 1) {
		/* Nothing ran: calls waiting for a process never get one. */
		rt_call_abort(in, "the instance stopped");
		answer(w, in->id, 1, 0, -1);
	} else {
		rt_call_ready(in); /* waiting ones are served while it drains */
	}
}

/* restart: answered with the pid once spawned anew. */
static void restart_instance(struct rt_worker *w, struct rt_instance *in,
			     long long seq)
{
	if (in->spec == NULL) {
		reply(w, seq, ENOENT, NULL);
		return;
	}
	if (wait_for(w, in->id, seq, 0) < 0) {
		reply(w, seq, ENOMEM, NULL);
		return;
	}
	rt_instance_restart(in);
}

static int running_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;

	(void)key;
	/* Every instance it holds, with its state: a failed one stays
	 * failed under a new controller instead of being started again. */
	if (!in->freeing && in->spec != NULL)
		json_array_append_new(
			arg,
			json_pack("{s:s, s:I, s:i, s:s, s:I, s:I}", "instance",
				  in->id, "revision", (json_int_t)in->revision,
				  "pid", (int)in->pid, "state",
				  rt_state_name(in->state), "restarts",
				  (json_int_t)in->restarts, "epoch",
				  (json_int_t)in->epoch));
	return 0;
}

static void send_register(struct rt_worker *w)
{
	json_t *running = json_array(), *h;

	rt_map_each(&w->sup.instances, running_cb, running);
	h = json_pack("{s:s, s:s, s:i, s:O, s:O, s:i, s:o, s:b}", "type",
		      "register", "id", w->id, "memory", w->memory_mb, "tags",
		      w->tags, "namespaces", w->namespaces, "pid",
		      (int)getpid(), "running", running, "cgroups",
		      rt_cg_has(&w->sup.cg, RT_CG_MEMORY));
	/* It answers `ping` (an older worker would log each one). */
	json_object_set_new(h, "pong", json_true());
	rt_worker_send(w, h, NULL, 0);
}

/* ========================================================= shutting down */

/* Stops every instance, then exits (see maybe_exit). Stopping
 * may remove instances, so they are gathered before any is stopped. */
static void shutdown_all(struct rt_worker *w, const char *why)
{
	void **v;
	size_t i, n;

	if (w->shutting_down)
		return;
	rt_log(RT_LOG_INFO, "worker %s: shutting down: %s", w->id, why);
	if (w->connected)
		rt_worker_send(w, json_pack("{s:s}", "type", "leaving"), NULL,
			       0);
	w->shutting_down = 1;
	v = rt_map_values(&w->sup.instances, &n);
	for (i = 0; v != NULL && i < n; i++) {
		/* No graceful stop: the worker is going away. */
		rt_call_abort(v[i], "the worker is shutting down");
		stop_instance(w, v[i], 0, 1);
	}
	free(v);
	maybe_exit(w, 0);
}

/* Ends the worker once it is shutting down and nothing is left: every
 * instance removed and every process it forked reaped, so that their
 * memory and groups go too. Processes that are not reaped within
 * RT_REAP_WAIT_MS of being the last thing left are given up (on_tick). */
static void maybe_exit(struct rt_worker *w, int give_up)
{
	int i;

	if (!w->shutting_down || w->closed || w->sup.instances.count > 0)
		return;
	if (!rt_sup_idle(&w->sup) && !give_up) {
		if (w->reap_wait_mono == 0) {
			/* Only processes of calls or removed instances:
			 * killed already, their SIGCHLD is on its way. */
			w->reap_wait_mono = rt_mono_ms();
			rt_sup_kill_runs(&w->sup);
		}
		return;
	}
	if (!rt_sup_idle(&w->sup))
		rt_log(RT_LOG_WARN,
		       "worker %s: %zu processes not reaped within %d ms; "
		       "exiting without them",
		       w->id, w->sup.runs.count, RT_REAP_WAIT_MS);
	w->closed = 1;
	rt_http_close(w);
	rt_sup_close(&w->sup);
	uv_timer_stop(&w->tick);
	uv_timer_stop(&w->retry);
	uv_close((uv_handle_t *)&w->tick, NULL);
	uv_close((uv_handle_t *)&w->retry, NULL);
	uv_close((uv_handle_t *)&w->resume, NULL);
	for (i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&w->sig[i], NULL);
	uv_close((uv_handle_t *)&w->sigchld, NULL);
	if (w->connected || w->connecting) {
		w->connected = w->connecting = 0;
		rt_wire_out_flush(&w->out);
		uv_close((uv_handle_t *)&w->conn, NULL);
	}
	rt_wire_flusher_stop(&w->flusher);
}

/* =========================================================== receiving */

static int report_cb(const char *key, void *value, void *arg)
{
	(void)key;
	report(arg, value);
	return 0;
}

static void report_all(struct rt_worker *w)
{
	rt_map_each(&w->sup.instances, report_cb, w);
}

static struct rt_instance *find(struct rt_worker *w, const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "instance");

	return id ? rt_map_get(&w->sup.instances, id) : NULL;
}

/* A `refused` with `retry`: the controller is a follower of a cluster,
 * naming the leader (followed soon) or none yet (elected meanwhile: the
 * next controller, then the backoff); or the worker's id is busy, maybe
 * with its own old connection that the controller has not seen lost yet:
 * again, later. */
static void refused_for_now(struct rt_worker *w, const struct rt_msg *m)
{
	const char *why = rt_msg_str(m, "reason");
	const char *leader = rt_msg_str(m, "leader");
	char here[RT_CONNECT_TEXT_MAX], bad[256];
	int delay;

	/* A copy: a redirect replaces the leader it may name. */
	snprintf(here, sizeof(here), "%s",
		 rt_connect_target(&w->targets)->text);
	if (why == NULL)
		why = "?";
	if (leader == NULL) {
		rt_log(RT_LOG_WARN,
		       "worker %s: refused for now: %s; trying again", w->id,
		       why);
		conn_lost(w, "refused for now");
		return;
	}
	delay = rt_connect_redirect(&w->targets, leader, &w->rng, bad,
				    sizeof(bad));
	if (delay < 0) {
		rt_log(RT_LOG_WARN,
		       "worker %s: refused for now by %s: %s; not following "
		       "the leader it names: %s",
		       w->id, here, why, bad);
		conn_lost(w, "refused for now");
		return;
	}
	rt_log(RT_LOG_INFO,
	       "worker %s: refused for now by %s: %s; following the leader "
	       "to %s in %d ms",
	       w->id, here, why, rt_connect_target(&w->targets)->text, delay);
	w->next_delay_ms = delay;
	conn_lost(w, "redirected to the leader");
}

/* Sets how many calls the controller sent `in`'s server itself are in
 * flight (its `direct` message): a graceful stop waits for them, each up
 * to its deadline (the latest is `until_ms`) and a grace, or until the
 * controller says they ended. */
static void set_direct(struct rt_instance *in, int calls, int64_t until_ms)
{
	int64_t left = until_ms - rt_now_ms();

	in->direct = calls > 0 ? calls : 0;
	in->direct_until_mono = rt_mono_ms() + (left > 0 ? left : 0) +
				RT_DIRECT_GRACE_MS;
	if (in->direct == 0 && !in->freeing)
		rt_instance_drained(in);
}

static void direct_calls(struct rt_instance *in, const struct rt_msg *m)
{
	long long epoch = rt_msg_int(m, "epoch", 0);

	if (epoch > 0 && in->epoch > epoch)
		return; /* about an older assignment */
	set_direct(in, (int)rt_msg_int(m, "calls", 0),
		   rt_msg_int(m, "until_ms", 0));
}

/* Without the controller, or past their bound, direct calls are no
 * longer waited for. */
static int direct_expire_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;
	int all = *(int *)arg;

	(void)key;
	if (in->direct > 0 && (all || rt_mono_ms() >= in->direct_until_mono))
		set_direct(in, 0, 0);
	return 0;
}

static void direct_expire(struct rt_worker *w, int all)
{
	rt_map_each(&w->sup.instances, direct_expire_cb, &all);
}

static void handle(struct rt_worker *w, const struct rt_msg *m)
{
	long long seq = rt_msg_int(m, "seq", 0);
	const char *id = rt_msg_str(m, "instance");
	struct rt_instance *in = find(w, m);

	/* Any frame: the controller is there. */
	rt_silence_heard(&w->silence, rt_mono_ms());
	if (strcmp(m->type, "ping") == 0) {
		/* At once: the controller measures the round trip. */
		rt_worker_send(w,
			       json_pack("{s:s, s:I}", "type", "pong", "t",
					 (json_int_t)rt_msg_int(m, "t", 0)),
			       NULL, 0);
	} else if (strcmp(m->type, "registered") == 0) {
		rt_silence_registered(
			&w->silence, rt_mono_ms(),
			(int)rt_msg_int(m, "heartbeat_timeout", 0));
		w->connected = 1;
		w->connecting = 0;
		rt_connect_registered(&w->targets);
		rt_log(RT_LOG_INFO, "worker %s: %s with %s", w->id,
		       w->registered_once ? "reconnected: registered"
					  : "registered",
		       rt_connect_target(&w->targets)->text);
		if (!w->registered_once)
			/* Accepted: the groups under our name are ours to
			 * clean (a duplicate would have been refused). */
			rt_sup_sweep(&w->sup);
		if (!w->registered_once && !w->sup.simulate)
			rt_code_init(w); /* and so is the code cache */
		w->registered_once = 1;
		/* A controller that starts over learns everything it runs. */
		report_all(w);
		rt_code_reconnected(w);
		w->lost_mono = 0;
	} else if (strcmp(m->type, "refused") == 0 &&
		   json_is_true(json_object_get(m->header, "retry"))) {
		refused_for_now(w, m);
	} else if (strcmp(m->type, "refused") == 0) {
		const char *why = rt_msg_str(m, "reason");

		fprintf(stderr, "fnfs worker: the controller refused %s: %s\n",
			w->id, why ? why : "?");
		rt_log(RT_LOG_ERROR, "worker %s: refused: %s", w->id,
		       why ? why : "?");
		w->exit_code = 1;
		shutdown_all(w, "refused by the controller");
	} else if (strcmp(m->type, "start") == 0 && id != NULL) {
		json_t *spec = json_object_get(m->header, "spec");

		if (w->shutting_down || !json_is_object(spec)) {
			reply(w, seq, EINVAL, NULL);
			return;
		}
		if (in == NULL)
			in = rt_instance_new(&w->sup, id);
		if (in == NULL) {
			reply(w, seq, ENOMEM, NULL);
		} else {
			/* The assignment it now runs under (also when the
			 * start waits for its code). */
			in->epoch = rt_msg_int(m, "epoch", 0);
			if (rt_code_start(w, in, &spec,
					  rt_msg_int(m, "revision", 0),
					  seq) == 0) {
				start_instance(w, in, spec,
					       rt_msg_int(m, "revision", 0),
					       seq);
				json_decref(spec); /* rt_code_start's */
			}
		}
	} else if (strcmp(m->type, "stop") == 0) {
		long long epoch = rt_msg_int(m, "epoch", 0);

		if (in == NULL) {
			reply(w, seq, 0, NULL);
		} else if (epoch > 0 && in->epoch > epoch) {
			/* About an older assignment than the one it runs
			 * under now: not this copy. */
			rt_log(RT_LOG_INFO,
			       "worker %s: stop of %s epoch %lld ignored: it "
			       "runs epoch %lld",
			       w->id, in->id, epoch, in->epoch);
			reply(w, seq, 0, NULL);
		} else {
			/* A stale copy's calls were failed by the controller
			 * already: they are not waited for. */
			if (json_is_true(
				    json_object_get(m->header, "abort_calls")))
				rt_call_abort(in, "a stale copy stops");
			stop_instance(w, in, seq,
				      json_is_true(json_object_get(m->header,
								   "forget")));
		}
	} else if (strcmp(m->type, "restart") == 0) {
		if (in == NULL || w->shutting_down)
			reply(w, seq, ENOENT, NULL);
		else
			restart_instance(w, in, seq);
	} else if (strcmp(m->type, "log") == 0) {
		struct rt_buf tail = { 0 };
		long long max = rt_msg_int(m, "max", 65536);
		json_t *o;

		int err = 0;

		if (in != NULL)
			rt_instance_log_tail(in, (size_t)(max > 0 ? max : 0),
					     &tail);
		else /* stopped and forgotten: its log is kept */
			err = -rt_sup_log_tail(
				&w->sup, rt_msg_str(m, "instance"),
				(size_t)(max > 0 ? max : 0), &tail);
		o = json_pack("{s:s, s:I, s:i}", "type", "reply", "seq",
			      (json_int_t)seq, "err", err);
		rt_worker_send(w, o, tail.data ? tail.data : "", tail.len);
		rt_buf_free(&tail);
	} else if (strcmp(m->type, "call") == 0) {
		rt_call_start(w, in, m);
	} else if (strcmp(m->type, "direct") == 0) {
		if (in != NULL)
			direct_calls(in, m);
	} else if (strncmp(m->type, "code.", 5) == 0) {
		rt_code_on_message(w, m);
	} else if (strcmp(m->type, "shutdown") == 0) {
		shutdown_all(w, "asked by the controller");
	} else {
		rt_log(RT_LOG_WARN, "worker %s: unknown message %s", w->id,
		       m->type);
		reply(w, seq, EOPNOTSUPP, NULL);
	}
}

static void send_heartbeat(struct rt_worker *w, json_t *samples);
static json_t *samples_of(struct rt_worker *w);
static void on_resume(uv_idle_t *h);

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct rt_worker *w = arg;

	handle(w, m);
	/* A long run of messages (100 starts of sandboxed instances take
	 * seconds on a busy machine) keeps the loop from its tick: the
	 * heartbeat goes out between them (frames wait for the end of the
	 * loop's iteration otherwise), so the controller does not take this
	 * worker for silent while it starts what it was given. */
	if (w->connected && rt_mono_ms() - w->beat_mono >= RT_SAMPLE_MS) {
		send_heartbeat(w, samples_of(w));
		rt_wire_out_flush(&w->out); /* now, not after the run */
	}
	/* Stop when the connection ended while handling. */
	if (!w->connected && !w->connecting)
		return 1;
	/* The rest in the next slice (on_resume), after the loop has run. */
	return rt_mono_ms() - w->slice_t0 >= SLICE_MS ? RT_WIRE_PAUSE : 0;
}

/* Decodes `n` bytes of frames and handles them, with what a slice left
 * in `in` first. */
static void frames(struct rt_worker *w, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	int rc;

	w->slice_t0 = rt_mono_ms();
	rc = rt_wire_feed(&w->in, data, n, handle_cb, w, &why);
	if (rc == RT_WIRE_PAUSE && !w->closed)
		uv_idle_start(&w->resume, on_resume);
	else
		uv_idle_stop(&w->resume);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR,
		       "worker %s: bad message from the controller: %s", w->id,
		       why.data ? why.data : "?");
		conn_lost(w, "protocol error");
	}
	rt_buf_free(&why);
}

/* The next slice of the messages already read. */
static void on_resume(uv_idle_t *h)
{
	struct rt_worker *w = h->data;

	if (!w->connected && !w->connecting) {
		uv_idle_stop(h); /* lost meanwhile: `in` was emptied */
		return;
	}
	frames(w, NULL, 0);
}

/* Bytes of a TLS connection: the handshake, at whose end the controller's
 * certificate is checked (chain to --ca by OpenSSL, role here), then
 * frames. */
static void tls_read(struct rt_worker *w, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	struct rt_cert_info ci;
	int rc;

	rc = rt_tls_feed(&w->tls, data, n, &w->plain, &why);
	if (rc < 0) {
		if (rc != -EPIPE) /* not a close_notify */
			rt_log(RT_LOG_ERROR, "worker %s: TLS with %s: %s",
			       w->id, rt_connect_target(&w->targets)->text,
			       why.data ? why.data : "error");
		conn_lost(w, rc == -EPIPE ? "closed" : "TLS error");
		goto out;
	}
	if (rc == 1) {
		rt_buf_reset(&why);
		if (rt_tls_peer_check(&w->tls, RT_CA_ROLE_CONTROLLER, &ci,
				      &why) < 0) {
			rt_log(RT_LOG_ERROR,
			       "worker %s: %s is no controller of this "
			       "cluster: %s",
			       w->id, rt_connect_target(&w->targets)->text,
			       why.data);
			conn_lost(w, "not the controller");
			goto out;
		}
		rt_log(RT_LOG_INFO, "worker %s: TLS session with %s %s", w->id,
		       rt_connect_target(&w->targets)->text,
		       rt_tls_resumed(&w->tls) ? "resumed"
					       : "new (not resumed)");
	}
	if (w->plain.len > 0) {
		frames(w, w->plain.data, w->plain.len);
		rt_buf_reset(&w->plain);
	}
	if (w->tls.closed)
		conn_lost(w, "closed");
out:
	rt_buf_free(&why);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_worker *w = s->data;

	if (n < 0) {
		conn_lost(w, n == UV_EOF ? "closed" : uv_strerror((int)n));
		return;
	}
	if (w->tls.ssl != NULL)
		tls_read(w, buf->base, (size_t)n);
	else
		frames(w, buf->base, (size_t)n);
}

/* ========================================================= connection */

static void on_retry(uv_timer_t *t)
{
	try_connect(t->data);
}

static void conn_closed(uv_handle_t *h)
{
	struct rt_worker *w = h->data;
	char from[RT_CONNECT_TEXT_MAX];
	int delay, over = 0;

	rt_tls_free(&w->tls);
	rt_buf_reset(&w->plain);
	if (w->shutting_down)
		return;
	if (rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms) {
		shutdown_all(w, "no controller within the orphan timeout");
		return;
	}
	if (w->next_delay_ms >= 0) {
		/* A redirect: rt_connect_redirect chose the target. */
		delay = w->next_delay_ms;
		w->next_delay_ms = -1;
	} else {
		/* The next controller of the list; between full rounds (and
		 * after a registered connection was lost) full jitter, so
		 * that the workers that lost one controller do not all come
		 * back in the same instant. */
		snprintf(from, sizeof(from), "%s",
			 rt_connect_target(&w->targets)->text);
		delay = rt_connect_failed(&w->targets, w->was_registered,
					  &w->rng, &over);
		if (w->targets.n > 1 ||
		    strcmp(from, rt_connect_target(&w->targets)->text) != 0)
			rt_log(RT_LOG_INFO,
			       "worker %s: %s with %s (%s); trying %s%s in %d "
			       "ms",
			       w->id,
			       w->was_registered ? "lost the connection"
						 : "no registration",
			       from, w->lost_why ? w->lost_why : "?",
			       rt_connect_target(&w->targets)->text,
			       over && !w->was_registered
				       ? " (every controller tried: backoff)"
				       : "",
			       delay);
	}
	w->was_registered = 0;
	uv_timer_start(&w->retry, on_retry, (uint64_t)delay, 0);
}

static void conn_lost(struct rt_worker *w, const char *why)
{
	if (!w->connected && !w->connecting)
		return;
	if (w->connected)
		rt_log(RT_LOG_WARN, "worker %s: lost the controller %s: %s",
		       w->id, rt_connect_target(&w->targets)->text, why);
	if (w->lost_mono == 0)
		w->lost_mono = rt_mono_ms();
	w->was_registered = w->connected;
	w->lost_why = why;
	w->connected = w->connecting = 0;
	rt_buf_reset(&w->in);
	rt_wire_out_flush(&w->out);
	rt_wire_out_transport(&w->out, NULL, NULL);
	uv_close(&w->conn.handle, conn_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct rt_worker *w = req->data;
	SSL_SESSION *last;
	int rc = 0;

	if (status == UV_ECANCELED)
		return; /* the handle is being closed already */
	if (status < 0) {
		w->connected = 0;
		w->connecting = 1; /* so conn_lost closes the handle */
		conn_lost(w, uv_strerror(status));
		return;
	}
	if (w->tcp)
		rt_tcp_tune(&w->conn.tcp);
	if (w->tls_ctx != NULL) {
		/* Offer the last session (a TLS 1.3 ticket) to resume. */
		last = rt_tls_session(w->tls_ctx);
		rc = rt_tls_start(&w->tls, w->tls_ctx, 0, last,
				  &w->conn.stream);
		SSL_SESSION_free(last);
		if (rc < 0) {
			conn_lost(w, "out of memory");
			return;
		}
		rt_wire_out_transport(&w->out, rt_tls_send, &w->tls);
	}
	uv_read_start(&w->conn.stream, rt_read_alloc, on_read);
	send_register(w); /* over TLS: sent once the handshake is over */
}

static void on_connect_timeout(uv_timer_t *t)
{
	struct rt_worker *w = t->data;

	if (!w->connecting || w->connected)
		return;
	rt_log(RT_LOG_WARN,
	       "worker %s: no answer from %s within %d ms; trying again", w->id,
	       rt_connect_target(&w->targets)->text, CONNECT_TIMEOUT_MS);
	conn_lost(w, "no answer within the connect timeout");
}

static void try_connect(struct rt_worker *w)
{
	const struct rt_connect_target *t = rt_connect_target(&w->targets);
	int rc;

	if (w->shutting_down)
		return;
	w->connect_req.data = w;
	w->connecting = 1;
	/* The retry timer is idle while connecting: it bounds the attempt
	 * (conn_closed starts it again for the next one). */
	uv_timer_start(&w->retry, on_connect_timeout, CONNECT_TIMEOUT_MS, 0);
	if (w->tcp) {
		uv_tcp_init(w->loop, &w->conn.tcp);
		w->conn.tcp.data = w;
		rc = uv_tcp_connect(&w->connect_req, &w->conn.tcp,
				    (const struct sockaddr *)&t->addr,
				    on_connect);
		if (rc < 0)
			conn_lost(w, uv_strerror(rc));
		return;
	}
	uv_pipe_init(w->loop, &w->conn.pipe, 0);
	w->conn.pipe.data = w;
	uv_pipe_connect(&w->connect_req, &w->conn.pipe, t->text, on_connect);
}

/* ============================================================== ticks */

static int sample_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;
	json_t *o;

	(void)key;
	if (in->run == NULL || in->pid <= 0)
		return 0; /* nothing to sample: no process */
	rt_instance_sample(in);
	o = json_pack("{s:s, s:i, s:I, s:I, s:I}", "instance", in->id, "pid",
		      (int)in->pid, "cpu_ms",
		      (json_int_t)(in->cpu_seconds * 1000), "rss",
		      (json_int_t)in->rss_bytes, "epoch",
		      (json_int_t)in->epoch);
	json_array_append_new(arg, o);
	return 0;
}

/* Sends a heartbeat with `samples` (the instances', taken over). */
static void send_heartbeat(struct rt_worker *w, json_t *samples)
{
	w->beat_mono = rt_mono_ms();
	rt_worker_send(w,
		       json_pack("{s:s, s:o}", "type", "heartbeat", "samples",
				 samples),
		       NULL, 0);
}

/* The instances' samples, for a heartbeat. */
static json_t *samples_of(struct rt_worker *w)
{
	json_t *samples = json_array();

	rt_map_each(&w->sup.instances, sample_cb, samples);
	return samples;
}

static void on_tick(uv_timer_t *t)
{
	struct rt_worker *w = t->data;
	json_t *samples = samples_of(w);

	rt_sup_collect(&w->sup);
	rt_code_tick(w);
	direct_expire(w, !w->connected);
	answer_late(w);
	if (w->connected)
		send_heartbeat(w, samples);
	else
		json_decref(samples);
	/* Only a registered connection's silence: an attempt (connect,
	 * handshake, registration) has its own bound, CONNECT_TIMEOUT_MS,
	 * on the retry timer. */
	if (rt_silence_lost(&w->silence, rt_mono_ms(), w->connected, 0)) {
		/* A partition, or a frozen controller: the connection looks
		 * open, and nothing comes. The orphan timeout counts from
		 * the last frame heard. */
		rt_log(RT_LOG_WARN,
		       "worker %s: nothing from the controller for %d ms",
		       w->id, rt_silence_timeout(&w->silence));
		if (w->connected && w->lost_mono == 0)
			w->lost_mono = w->silence.heard_mono;
		conn_lost(w, "the controller is silent");
	}
	if (!w->connected && w->lost_mono &&
	    rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms)
		shutdown_all(w, "no controller within the orphan timeout");
	if (w->reap_wait_mono != 0 &&
	    rt_mono_ms() - w->reap_wait_mono > RT_REAP_WAIT_MS)
		maybe_exit(w, 1);
}

static void on_sigchld(uv_signal_t *s, int signum)
{
	struct rt_worker *w = s->data;

	(void)signum;
	rt_sup_reap(&w->sup);
	maybe_exit(w, 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
	shutdown_all(s->data, strsignal(signum));
}

/* ======================================================= command line */

static const char worker_usage[] =
	"usage: fnfs worker --connect SOCKET[,SOCKET...] --id ID --memory MB\n"
	"                   [--tags a,b] [--namespaces tenant/ns,...]\n"
	"                   [--orphan-timeout S] [--heartbeat-timeout MS]\n"
	"                   [--data DIR] [--simulate]\n"
	"       fnfs worker --connect tls://IP:PORT[,IP:PORT...] --ca CA.pem\n"
	"                   --cert ID.pem --key ID.key --data DIR --id ID\n"
	"                   --memory MB ...\n"
	"       fnfs worker --connect tcp://IP:PORT[,IP:PORT...] --insecure\n"
	"                   --data DIR --id ID --memory MB ...\n"
	"A list names the controllers of a cluster: they are tried in turn,\n"
	"from a random one, and a follower's answer leads to the leader.\n";

/* What --connect says: a Unix socket's path, tls://IP:PORT or
 * tcp://IP:PORT, or a list of them (connect_list.h). Fills w->targets
 * and w->tcp; returns 0 (1 for tls://), or -1 having said why. */
static int parse_connect(struct rt_worker *w)
{
	char why[256];
	struct stat st;
	int rc;

	/* A socket whose path has a comma (its controller's --data) is
	 * one, not a list. */
	if (strchr(w->sock_path, ',') != NULL &&
	    strstr(w->sock_path, "://") == NULL &&
	    stat(w->sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
		rc = rt_connect_parse_path(w->sock_path, &w->targets, why,
					   sizeof(why));
	else
		rc = rt_connect_parse(w->sock_path, &w->targets, why,
				      sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "fnfs worker: --connect %s: %s\n", w->sock_path,
			why);
		return -1;
	}
	w->tcp = w->targets.scheme != RT_CONNECT_UNIX;
	return w->targets.scheme == RT_CONNECT_TLS;
}

/* Checks the transport options and makes the TLS context. Returns 0, or
 * 2 (usage) / 1 (files) having said why. */
static int setup_transport(struct rt_worker *w, const char *ca,
			   const char *cert, const char *key, int insecure,
			   const char *data_opt)
{
	struct rt_buf why = { 0 };
	int tls = parse_connect(w), rc = 0;

	if (tls < 0)
		return 2;
	if (tls && (ca == NULL || cert == NULL || key == NULL)) {
		fprintf(stderr, "fnfs worker: tls:// needs --ca, --cert and "
				"--key (fnfs ca issue makes them)\n");
		return 2;
	}
	if (!tls && (ca || cert || key)) {
		fprintf(stderr, "fnfs worker: --ca, --cert and --key go with "
				"--connect tls://\n");
		return 2;
	}
	if (w->tcp && !tls && !insecure) {
		fprintf(stderr,
			"fnfs worker: tcp:// is plain TCP, neither "
			"authenticated nor encrypted: add --insecure (tests "
			"and loopback only), or use tls://\n");
		return 2;
	}
	if (insecure && (!w->tcp || tls)) {
		fprintf(stderr, "fnfs worker: --insecure goes with "
				"--connect tcp://\n");
		return 2;
	}
	if (w->tcp && data_opt == NULL) {
		fprintf(stderr,
			"fnfs worker: --connect %s needs --data DIR "
			"(where instance logs go on this machine)\n",
			w->sock_path);
		return 2;
	}
	if (tls &&
	    rt_tls_ctx_files(&w->tls_ctx, 0, ca, cert, key, NULL, &why) < 0) {
		fprintf(stderr, "fnfs worker: %s\n",
			why.data ? why.data : "no TLS");
		rc = 1;
	}
	if (rc == 0 && insecure)
		fprintf(stderr,
			"fnfs worker: WARNING: --insecure: plain TCP to %s, "
			"neither authenticated nor encrypted (tests and "
			"loopback only)\n",
			w->sock_path);
	rt_buf_free(&why);
	return rc;
}

/* Splits "a,b" into a JSON array, checking each item with `valid`. */
static json_t *split_list(const char *s, int ns)
{
	json_t *a = json_array();
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(tok, '/');
		int ok;

		if (ns) {
			ok = slash != NULL && strchr(slash + 1, '/') == NULL;
			if (ok) {
				*slash = '\0';
				ok = rt_name_valid(tok) &&
				     rt_name_valid(slash + 1);
				*slash = '/';
			}
		} else {
			ok = rt_name_valid(tok);
		}
		if (!ok) {
			fprintf(stderr, "fnfs worker: bad %s \"%s\"\n",
				ns ? "namespace (want tenant/ns)" : "tag", tok);
			json_decref(a);
			free(copy);
			return NULL;
		}
		json_array_append_new(a, json_string(tok));
	}
	free(copy);
	return a;
}

static int parse_int_arg(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int rt_worker_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "id", required_argument, NULL, 'i' },
		{ "memory", required_argument, NULL, 'm' },
		{ "tags", required_argument, NULL, 't' },
		{ "namespaces", required_argument, NULL, 'n' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "heartbeat-timeout", required_argument, NULL, 'T' },
		{ "simulate", no_argument, NULL, 's' },
		{ "data", required_argument, NULL, 'd' },
		{ "ca", required_argument, NULL, 'A' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct rt_worker w;
	uv_loop_t loop;
	struct rt_buf dir = { 0 }, data = { 0 };
	const char *data_opt = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	int c, i, rc, orphan_s = ORPHAN_TIMEOUT_DEFAULT_S, simulate = 0;
	int insecure = 0;
	char *slash;

	memset(&w, 0, sizeof(w));
	w.tags = json_array();
	w.namespaces = json_array();
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': w.sock_path = optarg; break;
		case 'i': w.id = optarg; break;
		case 'm':
			if (parse_int_arg(optarg, 1, 1L << 30, &w.memory_mb) <
			    0) {
				fprintf(stderr,
					"fnfs worker: --memory wants MB, "
					"a positive integer\n");
				rc = 2;
				goto done;
			}
			break;
		case 't':
		case 'n':
			json_decref(c == 't' ? w.tags : w.namespaces);
			if (c == 't')
				w.tags = split_list(optarg, 0);
			else
				w.namespaces = split_list(optarg, 1);
			if ((c == 't' ? w.tags : w.namespaces) == NULL) {
				rc = 2;
				goto done;
			}
			break;
		case 'o':
			if (parse_int_arg(optarg, 1, 86400 * 7, &orphan_s) <
			    0) {
				fprintf(stderr, "fnfs worker: --orphan-timeout "
						"wants seconds\n");
				rc = 2;
				goto done;
			}
			break;
		case 'T':
			if (parse_int_arg(optarg, 1, 3600000,
					  &w.silence.own_ms) < 0) {
				fprintf(stderr,
					"fnfs worker: --heartbeat-timeout "
					"wants ms, from 1 to 3600000\n");
				rc = 2;
				goto done;
			}
			break;
		case 's': simulate = 1; break;
		case 'd': data_opt = optarg; break;
		case 'A': ca = optarg; break;
		case 'C': cert = optarg; break;
		case 'K': key = optarg; break;
		case 'I': insecure = 1; break;
		case 'h':
			fputs(worker_usage, stdout);
			rc = 0;
			goto done;
		default:
			fputs(worker_usage, stderr);
			rc = 2;
			goto done;
		}
	}
	if (w.sock_path == NULL || w.id == NULL || w.memory_mb == 0 ||
	    optind != argc) {
		fputs(worker_usage, stderr);
		rc = 2;
		goto done;
	}
	if (!rt_name_valid(w.id)) {
		fprintf(stderr,
			"fnfs worker: bad id \"%s\": 1 to 63 of "
			"[A-Za-z0-9._-], starting with a letter or digit\n",
			w.id);
		rc = 2;
		goto done;
	}
	rc = setup_transport(&w, ca, cert, key, insecure, data_opt);
	if (rc != 0)
		goto done;
	/* Its files (logs of instances) go in --data, by default next to
	 * the socket, in the controller's data directory (over TCP it is
	 * required: the controller's is on another machine). */
	if (data_opt != NULL) {
		rt_buf_puts(&data, data_opt);
	} else {
		rt_buf_puts(&data, w.targets.list[0].text);
		slash = strrchr(data.data, '/');
		data.len = slash ? (size_t)(slash - data.data) : 0;
		data.data[data.len] = '\0';
		if (data.len == 0)
			rt_buf_puts(&data, ".");
	}
	if (mkdir(data.data, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "fnfs worker: cannot create %s: %s\n",
			data.data, strerror(errno));
		rt_buf_free(&data);
		rc = 1;
		goto done;
	}
	w.orphan_timeout_ms = orphan_s * 1000;
	signal(SIGPIPE, SIG_IGN);
	rt_close_fds(-1);
	uv_loop_init(&loop);
	w.loop = &loop;
	rt_sup_init(&w.sup, &loop, &events, &w);
	w.sup.simulate = simulate;

	w.data_dir = data.data;
	/* No function binds the worker's files (sandbox.h). */
	if (rt_sandbox_reserve(data.data) < 0)
		rt_log(RT_LOG_WARN, "out of memory");
	rt_buf_printf(&dir, "%s/logs", data.data);
	mkdir(dir.data, 0700);
	rt_buf_printf(&dir, "/%s", w.id);
	mkdir(dir.data, 0700);
	w.sup.log_dir = dir.data;
	if (!simulate)
		rt_cg_open_host(&w.sup.cg, w.id, w.sock_path);
	if (!rt_cg_has(&w.sup.cg, RT_CG_MEMORY) && !simulate)
		rt_log(RT_LOG_INFO,
		       "worker %s: no memory cgroup; RSS sampling "
		       "enforces memory limits",
		       w.id);
	if (!rt_cg_has(&w.sup.cg, RT_CG_PIDS) && !simulate)
		rt_log(RT_LOG_WARN,
		       "worker %s: no pids cgroup; pids limits are not "
		       "enforced",
		       w.id);
	if (!rt_cg_has(&w.sup.cg, RT_CG_CPU) && !simulate)
		rt_log(RT_LOG_WARN,
		       "worker %s: no cpu cgroup; cpu limits are not "
		       "enforced",
		       w.id);

	w.next_delay_ms = -1;
	w.rng = (uint64_t)rt_mono_ms() * 0x9E3779B97F4A7C15ull ^
		(uint64_t)getpid() << 32 ^ (uint64_t)rt_now_ms();
	rt_connect_begin(&w.targets, &w.rng);
	if (w.targets.n > 1)
		rt_log(RT_LOG_INFO, "worker %s: %d controllers to try, from %s",
		       w.id, w.targets.n, rt_connect_target(&w.targets)->text);
	rt_wire_flusher_start(&w.flusher, &loop);
	rt_wire_out_init(&w.out, &w.flusher, (uv_stream_t *)&w.conn);
	uv_timer_init(&loop, &w.tick);
	w.tick.data = &w;
	uv_timer_init(&loop, &w.retry);
	w.retry.data = &w;
	uv_idle_init(&loop, &w.resume);
	w.resume.data = &w;
	uv_timer_start(&w.tick, on_tick, RT_SAMPLE_MS, RT_SAMPLE_MS);
	for (i = 0; i < 3; i++) {
		uv_signal_init(&loop, &w.sig[i]);
		w.sig[i].data = &w;
		uv_signal_start(&w.sig[i], on_signal, signums[i]);
	}
	uv_signal_init(&loop, &w.sigchld);
	w.sigchld.data = &w;
	uv_signal_start(&w.sigchld, on_sigchld, SIGCHLD);
	w.lost_mono = rt_mono_ms(); /* counts until the first registration */
	try_connect(&w);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&loop) != 0)
		rt_log(RT_LOG_WARN, "worker %s: loop closed with live handles",
		       w.id);
	/* Every instance is gone (maybe_exit waited for that); what is
	 * left is memory and the groups of processes that died late. */
	rt_sup_free(&w.sup, RT_CGROUP_WAIT_MS);
	assert(w.waits.count == 0);
	rt_map_free(&w.waits);
	rt_code_close(&w);
	rt_buf_free(&w.in);
	rt_buf_free(&w.out.pending);
	rt_tls_free(&w.tls);
	rt_buf_free(&w.plain);
	SSL_CTX_free(w.tls_ctx);
	json_decref(w.tags);
	json_decref(w.namespaces);
	rt_buf_free(&data);
	rt_log(RT_LOG_INFO, "worker %s: exited", w.id);
	return w.exit_code;
done:
	/* A usage error or --help: nothing was started. */
	SSL_CTX_free(w.tls_ctx);
	json_decref(w.tags);
	json_decref(w.namespaces);
	return rc;
}

/*
 * worker.c - `fnfs worker`: connects to the controller's socket, registers,
 * sends heartbeats with /proc samples, runs the instances it is told to
 * run, and keeps them running when the controller goes away: it reconnects
 * with backoff, and only after the orphan timeout stops them and exits.
 * With a list of controllers (a cluster) it tries them in turn and follows
 * a follower's `refused` to the leader it names (connect_list.h).
 * Its supervisor (supervise.c) reports through events that this file turns
 * into messages and replies; the replies a request waits for are kept
 * here, per instance (struct rt_waits). This file sends and handles the
 * messages; worker_conn.c reads them off the connection and keeps it,
 * worker_main.c has the command line, the ticks and the signals. It stays
 * one file over 600 lines because the requests it handles, the waits
 * they leave and the events that answer those waits are one state: cut
 * apart, the waits would have to be shared by three files.
 */
#include <assert.h>
#include <errno.h>
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
#include "worker_int.h"

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
void rt__worker_answer_late(struct rt_worker *w)
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
	rt__worker_maybe_exit(w, 0);
}

const struct rt_sup_events rt__worker_events = {
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

void rt__worker_register(struct rt_worker *w)
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

/* Stops every instance, then exits (see rt__worker_maybe_exit). Stopping
 * may remove instances, so they are gathered before any is stopped. */
void rt__worker_shutdown(struct rt_worker *w, const char *why)
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
	rt__worker_maybe_exit(w, 0);
}

/* Ends the worker once it is shutting down and nothing is left: every
 * instance removed and every process it forked reaped, so that their
 * memory and groups go too. Processes that are not reaped within
 * RT_REAP_WAIT_MS of being the last thing left are given up (on_tick). */
void rt__worker_maybe_exit(struct rt_worker *w, int give_up)
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
		rt__worker_conn_lost(w, "refused for now");
		return;
	}
	delay = rt_connect_redirect(&w->targets, leader, &w->rng, bad,
				    sizeof(bad));
	if (delay < 0) {
		rt_log(RT_LOG_WARN,
		       "worker %s: refused for now by %s: %s; not following "
		       "the leader it names: %s",
		       w->id, here, why, bad);
		rt__worker_conn_lost(w, "refused for now");
		return;
	}
	rt_log(RT_LOG_INFO,
	       "worker %s: refused for now by %s: %s; following the leader "
	       "to %s in %d ms",
	       w->id, here, why, rt_connect_target(&w->targets)->text, delay);
	w->next_delay_ms = delay;
	rt__worker_conn_lost(w, "redirected to the leader");
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

void rt__worker_direct_expire(struct rt_worker *w, int all)
{
	rt_map_each(&w->sup.instances, direct_expire_cb, &all);
}

void rt__worker_handle(struct rt_worker *w, const struct rt_msg *m)
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
		rt__worker_shutdown(w, "refused by the controller");
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
		rt__worker_shutdown(w, "asked by the controller");
	} else {
		rt_log(RT_LOG_WARN, "worker %s: unknown message %s", w->id,
		       m->type);
		reply(w, seq, EOPNOTSUPP, NULL);
	}
}

/*
 * supervise.c - the runtime spawner: starts an instance's process, keeps
 * its output, restarts it per its restart policy with backoff and a start
 * limit, and stops it (SIGTERM to its process group, SIGKILL after a
 * grace period). It reports through struct rt_sup_events and knows
 * nothing of the controller or its protocol (see supervise.h). A run's
 * process is made in spawn.c and child.c; logs are instance_log.c's.
 * A run's life after its spawn (output, reaping, kills, the sandbox's
 * init kept across runs) is supervise_run.c's. It stays one file over
 * 600 lines because spawning, exits with their restart policy and the
 * commands are the moves of one state machine (set_state): apart, each
 * would see the others' transitions only through private calls.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lambda.h"
#include "ready.h"
#include "sandbox.h"
#include "supervise.h"
#include "supervise_int.h"
#include "../base/wire.h" /* rt_read_alloc */

const char *rt_state_name(enum rt_state s)
{
	static const char *const names[] = { "starting", "running", "backoff",
					     "stopping", "stopped", "failed" };

	assert((unsigned)s < sizeof(names) / sizeof(names[0]));
	return names[s];
}

void rt_exit_words(const struct rt_exit *e, char *out, size_t n)
{
	if (e->oom)
		snprintf(out, n, "oom");
	else if (e->signal)
		snprintf(out, n, "signal %d", e->signal);
	else
		snprintf(out, n, "status %d", e->code);
}

static void set_state_v(struct rt_instance *in, enum rt_state s,
			const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void set_state_v(struct rt_instance *in, enum rt_state s,
			const char *fmt, va_list ap)
{
	assert((unsigned)s < RT_STATE_COUNT);
	assert(!in->freeing);
	in->state = s;
	/* Stopped or failed, it keeps nothing running: not its sandbox,
	 * nor a runtime API (lambda.c). */
	if (s == RT_STOPPED || s == RT_FAILED) {
		rt__ns_release(in);
		rt_lambda_forget(in);
	}
	vsnprintf(in->reason, sizeof(in->reason), fmt, ap);
	if (in->sup->ev->state != NULL)
		in->sup->ev->state(in);
}

void rt_instance_set_state(struct rt_instance *in, enum rt_state s,
			   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_state_v(in, s, fmt, ap);
	va_end(ap);
}

#define set_state rt_instance_set_state

/* ============================================================ spawning */

static void schedule(struct rt_instance *in, int ms, uv_timer_cb cb);
static void on_backoff_done(uv_timer_t *t);

/* Lets go of an instance's sandbox: its init is killed, and everything
 * in its namespace with it. */
static void spawn_failed(struct rt_instance *in, const char *why)
{
	snprintf(in->reason, sizeof(in->reason), "spawn failed: %s", why);
	/* The cause rt__after_exit gives (else "exited (status 127)"). */
	snprintf(in->unready, sizeof(in->unready), "spawn failed: %s", why);
	snprintf(in->last_words, sizeof(in->last_words),
		 "fnfs: spawn failed: %.120s", why);
	rt_log(RT_LOG_WARN, "%s: spawn failed: %s", in->id, why);
	if (in->sup->ev->spawned != NULL)
		in->sup->ev->spawned(in, why);
	rt__after_exit(in, 127, 0);
}

/* Whether the instance runs in `mode` ("hot", "cold"). */
int rt_instance_mode_is(const struct rt_instance *in, const char *mode)
{
	const char *m = json_string_value(json_object_get(in->spec, "mode"));

	return m != NULL && strcmp(m, mode) == 0;
}

/* Whether `in` takes its calls on its process's stdin and stdout: a hot
 * instance of format line or json. Those of format http and lambda take
 * them over HTTP; their stdout goes to the log. */
static int stdio_calls(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));

	return rt_instance_mode_is(in, "hot") &&
	       (f == NULL || strcmp(f, "line") == 0 || strcmp(f, "json") == 0);
}

static void spawned(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;

	if (s->ev->spawned != NULL)
		s->ev->spawned(in, NULL);
	if (!in->freeing && in->state == RT_RUNNING && s->ev->ready != NULL)
		s->ev->ready(in, NULL);
}

/* The rest of spawn, with the user and sandbox read (`sb`, taken). */
static void spawn_run(struct rt_instance *in, struct rt_sandbox *sb)
{
	struct rt_sup *s = in->sup;
	struct rt_run *r;
	const char *why = "?";
	char tag[16];

	snprintf(tag, sizeof(tag), "%d", in->spawned);
	r = rt_run_spawn_with(in, stdio_calls(in), tag, sb, &why);
	if (r == NULL) {
		spawn_failed(in, why);
		return;
	}
	/* A new run of `in`: its pid is its own, and the supervisor reaps
	 * it (rt_run_spawn_with registered it under that pid). */
	assert(r->in == in && r->pid > 0 && !r->cold);
	assert(rt_idmap_get(&s->runs, (uint64_t)r->pid) == r);
	in->run = r;
	in->pid = r->pid;
	rt_cgroup_finish(s, in->cgroup);
	in->cgroup = r->cgroup; /* read at its exit for an OOM kill */
	r->cgroup = NULL;
	/* Running once ready: now, or when its readiness says so. */
	if (rt_ready_watch(in) != 0)
		set_state(in, RT_RUNNING, "started");
	spawned(in);
}

/* rt_run_open's answer for a hot instance; ignored once it was stopped
 * (a new start opens again). */
static void spawn_opened(void *arg, struct rt_sandbox *sb, const char *why)
{
	struct rt_instance *in = arg;

	assert(!in->freeing && in->opening != NULL);
	in->opening = NULL;
	if (!in->desired_run || in->run != NULL) {
		if (sb != NULL) {
			rt_sandbox_free(sb);
			free(sb);
		}
		return;
	}
	if (sb == NULL)
		spawn_failed(in, why);
	else
		spawn_run(in, sb);
}

static void spawn(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;
	struct rt_sandbox *sb;
	const char *why = "?";
	int rc;

	assert(in->run == NULL && !in->freeing);
	/* A start while the last one's binds were being opened: this one's
	 * spec may be newer. */
	rt_open_binds_cancel(in->opening);
	in->opening = NULL;
	in->started_ms = rt_now_ms();
	in->started_mono = rt_mono_ms();
	if (in->spawned++ > 0)
		in->restarts++;
	in->oom_pending = 0;
	in->unready[0] = '\0';
	in->last_words[0] = '\0';
	in->draining = 0;
	if (s->simulate || rt_instance_mode_is(in, "cold")) {
		/* A cold instance is a slot: each call forks its own
		 * process. */
		in->pid = 0;
		set_state(in, RT_RUNNING,
			  s->simulate ? "simulated" : "ready for calls");
		spawned(in);
		return;
	}
	if (rt_endpoint_prepare(in, &why) < 0 ||
	    rt_lambda_prepare(in, &why) < 0) {
		spawn_failed(in, why);
		return;
	}
	rc = rt_run_open(in, spawn_opened, in, &in->opening, &sb, &why);
	if (rc < 0)
		spawn_failed(in, why);
	else if (rc == 0)
		spawn_run(in, sb);
}

/* ============================================================= exits */

/* Removes a group; one whose members are still dying is kept on a list
 * and retried (rt_sup_collect). Takes `dir`. */
void rt_cgroup_discard(struct rt_sup *s, char *dir)
{
	char **v;

	if (dir == NULL || rt_cgroup_remove(dir) == 0) {
		free(dir);
		return;
	}
	v = realloc(s->cg_garbage, (size_t)(s->ncg_garbage + 1) * sizeof(*v));
	if (v == NULL) {
		free(dir);
		return;
	}
	s->cg_garbage = v;
	v[s->ncg_garbage++] = dir;
}

int rt_cgroup_finish(struct rt_sup *s, char *name)
{
	const char *roots[RT_CG_COUNT];
	int i, n, oom;

	if (name == NULL)
		return 0;
	oom = rt_cg_oom_kills(&s->cg, name) > 0;
	n = rt_cg_roots(&s->cg, roots);
	for (i = 0; i < n; i++) {
		struct rt_buf dir = { 0 };

		if (rt_buf_printf(&dir, "%s/%s", roots[i], name) < 0)
			continue;
		rt_cgroup_kill(dir.data); /* even what left its group */
		rt_cgroup_discard(s, dir.data);
	}
	free(name);
	return oom;
}

void rt_sup_collect(struct rt_sup *s)
{
	int i, k = 0;

	for (i = 0; i < s->ncg_garbage; i++) {
		/* Only what is dying or escaped the kill at the exit (a
		 * fork racing it) is left in a discarded group. */
		rt_cgroup_kill(s->cg_garbage[i]);
		if (rt_cgroup_remove(s->cg_garbage[i]) == 0)
			free(s->cg_garbage[i]);
		else
			s->cg_garbage[k++] = s->cg_garbage[i];
	}
	s->ncg_garbage = k;
}

static void record_exit(struct rt_instance *in, int64_t code, int sig)
{
	struct rt_exit e = { rt_now_ms(), sig ? -1 : (int)code, sig, 0 };
	int64_t now = rt_mono_ms();
	int i;

	e.oom = rt_cgroup_finish(in->sup, in->cgroup);
	in->cgroup = NULL;
	if (in->oom_pending)
		e.oom = 1;
	memmove(&in->exits[1], &in->exits[0],
		(RT_EXITS_KEPT - 1) * sizeof(in->exits[0]));
	in->exits[0] = e;
	if (in->nexits < RT_EXITS_KEPT)
		in->nexits++;
	/* The start limit counts exits inside the window. */
	assert(in->nrecent >= 0 && in->nrecent <= RT_START_LIMIT + 1);
	if (in->nrecent == RT_START_LIMIT + 1) {
		memmove(&in->recent[0], &in->recent[1],
			RT_START_LIMIT * sizeof(in->recent[0]));
		in->nrecent--;
	}
	in->recent[in->nrecent++] = now;
	for (i = 0; i < in->nrecent;)
		if (in->recent[i] < now - RT_START_WINDOW_MS) {
			memmove(&in->recent[i], &in->recent[i + 1],
				(size_t)(in->nrecent - i - 1) *
					sizeof(in->recent[0]));
			in->nrecent--;
		} else {
			i++;
		}
}

void rt__after_exit(struct rt_instance *in, int64_t code, int sig)
{
	const char *policy = json_string_value(
		json_object_get(in->spec, "restart_policy"));
	char what[64], cause[sizeof(in->reason)];
	int failure, early = in->state == RT_STARTING;

	assert(!in->freeing && in->run == NULL);
	rt_ready_unwatch(in);
	in->draining = 0; /* what it waited for died with the process */
	record_exit(in, code, sig);
	if (in->sup->ev->exited != NULL)
		in->sup->ev->exited(in, &in->exits[0]);
	assert(!in->freeing);
	rt_exit_words(&in->exits[0], what, sizeof(what));
	/* Why it ended: stopped unready, or its own exit (before it was
	 * ready, maybe). */
	failure = in->exits[0].oom || sig != 0 || code != 0;
	if (in->unready[0] != '\0')
		snprintf(cause, sizeof(cause), "%s", in->unready);
	else if (failure && code == 127 &&
		 strncmp(in->last_words, "fnfs: ", 6) == 0)
		/* Its start failed: the child said why (child()). */
		snprintf(cause, sizeof(cause), "%s", in->last_words + 6);
	else if (failure && in->last_words[0] != '\0')
		/* Its own last words: "python3: can't open file ..." */
		snprintf(cause, sizeof(cause), "exited (%s)%s: %s", what,
			 early ? " before it was ready" : "", in->last_words);
	else
		snprintf(cause, sizeof(cause), "exited (%s)%s", what,
			 early ? " before it was ready" : "");
	uv_timer_stop(in->timer);

	if (!in->desired_run) {
		set_state(in, RT_STOPPED, "stopped");
		if (in->forget)
			rt_instance_remove(in);
		return;
	}
	if (in->fail_exit) {
		char why[sizeof(in->reason)];

		in->fail_exit = 0;
		memcpy(why, in->reason, sizeof(why));
		set_state(in, RT_FAILED, "%s", why);
		return;
	}
	if (in->restart_now) {
		in->restart_now = 0;
		spawn(in);
		return;
	}
	if (policy != NULL && strcmp(policy, "never") == 0) {
		set_state(in, RT_FAILED, "%s; restart_policy never restarts it",
			  cause);
		return;
	}
	if (policy != NULL && strcmp(policy, "on-failure") == 0 && !failure) {
		set_state(in, RT_FAILED,
			  "exited (status 0); restart_policy on-failure "
			  "restarts only failures");
		return;
	}
	if (in->nrecent > RT_START_LIMIT) {
		set_state(in, RT_FAILED,
			  "%s; more than %d exits within %d s: start limit "
			  "reached",
			  cause, RT_START_LIMIT, RT_START_WINDOW_MS / 1000);
		return;
	}
	if (rt_mono_ms() - in->started_mono >= RT_BACKOFF_RESET_MS)
		in->backoff_ms = RT_BACKOFF_FIRST_MS;
	assert(in->backoff_ms >= RT_BACKOFF_FIRST_MS &&
	       in->backoff_ms <= RT_BACKOFF_MAX_MS);
	set_state(in, RT_BACKOFF, "%s; restarting in %d ms", cause,
		  in->backoff_ms);
	schedule(in, in->backoff_ms, on_backoff_done);
	in->backoff_ms = in->backoff_ms * 2 > RT_BACKOFF_MAX_MS
				 ? RT_BACKOFF_MAX_MS
				 : in->backoff_ms * 2;
}

static void on_backoff_done(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (in->state == RT_BACKOFF && in->desired_run)
		spawn(in);
}

static void on_grace_over(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (in->run != NULL && in->pid > 0) {
		rt_log(RT_LOG_INFO, "%s: no exit after SIGTERM; SIGKILL",
		       in->id);
		rt__run_kill(in->run);
	}
}

static void schedule(struct rt_instance *in, int ms, uv_timer_cb cb)
{
	uv_timer_stop(in->timer);
	uv_timer_start(in->timer, cb, (uint64_t)ms, 0);
}

/* Whether a stop of `in` waits for its calls first (a graceful stop):
 * then it is `stopping` until rt_instance_drained finds them ended. */
static int drain_first(struct rt_instance *in)
{
	if (in->draining)
		return 1;
	if (in->sup->ev->busy == NULL || !in->sup->ev->busy(in))
		return 0;
	in->draining = 1;
	set_state(in, RT_STOPPING, "stopping: %d calls in flight end first",
		  in->nsent + in->direct > 0 ? in->nsent + in->direct
					     : in->ncalls);
	return 1;
}

/* Sends SIGTERM to the group and arms the SIGKILL, once the calls in
 * flight have ended; `why` (NULL: "stopping") is its reason meanwhile. */
static void terminate(struct rt_instance *in, const char *why)
{
	int grace = (int)json_integer_value(
		json_object_get(in->spec, "grace_ms"));

	assert(in->run != NULL && in->pid > 0);
	/* Whatever its readiness says from now on changes nothing. */
	rt_ready_unwatch(in);
	if (drain_first(in))
		return;
	if (why != NULL)
		set_state(in, RT_STOPPING, "%s; stopping", why);
	else
		set_state(in, RT_STOPPING, "stopping");
	/* The group, and the leader itself in case it has not made its
	 * group yet (just forked). */
	kill(-in->pid, SIGTERM);
	kill(in->pid, SIGTERM);
	schedule(in, grace > 0 ? grace : RT_STOP_GRACE_MS, on_grace_over);
}

/* ========================================================== the set */

void rt_sup_init(struct rt_sup *s, uv_loop_t *loop,
		 const struct rt_sup_events *ev, void *arg)
{
	assert(ev != NULL);
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->ev = ev;
	s->arg = arg;
}

int rt_sup_idle(const struct rt_sup *s)
{
	return s->instances.count == 0 && s->runs.count == 0 &&
	       s->inits.count == 0;
}

void rt_sup_free(struct rt_sup *s, int wait_ms)
{
	int64_t until = rt_mono_ms() + wait_ms;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	size_t i, n;
	void **v;

	assert(s->instances.count == 0);
	/* Processes that could not be reaped in time: their records go. */
	v = rt_idmap_values(&s->runs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_run *r = v[i];

		assert(r->nopen == 0); /* the loop has closed every pipe */
		rt__run_kill(r);
		rt_idmap_del(&s->runs, (uint64_t)r->pid);
		r->reaped = 1;
		rt__run_release(r);
	}
	free(v);
	/* Inits not reaped: killed (their namespace dies with them). */
	v = rt_idmap_values(&s->inits, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_ns_init *ns = v[i];

		kill(ns->pid, SIGKILL);
		rt_idmap_del(&s->inits, (uint64_t)ns->pid);
		rt__ns_reaped(ns);
	}
	free(v);
	/* The groups, once what is left in them has died. */
	for (;;) {
		rt_sup_collect(s);
		if (s->ncg_garbage == 0 || rt_mono_ms() >= until)
			break;
		nanosleep(&pause, NULL);
	}
	for (i = 0; i < (size_t)s->ncg_garbage; i++) {
		rt_log(RT_LOG_WARN, "cgroup %s is still busy; left",
		       s->cg_garbage[i]);
		free(s->cg_garbage[i]);
	}
	free(s->cg_garbage);
	s->cg_garbage = NULL;
	s->ncg_garbage = 0;
	{
		const char *roots[RT_CG_COUNT];
		int k, nr = rt_cg_roots(&s->cg, roots);

		for (k = 0; k < nr; k++)
			rt_cgroup_remove(roots[k]);
	}
	rt_cg_free(&s->cg);
	free(s->log_dir);
	s->log_dir = NULL;
	rt_map_free(&s->instances);
	rt_idmap_free(&s->runs);
	rt_idmap_free(&s->inits);
}

/* ========================================================== commands */

struct rt_instance *rt_instance_new(struct rt_sup *s, const char *id)
{
	struct rt_instance *in = calloc(1, sizeof(*in));

	assert(rt_map_get(&s->instances, id) == NULL);
	if (in == NULL)
		return NULL;
	in->sup = s;
	in->id = strdup(id);
	in->timer = malloc(sizeof(*in->timer));
	in->log_fd = -1;
	in->state = RT_STOPPED;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	snprintf(in->reason, sizeof(in->reason), "not started");
	if (s->log_dir != NULL)
		in->log_path = rt__log_file(s->log_dir, id);
	if (in->id == NULL || in->timer == NULL ||
	    (s->log_dir != NULL && in->log_path == NULL) ||
	    rt_map_put(&s->instances, id, in) < 0) {
		free(in->log_path);
		free(in->id);
		free(in->timer);
		free(in);
		return NULL;
	}
	uv_timer_init(s->loop, in->timer);
	in->timer->data = in;
	return in;
}

int rt_instance_start(struct rt_instance *in, json_t *spec, long long revision)
{
	int same = in->spec != NULL && revision == in->revision;

	assert(!in->freeing);
	if (spec != NULL) {
		json_decref(in->spec);
		in->spec = json_incref(spec);
		in->revision = revision;
	}
	in->desired_run = 1;
	in->forget = 0;
	in->fail_exit = 0;
	if (in->run != NULL) {
		if (same && in->state != RT_STOPPING)
			return 1;
		/* Another revision, or it is being stopped: start it again
		 * once it has exited. */
		in->restart_now = 1;
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	in->nrecent = 0;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	set_state(in, RT_STARTING, "starting");
	spawn(in);
	return 0;
}

int rt_instance_stop(struct rt_instance *in, int forget)
{
	assert(!in->freeing);
	in->desired_run = 0;
	in->restart_now = 0;
	in->fail_exit = 0;
	in->forget = forget;
	if (drain_first(in))
		return 0;
	rt__kill_other_runs(in); /* its calls' processes */
	if (in->run != NULL) {
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	if (in->state != RT_STOPPED)
		set_state(in, RT_STOPPED, "stopped");
	if (forget)
		rt_instance_remove(in);
	return 1;
}

void rt_instance_fail(struct rt_instance *in, const char *why)
{
	assert(!in->freeing);
	if (in->run != NULL) {
		set_state(in, in->state, "%s", why);
		return;
	}
	in->desired_run = 0;
	uv_timer_stop(in->timer);
	set_state(in, RT_FAILED, "%s", why);
}

void rt_instance_fail_run(struct rt_instance *in, const char *why)
{
	assert(!in->freeing);
	if (in->run == NULL) {
		rt_instance_fail(in, why);
		return;
	}
	in->fail_exit = 1;
	in->restart_now = 0;
	set_state(in, in->state, "%s", why);
	rt__run_kill(in->run);
}

void rt_instance_unready(struct rt_instance *in, const char *why)
{
	if (in->freeing || in->run == NULL || in->state != RT_STARTING)
		return;
	snprintf(in->unready, sizeof(in->unready), "%s", why);
	rt_log(RT_LOG_WARN, "%s: %s", in->id, why);
	rt_ready_unwatch(in);
	if (in->sup->ev->ready != NULL)
		in->sup->ev->ready(in, in->unready);
	if (!in->freeing && in->run != NULL && in->state != RT_STOPPING)
		terminate(in, in->unready);
}

static void on_drained(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (!in->draining || in->freeing ||
	    (in->sup->ev->busy != NULL && in->sup->ev->busy(in)))
		return;
	in->draining = 0;
	/* Its state says `stopping` already: the stop goes on from here. */
	if (in->run != NULL)
		terminate(in,
			  NULL); /* then restart_now or desired_run applies */
	else if (!in->desired_run)
		rt_instance_stop(in, in->forget);
}

void rt_instance_drained(struct rt_instance *in)
{
	if (in->draining && !in->freeing)
		schedule(in, 0, on_drained);
}

int rt_instance_restart(struct rt_instance *in)
{
	assert(!in->freeing);
	if (in->spec == NULL)
		return -ENOENT;
	in->nrecent = 0;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	in->desired_run = 1;
	in->forget = 0;
	in->fail_exit = 0;
	if (in->run != NULL) {
		in->restart_now = 1;
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	set_state(in, RT_STARTING, "restarting");
	spawn(in);
	return 0;
}

void rt__free_if_unused(struct rt_instance *in)
{
	assert(in->runs >= 0);
	if (in->freeing && in->runs == 0 && in->timer == NULL) {
		free(in->id);
		free(in);
	}
}

static void timer_closed(uv_handle_t *h)
{
	struct rt_instance *in = h->data;

	free(h);
	in->timer = NULL;
	rt__free_if_unused(in);
}

void rt_instance_remove(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;

	if (in->freeing)
		return;
	in->freeing = 1;
	rt_map_del(&s->instances, in->id);
	/* Nothing of it keeps running: normally its process has exited
	 * already (removal follows the exit), but its calls' may not. */
	rt__kill_other_runs(in);
	if (in->run != NULL) {
		rt__run_kill(in->run);
		in->run->in = NULL;
		in->runs--;
		in->run = NULL;
		in->pid = 0;
	}
	rt_open_binds_cancel(in->opening);
	in->opening = NULL;
	rt__ns_release(in);
	rt_ready_unwatch(in);
	rt_endpoint_forget(in);
	rt_lambda_forget(in);
	json_decref(in->spec);
	in->spec = NULL;
	rt_cgroup_finish(s, in->cgroup);
	in->cgroup = NULL;
	if (in->log_fd >= 0)
		close(in->log_fd);
	in->log_fd = -1;
	free(in->log_path);
	in->log_path = NULL;
	uv_timer_stop(in->timer);
	uv_close((uv_handle_t *)in->timer, timer_closed);
	if (s->ev->removed != NULL)
		s->ev->removed(in);
}

void rt_instance_sample(struct rt_instance *in)
{
	int limit = (int)json_integer_value(
		json_object_get(in->spec, "memory"));

	if (in->run != NULL && in->pid > 0 &&
	    rt_proc_sample(in->pid, &in->cpu_seconds, &in->rss_bytes) == 0 &&
	    (in->cgroup == NULL || !rt_cg_has(&in->sup->cg, RT_CG_MEMORY)) &&
	    limit > 0 && in->rss_bytes > (long long)limit * 1024 * 1024 &&
	    (in->state == RT_RUNNING || in->state == RT_STARTING)) {
		/* No cgroup to enforce the limit: RSS sampling does. */
		rt_log(RT_LOG_WARN, "%s: rss %lld bytes over %d MB; killing",
		       in->id, in->rss_bytes, limit);
		in->oom_pending = 1;
		kill(-in->pid, SIGKILL);
	}
}

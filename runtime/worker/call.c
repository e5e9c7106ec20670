/*
 * call.c - calls on a worker. An instance holds a list of calls, oldest
 * first, and hands up to its slots (rt_call_slots: its concurrency) of
 * them to its process at once; the others wait for a slot. A hot
 * instance's long-lived process gets its calls on its stdin, in its
 * format, and answers with a line on its stdout: `line` one at a time,
 * `json` several at once, answers matched by id. A cold instance forks a
 * process per call: the request on stdin, the response on stdout, exit
 * status 0 for success. Every call ends in exactly one `result` message
 * to the controller, at the latest at its deadline. A stop or restart
 * waits for the calls handed to the process (a graceful stop, see
 * rt_call_busy).
 */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/frame.h"
#include "lambda.h"
#include "http.h"
#include "worker.h"

/* A write to a process's stdin, with its bytes. */
struct wreq {
	uv_write_t req;
	char *data;
	struct rt_run *close_after; /* cold: close stdin once written */
};

static void call_freed(uv_handle_t *h)
{
	struct rt_call *c = h->data;

	free(h);
	free(c->body);
	rt_buf_free(&c->resp);
	free(c);
}

void rt_call_finish(struct rt_call *c, const char *status, const char *reason,
		    const char *body, size_t len)
{
	struct rt_instance *in = c->in;

	if (in == NULL)
		return;
	assert(c->timer != NULL && (c->run == NULL || c->run->call == c));
	rt_lambda_call_over(c);
	rt_http_call_over(c);
	rt_worker_send(rt_worker_of(in),
		       json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "type",
				 "result", "call", (json_int_t)c->id, "status",
				 status, "reason", reason ? reason : "",
				 "instance", in->id, "epoch",
				 (json_int_t)in->epoch),
		       body, len);
	/* Off the instance's list: a slot is free. The list and its counts
	 * agree: `c` is on it, and a sent call is counted in nsent. */
	assert((c->prev != NULL) != (in->calls == c));
	assert(in->ncalls > 0 && (!c->sent || in->nsent > 0));
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		in->calls = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	in->ncalls--;
	if (c->sent)
		in->nsent--;
	assert(in->nsent >= 0 && in->nsent <= in->ncalls);
	c->in = NULL;
	rt_open_binds_cancel(c->opening);
	c->opening = NULL;
	if (c->run != NULL) {
		c->run->call = NULL;
		c->run = NULL;
	}
	uv_timer_stop(c->timer);
	uv_close((uv_handle_t *)c->timer, call_freed);
	/* The next waiting call takes the slot; a stop that waits for the
	 * calls goes on once they have ended. */
	if (!in->freeing) {
		rt_call_ready(in);
		rt_instance_drained(in);
	}
}

static void written(uv_write_t *req, int status)
{
	struct wreq *wr = (struct wreq *)req;

	(void)status; /* a process that went away shows up as its exit */
	if (wr->close_after != NULL)
		rt_run_close(wr->close_after, &wr->close_after->req);
	free(wr->data);
	free(wr);
}

/* Writes `data` (taken) to the run's stdin, then closes it if `close`:
 * at once when it fits the pipe, else queued. Returns 0 or -errno. */
static int write_stdin(struct rt_run *r, char *data, size_t len, int close)
{
	uv_stream_t *pipe = (uv_stream_t *)&r->req;
	uv_buf_t b = uv_buf_init(data, (unsigned)len);
	struct wreq *wr = NULL;
	int n, rc = 0;

	/* UV_EAGAIN while earlier writes are queued: the order is kept. */
	n = uv_try_write(pipe, &b, 1);
	if (n == (int)len) {
		if (close)
			rt_run_close(r, &r->req);
		goto out;
	}
	if (n < 0 && n != UV_EAGAIN) {
		rc = n;
		goto out;
	}
	wr = calloc(1, sizeof(*wr));
	if (wr == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (n > 0) {
		memmove(data, data + n, len - (size_t)n);
		b = uv_buf_init(data, (unsigned)(len - (size_t)n));
	}
	wr->data = data;
	wr->close_after = close ? r : NULL;
	rc = uv_write(&wr->req, pipe, &b, 1, written);
	if (rc == 0) {
		data = NULL; /* written() frees both */
		wr = NULL;
	}
out:
	free(data);
	free(wr);
	return rc;
}

static int is_json(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));

	return f != NULL && strcmp(f, "json") == 0;
}

int rt_call_slots(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));
	json_int_t n = json_integer_value(
		json_object_get(in->spec, "concurrency"));

	if (!rt_instance_mode_is(in, "hot") || f == NULL ||
	    strcmp(f, "line") == 0)
		return 1;
	if (in->slots > 0) /* a concurrency changed since it started */
		n = in->slots;
	if (n < 1)
		return 1;
	return n > RT_CALLS_MAX ? RT_CALLS_MAX : (int)n;
}

/* Hands call `c` (marked sent and counted already) to the hot process of
 * its instance: the one place where a call goes to its process. */
static void hot_send(struct rt_call *c)
{
	struct rt_instance *in = c->in;
	struct rt_buf frame = { 0 };
	int rc;

	assert(in->run != NULL && c->sent);
	if (rt_lambda_is(in)) {
		rt_lambda_send(c); /* to the runtime's next /next */
		return;
	}
	if (rt_http_is(in)) {
		rt_http_send(c);
		return;
	}
	rc = rt_frame_request(is_json(in), c->idstr,
			      c->body != NULL ? c->body : "", c->len,
			      c->deadline_ms, &frame);

	if (rc < 0) {
		rt_call_finish(c, "failed",
			       "the payload does not fit the format", NULL, 0);
		rt_buf_free(&frame);
		return;
	}
	if (write_stdin(in->run, frame.data, frame.len, 0) < 0)
		rt_call_finish(c, "reset", "cannot write to the process", NULL,
			       0);
}

/* Forks the process of a cold call, with its user and sandbox `sb`
 * (taken). */
static void cold_run(struct rt_call *c, struct rt_sandbox *sb)
{
	struct rt_instance *in = c->in;
	struct rt_run *r;
	const char *why = "?";
	char tag[32];

	snprintf(tag, sizeof(tag), "c%lld", ++in->cold_spawns);
	r = rt_run_spawn_with(in, 1, tag, sb, &why);
	if (r == NULL) {
		rt_call_finish(c, "failed", why, NULL, 0);
		return;
	}
	r->cold = 1;
	r->call = c;
	c->run = r;
	if (c->len == 0) {
		rt_run_close(r, &r->req);
	} else {
		char *copy = malloc(c->len);

		if (copy != NULL)
			memcpy(copy, c->body, c->len);
		if (copy == NULL || write_stdin(r, copy, c->len, 1) < 0)
			rt_run_close(r, &r->req);
	}
}

/* rt_run_open's answer for a cold call (not called once it is over). */
static void cold_opened(void *arg, struct rt_sandbox *sb, const char *why)
{
	struct rt_call *c = arg;

	assert(c->in != NULL && c->opening != NULL);
	c->opening = NULL;
	if (sb == NULL)
		rt_call_finish(c, "failed", why, NULL, 0);
	else
		cold_run(c, sb);
}

/* Starts the process of a cold call: at once, or once its sandbox's
 * binds are open (off the loop). */
static void cold_spawn(struct rt_call *c)
{
	struct rt_sandbox *sb;
	const char *why = "?";
	int rc;

	assert(c->in != NULL && c->run == NULL && c->opening == NULL &&
	       c->sent);
	rc = rt_run_open(c->in, cold_opened, c, &c->opening, &sb, &why);
	if (rc < 0)
		rt_call_finish(c, "failed", why, NULL, 0);
	else if (rc == 0)
		cold_run(c, sb);
}

/* Kills the process serving a call that is over. */
static void kill_run(struct rt_run *r)
{
	if (r == NULL || r->reaped)
		return;
	r->killed = 1;
	kill(-r->pid, SIGKILL);
	kill(r->pid, SIGKILL);
}

static void on_deadline(uv_timer_t *t)
{
	struct rt_call *c = t->data;
	struct rt_instance *in = c->in;
	struct rt_run *r;

	if (in == NULL)
		return;
	/* The process of a stdin call, of a call a lambda runtime took; not
	 * an http server's (its request is cancelled, the connection
	 * closed, and the other calls it serves go on). */
	r = c->run != NULL ? c->run
	    : c->sent && c->http == NULL &&
			    (!rt_lambda_is(in) || c->lambda != NULL)
		    ? in->run
		    : NULL;
	/* Its process may answer late, or never: a hot one that serves one
	 * call at a time starts over at once, so that the next call gets a
	 * clean process (a late answer would be taken for the next call's).
	 * One serving several matches answers by id: a late one goes to the
	 * log, and the other calls go on. */
	if (r != NULL && !r->cold && rt_call_slots(in) > 1)
		r = NULL;
	/* Killed first, so that the slot it frees is not handed to it. */
	if (r != NULL && !r->reaped) {
		kill_run(r);
		if (!r->cold && in->run == r)
			in->restart_now = 1;
	}
	rt_call_finish(c, "timeout", "no response within the timeout", NULL, 0);
}

void rt_call_start(struct rt_worker *w, struct rt_instance *in,
		   const struct rt_msg *m)
{
	long long id = rt_msg_int(m, "call", 0);
	int64_t deadline = rt_msg_int(m, "deadline_ms", 0), now = rt_now_ms();
	struct rt_call *c;

	/* A call waits for a slot, not refused for the concurrency (the
	 * controller's may be newer than the one it started with); while it
	 * restarts, a call waits for the new process. */
	if (in == NULL || in->ncalls >= RT_CALLS_MAX || in->freeing ||
	    !(in->state == RT_RUNNING || in->state == RT_STARTING ||
	      in->state == RT_BACKOFF ||
	      (in->state == RT_STOPPING && in->desired_run)) ||
	    !(rt_instance_mode_is(in, "hot") ||
	      rt_instance_mode_is(in, "cold"))) {
		rt_worker_send(w,
			       json_pack("{s:s, s:I, s:s, s:s}", "type",
					 "result", "call", (json_int_t)id,
					 "status", "reset", "reason",
					 in == NULL ? "no such instance here"
					 : in->ncalls >= RT_CALLS_MAX
						 ? "the instance holds too "
						   "many calls"
						 : "the instance is not "
						   "running"),
			       NULL, 0);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c != NULL)
		c->timer = malloc(sizeof(*c->timer));
	if (c == NULL || c->timer == NULL ||
	    (m->body_len > 0 && (c->body = malloc(m->body_len)) == NULL)) {
		if (c != NULL)
			free(c->timer);
		free(c);
		rt_worker_send(w,
			       json_pack("{s:s, s:I, s:s, s:s}", "type",
					 "result", "call", (json_int_t)id,
					 "status", "failed", "reason",
					 "out of memory"),
			       NULL, 0);
		return;
	}
	c->in = in;
	c->id = id;
	in->slots = (int)rt_msg_int(m, "slots", 0);
	snprintf(c->idstr, sizeof(c->idstr), "%lld", id);
	c->deadline_ms = deadline;
	if (m->body_len > 0)
		memcpy(c->body, m->body, m->body_len);
	c->len = m->body_len;
	uv_timer_init(w->loop, c->timer);
	c->timer->data = c;
	uv_timer_start(c->timer, on_deadline,
		       deadline > now ? (uint64_t)(deadline - now) : 0, 0);
	/* At the tail: oldest first. */
	if (in->calls == NULL) {
		in->calls = c;
	} else {
		struct rt_call *t = in->calls;

		while (t->next != NULL)
			t = t->next;
		t->next = c;
		c->prev = t;
	}
	in->ncalls++;
	assert(c->next == NULL && in->nsent <= in->ncalls);
	rt_call_ready(in);
}

/* Whether `in` can be handed a call now: it runs (a hot one's process
 * takes calls), or it is stopping for good and serves the calls it holds
 * first. While a restart waits for its calls, new ones wait for the new
 * process. */
/* Whether the live process of a hot instance takes calls: on its stdin
 * (line, json), from its runtime API (lambda) or as HTTP requests. */
static int takes_calls(const struct rt_instance *in)
{
	return in->run != NULL && !in->run->killed &&
	       (in->run->calls || rt_lambda_is(in) || rt_http_is(in));
}

static int can_send(const struct rt_instance *in)
{
	int cold = rt_instance_mode_is(in, "cold");

	if (in->freeing ||
	    !(in->state == RT_RUNNING || (in->draining && !in->desired_run)))
		return 0;
	return cold || takes_calls(in);
}

void rt_call_ready(struct rt_instance *in)
{
	int slots = rt_call_slots(in);

	/* From the head each time: a hand-over that fails ends its call,
	 * which calls this again. */
	while (in->nsent < slots && can_send(in)) {
		struct rt_call *c = in->calls;

		while (c != NULL && c->sent)
			c = c->next;
		if (c == NULL)
			return;
		c->sent = 1;
		in->nsent++;
		if (rt_instance_mode_is(in, "cold"))
			cold_spawn(c);
		else
			hot_send(c);
	}
}

int rt_call_busy(const struct rt_instance *in)
{
	if (in->nsent > 0)
		return 1;
	/* The controller's direct calls, each bounded by its deadline. */
	if (in->direct > 0 && rt_mono_ms() < in->direct_until_mono)
		return 1;
	/* Stopping for good: the waiting ones are served if they can be. */
	return !in->desired_run && in->ncalls > 0 &&
	       (rt_instance_mode_is(in, "cold") || takes_calls(in));
}

/* Ends with `why` the first call of `in` written to its hot process (with
 * `all`, the first call); returns whether there was one. */
static int end_first(struct rt_instance *in, int all, const char *why)
{
	struct rt_call *c;
	struct rt_run *r;

	for (c = in->calls; c != NULL; c = c->next)
		if (all || (c->sent && c->run == NULL))
			break;
	if (c == NULL)
		return 0;
	r = c->run;
	rt_call_finish(c, "reset", why, NULL, 0);
	kill_run(r);
	return 1;
}

void rt_call_process_gone(struct rt_instance *in)
{
	while (end_first(in, 0, "the process exited during the call"))
		;
	if (!in->desired_run)
		while (end_first(in, 1, "the instance stopped"))
			;
}

void rt_call_abort(struct rt_instance *in, const char *why)
{
	while (end_first(in, 1, why))
		;
}

/* Ends a cold call once its process has exited and its stdout ended. */
static void cold_check(struct rt_run *r)
{
	struct rt_call *c = r->call;
	int oom = 0;
	char why[64];

	if (!r->reaped || !r->resp_eof)
		return;
	oom = rt_cgroup_finish(r->sup, r->cgroup);
	r->cgroup = NULL;
	if (c == NULL)
		return;
	if (r->sig != 0) {
		snprintf(why, sizeof(why), "%s (signal %d)",
			 oom ? "killed for its memory limit" : "killed",
			 r->sig);
		rt_call_finish(c, "reset", why, NULL, 0);
	} else if (r->code != 0) {
		snprintf(why, sizeof(why), "exit status %d", r->code);
		rt_call_finish(c, "error", why, why, strlen(why));
	} else {
		rt_call_finish(c, "ok", NULL, c->resp.data, c->resp.len);
	}
}

void rt_call_cold_exited(struct rt_run *r)
{
	cold_check(r);
}

/* The call a hot process's answer `p` is for: the oldest one written to
 * it (line: one at a time), or the one of the id of a json answer when
 * several are under way (an answer with no id goes to the oldest). NULL:
 * none waits. */
static struct rt_call *answered(struct rt_instance *in, const char *p,
				size_t len)
{
	struct rt_call *c, *oldest = NULL;
	char id[sizeof(oldest->idstr)];

	for (c = in->calls; c != NULL && oldest == NULL; c = c->next)
		if (c->sent)
			oldest = c;
	if (oldest == NULL || in->nsent < 2 || !is_json(in))
		return oldest;
	if (rt_frame_response_id(p, len, id, sizeof(id)) != 1)
		return oldest;
	for (c = oldest; c != NULL; c = c->next)
		if (c->sent && strcmp(c->idstr, id) == 0)
			return c;
	return oldest; /* a late answer: rt_frame_response says so */
}

/* One line a hot process wrote on its stdout. */
static void hot_line(struct rt_run *r, const char *p, size_t len)
{
	struct rt_instance *in = r->in;
	struct rt_call *c = in != NULL ? answered(in, p, len) : NULL;
	struct rt_buf out = { 0 };
	int user = 0, rc;

	if (in == NULL)
		return;
	if (c == NULL || in->run != r || r->killed) {
		/* Not an answer to anything: kept in the log. */
		rt_log_write(in, p, len);
		rt_log_write(in, "\n", 1);
		return;
	}
	rc = rt_frame_response(is_json(in), c->idstr, p, len, &user, &out);
	if (rc == 1) {
		rt_log_write(in, p, len); /* an answer to an older call */
		rt_log_write(in, "\n", 1);
	} else if (rc < 0) {
		rt_call_finish(c, "error", "malformed response", out.data,
			       out.len);
	} else {
		rt_call_finish(c, user ? "error" : "ok", NULL, out.data,
			       out.len);
	}
	rt_buf_free(&out);
}

void rt_call_on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_run *r = s->data;
	char *nl;

	if (n < 0) {
		r->resp_eof = 1;
		rt_run_close(r, &r->resp);
		if (r->cold)
			cold_check(r);
		return;
	}
	if (r->cold) {
		if (r->call == NULL)
			return;
		if (r->call->resp.len + (size_t)n > RT_WIRE_BODY_MAX) {
			struct rt_call *c = r->call;

			rt_call_finish(c, "failed", "the response is too large",
				       NULL, 0);
			kill_run(r);
			return;
		}
		rt_buf_append(&r->call->resp, buf->base, (size_t)n);
		return;
	}
	rt_buf_append(&r->line, buf->base, (size_t)n);
	while (r->line.len > 0 &&
	       (nl = memchr(r->line.data, '\n', r->line.len)) != NULL) {
		size_t used = (size_t)(nl - r->line.data) + 1;

		hot_line(r, r->line.data, used - 1);
		memmove(r->line.data, r->line.data + used, r->line.len - used);
		r->line.len -= used;
	}
	if (r->line.len > RT_WIRE_BODY_MAX) {
		rt_log(RT_LOG_WARN,
		       "%s: a response line over %u bytes; "
		       "killing",
		       r->in ? r->in->id : "?", RT_WIRE_BODY_MAX);
		rt_buf_reset(&r->line);
		kill_run(r);
	}
}

/*
 * ready.c - readiness: from its spawn until it is ready, an instance's
 * process is `starting`, and calls wait. What makes it ready is its spec's
 * `ready`: `started` (at once), `tcp` (a connection to its FN_LISTENER
 * socket, or to 127.0.0.1:PORT, is accepted), `http:/PATH` (a GET of PATH
 * there answers 2xx), `notify` (it writes a line to the pipe FN_NOTIFY_FD
 * names, as s6's notification-fd) or `lambda` (lambda.c calls
 * rt_instance_ready on its first /next). Probes run on the worker's loop,
 * one at a time, every RT_READY_RETRY_MS, each bounded; a process not
 * ready within ready_timeout is stopped (rt_instance_unready).
 *
 * One watch (struct rt_ready) per spawn of a process that is not ready
 * at once; it ends (its handles closed) when the process is ready, is
 * stopped, exits, or its instance is removed.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/peer.h"
#include "ready.h"
#include "supervise.h"

/* ========================================================== pure parts */

int rt_ready_parse(const char *word, const char **path)
{
	static const char *const words[] = { "started", "tcp", NULL, "notify",
					     "lambda" };
	int i;

	*path = NULL;
	if (word == NULL || word[0] == '\0')
		return RT_READY_STARTED;
	for (i = 0; i < (int)(sizeof(words) / sizeof(words[0])); i++)
		if (words[i] != NULL && strcmp(word, words[i]) == 0)
			return i;
	if (strncmp(word, "http:/", 6) == 0) {
		*path = word + 5;
		return RT_READY_HTTP;
	}
	return -1;
}

int rt_ready_request(const char *path, const char *host, char *out, size_t n)
{
	int len = snprintf(out, n,
			   "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
			   "fnfs-ready\r\nAccept: */*\r\nConnection: "
			   "close\r\n\r\n",
			   path, host);

	return len < 0 || (size_t)len >= n ? -1 : len;
}

static int on_head(http_parser *p)
{
	struct rt_ready_http *h = p->data;

	if (p->status_code < 200)
		return 0; /* informational: the real head follows */
	h->status = (int)p->status_code;
	http_parser_pause(p, 1);
	return 1; /* no body to expect: its head is all we read */
}

void rt_ready_http_init(struct rt_ready_http *h)
{
	memset(h, 0, sizeof(*h));
	http_parser_init(&h->p, HTTP_RESPONSE);
	h->p.data = h;
}

int rt_ready_http_feed(struct rt_ready_http *h, const char *data, size_t len)
{
	http_parser_settings s;

	if (h->status > 0)
		return h->status;
	http_parser_settings_init(&s);
	s.on_headers_complete = on_head;
	http_parser_execute(&h->p, &s, data, len);
	if (h->status > 0)
		return h->status;
	if (HTTP_PARSER_ERRNO(&h->p) != HPE_OK || len == 0)
		return -1;
	return 0;
}

int rt_ready_http_ok(int status)
{
	return status >= 200 && status <= 299;
}

int rt_ready_notify_line(const char *data, size_t len)
{
	return len > 0 && memchr(data, '\n', len) != NULL;
}

/* ============================================================ the watch */

/* One probe: a connection, and for http its request and answer. */
struct probe {
	union {
		uv_handle_t h;
		uv_stream_t s;
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} u;
	uv_connect_t connect;
	uv_write_t write;
	struct rt_ready *rd; /* NULL once given up */
	char where[140];     /* "127.0.0.1:41234" or "unix:PATH" */
	char req[400];
	struct rt_ready_http http;
	int shared_net; /* TCP in a network others share: check the peer */
};

struct rt_ready {
	struct rt_instance *in; /* NULL once the watch ended */
	struct rt_run *run;	/* the process it watches */
	enum rt_ready_kind kind;
	char *path;	     /* http: PATH, owned */
	uv_timer_t retry;    /* the next probe, or the bound of this one */
	uv_timer_t deadline; /* ready_timeout */
	uv_pipe_t notify;    /* notify: FN_NOTIFY_FD's read end */
	int notify_open;
	int nopen;	     /* handles not closed yet */
	struct probe *probe; /* in flight, or NULL */
	char last[192];	     /* why it is not ready yet */
};

static void watch_closed(uv_handle_t *h)
{
	struct rt_ready *rd = h->data;

	if (--rd->nopen > 0)
		return;
	free(rd->path);
	free(rd);
}

static void probe_freed(uv_handle_t *h)
{
	free(h->data);
}

/* Gives up probe `p` (its callbacks then do nothing). */
static void probe_end(struct probe *p)
{
	if (p->rd != NULL && p->rd->probe == p)
		p->rd->probe = NULL;
	p->rd = NULL;
	uv_close(&p->u.h, probe_freed);
}

void rt_ready_unwatch(struct rt_instance *in)
{
	struct rt_ready *rd = in->ready;

	if (rd == NULL)
		return;
	in->ready = NULL;
	rd->in = NULL;
	if (rd->probe != NULL)
		probe_end(rd->probe);
	uv_close((uv_handle_t *)&rd->retry, watch_closed);
	uv_close((uv_handle_t *)&rd->deadline, watch_closed);
	if (rd->notify_open)
		uv_close((uv_handle_t *)&rd->notify, watch_closed);
	rd->notify_open = 0;
}

/* The watch's instance while the process it watches is the live one. */
static struct rt_instance *watched(struct rt_ready *rd)
{
	struct rt_instance *in = rd != NULL ? rd->in : NULL;

	if (in == NULL || in->freeing || in->run != rd->run)
		return NULL;
	return in;
}

void rt_instance_ready(struct rt_instance *in, const char *how)
{
	if (in == NULL || in->freeing || in->run == NULL ||
	    in->state != RT_STARTING || !in->desired_run || in->restart_now ||
	    in->run->killed)
		return;
	rt_ready_unwatch(in);
	rt_instance_set_state(in, RT_RUNNING, "ready (%s)", how);
	if (in->sup->ev->ready != NULL)
		in->sup->ev->ready(in, NULL);
}

static void probe_start(struct rt_ready *rd);

static void on_retry(uv_timer_t *t)
{
	probe_start(t->data);
}

/* Probe `p` failed for `why` (printf): the next one comes later. */
static void probe_failed(struct probe *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void probe_failed(struct probe *p, const char *fmt, ...)
{
	struct rt_ready *rd = p->rd;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rd->last, sizeof(rd->last), fmt, ap);
	va_end(ap);
	probe_end(p);
	uv_timer_start(&rd->retry, on_retry, RT_READY_RETRY_MS, 0);
}

static void probe_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char buf[4096]; /* one loop thread; used within the read */

	(void)h;
	(void)hint;
	*b = uv_buf_init(buf, sizeof(buf));
}

static void on_answer(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct probe *p = s->data;
	struct rt_instance *in = watched(p->rd);
	char how[320];
	int st;

	if (in == NULL || n == 0)
		return;
	st = rt_ready_http_feed(&p->http, b->base, n > 0 ? (size_t)n : 0);
	if (st == 0)
		return;
	if (st < 0) {
		probe_failed(p, "GET %s on %s: %s", p->rd->path, p->where,
			     n > 0	   ? "not an HTTP response"
			     : n == UV_EOF ? "closed without an answer"
					   : uv_strerror((int)n));
		return;
	}
	if (!rt_ready_http_ok(st)) {
		probe_failed(p, "GET %s on %s answered %d", p->rd->path,
			     p->where, st);
		return;
	}
	snprintf(how, sizeof(how), "GET %s answered %d", p->rd->path, st);
	probe_end(p);
	rt_instance_ready(in, how);
}

static void on_sent(uv_write_t *req, int status)
{
	struct probe *p = req->data;

	if (status < 0 && watched(p->rd) != NULL)
		probe_failed(p, "GET %s on %s: %s", p->rd->path, p->where,
			     uv_strerror(status));
}

/* Whether the TCP connection of probe `p` reaches a server of `in`'s
 * own (another user may listen on its port in a network we share); if
 * not, the probe failed, saying whose the port is. */
static int own_server(struct probe *p, struct rt_instance *in)
{
	json_t *juid = json_object_get(in->spec, "uid");
	struct sockaddr_storage local, server;
	struct rt_peer_owner o = { 0 };
	int llen = sizeof(local), slen = sizeof(server);
	char why[200];

	if (uv_tcp_getsockname(&p->u.tcp, (struct sockaddr *)&local, &llen) <
		    0 ||
	    uv_tcp_getpeername(&p->u.tcp, (struct sockaddr *)&server, &slen) <
		    0 ||
	    local.ss_family != AF_INET || server.ss_family != AF_INET) {
		probe_failed(p, "cannot tell whose %s is", p->where);
		return 0;
	}
	rt_peer_owner_set(&o, in->pid, rt_instance_init(in));
	if (rt_peer_check_server(
		    &o, juid ? (long)json_integer_value(juid) : (long)geteuid(),
		    (struct sockaddr_in *)&local, (struct sockaddr_in *)&server,
		    why, sizeof(why)) < 0) {
		probe_failed(p, "%s", why);
		return 0;
	}
	return 1;
}

static void on_connected(uv_connect_t *req, int status)
{
	struct probe *p = req->data;
	struct rt_instance *in = watched(p->rd);
	uv_buf_t b;
	int rc;

	if (in == NULL)
		return; /* given up: closing */
	if (status < 0) {
		probe_failed(p, "%s on %s", uv_strerror(status), p->where);
		return;
	}
	if (p->shared_net && !own_server(p, in))
		return;
	if (p->rd->kind == RT_READY_TCP) {
		probe_end(p);
		rt_instance_ready(in, "tcp");
		return;
	}
	rt_ready_http_init(&p->http);
	b = uv_buf_init(p->req, (unsigned)strlen(p->req));
	p->write.data = p;
	rc = uv_write(&p->write, &p->u.s, &b, 1, on_sent);
	if (rc == 0)
		rc = uv_read_start(&p->u.s, probe_alloc, on_answer);
	if (rc < 0)
		probe_failed(p, "GET %s on %s: %s", p->rd->path, p->where,
			     uv_strerror(rc));
}

/* The retry timer during a probe: it had no answer in time. */
static void on_probe_slow(uv_timer_t *t)
{
	struct rt_ready *rd = t->data;

	if (rd->probe != NULL)
		probe_failed(rd->probe, "no answer within %d ms on %s",
			     RT_READY_ATTEMPT_MS, rd->probe->where);
}

/* Starts a probe: on the FN_LISTENER socket once it exists, else on
 * 127.0.0.1:PORT (in the process's own network namespace if it has one). */
static void probe_start(struct rt_ready *rd)
{
	struct rt_instance *in = watched(rd);
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct probe *p;
	int rc;

	if (in == NULL || rd->probe != NULL)
		return;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		snprintf(rd->last, sizeof(rd->last), "out of memory");
		uv_timer_start(&rd->retry, on_retry, RT_READY_RETRY_MS, 0);
		return;
	}
	p->rd = rd;
	p->connect.data = p;
	if (rt_endpoint_unix_ready(in)) {
		snprintf(p->where, sizeof(p->where), "unix:%s", in->listener);
		uv_pipe_init(in->sup->loop, &p->u.pipe, 0);
	} else {
		int fd = rt_peer_netns_socket(in->pid, 0);

		snprintf(p->where, sizeof(p->where), "127.0.0.1:%d", in->port);
		uv_tcp_init(in->sup->loop, &p->u.tcp);
		if (fd >= 0 && uv_tcp_open(&p->u.tcp, fd) < 0)
			close(fd);
		p->shared_net = fd < 0;
	}
	p->u.h.data = p;
	/* A socket has no host name: "localhost" stands for it. */
	if (rd->kind == RT_READY_HTTP)
		rt_ready_request(rd->path,
				 p->where[0] == 'u' ? "localhost" : p->where,
				 p->req, sizeof(p->req));
	rd->probe = p;
	uv_timer_start(&rd->retry, on_probe_slow, RT_READY_ATTEMPT_MS, 0);
	if (p->where[0] == 'u') {
		uv_pipe_connect(&p->connect, &p->u.pipe, in->listener,
				on_connected);
		return;
	}
	a.sin_port = htons((uint16_t)in->port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rc = uv_tcp_connect(&p->connect, &p->u.tcp, (struct sockaddr *)&a,
			    on_connected);
	if (rc < 0)
		probe_failed(p, "%s on %s", uv_strerror(rc), p->where);
}

static void notify_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char buf[512];

	(void)h;
	(void)hint;
	*b = uv_buf_init(buf, sizeof(buf));
}

static void on_notify(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct rt_ready *rd = s->data;
	struct rt_instance *in = watched(rd);

	if (in == NULL)
		return;
	if (n > 0 && rt_ready_notify_line(b->base, (size_t)n)) {
		rt_instance_ready(in, "notify");
		return;
	}
	if (n < 0) {
		/* It closed its end without a line: not ready, and it will
		 * not say so any more (the deadline ends it). */
		snprintf(rd->last, sizeof(rd->last),
			 "FN_NOTIFY_FD was closed without a line");
		uv_close((uv_handle_t *)&rd->notify, watch_closed);
		rd->notify_open = 0;
	}
}

static void on_deadline(uv_timer_t *t)
{
	struct rt_ready *rd = t->data;
	struct rt_instance *in = watched(rd);
	char why[256];

	if (in == NULL || in->state != RT_STARTING)
		return;
	snprintf(why, sizeof(why), "not ready within %d s: %s",
		 rt_ready_timeout_ms(in) / 1000, rd->last);
	rt_instance_unready(in, why);
}

/* The kind of readiness of `in`'s spawns (a cold slot is ready as it is:
 * each call forks its own process). */
static int kind_of(const struct rt_instance *in, const char **path)
{
	int k;

	*path = NULL;
	if (in->sup->simulate || rt_instance_mode_is(in, "cold"))
		return RT_READY_STARTED;
	k = rt_ready_parse(
		json_string_value(json_object_get(in->spec, "ready")), path);
	return k < 0 ? RT_READY_STARTED : k;
}

int rt_ready_timeout_ms(const struct rt_instance *in)
{
	json_int_t s = json_integer_value(
		json_object_get(in->spec, "ready_timeout"));

	return (int)(s > 0 && s <= 86400 ? s : RT_READY_TIMEOUT_S) * 1000;
}

int rt_ready_wants_notify(const struct rt_instance *in)
{
	const char *path;

	return kind_of(in, &path) == RT_READY_NOTIFY;
}

int rt_ready_env(const struct rt_instance *in, char **env, size_t *n)
{
	char v[32];

	if (!rt_ready_wants_notify(in))
		return 0;
	snprintf(v, sizeof(v), "FN_NOTIFY_FD=%d", RT_READY_NOTIFY_FD);
	if ((env[*n] = strdup(v)) == NULL)
		return -ENOMEM;
	(*n)++;
	return 0;
}

const char *rt_ready_why(const struct rt_instance *in)
{
	if (in->ready != NULL && in->ready->last[0] != '\0')
		return in->ready->last;
	return in->reason;
}

int rt_ready_watch(struct rt_instance *in)
{
	struct rt_ready *rd;
	const char *path;
	char where[300];
	int kind = kind_of(in, &path);

	rt_ready_unwatch(in);
	if (kind == RT_READY_STARTED || in->run == NULL)
		return 1;
	rd = calloc(1, sizeof(*rd));
	if (rd == NULL || (path != NULL && (rd->path = strdup(path)) == NULL)) {
		free(rd);
		rt_log(RT_LOG_WARN, "%s: out of memory to watch its readiness",
		       in->id);
		return 1;
	}
	rd->in = in;
	rd->run = in->run;
	rd->kind = (enum rt_ready_kind)kind;
	uv_timer_init(in->sup->loop, &rd->retry);
	uv_timer_init(in->sup->loop, &rd->deadline);
	rd->retry.data = rd->deadline.data = rd;
	rd->nopen = 2;
	in->ready = rd;
	uv_timer_start(&rd->deadline, on_deadline,
		       (uint64_t)rt_ready_timeout_ms(in), 0);
	switch (rd->kind) {
	case RT_READY_TCP:
	case RT_READY_HTTP:
		snprintf(rd->last, sizeof(rd->last), "no probe answered yet");
		/* It has only just been forked: give it a moment. */
		uv_timer_start(&rd->retry, on_retry, RT_READY_RETRY_MS, 0);
		if (in->listener != NULL)
			snprintf(where, sizeof(where),
				 "unix:%s or 127.0.0.1:%d", in->listener,
				 in->port);
		else
			snprintf(where, sizeof(where), "127.0.0.1:%d",
				 in->port);
		rt_instance_set_state(
			in, RT_STARTING, "waiting to be ready: %s%s on %s",
			rd->kind == RT_READY_TCP ? "tcp" : "http:",
			rd->kind == RT_READY_TCP ? "" : rd->path, where);
		break;
	case RT_READY_NOTIFY:
		snprintf(rd->last, sizeof(rd->last),
			 "no line on FN_NOTIFY_FD yet");
		if (in->run->notify_fd >= 0) {
			uv_pipe_init(in->sup->loop, &rd->notify, 0);
			rd->notify.data = rd;
			rd->notify_open = 1;
			rd->nopen++;
			if (uv_pipe_open(&rd->notify, in->run->notify_fd) == 0)
				uv_read_start((uv_stream_t *)&rd->notify,
					      notify_alloc, on_notify);
			else
				close(in->run->notify_fd);
			in->run->notify_fd = -1;
		}
		rt_instance_set_state(
			in, RT_STARTING,
			"waiting to be ready: a line on FN_NOTIFY_FD");
		break;
	case RT_READY_LAMBDA:
		snprintf(rd->last, sizeof(rd->last), "no /next yet");
		rt_instance_set_state(
			in, RT_STARTING,
			"waiting to be ready: its first /next (lambda)");
		break;
	case RT_READY_STARTED: assert(0); break;
	}
	return 0;
}

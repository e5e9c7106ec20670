/*
 * lambda.c - the AWS Lambda runtime API (2018-06-01) a worker serves to
 * each hot instance of format `lambda`, on the loop, on 127.0.0.1 and a
 * port of the instance's own (AWS_LAMBDA_RUNTIME_API):
 *
 *   GET  /2018-06-01/runtime/invocation/next         waits for a call
 *   POST /2018-06-01/runtime/invocation/ID/response  its result (202)
 *   POST /2018-06-01/runtime/invocation/ID/error     its error (202)
 *   POST /2018-06-01/runtime/init/error              the runtime cannot
 *                                                    start (202)
 *
 * The instance serves one call at a time (its slots are 1): the call
 * handed to it (call.c, sent) waits in in->calls until a /next takes it
 * (its `lambda` is then set); its answer
 * ends it through rt_call_finish. A response to an id that is not the one
 * under way is 400 (InvalidRequestID), an init error after the first
 * /next 403 (InvalidStateTransition), as AWS answers them. Requests are
 * read with lambda_api.c (bounded); connections are kept alive. It is
 * one file over 600 lines because its connections, the call a /next
 * holds and the requests that answer it are one exchange whose state
 * (the call under way, the /next that waits) every part reads; the
 * parsing of requests is already lambda_api.c's.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lambda.h"
#include "lambda_api.h"
#include "../base/peer.h"
#include "worker.h"

#define BACKLOG 16
/* Bytes read from a connection and not parsed yet while its /next
 * waits: a runtime does not send more then; past this it is closed. */
#define PENDING_MAX (RT_LAMBDA_HEAD_MAX + 4096)

struct lconn;

/* The runtime API of one instance. */
struct lsrv {
	struct rt_instance *in; /* NULL once forgotten */
	uv_tcp_t tcp;		/* the listener */
	int port;
	int handles;	      /* open: the listener and connections */
	struct lconn *conns;  /* open connections */
	struct rt_call *call; /* handed to the runtime, not answered */
	char reqid[RT_LAMBDA_REQID_LEN + 1]; /* its request id */
	long long run;		    /* the spawn being served: 1, 2, ... */
	int nexted;		    /* this run asked for a call: it is ready */
	char *arn;		    /* the function's ARN, owned */
	struct rt_peer_owner owner; /* its processes (peer.h) */
	long long refused;	    /* connections of others closed */
};

/* A runtime's connection. */
struct lconn {
	uv_tcp_t tcp;
	struct lsrv *srv;
	struct rt_lambda_req req;
	struct rt_buf in; /* read, not parsed yet */
	int waiting;	  /* its /next waits for a call */
	int keep;	  /* the request answered keeps the connection */
	int closing;
	int pumping; /* inside pump(): it goes on by itself */
	struct lconn *next, *prev;
};

/* A response on its way. */
struct lwrite {
	uv_write_t req;
	struct lconn *conn;
	char *data; /* owned */
	int close;  /* the connection closes once it is written */
};

int rt_lambda_is(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));

	return rt_instance_mode_is(in, "hot") && f != NULL &&
	       strcmp(f, "lambda") == 0;
}

/* ======================================================= connections */

static void srv_release(struct lsrv *srv)
{
	if (--srv->handles > 0 || srv->in != NULL)
		return;
	free(srv->arn);
	free(srv);
}

static void conn_closed(uv_handle_t *h)
{
	struct lconn *c = h->data;
	struct lsrv *srv = c->srv;

	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	rt_lambda_req_free(&c->req);
	rt_buf_free(&c->in);
	free(c);
	srv_release(srv);
}

static void conn_close(struct lconn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	c->waiting = 0;
	uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void pump(struct lconn *c);

static void written(uv_write_t *req, int status)
{
	struct lwrite *w = (struct lwrite *)req;
	struct lconn *c = w->conn;

	free(w->data);
	if ((status < 0 || w->close) && !c->closing)
		conn_close(c);
	free(w);
}

/* Sends response `b` (taken) on `c`; closes `c` after it unless
 * c->keep. */
static void send_buf(struct lconn *c, struct rt_buf *b)
{
	struct lwrite *w = calloc(1, sizeof(*w));
	uv_buf_t ub;

	if (c->closing || w == NULL || b->data == NULL) {
		free(w);
		rt_buf_free(b);
		conn_close(c);
		return;
	}
	w->conn = c;
	w->data = b->data;
	w->close = !c->keep;
	ub = uv_buf_init(b->data, (unsigned)b->len);
	b->data = NULL;
	rt_buf_free(b);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, written) < 0) {
		free(w->data);
		free(w);
		conn_close(c);
	}
}

/* Answers `c` with AWS's error document. */
static void send_error(struct lconn *c, int code, const char *type,
		       const char *message)
{
	struct rt_buf b = { 0 };

	rt_lambda_reply_error(&b, code, type, message, c->keep);
	send_buf(c, &b);
}

/* Answers `c` 202, as AWS accepts a response or an error. */
static void send_accepted(struct lconn *c)
{
	static const char ok[] = "{\"status\":\"OK\"}";
	struct rt_buf b = { 0 };

	rt_lambda_reply(&b, 202, "application/json", NULL, ok, sizeof(ok) - 1,
			c->keep);
	send_buf(c, &b);
}

/* ============================================================= calls */

/* The call handed to the instance that no /next has taken yet, or NULL. */
static struct rt_call *waiting_call(struct rt_instance *in)
{
	struct rt_call *c;

	for (c = in->calls; c != NULL; c = c->next)
		if (c->sent && c->lambda == NULL)
			return c;
	return NULL;
}

/* Hands the instance's waiting call to a /next that waits, if both are
 * there. */
static void dispatch(struct lsrv *srv)
{
	struct rt_instance *in = srv->in;
	struct rt_call *call = in != NULL ? waiting_call(in) : NULL;
	struct rt_buf b = { 0 }, h = { 0 };
	struct lconn *c;

	if (call == NULL || srv->call != NULL || in->run == NULL ||
	    in->run->killed)
		return;
	for (c = srv->conns; c != NULL && !c->waiting; c = c->next)
		;
	if (c == NULL)
		return;
	rt_lambda_request_id(in->id, srv->run, call->id, srv->reqid);
	if (rt_lambda_next_headers(&h, srv->reqid, call->deadline_ms, srv->arn,
				   call->id) < 0 ||
	    rt_lambda_reply(&b, 200, "application/json", h.data,
			    call->body != NULL ? call->body : "", call->len,
			    c->keep) < 0) {
		rt_buf_free(&h);
		rt_buf_free(&b);
		rt_call_finish(call, "failed", "out of memory", NULL, 0);
		return;
	}
	rt_buf_free(&h);
	call->lambda = srv;
	srv->call = call;
	c->waiting = 0;
	send_buf(c, &b);
	if (!c->closing && !c->pumping)
		pump(c); /* what it sent meanwhile */
}

void rt_lambda_send(struct rt_call *c)
{
	struct lsrv *srv = c->in != NULL ? c->in->lambda : NULL;

	if (srv != NULL)
		dispatch(srv);
}

void rt_lambda_call_over(struct rt_call *c)
{
	struct lsrv *srv = c->lambda;

	if (srv != NULL && srv->call == c) {
		srv->call = NULL;
		srv->reqid[0] = '\0';
	}
	c->lambda = NULL;
}

/* ========================================================== requests */

/* The runtime reported that it cannot start: a call waiting for it gets
 * the error, and the instance fails with it (no restart: the same code
 * would fail the same way; `restart` or a new revision starts it again). */
static void init_failed(struct lsrv *srv, const char *text)
{
	struct rt_instance *in = srv->in;
	struct rt_call *call = waiting_call(in);
	struct rt_buf why = { 0 };

	if (call != NULL)
		rt_call_finish(call, "error", NULL, text, strlen(text));
	rt_buf_printf(&why, "init error: %s", text);
	rt_log(RT_LOG_INFO, "%s: %s", in->id, why.data ? why.data : text);
	rt_instance_fail_run(in, why.data ? why.data : "init error");
	rt_buf_free(&why);
}

/* An invocation's /response or /error for request id `id`. */
static void answered(struct lconn *c, enum rt_lambda_route route,
		     const char *id)
{
	struct lsrv *srv = c->srv;
	struct rt_call *call = srv->call;
	struct rt_lambda_req *r = &c->req;
	struct rt_buf text = { 0 };

	if (call == NULL || strcmp(id, srv->reqid) != 0) {
		send_error(c, 400, "InvalidRequestID",
			   "no invocation of this request id is under way");
		return;
	}
	send_accepted(c);
	if (route == RT_LAMBDA_RESPONSE) {
		rt_call_finish(call, "ok", NULL, r->body.data, r->body.len);
	} else if (rt_lambda_error_text(r->body.data, r->body.len, r->type,
					&text) < 0) {
		rt_call_finish(call, "failed", "out of memory", NULL, 0);
	} else {
		rt_call_finish(call, "error", NULL, text.data, text.len);
	}
	rt_buf_free(&text);
}

/* Serves the request read on `c`. */
static void serve(struct lconn *c)
{
	struct lsrv *srv = c->srv;
	struct rt_lambda_req *r = &c->req;
	char id[RT_LAMBDA_ID_MAX + 1];
	enum rt_lambda_route route = rt_lambda_route(
		r->p.method, r->url.data ? r->url.data : "", r->url.len, id);
	struct rt_buf text = { 0 };

	c->keep = rt_lambda_req_keep_alive(r);
	if (srv->in == NULL || srv->in->freeing) {
		send_error(c, 500, "Runtime.Gone", "the instance is gone");
		return;
	}
	switch (route) {
	case RT_LAMBDA_NOT_FOUND:
		send_error(c, 404, "NotFound", "no such resource");
		break;
	case RT_LAMBDA_BAD_METHOD:
		send_error(c, 405, "MethodNotAllowed",
			   "not a method of this resource");
		break;
	case RT_LAMBDA_NEXT:
		c->waiting = 1;
		if (!srv->nexted) {
			srv->nexted = 1;
			rt_instance_ready(srv->in, "first /next");
		}
		dispatch(srv);
		break;
	case RT_LAMBDA_RESPONSE:
	case RT_LAMBDA_ERROR: answered(c, route, id); break;
	case RT_LAMBDA_INIT_ERROR:
		if (srv->nexted) {
			send_error(c, 403, "InvalidStateTransition",
				   "the runtime asked for an invocation "
				   "already: its init is over");
			break;
		}
		send_accepted(c);
		if (rt_lambda_error_text(r->body.data, r->body.len, r->type,
					 &text) == 0)
			init_failed(srv, text.data);
		rt_buf_free(&text);
		break;
	}
}

/* A request over a bound: 413 or 431, and the connection closes. A
 * response too large for the call under way ends the call too. */
static void too_large(struct lconn *c)
{
	static const char big[] = "Function.ResponseSizeTooLarge: the "
				  "response is over the limit";
	struct lsrv *srv = c->srv;
	struct rt_lambda_req *r = &c->req;
	char id[RT_LAMBDA_ID_MAX + 1];
	enum rt_lambda_route route = RT_LAMBDA_NOT_FOUND;

	if (r->too_large == 413 && r->url.len > 0)
		route = rt_lambda_route(r->p.method, r->url.data, r->url.len,
					id);
	c->keep = 0;
	if ((route == RT_LAMBDA_RESPONSE || route == RT_LAMBDA_ERROR) &&
	    srv->call != NULL && strcmp(id, srv->reqid) == 0)
		rt_call_finish(srv->call, "error", NULL, big, sizeof(big) - 1);
	if (r->too_large == 413)
		send_error(c, 413, "RequestEntityTooLarge",
			   "the body is over the limit");
	else
		send_error(c, 431, "RequestHeaderFieldsTooLarge",
			   "the request line and headers are over the limit");
}

/* Parses and serves what `c` sent, one request at a time; stops while
 * its /next waits. */
static void pump(struct lconn *c)
{
	size_t used;
	int rc;

	c->pumping = 1;
	while (!c->closing && !c->waiting && c->in.len > 0) {
		rc = rt_lambda_req_feed(&c->req, c->in.data, c->in.len, &used);
		memmove(c->in.data, c->in.data + used, c->in.len - used);
		c->in.len -= used;
		if (rc == 0)
			break;
		if (rc == 1) {
			serve(c);
			rt_lambda_req_next(&c->req);
			continue;
		}
		if (rc == -EMSGSIZE) {
			too_large(c);
		} else {
			c->keep = 0;
			send_error(c, 400, "InvalidRequest",
				   "not an HTTP/1.1 request");
		}
		/* Nothing more is read from it. */
		uv_read_stop((uv_stream_t *)&c->tcp);
		rt_buf_reset(&c->in);
		break;
	}
	c->pumping = 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct lconn *c = h->data;

	(void)hint;
	if (rt_buf_reserve(&c->in, 65536) < 0) {
		*buf = uv_buf_init(NULL, 0);
		return;
	}
	*buf = uv_buf_init(c->in.data + c->in.len,
			   (unsigned)(c->in.cap - c->in.len - 1));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct lconn *c = s->data;

	(void)buf;
	if (n < 0) {
		conn_close(c); /* its /next, if any, is dropped */
		return;
	}
	c->in.len += (size_t)n;
	c->in.data[c->in.len] = '\0';
	if (c->waiting && c->in.len > PENDING_MAX) {
		conn_close(c);
		return;
	}
	pump(c);
}

/* Whether connection `c` comes from a process of the instance: the port
 * is on the host's loopback, where any user may connect, and the API
 * hands out the instance's calls. Others are closed unanswered; the log
 * says so at the first and every 1000th. */
static int from_instance(struct lsrv *srv, struct lconn *c)
{
	struct rt_instance *in = srv->in;
	struct sockaddr_storage local, peer;
	int llen = sizeof(local), plen = sizeof(peer), rc = -EINVAL;
	char why[200] = "not over IPv4";

	if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&local, &llen) ==
		    0 &&
	    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen) == 0 &&
	    local.ss_family == AF_INET && peer.ss_family == AF_INET) {
		rt_peer_owner_set(&srv->owner, in->pid, rt_instance_init(in));
		rc = rt_peer_check_client(
			&srv->owner, (struct sockaddr_in *)&local,
			(struct sockaddr_in *)&peer, why, sizeof(why));
	}
	if (rc == 0)
		return 1;
	if (srv->refused++ % 1000 == 0)
		rt_log(RT_LOG_WARN, "%s: runtime API: refused %s (%lld so far)",
		       in->id, why, srv->refused);
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct lsrv *srv = server->data;
	struct lconn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return; /* libuv accepts no more until one is taken */
	uv_tcp_init(server->loop, &c->tcp);
	c->tcp.data = c;
	c->srv = srv;
	srv->handles++;
	c->next = srv->conns;
	if (c->next != NULL)
		c->next->prev = c;
	srv->conns = c;
	rt_lambda_req_init(&c->req, RT_WIRE_BODY_MAX);
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || srv->in == NULL) {
		conn_close(c);
		return;
	}
	if (!from_instance(srv, c)) {
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ========================================================== the server */

static void listener_closed(uv_handle_t *h)
{
	srv_release(h->data);
}

/* The ARN a /next names: arn:fnfs:lambda::TENANT:function:NS/FUNCTION. */
static char *make_arn(const char *id)
{
	struct rt_buf b = { 0 };
	const char *s1 = strchr(id, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL,
		   *s3 = s2 ? strchr(s2 + 1, '/') : NULL;

	if (s3 == NULL)
		rt_buf_printf(&b, "arn:fnfs:lambda::fnfs:function:%s", id);
	else
		rt_buf_printf(&b, "arn:fnfs:lambda::%.*s:function:%.*s",
			      (int)(s1 - id), id, (int)(s3 - s1 - 1), s1 + 1);
	return b.data;
}

/* Opens the instance's listener on 127.0.0.1 and a port the kernel
 * picks. */
static int srv_open(struct rt_instance *in, const char **why)
{
	struct lsrv *srv = calloc(1, sizeof(*srv));
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got), rc;

	if (srv == NULL || (srv->arn = make_arn(in->id)) == NULL) {
		if (srv != NULL)
			free(srv);
		*why = "out of memory";
		return -ENOMEM;
	}
	srv->in = in;
	uv_tcp_init(in->sup->loop, &srv->tcp);
	srv->tcp.data = srv;
	srv->handles = 1;
	uv_ip4_addr("127.0.0.1", 0, &a);
	rc = uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&a, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->tcp, BACKLOG,
			       on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&srv->tcp, (struct sockaddr *)&got,
					&len);
	if (rc < 0) {
		rt_log(RT_LOG_WARN, "%s: runtime API: %s", in->id,
		       uv_strerror(rc));
		srv->in = NULL;
		uv_close((uv_handle_t *)&srv->tcp, listener_closed);
		*why = "cannot listen for the runtime API";
		return rc;
	}
	srv->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
	in->lambda = srv;
	return 0;
}

int rt_lambda_prepare(struct rt_instance *in, const char **why)
{
	const char *iso = json_string_value(
		json_object_get(in->spec, "isolation"));
	const char *net = json_string_value(
		json_object_get(in->spec, "network"));
	struct lsrv *srv;
	struct lconn *c;
	int rc;

	if (!rt_lambda_is(in))
		return 0;
	if (iso != NULL && strcmp(iso, "sandbox") == 0 && net != NULL &&
	    strcmp(net, "none") == 0) {
		*why = "format lambda needs network host: with network none "
		       "the runtime cannot reach its API on the worker's "
		       "loopback";
		return -EINVAL;
	}
	if (in->lambda == NULL && (rc = srv_open(in, why)) < 0)
		return rc;
	srv = in->lambda;
	/* A new process: what the last one left is dropped. */
	for (c = srv->conns; c != NULL; c = c->next)
		conn_close(c);
	srv->run++;
	srv->nexted = 0;
	return 0;
}

void rt_lambda_forget(struct rt_instance *in)
{
	struct lsrv *srv = in->lambda;
	struct lconn *c;

	if (srv == NULL)
		return;
	in->lambda = NULL;
	if (srv->call != NULL)
		srv->call->lambda = NULL;
	srv->call = NULL;
	srv->in = NULL;
	for (c = srv->conns; c != NULL; c = c->next)
		conn_close(c);
	uv_close((uv_handle_t *)&srv->tcp, listener_closed);
}

/* ======================================================= environment */

/* Whether the function's own env (the spec's) sets `name`. */
static int user_sets(const struct rt_instance *in, const char *name)
{
	json_t *env = json_object_get(in->spec, "env"), *v;
	size_t i, n = strlen(name);

	json_array_foreach (env, i, v) {
		const char *s = json_string_value(v);

		if (s != NULL && strncmp(s, name, n) == 0 && s[n] == '=')
			return 1;
	}
	return 0;
}

/* Sets NAME=VALUE in `env`: replaces an entry of that name (unless the
 * function's env set it and `user_wins`), else appends one. */
static int set_var(const struct rt_instance *in, char **env, size_t *n,
		   const char *name, const char *value, int user_wins)
{
	struct rt_buf b = { 0 };
	size_t i, len = strlen(name);

	if (user_wins && user_sets(in, name))
		return 0;
	if (rt_buf_printf(&b, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (i = 0; i < *n; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
			free(env[i]);
			env[i] = b.data;
			return 0;
		}
	env[(*n)++] = b.data;
	return 0;
}

/* LAMBDA_TASK_ROOT: the function's cwd, or its code/ tree, where it
 * starts. The tree is under the worker's private directory, which only
 * the worker's own user may walk: a function of another user reaches it
 * through its cwd (decisions.md). */
static const char *task_root(const struct rt_instance *in)
{
	const char *cwd = json_string_value(json_object_get(in->spec, "cwd"));
	const char *code = json_string_value(
		json_object_get(in->spec, "code_dir"));
	json_t *uid = json_object_get(in->spec, "uid");

	if (cwd != NULL && cwd[0] != '\0')
		return cwd;
	if (code == NULL || code[0] == '\0')
		return "/";
	if (json_is_integer(uid) && (uid_t)json_integer_value(uid) != geteuid())
		return "/proc/self/cwd";
	return code;
}

int rt_lambda_env(const struct rt_instance *in, char **env, size_t *n)
{
	struct lsrv *srv = in->lambda;
	const char *id = in->id, *s1, *s2, *s3;
	char api[32], num[32], mem[32];
	struct rt_buf fn = { 0 }, group = { 0 };
	const char *root = task_root(in);
	int rc = 0;

	if (srv == NULL || !rt_lambda_is(in))
		return 0;
	s1 = strchr(id, '/');
	s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	s3 = s2 ? strchr(s2 + 1, '/') : NULL;
	if (s3 != NULL) {
		rt_buf_printf(&fn, "%.*s", (int)(s3 - s2 - 1), s2 + 1);
		rt_buf_printf(&group, "/fnfs/%.*s", (int)(s3 - id), id);
	} else {
		rt_buf_puts(&fn, id);
		rt_buf_printf(&group, "/fnfs/%s", id);
	}
	snprintf(api, sizeof(api), "127.0.0.1:%d", srv->port);
	snprintf(num, sizeof(num), "%lld", in->revision);
	snprintf(mem, sizeof(mem), "%lld",
		 (long long)json_integer_value(
			 json_object_get(in->spec, "memory")));
	if (fn.data == NULL || group.data == NULL ||
	    set_var(in, env, n, "AWS_LAMBDA_RUNTIME_API", api, 0) < 0 ||
	    set_var(in, env, n, "LAMBDA_TASK_ROOT", root, 0) < 0 ||
	    set_var(in, env, n, "LAMBDA_RUNTIME_DIR", root, 0) < 0 ||
	    set_var(in, env, n, "AWS_LAMBDA_FUNCTION_NAME", fn.data, 0) < 0 ||
	    set_var(in, env, n, "AWS_LAMBDA_FUNCTION_VERSION", num, 0) < 0 ||
	    set_var(in, env, n, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", mem, 0) <
		    0 ||
	    set_var(in, env, n, "AWS_LAMBDA_LOG_GROUP_NAME", group.data, 0) <
		    0 ||
	    set_var(in, env, n, "AWS_LAMBDA_LOG_STREAM_NAME", id, 0) < 0 ||
	    set_var(in, env, n, "AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand",
		    0) < 0 ||
	    set_var(in, env, n, "_HANDLER", "function.handler", 1) < 0 ||
	    set_var(in, env, n, "TZ", ":UTC", 1) < 0 ||
	    set_var(in, env, n, "LANG", "en_US.UTF-8", 1) < 0 ||
	    set_var(in, env, n, "PATH",
		    "/usr/local/bin:/usr/bin/:/bin:/opt/bin", 1) < 0)
		rc = -ENOMEM;
	rt_buf_free(&fn);
	rt_buf_free(&group);
	return rc;
}

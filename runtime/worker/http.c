/*
 * http.c - calls to `http` instances (http.h). A call's payload is either
 * a plain body, sent as `POST /`, or a request in the HTTP message form
 * (httpmsg.h), whose method, target, headers and body are sent as given;
 * then the result is the response in message form too. One easy handle
 * per call, on the worker's one multi (curluv.h); the multi's connection
 * cache keeps connections to each server alive and reuses them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/curluv.h"
#include "http.h"
#include "../base/httpmsg.h"
#include "../base/peer.h"

#define MAX_CONNS 1024 /* idle connections the worker's cache keeps */

/* The state of one call under way. */
struct http_call {
	struct rt_curl_xfer x;	   /* its transfer; x.arg is this */
	struct rt_call *c;	   /* the call (c->http is this) */
	struct curl_slist *hdrs;   /* the request's headers, owned */
	struct rt_httpmsg msg;	   /* the request, in message form */
	int message;		   /* it was: the result is one too */
	int head_request;	   /* a HEAD: no body comes back */
	int too_large;		   /* the response passed the bound */
	struct rt_buf head;	   /* the response's status and headers */
	struct rt_buf body;	   /* the response's body */
	char err[CURL_ERROR_SIZE]; /* curl's words for a failure */
	int fresh;		   /* a TCP connection was opened for it */
	int own_net;		   /* ... in the instance's own network */
	char refused[200];	   /* why it was not sent, or "" */
};

int rt_http_is(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));

	return rt_instance_mode_is(in, "hot") && f != NULL &&
	       strcmp(f, "http") == 0;
}

static void http_free(struct http_call *h, struct rt_curluv *m)
{
	if (h == NULL)
		return;
	rt_curluv_release(m, h->x.easy);
	curl_slist_free_all(h->hdrs);
	rt_httpmsg_free(&h->msg);
	rt_buf_free(&h->head);
	rt_buf_free(&h->body);
	free(h);
}

const char *rt_http_outcome(CURLcode rc, long code, int too_large,
			    const char **why)
{
	*why = NULL;
	switch (rc) {
	case CURLE_OK:
		if (strcmp(rt_httpmsg_status_word(code), "error") == 0)
			return "error";
		return "ok";
	case CURLE_COULDNT_CONNECT:
		*why = "its server refused the connection";
		return "reset";
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		*why = "its server closed or reset the connection";
		return "reset";
	case CURLE_OPERATION_TIMEDOUT:
		*why = "no response within the timeout";
		return "timeout";
	case CURLE_WRITE_ERROR:
		if (too_large) {
			*why = "the response is too large";
			return "failed";
		}
		*why = "the response could not be kept";
		return "failed";
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_HTTP2: *why = "malformed response"; return "error";
	case CURLE_OUT_OF_MEMORY: *why = "out of memory"; return "failed";
	default: *why = "the HTTP client failed"; return "failed";
	}
}

/* CURLOPT_WRITEFUNCTION: a piece of the response's body. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct http_call *h = arg;

	n *= size;
	if (h->body.len + h->head.len + n > RT_WIRE_BODY_MAX ||
	    rt_buf_append(&h->body, p, n) < 0) {
		h->too_large = 1;
		return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
	}
	return n;
}

/* CURLOPT_HEADERFUNCTION: a line of the response's head. A status line
 * starts a response anew (after an interim 1xx). */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct http_call *h = arg;

	n *= size;
	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0)
		rt_buf_reset(&h->head);
	if (h->head.len + n > RT_HTTPMSG_HEAD_MAX ||
	    rt_buf_append(&h->head, p, n) < 0) {
		h->too_large = 1;
		return 0;
	}
	return n;
}

static void on_done(struct rt_curl_xfer *x, CURLcode rc)
{
	struct http_call *h = x->arg;
	struct rt_call *c = h->c;
	struct rt_worker *w = rt_worker_of(c->in);
	struct rt_httpmsg_result res;
	const char *status, *why;
	char words[384];
	long code = 0;

	c->http = NULL; /* rt_call_finish must not cancel it again */
	if (h->refused[0] != '\0') {
		/* Not sent: the port is someone else's. EREMOTEIO, whose
		 * words are the body's. */
		rt_call_finish(c, "error", h->refused, h->refused,
			       strlen(h->refused));
		http_free(h, w->curl);
		return;
	}
	if (rc == CURLE_OK)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	status = rt_http_outcome(rc, code, h->too_large, &why);
	if (rc != CURLE_OK) {
		snprintf(words, sizeof(words), "%s%s%s", why,
			 h->err[0] ? ": " : "", h->err);
		rt_call_finish(c, status, words, NULL, 0);
	} else {
		/* The same ending as the controller's direct calls. */
		rt_httpmsg_result(&res, code, h->head.data, h->head.len,
				  h->body.data, h->body.len, h->message,
				  h->head_request);
		rt_call_finish(c, res.status, res.reason, res.body, res.len);
		rt_httpmsg_result_free(&res);
	}
	http_free(h, w->curl);
}

/* Appends header `name: value` to `*l` (curl's form for an empty value
 * is "name;", and "name:" removes a header curl would add). */
static int add_header(struct curl_slist **l, const char *name,
		      const char *value)
{
	struct curl_slist *n;
	struct rt_buf b = { 0 };

	if (value == NULL)
		rt_buf_printf(&b, "%s:", name);
	else if (value[0] == '\0')
		rt_buf_printf(&b, "%s;", name);
	else
		rt_buf_printf(&b, "%s: %s", name, value);
	n = b.data ? curl_slist_append(*l, b.data) : NULL;
	rt_buf_free(&b);
	if (n == NULL)
		return -ENOMEM;
	*l = n;
	return 0;
}

int rt_http_headers(const struct rt_httpmsg *msg, const char *call_id,
		    int64_t deadline_ms, struct curl_slist **out)
{
	static const char *const curls[] = { "Accept", "Content-Type", "Expect",
					     NULL };
	int i, k, n = msg != NULL ? msg->nheaders : 0, rc = 0;
	char when[32];

	for (i = 0; rc == 0 && i < n; i++)
		if (!rt_httpmsg_hop_by_hop(msg->name[i]))
			rc = add_header(out, msg->name[i], msg->value[i]);
	for (k = 0; rc == 0 && curls[k] != NULL; k++) {
		for (i = 0; i < n; i++)
			if (strcasecmp(msg->name[i], curls[k]) == 0)
				break;
		if (i == n)
			rc = add_header(out, curls[k], NULL);
	}
	rt_format_time(deadline_ms, when);
	if (rc == 0)
		rc = add_header(out, "Fn-Call-Id", call_id);
	if (rc == 0)
		rc = add_header(out, "Fn-Deadline", when);
	return rc;
}

/* CURLOPT_OPENSOCKETFUNCTION: the socket of a new connection, made in
 * the instance's network namespace when it has one of its own (there
 * only its processes can listen). */
static int on_open(struct rt_curl_xfer *x, curlsocktype purpose,
		   struct curl_sockaddr *a)
{
	struct http_call *h = x->arg;
	int fd = -2;

	if (purpose == CURLSOCKTYPE_IPCXN && a->family == AF_INET) {
		h->fresh = 1;
		fd = rt_peer_netns_socket(h->c->in->pid, 0);
		h->own_net = fd >= 0;
		if (fd == -1) {
			snprintf(h->refused, sizeof(h->refused),
				 "cannot reach the network of its process");
			return -1;
		}
	}
	if (fd == -2)
		fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	return fd < 0 ? -1 : fd;
}

/* CURLOPT_PREREQFUNCTION: connected, nothing sent yet. A new connection
 * in a network others share must reach the instance's own server. */
static int on_connected(void *arg, char *server_ip, char *local_ip,
			int server_port, int local_port)
{
	struct http_call *h = arg;
	struct rt_instance *in = h->c->in;
	json_t *juid = json_object_get(in->spec, "uid");
	struct sockaddr_in local = { .sin_family = AF_INET },
			   server = { .sin_family = AF_INET };
	struct rt_peer_owner o = { 0 };

	if (!h->fresh || h->own_net)
		return CURL_PREREQFUNC_OK;
	h->fresh = 0;
	if (inet_pton(AF_INET, local_ip, &local.sin_addr) != 1 ||
	    inet_pton(AF_INET, server_ip, &server.sin_addr) != 1) {
		snprintf(h->refused, sizeof(h->refused),
			 "its server's address is not IPv4 loopback");
		return CURL_PREREQFUNC_ABORT;
	}
	local.sin_port = htons((uint16_t)local_port);
	server.sin_port = htons((uint16_t)server_port);
	rt_peer_owner_set(&o, in->pid, rt_instance_init(in));
	if (rt_peer_check_server(
		    &o, juid ? (long)json_integer_value(juid) : (long)geteuid(),
		    &local, &server, h->refused, sizeof(h->refused) - 16) < 0) {
		strcat(h->refused, ": not sent");
		return CURL_PREREQFUNC_ABORT;
	}
	return CURL_PREREQFUNC_OK;
}

/* Sets up the easy handle of `h` for its call on instance `in`. Returns
 * 0 or -errno with `why`. */
static int setup(struct http_call *h, struct rt_instance *in, const char **why)
{
	struct rt_call *c = h->c;
	const char *method = "POST", *target = "/", *body = c->body;
	size_t len = c->len;
	int unix_socket = rt_endpoint_unix_ready(in);
	int64_t left = c->deadline_ms - rt_now_ms();
	struct rt_buf url = { 0 };
	CURL *e;
	int rc = 0;

	if (h->message) {
		method = h->msg.method;
		target = h->msg.target;
		body = h->msg.body;
		len = h->msg.body_len;
	}
	if (!unix_socket && in->port <= 0) {
		*why = "the instance has no PORT";
		return -EINVAL;
	}
	e = h->x.easy = rt_curluv_easy(rt_worker_of(in)->curl);
	if (e == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	if (unix_socket)
		rc = rt_buf_printf(&url, "http://localhost%s", target);
	else
		rc = rt_buf_printf(&url, "http://127.0.0.1:%d%s", in->port,
				   target);
	if (rc == 0)
		rc = rt_http_headers(h->message ? &h->msg : NULL, c->idstr,
				     c->deadline_ms, &h->hdrs);
	if (rc < 0) {
		*why = "out of memory";
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_URL, url.data);
	if (unix_socket)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, in->listener);
	/* Only plain HTTP/1.1 to this one server: no proxy from the
	 * environment, no redirect followed, no other protocol. */
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L); /* the target as given */
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left > 0 ? (long)left : 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->err);
	curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_connected);
	curl_easy_setopt(e, CURLOPT_PREREQDATA, h);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	if (strcmp(method, "HEAD") == 0) {
		h->head_request = 1;
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (len > 0 || strcmp(method, "POST") == 0 ||
		   strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
		/* The body stays in c->body until the call is over. */
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, len > 0 ? body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)len);
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		if (strcmp(method, "GET") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}
out:
	rt_buf_free(&url);
	return rc;
}

void rt_http_send(struct rt_call *c)
{
	struct rt_instance *in = c->in;
	struct rt_worker *w = rt_worker_of(in);
	struct rt_buf why = { 0 };
	struct http_call *h = NULL;
	const char *reason = "out of memory";
	int rc = 0;

	if (w->curl == NULL &&
	    (rc = rt_curluv_new(w->loop, MAX_CONNS, &w->curl)) < 0) {
		reason = "the HTTP client cannot start";
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	h->c = c;
	h->x.arg = h;
	h->x.done = on_done;
	h->x.open = on_open;
	if (rt_httpmsg_is_request(c->body ? c->body : "", c->len)) {
		h->message = 1;
		rc = rt_httpmsg_parse(c->body, c->len, &h->msg, &why);
		if (rc < 0) {
			reason = why.data ? why.data : "a malformed request";
			goto out;
		}
	}
	rc = setup(h, in, &reason);
	if (rc == 0)
		rc = rt_curluv_add(w->curl, &h->x);
	if (rc < 0)
		goto out;
	c->http = h;
	c->sent = 1;
	h = NULL;
out:
	if (rc < 0)
		rt_call_finish(c, "failed", reason, NULL, 0);
	http_free(h, w->curl);
	rt_buf_free(&why);
}

void rt_http_call_over(struct rt_call *c)
{
	struct http_call *h = c->http;
	struct rt_curluv *m;

	if (h == NULL)
		return;
	c->http = NULL;
	m = rt_worker_of(c->in)->curl;
	rt_curluv_cancel(m, &h->x);
	http_free(h, m);
}

void rt_http_close(struct rt_worker *w)
{
	rt_curluv_close(w->curl);
	w->curl = NULL;
}

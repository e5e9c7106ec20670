/*
 * test_http.c - the HTTP message form (runtime/base/httpmsg.c): detection,
 * parsing and its refusals, the response written back; the request's
 * headers for curl and the mapping of a transfer's end to a call's status
 * (runtime/worker/http.c); and libcurl's multi on a libuv loop
 * (runtime/base/curluv.c) against a small server on the same loop, with its
 * keep-alive.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../runtime/base/curluv.h"
#include "../../runtime/worker/http.h"
#include "../../runtime/base/httpmsg.h"
#include "unit.h"

static int parse(const char *s, struct rt_httpmsg *m, struct rt_buf *why)
{
	return rt_httpmsg_parse(s, strlen(s), m, why);
}

TEST(httpmsg_detects_request_lines)
{
	static const char *const yes[] = { "GET / HTTP/1.1",
					   "GET / HTTP/1.1\r\n\r\n",
					   "POST /a?b HTTP/1.0\nX: y\n",
					   "FROB / HTTP/1.1\r\n",
					   "GET http://x/ HTTP/1.1",
					   "GET / HTTP/2.0\r\n",
					   NULL };
	static const char *const no[] = { "",
					  "hello",
					  "get / HTTP/1.1",
					  "GET /  HTTP/1.1",
					  "GET / HTTP/1.1 extra",
					  "say GET / HTTP/1.1",
					  "GET / FTP/1.1",
					  " GET / HTTP/1.1",
					  "GET /\nHTTP/1.1",
					  "{\"GET\": \"/ HTTP/1.1\"}",
					  NULL };
	int i;

	for (i = 0; yes[i] != NULL; i++)
		CHECK(rt_httpmsg_is_request(yes[i], strlen(yes[i])) == 1);
	for (i = 0; no[i] != NULL; i++)
		CHECK(rt_httpmsg_is_request(no[i], strlen(no[i])) == 0);
}

TEST(httpmsg_parses_a_request)
{
	struct rt_httpmsg m = { 0 };
	struct rt_buf why = { 0 };
	const char *s = "PUT /path/x?a=1&b=%20 HTTP/1.1\r\n"
			"Host: example\r\n"
			"X-Empty:\r\n"
			"X-Spaces:   padded value  \r\n"
			"Content-Length: 10\r\n"
			"\r\n"
			"body\r\nmore";

	CHECK(parse(s, &m, &why) == 0);
	CHECK_STR(m.method, "PUT");
	CHECK_STR(m.target, "/path/x?a=1&b=%20");
	CHECK(m.minor == 1);
	CHECK(m.nheaders == 4);
	CHECK_STR(m.name[0], "Host");
	CHECK_STR(m.value[0], "example");
	CHECK_STR(m.name[1], "X-Empty");
	CHECK_STR(m.value[1], "");
	CHECK_STR(m.name[2], "X-Spaces");
	CHECK_STR(m.value[2], "padded value");
	CHECK(m.body_len == 10 && memcmp(m.body, "body\r\nmore", 10) == 0);
	CHECK(why.data == NULL);
	rt_httpmsg_free(&m);
	rt_buf_free(&why);
}

TEST(httpmsg_lf_lines_and_no_blank_line)
{
	struct rt_httpmsg m = { 0 };

	CHECK(parse("POST /x HTTP/1.0\nA: 1\nB: 2\n\nthe\nbody\n", &m, NULL) ==
	      0);
	CHECK_STR(m.method, "POST");
	CHECK(m.minor == 0);
	CHECK(m.nheaders == 2);
	CHECK_STR(m.value[1], "2");
	CHECK(m.body_len == 9 && memcmp(m.body, "the\nbody\n", 9) == 0);
	/* The blank line left out: no body. */
	CHECK(parse("GET /only HTTP/1.1", &m, NULL) == 0);
	CHECK_STR(m.target, "/only");
	CHECK(m.nheaders == 0 && m.body_len == 0);
	CHECK(parse("GET /h HTTP/1.1\r\nA: b", &m, NULL) == 0);
	CHECK(m.nheaders == 1);
	CHECK_STR(m.value[0], "b");
	CHECK(m.body_len == 0);
	CHECK(parse("DELETE /d HTTP/1.1\r\nA: b\r\n", &m, NULL) == 0);
	CHECK_STR(m.method, "DELETE");
	rt_httpmsg_free(&m);
}

TEST(httpmsg_refusals)
{
	static const char *const bad[] = {
		"FROB / HTTP/1.1\r\n\r\n",
		"GET http://host/ HTTP/1.1\r\n\r\n",
		"GET * HTTP/1.1\r\n\r\n",
		"GET /a#frag HTTP/1.1\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/1.2\r\n\r\n",
		"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"GET / HTTP/1.1\r\nBad(Name): x\r\n\r\n",
		"GET / HTTP/1.1\r\n: x\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A: a\001b\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A: 1\r\n\tfolded\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabc",
		"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabc",
		"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: "
		"chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
		"CONNECT host:443 HTTP/1.1\r\n\r\n",
		NULL
	};
	struct rt_httpmsg m = { 0 };
	struct rt_buf why = { 0 };
	int i;

	for (i = 0; bad[i] != NULL; i++) {
		rt_buf_reset(&why);
		if (parse(bad[i], &m, &why) != -EINVAL) {
			fprintf(stderr, "  accepted: %s\n", bad[i]);
			CHECK(0);
		}
		CHECK(why.data != NULL &&
		      strstr(why.data, "malformed HTTP request") != NULL);
		CHECK(rt_httpmsg_check(bad[i], strlen(bad[i]), NULL) ==
		      -EINVAL);
	}
	/* A plain body is not checked as a message. */
	CHECK(rt_httpmsg_check("plain\nbody", 10, NULL) == 0);
	CHECK(rt_httpmsg_check("", 0, NULL) == 0);
	rt_httpmsg_free(&m);
	rt_buf_free(&why);
}

TEST(httpmsg_bounds)
{
	struct rt_httpmsg m = { 0 };
	struct rt_buf b = { 0 }, why = { 0 };
	int i;

	rt_buf_puts(&b, "GET / HTTP/1.1\r\n");
	for (i = 0; i < RT_HTTPMSG_HEADERS_MAX; i++)
		rt_buf_printf(&b, "X-%d: %d\r\n", i, i);
	rt_buf_puts(&b, "\r\n");
	CHECK(rt_httpmsg_parse(b.data, b.len, &m, NULL) == 0);
	CHECK(m.nheaders == RT_HTTPMSG_HEADERS_MAX);
	CHECK_STR(m.name[99], "X-99");
	CHECK_STR(m.value[99], "99");
	b.len -= 2;
	rt_buf_puts(&b, "X-Last: 1\r\n\r\n");
	CHECK(rt_httpmsg_parse(b.data, b.len, &m, &why) == -EINVAL);
	CHECK(why.data && strstr(why.data, "too many headers"));
	/* The head's size. */
	rt_buf_reset(&b);
	rt_buf_puts(&b, "GET / HTTP/1.1\r\nX-Big: ");
	while (b.len < RT_HTTPMSG_HEAD_MAX)
		rt_buf_puts(&b, "aaaaaaaaaaaaaaaa");
	rt_buf_puts(&b, "\r\n\r\n");
	CHECK(rt_httpmsg_parse(b.data, b.len, &m, NULL) == -EINVAL);
	/* A large body is fine. */
	rt_buf_reset(&b);
	rt_buf_puts(&b, "POST / HTTP/1.1\r\n\r\n");
	while (b.len < 3 * RT_HTTPMSG_HEAD_MAX)
		rt_buf_puts(&b, "body\r\n\r\n");
	CHECK(rt_httpmsg_parse(b.data, b.len, &m, NULL) == 0);
	CHECK(m.body_len == b.len - 19);
	rt_httpmsg_free(&m);
	rt_buf_free(&b);
	rt_buf_free(&why);
}

/* Every prefix and a byte-flipped copy of a message parse without a
 * crash (or a sanitizer report), to 0 or -EINVAL: a small fuzz. */
TEST(httpmsg_prefixes_and_flips)
{
	const char *s = "POST /p?q=1 HTTP/1.1\r\nHost: h\r\nX-A: b\r\n"
			"Content-Length: 4\r\n\r\nbody";
	size_t n = strlen(s), i, k;
	struct rt_httpmsg m = { 0 };
	char *copy = malloc(n);
	uint32_t r = 12345;
	int rc;

	for (i = 0; i <= n; i++) {
		memcpy(copy, s, i);
		rc = rt_httpmsg_check(copy, i, NULL);
		CHECK(rc == 0 || rc == -EINVAL);
	}
	for (k = 0; k < 5000; k++) {
		memcpy(copy, s, n);
		for (i = 0; i < 3; i++) {
			r = r * 1103515245u + 12345u;
			copy[(r >> 8) % n] = (char)(r >> 16);
		}
		if (rt_httpmsg_is_request(copy, n)) {
			rc = rt_httpmsg_parse(copy, n, &m, NULL);
			CHECK(rc == 0 || rc == -EINVAL);
		}
	}
	rt_httpmsg_free(&m);
	free(copy);
}

TEST(httpmsg_response)
{
	struct rt_buf out = { 0 };
	const char *head = "HTTP/1.1 100 Continue\r\n\r\n"
			   "HTTP/1.1 201 Created\r\n"
			   "Content-Type: text/plain\r\n"
			   "Transfer-Encoding: chunked\r\n"
			   "X-Multi: a\r\n"
			   " continued\r\n"
			   "Connection: keep-alive\r\n"
			   "Keep-Alive: timeout=5\r\n"
			   "Content-Length: 99\r\n"
			   "\r\n";

	CHECK(rt_httpmsg_response(head, strlen(head), "hello", 5, 0, &out) ==
	      0);
	CHECK_STR(out.data, "HTTP/1.1 201 Created\r\n"
			    "Content-Type: text/plain\r\n"
			    "X-Multi: a\r\n"
			    " continued\r\n"
			    "Content-Length: 5\r\n"
			    "\r\n"
			    "hello");
	/* HEAD keeps the server's Content-Length; LF lines come out CRLF. */
	rt_buf_reset(&out);
	head = "HTTP/1.0 200 OK\nContent-Length: 12\nX: y\n\n";
	CHECK(rt_httpmsg_response(head, strlen(head), NULL, 0, 1, &out) == 0);
	CHECK_STR(out.data,
		  "HTTP/1.0 200 OK\r\nContent-Length: 12\r\nX: y\r\n\r\n");
	rt_buf_reset(&out);
	CHECK(rt_httpmsg_response("", 0, "x", 1, 0, &out) == -EINVAL);
	rt_buf_free(&out);
}

TEST(http_status_mapping)
{
	const char *why;

	CHECK_STR(rt_httpmsg_status_word(200), "ok");
	CHECK_STR(rt_httpmsg_status_word(204), "ok");
	CHECK_STR(rt_httpmsg_status_word(302), "ok");
	CHECK_STR(rt_httpmsg_status_word(404), "ok");
	CHECK_STR(rt_httpmsg_status_word(499), "ok");
	CHECK_STR(rt_httpmsg_status_word(500), "error");
	CHECK_STR(rt_httpmsg_status_word(503), "error");
	CHECK_STR(rt_httpmsg_status_word(599), "error");
	CHECK_STR(rt_http_outcome(CURLE_OK, 200, 0, &why), "ok");
	CHECK(why == NULL);
	CHECK_STR(rt_http_outcome(CURLE_OK, 404, 0, &why), "ok");
	CHECK_STR(rt_http_outcome(CURLE_OK, 502, 0, &why), "error");
	CHECK_STR(rt_http_outcome(CURLE_COULDNT_CONNECT, 0, 0, &why), "reset");
	CHECK(why != NULL && strstr(why, "refused"));
	CHECK_STR(rt_http_outcome(CURLE_RECV_ERROR, 0, 0, &why), "reset");
	CHECK_STR(rt_http_outcome(CURLE_SEND_ERROR, 0, 0, &why), "reset");
	CHECK_STR(rt_http_outcome(CURLE_GOT_NOTHING, 0, 0, &why), "reset");
	CHECK_STR(rt_http_outcome(CURLE_PARTIAL_FILE, 0, 0, &why), "reset");
	CHECK_STR(rt_http_outcome(CURLE_OPERATION_TIMEDOUT, 0, 0, &why),
		  "timeout");
	CHECK_STR(rt_http_outcome(CURLE_WRITE_ERROR, 0, 1, &why), "failed");
	CHECK(why != NULL && strstr(why, "too large"));
	CHECK_STR(rt_http_outcome(CURLE_WEIRD_SERVER_REPLY, 0, 0, &why),
		  "error");
	CHECK_STR(rt_http_outcome(CURLE_OUT_OF_MEMORY, 0, 0, &why), "failed");
}

/* The header list as one string, lines joined by '|'. */
static void joined(const struct curl_slist *l, struct rt_buf *out)
{
	for (; l != NULL; l = l->next)
		rt_buf_printf(out, "%s%s", l->data, l->next ? "|" : "");
}

TEST(http_request_headers)
{
	struct rt_httpmsg m = { 0 };
	struct curl_slist *l = NULL;
	struct rt_buf b = { 0 };
	const char *s = "POST /x HTTP/1.1\r\nX-A: 1\r\nX-Empty:\r\n"
			"content-type: application/json\r\n"
			"Content-Length: 2\r\nFn-Call-Id: forged\r\n\r\n{}";

	/* A plain body: nothing of curl's own but Host, Content-Length. */
	CHECK(rt_http_headers(NULL, "7", 0, &l) == 0);
	joined(l, &b);
	CHECK_STR(b.data, "Accept:|Content-Type:|Expect:|Fn-Call-Id: 7|"
			  "Fn-Deadline: 1970-01-01T00:00:00.000Z");
	curl_slist_free_all(l);
	l = NULL;
	rt_buf_reset(&b);
	CHECK(parse(s, &m, NULL) == 0);
	CHECK(rt_http_headers(&m, "8", 1000, &l) == 0);
	joined(l, &b);
	CHECK_STR(b.data, "X-A: 1|X-Empty;|content-type: application/json|"
			  "Accept:|Expect:|Fn-Call-Id: 8|"
			  "Fn-Deadline: 1970-01-01T00:00:01.000Z");
	curl_slist_free_all(l);
	rt_httpmsg_free(&m);
	rt_buf_free(&b);
}

/* ---- curluv: a transfer on the loop against a server on the loop */

struct server {
	uv_tcp_t tcp;
	int port;
	int conns; /* connections accepted */
	int requests;
};

struct conn {
	uv_tcp_t tcp;
	struct server *s;
	struct rt_buf in;
};

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = (struct conn *)h;

	rt_buf_free(&c->in);
	free(c);
}

/* A write with its bytes, freed once written. */
struct wr {
	uv_write_t req;
	char *data;
};

static void on_written(uv_write_t *w, int status)
{
	(void)status;
	free(((struct wr *)w)->data);
	free(w);
}

static void on_alloc(uv_handle_t *h, size_t n, uv_buf_t *b)
{
	(void)h;
	b->base = malloc(n);
	b->len = n;
}

/* Answers each request head "GET /N" with a body of N bytes 'x'. */
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = (struct conn *)st;
	char *end;

	if (n < 0) {
		uv_close((uv_handle_t *)st, conn_closed);
		free(buf->base);
		return;
	}
	rt_buf_append(&c->in, buf->base, (size_t)n);
	free(buf->base);
	while (c->in.data && (end = strstr(c->in.data, "\r\n\r\n")) != NULL) {
		size_t used = (size_t)(end + 4 - c->in.data), len;
		long size = strtol(c->in.data + 5, NULL, 10);
		char *resp;
		struct wr *w = malloc(sizeof(*w));
		uv_buf_t ub;

		resp = malloc(128 + (size_t)size);
		len = (size_t)sprintf(resp,
				      "HTTP/1.1 200 OK\r\nContent-Length: "
				      "%ld\r\n\r\n",
				      size);
		memset(resp + len, 'x', (size_t)size);
		ub = uv_buf_init(resp, (unsigned)(len + (size_t)size));
		c->s->requests++;
		w->data = resp;
		uv_write(&w->req, st, &ub, 1, on_written);
		memmove(c->in.data, c->in.data + used, c->in.len - used);
		c->in.len -= used;
		c->in.data[c->in.len] = '\0';
	}
}

static void on_conn(uv_stream_t *st, int status)
{
	struct server *s = (struct server *)st;
	struct conn *c = calloc(1, sizeof(*c));

	(void)status;
	c->s = s;
	uv_tcp_init(st->loop, &c->tcp);
	if (uv_accept(st, (uv_stream_t *)&c->tcp) == 0) {
		s->conns++;
		uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	}
}

struct got {
	struct rt_curl_xfer x;
	struct rt_buf body;
	CURLcode rc;
	int done;
};

static size_t got_body(char *p, size_t size, size_t n, void *arg)
{
	struct got *g = arg;

	rt_buf_append(&g->body, p, size * n);
	return size * n;
}

static void got_done(struct rt_curl_xfer *x, CURLcode rc)
{
	struct got *g = x->arg;

	g->rc = rc;
	g->done++;
}

static void get(struct got *g, int port, int size)
{
	char url[64];

	memset(g, 0, sizeof(*g));
	g->x.easy = curl_easy_init();
	g->x.arg = g;
	g->x.done = got_done;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/%d", port, size);
	curl_easy_setopt(g->x.easy, CURLOPT_URL, url);
	curl_easy_setopt(g->x.easy, CURLOPT_PROXY, "");
	curl_easy_setopt(g->x.easy, CURLOPT_WRITEFUNCTION, got_body);
	curl_easy_setopt(g->x.easy, CURLOPT_WRITEDATA, g);
}

/* Closes the server's connections left open (kept alive). */
static void close_conn(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h) && h->type == UV_TCP)
		uv_close(h, conn_closed);
}

TEST(curluv_transfers_and_keepalive)
{
	uv_loop_t loop;
	struct server s = { 0 };
	struct sockaddr_in a;
	struct rt_curluv *m = NULL;
	struct got g[3];
	int namelen = sizeof(a), i, round;

	uv_loop_init(&loop);
	uv_tcp_init(&loop, &s.tcp);
	uv_ip4_addr("127.0.0.1", 0, &a);
	CHECK(uv_tcp_bind(&s.tcp, (struct sockaddr *)&a, 0) == 0);
	uv_tcp_getsockname(&s.tcp, (struct sockaddr *)&a, &namelen);
	s.port = ntohs(a.sin_port);
	CHECK(uv_listen((uv_stream_t *)&s.tcp, 16, on_conn) == 0);
	CHECK(rt_curluv_new(&loop, 16, &m) == 0);
	/* Sequential transfers share one connection. */
	for (round = 0; round < 5; round++) {
		get(&g[0], s.port, 1000 * round);
		CHECK(rt_curluv_add(m, &g[0].x) == 0);
		CHECK(rt_curluv_add(m, &g[0].x) == -EINVAL); /* added */
		CHECK(g[0].done == 0); /* never inside add */
		while (!g[0].done)
			uv_run(&loop, UV_RUN_ONCE);
		CHECK(g[0].rc == CURLE_OK);
		CHECK(g[0].body.len == (size_t)(1000 * round));
		curl_easy_cleanup(g[0].x.easy);
		rt_buf_free(&g[0].body);
	}
	CHECK(s.requests == 5);
	CHECK(s.conns == 1);
	/* Three at once, one cancelled: two end, with two connections
	 * more at most. */
	for (i = 0; i < 3; i++) {
		get(&g[i], s.port, 100000 * (i + 1));
		CHECK(rt_curluv_add(m, &g[i].x) == 0);
	}
	CHECK(rt_curluv_running(m) == 3);
	rt_curluv_cancel(m, &g[1].x);
	rt_curluv_cancel(m, &g[1].x); /* a no-op */
	CHECK(rt_curluv_running(m) == 2);
	while (!g[0].done || !g[2].done)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK(g[0].rc == CURLE_OK && g[0].body.len == 100000);
	CHECK(g[2].rc == CURLE_OK && g[2].body.len == 300000);
	CHECK(g[1].done == 0);
	CHECK(s.conns <= 3);
	for (i = 0; i < 3; i++) {
		curl_easy_cleanup(g[i].x.easy);
		rt_buf_free(&g[i].body);
	}
	/* Refused: nothing listens on the port any more. */
	uv_close((uv_handle_t *)&s.tcp, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	get(&g[0], s.port, 1);
	curl_easy_setopt(g[0].x.easy, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(g[0].x.easy, CURLOPT_FRESH_CONNECT, 1L);
	CHECK(rt_curluv_add(m, &g[0].x) == 0);
	while (!g[0].done)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK(g[0].rc == CURLE_COULDNT_CONNECT);
	curl_easy_cleanup(g[0].x.easy);
	/* A transfer left added is cancelled by the close. */
	get(&g[1], 1, 1);
	CHECK(rt_curluv_add(m, &g[1].x) == 0);
	rt_curluv_close(m);
	uv_walk(&loop, close_conn, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	CHECK(g[1].done == 0);
	curl_easy_cleanup(g[1].x.easy);
}

/* Closes the server's accepted connections, not its listening socket. */
static void close_accepted(uv_handle_t *h, void *arg)
{
	struct server *s = arg;

	if (!uv_is_closing(h) && h->type == UV_TCP &&
	    h != (uv_handle_t *)&s->tcp)
		uv_close(h, conn_closed);
}

/* Open sockets of this process. */
static int open_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], to[64];
	ssize_t len;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, to, sizeof(to) - 1);
		n += len > 7 && memcmp(to, "socket:", 7) == 0;
	}
	closedir(d);
	return n;
}

/* A kept-alive connection stays watched between transfers (parked), and
 * the parked socket neither keeps the loop alive nor spins it; when the
 * server closes it, the next transfer opens another; every socket is
 * closed by the close. */
TEST(curluv_parked_connections)
{
	uv_loop_t loop;
	struct server s = { 0 };
	struct sockaddr_in a;
	struct rt_curluv *m = NULL;
	struct got g;
	int namelen = sizeof(a), i, sockets = open_sockets(), turns;

	uv_loop_init(&loop);
	uv_tcp_init(&loop, &s.tcp);
	uv_ip4_addr("127.0.0.1", 0, &a);
	CHECK(uv_tcp_bind(&s.tcp, (struct sockaddr *)&a, 0) == 0);
	uv_tcp_getsockname(&s.tcp, (struct sockaddr *)&a, &namelen);
	s.port = ntohs(a.sin_port);
	CHECK(uv_listen((uv_stream_t *)&s.tcp, 16, on_conn) == 0);
	CHECK(rt_curluv_new(&loop, 16, &m) == 0);
	for (i = 0; i < 4; i++) {
		get(&g, s.port, 10 * i);
		CHECK(rt_curluv_add(m, &g.x) == 0);
		while (!g.done)
			uv_run(&loop, UV_RUN_ONCE);
		CHECK(g.rc == CURLE_OK && g.body.len == (size_t)(10 * i));
		curl_easy_cleanup(g.x.easy);
		rt_buf_free(&g.body);
		/* Idle: only the server's handles keep the loop alive. */
		uv_ref((uv_handle_t *)&s.tcp);
	}
	CHECK(s.conns == 1);
	/* The server closes the idle connection: the parked socket sees
	 * it and stops being watched, and the loop then has nothing left
	 * to do (it would spin otherwise: epoll is level-triggered). */
	uv_unref((uv_handle_t *)&s.tcp);
	uv_walk(&loop, close_accepted, &s);
	for (turns = 0; turns < 100 && uv_loop_alive(&loop); turns++)
		uv_run(&loop, UV_RUN_NOWAIT);
	CHECK(!uv_loop_alive(&loop));
	uv_ref((uv_handle_t *)&s.tcp);
	/* The next transfer finds the connection dead and opens another. */
	get(&g, s.port, 5);
	CHECK(rt_curluv_add(m, &g.x) == 0);
	while (!g.done)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK(g.rc == CURLE_OK && g.body.len == 5);
	CHECK(s.conns == 2);
	CHECK(s.requests == 5);
	curl_easy_cleanup(g.x.easy);
	rt_buf_free(&g.body);
	/* The close closes the cached connection's socket too. */
	rt_curluv_close(m);
	uv_walk(&loop, close_accepted, &s);
	uv_close((uv_handle_t *)&s.tcp, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(open_sockets() == sockets);
	CHECK(uv_loop_close(&loop) == 0);
}

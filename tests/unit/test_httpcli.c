/*
 * test_httpcli.c - the controller's HTTP client codec (runtime/base/httpcli.c):
 * the request bytes (libcurl's, for the options of runtime/worker/http.c), the
 * response reader fed in pieces (Content-Length, chunked, interim 1xx,
 * close-delimited, HEAD, cut short, malformed, too large), and the call's
 * ending shared with the worker (rt_httpmsg_result).
 */
#include <errno.h>
#include <stdlib.h>

#include "../../runtime/base/httpcli.h"
#include "../../runtime/base/httpmsg.h"
#include "../../runtime/base/wire.h"
#include "unit.h"

#define DEADLINE 1795000000123LL

/* Builds the request of payload `p`; returns rt_httpcli_request's code. */
static int build(const char *p, struct rt_buf *out, int *head)
{
	return rt_httpcli_request(p, strlen(p), "127.0.0.1:8080", "42",
				  DEADLINE, out, head, NULL);
}

/* "Fn-Call-Id: 42\r\nFn-Deadline: ...\r\n" */
static void fn_headers(char *out, size_t n)
{
	char when[32];

	rt_format_time(DEADLINE, when);
	snprintf(out, n, "Fn-Call-Id: 42\r\nFn-Deadline: %s\r\n", when);
}

TEST(httpcli_plain_body_is_post)
{
	struct rt_buf b = { 0 };
	char fnh[128], want[512];
	int head = -1;

	fn_headers(fnh, sizeof(fnh));
	CHECK(build("hello", &b, &head) == 0);
	CHECK(head == 0);
	snprintf(want, sizeof(want),
		 "POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s"
		 "Content-Length: 5\r\n\r\nhello",
		 fnh);
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	rt_buf_reset(&b);
	CHECK(build("", &b, &head) == 0);
	snprintf(want, sizeof(want),
		 "POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s"
		 "Content-Length: 0\r\n\r\n",
		 fnh);
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	rt_buf_free(&b);
}

TEST(httpcli_message_form)
{
	struct rt_buf b = { 0 }, why = { 0 };
	char fnh[128], want[512];
	int head = -1;

	fn_headers(fnh, sizeof(fnh));
	/* The caller's headers in order, theirs dropped (Fn-Call-Id,
	 * Content-Length), an empty value as libcurl sends it, HTTP/1.1. */
	CHECK(build("PUT /x?y=1 HTTP/1.0\nX-A: 1\nFn-Call-Id: 9\nX-Empty:\n"
		    "Content-Length: 3\n\nabc",
		    &b, &head) == 0);
	snprintf(want, sizeof(want),
		 "PUT /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\n"
		 "X-Empty:\r\n%sContent-Length: 3\r\n\r\nabc",
		 fnh);
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	/* The caller's Host takes the place of ours, in its position; GET
	 * has no body and no Content-Length. */
	rt_buf_reset(&b);
	CHECK(build("GET / HTTP/1.1\r\nX-B: 2\r\nHost: h\r\n\r\n", &b, &head) ==
	      0);
	snprintf(want, sizeof(want),
		 "GET / HTTP/1.1\r\nX-B: 2\r\nHost: h\r\n%s\r\n", fnh);
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	/* HEAD: none either, and its response has no body. */
	rt_buf_reset(&b);
	CHECK(build("HEAD /h HTTP/1.1", &b, &head) == 0);
	CHECK(head == 1);
	snprintf(want, sizeof(want),
		 "HEAD /h HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s\r\n", fnh);
	CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	/* A body on DELETE is sent with its length; PATCH always has one. */
	rt_buf_reset(&b);
	CHECK(build("DELETE /d HTTP/1.1\r\n\r\nzz", &b, &head) == 0);
	CHECK(strstr(b.data, "Content-Length: 2\r\n\r\nzz") != NULL);
	rt_buf_reset(&b);
	CHECK(build("PATCH /p HTTP/1.1\r\n\r\n", &b, &head) == 0);
	CHECK(strstr(b.data, "Content-Length: 0\r\n\r\n") != NULL);
	/* A malformed message is refused with its reason. */
	rt_buf_reset(&b);
	CHECK(rt_httpcli_request("FROB / HTTP/1.1\r\n\r\n", 19, "h", "1", 0, &b,
				 &head, &why) == -EINVAL);
	CHECK(why.len > 0);
	rt_buf_free(&why);
	rt_buf_free(&b);
}

/* Feeds `s` to `r` one byte at a time (`step` 1) or at once (0). */
static enum rt_httpcli_state feed(struct rt_httpcli_resp *r, const char *s,
				  int step)
{
	size_t i, n = strlen(s);

	if (!step)
		return rt_httpcli_feed(r, s, n);
	for (i = 0; i < n; i++)
		if (rt_httpcli_feed(r, s + i, 1) != RT_HTTPCLI_MORE)
			break;
	return r->st;
}

TEST(httpcli_reads_responses_in_pieces)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
				   "X-R: y\r\n\r\nhello";
	struct rt_httpcli_resp r;
	int step;

	for (step = 0; step <= 1; step++) {
		rt_httpcli_resp_init(&r, 0);
		CHECK(feed(&r, resp, step) == RT_HTTPCLI_DONE);
		CHECK(r.p.status_code == 200 && r.keep_alive == 1);
		CHECK(r.head.len == strlen(resp) - 5 &&
		      memcmp(r.head.data, resp, r.head.len) == 0);
		CHECK(r.body.len == 5 && memcmp(r.body.data, "hello", 5) == 0);
		CHECK(r.extra == 0);
		rt_httpcli_resp_free(&r);
	}
	/* Chunked, in pieces; LF line ends. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r,
		   "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\r\nabc",
		   1) == RT_HTTPCLI_MORE);
	CHECK(feed(&r, "\r\n2\r\nde\r\n0\r\n\r\n", 0) == RT_HTTPCLI_DONE);
	CHECK(r.body.len == 5 && memcmp(r.body.data, "abcde", 5) == 0);
	rt_httpcli_resp_free(&r);
	/* Interim responses are passed over: the head is the final one's. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r,
		   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 P\r\nX: 1\r\n\r\n"
		   "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
		   1) == RT_HTTPCLI_DONE);
	CHECK(r.p.status_code == 503);
	CHECK(r.head.len > 17 &&
	      memcmp(r.head.data, "HTTP/1.1 503 Busy", 17) == 0);
	rt_httpcli_resp_free(&r);
	/* Bytes after the response: the connection is not reused. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r, "HTTP/1.1 204 No\r\n\r\nHTTP/1.1", 0) ==
	      RT_HTTPCLI_DONE);
	CHECK(r.extra == 8 && r.body.len == 0);
	rt_httpcli_resp_free(&r);
	/* Connection: close. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r,
		   "HTTP/1.1 200 OK\r\nConnection: close\r\n"
		   "Content-Length: 1\r\n\r\nx",
		   0) == RT_HTTPCLI_DONE);
	CHECK(r.keep_alive == 0);
	rt_httpcli_resp_free(&r);
}

TEST(httpcli_reads_to_the_end_and_head)
{
	struct rt_httpcli_resp r;

	/* A body delimited by the end of the connection. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r, "HTTP/1.0 200 OK\r\n\r\nuntil", 1) == RT_HTTPCLI_MORE);
	CHECK(rt_httpcli_feed(&r, NULL, 0) == RT_HTTPCLI_DONE);
	CHECK(r.body.len == 5 && r.keep_alive == 0);
	rt_httpcli_resp_free(&r);
	/* HEAD: a Content-Length, no body. */
	rt_httpcli_resp_init(&r, 1);
	CHECK(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 0) ==
	      RT_HTTPCLI_DONE);
	CHECK(r.body.len == 0 && r.keep_alive == 1);
	rt_httpcli_resp_free(&r);
	/* Cut short: in the body, in the head, before anything. */
	rt_httpcli_resp_init(&r, 0);
	feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0);
	CHECK(rt_httpcli_feed(&r, NULL, 0) == RT_HTTPCLI_CUT);
	rt_httpcli_resp_free(&r);
	rt_httpcli_resp_init(&r, 0);
	feed(&r, "HTTP/1.1 200 OK\r\nContent-", 0);
	CHECK(rt_httpcli_feed(&r, NULL, 0) == RT_HTTPCLI_CUT);
	rt_httpcli_resp_free(&r);
	rt_httpcli_resp_init(&r, 0);
	CHECK(rt_httpcli_feed(&r, NULL, 0) == RT_HTTPCLI_CUT);
	/* Later calls change nothing. */
	CHECK(rt_httpcli_feed(&r, "HTTP/1.1 200 OK\r\n\r\n", 19) ==
	      RT_HTTPCLI_CUT);
	rt_httpcli_resp_free(&r);
}

TEST(httpcli_refuses_malformed_and_too_large)
{
	struct rt_httpcli_resp r;
	char *big;
	size_t n = RT_HTTPMSG_HEAD_MAX + 10;

	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r, "SSH-2.0-OpenSSH\r\n\r\n", 0) == RT_HTTPCLI_MALFORMED);
	rt_httpcli_resp_free(&r);
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0) ==
	      RT_HTTPCLI_MALFORMED);
	rt_httpcli_resp_free(&r);
	/* A head past RT_HTTPMSG_HEAD_MAX. */
	big = malloc(n + 1);
	CHECK(big != NULL);
	if (big != NULL) {
		memset(big, 'a', n);
		memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
		big[n] = '\0';
		rt_httpcli_resp_init(&r, 0);
		CHECK(feed(&r, big, 0) == RT_HTTPCLI_TOO_LARGE);
		rt_httpcli_resp_free(&r);
		free(big);
	}
	/* A body past the wire's bound. */
	rt_httpcli_resp_init(&r, 0);
	CHECK(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
		   0) == RT_HTTPCLI_MORE);
	big = calloc(1, 1 << 20);
	CHECK(big != NULL);
	for (n = 0; n < 17 && r.st == RT_HTTPCLI_MORE; n++)
		rt_httpcli_feed(&r, big, 1 << 20);
	CHECK(r.st == RT_HTTPCLI_TOO_LARGE);
	CHECK(r.body.len <= RT_WIRE_BODY_MAX);
	rt_httpcli_resp_free(&r);
	free(big);
}

TEST(httpmsg_result_ends_calls_as_the_worker)
{
	static const char head[] = "HTTP/1.1 503 Busy Now\r\nContent-Length: 4"
				   "\r\nConnection: keep-alive\r\n\r\n";
	struct rt_httpmsg_result r;
	char body[8];

	/* A 5xx: its body, last newlines dropped, and its status words. */
	memcpy(body, "oops\r\n", 6);
	rt_httpmsg_result(&r, 503, head, strlen(head), body, 6, 0, 0);
	CHECK_STR(r.status, "error");
	CHECK_STR(r.reason, "503 Busy Now");
	CHECK(r.len == 4 && memcmp(r.body, "oops", 4) == 0);
	rt_httpmsg_result_free(&r);
	/* A 5xx with no body: its words are the message. */
	rt_httpmsg_result(&r, 503, head, strlen(head), body, 0, 1, 0);
	CHECK(r.len == 12 && memcmp(r.body, "503 Busy Now", 12) == 0);
	rt_httpmsg_result_free(&r);
	/* A plain call: the body alone, a 4xx included. */
	memcpy(body, "nope", 4);
	rt_httpmsg_result(&r, 404, "HTTP/1.1 404 N\r\n\r\n", 18, body, 4, 0, 0);
	CHECK_STR(r.status, "ok");
	CHECK(r.reason == NULL && r.len == 4 && r.body == body);
	rt_httpmsg_result_free(&r);
	/* A message: the response in message form, Connection dropped. */
	rt_httpmsg_result(&r, 200, "HTTP/1.1 200 OK\r\nConnection: x\r\n\r\n",
			  35, body, 4, 1, 0);
	CHECK_STR(r.status, "ok");
	CHECK(r.len ==
	      strlen("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnope"));
	CHECK(memcmp(r.body, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnope",
		     r.len) == 0);
	rt_httpmsg_result_free(&r);
	/* A message whose head has no status line. */
	rt_httpmsg_result(&r, 200, "garbage", 7, body, 4, 1, 0);
	CHECK_STR(r.status, "error");
	CHECK_STR(r.reason, "malformed response");
	rt_httpmsg_result_free(&r);
}

/*
 * test_lambda.c - the Lambda runtime API's pure parts: requests read with
 * bounds (whole, in pieces, pipelined), routes, error documents,
 * responses and request ids.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../runtime/worker/lambda_api.h"
#include "unit.h"

/* Feeds all of `s` to `r`; returns the last result, `*taken` the bytes
 * taken in all. */
static int feed_all(struct rt_lambda_req *r, const char *s, size_t len,
		    size_t step, size_t *taken)
{
	size_t off = 0, used;
	int rc = 0;

	*taken = 0;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;

		rc = rt_lambda_req_feed(r, s + off, n, &used);
		off += used;
		*taken = off;
		if (rc != 0)
			return rc;
	}
	return rc;
}

TEST(lambda_req_next_keepalive)
{
	static const char get[] = "GET /2018-06-01/runtime/invocation/next "
				  "HTTP/1.1\r\nHost: 127.0.0.1:9001\r\n"
				  "User-Agent: curl/8\r\nAccept: */*\r\n\r\n";
	struct rt_lambda_req r;
	size_t taken;

	rt_lambda_req_init(&r, 100);
	CHECK(feed_all(&r, get, sizeof(get) - 1, 1 << 20, &taken) == 1);
	CHECK(taken == sizeof(get) - 1);
	CHECK(r.p.method == HTTP_GET);
	CHECK_STR(r.url.data, "/2018-06-01/runtime/invocation/next");
	CHECK(r.body.len == 0);
	CHECK(rt_lambda_req_keep_alive(&r));
	rt_lambda_req_free(&r);
}

TEST(lambda_req_bytewise_and_pipelined)
{
	static const char two[] =
		"POST /2018-06-01/runtime/invocation/abc/response HTTP/1.1\r\n"
		"Content-Length: 5\r\n\r\nhello"
		"POST /2018-06-01/runtime/invocation/abc/error HTTP/1.1\r\n"
		"lambda-runtime-function-error-type: My.Type\r\n"
		"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		"3\r\n{\"e\r\n2\r\n\"}\r\n0\r\n\r\n";
	struct rt_lambda_req r;
	size_t taken, used;
	int rc;

	rt_lambda_req_init(&r, 100);
	/* One byte at a time: the first request ends where it ends. */
	rc = feed_all(&r, two, sizeof(two) - 1, 1, &taken);
	CHECK(rc == 1);
	CHECK(r.p.method == HTTP_POST);
	CHECK_STR(r.url.data, "/2018-06-01/runtime/invocation/abc/response");
	CHECK_STR(r.body.data, "hello");
	CHECK(r.type[0] == '\0');
	CHECK(rt_lambda_req_keep_alive(&r));
	/* Fed again before rt_lambda_req_next: nothing is taken. */
	CHECK(rt_lambda_req_feed(&r, two + taken, 4, &used) == 1);
	CHECK(used == 0);
	rt_lambda_req_next(&r);
	CHECK(feed_all(&r, two + taken, sizeof(two) - 1 - taken, 1 << 20,
		       &used) == 1);
	CHECK(taken + used == sizeof(two) - 1);
	CHECK_STR(r.url.data, "/2018-06-01/runtime/invocation/abc/error");
	CHECK_STR(r.body.data, "{\"e\"}");
	CHECK_STR(r.type, "My.Type");
	CHECK(!rt_lambda_req_keep_alive(&r));
	rt_lambda_req_free(&r);
}

TEST(lambda_req_bounds)
{
	struct rt_lambda_req r;
	struct rt_buf big = { 0 };
	size_t taken;
	int i;

	/* A body over the bound: 413, the URL kept. */
	rt_lambda_req_init(&r, 10);
	rt_buf_puts(&big, "POST /2018-06-01/runtime/invocation/x/response "
			  "HTTP/1.1\r\nContent-Length: 11\r\n\r\n01234567890");
	CHECK(feed_all(&r, big.data, big.len, 7, &taken) == -EMSGSIZE);
	CHECK(r.too_large == 413);
	CHECK_STR(r.url.data, "/2018-06-01/runtime/invocation/x/response");
	rt_lambda_req_free(&r);
	/* Exactly at the bound: taken. */
	rt_lambda_req_init(&r, 11);
	CHECK(feed_all(&r, big.data, big.len, 1 << 20, &taken) == 1);
	CHECK(r.body.len == 11);
	rt_lambda_req_free(&r);
	/* Headers over the bound, in pieces: 431. */
	rt_buf_reset(&big);
	rt_buf_puts(&big,
		    "GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\n");
	for (i = 0; i < 400; i++)
		rt_buf_printf(&big, "X-Filler-%d: %064d\r\n", i, i);
	rt_buf_puts(&big, "\r\n");
	rt_lambda_req_init(&r, 10);
	CHECK(feed_all(&r, big.data, big.len, 1000, &taken) == -EMSGSIZE);
	CHECK(r.too_large == 431);
	rt_lambda_req_free(&r);
	rt_buf_free(&big);
}

TEST(lambda_req_malformed)
{
	static const char *const bad[] = {
		"HELLO\r\n\r\n",
		"GET / HTTP/9.9\r\n\r\n",
		"GET /x HTTP/1.1\r\nContent-Length: x\r\n\r\n",
		"GET /x HTTP/1.1\r\nBad Header\r\n\r\n",
		"\x01\x02\x03",
	};
	struct rt_lambda_req r;
	size_t i, taken;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rt_lambda_req_init(&r, 100);
		CHECK(feed_all(&r, bad[i], strlen(bad[i]), 1 << 20, &taken) ==
		      -EBADMSG);
		rt_lambda_req_free(&r);
	}
	/* Incomplete is not malformed. */
	rt_lambda_req_init(&r, 100);
	CHECK(feed_all(&r, "GET /2018-06-01/runtime/invo", 28, 1 << 20,
		       &taken) == 0);
	CHECK(taken == 28);
	rt_lambda_req_free(&r);
}

#define ROUTE(m, u) rt_lambda_route(m, u, strlen(u), id)

TEST(lambda_routes)
{
	char id[RT_LAMBDA_ID_MAX + 1], longid[200];

	CHECK(ROUTE(HTTP_GET, "/2018-06-01/runtime/invocation/next") ==
	      RT_LAMBDA_NEXT);
	CHECK(ROUTE(HTTP_GET, "/2018-06-01/runtime/invocation/next?x=1") ==
	      RT_LAMBDA_NEXT);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/next") ==
	      RT_LAMBDA_BAD_METHOD);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/a-1/response") ==
	      RT_LAMBDA_RESPONSE);
	CHECK_STR(id, "a-1");
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/b2/error") ==
	      RT_LAMBDA_ERROR);
	CHECK_STR(id, "b2");
	CHECK(ROUTE(HTTP_GET, "/2018-06-01/runtime/invocation/b2/error") ==
	      RT_LAMBDA_BAD_METHOD);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/init/error") ==
	      RT_LAMBDA_INIT_ERROR);
	CHECK(ROUTE(HTTP_PUT, "/2018-06-01/runtime/init/error") ==
	      RT_LAMBDA_BAD_METHOD);
	/* Not resources of the API. */
	CHECK(ROUTE(HTTP_GET, "/") == RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_GET, "/2018-06-01/runtime/invocation/nextx") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_GET, "/2020-01-01/runtime/invocation/next") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation//response") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/a/b/response") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/a/responses") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/invocation/a\x01/error") ==
	      RT_LAMBDA_NOT_FOUND);
	CHECK(ROUTE(HTTP_POST, "/2018-06-01/runtime/init/error/x") ==
	      RT_LAMBDA_NOT_FOUND);
	snprintf(longid, sizeof(longid),
		 "/2018-06-01/runtime/invocation/%065d/response", 7);
	CHECK(ROUTE(HTTP_POST, longid) == RT_LAMBDA_NOT_FOUND);
	snprintf(longid, sizeof(longid),
		 "/2018-06-01/runtime/invocation/%064d/response", 7);
	CHECK(ROUTE(HTTP_POST, longid) == RT_LAMBDA_RESPONSE);
	CHECK(strlen(id) == 64);
}

static void check_text(const char *body, const char *hdr, const char *want)
{
	struct rt_buf out = { 0 };

	CHECK(rt_lambda_error_text(body, body ? strlen(body) : 0, hdr, &out) ==
	      0);
	CHECK_STR(out.data, want);
	rt_buf_free(&out);
}

TEST(lambda_error_text)
{
	check_text(
		"{\"errorMessage\": \"boom\", \"errorType\": \"HandlerError\"}",
		NULL, "HandlerError: boom");
	check_text("{\"errorMessage\": \"boom\"}", "Hdr.Type",
		   "Hdr.Type: boom");
	check_text("{\"errorMessage\": \"boom\"}", "", "Unknown: boom");
	check_text("{\"errorType\": \"OnlyType\"}", NULL, "OnlyType");
	check_text("{\"errorMessage\": \"two\\nlines\\u0001\", \"errorType\": "
		   "\"T\", \"stackTrace\": []}",
		   NULL, "T: two lines ");
	check_text("plain words\nsecond line", "X", "X: plain words");
	check_text("[1, 2]", NULL, "Unknown: [1, 2]");
	check_text(NULL, NULL, "Unknown");
	check_text(NULL, "Only.Header", "Only.Header");
}

TEST(lambda_replies)
{
	struct rt_buf b = { 0 };

	CHECK(rt_lambda_reply(&b, 202, "application/json", NULL, "{}", 2, 1) ==
	      0);
	CHECK_STR(b.data, "HTTP/1.1 202 Accepted\r\nContent-Type: "
			  "application/json\r\nContent-Length: 2\r\n\r\n{}");
	rt_buf_reset(&b);
	CHECK(rt_lambda_reply(&b, 200, NULL, "A: b\r\n", "", 0, 0) == 0);
	CHECK_STR(b.data, "HTTP/1.1 200 OK\r\nA: b\r\nContent-Length: 0\r\n"
			  "Connection: close\r\n\r\n");
	rt_buf_reset(&b);
	CHECK(rt_lambda_reply_error(&b, 400, "InvalidRequestID", "no \"such\"",
				    1) == 0);
	CHECK(strstr(b.data, "HTTP/1.1 400 Bad Request\r\n") == b.data);
	CHECK(strstr(b.data, "\r\n\r\n{\"errorMessage\":\"no \\\"such\\\"\","
			     "\"errorType\":\"InvalidRequestID\"}") != NULL);
	rt_buf_free(&b);
}

TEST(lambda_request_ids)
{
	char a[RT_LAMBDA_REQID_LEN + 1], b[RT_LAMBDA_REQID_LEN + 1];
	char rid[RT_LAMBDA_ID_MAX + 1], url[128];
	struct rt_buf h = { 0 };
	size_t i;

	rt_lambda_request_id("acme/prod/fn/0", 1, 42, a);
	CHECK(strlen(a) == 36);
	for (i = 0; i < 36; i++)
		CHECK((i == 8 || i == 13 || i == 18 || i == 23)
			      ? a[i] == '-'
			      : strchr("0123456789abcdef", a[i]) != NULL);
	CHECK(strcmp(a + 8, "-0001-8000-8000-00000000002a") == 0);
	/* Another call, run or instance: another id. */
	rt_lambda_request_id("acme/prod/fn/0", 1, 43, b);
	CHECK(strcmp(a, b) != 0);
	rt_lambda_request_id("acme/prod/fn/0", 2, 42, b);
	CHECK(strcmp(a, b) != 0);
	rt_lambda_request_id("acme/prod/fn/1", 1, 42, b);
	CHECK(strcmp(a, b) != 0);
	rt_lambda_request_id("acme/prod/fn/0", 1, 1LL << 50, b);
	CHECK(strcmp(b + 13, "-8000-8004-000000000000") == 0);
	/* It routes back as itself. */
	snprintf(url, sizeof(url), "/2018-06-01/runtime/invocation/%s/response",
		 a);
	CHECK(rt_lambda_route(HTTP_POST, url, strlen(url), rid) ==
	      RT_LAMBDA_RESPONSE);
	CHECK_STR(rid, a);
	CHECK(rt_lambda_next_headers(&h, a, 1542409706888LL, "arn:x", 42) == 0);
	CHECK(strstr(h.data, "Lambda-Runtime-Deadline-Ms: 1542409706888\r\n") !=
	      NULL);
	CHECK(strstr(h.data,
		     "Lambda-Runtime-Invoked-Function-Arn: arn:x\r\n") != NULL);
	CHECK(strstr(h.data, "Lambda-Runtime-Trace-Id: Root=1-5bef4dea-") !=
	      NULL);
	rt_buf_free(&h);
}

TEST(lambda_req_upgrade_refused)
{
	static const char up[] = "GET /2018-06-01/runtime/invocation/next "
				 "HTTP/1.1\r\nConnection: Upgrade\r\n"
				 "Upgrade: websocket\r\n\r\n";
	struct rt_lambda_req r;
	size_t taken;

	rt_lambda_req_init(&r, 100);
	CHECK(feed_all(&r, up, sizeof(up) - 1, 1 << 20, &taken) == -EBADMSG);
	rt_lambda_req_free(&r);
}

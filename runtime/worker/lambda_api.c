/*
 * lambda_api.c - the pure parts of the Lambda runtime API (lambda_api.h):
 * requests read with bounds, routes, error documents, responses and
 * request ids.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lambda_api.h"

#define API_PREFIX     "/2018-06-01/runtime/"
#define ERROR_TEXT_MAX 1024 /* bytes of a body shown as an error's text */

/* ========================================================== requests */

static struct rt_lambda_req *req_of(http_parser *p)
{
	return p->data;
}

/* Counts `n` bytes of URL or headers; -1 (the parser stops) past the
 * bound. */
static int count_head(struct rt_lambda_req *r, size_t n)
{
	r->head += n;
	if (r->head > RT_LAMBDA_HEAD_MAX) {
		r->too_large = 431;
		return -1;
	}
	return 0;
}

static int on_begin(http_parser *p)
{
	struct rt_lambda_req *r = req_of(p);

	rt_buf_reset(&r->url);
	rt_buf_reset(&r->body);
	rt_buf_reset(&r->field);
	r->head = 0;
	r->type[0] = '\0';
	r->in_type = 0;
	r->last_was_value = 0;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct rt_lambda_req *r = req_of(p);

	if (count_head(r, n) < 0 || rt_buf_append(&r->url, at, n) < 0)
		return -1;
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct rt_lambda_req *r = req_of(p);

	if (count_head(r, n) < 0)
		return -1;
	if (r->last_was_value) {
		rt_buf_reset(&r->field);
		r->last_was_value = 0;
	}
	return rt_buf_append(&r->field, at, n) < 0 ? -1 : 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct rt_lambda_req *r = req_of(p);
	size_t have;

	if (count_head(r, n) < 0)
		return -1;
	if (!r->last_was_value) {
		/* The first piece of this header's value. */
		r->last_was_value = 1;
		r->in_type = r->field.len > 0 &&
			     strcasecmp(r->field.data,
					"Lambda-Runtime-Function-Error-Type") ==
				     0;
		if (r->in_type)
			r->type[0] = '\0';
	}
	if (!r->in_type)
		return 0;
	have = strlen(r->type);
	if (n > RT_LAMBDA_TYPE_MAX - have)
		n = RT_LAMBDA_TYPE_MAX - have; /* a longer type is cut */
	memcpy(r->type + have, at, n);
	r->type[have + n] = '\0';
	return 0;
}

/* Only HTTP/1.0 and 1.1: -1 stops the parser on another version. */
static int on_headers(http_parser *p)
{
	return p->http_major == 1 ? 0 : -1;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct rt_lambda_req *r = req_of(p);

	if (r->body.len + n > r->body_max) {
		r->too_large = 413;
		return -1;
	}
	return rt_buf_append(&r->body, at, n) < 0 ? -1 : 0;
}

static int on_complete(http_parser *p)
{
	struct rt_lambda_req *r = req_of(p);

	r->done = 1;
	http_parser_pause(p, 1); /* one request at a time */
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_begin,
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_headers,
	.on_body = on_body,
	.on_message_complete = on_complete,
};

void rt_lambda_req_init(struct rt_lambda_req *r, size_t body_max)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->p, HTTP_REQUEST);
	r->p.data = r;
	r->body_max = body_max;
}

void rt_lambda_req_next(struct rt_lambda_req *r)
{
	http_parser_pause(&r->p, 0);
	r->done = 0;
}

void rt_lambda_req_free(struct rt_lambda_req *r)
{
	rt_buf_free(&r->url);
	rt_buf_free(&r->body);
	rt_buf_free(&r->field);
}

int rt_lambda_req_feed(struct rt_lambda_req *r, const char *data, size_t len,
		       size_t *used)
{
	enum http_errno e;
	size_t n;

	*used = 0;
	if (r->done)
		return 1;
	if (len == 0)
		return 0;
	n = http_parser_execute(&r->p, &settings, data, len);
	e = HTTP_PARSER_ERRNO(&r->p);
	*used = n;
	if (r->p.upgrade)
		return -EBADMSG; /* an upgrade (or CONNECT) is no API request */
	if (r->done && (e == HPE_OK || e == HPE_PAUSED)) {
		/* The parser counts the byte it paused on as read: the
		 * request ends there. */
		return 1;
	}
	if (r->too_large)
		return -EMSGSIZE;
	if (e != HPE_OK)
		return -EBADMSG;
	return 0;
}

int rt_lambda_req_keep_alive(const struct rt_lambda_req *r)
{
	return http_should_keep_alive(&r->p);
}

/* ============================================================= routes */

enum rt_lambda_route rt_lambda_route(int method, const char *url, size_t len,
				     char id[RT_LAMBDA_ID_MAX + 1])
{
	static const char prefix[] = API_PREFIX "invocation/";
	const char *q = memchr(url, '?', len), *rest, *slash;
	size_t n, k, i;
	enum rt_lambda_route want;

	id[0] = '\0';
	n = q != NULL ? (size_t)(q - url) : len;
	if (n == sizeof(API_PREFIX) - 1 + strlen("init/error") &&
	    memcmp(url, API_PREFIX "init/error", n) == 0)
		return method == HTTP_POST ? RT_LAMBDA_INIT_ERROR
					   : RT_LAMBDA_BAD_METHOD;
	if (n < sizeof(prefix) - 1 || memcmp(url, prefix, sizeof(prefix) - 1))
		return RT_LAMBDA_NOT_FOUND;
	rest = url + sizeof(prefix) - 1;
	n -= sizeof(prefix) - 1;
	if (n == 4 && memcmp(rest, "next", 4) == 0)
		return method == HTTP_GET ? RT_LAMBDA_NEXT
					  : RT_LAMBDA_BAD_METHOD;
	slash = memchr(rest, '/', n);
	if (slash == NULL)
		return RT_LAMBDA_NOT_FOUND;
	k = (size_t)(slash - rest);
	if (n - k - 1 == 8 && memcmp(slash + 1, "response", 8) == 0)
		want = RT_LAMBDA_RESPONSE;
	else if (n - k - 1 == 5 && memcmp(slash + 1, "error", 5) == 0)
		want = RT_LAMBDA_ERROR;
	else
		return RT_LAMBDA_NOT_FOUND;
	if (k == 0 || k > RT_LAMBDA_ID_MAX)
		return RT_LAMBDA_NOT_FOUND;
	for (i = 0; i < k; i++)
		if (rest[i] <= ' ' || rest[i] > '~')
			return RT_LAMBDA_NOT_FOUND;
	if (method != HTTP_POST)
		return RT_LAMBDA_BAD_METHOD;
	memcpy(id, rest, k);
	id[k] = '\0';
	return want;
}

/* ============================================================= errors */

/* Appends `n` bytes of `s` with control bytes as spaces. */
static int put_clean(struct rt_buf *out, const char *s, size_t n)
{
	size_t i, start = out->len;

	if (rt_buf_append(out, s, n) < 0)
		return -ENOMEM;
	for (i = start; i < out->len; i++)
		if ((unsigned char)out->data[i] < 0x20 || out->data[i] == 0x7f)
			out->data[i] = ' ';
	return 0;
}

int rt_lambda_error_text(const char *body, size_t len, const char *header_type,
			 struct rt_buf *out)
{
	json_t *doc = NULL, *msg, *typ;
	const char *m = NULL, *t = NULL, *nl;
	size_t mlen = 0;
	int rc = 0;

	if (header_type != NULL && header_type[0] != '\0')
		t = header_type;
	if (len > 0)
		doc = json_loadb(body, len, 0, NULL);
	msg = json_object_get(doc, "errorMessage");
	typ = json_object_get(doc, "errorType");
	if (json_is_object(doc) &&
	    (json_is_string(msg) || json_is_string(typ))) {
		if (json_is_string(typ) && json_string_length(typ) > 0)
			t = json_string_value(typ);
		if (json_is_string(msg)) {
			m = json_string_value(msg);
			mlen = json_string_length(msg);
		}
	} else if (len > 0) {
		/* Not the documented document: its first line. */
		m = body;
		nl = memchr(body, '\n', len);
		mlen = nl != NULL ? (size_t)(nl - body) : len;
	}
	if (mlen > ERROR_TEXT_MAX)
		mlen = ERROR_TEXT_MAX;
	if (t == NULL)
		t = "Unknown";
	if (put_clean(out, t, strlen(t)) < 0 ||
	    (mlen > 0 &&
	     (rt_buf_puts(out, ": ") < 0 || put_clean(out, m, mlen) < 0)))
		rc = -ENOMEM;
	json_decref(doc);
	return rc;
}

/* ========================================================== responses */

static const char *reason_phrase(int code)
{
	switch (code) {
	case 200: return "OK";
	case 202: return "Accepted";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Payload Too Large";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	default: return "Unknown";
	}
}

int rt_lambda_reply(struct rt_buf *out, int code, const char *type,
		    const char *extra, const char *body, size_t len,
		    int keep_alive)
{
	if (rt_buf_printf(out, "HTTP/1.1 %d %s\r\n", code,
			  reason_phrase(code)) < 0 ||
	    (type != NULL &&
	     rt_buf_printf(out, "Content-Type: %s\r\n", type) < 0) ||
	    (extra != NULL && rt_buf_puts(out, extra) < 0) ||
	    rt_buf_printf(out, "Content-Length: %zu\r\n%s\r\n", len,
			  keep_alive ? "" : "Connection: close\r\n") < 0 ||
	    (len > 0 && rt_buf_append(out, body, len) < 0))
		return -ENOMEM;
	return 0;
}

int rt_lambda_reply_error(struct rt_buf *out, int code, const char *type,
			  const char *message, int keep_alive)
{
	json_t *o = json_pack("{s:s, s:s}", "errorMessage", message,
			      "errorType", type);
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	int rc = -ENOMEM;

	if (s != NULL)
		rc = rt_lambda_reply(out, code, "application/json", NULL, s,
				     strlen(s), keep_alive);
	free(s);
	json_decref(o);
	return rc;
}

/* ======================================================== request ids */

void rt_lambda_request_id(const char *instance, long long run, long long call,
			  char out[RT_LAMBDA_REQID_LEN + 1])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	const char *s;
	unsigned long long c = (unsigned long long)call;

	for (s = instance; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	snprintf(out, RT_LAMBDA_REQID_LEN + 1,
		 "%08" PRIx32 "-%04llx-8000-8%03llx-%012llx", h,
		 (unsigned long long)run & 0xffff, (c >> 48) & 0xfff,
		 c & 0xffffffffffffull);
}

int rt_lambda_next_headers(struct rt_buf *out, const char *reqid,
			   int64_t deadline_ms, const char *arn, long long call)
{
	/* An X-Ray-shaped trace header: version 1, the epoch seconds of
	 * the deadline, the call id; not sampled. */
	return rt_buf_printf(out,
			     "Lambda-Runtime-Aws-Request-Id: %s\r\n"
			     "Lambda-Runtime-Deadline-Ms: %" PRId64 "\r\n"
			     "Lambda-Runtime-Invoked-Function-Arn: %s\r\n"
			     "Lambda-Runtime-Trace-Id: "
			     "Root=1-%08llx-%024llx;Sampled=0\r\n",
			     reqid, deadline_ms, arn,
			     (unsigned long long)(deadline_ms / 1000) &
				     0xffffffffull,
			     (unsigned long long)call) < 0
		       ? -ENOMEM
		       : 0;
}

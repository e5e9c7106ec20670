/*
 * httpcli.c - the request bytes and the response reader of a call to an
 * `http` instance (httpcli.h).
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "httpcli.h"
#include "httpmsg.h"
#include "wire.h"

/* ============================================================ request */

/* Appends "Name: value" as libcurl sends a custom header: "Name:" alone
 * for an empty value. */
static int header(struct rt_buf *out, const char *name, const char *value)
{
	if (value[0] == '\0')
		return rt_buf_printf(out, "%s:\r\n", name);
	return rt_buf_printf(out, "%s: %s\r\n", name, value);
}

int rt_httpcli_request(const char *data, size_t len, const char *host,
		       const char *call_id, int64_t deadline_ms,
		       struct rt_buf *out, int *head_request,
		       struct rt_buf *why)
{
	struct rt_httpmsg msg = { 0 };
	const char *method = "POST", *target = "/", *body = data;
	int message = rt_httpmsg_is_request(data, len), own_host = 0, i;
	int has_body, rc = 0;
	char when[32];

	*head_request = 0;
	if (message) {
		rc = rt_httpmsg_parse(data, len, &msg, why);
		if (rc < 0)
			goto out;
		method = msg.method;
		target = msg.target;
		body = msg.body;
		len = msg.body_len;
		for (i = 0; i < msg.nheaders; i++)
			if (strcasecmp(msg.name[i], "Host") == 0)
				own_host = 1;
	}
	*head_request = strcmp(method, "HEAD") == 0;
	/* libcurl (CURLOPT_POSTFIELDS) sends a body, and its length, for
	 * these; HEAD has none (CURLOPT_NOBODY). */
	has_body = !*head_request &&
		   (len > 0 || strcmp(method, "POST") == 0 ||
		    strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0);
	rc = rt_buf_printf(out, "%s %s HTTP/1.1\r\n", method, target);
	if (rc == 0 && !own_host)
		rc = rt_buf_printf(out, "Host: %s\r\n", host);
	for (i = 0; rc == 0 && i < msg.nheaders; i++)
		if (!rt_httpmsg_hop_by_hop(msg.name[i]))
			rc = header(out, msg.name[i], msg.value[i]);
	rt_format_time(deadline_ms, when);
	if (rc == 0)
		rc = header(out, "Fn-Call-Id", call_id);
	if (rc == 0)
		rc = header(out, "Fn-Deadline", when);
	if (rc == 0 && has_body)
		rc = rt_buf_printf(out, "Content-Length: %zu\r\n", len);
	if (rc == 0)
		rc = rt_buf_append(out, "\r\n", 2);
	if (rc == 0 && has_body && len > 0)
		rc = rt_buf_append(out, body, len);
out:
	rt_httpmsg_free(&msg);
	return rc;
}

/* =========================================================== response */

static int on_headers_complete(http_parser *p)
{
	struct rt_httpcli_resp *r = p->data;

	/* 1: no body follows (http-parser cannot know for a HEAD). */
	return r->head_request && p->status_code >= 200 ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct rt_httpcli_resp *r = p->data;

	/* The bound of runtime/worker/http.c's write callback. */
	if (r->body.len + r->head.len + n > RT_WIRE_BODY_MAX ||
	    rt_buf_append(&r->body, at, n) < 0) {
		r->st = RT_HTTPCLI_TOO_LARGE;
		return -1;
	}
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct rt_httpcli_resp *r = p->data;

	r->complete = 1;
	r->keep_alive = http_should_keep_alive(p);
	http_parser_pause(p, 1); /* what follows is not this response's */
	return 0;
}

static const http_parser_settings settings = {
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void rt_httpcli_resp_init(struct rt_httpcli_resp *r, int head_request)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->p, HTTP_RESPONSE);
	r->p.data = r;
	r->head_request = head_request;
	r->st = RT_HTTPCLI_MORE;
}

void rt_httpcli_resp_free(struct rt_httpcli_resp *r)
{
	rt_buf_free(&r->head);
	rt_buf_free(&r->body);
}

/* Runs the parser over `n` bytes; returns how many it took, or -1 with
 * r->st set. */
static long run(struct rt_httpcli_resp *r, const char *data, size_t n)
{
	size_t took = http_parser_execute(&r->p, &settings, data, n);
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);

	if (e == HPE_PAUSED) {
		http_parser_pause(&r->p, 0);
		return (long)took;
	}
	if (e != HPE_OK) {
		if (r->st == RT_HTTPCLI_MORE)
			r->st = RT_HTTPCLI_MALFORMED;
		return -1;
	}
	return (long)took;
}

/* The head of a message is whole in r->head: parses it. A 1xx other than
 * 101 is passed over (the next message starts); else the body follows,
 * or the response is done. */
static void head_done(struct rt_httpcli_resp *r)
{
	long took = run(r, r->head.data, r->head.len);

	if (took < 0)
		return;
	if (r->complete && r->p.status_code / 100 == 1 &&
	    r->p.status_code != 101) {
		/* Interim: the final response comes next. */
		rt_buf_reset(&r->head);
		http_parser_init(&r->p, HTTP_RESPONSE);
		r->p.data = r;
		r->complete = 0;
		r->bol = 0;
		return;
	}
	if (r->complete)
		r->st = RT_HTTPCLI_DONE;
	else
		r->in_body = 1;
}

enum rt_httpcli_state rt_httpcli_feed(struct rt_httpcli_resp *r,
				      const char *data, size_t len)
{
	size_t i;
	int found;

	if (r->st != RT_HTTPCLI_MORE)
		return r->st;
	if (len == 0) {
		/* The end: a body delimited by it is whole now; anything
		 * else was cut short. */
		if (r->in_body)
			http_parser_execute(&r->p, &settings, NULL, 0);
		r->st = r->complete ? RT_HTTPCLI_DONE : RT_HTTPCLI_CUT;
		r->keep_alive = 0;
		return r->st;
	}
	r->received += len;
	while (len > 0 && r->st == RT_HTTPCLI_MORE) {
		if (r->in_body) {
			long took = run(r, data, len);

			if (took < 0)
				break;
			if (took == 0 && !r->complete) {
				r->st = RT_HTTPCLI_MALFORMED;
				break;
			}
			data += took;
			len -= (size_t)took;
			if (r->complete) {
				r->st = RT_HTTPCLI_DONE;
				break;
			}
			continue;
		}
		/* The head: up to its blank line, kept as received. Blank
		 * lines before a status line are skipped, as http-parser
		 * does. */
		if (r->head.len == 0)
			while (len > 0 && (*data == '\r' || *data == '\n')) {
				data++;
				len--;
			}
		found = 0;
		for (i = 0; i < len && !found; i++) {
			if (data[i] == '\n') {
				found = r->bol; /* a line of nothing: the end */
				r->bol = 1;
			} else if (data[i] != '\r' || !r->bol) {
				r->bol = 0;
			}
		}
		if (r->head.len + i > RT_HTTPMSG_HEAD_MAX ||
		    rt_buf_append(&r->head, data, i) < 0) {
			r->st = RT_HTTPCLI_TOO_LARGE;
			break;
		}
		data += i;
		len -= i;
		if (found)
			head_done(r);
	}
	if (r->st == RT_HTTPCLI_DONE && len > 0)
		r->extra += len;
	return r->st;
}

/*
 * httpmsg.h - the HTTP message form of a call to an `http` function
 * (docs/reference.md, "Calls: invoke"): a request written to `invoke` that
 * starts with a request line (`METHOD /target HTTP/1.1`) is an HTTP
 * request message, headers and a blank line before its body; its result
 * is the response in the same form. Pure functions over buffers, so that
 * they can be unit-tested and fuzzed; the parsing is Debian's http-parser
 * in HTTP_REQUEST mode. Shared by the controller (which refuses a
 * malformed message at the call's start) and the worker
 * (runtime/worker/http.c).
 */
#ifndef FNFS_RT_HTTPMSG_H
#define FNFS_RT_HTTPMSG_H

#include <stddef.h>

#include "rt.h"

#define RT_HTTPMSG_HEADERS_MAX 100 /* headers a request may have */
#define RT_HTTPMSG_HEAD_MAX                                                    \
	65536 /* bytes of its request line and                                 \
		 headers; also of a response's */

/* A parsed request message. Its strings are NUL-terminated, in `store`
 * (owned); the body points into the data given to the parser. */
struct rt_httpmsg {
	char method[24];			   /* "GET" */
	const char *target;			   /* "/path?query" */
	int minor;				   /* HTTP/1.minor */
	int nheaders;				   /* in order, as written */
	const char *name[RT_HTTPMSG_HEADERS_MAX];  /* "Content-Type" */
	const char *value[RT_HTTPMSG_HEADERS_MAX]; /* trimmed */
	const char *body;			   /* after the blank line */
	size_t body_len;
	struct rt_buf store;
};

/* Whether `data` (`len` bytes) is meant as a request message: its first
 * line is three words separated by single spaces, the first of capital
 * letters (a method), the last starting with "HTTP/". Everything else is
 * a plain body. Pure. */
int rt_httpmsg_is_request(const char *data, size_t len);

/* Parses request message `data` into `m` (released with
 * rt_httpmsg_free, also after a failure). Lines may end in CRLF or LF;
 * the blank line may be left out when no body follows. Refused with
 * -EINVAL and the reason appended to `why` (may be NULL): a method
 * http-parser does not know, a target that does not start with "/" or
 * holds a "#", a version other than HTTP/1.0 or 1.1, a malformed or
 * folded header line, more than RT_HTTPMSG_HEADERS_MAX headers or
 * RT_HTTPMSG_HEAD_MAX bytes of head, Transfer-Encoding, Upgrade, or a
 * Content-Length other than the body's length. -ENOMEM. Pure. */
int rt_httpmsg_parse(const char *data, size_t len, struct rt_httpmsg *m,
		     struct rt_buf *why);

/* Frees what `m` holds; it may be parsed into again. */
void rt_httpmsg_free(struct rt_httpmsg *m);

/* A call's payload for an http function: 0 when it is a plain body or a
 * well-formed message, else as rt_httpmsg_parse. Pure. */
int rt_httpmsg_check(const char *data, size_t len, struct rt_buf *why);

/* Whether header `name` is one fnfs sets itself on a request, so that
 * the caller's is dropped (Content-Length, which must match the body, and
 * Fn-Call-Id, Fn-Deadline) or refused (Transfer-Encoding). Pure. */
int rt_httpmsg_hop_by_hop(const char *name);

/* The call's status for a response of HTTP status `code`: "error" (the
 * function's error, EREMOTEIO for the caller) for 5xx, "ok" for every
 * other status (a 4xx is the function's answer to a request it refuses:
 * the call itself worked). Pure. */
const char *rt_httpmsg_status_word(long code);

/* Appends the response in message form to `out`: the status line and
 * headers of `head` (`head_len` bytes as received: status line, header
 * lines and the blank line, each ending in CRLF or LF; an interim 1xx
 * response before the final one is skipped), then a blank line, then
 * `body`. Transfer-Encoding, Connection and Keep-Alive are dropped (the
 * body is whole, the connection fnfs's); Content-Length is set to
 * `body_len`, except for a response to HEAD (`head_request`), which
 * keeps the server's. Lines end in CRLF. Returns 0, -EINVAL when `head`
 * has no status line, or -ENOMEM. Pure. */
int rt_httpmsg_response(const char *head, size_t head_len, const char *body,
			size_t body_len, int head_request, struct rt_buf *out);

/* How a call ends once the response to its request is whole: the call's
 * status, its reason and its result. */
struct rt_httpmsg_result {
	const char *status; /* "ok", "error" (a 5xx, or malformed), "failed" */
	const char *reason; /* NULL, a static string, or `words` */
	const char *body;   /* the result: into the inputs, or `out` */
	size_t len;
	char words[384];   /* a 5xx's status words: "503 Busy" */
	struct rt_buf out; /* the message form, owned */
};

/* Fills `r` for a response of status `code` whose head is `head` (as
 * received, rt_httpmsg_response) and body `body`, to a call that was a
 * request message (`message`: its result is the response in message
 * form) or a plain body (its result is the body), with `head_request`
 * for a HEAD: a 5xx is "error" with its body (a last newline dropped), or
 * its status words when it has none, as the message; a 4xx and the rest
 * are "ok". `body` may be modified (its last newlines). Free `r` with
 * rt_httpmsg_result_free. Pure. */
void rt_httpmsg_result(struct rt_httpmsg_result *r, long code, const char *head,
		       size_t head_len, char *body, size_t body_len,
		       int message, int head_request);

/* Frees what `r` holds. */
void rt_httpmsg_result_free(struct rt_httpmsg_result *r);

#endif

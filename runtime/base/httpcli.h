/*
 * httpcli.h - the client side of a call to an `http` instance, as pure
 * functions over buffers: the bytes of the request fnfs sends (the same
 * bytes the worker's libcurl client sends, runtime/worker/http.c) and an
 * incremental reader of the response (Debian's http-parser in
 * HTTP_RESPONSE mode under a head splitter of our own, so that the head is
 * kept as received). Used by the controller's direct calls
 * (sched/calls/direct.c), which own the connection; nothing here does I/O.
 */
#ifndef FNFS_RT_HTTPCLI_H
#define FNFS_RT_HTTPCLI_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* Appends to `out` the request of a call whose payload is `data` (`len`
 * bytes) to a server reached as `host` (the Host header: "127.0.0.1:PORT",
 * or "localhost" over a Unix socket): a plain body is `POST /` with it as
 * the body; a request message (rt_httpmsg_is_request) is sent with its
 * method, target, headers and body. Headers, in order: Host (unless the
 * caller gave one), the caller's but those fnfs sets
 * (rt_httpmsg_hop_by_hop), Fn-Call-Id: `call_id`, Fn-Deadline (RFC 3339,
 * UTC) of `deadline_ms`, then Content-Length for a body (always for POST,
 * PUT and PATCH; never for HEAD): what libcurl sends with the options of
 * runtime/worker/http.c. Sets `*head_request` when the method is HEAD (its
 * response has no body). Returns 0, -EINVAL for a malformed message (with
 * the reason appended to `why`, may be NULL) or -ENOMEM. Pure. */
int rt_httpcli_request(const char *data, size_t len, const char *host,
		       const char *call_id, int64_t deadline_ms,
		       struct rt_buf *out, int *head_request,
		       struct rt_buf *why);

/* Where a response read stands. */
enum rt_httpcli_state {
	RT_HTTPCLI_MORE,      /* give it more bytes (or the end) */
	RT_HTTPCLI_DONE,      /* the final response is whole */
	RT_HTTPCLI_MALFORMED, /* not HTTP/1.x the parser accepts */
	RT_HTTPCLI_TOO_LARGE, /* past RT_HTTPMSG_HEAD_MAX or the wire's bound */
	RT_HTTPCLI_CUT,	      /* the connection ended before the end */
};

/* One response being read. Released with rt_httpcli_resp_free. */
struct rt_httpcli_resp {
	http_parser p;
	int head_request;	  /* the request was HEAD: no body */
	enum rt_httpcli_state st; /* where it stands */
	int in_body;		  /* the final head is whole */
	int bol;		  /* head scan: at the start of a line */
	int complete;		  /* http-parser said message complete */
	int keep_alive;		  /* the connection may carry another */
	size_t received;	  /* bytes fed so far */
	size_t extra;		  /* bytes after the response: not reusable */
	struct rt_buf head;	  /* the final response's head as received */
	struct rt_buf body;	  /* its body, de-chunked */
};

/* Starts reading the response to a request (`head_request`: a HEAD). */
void rt_httpcli_resp_init(struct rt_httpcli_resp *r, int head_request);

/* Frees what `r` holds. */
void rt_httpcli_resp_free(struct rt_httpcli_resp *r);

/* Feeds `len` bytes read from the connection (`len` 0: the server ended
 * the connection). Interim 1xx responses are passed over; the head kept
 * is the final response's. Returns the new state (also in r->st); once
 * not RT_HTTPCLI_MORE, later calls change nothing. Pure. */
enum rt_httpcli_state rt_httpcli_feed(struct rt_httpcli_resp *r,
				      const char *data, size_t len);

#endif

/*
 * lambda_api.h - the pure parts of the AWS Lambda runtime API (version
 * 2018-06-01) that a worker serves to a hot function of format `lambda`
 * (lambda.c): reading a runtime's HTTP/1.1 requests with bounded sizes
 * (Debian's http-parser), routing them, reading the error documents a
 * runtime posts, writing the responses, and naming requests. Buffers in,
 * buffers out: unit-tested without a loop or a socket. Private to runtime/.
 */
#ifndef FNFS_RT_LAMBDA_API_H
#define FNFS_RT_LAMBDA_API_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/rt.h"

#define RT_LAMBDA_HEAD_MAX  16384 /* bytes of request line and headers */
#define RT_LAMBDA_ID_MAX    64	  /* bytes of a request id in a path */
#define RT_LAMBDA_TYPE_MAX  128	  /* bytes of an error type kept */
#define RT_LAMBDA_REQID_LEN 36	  /* a request id: a UUID's 36 characters */

/* One request being read from a runtime's connection. */
struct rt_lambda_req {
	http_parser p;
	size_t body_max;     /* bytes of body accepted */
	size_t head;	     /* bytes of URL and headers so far */
	struct rt_buf url;   /* the request target */
	struct rt_buf body;  /* its body so far */
	struct rt_buf field; /* the header name being read */
	int in_type;	     /* the value read is the error type's */
	int last_was_value;  /* the last header callback was a value */
	char type[RT_LAMBDA_TYPE_MAX + 1]; /* Lambda-Runtime-Function-
					      Error-Type, or "" */
	int done;			   /* a whole request was read */
	int too_large; /* 431 (head) or 413 (body): over a bound */
};

/* Prepares `r` for a connection's requests, `body_max` bytes of body at
 * most each. */
void rt_lambda_req_init(struct rt_lambda_req *r, size_t body_max);

/* Makes `r` ready for the next request on the same connection. */
void rt_lambda_req_next(struct rt_lambda_req *r);

/* Frees what `r` holds. */
void rt_lambda_req_free(struct rt_lambda_req *r);

/* Feeds `len` bytes of the connection to `r`; `*used` tells how many were
 * taken. Returns 0 (more is needed: all were taken), 1 (a request is
 * whole: bytes past it are not taken; read `r`, then rt_lambda_req_next),
 * -EMSGSIZE (over a bound: r->too_large is 431 or 413; the URL is kept
 * when it was read) or -EBADMSG (not HTTP/1.x). */
int rt_lambda_req_feed(struct rt_lambda_req *r, const char *data, size_t len,
		       size_t *used);

/* Whether the connection may carry another request after this one. */
int rt_lambda_req_keep_alive(const struct rt_lambda_req *r);

/* What a request asks for. */
enum rt_lambda_route {
	RT_LAMBDA_NOT_FOUND,  /* no such resource: 404 */
	RT_LAMBDA_BAD_METHOD, /* a resource, another method: 405 */
	RT_LAMBDA_NEXT,	      /* GET /runtime/invocation/next */
	RT_LAMBDA_RESPONSE,   /* POST /runtime/invocation/ID/response */
	RT_LAMBDA_ERROR,      /* POST /runtime/invocation/ID/error */
	RT_LAMBDA_INIT_ERROR, /* POST /runtime/init/error */
};

/* Routes request `method` (http_parser's) of `url` (`len` bytes; a query
 * string is ignored) under /2018-06-01. The id of an invocation path is
 * copied to `id` (RT_LAMBDA_ID_MAX + 1 bytes); an id that is empty,
 * longer, or not printable ASCII is RT_LAMBDA_NOT_FOUND. Pure. */
enum rt_lambda_route rt_lambda_route(int method, const char *url, size_t len,
				     char id[RT_LAMBDA_ID_MAX + 1]);

/* The text an error report becomes (the caller's message and the
 * function's `error`): "TYPE: MESSAGE" from a body {"errorMessage",
 * "errorType"} (either may be missing; a missing type is `header_type`,
 * the Lambda-Runtime-Function-Error-Type header, if not empty), or, for
 * a body that is not such a document, `header_type` (or "Unknown") and
 * the body's first line, at most 1024 bytes of it; control bytes become
 * spaces. Never empty. Returns 0 or -ENOMEM. Pure. */
int rt_lambda_error_text(const char *body, size_t len, const char *header_type,
			 struct rt_buf *out);

/* Appends an HTTP/1.1 response to `out`: status `code` (its reason
 * phrase is the standard one), Content-Type `type` (NULL: none), the
 * header lines `extra` ("Name: value\r\n" each, or NULL), Content-Length
 * and, unless `keep_alive`, "Connection: close"; then `len` bytes of
 * `body`. Returns 0 or -ENOMEM. Pure. */
int rt_lambda_reply(struct rt_buf *out, int code, const char *type,
		    const char *extra, const char *body, size_t len,
		    int keep_alive);

/* Appends the JSON error document AWS answers with ({"errorMessage",
 * "errorType"}) as a response of status `code`. Returns 0 or -ENOMEM. */
int rt_lambda_reply_error(struct rt_buf *out, int code, const char *type,
			  const char *message, int keep_alive);

/* The request id of call `call` on the `run`th process of instance
 * `instance` ("tenant/ns/fn/N"), UUID-shaped (decisions.md): 8 hex digits
 * of a hash of the instance, 4 of the run, "8000-8", 15 of the call id.
 * Unique per call as call ids are. Pure. */
void rt_lambda_request_id(const char *instance, long long run, long long call,
			  char out[RT_LAMBDA_REQID_LEN + 1]);

/* The header lines of a /next answer for call `call` with request id
 * `reqid`, deadline `deadline_ms` (epoch ms) and function ARN `arn`
 * appended to `out`. Returns 0 or -ENOMEM. Pure. */
int rt_lambda_next_headers(struct rt_buf *out, const char *reqid,
			   int64_t deadline_ms, const char *arn,
			   long long call);

#endif

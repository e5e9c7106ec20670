/*
 * http.h - calls to hot instances of format `http` (http.c): each call is
 * an HTTP/1.1 request to the instance's server, over its FN_LISTENER
 * socket when it exists, else to 127.0.0.1:PORT, sent with libcurl on the
 * worker's loop (curluv.h), whose connection cache keeps the connections
 * to each instance alive across calls. Private to runtime/.
 */
#ifndef FNFS_RT_HTTP_H
#define FNFS_RT_HTTP_H

#include <curl/curl.h>

#include "../base/httpmsg.h"
#include "worker.h"

/* Whether `in` is a hot instance of format http: its process takes its
 * calls over HTTP, not on stdin and stdout. */
int rt_http_is(const struct rt_instance *in);

/* Sends call `c` (not sent yet) to the server of its instance `c->in`;
 * the call ends, with rt_call_finish, when the response has come, the
 * transfer failed, or earlier (the deadline, the process gone:
 * rt_http_call_over). Never blocks. */
void rt_http_send(struct rt_call *c);

/* Call `c` is over: a transfer still under way for it is cancelled and
 * its state freed. A no-op for a call that has none. */
void rt_http_call_over(struct rt_call *c);

/* Closes the worker's HTTP client (NULL: none): at its exit, once every
 * call is over. */
void rt_http_close(struct rt_worker *w);

/* Builds the headers of a call's request for curl into `*out` (appended;
 * freed by the caller with curl_slist_free_all): the caller's, in the
 * order given, from `msg` (NULL for a plain body) but those fnfs sets
 * (rt_httpmsg_hop_by_hop); then "Name:" for each of Accept, Content-Type
 * and Expect the caller did not give, so that curl adds none of its own;
 * then Fn-Call-Id: `call_id` and Fn-Deadline (RFC 3339, UTC) of
 * `deadline_ms`. Returns 0 or -ENOMEM. Pure. */
int rt_http_headers(const struct rt_httpmsg *msg, const char *call_id,
		    int64_t deadline_ms, struct curl_slist **out);

/* How a finished transfer ends its call: curl's result `rc`, the HTTP
 * status `code` of its response (when rc is CURLE_OK), and whether the
 * write callback refused a response over RT_WIRE_BODY_MAX (`too_large`).
 * Returns the call's status ("ok", "error", "reset", "timeout",
 * "failed") and sets `*why` to a short static reason, or NULL. Pure. */
const char *rt_http_outcome(CURLcode rc, long code, int too_large,
			    const char **why);

#endif

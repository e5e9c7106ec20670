/*
 * ready.h - readiness of an instance's process (the spec's `ready`): the
 * pure parts of ready.c, which probes it on the worker's loop. The hooks
 * the supervisor and the formats call are in supervise.h. Private to
 * runtime/.
 */
#ifndef FNFS_RT_READY_H
#define FNFS_RT_READY_H

#include <http_parser.h>
#include <stddef.h>

#define RT_READY_NOTIFY_FD  3	 /* FN_NOTIFY_FD in the process */
#define RT_READY_RETRY_MS   50	 /* between two probes */
#define RT_READY_ATTEMPT_MS 1000 /* a probe with no answer is given up */
#define RT_READY_TIMEOUT_S  30	 /* ready_timeout when the spec has none */

enum rt_ready_kind {
	RT_READY_STARTED, /* its process runs */
	RT_READY_TCP,	  /* a connection to it is accepted */
	RT_READY_HTTP,	  /* a GET of a path answers 2xx */
	RT_READY_NOTIFY,  /* it writes a line to FN_NOTIFY_FD */
	RT_READY_LAMBDA	  /* its first /next (lambda.c says so) */
};

/* Reads a `ready` word: started, tcp, notify, lambda or http:/PATH
 * (`*path` then points at PATH's "/" inside `word`). NULL or "" is
 * started. Returns the kind, or -1 for anything else. */
int rt_ready_parse(const char *word, const char **path);

/* Builds the probe's request for `path` to `host` in `out` (n bytes).
 * Returns its length, or -1 when it does not fit. */
int rt_ready_request(const char *path, const char *host, char *out, size_t n);

/* The answer to an http probe, read as it comes. */
struct rt_ready_http {
	http_parser p;
	int status; /* once its head is read */
};

/* Starts reading an answer. */
void rt_ready_http_init(struct rt_ready_http *h);

/* Feeds `len` bytes of the answer (0 bytes: its end). Returns its status
 * once its head has been read (100 to 999; further bytes are not read),
 * 0 when more is needed, or -1 when it is no HTTP response (or ended
 * before its head). An informational 1xx head is passed over. */
int rt_ready_http_feed(struct rt_ready_http *h, const char *data, size_t len);

/* Whether an http probe's status makes the process ready: a 2xx. */
int rt_ready_http_ok(int status);

/* Whether `len` bytes written to FN_NOTIFY_FD hold a line's end. */
int rt_ready_notify_line(const char *data, size_t len);

#endif

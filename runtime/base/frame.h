/*
 * frame.h - how a hot function sees a call on its stdin and answers on
 * its stdout, in the `line` and `json` formats (spec 2). Pure: buffers in,
 * buffers out, so it is unit-tested and can be fuzzed.
 */
#ifndef FNFS_RT_FRAME_H
#define FNFS_RT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* Whether `body` may be sent in the format: `line` takes no newline,
 * `json` takes UTF-8 text (it becomes a JSON string). Returns 0 or
 * -EINVAL with the reason in `why` (may be NULL). */
int rt_frame_check(int json, const char *body, size_t len, struct rt_buf *why);

/* Appends the request of call `id` to `out`, ending in a newline: the
 * payload itself (line) or {"id","body","deadline_ms"} (json). Returns 0,
 * -EINVAL (see rt_frame_check) or -ENOMEM. */
int rt_frame_request(int json, const char *id, const char *body, size_t len,
		     int64_t deadline_ms, struct rt_buf *out);

/* Reads the response line `line` (`len` bytes, without its newline) to
 * call `id`. Returns 0 with the response in `out` (line: the line and a
 * newline; json: the "body" string's bytes) and `*user_error` 0, or 0 with
 * `*user_error` 1 and the function's message in `out` ({"error": ...}), or
 * 1 when it answers another call (a json id that is not `id`: ignored), or
 * -EPROTO with the reason in `out` when it is not a valid response. */
int rt_frame_response(int json, const char *id, const char *line, size_t len,
		      int *user_error, struct rt_buf *out);

/* Reads the "id" of json response line `line` (`len` bytes) into `id`
 * (`n` bytes, NUL-terminated). Returns 1 when it has a string id that
 * fits, 0 when it has none (or is not a JSON object: rt_frame_response
 * says why), -ERANGE when the id is too long to be any call's. */
int rt_frame_response_id(const char *line, size_t len, char *id, size_t n);

#endif

/*
 * wire.h - the protocol between the controller and its workers.
 *
 * A frame is a 4-byte big-endian length N, then N bytes of JSON header (a
 * jansson object with a string "type"), then the body: "body_len" bytes of
 * binary data given in the header (0 when absent). Call payloads travel in
 * the body, so they are bytes, not strings.
 *
 * The codec is pure (buffers in, messages out) so it is unit-tested and
 * can be fuzzed; a peer's garbage is a clean -EPROTO, never a crash.
 */
#ifndef FNFS_RT_WIRE_H
#define FNFS_RT_WIRE_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "rt.h"

#define RT_WIRE_HEADER_MAX (1u << 20)  /* bytes of JSON header */
#define RT_WIRE_BODY_MAX   (16u << 20) /* bytes of body */

/* One decoded message. */
struct rt_msg {
	json_t *header;	  /* owned reference; an object with a string "type" */
	const char *type; /* borrowed from header */
	char *body;	  /* owned copy, NUL-terminated, or NULL */
	size_t body_len;
};

/* Tries to decode one message from the front of `buf` (`len` bytes).
 * Returns 1 and fills `msg` and `*used` when a whole message is there, 0
 * when more bytes are needed, or -EPROTO (with the reason in `why` when not
 * NULL) when the bytes cannot be a valid frame. */
int rt_wire_decode(const char *buf, size_t len, struct rt_msg *msg,
		   size_t *used, struct rt_buf *why);

/* Frees what a decoded message owns. */
void rt_msg_free(struct rt_msg *msg);

/* Appends the frame of `header` (an object; "body_len" is set from
 * `body_len`) and the body to `out`. Returns 0, -EINVAL (no "type" or too
 * big) or -ENOMEM. */
int rt_wire_encode(struct rt_buf *out, json_t *header, const void *body,
		   size_t body_len);

/* Appends `n` bytes read from a peer to `in`, then decodes and hands
 * every whole message to `fn` (which returns non-zero to stop, e.g. when
 * the connection is being closed), keeping the rest for next time.
 * Returns 0, the first non-zero of `fn`, or -EPROTO/-ENOMEM with the
 * reason in `why`: the peer sent what cannot be a frame. */
int rt_wire_feed(struct rt_buf *in, const char *data, size_t n,
		 int (*fn)(const struct rt_msg *m, void *arg), void *arg,
		 struct rt_buf *why);

/* Encodes a message and queues it on `stream`. The header reference is
 * consumed. Returns 0 or -errno; a write that fails later shows up as a
 * read error on the same stream. */
int rt_wire_send(uv_stream_t *stream, json_t *header, const void *body,
		 size_t len);

/* A libuv alloc callback handing out one static 64 KiB buffer: the loop
 * is one thread, and every read is consumed before the next. */
void rt_read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Reads an integer field, or `dflt` if it is absent or not an integer. */
long long rt_msg_int(const struct rt_msg *m, const char *key, long long dflt);

/* Reads a string field, or NULL if absent or not a string. */
const char *rt_msg_str(const struct rt_msg *m, const char *key);

#endif

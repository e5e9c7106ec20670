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
 * reason in `why`: the peer sent what cannot be a frame. When `fn`
 * returns RT_WIRE_PAUSE, the messages after that one stay in `in` (fed
 * again with `n` = 0, they come first, in order). */
#define RT_WIRE_PAUSE 2
int rt_wire_feed(struct rt_buf *in, const char *data, size_t n,
		 int (*fn)(const struct rt_msg *m, void *arg), void *arg,
		 struct rt_buf *why);

/* Writes `len` bytes to `stream` after what is queued on it: at once
 * when they fit, else a copy is queued. Returns 0 or -errno; a write that
 * fails later shows up as a read error on the same stream. */
int rt_stream_write(uv_stream_t *stream, const void *data, size_t len);

/* Frames bound for the streams of one loop are gathered and written
 * together once per turn of the loop (after its I/O callbacks, and before
 * it waits again), as redis writes its replies before it sleeps: under
 * load, the calls dispatched in one turn reach a worker in one write and
 * wake it once. Both handles are unreferenced: they keep no loop alive. */
struct rt_wire_flusher {
	uv_check_t check;	  /* after the poll phase */
	uv_prepare_t prepare;	  /* before the next wait (after timers) */
	struct rt_wire_out *head; /* the outs that hold frames */
	int started;
};

/* Writes `len` bytes of frames to the transport: a hook for one that
 * transforms them first (TLS encrypts, then writes to the stream).
 * Returns 0 or -errno. */
typedef int (*rt_wire_write_fn)(void *arg, const void *data, size_t len);

/* The frames queued for one stream. */
struct rt_wire_out {
	struct rt_wire_flusher *f; /* NULL or stopped: frames go at once */
	uv_stream_t *stream;
	rt_wire_write_fn write; /* NULL: rt_stream_write to `stream` */
	void *write_arg;
	struct rt_buf pending;
	struct rt_wire_out *next, **pprev; /* in f's list while pending */
};

/* Starts `f` on `loop`. Returns 0 or a negative libuv error. */
int rt_wire_flusher_start(struct rt_wire_flusher *f, uv_loop_t *loop);

/* Writes every pending frame, then closes the handles of `f` (before the
 * loop is closed). Frames sent afterwards go out at once. */
void rt_wire_flusher_stop(struct rt_wire_flusher *f);

/* Sets up `o` for `stream`, batched by `f` (may be NULL). */
void rt_wire_out_init(struct rt_wire_out *o, struct rt_wire_flusher *f,
		      uv_stream_t *stream);

/* Makes `o` write through `fn(arg, ...)` (NULL: straight to its
 * stream), e.g. rt_tls_send. Frames already queued go the new way. */
void rt_wire_out_transport(struct rt_wire_out *o, rt_wire_write_fn fn,
			   void *arg);

/* Encodes a message into `o`'s batch; the header reference is consumed.
 * Returns 0 or -errno (-EINVAL, -ENOMEM, or a write error when the frame
 * goes at once). */
int rt_wire_out_send(struct rt_wire_out *o, json_t *header, const void *body,
		     size_t len);

/* Writes what `o` holds now. Returns 0 or -errno. */
int rt_wire_out_flush(struct rt_wire_out *o);

/* Writes what `o` holds, then forgets it: call before closing the
 * stream. */
void rt_wire_out_close(struct rt_wire_out *o);

/* A libuv alloc callback handing out one static 64 KiB buffer: the loop
 * is one thread, and every read is consumed before the next. */
void rt_read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Reads an integer field, or `dflt` if it is absent or not an integer. */
long long rt_msg_int(const struct rt_msg *m, const char *key, long long dflt);

/* Reads a string field, or NULL if absent or not a string. */
const char *rt_msg_str(const struct rt_msg *m, const char *key);

#endif

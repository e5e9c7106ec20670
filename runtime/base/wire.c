/*
 * wire.c - framing of controller <-> worker messages.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static int proto(struct rt_buf *why, const char *reason)
{
	if (why != NULL)
		rt_buf_puts(why, reason);
	return -EPROTO;
}

int rt_wire_decode(const char *buf, size_t len, struct rt_msg *msg,
		   size_t *used, struct rt_buf *why)
{
	const unsigned char *p = (const unsigned char *)buf;
	json_error_t jerr;
	json_t *h, *bl, *type;
	uint32_t hlen;
	long long blen;

	memset(msg, 0, sizeof(*msg));
	if (len < 4)
		return 0;
	hlen = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
	if (hlen < 2 || hlen > RT_WIRE_HEADER_MAX)
		return proto(why, "frame header length out of range");
	if (len - 4 < hlen)
		return 0;
	h = json_loadb(buf + 4, hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (h == NULL)
		return proto(why, "frame header is not JSON");
	type = json_object_get(h, "type");
	if (!json_is_object(h) || !json_is_string(type)) {
		json_decref(h);
		return proto(why, "frame header has no type");
	}
	bl = json_object_get(h, "body_len");
	blen = bl == NULL	     ? 0
	       : json_is_integer(bl) ? json_integer_value(bl)
				     : -1;
	if (blen < 0 || blen > (long long)RT_WIRE_BODY_MAX) {
		json_decref(h);
		return proto(why, "frame body length out of range");
	}
	if (len - 4 - hlen < (size_t)blen) {
		json_decref(h);
		return 0;
	}
	if (bl != NULL) {
		msg->body = malloc((size_t)blen + 1);
		if (msg->body == NULL) {
			json_decref(h);
			return -ENOMEM;
		}
		memcpy(msg->body, buf + 4 + hlen, (size_t)blen);
		msg->body[blen] = '\0';
		msg->body_len = (size_t)blen;
	}
	msg->header = h;
	msg->type = json_string_value(type);
	*used = 4 + hlen + (size_t)blen;
	assert(*used <= len && msg->type != NULL);
	return 1;
}

void rt_msg_free(struct rt_msg *msg)
{
	json_decref(msg->header);
	free(msg->body);
	memset(msg, 0, sizeof(*msg));
}

int rt_wire_encode(struct rt_buf *out, json_t *header, const void *body,
		   size_t body_len)
{
	size_t mark = out->len, room = 256, hlen;
	unsigned char *len;
	int rc;

	if (!json_is_string(json_object_get(header, "type")) ||
	    body_len > RT_WIRE_BODY_MAX)
		return -EINVAL;
	/* Always set: a header reused from an earlier message must not
	 * carry that message's body length. */
	if (body_len > 0 || body != NULL)
		json_object_set_new(header, "body_len",
				    json_integer((json_int_t)body_len));
	else
		json_object_del(header, "body_len");
	/* The header is dumped in place after its length, in one pass when
	 * it fits the room reserved (a call's or a result's always does). */
	for (;;) {
		rc = rt_buf_reserve(out, 4 + room);
		if (rc < 0)
			goto out;
		hlen = json_dumpb(header, out->data + mark + 4, room,
				  JSON_COMPACT);
		if (hlen == 0) {
			rc = -ENOMEM;
			goto out;
		}
		if (hlen <= room)
			break;
		if (hlen > RT_WIRE_HEADER_MAX) {
			rc = -EINVAL;
			goto out;
		}
		room = hlen;
	}
	/* Never a frame the decoder would refuse. */
	assert(hlen >= 2 && hlen <= RT_WIRE_HEADER_MAX);
	len = (unsigned char *)out->data + mark;
	len[0] = (unsigned char)(hlen >> 24);
	len[1] = (unsigned char)(hlen >> 16);
	len[2] = (unsigned char)(hlen >> 8);
	len[3] = (unsigned char)hlen;
	out->len = mark + 4 + hlen;
	out->data[out->len] = '\0';
	if (body_len > 0)
		rc = rt_buf_append(out, body, body_len);
	assert(rc < 0 || out->len == mark + 4 + hlen + body_len);
out:
	if (rc < 0) {
		out->len = mark;
		if (out->data)
			out->data[mark] = '\0';
	}
	return rc;
}

int rt_wire_feed(struct rt_buf *in, const char *data, size_t n,
		 int (*fn)(const struct rt_msg *m, void *arg), void *arg,
		 struct rt_buf *why)
{
	struct rt_msg m;
	size_t used, off = 0;
	int rc;

	if (rt_buf_append(in, data, n) < 0)
		return -ENOMEM;
	while ((rc = rt_wire_decode(in->data + off, in->len - off, &m, &used,
				    why)) == 1) {
		off += used;
		assert(off <= in->len);
		rc = fn(&m, arg);
		rt_msg_free(&m);
		if (rc == RT_WIRE_PAUSE)
			break;
		if (rc != 0)
			return rc;
	}
	if (rc < 0)
		return rc;
	if (off > 0) {
		memmove(in->data, in->data + off, in->len - off);
		in->len -= off;
	}
	return rc == RT_WIRE_PAUSE ? RT_WIRE_PAUSE : 0;
}

/* A queued write and its bytes. */
struct out_msg {
	uv_write_t req;
	struct rt_buf buf;
};

static void on_written(uv_write_t *req, int status)
{
	struct out_msg *m = (struct out_msg *)req;

	(void)status; /* the reader of the stream sees the failure */
	rt_buf_free(&m->buf);
	free(m);
}

int rt_stream_write(uv_stream_t *stream, const void *data, size_t len)
{
	uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
	struct out_msg *m = NULL;
	int n, rc = 0;

	/* Most writes fit the socket or pipe at once: no request, no copy,
	 * no callback. uv_try_write refuses (UV_EAGAIN) while earlier
	 * writes are queued, so the bytes keep their order. */
	n = uv_try_write(stream, &b, 1);
	if (n == (int)len)
		goto out;
	if (n < 0 && n != UV_EAGAIN) {
		rc = n;
		goto out;
	}
	if (n < 0)
		n = 0;
	assert((size_t)n < len); /* a part is left to queue */
	m = calloc(1, sizeof(*m));
	if (m == NULL || rt_buf_append(&m->buf, (const char *)data + n,
				       len - (size_t)n) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	b = uv_buf_init(m->buf.data, (unsigned)m->buf.len);
	rc = uv_write(&m->req, stream, &b, 1, on_written);
	if (rc == 0)
		m = NULL; /* on_written frees it */
out:
	if (m != NULL)
		rt_buf_free(&m->buf);
	free(m);
	return rc;
}

static void out_unlink(struct rt_wire_out *o)
{
	if (o->pprev == NULL)
		return;
	*o->pprev = o->next;
	if (o->next != NULL)
		o->next->pprev = o->pprev;
	o->next = NULL;
	o->pprev = NULL;
}

int rt_wire_out_flush(struct rt_wire_out *o)
{
	int rc = 0;

	out_unlink(o);
	if (o->pending.len > 0 && o->stream != NULL)
		rc = o->write ? o->write(o->write_arg, o->pending.data,
					 o->pending.len)
			      : rt_stream_write(o->stream, o->pending.data,
						o->pending.len);
	o->pending.len = 0;
	/* A larger body's room is not kept. Up to a code chunk's it is:
	 * the code pump flushes after each chunk, and a buffer allocated
	 * anew for each would be page-faulted in anew each time. */
	if (o->pending.cap > (512u << 10))
		rt_buf_free(&o->pending);
	return rc;
}

static void flush_all(struct rt_wire_flusher *f)
{
	while (f->head != NULL)
		rt_wire_out_flush(f->head);
}

static void on_check(uv_check_t *h)
{
	flush_all(h->data);
}

static void on_prepare(uv_prepare_t *h)
{
	flush_all(h->data);
}

int rt_wire_flusher_start(struct rt_wire_flusher *f, uv_loop_t *loop)
{
	int rc;

	memset(f, 0, sizeof(*f));
	rc = uv_check_init(loop, &f->check);
	if (rc < 0)
		goto out;
	rc = uv_prepare_init(loop, &f->prepare);
	if (rc < 0) {
		uv_close((uv_handle_t *)&f->check, NULL);
		goto out;
	}
	f->check.data = f;
	f->prepare.data = f;
	uv_check_start(&f->check, on_check);
	uv_prepare_start(&f->prepare, on_prepare);
	uv_unref((uv_handle_t *)&f->check);
	uv_unref((uv_handle_t *)&f->prepare);
	f->started = 1;
out:
	return rc;
}

void rt_wire_flusher_stop(struct rt_wire_flusher *f)
{
	if (!f->started)
		return;
	flush_all(f);
	f->started = 0;
	uv_close((uv_handle_t *)&f->check, NULL);
	uv_close((uv_handle_t *)&f->prepare, NULL);
}

void rt_wire_out_init(struct rt_wire_out *o, struct rt_wire_flusher *f,
		      uv_stream_t *stream)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->stream = stream;
}

void rt_wire_out_transport(struct rt_wire_out *o, rt_wire_write_fn fn,
			   void *arg)
{
	o->write = fn;
	o->write_arg = arg;
}

int rt_wire_out_send(struct rt_wire_out *o, json_t *header, const void *body,
		     size_t len)
{
	struct rt_wire_flusher *f = o->f;
	int rc = rt_wire_encode(&o->pending, header, body, len);

	json_decref(header);
	if (rc < 0)
		goto out;
	if (f == NULL || !f->started) {
		rc = rt_wire_out_flush(o);
		goto out;
	}
	if (o->pprev == NULL) {
		o->next = f->head;
		if (f->head != NULL)
			f->head->pprev = &o->next;
		f->head = o;
		o->pprev = &f->head;
	}
out:
	return rc;
}

void rt_wire_out_close(struct rt_wire_out *o)
{
	rt_wire_out_flush(o);
	rt_buf_free(&o->pending);
	o->stream = NULL;
}

void rt_read_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char chunk[65536];

	(void)h;
	(void)suggested;
	buf->base = chunk;
	buf->len = sizeof(chunk);
}

long long rt_msg_int(const struct rt_msg *m, const char *key, long long dflt)
{
	json_t *v = json_object_get(m->header, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

const char *rt_msg_str(const struct rt_msg *m, const char *key)
{
	json_t *v = json_object_get(m->header, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

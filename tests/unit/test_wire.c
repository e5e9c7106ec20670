/*
 * test_wire.c - the controller <-> worker frame codec: round trips, split
 * delivery, truncated and garbage frames; frames batched per loop turn
 * and writes that do not fit the socket at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../runtime/base/wire.h"
#include "unit.h"

static struct rt_buf frame_of(const char *type, const char *body, size_t n)
{
	struct rt_buf b = { 0 };
	json_t *h = json_pack("{s:s, s:i}", "type", type, "seq", 7);

	CHECK(rt_wire_encode(&b, h, body, n) == 0);
	json_decref(h);
	return b;
}

TEST(wire_roundtrip_with_binary_body)
{
	const char body[] = { 'a', '\0', '\n', (char)0xff, 'z' };
	struct rt_buf b = frame_of("call", body, sizeof(body));
	struct rt_msg m;
	size_t used = 0;

	CHECK(rt_wire_decode(b.data, b.len, &m, &used, NULL) == 1);
	CHECK(used == b.len);
	CHECK_STR(m.type, "call");
	CHECK(rt_msg_int(&m, "seq", -1) == 7);
	CHECK(rt_msg_int(&m, "missing", -1) == -1);
	CHECK(rt_msg_str(&m, "type") != NULL);
	CHECK(m.body_len == sizeof(body));
	CHECK(memcmp(m.body, body, sizeof(body)) == 0);
	rt_msg_free(&m);
	rt_buf_free(&b);
}

TEST(wire_every_prefix_needs_more)
{
	struct rt_buf b = frame_of("heartbeat", "xyz", 3);
	struct rt_msg m;
	size_t used, i;

	for (i = 0; i < b.len; i++)
		CHECK(rt_wire_decode(b.data, i, &m, &used, NULL) == 0);
	CHECK(rt_wire_decode(b.data, b.len, &m, &used, NULL) == 1);
	rt_msg_free(&m);
	rt_buf_free(&b);
}

TEST(wire_two_frames_in_one_buffer)
{
	struct rt_buf a = frame_of("one", NULL, 0), b = frame_of("two", "B", 1);
	struct rt_msg m;
	size_t used;

	rt_buf_append(&a, b.data, b.len);
	CHECK(rt_wire_decode(a.data, a.len, &m, &used, NULL) == 1);
	CHECK_STR(m.type, "one");
	CHECK(m.body == NULL);
	rt_msg_free(&m);
	CHECK(rt_wire_decode(a.data + used, a.len - used, &m, &used, NULL) ==
	      1);
	CHECK_STR(m.type, "two");
	rt_msg_free(&m);
	rt_buf_free(&a);
	rt_buf_free(&b);
}

/* Builds a raw frame: length prefix `hlen`, then `header` as given. */
static int decode_raw(unsigned hlen, const char *header, const char *tail)
{
	struct rt_buf b = { 0 }, why = { 0 };
	unsigned char l[4] = { (unsigned char)(hlen >> 24),
			       (unsigned char)(hlen >> 16),
			       (unsigned char)(hlen >> 8),
			       (unsigned char)hlen };
	struct rt_msg m;
	size_t used;
	int rc;

	rt_buf_append(&b, l, 4);
	rt_buf_puts(&b, header);
	rt_buf_puts(&b, tail);
	rc = rt_wire_decode(b.data, b.len, &m, &used, &why);
	if (rc < 0)
		CHECK(why.len > 0);
	if (rc == 1)
		rt_msg_free(&m);
	rt_buf_free(&b);
	rt_buf_free(&why);
	return rc;
}

TEST(wire_garbage_is_a_clean_error)
{
	CHECK(decode_raw(5, "hello", "") == -EPROTO);
	CHECK(decode_raw(2, "[]", "") == -EPROTO);
	CHECK(decode_raw(2, "{}", "") == -EPROTO);
	CHECK(decode_raw(10, "{\"type\":1}", "") == -EPROTO);
	CHECK(decode_raw(0, "", "") == -EPROTO);
	CHECK(decode_raw(0xffffffffu, "{", "") == -EPROTO);
	CHECK(decode_raw(26, "{\"type\":\"x\",\"body_len\":-1}", "") ==
	      -EPROTO);
	CHECK(decode_raw(27, "{\"type\":\"x\",\"body_len\":\"3\"}", "") ==
	      -EPROTO);
	CHECK(decode_raw(33, "{\"type\":\"x\",\"body_len\":999999999}", "") ==
	      -EPROTO);
	/* A header that is valid so far but promises a body: wait for it. */
	CHECK(decode_raw(25, "{\"type\":\"x\",\"body_len\":3}", "ab") == 0);
	CHECK(decode_raw(25, "{\"type\":\"x\",\"body_len\":3}", "abc") == 1);
}

TEST(wire_random_bytes_never_crash)
{
	char buf[512];
	struct rt_msg m;
	size_t used, i;
	int round, rc;

	srand(42);
	for (round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % (int)sizeof(buf));

		for (i = 0; i < n; i++)
			buf[i] = (char)(rand() & 0xff);
		if (n >= 4 && round % 2) {
			/* A plausible length, so the JSON parser is reached. */
			buf[0] = buf[1] = 0;
			buf[2] = (char)((n - 4) >> 8);
			buf[3] = (char)(n - 4);
		}
		rc = rt_wire_decode(buf, n, &m, &used, NULL);
		CHECK(rc == 0 || rc == -EPROTO || rc == 1);
		if (rc == 1) {
			CHECK(used <= n);
			rt_msg_free(&m);
		}
	}
}

TEST(wire_encode_refuses_typeless)
{
	struct rt_buf b = { 0 };
	json_t *h = json_object();

	CHECK(rt_wire_encode(&b, h, NULL, 0) == -EINVAL);
	CHECK(b.len == 0);
	json_decref(h);
}

TEST(wire_reused_header_has_no_stale_body)
{
	struct rt_buf a = { 0 }, b = { 0 };
	json_t *h = json_pack("{s:s}", "type", "x");
	struct rt_msg m;
	size_t used;

	CHECK(rt_wire_encode(&a, h, "abc", 3) == 0);
	CHECK(rt_wire_encode(&b, h, NULL, 0) == 0);
	CHECK(rt_wire_decode(b.data, b.len, &m, &used, NULL) == 1);
	CHECK(used == b.len && m.body == NULL);
	rt_msg_free(&m);
	json_decref(h);
	rt_buf_free(&a);
	rt_buf_free(&b);
}

TEST(wire_header_beyond_the_first_room)
{
	/* A header longer than the room first reserved is dumped again in
	 * a larger one, after what the buffer already holds. */
	struct rt_buf b = { 0 };
	char big[3000];
	json_t *h;
	struct rt_msg m;
	size_t used;

	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	h = json_pack("{s:s, s:s}", "type", "x", "big", big);
	CHECK(rt_buf_append(&b, "pre", 3) == 0);
	CHECK(rt_wire_encode(&b, h, "b", 1) == 0);
	CHECK(memcmp(b.data, "pre", 3) == 0);
	CHECK(rt_wire_decode(b.data + 3, b.len - 3, &m, &used, NULL) == 1);
	CHECK(used == b.len - 3);
	CHECK_STR(rt_msg_str(&m, "big"), big);
	CHECK(m.body_len == 1 && m.body[0] == 'b');
	rt_msg_free(&m);
	json_decref(h);
	rt_buf_free(&b);
}

/* Reads what is waiting on `fd` (non-blocking) into `in`. */
static void drain(int fd, struct rt_buf *in)
{
	char chunk[65536];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		CHECK(rt_buf_append(in, chunk, (size_t)n) == 0);
}

struct seen {
	long long seq[64];
	int n;
};

static int seen_cb(const struct rt_msg *m, void *arg)
{
	struct seen *s = arg;

	if (s->n < 64)
		s->seq[s->n++] = rt_msg_int(m, "seq", -1);
	return 0;
}

static void ignore_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)st;
	(void)n;
	(void)b;
}

TEST(wire_out_batches_frames_per_loop_turn)
{
	uv_loop_t loop;
	uv_pipe_t p;
	struct rt_wire_flusher f;
	struct rt_wire_out o;
	struct rt_buf in = { 0 }, got = { 0 };
	struct seen s = { { 0 }, 0 };
	int sv[2], i;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	CHECK(uv_loop_init(&loop) == 0);
	CHECK(uv_pipe_init(&loop, &p, 0) == 0);
	CHECK(uv_pipe_open(&p, sv[0]) == 0);
	CHECK(rt_wire_flusher_start(&f, &loop) == 0);
	rt_wire_out_init(&o, &f, (uv_stream_t *)&p);
	/* A reading stream keeps the loop alive for one turn. */
	CHECK(uv_read_start((uv_stream_t *)&p, rt_read_alloc, ignore_read) ==
	      0);
	for (i = 1; i <= 3; i++)
		CHECK(rt_wire_out_send(
			      &o,
			      json_pack("{s:s, s:i}", "type", "x", "seq", i),
			      NULL, 0) == 0);
	/* Nothing is written until the loop turns. */
	drain(sv[1], &got);
	CHECK(got.len == 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	drain(sv[1], &got);
	CHECK(rt_wire_feed(&in, got.data ? got.data : "", got.len, seen_cb, &s,
			   NULL) == 0);
	CHECK(s.n == 3 && s.seq[0] == 1 && s.seq[1] == 2 && s.seq[2] == 3);
	/* Closing the out writes what it holds. */
	CHECK(rt_wire_out_send(&o,
			       json_pack("{s:s, s:i}", "type", "x", "seq", 4),
			       NULL, 0) == 0);
	rt_wire_out_close(&o);
	got.len = 0;
	drain(sv[1], &got);
	CHECK(rt_wire_feed(&in, got.data ? got.data : "", got.len, seen_cb, &s,
			   NULL) == 0);
	CHECK(s.n == 4 && s.seq[3] == 4);
	/* Once the flusher is stopped, a frame goes at once. */
	rt_wire_flusher_stop(&f);
	rt_wire_out_init(&o, &f, (uv_stream_t *)&p);
	CHECK(rt_wire_out_send(&o,
			       json_pack("{s:s, s:i}", "type", "x", "seq", 5),
			       NULL, 0) == 0);
	got.len = 0;
	drain(sv[1], &got);
	CHECK(rt_wire_feed(&in, got.data ? got.data : "", got.len, seen_cb, &s,
			   NULL) == 0);
	CHECK(s.n == 5 && s.seq[4] == 5);
	rt_wire_out_close(&o);
	uv_close((uv_handle_t *)&p, NULL);
	/* The flusher's handles are closed: the loop ends and closes. */
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	close(sv[1]);
	rt_buf_free(&in);
	rt_buf_free(&got);
}

TEST(wire_stream_write_keeps_order_past_a_full_socket)
{
	/* More than the socket holds: the first part goes at once, the
	 * rest is queued, and a later write waits behind it. */
	uv_loop_t loop;
	uv_pipe_t p;
	struct rt_buf got = { 0 };
	size_t big = 4u << 20, i;
	char *a = malloc(big);
	int sv[2], spins;

	CHECK(a != NULL);
	for (i = 0; i < big; i++)
		a[i] = (char)('a' + i % 26);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	CHECK(uv_loop_init(&loop) == 0);
	CHECK(uv_pipe_init(&loop, &p, 0) == 0);
	CHECK(uv_pipe_open(&p, sv[0]) == 0);
	CHECK(rt_stream_write((uv_stream_t *)&p, a, big) == 0);
	CHECK(rt_stream_write((uv_stream_t *)&p, "END", 3) == 0);
	free(a); /* the queued part is a copy */
	for (spins = 0; spins < 100000 && got.len < big + 3; spins++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		drain(sv[1], &got);
	}
	CHECK(got.len == big + 3);
	for (i = 0; i < big && i < got.len; i++)
		if (got.data[i] != (char)('a' + i % 26))
			break;
	CHECK(i == big);
	CHECK(got.len == big + 3 && memcmp(got.data + big, "END", 3) == 0);
	uv_close((uv_handle_t *)&p, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	close(sv[1]);
	rt_buf_free(&got);
}

/* Counts the messages it is handed and pauses after each `every`-th. */
struct pause_ctx {
	int seen, every;
	char types[8][8];
};

static int pause_cb(const struct rt_msg *m, void *arg)
{
	struct pause_ctx *x = arg;

	if (x->seen < 8)
		snprintf(x->types[x->seen], sizeof(x->types[0]), "%s", m->type);
	x->seen++;
	return x->seen % x->every == 0 ? RT_WIRE_PAUSE : 0;
}

TEST(wire_feed_pause_keeps_the_rest_in_order)
{
	struct rt_buf in = { 0 }, all = frame_of("a", NULL, 0),
		      b = frame_of("b", "B", 1), c = frame_of("c", NULL, 0),
		      d = frame_of("d", "DD", 2);
	struct pause_ctx x = { 0, 2, { { 0 } } };
	size_t half;

	rt_buf_append(&all, b.data, b.len);
	rt_buf_append(&all, c.data, c.len);
	half = all.len;
	/* a, b: paused; c waits in `in`. */
	CHECK(rt_wire_feed(&in, all.data, all.len, pause_cb, &x, NULL) ==
	      RT_WIRE_PAUSE);
	CHECK(x.seen == 2);
	CHECK(in.len == c.len && memcmp(in.data, c.data, c.len) == 0);
	/* New bytes come after what was left: c, then d (paused again). */
	CHECK(rt_wire_feed(&in, d.data, d.len, pause_cb, &x, NULL) ==
	      RT_WIRE_PAUSE);
	CHECK(x.seen == 4 && in.len == 0);
	CHECK_STR(x.types[2], "c");
	CHECK_STR(x.types[3], "d");
	/* Nothing left: fed again with nothing, it returns 0. */
	CHECK(rt_wire_feed(&in, NULL, 0, pause_cb, &x, NULL) == 0);
	CHECK(x.seen == 4);
	/* A partial frame stays, and completes with the next bytes. */
	x.every = 100;
	CHECK(rt_wire_feed(&in, all.data, half - 1, pause_cb, &x, NULL) == 0);
	CHECK(x.seen == 6 && in.len == c.len - 1);
	CHECK(rt_wire_feed(&in, all.data + half - 1, 1, pause_cb, &x, NULL) ==
	      0);
	CHECK(x.seen == 7 && in.len == 0);
	CHECK_STR(x.types[6], "c");
	rt_buf_free(&in);
	rt_buf_free(&all);
	rt_buf_free(&b);
	rt_buf_free(&c);
	rt_buf_free(&d);
}

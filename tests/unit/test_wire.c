/*
 * test_wire.c - the controller <-> worker frame codec: round trips, split
 * delivery, truncated and garbage frames.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../runtime/wire.h"
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

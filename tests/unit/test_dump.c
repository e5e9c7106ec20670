/*
 * test_dump.c - the pure part of fnfs store export/import: base64
 * decoding, which must refuse anything that is not canonical padded
 * base64 (an import checks every object before writing any).
 */
#include <errno.h>
#include <stdlib.h>

#include "../../sched/dump.h"
#include "unit.h"

static int dec(const char *s, struct rt_buf *out)
{
	return sched_dump_base64_decode(s, strlen(s), out);
}

TEST(dump_base64_decodes)
{
	struct rt_buf b = { 0 };

	CHECK(dec("", &b) == 0 && b.len == 0);
	CHECK(dec("Zg==", &b) == 0 && b.len == 1 &&
	      memcmp(b.data, "f", 1) == 0);
	CHECK(dec("Zm8=", &b) == 0 && b.len == 2 &&
	      memcmp(b.data, "fo", 2) == 0);
	CHECK(dec("Zm9v", &b) == 0 && b.len == 3 &&
	      memcmp(b.data, "foo", 3) == 0);
	CHECK(dec("Zm9vYmFy", &b) == 0 && b.len == 6 &&
	      memcmp(b.data, "foobar", 6) == 0);
	CHECK(dec("AAEC/w==", &b) == 0 && b.len == 4 &&
	      memcmp(b.data, "\x00\x01\x02\xff", 4) == 0);
	rt_buf_free(&b);
}

TEST(dump_base64_refuses)
{
	static const char *const bad[] = {
		"Zg",	    /* unpadded */
		"Zg=",	    /* short */
		"Z===",	    /* three pads */
		"Zg==Zg==", /* padding inside */
		"Zm9v\n",   /* a line break */
		"Zm 9",	    /* a space */
		"Zm9-",	    /* url alphabet */
		"=Zm9",	    /* pad first */
	};
	struct rt_buf b = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(dec(bad[i], &b) == -EINVAL);
	rt_buf_free(&b);
}

/*
 * test_names.c - errno names in the journal: each errno by its own name,
 * never another (issue 10: an EFBIG was journalled as EIO).
 */
#include <errno.h>

#include "../../runtime/base/rt.h"
#include "unit.h"

TEST(errno_names_are_their_own)
{
	CHECK_STR(rt_errno_name(EFBIG), "EFBIG");
	CHECK_STR(rt_errno_name(ENOSPC), "ENOSPC");
	CHECK_STR(rt_errno_name(EIO), "EIO");
	CHECK_STR(rt_errno_name(ENOTCONN), "ENOTCONN");
	CHECK_STR(rt_errno_name(ENAMETOOLONG), "ENAMETOOLONG");
	CHECK_STR(rt_errno_name(99999), "EUNKNOWN");
}

TEST(utf8_chars)
{
	CHECK(rt_utf8_char("a", 1, NULL) == 1);
	CHECK(rt_utf8_char("\xc3\xa9", 2, NULL) == 2);
	CHECK(rt_utf8_char("\xc3\xa9", 1, NULL) == 0);	   /* cut */
	CHECK(rt_utf8_char("\xc0\xaf", 2, NULL) == 0);	   /* overlong */
	CHECK(rt_utf8_char("\xed\xa0\x80", 3, NULL) == 0); /* surrogate */
	CHECK(rt_utf8_char("\xf4\x90\x80\x80", 4, NULL) ==
	      0); /* past U+10FFFF */
	CHECK(rt_utf8_char("\xf0\x9f\x98\x80", 4, NULL) == 4);
	CHECK(rt_utf8_char("\xff", 1, NULL) == 0);
}

TEST(journal_values_stay_utf8)
{
	struct rt_buf b = { 0 };

	rt_buf_kv(&b, "name",
		  "a\xff"
		  "b\xc3\xa9"
		  "c\xc3");
	CHECK_STR(b.data, " name=\"a\\xffb\xc3\xa9"
			  "c\\xc3\"");
	rt_buf_free(&b);
}

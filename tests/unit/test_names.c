/*
 * test_names.c - errno names in the journal: each errno by its own name,
 * never another (issue 10: an EFBIG was journalled as EIO).
 */
#include <errno.h>

#include "../../runtime/rt.h"
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

/*
 * names.c - object names and errno names.
 */
#include <errno.h>
#include <string.h>

#include "rt.h"

int rt_name_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n < 1 || n > 63)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9');

		if (i == 0 && !alnum)
			return 0;
		if (!alnum && c != '.' && c != '_' && c != '-')
			return 0;
	}
	return 1;
}

const char *rt_errno_name(int err)
{
	switch (err) {
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EAGAIN: return "EAGAIN";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EREMOTEIO: return "EREMOTEIO";
	case ECONNRESET: return "ECONNRESET";
	case ENOSPC: return "ENOSPC";
	case EBUSY: return "EBUSY";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOMEM: return "ENOMEM";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	default: return "EIO";
	}
}

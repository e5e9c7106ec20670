/*
 * names.c - object names and errno names.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

void rt_close_fds(int keep)
{
	DIR *d;
	struct dirent *e;
	int fd, dfd;

#ifdef SYS_close_range
	if (keep < 3) {
		if (syscall(SYS_close_range, 3U, ~0U, 0) == 0)
			return;
	} else if ((keep == 3 ||
		    syscall(SYS_close_range, 3U, (unsigned)keep - 1, 0) == 0) &&
		   syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0) == 0) {
		return;
	}
#endif
	/* Older kernels: walk /proc/self/fd. */
	d = opendir("/proc/self/fd");
	if (d == NULL)
		return;
	dfd = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		fd = atoi(e->d_name);
		if (fd >= 3 && fd != keep && fd != dfd)
			close(fd);
	}
	closedir(d);
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
	case EFBIG: return "EFBIG";
	default: {
		/* Any other errno by its own name: the journal must name the
		 * errno the caller got, never another one. */
		const char *name = strerrorname_np(err);

		return name != NULL ? name : "EUNKNOWN";
	}
	}
}

size_t rt_utf8_char(const char *s, size_t n, unsigned *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k, i;
	unsigned c, min;

	if (n == 0)
		return 0;
	c = p[0];
	if (c < 0x80) {
		if (cp != NULL)
			*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if (n < k)
		return 0;
	for (i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp != NULL)
		*cp = c;
	return k;
}

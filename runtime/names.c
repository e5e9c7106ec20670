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

size_t rt_utf8_char(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned cp, min;
	size_t len, i;

	if (n == 0)
		return 0;
	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

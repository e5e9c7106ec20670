/*
 * proc.c - process figures from /proc (the cgroups are in cgroup.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "supervise.h"

int rt_proc_sample(pid_t pid, double *cpu_seconds, long long *rss_bytes)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	long long rss;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past the
	 * last ')'. Then fields 3.. follow; utime and stime are 14 and 15,
	 * rss is 24. */
	p = strrchr(buf, ')');
	if (p == NULL ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		   "%*d %*d %*d %*d %*d %*d %*u %*u %lld",
		   &utime, &stime, &rss) != 3)
		return -EIO;
	*cpu_seconds = (double)(utime + stime) /
		       (double)(tick > 0 ? tick : 100);
	*rss_bytes = rss * (page > 0 ? page : 4096);
	return 0;
}

/*
 * log.c - the process's diagnostic log: one line per message, to stderr or
 * to a file. This is for operators debugging fnfs itself; what users follow
 * is the `events` journal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"

static int log_fd = 2;				/* where lines go */
static enum rt_log_level log_min = RT_LOG_INFO; /* lines below are dropped */

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void rt_log(enum rt_log_level level, const char *fmt, ...)
{
	char line[1024], when[32];
	va_list ap;
	int n, m;

	if (level < log_min)
		return;
	rt_format_time(rt_now_ms(), when);
	n = snprintf(line, sizeof(line), "%s fnfs[%d] %s: ", when,
		     (int)getpid(), level_names[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write(2) per line keeps lines whole; a short write is lost. */
	if (write(log_fd, line, (size_t)n) < 0)
		return;
}

int rt_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	/* A log may say what an operator alone should read. */
	if (fchmod(fd, 0600) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	if (log_fd > 2)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void rt_log_set_level(enum rt_log_level level)
{
	log_min = level;
}

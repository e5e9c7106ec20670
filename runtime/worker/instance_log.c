/*
 * instance_log.c - an instance's log: what its runs print, "N: " lines
 * in a file of the worker's log directory, rotated past RT_LOG_MAX
 * bytes with RT_LOG_KEEP old files kept, and its tail for readers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/rt.h"
#include "supervise_int.h"

static void log_open(struct rt_instance *in)
{
	struct stat st;

	if (in->log_fd >= 0 || in->log_path == NULL)
		return;
	in->log_fd = open(in->log_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	in->log_size = in->log_fd >= 0 && fstat(in->log_fd, &st) == 0
			       ? (size_t)st.st_size
			       : 0;
}

/* Shifts log -> log.1 -> log.2 ... keeping RT_LOG_KEEP old files. */
static void log_rotate(struct rt_instance *in)
{
	char from[4200], to[4200];
	int i;

	if (in->log_fd >= 0)
		close(in->log_fd);
	in->log_fd = -1;
	for (i = RT_LOG_KEEP; i >= 1; i--) {
		snprintf(to, sizeof(to), "%s.%d", in->log_path, i);
		if (i == 1)
			snprintf(from, sizeof(from), "%s", in->log_path);
		else
			snprintf(from, sizeof(from), "%s.%d", in->log_path,
				 i - 1);
		rename(from, to);
	}
	log_open(in);
}

/* Appends process output to the log. The file is in the page cache; an
 * append does not wait for the disk. */
void rt_log_write(struct rt_instance *in, const char *p, size_t n)
{
	ssize_t w;

	log_open(in);
	if (in->log_fd < 0)
		return;
	if (in->log_size + n > RT_LOG_ROTATE_BYTES && in->log_size > 0)
		log_rotate(in);
	if (in->log_fd < 0)
		return;
	w = write(in->log_fd, p, n);
	if (w > 0)
		in->log_size += (size_t)w;
}

/* Appends the last `max` bytes of `path` (all of it if smaller) to `out`;
 * returns how many were appended. */
static size_t tail_file(const char *path, size_t max, struct rt_buf *out)
{
	struct stat st;
	size_t start, n;
	char *buf;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	n = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	start = (size_t)st.st_size - n;
	buf = malloc(n + 1);
	r = buf ? pread(fd, buf, n, (off_t)start) : -1;
	if (r > 0)
		rt_buf_append(out, buf, (size_t)r);
	free(buf);
	close(fd);
	return r > 0 ? (size_t)r : 0;
}

/* The tail of log file `path` and of its last rotated one. */
static int log_tail(const char *path, size_t max, struct rt_buf *out)
{
	struct rt_buf cur = { 0 }, older = { 0 };
	char old[4200];
	const char *p;
	size_t got;

	got = tail_file(path, max, &cur);
	if (got < max) {
		snprintf(old, sizeof(old), "%s.1", path);
		tail_file(old, max - got, &older);
	}
	rt_buf_append(out, older.data, older.len);
	rt_buf_append(out, cur.data, cur.len);
	rt_buf_free(&cur);
	rt_buf_free(&older);
	/* Start at a line boundary when the tail cut a line. */
	if (out->len > 0 && out->len >= max) {
		p = memchr(out->data, '\n', out->len);
		if (p != NULL && (size_t)(p - out->data) + 1 < out->len) {
			size_t cut = (size_t)(p - out->data) + 1;

			memmove(out->data, out->data + cut, out->len - cut);
			out->len -= cut;
			out->data[out->len] = '\0';
		}
	}
	return 0;
}

/* The log file of instance `id` in `dir`: DIR/tenant:ns:fn:N.log (one
 * name: its slashes become colons), or NULL for want of memory. */
char *rt__log_file(const char *dir, const char *id)
{
	struct rt_buf path = { 0 };
	size_t i;

	if (rt_buf_printf(&path, "%s/%s.log", dir, id) < 0)
		return NULL;
	for (i = strlen(dir) + 1; i < path.len; i++)
		if (path.data[i] == '/')
			path.data[i] = ':';
	return path.data;
}

int rt_instance_log_tail(struct rt_instance *in, size_t max, struct rt_buf *out)
{
	if (in->log_path == NULL)
		return 0;
	return log_tail(in->log_path, max, out);
}

int rt_sup_log_tail(struct rt_sup *s, const char *id, size_t max,
		    struct rt_buf *out)
{
	char *path;
	int rc = 0;

	if (s->log_dir == NULL || id == NULL || strchr(id, '/') == NULL)
		return -ENOENT;
	path = rt__log_file(s->log_dir, id);
	if (path == NULL)
		return -ENOMEM;
	if (access(path, F_OK) < 0)
		rc = -ENOENT;
	else
		rc = log_tail(path, max, out);
	free(path);
	return rc;
}

/*
 * mnttable.c - the worker's mount table, read again only when it changed
 * (mnttable.h). One descriptor of /proc/self/mountinfo is kept open: a
 * poll on it says POLLPRI once the namespace's mounts changed since the
 * last poll, and the table is then read again from its start. Snapshots
 * are counted: a reader on the loop and an open on a thread of the pool
 * may hold different ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mnttable.h"
#include "sandbox.h" /* rt_mountinfo_split */

unsigned long rt_mnt_table_reads;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_mnt_table *now; /* the newest, or NULL */
static int fd = -1;		 /* /proc/self/mountinfo, kept for poll */
static pid_t fd_pid;		 /* whose (a forked child opens its own) */
static int stale;		 /* a read failed: read at the next get */

static void table_free(struct rt_mnt_table *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->m[i].point);
		free(t->m[i].type);
	}
	free(t->m);
	free(t);
}

/* Adds the mount that `line` (one line, its end cut) describes. */
static int add_line(struct rt_mnt_table *t, char *line, size_t *cap)
{
	const char *type;
	unsigned long long id;
	char *point = rt_mountinfo_split(line, &type, &id, NULL);
	struct rt_mnt *m;

	if (point == NULL)
		return 0;
	if (t->n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;

		m = realloc(t->m, c * sizeof(*m));
		if (m == NULL)
			return -ENOMEM;
		t->m = m;
		*cap = c;
	}
	m = &t->m[t->n];
	m->id = id;
	m->point = strdup(point);
	m->type = strdup(type);
	t->n++;
	return m->point == NULL || m->type == NULL ? -ENOMEM : 0;
}

/* Reads the whole table from `fd`'s start into a new snapshot. */
static int read_all(struct rt_mnt_table **out)
{
	struct rt_mnt_table *t = calloc(1, sizeof(*t));
	char *buf = NULL, *p, *nl;
	size_t len = 0, size = 0, cap = 0;
	ssize_t got;
	int rc = 0;

	*out = NULL;
	if (t == NULL)
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		if (size - len < 4096) {
			char *b = realloc(buf, size ? size * 2 : 16384);

			if (b == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			buf = b;
			size = size ? size * 2 : 16384;
		}
		got = read(fd, buf + len, size - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	buf[len] = '\0';
	for (p = buf; rc == 0 && *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			break; /* the kernel ends every line */
		*nl = '\0';
		rc = add_line(t, p, &cap);
	}
	rt_mnt_table_reads++;
out:
	free(buf);
	if (rc < 0)
		table_free(t);
	else
		*out = t;
	return rc;
}

/* Whether the table changed since the last poll (or cannot be told). */
static int changed(void)
{
	struct pollfd p = { fd, POLLPRI, 0 };

	if (poll(&p, 1, 0) < 0)
		return 1;
	return (p.revents & (POLLPRI | POLLERR | POLLNVAL)) != 0;
}

struct rt_mnt_table *rt_mnt_table_get(int fresh)
{
	struct rt_mnt_table *t = NULL;
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (fd >= 0 && fd_pid != getpid()) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			goto out;
		}
		fd_pid = getpid();
		fresh = 1;
	}
	/* The poll first: a change after it shows at the next one. */
	if (changed() || fresh || stale || now == NULL) {
		rc = read_all(&t);
		stale = rc < 0;
		if (rc < 0)
			goto out;
		t->refs = 1; /* the module's */
		if (now != NULL && --now->refs == 0)
			table_free(now);
		now = t;
	}
	t = now;
	t->refs++;
out:
	pthread_mutex_unlock(&lock);
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? NULL : t;
}

void rt_mnt_table_put(struct rt_mnt_table *t)
{
	int last;

	if (t == NULL)
		return;
	pthread_mutex_lock(&lock);
	last = --t->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last)
		table_free(t);
}

const char *rt_mnt_table_type(const struct rt_mnt_table *t,
			      unsigned long long id)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->m[i].id == id)
			return t->m[i].type;
	return NULL;
}

/*
 * private.c - the data directory kept private (modes fixed on a whole
 * tree, whatever the umask and whatever was there before), and a
 * process's identity (pid and start time) read from /proc.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "private.h"

/* The first failure of the walk in progress (nftw has no argument). */
static int tree_rc;

static int fix_mode(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	mode_t want;

	(void)ftw;
	if (flag == FTW_SL || flag == FTW_SLN || flag == FTW_NS)
		return 0; /* a link is not followed; unknown is left */
	want = S_ISDIR(st->st_mode) ? RT_PRIVATE_DIR_MODE
				    : RT_PRIVATE_FILE_MODE;
	if ((st->st_mode & 07777) != want && chmod(path, want) < 0 &&
	    tree_rc == 0)
		tree_rc = -errno;
	return 0;
}

int rt_private_tree(const char *dir)
{
	int rc;

	tree_rc = 0;
	/* The top first: below it nothing is reachable by others from
	 * then on. */
	if (chmod(dir, RT_PRIVATE_DIR_MODE) < 0)
		tree_rc = -errno;
	rc = nftw(dir, fix_mode, 16, FTW_PHYS | FTW_MOUNT);
	if (rc < 0 && tree_rc == 0)
		tree_rc = -errno;
	return tree_rc;
}

int rt_parse_proc_stat(const char *text, size_t len, char *state,
		       unsigned long long *start)
{
	const char *p = NULL, *end = text + len;
	char *e;
	int field;
	size_t i;

	for (i = len; i > 0; i--)
		if (text[i - 1] == ')') {
			p = text + i;
			break;
		}
	if (p == NULL || p + 3 > end || p[0] != ' ')
		return -EINVAL;
	*state = p[1];
	/* Field 3 is the state; the start time is field 22. */
	for (field = 3; field < 22; field++) {
		p = memchr(p + 1, ' ', (size_t)(end - p - 1));
		if (p == NULL || p + 1 >= end)
			return -EINVAL;
	}
	if (p[1] < '0' || p[1] > '9')
		return -EINVAL;
	errno = 0;
	*start = strtoull(p + 1, &e, 10);
	if (errno != 0 || (e < end && *e != ' ' && *e != '\n'))
		return -EINVAL;
	return 0;
}

int rt_proc_id_of(pid_t pid, struct rt_proc_id *id)
{
	char path[64], text[1024], state = 0;
	ssize_t n;
	int fd, rc = 0;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0)
		rc = errno == ESRCH ? -ESRCH : -errno;
	close(fd);
	if (rc == 0) {
		text[n] = '\0';
		rc = rt_parse_proc_stat(text, (size_t)n, &state, &id->start);
	}
	if (rc == 0 && (state == 'Z' || state == 'X'))
		rc = -ESRCH;
	if (rc == 0)
		id->pid = pid;
	return rc;
}

int rt_proc_alive(const struct rt_proc_id *id)
{
	struct rt_proc_id now;

	return rt_proc_id_of(id->pid, &now) == 0 && now.start == id->start;
}

void rt_proc_id_format(const struct rt_proc_id *id, char *out, size_t n)
{
	snprintf(out, n, "%d %llu", (int)id->pid, id->start);
}

int rt_proc_id_parse(const char *s, struct rt_proc_id *id)
{
	int pid, used = 0;
	unsigned long long start;

	if (sscanf(s, "%d %llu%n", &pid, &start, &used) != 2 || pid <= 0 ||
	    s[used] != '\0')
		return -EINVAL;
	id->pid = pid;
	id->start = start;
	return 0;
}

/*
 * proc.c - process figures from /proc, and memory cgroups (v1 or v2) for
 * instance memory limits: each worker has a root group named after its id
 * and its controller (fnfs-HASH-ID), with one group per spawn inside.
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

/* Writes `text` to the file `dir/name`. Returns 0 or -errno. */
static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	int fd, rc = 0;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = -errno;
	close(fd);
	return rc;
}

/* This process's cgroup path in hierarchy `controller` ("memory"), or in
 * the unified hierarchy when `controller` is "". */
static int own_cgroup(const char *controller, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	int found = -ENOENT;

	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c1 = strchr(line, ':'), *c2;

		if (c1 == NULL || (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c2 = '\0';
		if (strcmp(c1 + 1, controller) != 0)
			continue;
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		snprintf(out, n, "%s", c2 + 1);
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* Writes the path of the root group of worker `worker_id` of the
 * controller `key` into `dir` (whether it exists or not). Returns 0, or
 * -ENOENT when there is no memory hierarchy. */
static int root_path(const char *worker_id, const char *key, char *dir,
		     size_t n)
{
	char own[2048];
	struct stat st;
	/* The id alone is not unique on a host (every pool has a local-1):
	 * the controller's socket path is part of the name. */
	uint64_t h = 1469598103934665603ULL;
	const char *k;

	for (k = key; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	/* cgroup v1 with a memory hierarchy, else v2 with memory enabled. */
	if (own_cgroup("memory", own, sizeof(own)) == 0 &&
	    stat("/sys/fs/cgroup/memory", &st) == 0)
		snprintf(dir, n, "/sys/fs/cgroup/memory%s/fnfs-%08x-%s",
			 strcmp(own, "/") == 0 ? "" : own, (unsigned)h,
			 worker_id);
	else if (own_cgroup("", own, sizeof(own)) == 0 &&
		 stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
		snprintf(dir, n, "/sys/fs/cgroup%s/fnfs-%08x-%s",
			 strcmp(own, "/") == 0 ? "" : own, (unsigned)h,
			 worker_id);
	else
		return -ENOENT;
	return 0;
}

/* Whether group `dir` has no member (a group that cannot be read counts
 * as busy). */
static int group_empty(const char *dir)
{
	char path[4200], line[32];
	FILE *f;
	int empty;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT;
	empty = fgets(line, sizeof(line), f) == NULL;
	fclose(f);
	return empty;
}

void rt_sup_sweep(struct rt_sup *s)
{
	DIR *d;
	struct dirent *e;
	char path[4600];

	if (s->cgroup_root == NULL || (d = opendir(s->cgroup_root)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char *dir;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->cgroup_root,
			 e->d_name);
		if (!group_empty(path))
			rt_log(RT_LOG_WARN,
			       "killing what an earlier worker left in %s",
			       e->d_name);
		rt_cgroup_kill(path);
		/* Removed now, or by rt_sup_collect once they are dead;
		 * fresh groups get other names, or join the old one. */
		dir = strdup(path);
		if (dir != NULL)
			rt_cgroup_discard(s, dir);
	}
	closedir(d);
}

int rt_cgroup_prune(const char *worker_id, const char *key, int wait_ms)
{
	int64_t until = rt_mono_ms() + wait_ms;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	char root[4096], path[4600];
	struct dirent *e;
	int busy;
	DIR *d;

	if (root_path(worker_id, key, root, sizeof(root)) < 0)
		return 0;
	for (;;) {
		d = opendir(root);
		if (d == NULL)
			return 0; /* none, or gone */
		busy = 0;
		while ((e = readdir(d)) != NULL) {
			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
			/* Only empty ones: a live worker's are not. */
			if (!group_empty(path) || rt_cgroup_remove(path) < 0)
				busy = 1;
		}
		closedir(d);
		if (!busy && rt_cgroup_remove(root) == 0)
			return 0;
		if (rt_mono_ms() >= until)
			return -EBUSY;
		nanosleep(&pause, NULL);
	}
}

char *rt_cgroup_root(const char *worker_id, const char *key)
{
	char dir[4096], probe[4200];

	if (root_path(worker_id, key, dir, sizeof(dir)) < 0)
		return NULL;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return NULL;
	/* Usable only if a limit can be set in a child group. */
	snprintf(probe, sizeof(probe), "%s/probe", dir);
	if (mkdir(probe, 0755) < 0 && errno != EEXIST) {
		rmdir(dir);
		return NULL;
	}
	if (write_file(probe, "memory.limit_in_bytes", "1073741824") < 0 &&
	    write_file(probe, "memory.max", "1073741824") < 0) {
		rmdir(probe);
		rmdir(dir);
		return NULL;
	}
	rmdir(probe);
	return strdup(dir);
}

long long rt_cgroup_oom_kills(const char *dir)
{
	static const char *const files[] = { "memory.oom_control",
					     "memory.events" };
	char path[4200], line[256];
	long long n = -1;
	int i;

	for (i = 0; i < 2 && n < 0; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		f = fopen(path, "re");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "oom_kill %lld", &n) == 1)
				break;
		fclose(f);
	}
	return n;
}

int rt_cgroup_remove(const char *dir)
{
	return dir != NULL && rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
}

void rt_cgroup_kill(const char *dir)
{
	char path[4200], line[32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		pid_t pid = (pid_t)atoi(line);

		if (pid > 1)
			kill(pid, SIGKILL);
	}
	fclose(f);
}

/* Writes `text` to dir/name with raw syscalls (safe after fork). */
static int write_raw(const char *dir, const char *name, const char *text)
{
	char path[4200];
	size_t dl = strlen(dir), nl = strlen(name), tl = strlen(text);
	int fd, rc = -1;

	if (dl + nl + 2 > sizeof(path))
		return -1;
	memcpy(path, dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, name, nl + 1);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		rc = write(fd, text, tl) == (ssize_t)tl ? 0 : -1;
		close(fd);
	}
	return rc;
}

int rt_cgroup_join(const char *dir, const char *limit)
{
	char root[4096];
	const char *slash = strrchr(dir, '/');
	size_t n = slash != NULL ? (size_t)(slash - dir) : 0;

	/* The root too: the controller's unmount removes it when it is
	 * empty and its worker offline, and that worker may come back. */
	if (n > 0 && n < sizeof(root)) {
		memcpy(root, dir, n);
		root[n] = '\0';
		mkdir(root, 0755);
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	if (write_raw(dir, "memory.limit_in_bytes", limit) < 0 &&
	    write_raw(dir, "memory.max", limit) < 0)
		return -1;
	write_raw(dir, "memory.memsw.limit_in_bytes", limit);
	write_raw(dir, "memory.swap.max", "0");
	return write_raw(dir, "cgroup.procs", "0");
}

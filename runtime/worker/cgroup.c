/*
 * cgroup.c - the groups that hold instance limits (memory, pids, cpu) on
 * cgroup v1 or v2; see cgroup.h. The mount point and this process's
 * /proc/self/cgroup are parameters, so that a fake tree can stand in.
 * It is one file over 600 lines because both layouts (v1's hierarchy per
 * controller, v2's one) go through the same steps: finding the roots,
 * planning a group's limits, killing and removing groups each switch on
 * cg->v2, and cut apart each piece would repeat that switch.
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

#include "cgroup.h"
#include "supervise.h"

/* Each controller's v1 hierarchy directory, and the file that shows it
 * can hold a limit. */
static const char *const v1_dir[RT_CG_COUNT] = { "memory", "pids", "cpu" };
static const char *const v1_probe[RT_CG_COUNT] = { "memory.limit_in_bytes",
						   "pids.max",
						   "cpu.cfs_quota_us" };
static const char *const v2_name[RT_CG_COUNT] = { "memory", "pids", "cpu" };

void rt_cg_root_name(const char *worker_id, const char *key, char *out,
		     size_t n)
{
	/* The id alone is not unique on a host (every pool has a local-1):
	 * the controller's socket path is part of the name. */
	uint64_t h = 1469598103934665603ULL;
	const char *k;

	for (k = key; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	snprintf(out, n, "fnfs-%08x-%s", (unsigned)h, worker_id);
}

int rt_cg_tagged_id(const char *tag, const char *worker_id, char *out, size_t n)
{
	size_t i, len = tag ? strlen(tag) : 0;

	snprintf(out, n, "%s", worker_id);
	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		char c = tag[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			return -EINVAL;
	}
	if (len > 16)
		return -EINVAL;
	snprintf(out, n, "%s-%s", tag, worker_id);
	return 1;
}

/* This process's group in the hierarchy of `controller` ("memory"; a v1
 * line may list several, "cpu,cpuacct"), or in the unified hierarchy
 * when `controller` is "", from the text of /proc/self/cgroup. */
static int own_group(const char *self, const char *controller, char *out,
		     size_t n)
{
	const char *line, *end, *c1, *c2, *p;
	size_t cl = strlen(controller);

	for (line = self; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		c1 = memchr(line, ':', (size_t)(end - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (c2 != NULL) {
			int match = cl == 0 && c2 == c1 + 1;

			/* The comma-separated list between the colons. */
			for (p = c1 + 1; !match && cl > 0 && p < c2;) {
				const char *q = memchr(p, ',',
						       (size_t)(c2 - p));

				if (q == NULL)
					q = c2;
				match = (size_t)(q - p) == cl &&
					strncmp(p, controller, cl) == 0;
				p = q + 1;
			}
			if (match) {
				int len = (int)(end - c2 - 1);

				snprintf(out, n, "%.*s",
					 len == 1 && c2[1] == '/' ? 0 : len,
					 c2 + 1);
				return 0;
			}
		}
		if (*end == '\0')
			break;
	}
	return -ENOENT;
}

void rt_cg_free(struct rt_cgroups *cg)
{
	int i;

	for (i = 0; i < RT_CG_COUNT; i++) {
		free(cg->root[i]);
		cg->root[i] = NULL;
	}
	cg->v2 = 0;
}

int rt_cg_paths(struct rt_cgroups *cg, const char *fs, const char *self,
		const char *worker_id, const char *key)
{
	char own[2048], name[256], path[4600];
	struct stat st;
	int i, found = 0;

	memset(cg, 0, sizeof(*cg));
	rt_cg_root_name(worker_id, key, name, sizeof(name));
	/* v1: a hierarchy per controller. */
	for (i = 0; i < RT_CG_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/%s", fs, v1_dir[i]);
		if (own_group(self, v1_dir[i], own, sizeof(own)) < 0 ||
		    stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s%s/%s", fs, v1_dir[i], own,
			 name);
		cg->root[i] = strdup(path);
		found += cg->root[i] != NULL;
	}
	if (found > 0)
		return 0;
	/* v2: one hierarchy mounted at fs itself. */
	snprintf(path, sizeof(path), "%s/cgroup.controllers", fs);
	if (own_group(self, "", own, sizeof(own)) < 0 || stat(path, &st) < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s%s/%s", fs, own, name);
	cg->v2 = 1;
	for (i = 0; i < RT_CG_COUNT; i++) {
		cg->root[i] = strdup(path);
		found += cg->root[i] != NULL;
	}
	return found > 0 ? 0 : -ENOENT;
}

/* Writes `text` to the file `path` (created when missing: only a fake
 * tree lets that happen). Returns 0 or -errno. Raw calls: safe after
 * fork. */
static int write_path(const char *path, const char *text)
{
	size_t tl = strlen(text);
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, tl) != (ssize_t)tl)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* As write_path, for `dir/name`. */
static int write_at(const char *dir, const char *name, const char *text)
{
	char path[4600];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	return write_path(path, text);
}

/* Whether the word `w` is in the blank-separated list in `dir/file`. */
static int file_lists(const char *dir, const char *file, const char *w)
{
	char path[4600], buf[1024], *tok, *save = NULL;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, w) == 0)
			return 1;
	return 0;
}

/* "+memory +pids +cpu": the v2 controllers `cg` uses. */
static void v2_enable_text(const struct rt_cgroups *cg, char *out, size_t n)
{
	int i;

	out[0] = '\0';
	for (i = 0; i < RT_CG_COUNT; i++)
		if (cg->root[i] != NULL)
			snprintf(out + strlen(out), n - strlen(out), "%s+%s",
				 out[0] ? " " : "", v2_name[i]);
}

/* Writes each "+ctl" of `text` to dir/cgroup.subtree_control, all at once
 * first (the kernel takes all or none), then one by one. */
static void v2_enable(const char *dir, const char *text)
{
	char copy[64], one[32], *tok, *save = NULL;

	if (write_at(dir, "cgroup.subtree_control", text) == 0)
		return;
	snprintf(copy, sizeof(copy), "%s", text);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	     tok = strtok_r(NULL, " ", &save)) {
		snprintf(one, sizeof(one), "%s", tok);
		write_at(dir, "cgroup.subtree_control", one);
	}
}

/* v2: the parent hands the controllers down to the root (it may refuse:
 * it has members, or they are not delegated), the root lists what it
 * got, and hands that down to the spawn groups. */
static int open_v2(struct rt_cgroups *cg)
{
	char parent[4600], root[4600], text[64], *slash;
	int i, usable = 0;

	snprintf(root, sizeof(root), "%s", cg->root[0]);
	snprintf(parent, sizeof(parent), "%s", cg->root[0]);
	slash = strrchr(parent, '/');
	if (slash != NULL)
		*slash = '\0';
	v2_enable(parent, "+memory +pids +cpu");
	if (mkdir(cg->root[0], 0755) < 0 && errno != EEXIST) {
		rt_cg_free(cg);
		return -ENOENT;
	}
	for (i = 0; i < RT_CG_COUNT; i++) {
		if (file_lists(cg->root[i], "cgroup.controllers", v2_name[i])) {
			usable++;
			continue;
		}
		free(cg->root[i]);
		cg->root[i] = NULL;
	}
	if (usable == 0) {
		rmdir(root);
		rt_cg_free(cg);
		return -ENOENT;
	}
	v2_enable_text(cg, text, sizeof(text));
	for (i = 0; cg->root[i] == NULL; i++)
		;
	v2_enable(cg->root[i], text);
	return 0;
}

int rt_cg_open(struct rt_cgroups *cg, const char *fs, const char *self,
	       const char *worker_id, const char *key)
{
	char probe[4700];
	int i, usable = 0;

	if (rt_cg_paths(cg, fs, self, worker_id, key) < 0)
		return -ENOENT;
	if (cg->v2)
		return open_v2(cg);
	for (i = 0; i < RT_CG_COUNT; i++) {
		if (cg->root[i] == NULL)
			continue;
		snprintf(probe, sizeof(probe), "%s/%s", cg->root[i],
			 v1_probe[i]);
		if (mkdir(cg->root[i], 0755) < 0 && errno != EEXIST) {
			free(cg->root[i]);
			cg->root[i] = NULL;
		} else if (access(probe, W_OK) < 0) {
			rmdir(cg->root[i]);
			free(cg->root[i]);
			cg->root[i] = NULL;
		} else {
			usable++;
		}
	}
	return usable > 0 ? 0 : -ENOENT;
}

/* The id this host's groups of worker `worker_id` are named with: tagged
 * by $FNFS_CGROUP_TAG (tests/run's per-run id marks whose groups these
 * are; a malformed one is left out, never put in a path). */
static void host_id(const char *worker_id, char *out, size_t n)
{
	if (rt_cg_tagged_id(getenv("FNFS_CGROUP_TAG"), worker_id, out, n) < 0)
		rt_log(RT_LOG_WARN,
		       "FNFS_CGROUP_TAG ignored: not 1 to 16 letters and "
		       "digits");
}

int rt_cg_open_host(struct rt_cgroups *cg, const char *worker_id,
		    const char *key)
{
	char self[4096], id[256];
	ssize_t n;
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

	memset(cg, 0, sizeof(*cg));
	if (fd < 0)
		return -errno;
	n = read(fd, self, sizeof(self) - 1);
	close(fd);
	self[n > 0 ? n : 0] = '\0';
	host_id(worker_id, id, sizeof(id));
	return rt_cg_open(cg, RT_CG_FS, self, id, key);
}

int rt_cg_has(const struct rt_cgroups *cg, enum rt_cg_ctl ctl)
{
	return cg->root[ctl] != NULL;
}

char *rt_cg_path(const struct rt_cgroups *cg, enum rt_cg_ctl ctl,
		 const char *name)
{
	struct rt_buf b = { 0 };

	if (cg->root[ctl] == NULL)
		return NULL;
	if (rt_buf_printf(&b, "%s/%s", cg->root[ctl], name) < 0)
		return NULL;
	return b.data;
}

int rt_cg_roots(const struct rt_cgroups *cg, const char *out[RT_CG_COUNT])
{
	int i, j, n = 0;

	for (i = 0; i < RT_CG_COUNT; i++) {
		if (cg->root[i] == NULL)
			continue;
		for (j = 0; j < n && strcmp(out[j], cg->root[i]) != 0; j++)
			;
		if (j == n)
			out[n++] = cg->root[i];
	}
	return n;
}

/* Appends a step; its strings are copied. */
static int add_step(struct rt_cg_plan *p, int op, const char *dir,
		    const char *file, const char *text)
{
	struct rt_cg_step *s;
	struct rt_buf b = { 0 };

	if (p->n >= RT_CG_STEPS)
		return -ENOMEM;
	if (rt_buf_printf(&b, "%s%s%s", dir, file ? "/" : "",
			  file ? file : "") < 0)
		return -ENOMEM;
	s = &p->step[p->n];
	s->op = op;
	s->path = b.data;
	s->text = text != NULL ? strdup(text) : NULL;
	if (text != NULL && s->text == NULL) {
		free(s->path);
		return -ENOMEM;
	}
	p->n++;
	return 0;
}

void rt_cg_plan_free(struct rt_cg_plan *p)
{
	int i;

	for (i = 0; i < p->n; i++) {
		free(p->step[i].path);
		free(p->step[i].text);
	}
	p->n = 0;
}

/* The limit files of controller `ctl` for `lim`, as steps in `dir`. */
static int add_limits(struct rt_cg_plan *p, int v2, enum rt_cg_ctl ctl,
		      const char *dir, const struct rt_cg_limits *lim)
{
	char v[64];
	long long quota;
	int rc = 0;

	switch (ctl) {
	case RT_CG_MEMORY:
		snprintf(v, sizeof(v), "%lld", lim->memory_bytes);
		if (v2) {
			rc = add_step(p, RT_CG_WRITE, dir, "memory.max", v);
			if (rc == 0)
				rc = add_step(p, RT_CG_WRITE_OPT, dir,
					      "memory.swap.max", "0");
		} else {
			rc = add_step(p, RT_CG_WRITE, dir,
				      "memory.limit_in_bytes", v);
			if (rc == 0)
				rc = add_step(p, RT_CG_WRITE_OPT, dir,
					      "memory.memsw.limit_in_bytes", v);
		}
		break;
	case RT_CG_PIDS:
		snprintf(v, sizeof(v), "%lld", lim->pids);
		rc = add_step(p, RT_CG_WRITE, dir, "pids.max", v);
		break;
	case RT_CG_CPU:
		/* Millicores of a CPU per period; the kernel's floor is
		 * 1 ms. */
		quota = lim->cpu_millis * (RT_CG_CPU_PERIOD_US / 1000);
		if (quota < 1000)
			quota = 1000;
		if (v2) {
			snprintf(v, sizeof(v), "%lld %d", quota,
				 RT_CG_CPU_PERIOD_US);
			rc = add_step(p, RT_CG_WRITE, dir, "cpu.max", v);
		} else {
			snprintf(v, sizeof(v), "%d", RT_CG_CPU_PERIOD_US);
			rc = add_step(p, RT_CG_WRITE, dir, "cpu.cfs_period_us",
				      v);
			snprintf(v, sizeof(v), "%lld", quota);
			if (rc == 0)
				rc = add_step(p, RT_CG_WRITE, dir,
					      "cpu.cfs_quota_us", v);
		}
		break;
	default: rc = -EINVAL;
	}
	return rc;
}

int rt_cg_plan(const struct rt_cgroups *cg, const char *name,
	       const struct rt_cg_limits *lim, struct rt_cg_plan *p)
{
	long long want[RT_CG_COUNT] = { lim->memory_bytes, lim->pids,
					lim->cpu_millis };
	char *dir = NULL, text[64];
	int i, rc = 0, any = 0;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < RT_CG_COUNT; i++)
		any += want[i] > 0 && cg->root[i] != NULL;
	if (any == 0)
		return 0;
	for (i = 0; i < RT_CG_COUNT && rc == 0; i++) {
		if (want[i] <= 0 || cg->root[i] == NULL)
			continue;
		/* v2: one group, made once, for every controller. */
		if (!cg->v2 || dir == NULL) {
			free(dir);
			dir = rt_cg_path(cg, (enum rt_cg_ctl)i, name);
			if (dir == NULL) {
				rc = -ENOMEM;
				break;
			}
			/* The root too: the controller's unmount removes it
			 * when it is empty and its worker offline, and that
			 * worker may come back. */
			rc = add_step(p, RT_CG_MKDIR, cg->root[i], NULL, NULL);
			if (rc == 0 && cg->v2) {
				v2_enable_text(cg, text, sizeof(text));
				rc = add_step(p, RT_CG_WRITE_OPT, cg->root[i],
					      "cgroup.subtree_control", text);
			}
			if (rc == 0)
				rc = add_step(p, RT_CG_MKDIR, dir, NULL, NULL);
		}
		if (rc == 0)
			rc = add_limits(p, cg->v2, (enum rt_cg_ctl)i, dir, lim);
		if (rc == 0 && !cg->v2)
			rc = add_step(p, RT_CG_WRITE, dir, "cgroup.procs", "0");
	}
	if (rc == 0 && cg->v2)
		rc = add_step(p, RT_CG_WRITE, dir, "cgroup.procs", "0");
	free(dir);
	if (rc < 0)
		rt_cg_plan_free(p);
	return rc;
}

int rt_cg_apply(const struct rt_cg_plan *p, const char **failed)
{
	int i, rc;

	for (i = 0; i < p->n; i++) {
		const struct rt_cg_step *s = &p->step[i];

		if (s->op == RT_CG_MKDIR) {
			if (mkdir(s->path, 0755) < 0 && errno != EEXIST) {
				*failed = s->path;
				return -errno;
			}
			continue;
		}
		rc = write_path(s->path, s->text);
		if (rc < 0 && s->op == RT_CG_WRITE) {
			*failed = s->path;
			return rc;
		}
	}
	return 0;
}

/* ------------------------------------------------ groups, by directory */

/* Whether group `dir` has no member (a group that cannot be read counts
 * as busy). */
static int group_empty(const char *dir)
{
	char path[4600], line[32];
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

int rt_cgroup_remove(const char *dir)
{
	return dir != NULL && rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
}

void rt_cgroup_kill(const char *dir)
{
	char path[4600], line[32];
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

long long rt_cgroup_oom_kills(const char *dir)
{
	static const char *const files[] = { "memory.oom_control",
					     "memory.events" };
	char path[4600], line[256];
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

long long rt_cg_oom_kills(const struct rt_cgroups *cg, const char *name)
{
	char *dir = rt_cg_path(cg, RT_CG_MEMORY, name);
	long long n = dir != NULL ? rt_cgroup_oom_kills(dir) : -1;

	free(dir);
	return n;
}

void rt_cg_kill(const struct rt_cgroups *cg, const char *name)
{
	const char *roots[RT_CG_COUNT];
	char path[4600];
	int i, n = rt_cg_roots(cg, roots);

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", roots[i], name);
		rt_cgroup_kill(path);
	}
}

/* ------------------------------------------- leftovers of dead workers */

void rt_sup_sweep(struct rt_sup *s)
{
	const char *roots[RT_CG_COUNT];
	char path[4600];
	struct dirent *e;
	int i, n = rt_cg_roots(&s->cg, roots);
	DIR *d;

	for (i = 0; i < n; i++) {
		d = opendir(roots[i]);
		if (d == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			char *dir;

			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", roots[i],
				 e->d_name);
			if (!group_empty(path))
				rt_log(RT_LOG_WARN,
				       "killing what an earlier worker left in "
				       "%s",
				       path);
			rt_cgroup_kill(path);
			/* Removed now, or by rt_sup_collect once they are
			 * dead; fresh groups get other names, or join the
			 * old one. */
			dir = strdup(path);
			if (dir != NULL)
				rt_cgroup_discard(s, dir);
		}
		closedir(d);
	}
}

/* Removes the empty groups in `root`, then `root` if it is empty.
 * Returns 0 when it is gone, -EBUSY. */
static int prune_root(const char *root)
{
	char path[4600];
	struct dirent *e;
	int busy = 0;
	DIR *d = opendir(root);

	if (d == NULL)
		return 0; /* none, or gone */
	while ((e = readdir(d)) != NULL) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
		/* Only empty ones: a live worker's are not. */
		if (!group_empty(path) || rt_cgroup_remove(path) < 0)
			busy = 1;
	}
	closedir(d);
	return !busy && rt_cgroup_remove(root) == 0 ? 0 : -EBUSY;
}

int rt_cgroup_prune(const char *worker_id, const char *key, int wait_ms)
{
	int64_t until = rt_mono_ms() + wait_ms;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	const char *roots[RT_CG_COUNT];
	struct rt_cgroups cg;
	char self[4096], id[256];
	ssize_t len;
	int fd, i, n, busy;

	fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, self, sizeof(self) - 1);
	close(fd);
	self[len > 0 ? len : 0] = '\0';
	/* Named as the worker named them (it inherited our environment). */
	host_id(worker_id, id, sizeof(id));
	if (rt_cg_paths(&cg, RT_CG_FS, self, id, key) < 0)
		return 0;
	n = rt_cg_roots(&cg, roots);
	for (;;) {
		busy = 0;
		for (i = 0; i < n; i++)
			busy |= prune_root(roots[i]) < 0;
		if (!busy || rt_mono_ms() >= until)
			break;
		nanosleep(&pause, NULL);
	}
	rt_cg_free(&cg);
	return busy ? -EBUSY : 0;
}

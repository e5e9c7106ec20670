/*
 * binds.c - what a sandbox binds in (see sandbox.h), opened by the worker
 * before the fork: the function's own sources ("mounts", its cwd) with
 * the function user's credentials and no symbolic link anywhere in the
 * path, so that a function binds only what its user could open on the
 * host; and the view of the host's mounts that decides what is refused
 * (a FUSE filesystem, a kernel one such as proc) and what the child must
 * take away (FUSE mounts below a bind).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mnttable.h"
#include "sandbox.h"

/* The worker's data directory (rt_sandbox_reserve), resolved, or NULL. */
static char *reserved_dir;

/* What no function binds, besides reserved_dir. */
static const char *const host_dirs[] = { "/proc", "/sys", "/dev" };

/* Kernel filesystems that show the host (its processes, devices, kernel
 * state): never a source, and never carried in by a bind. (Not autofs:
 * it holds real mounts, /home's often.) */
static const char *const kernel_fs[] = {
	"proc",	    "sysfs",	  "devtmpfs", "devpts",	     "cgroup",
	"cgroup2",  "debugfs",	  "tracefs",  "securityfs",  "bpf",
	"configfs", "pstore",	  "efivarfs", "binfmt_misc", "fusectl",
	"mqueue",   "rpc_pipefs", "nsfs",     NULL,
};

void (*rt_open_test_hook)(const struct rt_sandbox *sb);

/* The reason of a refusal: read by the caller before the next parse. */
static _Thread_local char why_buf[768];

int rt_sandbox_reserve(const char *dir)
{
	char *r = realpath(dir, NULL);

	if (r == NULL)
		r = strdup(dir);
	if (r == NULL)
		return -ENOMEM;
	free(reserved_dir);
	reserved_dir = r;
	return 0;
}

int rt_path_normal(const char *path, char *out, size_t cap)
{
	size_t n = 0, k;
	const char *p = path, *e;

	if (path[0] != '/' || cap < 2)
		return -EINVAL;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != '/'; e++)
			;
		k = (size_t)(e - p);
		if (k == 1 && p[0] == '.') {
			/* nothing */
		} else if (k == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else {
			if (n + 1 + k + 1 > cap)
				return -ENAMETOOLONG;
			out[n] = '/';
			memcpy(out + n + 1, p, k);
			n += 1 + k;
		}
		out[n] = '\0';
		p = e;
	}
	if (n == 0) {
		out[0] = '/';
		n = 1;
	}
	out[n] = '\0';
	return 0;
}

int rt_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

int rt_fs_is_kernel(const char *type)
{
	size_t i;

	for (i = 0; kernel_fs[i] != NULL; i++)
		if (strcmp(type, kernel_fs[i]) == 0)
			return 1;
	return 0;
}

int rt_fs_is_fuse(const char *type)
{
	return strncmp(type, "fuse", 4) == 0 && strcmp(type, "fusectl") != 0;
}

/* ============================================== the host's mount table */

/* The FUSE mount points of `t` into `sb->hide` (parents before
 * children, as mountinfo lists them). A sandbox's copy of a FUSE mount
 * would keep its connection alive after the host unmounts it: fnfs's
 * own mount among them, whose daemon would then never see its unmount.
 * Returns 0 or -errno. */
static int list_fuse(struct rt_sandbox *sb, const struct rt_mnt_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		char **nv;

		if (!rt_fs_is_fuse(t->m[i].type))
			continue;
		nv = realloc(sb->hide,
			     (size_t)(sb->nhide + 1) * sizeof(char *));
		if (nv == NULL)
			return -ENOMEM;
		sb->hide = nv;
		if ((sb->hide[sb->nhide] = strdup(t->m[i].point)) == NULL)
			return -ENOMEM;
		sb->nhide++;
	}
	return 0;
}

/* ==================================== opening as the function's user */

/* The worker thread's file-system identity, saved while it is the
 * function user's. Raw system calls: they change this thread alone
 * (libc's wrappers would change every thread of the worker). */
struct ident {
	gid_t groups[256];
	int ngroups;
	int switched;
};

/* Takes the user's fsuid, fsgid and groups (the capabilities that let
 * root pass file permissions go with a non-zero fsuid). */
static int become(const struct rt_sandbox *sb, struct ident *id)
{
	id->switched = 0;
	if (!sb->set_id)
		return 0; /* it runs as the worker's own user */
	id->ngroups = getgroups(256, id->groups);
	if (id->ngroups < 0)
		return -errno;
	if (syscall(SYS_setgroups, (size_t)sb->ngroups, sb->groups) < 0)
		return -errno;
	id->switched = 1;
	syscall(SYS_setfsgid, sb->gid);
	syscall(SYS_setfsuid, sb->uid);
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != sb->uid ||
	    (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != sb->gid)
		return -EPERM;
	return 0;
}

/* Back to the worker's identity (root: always allowed). */
static void unbecome(struct ident *id)
{
	if (!id->switched)
		return;
	syscall(SYS_setfsuid, geteuid());
	syscall(SYS_setfsgid, getegid());
	syscall(SYS_setgroups, (size_t)id->ngroups, id->groups);
	id->switched = 0;
}

/* Opens `path` O_PATH without following any symbolic link, and checks
 * write access when `rw` (*rw is cleared when `soft` and it may not
 * write). Returns the descriptor or -errno; -EROFS stands for "may not
 * write". */
static int open_as_user(const char *path, int *rw, int soft)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC, /* (O_NOFOLLOW: the link itself) */
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	/* O_PATH opens what the user cannot enter or read: that it must. */
	if (fstat(fd, &st) < 0 ||
	    syscall(SYS_faccessat2, fd, "", S_ISDIR(st.st_mode) ? X_OK : R_OK,
		    AT_EMPTY_PATH | AT_EACCESS) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (*rw && syscall(SYS_faccessat2, fd, "", W_OK,
			   AT_EMPTY_PATH | AT_EACCESS) < 0) {
		if (soft) {
			*rw = 0;
		} else {
			close(fd);
			return -EROFS;
		}
	}
	return fd;
}

/* Sets why_buf to "WHAT PATH: TEXT" and returns rc. */
static int refuse(int rc, const char *what, const char *path, const char *text)
{
	snprintf(why_buf, sizeof(why_buf), "%s %s: %s", what, path, text);
	return rc;
}

/* Opens one source of the function's (a mounts entry, or the cwd) into
 * `b->fd`, with the checks of rt_sandbox_parse. */
static int open_user_bind(const struct rt_sandbox *sb, struct rt_bind *b,
			  struct rt_mnt_table **t)
{
	int soft_rw = b->user == RT_BIND_CWD;
	const char *what = soft_rw ? "cwd" : "mounts:";
	char msg[160];
	struct ident id;
	struct statx sx;
	const char *type;
	int i, fd, rw = b->rw;
	size_t k;

	for (k = 0; k < sizeof(host_dirs) / sizeof(*host_dirs); k++)
		if (rt_path_under(b->path, host_dirs[k])) {
			snprintf(msg, sizeof(msg),
				 "%s is the host's and never bound in a "
				 "sandbox",
				 host_dirs[k]);
			return refuse(-EINVAL, what, b->path, msg);
		}
	/* (What holds it shows no more than its user sees on the host:
	 * the data directory is 0700.) */
	if (reserved_dir != NULL && rt_path_under(b->path, reserved_dir))
		return refuse(-EINVAL, what, b->path,
			      "fnfs's data directory is never bound in a "
			      "sandbox");
	/* Before any lookup in it: a FUSE server may never answer. */
	for (i = 0; i < sb->nhide; i++)
		if (rt_path_under(b->path, sb->hide[i]))
			return refuse(-EINVAL, what, b->path,
				      "on a FUSE filesystem, which no sandbox "
				      "shows");
	fd = become(sb, &id);
	if (fd == 0 && rt_open_test_hook != NULL)
		rt_open_test_hook(sb);
	if (fd == 0)
		fd = open_as_user(b->path, &rw, soft_rw);
	unbecome(&id);
	if (fd < 0) {
		if (fd == -ELOOP)
			return refuse(fd, what, b->path,
				      "a symbolic link in the path (sources "
				      "are resolved without following any)");
		if (fd == -EROFS) {
			snprintf(msg, sizeof(msg),
				 "rw, but uid %u may not write there",
				 (unsigned)sb->uid);
			return refuse(-EACCES, what, b->path, msg);
		}
		snprintf(msg, sizeof(msg), "cannot open it as uid %u: %s",
			 sb->set_id ? (unsigned)sb->uid : (unsigned)geteuid(),
			 strerror(-fd));
		return refuse(fd, what, b->path, msg);
	}
	b->fd = fd;
	b->rw = rw;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return refuse(-EIO, what, b->path, "cannot tell its mount");
	/* A mount newer than the snapshot: the table as it is now. */
	type = rt_mnt_table_type(*t, sx.stx_mnt_id);
	if (type == NULL) {
		struct rt_mnt_table *now = rt_mnt_table_get(1);

		if (now != NULL) {
			rt_mnt_table_put(*t);
			*t = now;
			type = rt_mnt_table_type(now, sx.stx_mnt_id);
		}
	}
	if (type == NULL)
		return refuse(-EAGAIN, what, b->path,
			      "its mount is not in the mount table (it "
			      "changed while starting)");
	if (rt_fs_is_fuse(type))
		return refuse(-EINVAL, what, b->path,
			      "on a FUSE filesystem, which no sandbox shows");
	if (rt_fs_is_kernel(type)) {
		snprintf(msg, sizeof(msg),
			 "on a %s filesystem, which shows the host", type);
		return refuse(-EINVAL, what, b->path, msg);
	}
	return 0;
}

int rt_sandbox_open_binds(struct rt_sandbox *sb, const char **why)
{
	struct rt_mnt_table *t = rt_mnt_table_get(0);
	char norm[4096];
	int i, j, rc;

	why_buf[0] = '\0';
	rc = t == NULL ? -errno : list_fuse(sb, t);
	if (rc < 0) {
		*why = "cannot read the mount table";
		goto out;
	}
	for (i = 0; i < sb->nbinds && rc == 0; i++) {
		struct rt_bind *b = &sb->binds[i];

		if (b->user != RT_BIND_WORKER) {
			const char *what = b->user == RT_BIND_CWD ? "cwd"
								  : "mounts:";

			/* Without symbolic links, the text is the path. */
			rc = rt_path_normal(b->path, norm, sizeof(norm));
			if (rc == 0 && strcmp(norm, "/") == 0)
				rc = refuse(-EINVAL, what, b->path,
					    "the whole system");
			else if (rc < 0)
				rc = refuse(rc, what, b->path,
					    "not a usable absolute path");
			if (rc == 0 && strcmp(norm, b->path) != 0) {
				char *p = strdup(norm);

				if (p == NULL) {
					rc = -ENOMEM;
					break;
				}
				free(b->path);
				b->path = p;
			}
			if (rc == 0)
				rc = open_user_bind(sb, b, &t);
		} else {
			b->fd = open(b->path, O_PATH | O_CLOEXEC);
			if (b->fd < 0) {
				rc = -errno;
				snprintf(why_buf, sizeof(why_buf),
					 "cannot open %s: %s", b->path,
					 strerror(errno));
			}
		}
		for (j = 0; rc == 0 && j < sb->nhide; j++)
			if (rt_path_under(sb->hide[j], b->path) &&
			    strcmp(sb->hide[j], b->path) != 0)
				b->fuse_below = 1;
	}
	if (rc < 0)
		*why = why_buf[0] != '\0' ? why_buf : "out of memory";
out:
	rt_mnt_table_put(t);
	return rc;
}

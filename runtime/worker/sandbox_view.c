/*
 * sandbox_view.c - what a sandboxed process sees (sandbox.h): the host's
 * tree read-only and nosuid, without FUSE mounts and stray kernel
 * filesystems, a private /tmp and /dev/shm, its own /proc, its binds
 * (nosuid, nodev), and ipc, uts (and network) namespaces of its own
 * (ipc a run's, the others the instance's).
 *
 * An instance's view is made once, on a thread of the worker
 * (rt_sandbox_view), and each run enters it (rt_sandbox_enter): a
 * namespace per run, and its teardown at exit, were most of what the
 * sandbox added to a cold call. So /tmp and /dev/shm (each bounded to the
 * function's memory) and the hostname last as long as the instance's
 * sandbox (its init): across
 * restarts and a cold slot's calls, as a container's or a Lambda
 * execution environment's do. Without a view (it could not be made), a
 * run makes its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

/* mkdir -p for a path in the private /tmp. */
static void mkdir_p(const char *path)
{
	char buf[4096];
	size_t i, n = strlen(path);

	if (n >= sizeof(buf))
		return;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++)
		if (buf[i] == '/' || buf[i] == '\0') {
			char c = buf[i];

			buf[i] = '\0';
			mkdir(buf, 0755);
			buf[i] = c;
		}
}

/* Brings the new network namespace's loopback up. */
static int loopback_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return rc;
}

/* Detaches the mount at `path` and what is below it: a FUSE mount
 * point of the host's view, or a copy a bind carried in at the same
 * place (one call per mount: mountinfo lists each of a stack). One that
 * went with its parent is not an error. */
static void detach(const char *path)
{
	if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return;
}

/* Whether `p` is where the sandbox's own kernel filesystems are. */
static int base_place(const char *p)
{
	return rt_path_under(p, "/proc") || rt_path_under(p, "/sys") ||
	       rt_path_under(p, "/dev");
}

/* A hash of a mount point (FNV-1a), to tell a view's mounts apart from
 * a later one that reuses an ID. */
static unsigned long long point_hash(const char *p)
{
	unsigned long long h = 1469598103934665603ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

/* Whether mount `id` at `point` is one view `v` was made with. */
static int view_has(const struct rt_sb_view *v, unsigned long long id,
		    const char *point)
{
	unsigned long long h = point_hash(point);
	size_t i;

	for (i = 0; i < v->nids; i++)
		if (v->ids[i] == id && v->points[i] == h)
			return 1;
	return 0;
}

/* Tidies the view `mountinfo` lists (/proc/self/mountinfo, or
 * /proc/thread-self/mountinfo in a thread): detaches each mount that is
 * FUSE's, or a kernel filesystem away from /proc, /sys and /dev (a copy
 * a bind or the host's propagation brought in); with a view `v`, makes
 * read-only and nosuid each writable mount the view was not made with
 * (one the host's propagation brought in since), except its own /proc.
 * Returns how many mounts it detached (one may uncover another). Stack buffers
 * only: nothing is allocated in the child. */
static int tidy_once(const char *mountinfo, const struct rt_sb_view *v)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY |
					     MOUNT_ATTR_NOSUID |
					     MOUNT_ATTR_NODEV };
	char buf[4096], line[24576], *at;
	const char *type;
	unsigned long long id;
	size_t have = 0, skip = 0;
	ssize_t got;
	int fd = open(mountinfo, O_RDONLY | O_CLOEXEC), done = 0, rw;

	if (fd < 0)
		return 0;
	while ((got = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t i;

		for (i = 0; i < got; i++) {
			if (buf[i] != '\n') {
				if (have < sizeof(line) - 1)
					line[have++] = buf[i];
				else
					skip = 1; /* longer than any path */
				continue;
			}
			line[have] = '\0';
			have = 0;
			if (skip) {
				skip = 0;
				continue;
			}
			at = rt_mountinfo_split(line, &type, &id, &rw);
			if (at == NULL)
				continue;
			if (rt_fs_is_fuse(type) ||
			    (rt_fs_is_kernel(type) && !base_place(at))) {
				if (umount2(at, MNT_DETACH | UMOUNT_NOFOLLOW) ==
				    0)
					done++;
			} else if (v != NULL && rw &&
				   strcmp(at, "/proc") != 0 &&
				   !view_has(v, id, at)) {
				/* (Not counted: it uncovers nothing.) */
				mount_setattr(AT_FDCWD, at,
					      AT_SYMLINK_NOFOLLOW |
						      AT_NO_AUTOMOUNT,
					      &ro, sizeof(ro));
			}
		}
	}
	close(fd);
	return done;
}

/* Makes the view of `sb` in new namespaces of the calling thread or
 * process: the host's mounts as slaves, read-only and nosuid, without
 * FUSE mounts, tmpfs /tmp and /dev/shm, the binds, and with `proc` a
 * /proc of the current pid namespace. `mountinfo` is the caller's.
 * Writes the reason to `err` (-1: nowhere) and returns -1 on failure. */
static int build(const struct rt_sandbox *sb, int err, int proc,
		 const char *mountinfo)
{
	struct mount_attr root_ro = { .attr_set = MOUNT_ATTR_RDONLY |
						  MOUNT_ATTR_NOSUID };
	int fd[RT_SB_MOUNTS_MAX + 3], i, j, rc = -1;
	int flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

	for (i = 0; i < sb->nbinds; i++)
		fd[i] = -1;
	/* Copies of what is bound in, from what the worker opened (as the
	 * function's user, for its own sources): nosuid and nodev
	 * throughout. Taken in the worker's mount namespace (a mount of
	 * another cannot be cloned), before / turns read-only and /tmp is
	 * covered. */
	for (i = 0; i < sb->nbinds; i++) {
		struct mount_attr a = {
			.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				    (sb->binds[i].rw ? 0 : MOUNT_ATTR_RDONLY)
		};

		fd[i] = open_tree(sb->binds[i].fd, "",
				  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					  AT_EMPTY_PATH | AT_RECURSIVE);
		if (fd[i] < 0) {
			rt_sb_fail(err, "bind", sb->binds[i].path);
			goto out;
		}
		if (mount_setattr(fd[i], "", AT_EMPTY_PATH | AT_RECURSIVE, &a,
				  sizeof(a)) < 0) {
			rt_sb_fail(err, "nosuid,nodev bind", sb->binds[i].path);
			goto out;
		}
	}
	if (sb->no_net)
		flags |= CLONE_NEWNET;
	if (unshare(flags) < 0) {
		rt_sb_fail(err, "unshare", NULL);
		goto out;
	}
	if (sb->no_net && loopback_up() < 0) {
		rt_sb_fail(err, "loopback", NULL);
		goto out;
	}
	/* Nothing done here reaches the host; the host's unmounts reach
	 * here. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		rt_sb_fail(err, "mount --make-rslave /", NULL);
		goto out;
	}
	/* The host's FUSE mounts, deepest first (mountinfo lists parents
	 * first); one already gone with its parent is not an error. Then
	 * what the worker's view did not list (mounted since, or under
	 * another name). */
	for (i = sb->nhide - 1; i >= 0; i--)
		detach(sb->hide[i]);
	for (i = 0; i < 8 && tidy_once(mountinfo, NULL) > 0; i++)
		;
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &root_ro,
			  sizeof(root_ro)) < 0) {
		rt_sb_fail(err, "read-only /", NULL);
		goto out;
	}
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		  sb->tmpfs_opts) < 0) {
		rt_sb_fail(err, "tmpfs", "/tmp");
		goto out;
	}
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		  sb->tmpfs_opts) < 0 &&
	    errno != ENOENT) {
		rt_sb_fail(err, "tmpfs", "/dev/shm");
		goto out;
	}
	if (proc && mount("proc", "/proc", "proc",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		rt_sb_fail(err, "mount", "/proc");
		goto out;
	}
	for (i = 0; i < sb->nbinds; i++) {
		const char *p = sb->binds[i].at != NULL ? sb->binds[i].at
							: sb->binds[i].path;

		if (move_mount(fd[i], "", AT_FDCWD, p,
			       MOVE_MOUNT_F_EMPTY_PATH) < 0 &&
		    (errno != ENOENT ||
		     (mkdir_p(p), move_mount(fd[i], "", AT_FDCWD, p,
					     MOVE_MOUNT_F_EMPTY_PATH) < 0))) {
			rt_sb_fail(err, "bind", p);
			goto out;
		}
		/* The FUSE mounts the recursive copy carried, taken away
		 * before a later bind can cover them (a covered copy would
		 * still hold its connection). */
		for (j = sb->nhide - 1; sb->binds[i].fuse_below && j >= 0; j--)
			if (rt_path_under(sb->hide[j], p))
				detach(sb->hide[j]);
	}
	/* What the binds carried in, until nothing more goes. */
	for (i = 0; i < 8 && tidy_once(mountinfo, NULL) > 0; i++)
		;
	rc = 0;
out:
	for (i = 0; i < sb->nbinds; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return rc;
}

/* What a view's thread is given and gives back. */
struct view_job {
	const struct rt_sandbox *sb;
	struct rt_sb_view *v;
	int rc; /* 0 or -errno */
};

/* Records the mounts of the thread's view in `v`. */
static int record_mounts(struct rt_sb_view *v)
{
	char *line = NULL, *at;
	const char *type;
	unsigned long long id;
	size_t cap = 0, n = 0;
	FILE *f = fopen("/proc/thread-self/mountinfo", "re");
	int rc = 0;

	if (f == NULL)
		return -errno;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		if ((at = rt_mountinfo_split(line, &type, &id, NULL)) == NULL)
			continue;
		if (v->nids == n) {
			size_t c = n ? n * 2 : 64;
			unsigned long long *a, *b;

			a = realloc(v->ids, c * sizeof(*a));
			if (a != NULL)
				v->ids = a;
			b = realloc(v->points, c * sizeof(*b));
			if (b != NULL)
				v->points = b;
			if (a == NULL || b == NULL) {
				rc = -ENOMEM;
				break;
			}
			n = c;
		}
		v->ids[v->nids] = id;
		v->points[v->nids] = point_hash(at);
		v->nids++;
	}
	free(line);
	fclose(f);
	return rc;
}

static int open_ns(const char *name)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/thread-self/ns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The identity of bind `b`'s source, or 0s when it cannot be told. */
static void bind_identity(const struct rt_bind *b, unsigned long long *dev,
			  unsigned long long *ino)
{
	struct stat st;

	*dev = *ino = 0;
	if (b->fd >= 0 && fstat(b->fd, &st) == 0) {
		*dev = (unsigned long long)st.st_dev;
		*ino = (unsigned long long)st.st_ino;
	}
}

int rt_sandbox_view_fits(const struct rt_sb_view *v,
			 const struct rt_sandbox *sb)
{
	unsigned long long dev, ino;
	int i;

	if (v->nbinds != sb->nbinds)
		return 0;
	for (i = 0; i < sb->nbinds; i++) {
		bind_identity(&sb->binds[i], &dev, &ino);
		if (ino == 0 || v->binds[i].dev != dev ||
		    v->binds[i].ino != ino || v->binds[i].rw != sb->binds[i].rw)
			return 0;
	}
	return 1;
}

/* The thread of rt_sandbox_view: namespaces of its own (a thread may
 * have them), the view built there, then descriptors of them, in the
 * process's table. */
static void *view_thread(void *arg)
{
	struct view_job *j = arg;
	struct rt_sb_view *v = j->v;
	int i;

	if (build(j->sb, -1, 0, "/proc/thread-self/mountinfo") < 0) {
		j->rc = errno != 0 ? -errno : -EIO;
		return NULL;
	}
	if ((v->mnt = open_ns("mnt")) < 0 || (v->uts = open_ns("uts")) < 0 ||
	    (j->sb->no_net && (v->net = open_ns("net")) < 0)) {
		j->rc = -EIO;
		return NULL;
	}
	for (i = 0; i < j->sb->nbinds; i++) {
		bind_identity(&j->sb->binds[i], &v->binds[i].dev,
			      &v->binds[i].ino);
		v->binds[i].rw = j->sb->binds[i].rw;
	}
	v->nbinds = j->sb->nbinds;
	j->rc = record_mounts(v);
	/* Kept open: it holds the namespace, and a poll on it says when
	 * its mounts change. */
	v->watch = open("/proc/thread-self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (v->watch < 0 && j->rc == 0)
		j->rc = -errno;
	v->dirty = 1;
	return NULL;
}

void rt_sandbox_view_none(struct rt_sb_view *v)
{
	memset(v, 0, sizeof(*v));
	v->mnt = v->uts = v->net = v->watch = -1;
}

void rt_sandbox_view_close(struct rt_sb_view *v)
{
	if (v->mnt >= 0)
		close(v->mnt);
	if (v->uts >= 0)
		close(v->uts);
	if (v->net >= 0)
		close(v->net);
	if (v->watch >= 0)
		close(v->watch);
	free(v->ids);
	free(v->points);
	rt_sandbox_view_none(v);
}

int rt_sandbox_view(const struct rt_sandbox *sb, struct rt_sb_view *v)
{
	struct view_job j = { sb, v, -EIO };
	sigset_t all, old;
	pthread_t t;
	int rc;

	rt_sandbox_view_none(v);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, NULL, view_thread, &j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	pthread_join(t, NULL);
	if (j.rc < 0)
		rt_sandbox_view_close(v);
	return j.rc;
}

void rt_sandbox_view_check(struct rt_sb_view *v)
{
	struct pollfd p = { v->watch, POLLPRI, 0 };

	if (v->watch < 0 || poll(&p, 1, 0) != 0)
		v->dirty = 1; /* changed, or cannot be told */
}

/* Whether the view's /proc is still the host's copy (no run mounted
 * its own yet): its mount is one the view was made with. */
static int proc_is_hosts(const struct rt_sb_view *v)
{
	struct statx sx;

	if (statx(AT_FDCWD, "/proc", AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) <
		    0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 1;
	return view_has(v, sx.stx_mnt_id, "/proc");
}

int rt_sandbox_enter(const struct rt_sandbox *sb, struct rt_sb_view *v, int err)
{
	int i;

	if (!sb->isolate)
		return 0;
	if (v == NULL)
		return build(sb, err, 1, "/proc/self/mountinfo");
	if (setns(v->mnt, CLONE_NEWNS) < 0 || setns(v->uts, CLONE_NEWUTS) < 0 ||
	    (v->net >= 0 && setns(v->net, CLONE_NEWNET) < 0))
		return rt_sb_fail(err, "setns", NULL);
	if (unshare(CLONE_NEWIPC) < 0)
		return rt_sb_fail(err, "unshare", "ipc");
	/* The first run in the pid namespace mounts its /proc; the runs
	 * after it see that one. */
	if (proc_is_hosts(v) &&
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return rt_sb_fail(err, "mount", "/proc");
	if (!v->dirty)
		return 0;
	for (i = 0; i < 8 && tidy_once("/proc/self/mountinfo", v) > 0; i++)
		;
	v->dirty = 0;
	return 0;
}

/*
 * mount_dirs.c - the mountpoint and the data directory of `fnfs mount`:
 * made when missing, a stale mount cleaned up, a live one refused, the
 * data directory kept outside the mount, locked, private, with its pid
 * file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/base/private.h"
#include "../fs.h"
#include "mount_dirs.h"

/* Whether `path` (absolute, canonical) is a mount point of type `type`
 * according to /proc/self/mounts. */
int fs_mount_mounted_as(const char *path, const char *type)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[4096], mnt[PATH_MAX], fstype[256];
	int found = 0;

	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *r, *w;

		if (sscanf(line, "%*s %4095s %255s", mnt, fstype) != 2)
			continue;
		/* Spaces and such are written as octal escapes ("\040"). */
		for (r = w = mnt; *r; w++) {
			if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
			    r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
			    r[3] <= '7') {
				*w = (char)((r[1] - '0') * 64 +
					    (r[2] - '0') * 8 + (r[3] - '0'));
				r += 4;
			} else {
				*w = *r++;
			}
		}
		*w = '\0';
		found = strcmp(mnt, path) == 0 && strcmp(fstype, type) == 0;
	}
	fclose(f);
	return found;
}

/* Lazily unmounts a dead FUSE mount at `path`: directly when root, else
 * through fusermount3. Returns 0 or -errno. */
static int unmount_stale(const char *path)
{
	pid_t pid;
	int status;

	if (umount2(path, MNT_DETACH) == 0)
		return 0;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", path,
		       (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EBUSY;
}

/* Creates the directory `path` and its missing parents (mode 0755), as
 * `mkdir -p` and `mount --mkdir` do. Returns 0 or -errno. */
static int make_dirs(const char *path)
{
	char tmp[PATH_MAX];
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return n == 0 ? -ENOENT : -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		if (tmp[i - 1] == '/')
			continue; /* "a//b" */
		tmp[i] = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		tmp[i] = path[i];
	}
	return 0;
}

/* Makes `mp` usable: creates it when missing, cleans up a mount left by a
 * crashed fnfs, refuses a live one, and resolves it to a canonical path
 * in `out`. */
int fs_mount_prepare_mountpoint(const char *mp, char out[PATH_MAX])
{
	struct stat st;
	int rc;

	if (stat(mp, &st) < 0 && errno == ENOENT) {
		rc = make_dirs(mp);
		if (rc < 0) {
			fprintf(stderr,
				"fnfs: cannot create the mountpoint %s: %s\n",
				mp, strerror(-rc));
			return rc;
		}
	}
	if (stat(mp, &st) < 0) {
		if (errno != ENOTCONN) {
			rc = -errno;
			fprintf(stderr, "fnfs: mountpoint %s: %s\n", mp,
				strerror(errno));
			return rc;
		}
		rt_log(RT_LOG_INFO, "cleaning up the stale mount at %s", mp);
		rc = unmount_stale(mp);
		if (rc < 0 || stat(mp, &st) < 0) {
			fprintf(stderr,
				"fnfs: %s is a dead mount that could not be "
				"unmounted; try fusermount3 -uz %s\n",
				mp, mp);
			return rc < 0 ? rc : -ENOTCONN;
		}
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"fnfs: mountpoint %s is not a directory; give a "
			"directory (it is created when missing)\n",
			mp);
		return -ENOTDIR;
	}
	if (realpath(mp, out) == NULL) {
		rc = -errno;
		fprintf(stderr, "fnfs: %s: %s\n", mp, strerror(errno));
		return rc;
	}
	if (fs_mount_mounted_as(out, "fuse.fnfs")) {
		fprintf(stderr,
			"fnfs: %s is already an fnfs mount; stop that one "
			"first (fusermount3 -u %s) or pick another "
			"mountpoint\n",
			out, out);
		return -EBUSY;
	}
	return 0;
}

/* Whether `path` is `dir` or lies below it. */
static int path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '/' || path[n] == '\0' || n == 1);
}

static int refuse_inside(const char *dir)
{
	fprintf(stderr,
		"fnfs: the data directory %s lies inside the mountpoint; "
		"give a --data DIR outside it\n",
		dir);
	return -EINVAL;
}

/* Creates the data directory if needed and resolves it into `out`. It
 * must not lie inside the mountpoint: the daemon would then reach its own
 * filesystem and deadlock. The path is checked as written before anything
 * touches it, and again once symlinks are resolved. */
int fs_mount_prepare_datadir(const char *dir, const char *mp,
			     char out[PATH_MAX])
{
	char cwd[PATH_MAX], abs[2 * PATH_MAX + 2];
	struct stat st;
	int rc;

	if (dir[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(abs, sizeof(abs), "%s/%s", cwd, dir);
	else
		snprintf(abs, sizeof(abs), "%s", dir);
	if (path_within(abs, mp))
		return refuse_inside(abs);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		fprintf(stderr, "fnfs: data directory %s: %s\n", dir,
			strerror(errno));
		return rc;
	}
	if (realpath(dir, out) == NULL) {
		rc = -errno;
		fprintf(stderr, "fnfs: data directory %s: %s\n", dir,
			strerror(errno));
		return rc;
	}
	if (path_within(out, mp))
		return refuse_inside(out);
	if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fnfs: data directory %s is not a directory\n",
			out);
		return -ENOTDIR;
	}
	return 0;
}

/* Takes the data directory's lock, so that two controllers never share
 * one store. Returns the lock's fd or -errno. */
int fs_mount_lock_datadir(const char *dir)
{
	char path[PATH_MAX + 16], pid[32] = "";
	int fd, n, rc;

	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "fnfs: %s: %s\n", path, strerror(errno));
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	rc = -errno;
	snprintf(path, sizeof(path), "%s/fnfs.pid", dir);
	n = open(path, O_RDONLY | O_CLOEXEC);
	if (n >= 0) {
		ssize_t r = read(n, pid, sizeof(pid) - 1);

		pid[r > 0 ? r : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(n);
	}
	fprintf(stderr,
		"fnfs: %s is in use by another fnfs%s%s%s; unmount that "
		"one first, or give another --data DIR\n",
		dir, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
	close(fd);
	return rc == -EWOULDBLOCK ? -EBUSY : rc;
}

/* What fnfs keeps in the data directory, besides logs/ (its own tree). */
static const char *const own_files[] = {
	"fnfs.db",  "fnfs.db-wal", "fnfs.db-shm", "fnfs.db-journal",
	"fnfs.pid", "fnfs.log",	   "lock",	  "ctl.sock",
};

/* The CA (ca/), the store of code objects (code/) and the caches of
 * local workers (cache/ID/) keep the modes fnfs gave what is in them
 * (keys 0600, objects 0400, code trees readable by the users whose
 * functions run there, through their private parents): only those
 * directories themselves are made 0700, which keeps all below them
 * private. Returns 0 or -errno. */
static int private_tops(const char *dir)
{
	static const char *const tops[] = { "ca", "code", "cache" };
	char path[PATH_MAX + 32];
	struct dirent *e;
	size_t i;
	DIR *d;
	int rc = 0;

	for (i = 0; rc == 0 && i < sizeof(tops) / sizeof(*tops); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, tops[i]);
		if (chmod(path, RT_PRIVATE_DIR_MODE) < 0)
			rc = errno == ENOENT ? 0 : -errno;
	}
	snprintf(path, sizeof(path), "%s/cache", dir);
	d = rc == 0 ? opendir(path) : NULL;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		if (fchmodat(dirfd(d), e->d_name, RT_PRIVATE_DIR_MODE, 0) < 0)
			rc = -errno;
	}
	if (d != NULL)
		closedir(d);
	return rc;
}

/* Makes the data directory private, whatever its mode was and whatever
 * the umask: 0700 for it, for logs/ and every directory in it, 0600 for
 * each of fnfs's files (the store, its WAL and SHM, the pid file, the
 * lock, the log, the socket) and every log of instances. Only fnfs's own
 * files are changed: a --data pointing at a directory with other things
 * in it leaves those alone. DIR/logs is made here, so that workers,
 * which make it when missing, find it private. Returns 0 or -errno. */
int fs_mount_make_private(const char *dir)
{
	char path[PATH_MAX + 32];
	struct stat st;
	size_t i;
	int rc = 0;

	if (chmod(dir, RT_PRIVATE_DIR_MODE) < 0)
		rc = -errno;
	for (i = 0; rc == 0 && i < sizeof(own_files) / sizeof(*own_files);
	     i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, own_files[i]);
		if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) &&
		    !S_ISDIR(st.st_mode) &&
		    (st.st_mode & 07777) != RT_PRIVATE_FILE_MODE &&
		    chmod(path, RT_PRIVATE_FILE_MODE) < 0)
			rc = -errno;
	}
	snprintf(path, sizeof(path), "%s/logs", dir);
	if (rc == 0 && mkdir(path, RT_PRIVATE_DIR_MODE) < 0 && errno != EEXIST)
		rc = -errno;
	if (rc == 0)
		rc = rt_private_tree(path);
	if (rc == 0)
		rc = private_tops(dir);
	if (rc < 0)
		fprintf(stderr,
			"fnfs: cannot make the data directory %s private "
			"(0700, files 0600): %s\n",
			dir, strerror(-rc));
	return rc;
}

int fs_mount_write_pidfile(const char *dir)
{
	char path[PATH_MAX + 16], text[32];
	int fd, n, rc = 0;

	snprintf(path, sizeof(path), "%s/fnfs.pid", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		  RT_PRIVATE_FILE_MODE);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	if (fchmod(fd, RT_PRIVATE_FILE_MODE) < 0 ||
	    write(fd, text, (size_t)n) != n)
		rc = -EIO;
	close(fd);
	return rc;
}

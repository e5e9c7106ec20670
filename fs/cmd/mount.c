/*
 * mount.c - `fnfs mount`: prepares the data directory and the mountpoint
 * (made when missing; mount_dirs.c), detaches from the terminal, mounts, tells
 * systemd (NOTIFY_SOCKET) once it serves, and runs the one libuv loop that
 * serves FUSE requests until the filesystem is unmounted or a signal asks for
 * it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/base/private.h"
#include "../fs.h"
#include "mount_dirs.h"

/* How long `fnfs mount` waits for the background daemon to be ready. */
#define READY_TIMEOUT_MS 30000

/* How many requests one wake-up serves before letting other handles run. */
#define REQUESTS_PER_WAKEUP 64

/* ============================================================== systemd */

/* Where systemd wants to hear from a Type=notify service: the address of
 * $NOTIFY_SOCKET, a path or (after '@') an abstract name, and its length;
 * 0 when not run by a service manager. */
static struct sockaddr_un notify_addr;
static socklen_t notify_len;

/* Takes $NOTIFY_SOCKET out of the environment, so that workers and
 * functions, which inherit it, cannot speak for fnfs, and remembers it. */
static void notify_init(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	size_t n = s != NULL ? strlen(s) : 0;

	if (n >= 2 && n < sizeof(notify_addr.sun_path) &&
	    (s[0] == '/' || s[0] == '@')) {
		notify_addr.sun_family = AF_UNIX;
		memcpy(notify_addr.sun_path, s, n);
		if (s[0] == '@')
			notify_addr.sun_path[0] = '\0'; /* abstract: no NUL */
		else
			n++; /* a path: its NUL too */
		notify_len =
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else if (s != NULL) {
		rt_log(RT_LOG_WARN, "NOTIFY_SOCKET \"%s\" is not supported", s);
	}
	unsetenv("NOTIFY_SOCKET");
}

/* Sends one notification ("READY=1", ...) to systemd, if it listens: one
 * datagram, never blocking. Returns 0 or -errno. */
__attribute__((format(printf, 1, 2))) static int notify(const char *fmt, ...)
{
	char msg[PATH_MAX + 128];
	va_list ap;
	int fd, n, rc = 0;

	if (notify_len == 0)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EINVAL;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (sendto(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL,
		   (struct sockaddr *)&notify_addr, notify_len) < 0)
		rc = -errno;
	close(fd);
out:
	if (rc < 0)
		rt_log(RT_LOG_WARN, "cannot notify systemd: %s", strerror(-rc));
	return rc;
}

/* ============================================================= the loop */

static void on_sched_down(void *arg)
{
	struct fs *fs = arg;
	int i;

	for (i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&fs->sig[i], NULL);
	rt_log(RT_LOG_INFO, "every instance and local worker stopped");
}

/* Unmounts at once, then stops every instance and local worker; the loop
 * ends when they are gone (bounded by the stop grace period). A cluster's
 * controller leaves it (its key in etcd goes at once). */
static void fs_stop(struct fs *fs, const char *why)
{
	if (fs->stopping)
		return;
	fs->stopping = 1;
	rt_log(RT_LOG_INFO, "stopping: %s", why);
	notify("STOPPING=1\nSTATUS=stopping: %s", why);
	uv_poll_stop(&fs->poll);
	uv_close((uv_handle_t *)&fs->poll, NULL);
	if (fs->mounted) {
		fuse_session_unmount(fs->se);
		fs->mounted = 0;
		rt_log(RT_LOG_INFO, "unmounted %s", fs->mountpoint);
	}
	sched_cluster_leave(fs->sched);
	sched_shutdown(fs->sched, on_sched_down, fs);
}

static void on_fuse(uv_poll_t *p, int status, int events)
{
	struct fs *fs = p->data;
	int i, res;

	(void)events;
	if (status < 0) {
		/* The kernel ends the device with an error condition when the
		 * filesystem is unmounted; libuv reports that as EBADF. */
		if (status != UV_EBADF)
			rt_log(RT_LOG_ERROR, "poll on /dev/fuse: %s",
			       uv_strerror(status));
		fs_stop(fs,
			status == UV_EBADF ? "unmounted" : "FUSE device error");
		return;
	}
	for (i = 0; i < REQUESTS_PER_WAKEUP && !fs->stopping; i++) {
		res = fuse_session_receive_buf(fs->se, &fs->fbuf);
		if (res == -EINTR || res == -EAGAIN)
			return;
		if (res <= 0 || fuse_session_exited(fs->se)) {
			if (res < 0 && res != -ENODEV)
				rt_log(RT_LOG_ERROR, "reading /dev/fuse: %s",
				       strerror(-res));
			fs_stop(fs, "unmounted");
			return;
		}
		fuse_session_process_buf(fs->se, &fs->fbuf);
	}
}

static void on_signal(uv_signal_t *sig, int signum)
{
	fs_stop(sig->data, strsignal(signum));
}

/* How long a start that failed half-way waits for what began to stop. */
#define HALF_STOP_MS 15000

static void on_flag(void *arg)
{
	*(int *)arg = 1;
}

static void on_half_guard(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

/* A start that failed after sched_start (a cluster's join refused):
 * stops what began and runs `loop` until it has (bounded by
 * HALF_STOP_MS), so that the loop can be closed and nothing leaks. */
static void stop_half_started(struct fs *fs, uv_loop_t *loop)
{
	uv_timer_t guard;
	int down = 0, expired = 0, i;

	fs->stopping = 1;
	uv_timer_init(loop, &guard);
	guard.data = &expired;
	uv_timer_start(&guard, on_half_guard, HALF_STOP_MS, 0);
	sched_shutdown(fs->sched, on_flag, &down);
	while (!down && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&guard, NULL);
	for (i = 0; i < 100 && uv_run(loop, UV_RUN_NOWAIT) != 0; i++)
		;
}

/* Mounts and serves. `ready` is the write end of the readiness pipe, or
 * -1 in the foreground; it is closed once the mount is up, and stderr then
 * goes to `logpath` (when not NULL). */
static int serve(const char *mp, const char *datadir, int ready,
		 const char *logpath, const struct fs_options *opt)
{
	/* Every user reaches the tree, and the kernel checks the modes it
	 * shows; a user's own mount stays its own (allow_other would need
	 * user_allow_other in /etc/fuse.conf). */
	char *argv[] = { "fnfs", "-o",
			 geteuid() == 0 ? "fsname=fnfs,subtype=fnfs,"
					  "default_permissions,allow_other"
					: "fsname=fnfs,subtype=fnfs,"
					  "default_permissions",
			 NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fs fs;
	uv_loop_t loop;
	static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct sched_options so = { opt->workers,
				    opt->worker_memory,
				    NULL,
				    logpath,
				    opt->heartbeat_timeout,
				    opt->starts_per_minute,
				    opt->run_as_uid,
				    opt->run_as_gid,
				    opt->listen,
				    opt->insecure,
				    opt->name,
				    opt->leader_ttl,
				    opt->no_direct_calls };
	char self[PATH_MAX];
	ssize_t n;
	int i, fd, rc, loop_ok = 0, started = 0;

	memset(&fs, 0, sizeof(fs));
	fs.uid = getuid();
	fs.gid = getgid();
	fs.mount_ms = rt_now_ms();
	fs.mountpoint = mp;
	rc = uv_loop_init(&loop);
	if (rc < 0)
		goto out;
	loop_ok = 1;
	rc = sched_open_config(&fs.sched, datadir, &loop, &opt->store);
	if (rc < 0) {
		const char *why;
		int shared = store_config_check(&opt->store, &why) == 1;

		rt_log(RT_LOG_ERROR, "cannot open the store %s%s: %s",
		       shared ? "" : "in ", shared ? opt->store.url : datadir,
		       strerror(-rc));
		goto out;
	}
	fs.loop = &loop;
	fs.se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), &fs);
	if (fs.se == NULL) {
		rc = -EIO;
		goto out;
	}
	if (fuse_session_mount(fs.se, mp) != 0) {
		rt_log(RT_LOG_ERROR, "cannot mount at %s", mp);
		rc = -EIO;
		goto out;
	}
	fs.mounted = 1;
	fd = fuse_session_fd(fs.se);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* Workers must not inherit it: a worker holding the device would
	 * keep a crashed controller's mount half alive. */
	fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	so.self = self;
	rc = sched_start(fs.sched, &loop, &so);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot start serving workers: %s",
		       strerror(-rc));
		goto out;
	}
	started = 1;
	/* A cluster's controller joins it; followers forward to the
	 * leader, which serves them (alone: nothing is forwarded). */
	rc = sched_cluster_join(fs.sched, &loop, &opt->store, &so);
	if (rc < 0)
		goto out;
	fs_forward_serve(&fs);
	rc = uv_poll_init(&loop, &fs.poll, fd);
	if (rc == 0) {
		fs.poll.data = &fs;
		rc = uv_poll_start(&fs.poll, UV_READABLE, on_fuse);
	}
	for (i = 0; i < 3 && rc == 0; i++) {
		uv_signal_init(&loop, &fs.sig[i]);
		fs.sig[i].data = &fs;
		rc = uv_signal_start(&fs.sig[i], on_signal, signums[i]);
	}
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "loop setup: %s", uv_strerror(rc));
		goto out;
	}
	if (ready >= 0) {
		if (write(ready, "ok\n", 3) != 3)
			rt_log(RT_LOG_WARN, "could not report readiness");
		close(ready);
		ready = -1;
	}
	if (logpath != NULL) {
		fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			  RT_PRIVATE_FILE_MODE);
		if (fd >= 0) {
			if (fchmod(fd, RT_PRIVATE_FILE_MODE) < 0)
				rt_log(RT_LOG_WARN, "chmod %s: %s", logpath,
				       strerror(errno));
			dup2(fd, 2);
			close(fd);
		}
	}
	rt_log(RT_LOG_INFO, "mounted %s (data %s)", mp, datadir);
	/* Ready for systemd too, now that the loop is about to serve; a
	 * daemon that forked names itself as the main process. */
	if (opt->foreground)
		notify("READY=1\nSTATUS=serving %s", mp);
	else
		notify("READY=1\nMAINPID=%d\nSTATUS=serving %s", (int)getpid(),
		       mp);
	rc = uv_run(&loop, UV_RUN_DEFAULT);
	rc = rc < 0 ? rc : 0;
out:
	if (fs.mounted)
		fuse_session_unmount(fs.se);
	if (fs.se != NULL)
		fuse_session_destroy(fs.se);
	if (loop_ok) {
		sched_cluster_forget(fs.sched); /* a start that failed */
		if (rc < 0 && !fs.stopping && started)
			stop_half_started(&fs, &loop);
		if (rc < 0 && !fs.stopping && fs.sched != NULL) {
			/* A start that failed half-way: stop what began. */
			fs.stopping = 1;
			sched_shutdown(fs.sched, NULL, NULL);
		}
		uv_run(&loop, UV_RUN_NOWAIT); /* let closed handles finish */
		if (uv_loop_close(&loop) != 0)
			rt_log(RT_LOG_WARN, "loop closed with live handles");
	}
	free(fs.fbuf.mem);
	fuse_opt_free_args(&args); /* libfuse may have grown them */
	sched_close(fs.sched);
	return rc;
}

/* In the parent: waits for the daemon to say it is ready. */
static int wait_ready(int rfd, pid_t child, const char *datadir)
{
	char buf[8];
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	int n, status;

	n = poll(&p, 1, READY_TIMEOUT_MS);
	if (n == 0) {
		fprintf(stderr,
			"fnfs: the mount was not ready within %d s; stopping "
			"it; "
			"see %s/fnfs.log\n",
			READY_TIMEOUT_MS / 1000, datadir);
		/* A daemon that comes up after we said it failed would
		 * surprise everyone: it stops (and unmounts) now. */
		kill(child, SIGTERM);
		return 1;
	}
	n = (int)read(rfd, buf, sizeof(buf));
	if (n >= 2 && memcmp(buf, "ok", 2) == 0)
		return 0;
	/* The daemon failed; it said why on our stderr. */
	waitpid(child, &status, 0);
	return 1;
}

/* Whether the fnfs recorded in DIR/fnfs.pid is on its way out: it still
 * holds the data directory's lock (so it is that fnfs, not a process
 * that took its pid since), and is a zombie or has SIGKILL pending (a
 * kill -9 that lands during an fsync leaves it in the kernel for a
 * moment, still holding its mount and lock). Or it is gone (the lock is
 * free) but its dead mount is still at `mp`, which stat(2) shows as
 * live for up to the attribute timeout (1 s) after a recent access: the
 * caller waits for its ENOTCONN. A process that is gone, with its mount
 * gone too (fusermount3 -uz), or a pid now another process's, is not
 * waited for. */
static int owner_dying(const char *datadir, const char *mp)
{
	char path[PATH_MAX + 32], line[256];
	FILE *f;
	int pid = 0, dying = 0, fd;
	unsigned long long mask;

	snprintf(path, sizeof(path), "%s/lock", datadir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* no lock: nobody to wait for */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
		close(fd); /* free (or unknown): nobody holds it */
		return realpath(mp, path) != NULL &&
		       fs_mount_mounted_as(path, "fuse.fnfs");
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/fnfs.pid", datadir);
	f = fopen(path, "re");
	if (f == NULL || fscanf(f, "%d", &pid) != 1 || pid <= 0) {
		if (f)
			fclose(f);
		return 0; /* nothing known: do not wait */
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0; /* gone: the lock is another's, which refuses */
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "State:", 6) == 0)
			dying = strchr(line, 'Z') != NULL ||
				strchr(line, 'X') != NULL;
		else if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
			  sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
			 (mask & (1ULL << (SIGKILL - 1))))
			dying = 1;
		if (dying && strncmp(line, "State:", 6) != 0)
			break;
	}
	fclose(f);
	return dying;
}

int fs_mount_main(const struct fs_options *opt)
{
	char mp[PATH_MAX], datadir[PATH_MAX], logpath[PATH_MAX + 16];
	char pidpath[PATH_MAX + 16];
	int tries;
	int pipefd[2] = { -1, -1 }, lockfd = -1, rc, devnull;
	pid_t pid;

	notify_init();
	/* A controller killed a moment ago may still be leaving: wait for
	 * it (bounded) rather than refuse. */
	for (tries = 0;
	     owner_dying(opt->datadir, opt->mountpoint) && tries < 50;
	     tries++) {
		struct stat st;

		if (stat(opt->mountpoint, &st) < 0 && errno == ENOTCONN)
			break; /* dead already: cleaned up below */
		usleep(100000);
	}
	if (fs_mount_prepare_mountpoint(opt->mountpoint, mp) < 0)
		return 1;
	/* Whatever the daemon, its workers and the store create is private
	 * from here on (functions get 022 back where they start). */
	umask(077);
	if (fs_mount_prepare_datadir(opt->datadir, mp, datadir) < 0)
		return 1;
	/* `mounts` writes refuse them (sched.h). */
	if (sched_spec_reserve(datadir, mp) < 0)
		return 1;
	if (!opt->foreground) {
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			perror("fnfs: pipe");
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			perror("fnfs: fork");
			return 1;
		}
		if (pid > 0) {
			close(pipefd[1]);
			return wait_ready(pipefd[0], pid, datadir);
		}
		close(pipefd[0]);
		setsid();
	}
	/* Nothing the caller had open goes on to the workers and functions. */
	rt_close_fds(pipefd[1]);
	lockfd = fs_mount_lock_datadir(datadir);
	if (lockfd < 0)
		return 1;
	if (fs_mount_make_private(datadir) < 0) {
		close(lockfd);
		return 1;
	}
	if (fs_mount_write_pidfile(datadir) < 0)
		rt_log(RT_LOG_WARN, "cannot write %s/fnfs.pid", datadir);
	if (chdir("/") < 0)
		rt_log(RT_LOG_WARN, "chdir /: %s", strerror(errno));
	snprintf(logpath, sizeof(logpath), "%s/fnfs.log", datadir);
	if (!opt->foreground) {
		/* Errors before the mount is up still reach the terminal,
		 * through the inherited stderr; after it, the log file. */
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			close(devnull);
		}
	}
	signal(SIGPIPE, SIG_IGN); /* a worker that hangs up is a read error */
	rc = serve(mp, datadir, pipefd[1], opt->foreground ? NULL : logpath,
		   opt);
	snprintf(pidpath, sizeof(pidpath), "%s/fnfs.pid", datadir);
	unlink(pidpath);
	close(lockfd);
	return rc < 0 ? 1 : 0;
}

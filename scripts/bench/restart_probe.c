/*
 * restart_probe.c - times restarts of scripts/bench/tiny for
 * scripts/bench/restart.
 *
 *   restart_probe [-s MS] floor TINY N
 *   restart_probe [-s MS] floor-cgroup CGROUP_DIR TINY N
 *   restart_probe [-s MS] fnfs INSTANCE_DIR TINY N
 *   restart_probe [-s MS] fnfs-sh INSTANCE_DIR TINY N
 *   restart_probe [-s MS] runsv SERVICE_DIR TINY N
 *   restart_probe [-s MS] sv SERVICE_DIR TINY N
 *   restart_probe [-s MS] supervisorctl CONF PROGRAM SUPERVISORD_PID TINY N
 *
 * Each mode does one warm-up restart, then N timed ones, and prints one
 * line per timed restart:
 *
 *   RETURNED_US RUNNING_US NEW_PID
 *
 * Both times start just before the restart is asked for. RETURNED_US ends
 * when the request returns; RUNNING_US ends when a pid other than the old
 * one is seen executing TINY (its /proc/PID/exe is TINY's file), which is
 * what "a new pid is running" means here: a pid that is still a shell or
 * a supervisor's fork on its way to exec TINY does not count.
 *
 *   floor          the program's own child: kill(SIGTERM), waitpid, then
 *                  posix_spawn, which returns once the child has exec'd
 *   floor-cgroup   the same, plus a memory limit the way fnfs sets one:
 *                  the memory cgroup CGROUP_DIR removed and made again
 *                  with a 128 MB limit before the spawn, and the new
 *                  child written to its cgroup.procs after it, all before
 *                  the restart counts; CGROUP_DIR's parent must exist
 *   fnfs           open INSTANCE_DIR/restart, write(2) "1\n", close; the
 *                  new pid is read from INSTANCE_DIR/pid
 *   fnfs-sh        /bin/sh -c 'echo 1 > INSTANCE_DIR/restart', started
 *                  and waited for; the pid as for fnfs
 *   runsv          write "tcu" (term, cont, up: what `sv restart` sends)
 *                  to SERVICE_DIR/supervise/control, without sv; the pid
 *                  from SERVICE_DIR/supervise/pid
 *   sv             `sv restart SERVICE_DIR`, started and waited for; the
 *                  pid as for runsv
 *   supervisorctl  `supervisorctl -c CONF restart PROGRAM`, started and
 *                  waited for; the pid is the child of SUPERVISORD_PID
 *
 * With -s MS, each timed restart waits until the program has run for MS
 * milliseconds (since the probe saw it start): runsv, for one, sleeps a
 * second before it starts again a program that ran for less than one.
 *
 * Commands are started with posix_spawn, as a shell would start them,
 * with their standard output to /dev/null. Every wait is bounded (10 s);
 * a restart that does not happen in time is an error (exit 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define WAIT_NS (10LL * 1000 * 1000 * 1000)
#define POLL_NS (20 * 1000)
#define BUF_LEN 4096

enum mode { FLOOR, FNFS, FNFS_SH, RUNSV, SV, SUPERVISORCTL };

static enum mode mode;
static const char *dir;	    /* INSTANCE_DIR or SERVICE_DIR */
static const char *conf;    /* supervisorctl */
static const char *program; /* supervisorctl */
static pid_t parent;	    /* supervisord */
static struct stat tiny_st;
static long long settle_ns; /* -s */
static char pid_path[BUF_LEN];
static char ctl_path[BUF_LEN];

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "restart_probe: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pause_poll(void)
{
	struct timespec ts = { 0, POLL_NS };

	nanosleep(&ts, NULL);
}

/* Waits until `settle_ns` have passed since `since`. */
static void settle(long long since)
{
	long long left = since + settle_ns - now_ns();
	struct timespec ts;

	if (left <= 0)
		return;
	ts.tv_sec = left / 1000000000LL;
	ts.tv_nsec = left % 1000000000LL;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Whether `pid` exists and executes TINY (not a zombie: a zombie has no
 * executable). */
static int is_tiny(pid_t pid)
{
	char path[64];
	struct stat st;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, &st) == 0 && st.st_dev == tiny_st.st_dev &&
	       st.st_ino == tiny_st.st_ino;
}

/* Reads a small file into `buf`; returns its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1 &&
	       (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* The supervised program's pid as its supervisor tells it, or 0. */
static pid_t current_pid(void)
{
	char buf[BUF_LEN];
	char *p, *end;
	long v;

	if (read_small(pid_path, buf, sizeof(buf)) <= 0)
		return 0;
	/* supervisord's children: the first one that is TINY, else the
	 * first one. The others: the file holds one number. */
	for (p = buf;;) {
		v = strtol(p, &end, 10);
		if (end == p || v <= 0)
			break;
		if (mode != SUPERVISORCTL || is_tiny((pid_t)v))
			return (pid_t)v;
		p = end;
	}
	v = strtol(buf, &end, 10);
	return end != buf && v > 0 ? (pid_t)v : 0;
}

/* Starts argv (stdout to /dev/null) and waits for it; dies unless it
 * exits 0. */
static void run(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		die("cannot start %s: %s", argv[0], strerror(errno));
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid %s", argv[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s failed", argv[0]);
}

/* Writes `s` to `path` in one write(2) between open and close. */
static void write_file(const char *path, const char *s, int flags)
{
	size_t n = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);

	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	if (write(fd, s, n) != (ssize_t)n)
		die("cannot write %s: %s", path, strerror(errno));
	if (close(fd) < 0)
		die("cannot close %s: %s", path, strerror(errno));
}

/* Asks for one restart, the way the mode does. */
static void restart(void)
{
	char restart_path[BUF_LEN];

	switch (mode) {
	case FNFS:
		snprintf(restart_path, sizeof(restart_path), "%s/restart", dir);
		write_file(restart_path, "1\n", 0);
		break;
	case FNFS_SH: {
		char *argv[] = { "/bin/sh", "-c",	  "echo 1 > \"$1\"",
				 "sh",	    restart_path, NULL };

		snprintf(restart_path, sizeof(restart_path), "%s/restart", dir);
		run(argv);
		break;
	}
	case RUNSV: write_file(ctl_path, "tcu", O_NONBLOCK); break;
	case SV: {
		char *argv[] = { "/usr/bin/sv", "restart", (char *)dir, NULL };

		run(argv);
		break;
	}
	case SUPERVISORCTL: {
		char *argv[] = {
			"/usr/bin/supervisorctl", "-c", (char *)conf, "restart",
			(char *)program,	  NULL
		};

		run(argv);
		break;
	}
	case FLOOR: break;
	}
}

/* Waits, bounded, until a pid other than `old` executes TINY. */
static pid_t wait_new(pid_t old, long long t0)
{
	pid_t pid;

	for (;;) {
		pid = current_pid();
		if (pid > 0 && pid != old && is_tiny(pid))
			return pid;
		if (now_ns() - t0 > WAIT_NS)
			die("%s: no new pid running the program within 10 s",
			    dir);
		pause_poll();
	}
}

/* One restart; `started` is when the program was seen to start, or 0.
 * Returns when the new one was seen to start. */
static long long one_supervised(int print, long long started)
{
	long long t0, t1, t2;
	pid_t old, pid;

	t0 = now_ns();
	while (!is_tiny(old = current_pid())) {
		if (now_ns() - t0 > WAIT_NS)
			die("%s: the program is not running", dir);
		pause_poll();
	}
	if (print && started > 0)
		settle(started);
	t0 = now_ns();
	restart();
	t1 = now_ns();
	pid = wait_new(old, t0);
	t2 = now_ns();
	if (is_tiny(old))
		die("%s: the old pid still runs the program", dir);
	if (print)
		printf("%.1f %.1f %d\n", (t1 - t0) / 1e3, (t2 - t0) / 1e3,
		       (int)pid);
	return t2;
}

static pid_t spawn_tiny(const char *tiny)
{
	char *argv[] = { (char *)tiny, NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, tiny, NULL, NULL, argv, environ);

	if (rc != 0) {
		errno = rc;
		die("cannot start %s: %s", tiny, strerror(errno));
	}
	return pid;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0)
		if (errno != EINTR)
			die("waitpid %s", "tiny");
}

/* Writes `s` to the file `name` in the directory `cg`; returns -1 on
 * failure. */
static int cg_write(const char *cg, const char *name, const char *s)
{
	char path[BUF_LEN];
	size_t n = strlen(s);
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", cg, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, n) == (ssize_t)n;
	return close(fd) == 0 && ok ? 0 : -1;
}

/* A fresh memory cgroup `cg` limited to 128 MB, as fnfs makes one for an
 * instance before each start. */
static void cg_fresh(const char *cg)
{
	const char *limit = "134217728";

	rmdir(cg);
	if (mkdir(cg, 0755) < 0)
		die("cannot make %s: %s", cg, strerror(errno));
	if (cg_write(cg, "memory.limit_in_bytes", limit) < 0 &&
	    cg_write(cg, "memory.max", limit) < 0)
		die("cannot set a memory limit in %s", cg);
	cg_write(cg, "memory.memsw.limit_in_bytes", limit);
	cg_write(cg, "memory.swap.max", "0");
}

static void cg_add(const char *cg, pid_t pid)
{
	char text[32];

	snprintf(text, sizeof(text), "%d", (int)pid);
	if (cg_write(cg, "cgroup.procs", text) < 0)
		die("cannot move pid %s into its cgroup", text);
}

/* `cg` is NULL for the plain floor. */
static void floor_run(const char *tiny, const char *cg, int n)
{
	long long t0, t1 = now_ns();
	pid_t pid;
	int i;

	if (cg != NULL)
		cg_fresh(cg);
	pid = spawn_tiny(tiny);
	if (cg != NULL)
		cg_add(cg, pid);
	for (i = -1; i < n; i++) {
		if (i >= 0)
			settle(t1);
		t0 = now_ns();
		kill(pid, SIGTERM);
		reap(pid);
		if (cg != NULL)
			cg_fresh(cg);
		pid = spawn_tiny(tiny);
		if (cg != NULL)
			cg_add(cg, pid);
		t1 = now_ns();
		if (!is_tiny(pid))
			die("%s: the spawned pid does not run it", tiny);
		if (i >= 0)
			printf("%.1f %.1f %d\n", (t1 - t0) / 1e3,
			       (t1 - t0) / 1e3, (int)pid);
	}
	kill(pid, SIGTERM);
	reap(pid);
	if (cg != NULL)
		rmdir(cg);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: restart_probe [-s MS] floor TINY N\n"
		"       restart_probe [-s MS] floor-cgroup CGROUP_DIR TINY N\n"
		"       restart_probe [-s MS] fnfs|fnfs-sh INSTANCE_DIR TINY "
		"N\n"
		"       restart_probe [-s MS] runsv|sv SERVICE_DIR TINY N\n"
		"       restart_probe [-s MS] supervisorctl CONF PROGRAM "
		"SUPERVISORD_PID TINY N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tiny;
	long long started = 0;
	int n, i, want;

	if (argc > 2 && strcmp(argv[1], "-s") == 0) {
		settle_ns = atoll(argv[2]) * 1000000LL;
		argc -= 2;
		argv += 2;
	}
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "floor") == 0)
		mode = FLOOR, want = 4;
	else if (strcmp(argv[1], "floor-cgroup") == 0)
		mode = FLOOR, want = 5;
	else if (strcmp(argv[1], "fnfs") == 0)
		mode = FNFS, want = 5;
	else if (strcmp(argv[1], "fnfs-sh") == 0)
		mode = FNFS_SH, want = 5;
	else if (strcmp(argv[1], "runsv") == 0)
		mode = RUNSV, want = 5;
	else if (strcmp(argv[1], "sv") == 0)
		mode = SV, want = 5;
	else if (strcmp(argv[1], "supervisorctl") == 0)
		mode = SUPERVISORCTL, want = 7;
	else
		usage();
	if (argc != want)
		usage();
	tiny = argv[argc - 2];
	n = atoi(argv[argc - 1]);
	if (n <= 0)
		usage();
	if (stat(tiny, &tiny_st) < 0)
		die("cannot stat %s", tiny);
	/* Polls sleep 20 us; no slack rounds that up. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mode == FLOOR) {
		floor_run(tiny, want == 5 ? argv[2] : NULL, n);
		return 0;
	}
	dir = argv[2];
	switch (mode) {
	case FNFS:
	case FNFS_SH:
		snprintf(pid_path, sizeof(pid_path), "%s/pid", dir);
		break;
	case RUNSV:
	case SV:
		snprintf(pid_path, sizeof(pid_path), "%s/supervise/pid", dir);
		snprintf(ctl_path, sizeof(ctl_path), "%s/supervise/control",
			 dir);
		break;
	case SUPERVISORCTL:
		conf = argv[2];
		program = argv[3];
		parent = (pid_t)atoi(argv[4]);
		if (parent <= 0)
			usage();
		snprintf(pid_path, sizeof(pid_path),
			 "/proc/%d/task/%d/children", (int)parent, (int)parent);
		break;
	case FLOOR: break;
	}
	for (i = -1; i < n; i++)
		started = one_supervised(i >= 0, started);
	return 0;
}

/*
 * wait_running.c - for scripts/bench/failover: optionally kills a process
 * with SIGKILL, then polls an fnfs mount until N instances of a function
 * run on one worker, and prints how long that took.
 *
 *	wait_running KILLPID N TIMEOUT_MS FN_STATUS WORKER_STATUS ASSIGNMENTS
 *
 * KILLPID     the process to kill -9 first (0: kill nothing)
 * N           how many instances must run
 * TIMEOUT_MS  give up (exit 1) after this long
 * FN_STATUS   the function's status file: its "running" line must be N
 * WORKER_STATUS  the worker's status file: "instances" must be N
 * ASSIGNMENTS the worker's assignments/ directory: N entries
 *
 * The clock starts just before kill(2). Each poll reads the worker's
 * status first and, only when that one is satisfied, the function's
 * status and the assignments directory, so that a poll costs one
 * open+read+close of the FUSE filesystem while the instances are moving;
 * polls are 1 ms apart (--interval-us changes it; it comes first). It
 * prints one line:
 *
 *	elapsed_ms E kill_epoch_ms K polls P
 *
 * where K is the wall-clock time of the kill, in ms since the epoch, to
 * compare with the timestamps of fnfs's events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long number_arg(const char *s, const char *what, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max) {
		fprintf(stderr, "wait_running: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

/* The value of the flat-keyed line "KEY VALUE" of PATH, or -1 when the
 * file cannot be read or has no such line. */
static long read_key(const char *path, const char *key)
{
	char buf[8192], *p;
	size_t klen = strlen(key);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; p != NULL && *p != '\0';) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
			return strtol(p + klen + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

static long count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	long interval_us = 1000, kill_pid, want, timeout_ms, polls = 0;
	const char *fn_status, *worker_status, *assignments;
	double t0, k_real, now;
	struct timespec pause;

	if (argc > 2 && strcmp(argv[1], "--interval-us") == 0) {
		interval_us = number_arg(argv[2], "interval", 1000000);
		argv += 2;
		argc -= 2;
	}
	if (argc != 7) {
		fprintf(stderr, "usage: wait_running [--interval-us U] KILLPID "
				"N TIMEOUT_MS FN_STATUS WORKER_STATUS "
				"ASSIGNMENTS\n");
		return 2;
	}
	kill_pid = number_arg(argv[1], "KILLPID", 1L << 30);
	want = number_arg(argv[2], "N", 1000000);
	timeout_ms = number_arg(argv[3], "TIMEOUT_MS", 3600000);
	fn_status = argv[4];
	worker_status = argv[5];
	assignments = argv[6];
	pause.tv_sec = interval_us / 1000000;
	pause.tv_nsec = (interval_us % 1000000) * 1000;

	t0 = mono_ms();
	k_real = real_ms();
	if (kill_pid > 0 && kill((pid_t)kill_pid, SIGKILL) < 0) {
		fprintf(stderr, "wait_running: kill %ld: %s\n", kill_pid,
			strerror(errno));
		return 1;
	}
	for (;;) {
		polls++;
		if (read_key(worker_status, "instances") == want &&
		    read_key(fn_status, "running") == want &&
		    count_entries(assignments) == want)
			break;
		now = mono_ms();
		if (now - t0 > (double)timeout_ms) {
			fprintf(stderr,
				"wait_running: not all %ld running after %ld "
				"ms (worker instances %ld, function running "
				"%ld, assignments %ld)\n",
				want, timeout_ms,
				read_key(worker_status, "instances"),
				read_key(fn_status, "running"),
				count_entries(assignments));
			return 1;
		}
		if (interval_us > 0)
			nanosleep(&pause, NULL);
	}
	now = mono_ms();
	printf("elapsed_ms %.1f kill_epoch_ms %lld polls %ld\n", now - t0,
	       (long long)k_real, polls); /* truncated, as the journal's */
	return 0;
}

/*
 * invoke_loop.c - times calls of a function through its invoke file, and
 * the floor they are compared with, for scripts/bench/calls.
 *
 *   invoke_loop keep INVOKE WARM N          one open; per call write+read
 *   invoke_loop reopen INVOKE WARM N        per call open+write+read+close
 *   invoke_loop floor ECHOFS_FILE UPPER WARM N
 *   invoke_loop spawn WARM N PROGRAM ARG...
 *   invoke_loop conc INVOKE THREADS WARM_MS RUN_MS
 *
 * Every call sends the request "hello world\n" and must get back exactly
 * "HELLO WORLD\n" (what scripts/bench/upper answers, hot or cold); any
 * other answer, or a failed system call, ends the program with status 1.
 * A call is done once those 12 bytes are read: the end of file that
 * follows them on an invoke file is not read, so a call is one WRITE and
 * one READ request to the FUSE server (plus OPEN and RELEASE in reopen).
 *
 * The sequential modes do WARM calls untimed, then N timed ones, and print
 * one line per timed call, in microseconds (CLOCK_MONOTONIC):
 *
 *   keep     the invoke file opened once (O_RDWR); each call a write(2)
 *            of the request and read(2)s of the response on that fd
 *   reopen   each call open(O_RDWR), write, read, close: the same four
 *            requests (OPEN, WRITE, READ, RELEASE) as a call from the
 *            shell, and the same as the floor's FUSE part
 *   floor    each iteration: the same open+write+read+close on
 *            ECHOFS_FILE (scripts/bench/minfs.c --echo, which answers the
 *            upper-cased request itself), then two round trips through
 *            pipes to one child running UPPER (write the request to its
 *            stdin, read the answer from its stdout, twice). Prints
 *            three columns: the whole iteration, its FUSE part, its
 *            pipe part, each timed by the same clock in the same
 *            iteration (the first is the sum of the other two)
 *   spawn    each call posix_spawn(PROGRAM ARG...) with the request on its
 *            stdin (a pipe, written and closed before the clock starts)
 *            and its stdout a pipe read to its end, then waitpid; exit
 *            status 0 required. Times the command, process start and
 *            dynamic loading included
 *
 * conc runs THREADS threads, each with its own invoke fd (opened once),
 * doing calls as in keep: WARM_MS milliseconds untimed (so that a hot
 * function can scale out), then, from a common start, calls for RUN_MS
 * milliseconds; a thread finishes the call it is in at the end. Prints
 * one line:
 *
 *   CALLS_PER_S CALLS SECONDS MEDIAN_US P99_US
 *
 * CALLS is the number of calls begun in the run window (all finished),
 * SECONDS from the common start until the last thread finished, and the
 * latencies are over every one of those calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char request[] = "hello world\n";
static const char expect[] = "HELLO WORLD\n";
#define REQ_LEN	   (sizeof(request) - 1)
#define EXPECT_LEN (sizeof(expect) - 1)

static void die(const char *what)
{
	fprintf(stderr, "invoke_loop: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void die_msg(const char *what)
{
	fprintf(stderr, "invoke_loop: %s\n", what);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		die("clock_gettime");
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long count_arg(const char *s, const char *what, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min ||
	    v > 100000000) {
		fprintf(stderr, "invoke_loop: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static void write_all(int fd, const char *p, size_t len, const char *what)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(what);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Reads the expected answer from `fd`, and checks it: only as many bytes
 * as it holds, so that no read waits for an end of file. */
static void read_answer(int fd, const char *what)
{
	char buf[256];
	size_t got = 0;
	ssize_t n;

	while (got < EXPECT_LEN) {
		n = read(fd, buf + got, sizeof(buf) - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(what);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got != EXPECT_LEN || memcmp(buf, expect, EXPECT_LEN) != 0) {
		fprintf(stderr, "invoke_loop: %s: answer \"%.*s\"\n", what,
			(int)got, buf);
		exit(1);
	}
}

/* One call on an open invoke fd. */
static void call_fd(int fd)
{
	write_all(fd, request, REQ_LEN, "write");
	read_answer(fd, "read");
}

/* One call with its own open and close. */
static void call_reopen(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die(path);
	call_fd(fd);
	if (close(fd) < 0)
		die("close");
}

/* ================================================================ floor */

struct child {
	pid_t pid;
	int in;	 /* its stdin */
	int out; /* its stdout */
};

static void start_child(const char *prog, struct child *c)
{
	int ip[2], op[2], rc;
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)prog, NULL };

	if (pipe2(ip, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0)
		die("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ip[0], 0);
	posix_spawn_file_actions_adddup2(&fa, op[1], 1);
	rc = posix_spawn(&c->pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		die(prog);
	}
	close(ip[0]);
	close(op[1]);
	c->in = ip[1];
	c->out = op[0];
}

static void stop_child(struct child *c)
{
	int status;

	close(c->in);
	close(c->out);
	if (waitpid(c->pid, &status, 0) < 0)
		die("waitpid");
}

/* One round trip through the child's pipes. */
static void pipe_trip(const struct child *c)
{
	write_all(c->in, request, REQ_LEN, "write to the child");
	read_answer(c->out, "read from the child");
}

static int run_floor(const char *path, const char *prog, long warm, long n)
{
	struct child c;
	double t0, t1, t2;
	long i;

	start_child(prog, &c);
	for (i = 0; i < warm; i++) {
		call_reopen(path);
		pipe_trip(&c);
		pipe_trip(&c);
	}
	for (i = 0; i < n; i++) {
		t0 = now_us();
		call_reopen(path);
		t1 = now_us();
		pipe_trip(&c);
		pipe_trip(&c);
		t2 = now_us();
		printf("%.2f %.2f %.2f\n", t2 - t0, t1 - t0, t2 - t1);
	}
	stop_child(&c);
	return 0;
}

/* ================================================================ spawn */

static void spawn_call(char **argv)
{
	int ip[2], op[2], rc, status;
	posix_spawn_file_actions_t fa;
	char buf[256];
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(ip, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0)
		die("pipe");
	write_all(ip[1], request, REQ_LEN, "write the request");
	close(ip[1]);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ip[0], 0);
	posix_spawn_file_actions_adddup2(&fa, op[1], 1);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(ip[0]);
	close(op[1]);
	if (rc != 0) {
		errno = rc;
		die(argv[0]);
	}
	for (;;) {
		n = read(op[0], buf + got, sizeof(buf) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read the output");
		if (n == 0 || (got += (size_t)n) == sizeof(buf))
			break;
	}
	close(op[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die_msg("the command failed");
	if (got != EXPECT_LEN || memcmp(buf, expect, EXPECT_LEN) != 0) {
		fprintf(stderr, "invoke_loop: the command printed \"%.*s\"\n",
			(int)got, buf);
		exit(1);
	}
}

/* ========================================================= concurrency */

/* What the threads share: set by the main thread between the two
 * barriers, read by the threads after the second. */
struct window {
	pthread_barrier_t warmed, go;
	double warm_end, start, stop;
};

struct worker {
	pthread_t th;
	const char *path;
	struct window *win;
	double finished;
	double *lat; /* the latencies of its timed calls */
	size_t n, cap;
};

static void *conc_thread(void *arg)
{
	struct worker *w = arg;
	struct window *win = w->win;
	double t0, t1;
	int fd = open(w->path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die(w->path);
	while (now_us() < win->warm_end)
		call_fd(fd);
	pthread_barrier_wait(&win->warmed);
	pthread_barrier_wait(&win->go);
	while ((t0 = now_us()) < win->stop) {
		call_fd(fd);
		t1 = now_us();
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 4096;
			w->lat = realloc(w->lat, w->cap * sizeof(*w->lat));
			if (w->lat == NULL)
				die("realloc");
		}
		w->lat[w->n++] = t1 - t0;
	}
	w->finished = now_us();
	close(fd);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int run_conc(const char *path, long threads, long warm_ms, long run_ms)
{
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	struct window win;
	double last = 0, *all, med, p99, secs;
	size_t total = 0, k = 0, r;
	long i;

	if (w == NULL)
		die("calloc");
	win.warm_end = now_us() + (double)warm_ms * 1e3;
	pthread_barrier_init(&win.warmed, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&win.go, NULL, (unsigned)threads + 1);
	for (i = 0; i < threads; i++) {
		w[i].path = path;
		w[i].win = &win;
		if (pthread_create(&w[i].th, NULL, conc_thread, &w[i]) != 0)
			die_msg("pthread_create failed");
	}
	/* Every thread has finished its warm-up calls: the window starts
	 * now, for all of them. */
	pthread_barrier_wait(&win.warmed);
	win.start = now_us();
	win.stop = win.start + (double)run_ms * 1e3;
	pthread_barrier_wait(&win.go);
	for (i = 0; i < threads; i++)
		pthread_join(w[i].th, NULL);
	for (i = 0; i < threads; i++)
		total += w[i].n;
	if (total == 0)
		die_msg("no call finished");
	all = malloc(total * sizeof(*all));
	if (all == NULL)
		die("malloc");
	for (i = 0; i < threads; i++) {
		memcpy(all + k, w[i].lat, w[i].n * sizeof(*all));
		k += w[i].n;
		if (w[i].finished > last)
			last = w[i].finished;
		free(w[i].lat);
	}
	qsort(all, total, sizeof(*all), cmp_double);
	med = total % 2 ? all[total / 2]
			: (all[total / 2 - 1] + all[total / 2]) / 2;
	/* The 99th percentile by nearest rank. */
	r = (size_t)((double)total * 0.99);
	if ((double)r < (double)total * 0.99)
		r++;
	p99 = all[(r ? r : 1) - 1];
	secs = (last - win.start) / 1e6;
	printf("%.1f %zu %.4f %.2f %.2f\n", (double)total / secs, total, secs,
	       med, p99);
	free(all);
	free(w);
	pthread_barrier_destroy(&win.warmed);
	pthread_barrier_destroy(&win.go);
	return 0;
}

/* ================================================================= main */

static void usage(void)
{
	fputs("usage: invoke_loop keep INVOKE WARM N\n"
	      "       invoke_loop reopen INVOKE WARM N\n"
	      "       invoke_loop floor ECHOFS_FILE UPPER WARM N\n"
	      "       invoke_loop spawn WARM N PROGRAM ARG...\n"
	      "       invoke_loop conc INVOKE THREADS WARM_MS RUN_MS\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double t0;
	long i, warm, n;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	if (strcmp(mode, "keep") == 0 && argc == 5) {
		warm = count_arg(argv[3], "WARM", 0);
		n = count_arg(argv[4], "N", 1);
		fd = open(argv[2], O_RDWR | O_CLOEXEC);
		if (fd < 0)
			die(argv[2]);
		for (i = 0; i < warm; i++)
			call_fd(fd);
		for (i = 0; i < n; i++) {
			t0 = now_us();
			call_fd(fd);
			printf("%.2f\n", now_us() - t0);
		}
		close(fd);
	} else if (strcmp(mode, "reopen") == 0 && argc == 5) {
		warm = count_arg(argv[3], "WARM", 0);
		n = count_arg(argv[4], "N", 1);
		for (i = 0; i < warm; i++)
			call_reopen(argv[2]);
		for (i = 0; i < n; i++) {
			t0 = now_us();
			call_reopen(argv[2]);
			printf("%.2f\n", now_us() - t0);
		}
	} else if (strcmp(mode, "floor") == 0 && argc == 6) {
		return run_floor(argv[2], argv[3],
				 count_arg(argv[4], "WARM", 0),
				 count_arg(argv[5], "N", 1));
	} else if (strcmp(mode, "spawn") == 0 && argc >= 5) {
		warm = count_arg(argv[2], "WARM", 0);
		n = count_arg(argv[3], "N", 1);
		for (i = 0; i < warm; i++)
			spawn_call(argv + 4);
		for (i = 0; i < n; i++) {
			t0 = now_us();
			spawn_call(argv + 4);
			printf("%.2f\n", now_us() - t0);
		}
	} else if (strcmp(mode, "conc") == 0 && argc == 6) {
		return run_conc(argv[2], count_arg(argv[3], "THREADS", 1),
				count_arg(argv[4], "WARM_MS", 0),
				count_arg(argv[5], "RUN_MS", 1));
	} else {
		usage();
	}
	return 0;
}

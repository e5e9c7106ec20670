/*
 * oprc.c - times open+read+close of one file, for scripts/bench/fs-latency.
 *
 *	oprc PATH ITER REPS
 *
 * Does ITER warm-up operations, then REPS batches of ITER operations, each
 * an open(O_RDONLY), one read of up to 4096 bytes and a close. Prints the
 * median over the batches of the microseconds per operation. Any failed
 * call, or a read that returns no data, ends it with an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "oprc: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void one_op(const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("open", path);
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		fail("read", path);
	if (n == 0) {
		fprintf(stderr, "oprc: read %s: no data\n", path);
		exit(1);
	}
	if (close(fd) < 0)
		fail("close", path);
}

static double now_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) {
		perror("oprc: clock_gettime");
		exit(1);
	}
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static long count_arg(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 100000000) {
		fprintf(stderr, "oprc: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *path;
	long iter, reps, i, r;
	double *per_op, t0, median;

	if (argc != 4) {
		fprintf(stderr, "usage: oprc PATH ITER REPS\n");
		return 2;
	}
	path = argv[1];
	iter = count_arg(argv[2], "ITER");
	reps = count_arg(argv[3], "REPS");
	per_op = calloc((size_t)reps, sizeof(*per_op));
	if (per_op == NULL) {
		perror("oprc");
		return 1;
	}
	for (i = 0; i < iter; i++)
		one_op(path);
	for (r = 0; r < reps; r++) {
		t0 = now_us();
		for (i = 0; i < iter; i++)
			one_op(path);
		per_op[r] = (now_us() - t0) / (double)iter;
	}
	qsort(per_op, (size_t)reps, sizeof(*per_op), cmp_double);
	median = reps % 2 ? per_op[reps / 2]
			  : (per_op[reps / 2 - 1] + per_op[reps / 2]) / 2;
	printf("%.3f\n", median);
	free(per_op);
	return 0;
}

/*
 * write_loop.c - times writes of a function attribute through a mounted
 * fnfs, for scripts/bench/etcd-write.
 *
 *   write_loop FILE WARM N VALUE_A VALUE_B
 *
 * Each write is what `echo VALUE > FILE` does: open(O_WRONLY | O_CREAT |
 * O_TRUNC), one write(2) of the value and a newline, close(2). fnfs
 * applies an attribute's value at close (the FUSE flush), and close
 * returns once the write is acknowledged: on SQLite once it is committed,
 * on etcd once the txn is committed and the mount's own watch has brought
 * it back. The values alternate (A, B, A, ...) so that every write changes
 * the function and makes a new revision (a write of the value the
 * function already has changes nothing and is answered at once).
 *
 * WARM writes untimed, then N timed ones; prints one line per timed write,
 * in microseconds (CLOCK_MONOTONIC): the whole write (from before open to
 * after close), then its open, its write and its close. Any failed system
 * call ends the program with status 1.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One `echo value > path`, its three calls' ends in t[0..2]; 0 or -1
 * (with a message). */
static int write_once(const char *path, const char *line, size_t len,
		      double t[3])
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t w;

	t[0] = now_us();
	if (fd < 0) {
		perror(path);
		return -1;
	}
	w = write(fd, line, len);
	t[1] = now_us();
	if (w != (ssize_t)len) {
		perror(w < 0 ? "write" : "write (short)");
		close(fd);
		return -1;
	}
	if (close(fd) < 0) {
		perror("close");
		return -1;
	}
	t[2] = now_us();
	return 0;
}

int main(int argc, char **argv)
{
	char line[2][256];
	size_t len[2];
	int warm, n, i;

	if (argc != 6) {
		fprintf(stderr,
			"usage: write_loop FILE WARM N VALUE_A VALUE_B\n");
		return 2;
	}
	warm = atoi(argv[2]);
	n = atoi(argv[3]);
	for (i = 0; i < 2; i++) {
		int m = snprintf(line[i], sizeof(line[i]), "%s\n", argv[4 + i]);

		if (m < 0 || (size_t)m >= sizeof(line[i])) {
			fprintf(stderr, "write_loop: value too long\n");
			return 2;
		}
		len[i] = (size_t)m;
	}
	for (i = 0; i < warm + n; i++) {
		double t0 = now_us(), t[3];

		if (write_once(argv[1], line[i % 2], len[i % 2], t) < 0)
			return 1;
		if (i >= warm)
			printf("%.1f %.1f %.1f %.1f\n", t[2] - t0, t[0] - t0,
			       t[1] - t[0], t[2] - t[1]);
	}
	return 0;
}

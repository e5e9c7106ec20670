/*
 * rsspeak.c - for scripts/bench/scale: the peak resident memory of a
 * process while a command runs.
 *
 *	rsspeak PID INTERVAL_MS COMMAND [ARG...]
 *
 * Reads VmRSS and VmHWM of PID from /proc/PID/status, runs COMMAND, and
 * samples VmRSS of PID every INTERVAL_MS until COMMAND has exited; then
 * reads both once more. VmHWM cannot be reset, so a peak below the
 * high-water mark PID had already reached is seen only in the samples;
 * and the kernel updates VmHWM lazily (when memory is unmapped), so a
 * sample may also exceed it.
 * It prints "key value" lines, memory in kB:
 *
 *	rss_before  VmRSS before COMMAND started
 *	hwm_before  VmHWM before
 *	rss_peak    the largest VmRSS sampled (before and after included)
 *	hwm_after   VmHWM after COMMAND exited
 *	rss_after   VmRSS after
 *	peak        the larger of rss_peak and, if VmHWM grew while
 *	            COMMAND ran, hwm_after
 *	samples     how many samples were taken
 *	elapsed_ms  how long COMMAND ran
 *
 * and exits with COMMAND's exit status (1 if it could not be run or was
 * killed by a signal).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char status_path[64];

/* VmRSS and VmHWM of the process, in kB; exits if it is gone. */
static void read_mem(long *rss, long *hwm)
{
	char line[256];
	FILE *f = fopen(status_path, "r");

	if (f == NULL) {
		fprintf(stderr, "rsspeak: %s: %s\n", status_path,
			strerror(errno));
		exit(1);
	}
	*rss = *hwm = -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	if (*rss < 0 || *hwm < 0) {
		fprintf(stderr, "rsspeak: no VmRSS/VmHWM in %s\n", status_path);
		exit(1);
	}
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long rss0, hwm0, rss, hwm, peak, interval;
	long samples = 0;
	struct timespec nap;
	double t0;
	pid_t child;
	int st = 0;
	char *end;

	if (argc < 4) {
		fprintf(stderr,
			"usage: rsspeak PID INTERVAL_MS COMMAND [ARG...]\n");
		return 2;
	}
	snprintf(status_path, sizeof(status_path), "/proc/%s/status", argv[1]);
	interval = strtol(argv[2], &end, 10);
	if (*end != '\0' || interval < 1 || interval > 10000) {
		fprintf(stderr, "rsspeak: bad INTERVAL_MS: %s\n", argv[2]);
		return 2;
	}
	nap.tv_sec = interval / 1000;
	nap.tv_nsec = interval % 1000 * 1000000;
	read_mem(&rss0, &hwm0);
	peak = rss0;
	t0 = mono_ms();
	child = fork();
	if (child < 0) {
		perror("rsspeak: fork");
		return 1;
	}
	if (child == 0) {
		execvp(argv[3], argv + 3);
		perror("rsspeak: exec");
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(child, &st, WNOHANG);

		read_mem(&rss, &hwm);
		samples++;
		if (rss > peak)
			peak = rss;
		if (r == child)
			break;
		if (r < 0 && errno != EINTR) {
			perror("rsspeak: waitpid");
			return 1;
		}
		nanosleep(&nap, NULL);
	}
	printf("rss_before %ld\nhwm_before %ld\nrss_peak %ld\nhwm_after %ld\n"
	       "rss_after %ld\npeak %ld\nsamples %ld\nelapsed_ms %.0f\n",
	       rss0, hwm0, peak, hwm, rss,
	       hwm > hwm0 && hwm > peak ? hwm : peak, samples, mono_ms() - t0);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 1;
}

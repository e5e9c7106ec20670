/*
 * mkfuncs.c - for scripts/bench/scale: creates many functions in an fnfs
 * mount and waits until all their instances are assigned and started,
 * following the event journal.
 *
 *	mkfuncs [--cont PIDFILE] MNT FUNCTIONS PER_NS CONFIG INSTANCES
 *	        TIMEOUT_MS
 *
 * It makes MNT/tenants/bench/nsK/fNNNNNN for FUNCTIONS functions, PER_NS
 * to a namespace: one mkdir(2), then one open, write(2) of CONFIG (a JSON
 * spec) and close of its config. Then it waits until the journal has shown
 * INSTANCES `instance.assigned` and INSTANCES `instance.started` lines
 * (or TIMEOUT_MS passed since the first write: exit 1).
 *
 * --cont PIDFILE: the workers have been stopped (SIGSTOP) by the caller,
 * so that they take no CPU while the functions are created; once all
 * instances are assigned, it sends SIGCONT to every pid of PIDFILE (one a
 * line), then waits for the instances to start.
 *
 * The journal, MNT/events, is kept in memory by fnfs, about 4 MiB, and
 * drops its oldest lines past that; 100,000 instances make about 15 MB of
 * events. So it is read from its end as it grows: after every function
 * (one read(2), more if it returned a full buffer) and, once all are
 * created, every millisecond until done. Lines are counted as whole lines.
 * A reader that falls more than about 3 MiB behind (the machine busy,
 * say) is moved forward by fnfs and never sees the lines in between: when
 * the journal's size (fstat) shows more than was read, the counts are
 * also taken, every 500 ms, from the functions' status files (the sum of
 * `running`, and of `instances` minus `pending`), and whichever reaches
 * INSTANCES first counts.
 *
 * It prints "key value" lines, times in ms:
 *
 *	create_ms         from the first mkdir to the return of the last write
 *	assigned_ms       from the first config write until the reader had
 *	                  seen INSTANCES instance.assigned lines
 *	started_ms        the same for instance.started
 *	cont_ms           with --cont: when SIGCONT was sent, from the first
 *	                  write (else -1)
 *	ev_assigned_ms    the time of the last instance.assigned line,
 *	                  relative to the first config write (journal clock,
 *	                  1 ms resolution)
 *	ev_started_ms     the same for instance.started
 *	assigned, started, pending, lost, offline
 *	                  the lines counted of instance.assigned,
 *	                  instance.started, instance.pending, instance.lost
 *	                  and worker.offline (the last two should be 0)
 *	journal_bytes     what was read of the journal
 *	journal_dropped   bytes of it that were never read (0 normally)
 *	status_polls      how many times the status files were summed
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (1 << 20)

static char *buf;    /* read buffer */
static size_t carry; /* bytes of an unfinished line at buf's start */
static long n_assigned, n_started, n_pending, n_lost, n_offline;
static long last_assigned_day_ms = -1, last_started_day_ms = -1;
static long long journal_bytes;
static long long start_off; /* the journal's size when counting began */

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long day_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long)(ts.tv_sec % 86400) * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "mkfuncs: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static long number_arg(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 100000000) {
		fprintf(stderr, "mkfuncs: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

/* ms of the UTC day of a journal line's "2026-11-21T18:01:54.104Z". */
static long line_day_ms(const char *l, size_t len)
{
	if (len < 24 || l[10] != 'T')
		return -1;
	return ((long)((l[11] - '0') * 10 + l[12] - '0') * 3600 +
		(long)((l[14] - '0') * 10 + l[15] - '0') * 60 +
		(long)((l[17] - '0') * 10 + l[18] - '0')) *
		       1000 +
	       (l[20] - '0') * 100 + (l[21] - '0') * 10 + (l[22] - '0');
}

static void count_line(const char *l, size_t len)
{
	const char *kind = memchr(l, ' ', len);

	if (kind == NULL)
		return;
	kind++;
	len -= (size_t)(kind - l);
	if (len > 18 && memcmp(kind, "instance.assigned ", 18) == 0) {
		n_assigned++;
		last_assigned_day_ms = line_day_ms(l, len + (kind - l));
	} else if (len > 17 && memcmp(kind, "instance.started ", 17) == 0) {
		n_started++;
		last_started_day_ms = line_day_ms(l, len + (kind - l));
	} else if (len > 17 && memcmp(kind, "instance.pending ", 17) == 0) {
		n_pending++;
	} else if (len > 14 && memcmp(kind, "instance.lost ", 14) == 0) {
		n_lost++;
	} else if (len > 15 && memcmp(kind, "worker.offline ", 15) == 0) {
		n_offline++;
	}
}

/* Reads what the journal has grown by; returns the bytes read. */
static long long drain(int fd)
{
	long long total = 0;
	ssize_t n;

	for (;;) {
		char *p, *nl, *end;

		n = read(fd, buf + carry, BUF_SIZE - carry);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("read", "events");
		}
		if (n == 0)
			break;
		total += n;
		end = buf + carry + n;
		for (p = buf; (nl = memchr(p, '\n', (size_t)(end - p))) != NULL;
		     p = nl + 1)
			count_line(p, (size_t)(nl - p));
		carry = (size_t)(end - p);
		memmove(buf, p, carry);
		if (carry == BUF_SIZE) /* a line of 1 MiB: drop it */
			carry = 0;
		if ((size_t)n < BUF_SIZE / 2)
			break; /* caught up, most likely: do not ask again */
	}
	journal_bytes += total;
	return total;
}

/* Sends SIGCONT to every pid listed in `path`. */
static void cont_all(const char *path)
{
	FILE *f = fopen(path, "r");
	long pid;

	if (f == NULL)
		fail("open", path);
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 0 && kill((pid_t)pid, SIGCONT) < 0 && errno != ESRCH)
			fail("kill -CONT", path);
	fclose(f);
}

/* Bytes of the journal that were not read: its size less what was read
 * since start_off. Racy while events arrive (then it may show lines
 * appended since the last read), exact once they stop. */
static long long unread(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		fail("fstat", "events");
	return (long long)st.st_size - (start_off + journal_bytes);
}

/* The value of the flat-keyed line "KEY VALUE" in `text`, or 0. */
static long key_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p;

	for (p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
			return strtol(p + klen + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return 0;
}

/* Sums `running`, and `instances` less `pending`, over the status files
 * of the functions. */
static void sum_status(const char *mnt, long functions, long per_ns,
		       long *running, long *assigned)
{
	char path[4096], text[8192];
	long i;

	*running = *assigned = 0;
	for (i = 0; i < functions; i++) {
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path),
			 "%s/tenants/bench/ns%ld/f%06ld/status", mnt,
			 i / per_ns, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open", path);
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n < 0)
			fail("read", path);
		text[n] = '\0';
		*running += key_value(text, "running");
		*assigned += key_value(text, "instances") -
			     key_value(text, "pending");
	}
}

static long rel_ms(long day_ms, long base)
{
	long d;

	if (day_ms < 0)
		return -1;
	d = day_ms - base;
	if (d < -43200000)
		d += 86400000;
	return d;
}

int main(int argc, char **argv)
{
	const char *mnt, *config;
	long functions, per_ns, instances, timeout_ms, i;
	const char *cont = NULL;
	double t_start, t_first = 0, t_created, t_assigned = -1, t_started = -1;
	double t_cont = -1, t_poll = 0;
	long polls = 0, s_running, s_assigned;
	int fallback = 0;
	long first_day_ms = 0;
	size_t config_len;
	char path[4096];
	int ev;

	if (argc > 2 && strcmp(argv[1], "--cont") == 0) {
		cont = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 7) {
		fprintf(stderr, "usage: mkfuncs [--cont PIDFILE] MNT FUNCTIONS "
				"PER_NS CONFIG INSTANCES TIMEOUT_MS\n");
		return 2;
	}
	mnt = argv[1];
	functions = number_arg(argv[2], "FUNCTIONS");
	per_ns = number_arg(argv[3], "PER_NS");
	config = argv[4];
	config_len = strlen(config);
	instances = number_arg(argv[5], "INSTANCES");
	timeout_ms = number_arg(argv[6], "TIMEOUT_MS");
	buf = malloc(BUF_SIZE);
	if (buf == NULL)
		fail("malloc", "");

	snprintf(path, sizeof(path), "%s/events", mnt);
	ev = open(path, O_RDONLY | O_CLOEXEC);
	if (ev < 0)
		fail("open", path);
	while (drain(ev) > 0) /* skip what is there */
		;
	n_assigned = n_started = n_pending = n_lost = n_offline = 0;
	journal_bytes = 0;
	start_off = unread(ev);

	t_start = mono_ms();
	snprintf(path, sizeof(path), "%s/tenants/bench", mnt);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		fail("mkdir", path);
	for (i = 0; i < functions; i++) {
		int fd;
		ssize_t n;

		if (i % per_ns == 0) {
			snprintf(path, sizeof(path), "%s/tenants/bench/ns%ld",
				 mnt, i / per_ns);
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				fail("mkdir", path);
		}
		snprintf(path, sizeof(path), "%s/tenants/bench/ns%ld/f%06ld",
			 mnt, i / per_ns, i);
		if (mkdir(path, 0755) < 0)
			fail("mkdir", path);
		strcat(path, "/config");
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open", path);
		if (i == 0) {
			t_first = mono_ms();
			first_day_ms = day_ms_now();
		}
		n = write(fd, config, config_len);
		if (n != (ssize_t)config_len)
			fail("write", path);
		if (close(fd) < 0)
			fail("close", path);
		drain(ev);
		if (t_assigned < 0 && n_assigned >= instances)
			t_assigned = mono_ms();
		if (t_started < 0 && n_started >= instances)
			t_started = mono_ms();
	}
	t_created = mono_ms();
	while (t_assigned < 0 || t_started < 0) {
		struct timespec ms = { 0, 1000000 };

		if (drain(ev) == 0) {
			if (mono_ms() - t_first > (double)timeout_ms)
				break;
			/* Twice, so that lines appended between the read
			 * and the fstat are not taken for a gap. */
			if (!fallback && unread(ev) > 0 && drain(ev) == 0 &&
			    unread(ev) > 0)
				fallback = 1;
			nanosleep(&ms, NULL);
		}
		if (t_assigned < 0 && n_assigned >= instances)
			t_assigned = mono_ms();
		if (t_started < 0 && n_started >= instances)
			t_started = mono_ms();
		if (fallback && mono_ms() - t_poll >= 500) {
			sum_status(mnt, functions, per_ns, &s_running,
				   &s_assigned);
			t_poll = mono_ms();
			polls++;
			if (t_assigned < 0 && s_assigned >= instances)
				t_assigned = t_poll;
			if (t_started < 0 && s_running >= instances)
				t_started = t_poll;
		}
		if (cont != NULL && t_cont < 0 && t_assigned >= 0) {
			t_cont = mono_ms();
			cont_all(cont);
		}
	}
	if (cont != NULL && t_cont < 0)
		cont_all(cont); /* timed out: resume them anyway */
	while (drain(ev) > 0)
		;

	printf("create_ms %.1f\n", t_created - t_start);
	printf("assigned_ms %.1f\n",
	       t_assigned < 0 ? -1 : t_assigned - t_first);
	printf("started_ms %.1f\n", t_started < 0 ? -1 : t_started - t_first);
	printf("cont_ms %.1f\n", t_cont < 0 ? -1 : t_cont - t_first);
	printf("ev_assigned_ms %ld\n",
	       rel_ms(last_assigned_day_ms, first_day_ms));
	printf("ev_started_ms %ld\n",
	       rel_ms(last_started_day_ms, first_day_ms));
	printf("assigned %ld\nstarted %ld\npending %ld\nlost %ld\n"
	       "offline %ld\n",
	       n_assigned, n_started, n_pending, n_lost, n_offline);
	printf("journal_bytes %lld\n", journal_bytes);
	printf("journal_dropped %lld\n", unread(ev));
	printf("status_polls %ld\n", polls);
	close(ev);
	if (t_assigned < 0 || t_started < 0) {
		fprintf(stderr,
			"mkfuncs: after %ld ms: %ld of %ld assigned, %ld "
			"started, %ld pending\n",
			timeout_ms, n_assigned, instances, n_started,
			n_pending);
		return 1;
	}
	return 0;
}

/*
 * http_direct.c - the floor of scripts/bench/http: the same request fnfs
 * sends for a plain call, sent straight to the function's server over one
 * kept-alive connection, sequentially.
 *
 *   http_direct PORT|unix:PATH WARM N
 *
 * Each call writes "POST / HTTP/1.1" with the headers fnfs sends (Host,
 * Fn-Call-Id, Fn-Deadline, Content-Length) and the body "hello world\n",
 * reads the response to the end of its Content-Length, and must get the
 * status 200 and the body "HELLO WORLD\n"; anything else ends the program
 * with status 1. WARM calls untimed, then N timed ones, one line each in
 * microseconds (CLOCK_MONOTONIC).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int dial(const char *where)
{
	int fd, one = 1;

	if (strncmp(where, "unix:", 5) == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", where + 5);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			return -1;
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_port = htons((uint16_t)atoi(where));
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			return -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
}

/* One call. Returns 0 when the answer is right. */
static int call(int fd, long id)
{
	char req[512], buf[4096], *end, *cl;
	size_t have = 0, head, body;
	ssize_t r;
	int n;

	n = snprintf(req, sizeof(req),
		     "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		     "Fn-Call-Id: %ld\r\n"
		     "Fn-Deadline: 2026-01-01T00:00:00.000Z\r\n"
		     "Content-Length: 12\r\n\r\nhello world\n",
		     id);
	if (write(fd, req, (size_t)n) != n)
		return -1;
	for (;;) {
		r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end == NULL)
			continue;
		head = (size_t)(end + 4 - buf);
		cl = strcasestr(buf, "\r\nContent-Length:");
		body = cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
		if (have < head + body)
			continue;
		return strncmp(buf, "HTTP/1.1 200", 12) == 0 && body == 12 &&
				       memcmp(buf + head, "HELLO WORLD\n",
					      12) == 0
			       ? 0
			       : -1;
	}
}

int main(int argc, char **argv)
{
	long warm, n, i;
	double t0;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: http_direct PORT|unix:PATH WARM N\n");
		return 2;
	}
	warm = atol(argv[2]);
	n = atol(argv[3]);
	fd = dial(argv[1]);
	if (fd < 0) {
		perror("http_direct: connect");
		return 1;
	}
	for (i = 0; i < warm + n; i++) {
		t0 = now_us();
		if (call(fd, i + 1) < 0) {
			fprintf(stderr, "http_direct: a wrong answer\n");
			return 1;
		}
		if (i >= warm)
			printf("%.1f\n", now_us() - t0);
	}
	close(fd);
	return 0;
}

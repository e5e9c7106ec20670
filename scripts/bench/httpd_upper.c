/*
 * httpd_upper.c - a small HTTP/1.1 server for scripts/bench/http: the
 * function of format http that the benchmark calls. It listens on
 * 127.0.0.1:$PORT (or, with LISTEN=unix, on the socket of FN_LISTENER),
 * keeps connections alive, and answers every request with its body
 * upper-cased (Content-Length required on requests with a body). One
 * thread, poll(2), up to 64 connections: its own cost per request is a
 * few microseconds, so that the benchmark measures what is around it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAXC  64
#define BUFSZ 65536

struct conn {
	int fd;
	size_t len;
	char buf[BUFSZ];
};

static struct conn *conns[MAXC];

/* The request's Content-Length (0 if none) from its head. */
static size_t content_length(const char *head, size_t n)
{
	const char *p = head, *end = head + n, *nl;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (nl - p > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
			return strtoul(p + 15, NULL, 10);
		p = nl + 1;
	}
	return 0;
}

/* Answers the complete requests in c's buffer. Returns -1 to close. */
static int serve(struct conn *c)
{
	char out[BUFSZ + 128], *end;
	size_t head, body, i;
	int n;

	while ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
		head = (size_t)(end + 4 - c->buf);
		body = content_length(c->buf, head);
		if (body > BUFSZ - head)
			return -1;
		if (c->len < head + body)
			return 0;
		n = snprintf(out, sizeof(out),
			     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
			     "Content-Length: %zu\r\n\r\n",
			     body);
		for (i = 0; i < body; i++)
			out[n + (int)i] = (char)toupper(
				(unsigned char)c->buf[head + i]);
		if (write(c->fd, out, (size_t)n + body) !=
		    (ssize_t)n + (ssize_t)body)
			return -1;
		memmove(c->buf, c->buf + head + body, c->len - head - body);
		c->len -= head + body;
	}
	return c->len == BUFSZ ? -1 : 0;
}

int main(void)
{
	struct pollfd pf[MAXC + 1];
	const char *l = getenv("FN_LISTENER"), *port = getenv("PORT");
	const char *mode = getenv("LISTEN");
	int ls, one = 1, i, k, n;

	signal(SIGPIPE, SIG_IGN);
	if (mode != NULL && strcmp(mode, "unix") == 0 && l != NULL &&
	    strncmp(l, "unix:", 5) == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", l + 5);
		ls = socket(AF_UNIX, SOCK_STREAM, 0);
		if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("bind");
			return 1;
		}
	} else if (port != NULL) {
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_port = htons((uint16_t)atoi(port));
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ls = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("bind");
			return 1;
		}
	} else {
		fprintf(stderr, "httpd_upper: no PORT\n");
		return 1;
	}
	if (listen(ls, 64) < 0) {
		perror("listen");
		return 1;
	}
	fprintf(stderr, "httpd_upper: listening\n");
	for (;;) {
		pf[0] = (struct pollfd){ .fd = ls, .events = POLLIN };
		for (i = 0, n = 1; i < MAXC; i++)
			if (conns[i] != NULL)
				pf[n++] = (struct pollfd){ .fd = conns[i]->fd,
							   .events = POLLIN };
		if (poll(pf, (nfds_t)n, -1) < 0 && errno != EINTR)
			return 1;
		if (pf[0].revents & POLLIN) {
			int fd = accept(ls, NULL, NULL);

			for (i = 0; fd >= 0 && i < MAXC && conns[i]; i++)
				;
			if (fd >= 0 && i == MAXC) {
				close(fd);
			} else if (fd >= 0) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				conns[i] = calloc(1, sizeof(struct conn));
				conns[i]->fd = fd;
			}
		}
		for (k = 1; k < n; k++) {
			struct conn *c = NULL;
			ssize_t r;

			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			for (i = 0; i < MAXC; i++)
				if (conns[i] && conns[i]->fd == pf[k].fd)
					c = conns[i];
			if (c == NULL)
				continue;
			r = read(c->fd, c->buf + c->len, BUFSZ - c->len);
			if (r > 0)
				c->len += (size_t)r;
			if (r <= 0 || serve(c) < 0) {
				close(c->fd);
				for (i = 0; i < MAXC; i++)
					if (conns[i] == c)
						conns[i] = NULL;
				free(c);
			}
		}
	}
}

/*
 * net.c - TCP addresses and socket options (see net.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

int rt_addr_parse(const char *s, int any_port, struct sockaddr_storage *out)
{
	char host[RT_NET_ADDR_MAX];
	const char *colon, *h = s, *end;
	size_t hl;
	long port;
	char *e;

	memset(out, 0, sizeof(*out));
	if (s == NULL || (colon = strrchr(s, ':')) == NULL)
		return -EINVAL;
	end = colon;
	if (s[0] == '[') {
		if (colon == s || colon[-1] != ']')
			return -EINVAL;
		h = s + 1;
		end = colon - 1;
	}
	hl = (size_t)(end - h);
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	port = strtol(colon + 1, &e, 10);
	if (colon[1] == '\0' || *e != '\0' || port < (any_port ? 0 : 1) ||
	    port > 65535)
		return -EINVAL;
	if (s[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)out;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)out;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
	}
	return 0;
}

void rt_addr_format(const struct sockaddr *sa, char *out, size_t n)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(out, n, "%s:%u", ip, ntohs(a->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(out, n, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else {
		snprintf(out, n, "?");
	}
}

void rt_tcp_peer(const uv_tcp_t *t, char *out, size_t n)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len) == 0)
		rt_addr_format((struct sockaddr *)&ss, out, n);
	else
		snprintf(out, n, "?");
}

void rt_tcp_tune(uv_tcp_t *t)
{
	uv_tcp_nodelay(t, 1);
	uv_tcp_keepalive(t, 1, RT_NET_KEEPALIVE_S);
}

int rt_backoff_delay(int ceiling_ms, uint64_t *rng)
{
	uint64_t x = *rng ? *rng : 0x2545F4914F6CDD1Dull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*rng = x;
	if (ceiling_ms <= 0)
		return 0;
	return (int)(x % ((uint64_t)ceiling_ms + 1));
}

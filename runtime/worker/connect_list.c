/*
 * connect_list.c - the worker's --connect list and where it connects next
 * (see connect_list.h). Pure: no I/O, no clock.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "connect_list.h"
#include "../base/net.h"

static const char *const scheme_prefix[] = {
	[RT_CONNECT_UNIX] = "",
	[RT_CONNECT_TLS] = "tls://",
	[RT_CONNECT_TCP] = "tcp://",
};

/* The scheme `s` starts with: 0 none (and no "://" in it), 1 tls://,
 * 2 tcp://, -1 another one. */
static int scheme_of(const char *s, size_t len, enum rt_connect_scheme *out)
{
	if (len >= 6 && strncmp(s, "tls://", 6) == 0) {
		*out = RT_CONNECT_TLS;
		return 1;
	}
	if (len >= 6 && strncmp(s, "tcp://", 6) == 0) {
		*out = RT_CONNECT_TCP;
		return 1;
	}
	if (memmem(s, len, "://", 3) != NULL)
		return -1;
	*out = RT_CONNECT_UNIX;
	return 0;
}

/* Whether `sa` is 0.0.0.0 or [::]: a bind address, not one to reach. */
static int unspecified(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Fills `t` from `s` (`len` bytes, its scheme removed) for a list of
 * `scheme`. Returns 0 or -EINVAL with the reason in `why`. */
static int target_set(struct rt_connect_target *t, enum rt_connect_scheme sc,
		      const char *s, size_t len, char *why, size_t n)
{
	char addr[RT_CONNECT_TEXT_MAX], shown[RT_NET_ADDR_MAX];

	memset(t, 0, sizeof(*t));
	if (len == 0) {
		snprintf(why, n, "an empty address");
		return -EINVAL;
	}
	if (len >= sizeof(addr) ||
	    (sc == RT_CONNECT_UNIX &&
	     len >= sizeof(((struct sockaddr_un *)0)->sun_path))) {
		snprintf(why, n, "%.*s...: too long for a %s", 40, s,
			 sc == RT_CONNECT_UNIX ? "socket path" : "address");
		return -EINVAL;
	}
	memcpy(addr, s, len);
	addr[len] = '\0';
	if (sc == RT_CONNECT_UNIX) {
		memcpy(t->text, addr, len + 1);
		return 0;
	}
	if (rt_addr_parse(addr, 0, &t->addr) < 0) {
		snprintf(why, n,
			 "%s: want IP:PORT (or [IPv6]:PORT): controllers "
			 "are named by address",
			 addr);
		return -EINVAL;
	}
	if (unspecified(&t->addr)) {
		snprintf(why, n,
			 "%s: an address to bind, not one to connect to", addr);
		return -EINVAL;
	}
	rt_addr_format((const struct sockaddr *)&t->addr, shown, sizeof(shown));
	snprintf(t->text, sizeof(t->text), "%s%s", scheme_prefix[sc], shown);
	return 0;
}

int rt_connect_parse(const char *spec, struct rt_connect_list *l, char *why,
		     size_t n)
{
	const char *p = spec, *end;
	enum rt_connect_scheme sc;
	int rc = 0, has, i;
	size_t len;

	memset(l, 0, sizeof(*l));
	l->retry_ms = RT_CONNECT_RETRY_FIRST_MS;
	end = strchr(spec, ',');
	if (scheme_of(spec, end ? (size_t)(end - spec) : strlen(spec),
		      &l->scheme) < 0) {
		snprintf(why, n,
			 "want socket paths, tls://IP:PORT,... or "
			 "tcp://IP:PORT,...");
		rc = -EINVAL;
		goto out;
	}
	for (;;) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		has = scheme_of(p, len, &sc);
		if (has < 0 || (has && sc != l->scheme) ||
		    (has && l->scheme == RT_CONNECT_UNIX)) {
			snprintf(why, n,
				 "%.*s: one scheme for the whole list (%s)",
				 (int)(len > 80 ? 80 : len), p,
				 l->scheme == RT_CONNECT_UNIX
					 ? "socket paths"
					 : scheme_prefix[l->scheme]);
			rc = -EINVAL;
			goto out;
		}
		if (has) {
			p += 6;
			len -= 6;
		}
		if (l->n == RT_CONNECT_MAX) {
			snprintf(why, n, "more than %d controllers",
				 RT_CONNECT_MAX);
			rc = -EINVAL;
			goto out;
		}
		rc = target_set(&l->list[l->n], l->scheme, p, len, why, n);
		if (rc < 0)
			goto out;
		for (i = 0; i < l->n; i++) {
			if (strcmp(l->list[i].text, l->list[l->n].text) == 0) {
				snprintf(why, n, "%s is listed twice",
					 l->list[i].text);
				rc = -EINVAL;
				goto out;
			}
		}
		l->n++;
		if (end == NULL)
			break;
		p = end + 1;
	}
out:
	if (rc < 0)
		l->n = 0;
	return rc;
}

int rt_connect_parse_path(const char *path, struct rt_connect_list *l,
			  char *why, size_t n)
{
	int rc;

	memset(l, 0, sizeof(*l));
	l->retry_ms = RT_CONNECT_RETRY_FIRST_MS;
	l->scheme = RT_CONNECT_UNIX;
	rc = target_set(&l->list[0], RT_CONNECT_UNIX, path, strlen(path), why,
			n);
	l->n = rc < 0 ? 0 : 1;
	return rc;
}

void rt_connect_begin(struct rt_connect_list *l, uint64_t *rng)
{
	assert(l->n >= 1 && l->n <= RT_CONNECT_MAX); /* a parsed list */
	l->cur = l->n > 1 ? rt_backoff_delay(l->n - 1, rng) : 0;
	assert(l->cur >= 0 && l->cur < l->n);
	l->on_leader = 0;
	l->tried = 0;
	l->redirects = 0;
}

const struct rt_connect_target *
rt_connect_target(const struct rt_connect_list *l)
{
	assert(l->on_leader || (l->cur >= 0 && l->cur < l->n));
	return l->on_leader ? &l->leader : &l->list[l->cur];
}

int rt_connect_failed(struct rt_connect_list *l, int was_registered,
		      uint64_t *rng, int *round_over)
{
	int delay = 0, over = was_registered;

	if (was_registered) {
		l->lost = l->on_leader ? l->leader : l->list[l->cur];
		l->has_lost = 1;
	}
	/* A target that redirected the worker was counted then. */
	if (!l->on_leader && !was_registered)
		l->tried++;
	l->on_leader = 0;
	l->cur = (l->cur + 1) % l->n;
	if (l->tried >= l->n)
		over = 1;
	if (over) {
		/* Full jitter: the workers that lost one controller do not
		 * all come back in the same instant. */
		delay = rt_backoff_delay(l->retry_ms, rng);
		l->retry_ms = l->retry_ms * 2 > RT_CONNECT_RETRY_MAX_MS
				      ? RT_CONNECT_RETRY_MAX_MS
				      : l->retry_ms * 2;
		l->tried = 0;
		l->redirects = 0;
	}
	assert(delay >= 0 && l->retry_ms <= RT_CONNECT_RETRY_MAX_MS);
	assert(l->tried < l->n);
	if (round_over != NULL)
		*round_over = over;
	return delay;
}

int rt_connect_redirect(struct rt_connect_list *l, const char *leader,
			uint64_t *rng, char *why, size_t n)
{
	struct rt_connect_target t;
	enum rt_connect_scheme sc;
	size_t len = strlen(leader);
	int has = scheme_of(leader, len, &sc);

	if (has < 0 || (has && (sc != l->scheme)) ||
	    (has && l->scheme == RT_CONNECT_UNIX)) {
		snprintf(why, n, "the leader's address %s is not %s", leader,
			 l->scheme == RT_CONNECT_UNIX
				 ? "a socket path"
				 : scheme_prefix[l->scheme]);
		return -EINVAL;
	}
	if (has) {
		leader += 6;
		len -= 6;
	}
	if (l->scheme != RT_CONNECT_UNIX && leader[0] == '/') {
		snprintf(why, n,
			 "the leader's address %s is a socket path, not "
			 "IP:PORT",
			 leader);
		return -EINVAL;
	}
	if (target_set(&t, l->scheme, leader, len, why, n) < 0)
		return -EINVAL;
	if (l->has_lost && strcmp(t.text, l->lost.text) == 0) {
		snprintf(why, n,
			 "%s is the controller just lost; the list goes on",
			 t.text);
		return -EAGAIN;
	}
	if (l->redirects >= RT_CONNECT_REDIRECTS_MAX) {
		snprintf(why, n,
			 "redirected %d times this round without "
			 "registering",
			 l->redirects);
		return -ELOOP;
	}
	/* The target that redirected counts as tried (it did not take the
	 * worker); a leader that redirects again does not: it is not the
	 * list's. */
	if (!l->on_leader)
		l->tried++;
	l->redirects++;
	l->leader = t;
	l->on_leader = 1;
	return RT_CONNECT_REDIRECT_MIN_MS +
	       rt_backoff_delay(RT_CONNECT_REDIRECT_MAX_MS -
					RT_CONNECT_REDIRECT_MIN_MS,
				rng);
}

void rt_connect_registered(struct rt_connect_list *l)
{
	l->has_lost = 0;
	l->retry_ms = RT_CONNECT_RETRY_FIRST_MS;
	l->tried = 0;
	l->redirects = 0;
}

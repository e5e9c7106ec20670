/*
 * connect_list.h - where a worker connects next: the controllers of its
 * --connect list (one scheme for all: Unix socket paths, tls://IP:PORT or
 * tcp://IP:PORT), tried in turn from a random one, the next after a
 * failed or lost connection, with full-jitter exponential backoff between
 * full rounds; and the leader a follower names in a `refused`, followed
 * soon and without growing the backoff, at most RT_CONNECT_REDIRECTS_MAX
 * times a round (two followers that name each other end in the backoff).
 * Pure: the caller passes the random state, connects where it is told,
 * and waits the delay it is given. Private to runtime/.
 */
#ifndef FNFS_RT_CONNECT_LIST_H
#define FNFS_RT_CONNECT_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define RT_CONNECT_MAX 16 /* controllers in one --connect list */
/* A target's text: "tls://[v6]:PORT" or a socket path, and its NUL. */
#define RT_CONNECT_TEXT_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) + 8)
/* Redirects followed in one round (without registering): more end the
 * round, so that followers naming each other cannot keep it busy. */
#define RT_CONNECT_REDIRECTS_MAX 3
/* A redirect is followed after a delay uniform in this range, ms: soon,
 * and not all workers in the same instant. */
#define RT_CONNECT_REDIRECT_MIN_MS 20
#define RT_CONNECT_REDIRECT_MAX_MS 200
/* The backoff's ceiling: it doubles from the first to the most, ms. */
#define RT_CONNECT_RETRY_FIRST_MS 100
#define RT_CONNECT_RETRY_MAX_MS	  2000

/* How the controllers of a list are reached. */
enum rt_connect_scheme {
	RT_CONNECT_UNIX, /* a socket path (the controller's DATA/ctl.sock) */
	RT_CONNECT_TLS,	 /* tls://IP:PORT, mutual TLS 1.3 */
	RT_CONNECT_TCP,	 /* tcp://IP:PORT, plain (--insecure) */
};

/* One controller's address. */
struct rt_connect_target {
	char text[RT_CONNECT_TEXT_MAX]; /* what logs show: "tls://IP:PORT"
					   (normalized) or the path */
	struct sockaddr_storage addr;	/* TCP and TLS: the address */
};

/* The list, and where the worker is in it. */
struct rt_connect_list {
	enum rt_connect_scheme scheme;
	int n; /* targets in `list`, 1 to RT_CONNECT_MAX */
	struct rt_connect_target list[RT_CONNECT_MAX];
	int cur;       /* the list's target tried last (or that redirected
			  the worker to `leader`) */
	int on_leader; /* the current target is `leader`, not list[cur] */
	struct rt_connect_target leader; /* the last leader a refusal named */
	int tried;			 /* list targets tried this round */
	int redirects;			 /* redirects followed this round */
	int retry_ms;			 /* the backoff's ceiling now */
	/* the target whose registered connection was lost last: until the
	 * worker registers again a redirect to it is not followed (a
	 * follower that has not yet seen the leader go names it still) */
	struct rt_connect_target lost;
	int has_lost;
};

/* Parses a --connect value: "PATH[,PATH...]", or "tls://IP:PORT[,...]"
 * (or tcp://), the scheme given once at the start or on every element
 * alike. Fills `l` and starts it at the first target. Returns 0, or
 * -EINVAL with the reason in `why` (`n` bytes): an empty element, another
 * scheme, a scheme mixed with paths, a host name, a bad port, a path too
 * long for a socket, a target listed twice, more than RT_CONNECT_MAX.
 * Pure. */
int rt_connect_parse(const char *spec, struct rt_connect_list *l, char *why,
		     size_t n);

/* Fills `l` with the one socket path `path` (a path with a comma, which
 * rt_connect_parse would split). Returns 0 or -EINVAL (too long) with the
 * reason in `why`. Pure. */
int rt_connect_parse_path(const char *path, struct rt_connect_list *l,
			  char *why, size_t n);

/* Starts the first round at a random target (drawn from `*rng`,
 * advanced), so that the workers of a cluster do not all wait on the same
 * unreachable controller first. */
void rt_connect_begin(struct rt_connect_list *l, uint64_t *rng);

/* The target to connect to now: list[cur], or the leader after a
 * redirect. */
const struct rt_connect_target *
rt_connect_target(const struct rt_connect_list *l);

/* The attempt at the current target failed (refused, unreachable, no
 * answer, a refusal naming no leader), or a registered connection was
 * lost (`was_registered`): moves to the list's next target. Returns the
 * delay before the next attempt, ms: none within a round; after a full
 * round or a lost registration, full jitter under the backoff's ceiling,
 * which then doubles up to RT_CONNECT_RETRY_MAX_MS. `*round_over` (may
 * be NULL) is set to 1 when the delay is a backoff, else 0. */
int rt_connect_failed(struct rt_connect_list *l, int was_registered,
		      uint64_t *rng, int *round_over);

/* A controller refused the registration naming `leader` as the one to
 * register with: its --listen "IP:PORT" (tls:// or tcp:// before it is
 * taken too, if it is the list's), or its socket path. Makes it the
 * current target and returns the delay before connecting to it (from
 * RT_CONNECT_REDIRECT_MIN_MS to _MAX_MS), the backoff unchanged. Returns
 * -EINVAL for an address the worker cannot use (another scheme, a host
 * name, 0.0.0.0, a path for a TCP list), -EAGAIN for the target whose
 * registered connection was lost last, until the worker registers again
 * (a follower that has not seen it go still names it), -ELOOP when this
 * round had
 * RT_CONNECT_REDIRECTS_MAX redirects already; then `why` (`n` bytes) says
 * why, nothing is changed, and the caller treats the refusal as a failed
 * attempt (rt_connect_failed). */
int rt_connect_redirect(struct rt_connect_list *l, const char *leader,
			uint64_t *rng, char *why, size_t n);

/* The current target accepted the registration: the next loss starts a
 * new round from it with the backoff at its first ceiling. */
void rt_connect_registered(struct rt_connect_list *l);

#endif

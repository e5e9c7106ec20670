/*
 * test_connect_list.c - the worker's --connect list: parsing (and the
 * refusal of bad lists with their reason), the order in which controllers
 * are tried, the backoff between full rounds, following a follower's
 * redirect to the leader, and the bound on redirects that ping-pong.
 */
#include <errno.h>
#include <string.h>

#include "../../runtime/worker/connect_list.h"
#include "unit.h"

/* Parses `spec`, expecting a refusal whose reason contains `want`. */
static int refused_with(const char *spec, const char *want)
{
	struct rt_connect_list l;
	char why[256] = "";
	int rc = rt_connect_parse(spec, &l, why, sizeof(why));

	if (rc != -EINVAL || strstr(why, want) == NULL) {
		fprintf(stderr, "  %s: rc %d, why \"%s\", want \"%s\"\n", spec,
			rc, why, want);
		return 0;
	}
	return 1;
}

/* A parsed list, started at its first target. */
static void parse_ok(const char *spec, struct rt_connect_list *l)
{
	char why[256] = "";

	CHECK(rt_connect_parse(spec, l, why, sizeof(why)) == 0);
	if (why[0] != '\0')
		fprintf(stderr, "  %s: %s\n", spec, why);
	l->cur = 0;
}

/* ============================================================ parsing */

TEST(connect_parse_one_address_as_before)
{
	struct rt_connect_list l;

	parse_ok("/var/lib/fnfs/ctl.sock", &l);
	CHECK(l.n == 1 && l.scheme == RT_CONNECT_UNIX);
	CHECK_STR(l.list[0].text, "/var/lib/fnfs/ctl.sock");
	parse_ok("tls://10.0.0.1:7443", &l);
	CHECK(l.n == 1 && l.scheme == RT_CONNECT_TLS);
	CHECK_STR(l.list[0].text, "tls://10.0.0.1:7443");
	parse_ok("tcp://[::1]:80", &l);
	CHECK(l.n == 1 && l.scheme == RT_CONNECT_TCP);
	CHECK_STR(l.list[0].text, "tcp://[::1]:80");
}

TEST(connect_parse_lists)
{
	struct rt_connect_list l;

	parse_ok("tls://10.0.0.1:7443,10.0.0.2:7443,10.0.0.3:7444", &l);
	CHECK(l.n == 3 && l.scheme == RT_CONNECT_TLS);
	CHECK_STR(l.list[0].text, "tls://10.0.0.1:7443");
	CHECK_STR(l.list[1].text, "tls://10.0.0.2:7443");
	CHECK_STR(l.list[2].text, "tls://10.0.0.3:7444");
	/* The scheme repeated on each element: the same list. */
	parse_ok("tls://10.0.0.1:7443,tls://10.0.0.2:7443,10.0.0.3:7444", &l);
	CHECK(l.n == 3);
	CHECK_STR(l.list[1].text, "tls://10.0.0.2:7443");
	parse_ok("/a/ctl.sock,/b/ctl.sock", &l);
	CHECK(l.n == 2 && l.scheme == RT_CONNECT_UNIX);
	CHECK_STR(l.list[1].text, "/b/ctl.sock");
	CHECK(l.retry_ms == RT_CONNECT_RETRY_FIRST_MS);
}

TEST(connect_parse_refuses_bad_lists)
{
	char many[1024] = "tls://10.0.0.1:1";
	int i;

	CHECK(refused_with("", "an empty address"));
	CHECK(refused_with("tls://10.0.0.1:1,,10.0.0.2:1", "an empty address"));
	CHECK(refused_with("tls://10.0.0.1:1,", "an empty address"));
	CHECK(refused_with(",/a", "an empty address"));
	CHECK(refused_with("tls://10.0.0.1:1,tcp://10.0.0.2:1",
			   "one scheme for the whole list (tls://)"));
	CHECK(refused_with("/a/ctl.sock,tls://10.0.0.2:1",
			   "one scheme for the whole list (socket paths)"));
	CHECK(refused_with("http://10.0.0.1:1", "want socket paths"));
	CHECK(refused_with("tls://10.0.0.1:1,http://10.0.0.2:1",
			   "one scheme for the whole list"));
	CHECK(refused_with("tls://ctl-a:7443",
			   "ctl-a:7443: want IP:PORT (or [IPv6]:PORT)"));
	CHECK(refused_with("tls://10.0.0.1:1,/a/ctl.sock", "want IP:PORT"));
	CHECK(refused_with("tls://10.0.0.1:70000", "want IP:PORT"));
	CHECK(refused_with("tls://10.0.0.1:0", "want IP:PORT"));
	CHECK(refused_with("tls://0.0.0.0:7443", "an address to bind"));
	CHECK(refused_with("tls://10.0.0.1:1,10.0.0.1:1",
			   "tls://10.0.0.1:1 is listed twice"));
	CHECK(refused_with("/a,/b,/a", "/a is listed twice"));
	for (i = 2; i <= RT_CONNECT_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 ",10.0.0.%d:1", i);
	CHECK(refused_with(many, "more than 16 controllers"));
	memset(many, 'x', 200);
	many[0] = '/';
	many[200] = '\0';
	CHECK(refused_with(many, "too long for a socket path"));
}

TEST(connect_parse_path_with_a_comma)
{
	struct rt_connect_list l;
	char why[256];

	CHECK(rt_connect_parse_path("/var/lib/fnfs,1/ctl.sock", &l, why,
				    sizeof(why)) == 0);
	CHECK(l.n == 1 && l.scheme == RT_CONNECT_UNIX);
	CHECK_STR(l.list[0].text, "/var/lib/fnfs,1/ctl.sock");
}

/* ============================================================ the order */

TEST(connect_begins_at_a_random_target)
{
	struct rt_connect_list l;
	uint64_t rng = 12345;
	int seen[3] = { 0 }, i;

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", &l);
	for (i = 0; i < 300; i++) {
		rt_connect_begin(&l, &rng);
		if (l.cur >= 0 && l.cur < 3)
			seen[l.cur]++;
		else
			CHECK(!"a target of the list");
		CHECK(l.on_leader == 0 && l.tried == 0);
	}
	CHECK(seen[0] > 50 && seen[1] > 50 && seen[2] > 50);
	parse_ok("/a", &l);
	rt_connect_begin(&l, &rng);
	CHECK(l.cur == 0);
}

TEST(connect_tries_each_in_turn_then_backs_off)
{
	struct rt_connect_list l;
	uint64_t rng = 7;
	int over, d, round, ceiling = RT_CONNECT_RETRY_FIRST_MS;

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", &l);
	l.cur = 1;
	for (round = 0; round < 8; round++) {
		/* Within a round: the next one at once. */
		CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
		CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.3:1");
		CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
		CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.1:1");
		/* Every one tried: full jitter under the ceiling, which
		 * doubles up to its bound. */
		d = rt_connect_failed(&l, 0, &rng, &over);
		CHECK(over == 1);
		CHECK(d >= 0 && d <= ceiling);
		CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.2:1");
		ceiling = ceiling * 2 > RT_CONNECT_RETRY_MAX_MS
				  ? RT_CONNECT_RETRY_MAX_MS
				  : ceiling * 2;
		CHECK(l.retry_ms == ceiling);
	}
	CHECK(l.retry_ms == RT_CONNECT_RETRY_MAX_MS);
}

TEST(connect_backoff_is_full_jitter)
{
	struct rt_connect_list l;
	uint64_t rng = 99;
	int i, d, lo = 0, hi = 0, over;

	parse_ok("/a", &l);
	for (i = 0; i < 400; i++) {
		l.retry_ms = 2000;
		d = rt_connect_failed(&l, 0, &rng, &over);
		CHECK(over == 1 && d >= 0 && d <= 2000);
		lo += d < 500;
		hi += d > 1500;
	}
	/* Uniform over [0, ceiling]: both ends are drawn. */
	CHECK(lo > 50 && hi > 50);
}

TEST(connect_single_controller_backs_off_as_before)
{
	struct rt_connect_list l;
	uint64_t rng = 3;
	int over, d, ceiling = RT_CONNECT_RETRY_FIRST_MS;

	/* One controller: every failure is a full round, as before lists:
	 * 100, 200, 400, ... 2000 ms ceilings, reset by a registration. */
	parse_ok("tls://10.0.0.1:1", &l);
	while (ceiling < RT_CONNECT_RETRY_MAX_MS) {
		d = rt_connect_failed(&l, 0, &rng, &over);
		CHECK(over == 1 && d <= ceiling);
		ceiling *= 2;
		if (ceiling > RT_CONNECT_RETRY_MAX_MS)
			ceiling = RT_CONNECT_RETRY_MAX_MS;
		CHECK(l.retry_ms == ceiling);
	}
	rt_connect_registered(&l);
	CHECK(l.retry_ms == RT_CONNECT_RETRY_FIRST_MS);
	d = rt_connect_failed(&l, 1, &rng, &over);
	CHECK(over == 1 && d <= RT_CONNECT_RETRY_FIRST_MS);
	CHECK(l.retry_ms == 2 * RT_CONNECT_RETRY_FIRST_MS);
}

TEST(connect_lost_registration_moves_on_after_jitter)
{
	struct rt_connect_list l;
	uint64_t rng = 5;
	int over, d;

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", &l);
	l.cur = 2;
	CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0); /* 3 down */
	rt_connect_registered(&l);			   /* on 1 */
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.1:1");
	/* Its controller lost: the next one, after a jitter under the
	 * first ceiling; then a whole round before the next backoff. */
	d = rt_connect_failed(&l, 1, &rng, &over);
	CHECK(over == 1 && d <= RT_CONNECT_RETRY_FIRST_MS);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.2:1");
	CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
	CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.1:1");
	rt_connect_failed(&l, 0, &rng, &over);
	CHECK(over == 1);
}

/* ========================================================== redirects */

TEST(connect_redirect_follows_the_leader_soon)
{
	struct rt_connect_list l;
	uint64_t rng = 11;
	char why[256];
	int d, i, retry;

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", &l);
	retry = l.retry_ms = 800;
	d = rt_connect_redirect(&l, "10.0.0.3:1", &rng, why, sizeof(why));
	CHECK(d >= RT_CONNECT_REDIRECT_MIN_MS &&
	      d <= RT_CONNECT_REDIRECT_MAX_MS);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.3:1");
	CHECK(l.retry_ms == retry); /* the backoff does not grow */
	rt_connect_registered(&l);
	CHECK(l.redirects == 0 && l.retry_ms == RT_CONNECT_RETRY_FIRST_MS);
	/* The delay is jittered within its range. */
	for (i = 0; i < 200; i++) {
		l.redirects = 0;
		d = rt_connect_redirect(&l, "10.0.0.3:1", &rng, why,
					sizeof(why));
		CHECK(d >= RT_CONNECT_REDIRECT_MIN_MS &&
		      d <= RT_CONNECT_REDIRECT_MAX_MS);
	}
}

/* The leader lost, a follower that has not seen it go yet names it: the
 * worker goes on with the list instead (148: a connect timeout saved). */
TEST(connect_redirect_to_the_controller_just_lost)
{
	struct rt_connect_list l;
	uint64_t rng = 3;
	char why[256];
	int over;

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", &l);
	rt_connect_registered(&l); /* on 1 */
	rt_connect_failed(&l, 1, &rng, &over);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.2:1");
	CHECK(rt_connect_redirect(&l, "10.0.0.1:1", &rng, why, sizeof(why)) ==
	      -EAGAIN);
	CHECK(strstr(why, "just lost") != NULL);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.2:1");
	/* Another leader is followed. */
	CHECK(rt_connect_redirect(&l, "10.0.0.3:1", &rng, why, sizeof(why)) >=
	      RT_CONNECT_REDIRECT_MIN_MS);
	/* Registered somewhere: the one lost may lead again. */
	rt_connect_registered(&l);
	CHECK(rt_connect_redirect(&l, "10.0.0.1:1", &rng, why, sizeof(why)) >=
	      RT_CONNECT_REDIRECT_MIN_MS);
}

TEST(connect_redirect_to_a_controller_not_listed)
{
	struct rt_connect_list l;
	uint64_t rng = 13;
	char why[256];
	int over;

	/* A controller that joined later: accepted, with or without the
	 * list's scheme. */
	parse_ok("tls://10.0.0.1:1,10.0.0.2:1", &l);
	CHECK(rt_connect_redirect(&l, "10.0.0.9:7443", &rng, why, sizeof(why)) >
	      0);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.9:7443");
	CHECK(l.cur == 0 && l.on_leader == 1);
	/* It fails: back to the list, after the one that redirected. */
	CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.2:1");
	CHECK(rt_connect_redirect(&l, "tls://[fd00::9]:7443", &rng, why,
				  sizeof(why)) > 0);
	CHECK_STR(rt_connect_target(&l)->text, "tls://[fd00::9]:7443");
	/* Both list targets redirected: the round is over when the
	 * leader fails too. */
	rt_connect_failed(&l, 0, &rng, &over);
	CHECK(over == 1);
	CHECK_STR(rt_connect_target(&l)->text, "tls://10.0.0.1:1");

	parse_ok("/a/ctl.sock,/b/ctl.sock", &l);
	CHECK(rt_connect_redirect(&l, "/c/ctl.sock", &rng, why, sizeof(why)) >
	      0);
	CHECK_STR(rt_connect_target(&l)->text, "/c/ctl.sock");
}

TEST(connect_redirect_refuses_unusable_addresses)
{
	struct rt_connect_list l, before;
	uint64_t rng = 17;
	char why[256];

	parse_ok("tls://10.0.0.1:1,10.0.0.2:1", &l);
	before = l;
	CHECK(rt_connect_redirect(&l, "tcp://10.0.0.3:1", &rng, why,
				  sizeof(why)) == -EINVAL);
	CHECK(strstr(why, "is not tls://") != NULL);
	CHECK(rt_connect_redirect(&l, "ctl-c:7443", &rng, why, sizeof(why)) ==
	      -EINVAL);
	CHECK(strstr(why, "want IP:PORT") != NULL);
	CHECK(rt_connect_redirect(&l, "0.0.0.0:7443", &rng, why, sizeof(why)) ==
	      -EINVAL);
	CHECK(strstr(why, "an address to bind") != NULL);
	CHECK(rt_connect_redirect(&l, "/c/ctl.sock", &rng, why, sizeof(why)) ==
	      -EINVAL);
	CHECK(strstr(why, "a socket path, not IP:PORT") != NULL);
	CHECK(rt_connect_redirect(&l, "", &rng, why, sizeof(why)) == -EINVAL);
	CHECK(memcmp(&l, &before, sizeof(l)) == 0); /* nothing changed */

	parse_ok("/a/ctl.sock", &l);
	CHECK(rt_connect_redirect(&l, "tls://10.0.0.3:1", &rng, why,
				  sizeof(why)) == -EINVAL);
	CHECK(strstr(why, "is not a socket path") != NULL);
}

TEST(connect_redirect_ping_pong_is_bounded)
{
	struct rt_connect_list l;
	uint64_t rng = 19;
	char why[256];
	int i, over, rounds;

	/* Two followers that name each other as the leader: at most
	 * RT_CONNECT_REDIRECTS_MAX redirects, then the list and the
	 * backoff. */
	parse_ok("tls://10.0.0.1:1,10.0.0.2:1", &l);
	for (rounds = 0; rounds < 3; rounds++) {
		for (i = 0; i < RT_CONNECT_REDIRECTS_MAX; i++)
			CHECK(rt_connect_redirect(
				      &l, i % 2 ? "10.0.0.1:1" : "10.0.0.2:1",
				      &rng, why, sizeof(why)) > 0);
		CHECK(rt_connect_redirect(&l, "10.0.0.1:1", &rng, why,
					  sizeof(why)) == -ELOOP);
		CHECK(strstr(why, "redirected 3 times") != NULL);
		/* The worker treats the refusal as a failed attempt: on to
		 * the list's next target, which redirects too (no more
		 * this round): the list is exhausted, the backoff follows. */
		CHECK(rt_connect_failed(&l, 0, &rng, &over) == 0 && !over);
		CHECK(rt_connect_redirect(&l, "10.0.0.1:1", &rng, why,
					  sizeof(why)) == -ELOOP);
		rt_connect_failed(&l, 0, &rng, &over);
		CHECK(over == 1);
		/* A new round may follow redirects again. */
		CHECK(l.redirects == 0 && l.tried == 0);
	}
	CHECK(l.retry_ms == 8 * RT_CONNECT_RETRY_FIRST_MS);
}

/*
 * test_elect.c - leader election and fencing (sched/cluster/etcd/elect.h)
 * against a real 3-member etcd cluster (etcd_cluster.h): candidates on one
 * loop, each with its own etcd client, every wait bounded. Leases of 2 s
 * (etcd's shortest with its default election timeout) keep the tests short.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "../../sched/cluster/etcd/elect.h"
#include "cut_proxy.h"
#include "etcd_cluster.h"
#include "unit.h"

#ifndef TTL_S
#define TTL_S 2 /* -DTTL_S=5 measures the default --leader-ttl */
#endif
#define NAME "/fnfs/t/leader"

/* ------------------------------------------------------ the harness */

/* A controller as the tests see it: what its elector told it. */
struct cand {
	const char *self;
	uv_loop_t *loop;
	struct etcd_client *c;
	struct elect *e;
	enum elect_state state;
	char value[96];	   /* the leader's value it was told */
	int64_t rev;	   /* the fence revision it was told */
	int changes;	   /* on_change calls */
	int64_t lead_at;   /* rt_mono_ms() of the last change to LEADER */
	int64_t left_at;   /* of the last change from LEADER to another */
	int stop_done;	   /* elect_stop's done came */
	char history[512]; /* "campaigning follower(ctl-a) ..." */
};

static void on_change(void *arg, enum elect_state state,
		      const char *leader_value, int64_t fence_rev)
{
	struct cand *k = arg;
	size_t len = strlen(k->history);
	int64_t now = rt_mono_ms();

	if (state == ELECT_LEADER && k->state != ELECT_LEADER)
		k->lead_at = now;
	if (state != ELECT_LEADER && k->state == ELECT_LEADER)
		k->left_at = now;
	k->state = state;
	snprintf(k->value, sizeof(k->value), "%s",
		 leader_value ? leader_value : "");
	k->rev = fence_rev;
	k->changes++;
	snprintf(k->history + len, sizeof(k->history) - len, "%s(%s) ",
		 elect_state_name(state), k->value);
	uv_stop(k->loop);
}

/* Makes candidate `k` (`self`) with its own client of `endpoints` (per
 * request timeout `timeout_ms`) and starts its elector. */
static int cand_start(struct cand *k, uv_loop_t *loop, const char *self,
		      const char *endpoints, int timeout_ms)
{
	struct etcd_config cfg = { 0 };
	struct elect_callbacks cb = { on_change, k };
	int rc;

	memset(k, 0, sizeof(*k));
	k->self = self;
	k->loop = loop;
	k->state = ELECT_CAMPAIGNING;
	cfg.endpoints = endpoints;
	cfg.timeout_ms = timeout_ms;
	rc = etcd_client_new(loop, &cfg, &k->c);
	if (rc == 0)
		rc = elect_start(loop, k->c, NAME, self, TTL_S, &cb, &k->e);
	return rc;
}

/* Frees the elector (as a kill -9 would: etcd is told nothing), then the
 * client. */
static void cand_free(struct cand *k)
{
	elect_free(k->e);
	k->e = NULL;
	etcd_client_free(k->c);
	k->c = NULL;
}

/* Runs `loop` until pred(arg) holds or `ms` passed. Returns 0 or
 * -ETIMEDOUT. */
static void on_bound(uv_timer_t *t)
{
	*(int *)t->data = 1;
	uv_stop(t->loop);
}

/* The bound of the waits that only bring a test to its start (a first
 * leader, both candidates settled): generous, since a loaded machine
 * (the suite runs tests side by side) makes them slow, and what they
 * wait for is polled, so a quick one costs nothing. */
#define SETTLE_MS 30000

static int run_until(uv_loop_t *loop, int (*pred)(void *), void *arg, int ms)
{
	uv_timer_t t;
	int expired = 0;

	uv_timer_init(loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_bound, (uint64_t)ms, 0);
	while (!(pred != NULL && pred(arg)) && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return pred != NULL && pred(arg) ? 0 : -ETIMEDOUT;
}

/* Runs the loop for `ms`. */
static void run_for(uv_loop_t *loop, int ms)
{
	(void)run_until(loop, NULL, NULL, ms);
}

/* Ends the loop's handles (the clients' and electors' closes). */
static void loop_end(uv_loop_t *loop)
{
	int i;

	for (i = 0; i < 200 && uv_run(loop, UV_RUN_NOWAIT) != 0; i++)
		;
	CHECK(uv_loop_close(loop) == 0);
}

/* The candidates of a test, for the predicates. */
struct field {
	struct cand *k;
	int n;
};

/* Exactly one candidate leads (by what it was told and by elect_state)
 * and every other follows it by its value. */
static int settled(void *arg)
{
	struct field *f = arg;
	int i, leaders = 0, lead = -1;

	for (i = 0; i < f->n; i++)
		if (f->k[i].e != NULL && f->k[i].state == ELECT_LEADER &&
		    elect_is_leader(f->k[i].e)) {
			leaders++;
			lead = i;
		}
	if (leaders != 1)
		return 0;
	for (i = 0; i < f->n; i++)
		if (f->k[i].e != NULL && i != lead &&
		    (f->k[i].state != ELECT_FOLLOWER ||
		     strcmp(f->k[i].value, f->k[lead].self) != 0))
			return 0;
	return 1;
}

/* The one that leads, or NULL. */
static struct cand *leader_of(struct field *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (f->k[i].e != NULL && f->k[i].state == ELECT_LEADER)
			return &f->k[i];
	return NULL;
}

static int is_leader(void *arg)
{
	const struct cand *k = arg;

	return k->state == ELECT_LEADER;
}

/* What an etcd call answered. */
struct got {
	int done;
	int rc;
	int succeeded;
	int64_t lease;	       /* a grant's lease */
	struct etcd_kv leader; /* owned copy of a->leader (key, value) */
	char keys[4][64];      /* the first keys a range read */
	size_t nkeys;
	uv_loop_t *loop;
};

static void got_cb(void *arg, const struct etcd_answer *a)
{
	struct got *g = arg;

	g->done = 1;
	g->rc = a->rc;
	g->succeeded = a->succeeded;
	g->lease = a->lease_id;
	for (g->nkeys = 0; g->nkeys < a->nkvs && g->nkeys < 4; g->nkeys++)
		snprintf(g->keys[g->nkeys], sizeof(g->keys[0]), "%s",
			 a->kvs[g->nkeys].key);
	etcd_kv_clear(&g->leader);
	if (a->rc == 0 && a->leader.key != NULL) {
		g->leader = a->leader;
		g->leader.key = strdup(a->leader.key);
		g->leader.value = strdup(a->leader.value ? a->leader.value
							 : "");
	}
	uv_stop(g->loop);
}

static int got_done(void *arg)
{
	return ((struct got *)arg)->done;
}

/* Waits (at most 5 s) for the call that returned `rc`; its answer's rc. */
static int await(uv_loop_t *loop, int rc, struct got *g)
{
	CHECK(rc == 0);
	if (rc < 0)
		return rc;
	CHECK(run_until(loop, got_done, g, 5000) == 0);
	return g->rc;
}

/* A fenced write through `c`: key `key` = `value` if `fence` holds.
 * Returns the txn's rc, *succeeded whether it wrote. */
static int fenced_put(uv_loop_t *loop, struct etcd_client *c,
		      const struct etcd_cmp *fence, const char *key,
		      const char *value, int *succeeded)
{
	struct etcd_op put = { .kind = ETCD_OP_PUT,
			       .key = key,
			       .value = value,
			       .value_len = strlen(value) };
	struct got g = { .loop = loop };
	int rc;

	rc = await(loop, etcd_txn(c, fence, 1, &put, 1, NULL, 0, got_cb, &g),
		   &g);
	*succeeded = g.succeeded;
	etcd_kv_clear(&g.leader);
	return rc;
}

/* A copy of a fence compare (its key outlives the elector's). */
struct fence_copy {
	struct etcd_cmp cmp;
	char key[128];
};

static void fence_keep(const struct etcd_cmp *cmp, struct fence_copy *f)
{
	f->cmp = *cmp;
	snprintf(f->key, sizeof(f->key), "%s", cmp->key);
	f->cmp.key = f->key;
}

/* Starts the cluster; a failure is a failed check. */
static int cluster_up(struct etcd_cluster *k)
{
	int rc = etcd_cluster_start(k, 3, 12000);

	if (rc < 0)
		CHECK(!"a 3-member etcd runs (scripts/install-deps installs "
		       "it)");
	return rc;
}

/* ------------------------------------------------------------- tests */

/* Three candidates: exactly one leads, the others see its value; the
 * leader's fenced write succeeds, a follower has no fence; it stays so
 * across several renewals. */
TEST(elect_live_one_leader)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[3];
	struct field f = { k, 3 };
	const char *names[3] = { "ctl-a tls://10.0.0.1:7000",
				 "ctl-b tls://10.0.0.2:7000",
				 "ctl-c tls://10.0.0.3:7000" };
	struct etcd_cmp fence;
	struct got g = { .loop = &loop };
	struct elect_callbacks cb = { on_change, NULL };
	struct elect *bad = NULL;
	struct cand *lead;
	int i, ok = 0, changes[3];

	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	for (i = 0; i < 3; i++)
		CHECK(cand_start(&k[i], &loop, names[i], cl.endpoints, 600) ==
		      0);
	CHECK(elect_start(&loop, k[0].c, NAME, "x", 1, &cb, &bad) == -EINVAL &&
	      bad == NULL); /* shorter than etcd's shortest lease */
	CHECK(elect_start(&loop, k[0].c, "", "x", TTL_S, &cb, &bad) == -EINVAL);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	lead = leader_of(&f);
	CHECK(lead != NULL);
	if (lead == NULL)
		goto out;
	/* Its fence is the creation revision of the key etcd says leads. */
	CHECK(await(&loop, etcd_leader(lead->c, NAME, got_cb, &g), &g) == 0);
	CHECK_STR(g.leader.value, lead->self);
	CHECK(lead->rev > 0 && g.leader.create_revision == lead->rev);
	CHECK(elect_fence(lead->e, &fence) == 0);
	CHECK_STR(fence.key, g.leader.key);
	CHECK(fence.target == ETCD_CREATE && fence.number == lead->rev);
	CHECK(fenced_put(&loop, lead->c, &fence, "/fnfs/t/a", "1", &ok) == 0);
	CHECK(ok);
	for (i = 0; i < 3; i++)
		if (&k[i] != lead)
			CHECK(elect_fence(k[i].e, &fence) == -ESTALE &&
			      !elect_is_leader(k[i].e));
	/* Several ttls later nothing changed: the leases are renewed. */
	for (i = 0; i < 3; i++)
		changes[i] = k[i].changes;
	run_for(&loop, 3 * TTL_S * 1000 / 2);
	CHECK(settled(&f) && leader_of(&f) == lead);
	for (i = 0; i < 3; i++) {
		CHECK(k[i].changes == changes[i]);
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
	}
out:
	etcd_kv_clear(&g.leader);
	for (i = 0; i < 3; i++)
		cand_free(&k[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* The leader dies (kill -9: its lease is neither renewed nor revoked):
 * another leads within ttl + 2 s, and the dead one's fence is refused. */
TEST(elect_live_failover)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[3];
	struct field f = { k, 3 };
	struct fence_copy old;
	struct etcd_cmp fence;
	struct cand *lead;
	int64_t killed, took;
	int i, ok = 1;

	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	CHECK(cand_start(&k[0], &loop, "ctl-a", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, is_leader, &k[0], SETTLE_MS) == 0);
	CHECK(cand_start(&k[1], &loop, "ctl-b", cl.endpoints, 600) == 0);
	CHECK(cand_start(&k[2], &loop, "ctl-c", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	CHECK(leader_of(&f) == &k[0]);
	CHECK(elect_fence(k[0].e, &fence) == 0);
	fence_keep(&fence, &old);
	cand_free(&k[0]);
	killed = rt_mono_ms();
	f.k = &k[1];
	f.n = 2;
	CHECK(run_until(&loop, settled, &f, (TTL_S + 4) * 1000) == 0);
	lead = leader_of(&f);
	CHECK(lead != NULL);
	if (lead == NULL)
		goto out;
	took = lead->lead_at - killed;
	fprintf(stderr,
		"  failover: %s leads %lld ms after the kill (ttl %d s)\n",
		lead->self, (long long)took, TTL_S);
	/* Not before the dead one's lease could expire (renewed at most
	 * ttl/3 before the kill), and within ttl + 2 s. */
	CHECK(took > TTL_S * 1000 * 2 / 3 - 100);
	CHECK(took < TTL_S * 1000 + 2000);
	CHECK(fenced_put(&loop, lead->c, &old.cmp, "/fnfs/t/a", "dead", &ok) ==
	      0);
	CHECK(!ok);
	CHECK(elect_fence(lead->e, &fence) == 0);
	CHECK(fence.number > old.cmp.number);
	CHECK(fenced_put(&loop, lead->c, &fence, "/fnfs/t/a", "new", &ok) == 0);
	CHECK(ok);
	for (i = 1; i < 3; i++)
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
out:
	for (i = 0; i < 3; i++)
		cand_free(&k[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* Makes three proxies, one per member of `cl`, and their endpoints in
 * `via`. Returns 0 or -errno. */
static int proxies_new(uv_loop_t *loop, const struct etcd_cluster *cl,
		       struct cut_proxy **px, char *via, size_t size)
{
	int i, rc = 0;

	via[0] = '\0';
	for (i = 0; i < 3 && rc == 0; i++) {
		size_t len = strlen(via);

		rc = cut_proxy_new(loop, atoi(strrchr(cl->client[i], ':') + 1),
				   &px[i]);
		if (rc == 0)
			snprintf(via + len, size - len, "%shttp://127.0.0.1:%d",
				 i ? "," : "", cut_proxy_port(px[i]));
	}
	return rc;
}

/* Whether A says lost and B leads. */
static int deposed_and_replaced(void *arg)
{
	struct cand *k = arg;

	return k[0].state == ELECT_LOST && k[1].state == ELECT_LEADER;
}

static int follows_b(void *arg)
{
	struct cand *k = arg;

	return k[0].state == ELECT_FOLLOWER && strcmp(k[0].value, "ctl-b") == 0;
}

/* The leader is cut off from etcd (its client goes through proxies that
 * stop forwarding: no FIN, no RST), not killed. It says LOST within the
 * ttl, before the other candidate says LEADER; its fenced writes are
 * refused; healed, it follows the new leader.
 *
 * Why "before" means no two leaders act at once: A's lease was last
 * renewed on etcd after A sent that renewal (at time s), so etcd expires
 * it at s + ttl at the earliest, and only then deletes A's key, the one
 * B's campaign waits on. A steps down at s + ttl - margin by the same
 * monotonic clock (both candidates are in this process, so their
 * rt_mono_ms() times compare directly). B can only lead after etcd's
 * deletion, so A's LOST must come first, by about the margin. */
TEST(elect_live_partition)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[2];
	struct field f = { k, 2 };
	struct cut_proxy *px[3] = { NULL, NULL, NULL };
	struct fence_copy old;
	struct etcd_cmp fence;
	char via[160];
	int64_t cut;
	int i, ok = 1, rc;

	signal(SIGPIPE, SIG_IGN);
	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	CHECK(proxies_new(&loop, &cl, px, via, sizeof(via)) == 0);
	CHECK(cand_start(&k[0], &loop, "ctl-a", via, 600) == 0);
	CHECK(run_until(&loop, is_leader, &k[0], SETTLE_MS) == 0);
	CHECK(cand_start(&k[1], &loop, "ctl-b", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	CHECK(elect_fence(k[0].e, &fence) == 0);
	fence_keep(&fence, &old);
	for (i = 0; i < 3; i++)
		cut_proxy_cut(px[i], 1);
	cut = rt_mono_ms();
	CHECK(run_until(&loop, deposed_and_replaced, k, (TTL_S + 4) * 1000) ==
	      0);
	fprintf(stderr,
		"  partition: A lost %lld ms after the cut, B leads %lld ms "
		"after it\n",
		(long long)(k[0].left_at - cut),
		(long long)(k[1].lead_at - cut));
	CHECK(k[0].left_at > cut && k[0].left_at - cut <= TTL_S * 1000);
	CHECK(k[0].left_at < k[1].lead_at);
	CHECK(k[1].lead_at - cut < TTL_S * 1000 + 2000);
	CHECK(!elect_is_leader(k[0].e));
	CHECK(elect_fence(k[0].e, &fence) == -ESTALE);
	/* A's last fence is refused, B's holds. */
	CHECK(fenced_put(&loop, k[1].c, &old.cmp, "/fnfs/t/a", "a", &ok) == 0);
	CHECK(!ok);
	CHECK(elect_fence(k[1].e, &fence) == 0);
	CHECK(fenced_put(&loop, k[1].c, &fence, "/fnfs/t/a", "b", &ok) == 0);
	CHECK(ok);
	/* A's own write, while cut, cannot go through. */
	ok = 1;
	rc = fenced_put(&loop, k[0].c, &old.cmp, "/fnfs/t/a", "a", &ok);
	CHECK(rc == -ETIMEDOUT || rc == -EIO);
	/* Healed: A follows B, and its old fence is still refused. */
	for (i = 0; i < 3; i++)
		cut_proxy_cut(px[i], 0);
	CHECK(run_until(&loop, follows_b, k, (TTL_S + 3) * 1000) == 0);
	CHECK(k[1].state == ELECT_LEADER);
	ok = 1;
	CHECK(fenced_put(&loop, k[0].c, &old.cmp, "/fnfs/t/a", "a", &ok) == 0);
	CHECK(!ok);
	for (i = 0; i < 2; i++)
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
out:
	for (i = 0; i < 2; i++)
		cand_free(&k[i]);
	for (i = 0; i < 3; i++)
		cut_proxy_free(px[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* The leader is cut off from the one member its client talks to (the
 * others still answer it): it goes on leading, nobody else leads. Its
 * renewal waits there for the client's timeout (400 ms), then goes to
 * the next member at once, well within ttl - margin (1.5 s). */
TEST(elect_live_member_cut)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[2];
	struct field f = { k, 2 };
	struct cut_proxy *px[3] = { NULL, NULL, NULL };
	struct etcd_cmp fence;
	char via[160], first[64];
	int i, ok = 0, changes[2], cut = -1;

	signal(SIGPIPE, SIG_IGN);
	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	CHECK(proxies_new(&loop, &cl, px, via, sizeof(via)) == 0);
	CHECK(cand_start(&k[0], &loop, "ctl-a", via, 400) == 0);
	CHECK(run_until(&loop, is_leader, &k[0], SETTLE_MS) == 0);
	CHECK(cand_start(&k[1], &loop, "ctl-b", cl.endpoints, 400) == 0);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	snprintf(first, sizeof(first), "%s", etcd_client_endpoint(k[0].c));
	for (i = 0; i < 3; i++)
		if (px[i] != NULL &&
		    atoi(strrchr(first, ':') + 1) == cut_proxy_port(px[i]))
			cut = i;
	CHECK(cut >= 0);
	if (cut < 0)
		goto out;
	for (i = 0; i < 2; i++)
		changes[i] = k[i].changes;
	cut_proxy_cut(px[cut], 1);
	run_for(&loop, 3 * TTL_S * 1000);
	CHECK(strcmp(etcd_client_endpoint(k[0].c), first) != 0);
	CHECK(k[0].changes == changes[0] && k[1].changes == changes[1]);
	CHECK(settled(&f) && leader_of(&f) == &k[0]);
	CHECK(elect_fence(k[0].e, &fence) == 0);
	CHECK(fenced_put(&loop, k[0].c, &fence, "/fnfs/t/a", "1", &ok) == 0);
	CHECK(ok);
	for (i = 0; i < 2; i++)
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
out:
	for (i = 0; i < 2; i++)
		cand_free(&k[i]);
	for (i = 0; i < 3; i++)
		cut_proxy_free(px[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

static int a_follows_b(void *arg)
{
	struct cand *k = arg;

	return follows_b(k) && k[1].state == ELECT_LEADER;
}

/* The leader's lease is revoked behind its back (its key goes with it):
 * its watch of the election's keys tells it at once, and it follows the
 * new leader; its fence fails. */
TEST(elect_live_revoked)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[2];
	struct field f = { k, 2 };
	struct fence_copy old;
	struct etcd_cmp fence;
	struct got g = { .loop = &loop }, r = { .loop = &loop };
	int64_t revoked;
	int i, ok = 1;

	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	CHECK(cand_start(&k[0], &loop, "ctl-a", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, is_leader, &k[0], SETTLE_MS) == 0);
	CHECK(cand_start(&k[1], &loop, "ctl-b", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	CHECK(elect_fence(k[0].e, &fence) == 0);
	fence_keep(&fence, &old);
	CHECK(await(&loop, etcd_leader(k[1].c, NAME, got_cb, &g), &g) == 0);
	CHECK(g.leader.lease != 0);
	CHECK(await(&loop,
		    etcd_lease_revoke(k[1].c, g.leader.lease, got_cb, &r),
		    &r) == 0);
	revoked = rt_mono_ms();
	CHECK(run_until(&loop, a_follows_b, k, 3000) == 0);
	fprintf(stderr, "  revoked: ctl-a left %lld ms after, ctl-b leads\n",
		(long long)(k[0].left_at - revoked));
	/* Its watch tells it at once (a renewal, at the next tick, would
	 * take up to ttl/3: 667 ms). */
	CHECK(k[0].left_at - revoked < 300);
	CHECK(fenced_put(&loop, k[1].c, &old.cmp, "/fnfs/t/a", "a", &ok) == 0);
	CHECK(!ok);
	for (i = 0; i < 2; i++)
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
out:
	etcd_kv_clear(&g.leader);
	etcd_kv_clear(&r.leader);
	for (i = 0; i < 2; i++)
		cand_free(&k[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

static void on_stopped(void *arg)
{
	struct cand *k = arg;

	k->stop_done = 1;
	uv_stop(k->loop);
}

static int stopped_and_replaced(void *arg)
{
	struct cand *k = arg;

	return k[0].stop_done && k[1].state == ELECT_LEADER;
}

/* The election's key other than `lead` (one candidate's), read from
 * etcd into `out`. Returns 0, -ENOENT, or the read's -errno. */
static int other_key_once(uv_loop_t *loop, struct etcd_client *c,
			  const char *lead, char *out, size_t size)
{
	struct got g = { .loop = loop };
	char end[32];
	size_t i;
	int rc;

	etcd_prefix_end(NAME "/", end);
	rc = await(loop, etcd_range(c, NAME "/", end, 0, 0, got_cb, &g), &g);
	for (i = 0; rc == 0 && i < g.nkeys; i++)
		if (strcmp(g.keys[i], lead) != 0)
			break;
	if (rc == 0 && i == g.nkeys)
		rc = -ENOENT;
	if (rc == 0)
		snprintf(out, size, "%s", g.keys[i]);
	return rc;
}

/* other_key_once until there is one, for at most a second: a candidate
 * that makes its campaign again has no key for a moment. */
static int other_key(uv_loop_t *loop, struct etcd_client *c, const char *lead,
		     char *out, size_t size)
{
	int i, rc = -ENOENT;

	for (i = 0; i < 20 && rc == -ENOENT; i++) {
		rc = other_key_once(loop, c, lead, out, size);
		if (rc == -ENOENT)
			run_for(loop, 50);
	}
	return rc;
}

/* The leader stops (resigns, revokes its lease): the follower leads at
 * once. Meanwhile the follower's campaign, bounded to 800 ms, was made
 * again several times on new leases without its state changing. */
TEST(elect_live_resign)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k[2];
	struct field f = { k, 2 };
	struct fence_copy old;
	struct etcd_cmp fence;
	char before[64] = "", after[64] = "";
	int64_t stopped, took;
	int i, ok = 1, changes;

	uv_loop_init(&loop);
	memset(k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	CHECK(cand_start(&k[0], &loop, "ctl-a", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, is_leader, &k[0], SETTLE_MS) == 0);
	CHECK(cand_start(&k[1], &loop, "ctl-b", cl.endpoints, 600) == 0);
	elect_tune(k[1].e, 800);
	CHECK(run_until(&loop, settled, &f, SETTLE_MS) == 0);
	CHECK(elect_fence(k[0].e, &fence) == 0);
	fence_keep(&fence, &old);
	changes = k[1].changes;
	CHECK(other_key(&loop, k[0].c, old.key, before, sizeof(before)) == 0);
	run_for(&loop, 2500);
	CHECK(other_key(&loop, k[0].c, old.key, after, sizeof(after)) == 0);
	CHECK(strcmp(before, after) != 0); /* a new lease, a new key */
	CHECK(k[1].changes == changes && settled(&f));
	changes = k[0].changes;
	CHECK(elect_stop(k[0].e, on_stopped, &k[0]) == 0);
	CHECK(elect_stop(k[0].e, on_stopped, &k[0]) == -EALREADY);
	stopped = rt_mono_ms();
	CHECK(!elect_is_leader(k[0].e));
	CHECK(run_until(&loop, stopped_and_replaced, k, 3000) == 0);
	took = k[1].lead_at - stopped;
	fprintf(stderr, "  resign: ctl-b leads %lld ms after the stop\n",
		(long long)took);
	CHECK(took < 1000);
	CHECK(k[0].changes == changes); /* no on_change after elect_stop */
	CHECK(fenced_put(&loop, k[1].c, &old.cmp, "/fnfs/t/a", "a", &ok) == 0);
	CHECK(!ok);
	for (i = 0; i < 2; i++)
		fprintf(stderr, "  %s: %s\n", k[i].self, k[i].history);
out:
	for (i = 0; i < 2; i++)
		cand_free(&k[i]);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

/* A controller's key outlived the lease it gave up (the revoke did not
 * reach etcd: it was away). On its new lease it does not follow itself,
 * as if another led under its name: it revokes that lease again, and
 * leads at once rather than after the old lease's ttl (60 s here). */
TEST(elect_live_own_stale_key)
{
	struct etcd_cluster cl;
	uv_loop_t loop;
	struct cand k;
	struct etcd_config cfg = { 0 };
	struct etcd_client *raw = NULL;
	struct got g = { .loop = &loop }, c = { .loop = &loop };
	int64_t t0;

	uv_loop_init(&loop);
	memset(&k, 0, sizeof(k));
	if (cluster_up(&cl) < 0)
		goto out;
	cfg.endpoints = cl.endpoints;
	cfg.timeout_ms = 3000;
	CHECK(etcd_client_new(&loop, &cfg, &raw) == 0);
	if (raw == NULL)
		goto out;
	CHECK(await(&loop, etcd_lease_grant(raw, 60, got_cb, &g), &g) == 0);
	CHECK(g.lease != 0);
	CHECK(await(&loop,
		    etcd_campaign(raw, NAME, g.lease, "ctl-a", 5, 3000, got_cb,
				  &c),
		    &c) == 0);
	CHECK(c.leader.lease == g.lease);
	t0 = rt_mono_ms();
	CHECK(cand_start(&k, &loop, "ctl-a", cl.endpoints, 600) == 0);
	CHECK(run_until(&loop, is_leader, &k, 10000) == 0);
	fprintf(stderr, "  own stale key: leads %lld ms after its start: %s\n",
		(long long)(k.lead_at - t0), k.history);
	CHECK(k.lead_at - t0 < 5000);
	CHECK(strstr(k.history, "follower") == NULL);
out:
	etcd_kv_clear(&g.leader);
	etcd_kv_clear(&c.leader);
	if (k.e != NULL)
		cand_free(&k);
	etcd_client_free(raw);
	loop_end(&loop);
	etcd_cluster_stop(&cl);
}

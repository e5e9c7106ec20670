/*
 * elect.c - leader election and fencing (elect.h): a lease kept alive by
 * a timer, a campaign on it, etcd_leader asked at each renewal and at
 * each change a watch of the election's keys reports, and a local
 * deadline that deposes the leader before its lease can expire on etcd.
 *
 * Each etcd call carries a ticket (what it was for, on which lease, when
 * it was sent); the elector's memory is counted (the owner, its three
 * timers, each ticket), so answers that come after elect_free find it
 * still there and are dropped. It stays one file of about 700 lines: the
 * tickets and the elector's states are one machine over one struct, and
 * its deadline reasoning reads best in one place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elect.h"

/* Polls (etcd_leader) under way at most: more would queue on a member
 * that stopped answering. */
#define MAX_POLLS 4

/* What a call was for. */
enum ticket_kind {
	T_GRANT,    /* a new lease */
	T_KEEP,	    /* a renewal of `lease` */
	T_CAMPAIGN, /* a campaign on `lease` */
	T_POLL,	    /* who leads */
	T_REVOKE,   /* an abandoned lease, best effort */
	T_STOP,	    /* elect_stop's resign or revoke */
};

/* One etcd call under way. */
struct ticket {
	struct elect *e;
	enum ticket_kind kind;
	int64_t lease;	/* the lease it is about (0: none) */
	int64_t sent;	/* rt_mono_ms() when it was sent */
	uint64_t epoch; /* T_POLL: e->epoch when it was sent */
	uint64_t seq;	/* T_POLL: its number */
};

struct elect {
	uv_loop_t *loop;
	struct etcd_client *c; /* the owner's */
	char *name;	       /* the election, owned */
	char *prefix;	       /* name + "/": its candidates' keys, owned */
	char *prefix_end;      /* the end of that range, owned */
	char *self;	       /* our value, owned */
	int64_t ttl_ms;	       /* the lease's ttl asked for */
	int64_t margin_ms;     /* stepped down this long before it ends */
	int campaign_ms;       /* bound of one campaign */
	struct elect_callbacks cb;

	uv_timer_t tick;	  /* every ttl/3: renewal, poll, retries */
	uv_timer_t deadline;	  /* lease_end */
	uv_timer_t soon;	  /* a poll on the next turn (for the watch) */
	struct etcd_watch *watch; /* of prefix, or NULL */
	int refs;		  /* owner + 3 timers + tickets */
	int stopped;		  /* elect_stop was called */
	int freed;		  /* elect_free was called */
	int stop_left;		  /* elect_stop's calls not answered */
	elect_done_fn done;	  /* elect_stop's, or NULL */
	void *done_arg;

	/* The lease. */
	int64_t lease;	   /* ours now, 0 while none */
	int64_t lease_end; /* rt_mono_ms() from which it may be gone */
	int granting;	   /* a grant is under way */
	int campaigned;	   /* a campaign on `lease` started */
	int reachable;	   /* the last grant or renewal was answered */
	int polls;	   /* polls under way */

	/* Leadership. */
	int leads;	   /* our key on `lease` is the oldest */
	char *key;	   /* that key (owned), while leads */
	int64_t rev;	   /* its creation revision, while leads */
	uint64_t epoch;	   /* +1 each time we start leading */
	uint64_t poll_seq; /* the number of the last poll sent */
	uint64_t applied;  /* that of the last poll answer used */
	char *other;	   /* another leader's value (owned), or NULL */

	/* What on_change said last. */
	int said_any;
	enum elect_state said;
	char *said_value; /* owned, or NULL */
	int64_t said_rev;
};

static void on_answer(void *arg, const struct etcd_answer *a);

/* --------------------------------------------------------- lifetime */

/* Drops one reference; the last frees `e`. */
static void unref(struct elect *e)
{
	if (--e->refs > 0)
		return;
	free(e->name);
	free(e->prefix);
	free(e->prefix_end);
	free(e->self);
	free(e->key);
	free(e->other);
	free(e->said_value);
	free(e);
}

static void on_timer_closed(uv_handle_t *h)
{
	unref(h->data);
}

/* A ticket for a call of `kind` about `lease`, sent now (it holds a
 * reference on `e`), or NULL when out of memory. */
static struct ticket *ticket_new(struct elect *e, enum ticket_kind kind,
				 int64_t lease)
{
	struct ticket *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->e = e;
	t->kind = kind;
	t->lease = lease;
	t->sent = rt_mono_ms();
	t->epoch = e->epoch;
	e->refs++;
	return t;
}

/* Ends ticket `t` (its call answered, or could not start). */
static void ticket_free(struct ticket *t)
{
	struct elect *e = t->e;

	free(t);
	unref(e);
}

/* --------------------------------------------------------- the state */

/* Whether the lease still holds by our clock. */
static int lease_live(const struct elect *e, int64_t now)
{
	return e->lease != 0 && now < e->lease_end;
}

/* The state at `now` (see elect.h). */
static enum elect_state state_at(const struct elect *e, int64_t now)
{
	if (e->leads && lease_live(e, now))
		return ELECT_LEADER;
	if (!lease_live(e, now) && !e->reachable)
		return ELECT_LOST;
	if (e->other != NULL)
		return ELECT_FOLLOWER;
	return ELECT_CAMPAIGNING;
}

/* Tells the owner when the state, the leader's value or the fence
 * changed. Called last by each handler: the owner may free `e` here. */
static void refresh(struct elect *e)
{
	enum elect_state s;
	const char *value = NULL;
	int64_t rev = 0;
	char *copy = NULL;

	if (e->stopped || e->freed)
		return;
	s = state_at(e, rt_mono_ms());
	if (s == ELECT_LEADER) {
		value = e->self;
		rev = e->rev;
	} else if (s == ELECT_FOLLOWER) {
		value = e->other;
	}
	if (e->said_any && s == e->said && rev == e->said_rev &&
	    (value == NULL) == (e->said_value == NULL) &&
	    (value == NULL || strcmp(value, e->said_value) == 0))
		return;
	if (value != NULL && (copy = strdup(value)) == NULL)
		return; /* told at the next change */
	free(e->said_value);
	e->said_value = copy;
	e->said = s;
	e->said_rev = rev;
	e->said_any = 1;
	e->cb.on_change(e->cb.arg, s, value, rev);
}

/* Not leading any more (our key is gone, or may be). */
static void drop_leadership(struct elect *e)
{
	e->leads = 0;
	e->rev = 0;
	free(e->key);
	e->key = NULL;
}

/* We lead, with leader key `key` (`n` bytes) created at `rev`. Polls sent
 * before now are dropped: they may predate the change that made us lead. */
static void take_leadership(struct elect *e, const char *key, size_t n,
			    int64_t rev)
{
	char *k;

	if (e->leads && e->rev == rev)
		return;
	k = malloc(n + 1);
	if (k == NULL)
		return; /* learnt again at the next poll */
	memcpy(k, key, n);
	k[n] = '\0';
	free(e->key);
	e->key = k;
	e->rev = rev;
	e->leads = 1;
	e->epoch++;
	e->applied = e->poll_seq;
	free(e->other);
	e->other = NULL;
}

/* -------------------------------------------------------- etcd calls */

/* What the etcd call of ticket `t` returned (`rc`): when it failed, its
 * callback will not come, and the ticket ends here. */
static int sent(struct ticket *t, int rc)
{
	if (rc < 0)
		ticket_free(t);
	return rc;
}

/* Grants a new lease (once at a time). */
static void grant(struct elect *e)
{
	struct ticket *t;

	if (e->granting || (t = ticket_new(e, T_GRANT, 0)) == NULL)
		return;
	if (sent(t, etcd_lease_grant(e->c, e->ttl_ms / 1000, on_answer, t)) ==
	    0)
		e->granting = 1;
}

/* Renews the current lease once. */
static void renew(struct elect *e)
{
	struct ticket *t = ticket_new(e, T_KEEP, e->lease);

	if (t != NULL)
		(void)sent(t,
			   etcd_lease_keepalive(e->c, e->lease, on_answer, t));
}

/* Revokes `lease`, best effort. */
static void revoke_lease(struct elect *e, int64_t lease, enum ticket_kind kind)
{
	struct ticket *t = ticket_new(e, kind, lease);

	if (t != NULL &&
	    sent(t, etcd_lease_revoke(e->c, lease, on_answer, t)) == 0 &&
	    kind == T_STOP)
		e->stop_left++;
}

/* Asks who leads (at most MAX_POLLS at once). */
static void poll_leader(struct elect *e)
{
	struct ticket *t;

	if (e->polls >= MAX_POLLS || (t = ticket_new(e, T_POLL, 0)) == NULL)
		return;
	t->seq = ++e->poll_seq;
	if (sent(t, etcd_leader(e->c, e->name, on_answer, t)) == 0)
		e->polls++;
}

/* Campaigns on the current lease. */
static void campaign(struct elect *e)
{
	struct ticket *t = ticket_new(e, T_CAMPAIGN, e->lease);

	/* When it cannot start, the next tick tries again. */
	if (t != NULL && sent(t, etcd_campaign(e->c, e->name, e->lease, e->self,
					       strlen(e->self), e->campaign_ms,
					       on_answer, t)) == 0)
		e->campaigned = 1;
}

/* Gives the current lease up for good: it is revoked (its key goes with
 * it), a new one is asked for, and a campaign will follow on it. */
static void abandon(struct elect *e)
{
	if (e->lease != 0)
		revoke_lease(e, e->lease, T_REVOKE);
	e->lease = 0;
	e->lease_end = 0;
	e->campaigned = 0;
	drop_leadership(e);
	uv_timer_stop(&e->deadline);
	grant(e);
}

/* ------------------------------------------------------ the deadline */

static void on_deadline(uv_timer_t *h);

/* (Re)arms the deadline timer for e->lease_end. libuv's timer is due
 * at uv_now() + the delay, and uv_now() may lag the clock: it can only
 * fire early, and on_deadline reads the clock again. */
static void arm_deadline(struct elect *e)
{
	int64_t left = e->lease_end - rt_mono_ms();

	uv_timer_start(&e->deadline, on_deadline,
		       (uint64_t)(left > 0 ? left : 0), 0);
}

/* The lease may expire on etcd soon and no renewal was answered: no
 * longer the leader, and the lease is given up. */
static void on_deadline(uv_timer_t *h)
{
	struct elect *e = h->data;

	if (e->lease == 0)
		return;
	if (rt_mono_ms() < e->lease_end) {
		arm_deadline(e);
		return;
	}
	e->reachable = 0; /* nothing answered in time */
	abandon(e);
	refresh(e);
}

/* The lease `t` is about answered with `ttl` seconds left, at the
 * earliest since t->sent: it holds until then by our clock, less the
 * margin. */
static void extend(struct elect *e, const struct ticket *t, int64_t ttl)
{
	int64_t ms = ttl * 1000, end;

	if (ms <= 0 || ms > e->ttl_ms)
		ms = e->ttl_ms;
	end = t->sent + ms - e->margin_ms;
	if (end > e->lease_end) {
		e->lease_end = end;
		arm_deadline(e);
	}
}

/* ------------------------------------------------------- the answers */

static void on_granted(struct elect *e, struct ticket *t,
		       const struct etcd_answer *a)
{
	e->granting = 0;
	if (a->rc < 0) {
		e->reachable = 0; /* tried again at the next tick */
		return;
	}
	e->reachable = 1;
	if (e->lease != 0) /* a grant for a lease already replaced */
		revoke_lease(e, e->lease, T_REVOKE);
	drop_leadership(e);
	e->lease = a->lease_id;
	e->lease_end = 0;
	e->campaigned = 0;
	extend(e, t, a->ttl);
	campaign(e);
	poll_leader(e);
}

static void on_kept(struct elect *e, struct ticket *t,
		    const struct etcd_answer *a)
{
	if (t->lease != e->lease)
		return;
	if (a->rc == -ENOENT) { /* gone on etcd: expired or revoked */
		e->reachable = 1;
		abandon(e);
	} else if (a->rc < 0) {
		e->reachable = 0;
		/* A member that stopped answering: the client sends the
		 * next request to another, at once rather than at the next
		 * tick (so a client timeout up to 2 ttl/3 - margin keeps
		 * the lease). Other failures come at once: no retry. */
		if (a->rc == -ETIMEDOUT) {
			renew(e);
			/* The watch may hang on that member too (its kernel
			 * answers TCP keepalives): made again at the next
			 * tick, on the member the client uses now. */
			etcd_watch_free(e->watch);
			e->watch = NULL;
		}
	} else {
		e->reachable = 1;
		extend(e, t, a->ttl);
	}
}

/* A campaign's answer: we lead, or it is made again on a new lease (a
 * lease whose campaign was withdrawn is not used again: etcd deletes
 * the withdrawn campaign's key later, whatever it holds then). */
static void on_campaign(struct elect *e, struct ticket *t,
			const struct etcd_answer *a)
{
	if (t->lease != e->lease)
		return; /* a lease given up: revoked already */
	if (a->rc == 0 && a->leader.lease == e->lease &&
	    lease_live(e, rt_mono_ms())) {
		take_leadership(e, a->leader.key, a->leader.key_len,
				a->leader.mod_revision);
		return;
	}
	if (a->rc == 0 || !e->leads)
		abandon(e);
}

/* Who leads: us (our lease's key is the oldest), another, or nobody. */
static void on_polled(struct elect *e, struct ticket *t,
		      const struct etcd_answer *a)
{
	const struct etcd_kv *kv = a->rc == 0 ? &a->leader : NULL;
	char *other = NULL;

	if (t->epoch != e->epoch || t->seq <= e->applied)
		return; /* sent before we started leading, or overtaken */
	if (a->rc < 0 && a->rc != -ENOENT)
		return;
	if (kv != NULL && kv->key == NULL)
		return;
	e->applied = t->seq;
	if (kv != NULL && e->lease != 0 && kv->lease == e->lease &&
	    lease_live(e, rt_mono_ms())) {
		take_leadership(e, kv->key, kv->key_len, kv->create_revision);
		return;
	}
	if (kv != NULL && kv->value != NULL &&
	    strcmp(kv->value, e->self) == 0) {
		/* Our own key, on a lease we gave up whose revoke did not
		 * reach etcd (it was away): nobody else leads. It goes
		 * with that lease, revoked again now; until then, no
		 * leader is known (not this one named as another). */
		if (kv->lease != 0 && kv->lease != e->lease)
			revoke_lease(e, kv->lease, T_REVOKE);
		kv = NULL;
	}
	if (kv != NULL && (other = strdup(kv->value ? kv->value : "")) == NULL)
		return;
	free(e->other);
	e->other = other;
	if (e->leads) /* our key is gone: linearizable, sent while we led */
		abandon(e);
}

static void on_stop_answer(struct elect *e)
{
	elect_done_fn done = e->done;

	if (--e->stop_left > 0 || e->freed)
		return;
	e->done = NULL;
	if (done != NULL)
		done(e->done_arg);
}

/* Every call's answer: dropped once the elector stopped (but for
 * elect_stop's own) or the client went. */
static void on_answer(void *arg, const struct etcd_answer *a)
{
	struct ticket *t = arg;
	struct elect *e = t->e;

	if (t->kind == T_POLL)
		e->polls--;
	if (t->kind == T_STOP) {
		on_stop_answer(e);
	} else if (e->stopped || e->freed || a->rc == -ECANCELED) {
		if (t->kind == T_GRANT)
			e->granting = 0;
		if (t->kind == T_GRANT && a->rc == 0 && !e->freed)
			revoke_lease(e, a->lease_id, T_REVOKE);
	} else {
		switch (t->kind) {
		case T_GRANT: on_granted(e, t, a); break;
		case T_KEEP: on_kept(e, t, a); break;
		case T_CAMPAIGN: on_campaign(e, t, a); break;
		case T_POLL: on_polled(e, t, a); break;
		default: break;
		}
		refresh(e); /* the ticket's reference keeps `e` */
	}
	ticket_free(t);
}

/* -------------------------------------------- the watch and the tick */

/* A poll asked for by the watch, on the loop turn after its message. */
static void on_soon(uv_timer_t *h)
{
	poll_leader(h->data);
}

/* A change among the candidates' keys: ask who leads now. Not from here:
 * a watch's messages come from inside curl's callbacks, where the etcd
 * client can start no call (curl refuses: CURLM_RECURSIVE_API_CALL).
 * A watch that ended is made again at the next tick. */
static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct elect *e = arg;

	if (a->rc < 0) {
		etcd_watch_free(e->watch);
		e->watch = NULL;
		return;
	}
	if (a->created || a->nevents > 0)
		uv_timer_start(&e->soon, on_soon, 0, 0);
}

/* Every ttl/3: renews the lease, asks for one if there is none,
 * campaigns if that could not start, watches again, and asks who leads. */
static void on_tick(uv_timer_t *h)
{
	struct elect *e = h->data;

	if (e->lease != 0)
		renew(e);
	if (e->lease != 0 && !e->campaigned)
		campaign(e);
	if (e->lease == 0)
		grant(e);
	if (e->watch == NULL)
		(void)etcd_watch(e->c, e->prefix, e->prefix_end, 0, 0, on_watch,
				 e, &e->watch);
	poll_leader(e);
	refresh(e); /* the timer's reference keeps `e` */
}

/* ------------------------------------------------------------ the API */

int elect_start(uv_loop_t *loop, struct etcd_client *client, const char *name,
		const char *self, int ttl_s, const struct elect_callbacks *cb,
		struct elect **out)
{
	struct elect *e = NULL;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (loop == NULL || client == NULL || name == NULL || *name == '\0' ||
	    self == NULL || ttl_s < 2 || ttl_s > 3600 || cb == NULL ||
	    cb->on_change == NULL) {
		rc = -EINVAL;
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	e->refs = 1;
	e->loop = loop;
	e->c = client;
	e->cb = *cb;
	e->ttl_ms = (int64_t)ttl_s * 1000;
	e->margin_ms = e->ttl_ms / 5;
	if (e->margin_ms < ELECT_MARGIN_MS)
		e->margin_ms = ELECT_MARGIN_MS;
	e->campaign_ms = ELECT_CAMPAIGN_MS;
	e->reachable = 1;
	n = strlen(name);
	e->name = strdup(name);
	e->self = strdup(self);
	e->prefix = malloc(n + 2);
	e->prefix_end = malloc(n + 3);
	if (e->name == NULL || e->self == NULL || e->prefix == NULL ||
	    e->prefix_end == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(e->prefix, name, n);
	memcpy(e->prefix + n, "/", 2);
	etcd_prefix_end(e->prefix, e->prefix_end);
	uv_timer_init(loop, &e->tick);
	uv_timer_init(loop, &e->deadline);
	uv_timer_init(loop, &e->soon);
	e->tick.data = e->deadline.data = e->soon.data = e;
	e->refs += 3;
	uv_timer_start(&e->tick, on_tick, 0, (uint64_t)e->ttl_ms / 3);
out:
	if (rc < 0 && e != NULL)
		unref(e);
	else
		*out = e;
	return rc;
}

void elect_tune(struct elect *e, int campaign_ms)
{
	if (campaign_ms > 0)
		e->campaign_ms = campaign_ms;
}

enum elect_state elect_state(const struct elect *e)
{
	return state_at(e, rt_mono_ms());
}

int elect_is_leader(const struct elect *e)
{
	return !e->stopped && elect_state(e) == ELECT_LEADER;
}

int elect_fence(const struct elect *e, struct etcd_cmp *out)
{
	memset(out, 0, sizeof(*out));
	if (!elect_is_leader(e) || e->key == NULL)
		return -ESTALE;
	out->key = e->key;
	out->target = ETCD_CREATE;
	out->result = ETCD_EQUAL;
	out->number = e->rev;
	return 0;
}

/* elect_stop with nothing to tell etcd: `done` on the next turn. */
static void on_stopped_idle(uv_timer_t *h)
{
	struct elect *e = h->data;

	e->stop_left = 1;
	on_stop_answer(e);
}

int elect_stop(struct elect *e, elect_done_fn done, void *arg)
{
	struct etcd_kv leader = { 0 };
	struct ticket *t;

	if (e->stopped || e->freed)
		return -EALREADY;
	e->stopped = 1;
	e->done = done;
	e->done_arg = arg;
	uv_timer_stop(&e->tick);
	uv_timer_stop(&e->deadline);
	uv_timer_stop(&e->soon);
	etcd_watch_free(e->watch);
	e->watch = NULL;
	if (e->leads && e->key != NULL &&
	    (t = ticket_new(e, T_STOP, e->lease)) != NULL) {
		leader.key = e->key;
		leader.key_len = strlen(e->key);
		leader.mod_revision = e->rev;
		leader.lease = e->lease;
		if (sent(t, etcd_resign(e->c, e->name, &leader, on_answer,
					t)) == 0)
			e->stop_left++;
	}
	if (e->lease != 0)
		revoke_lease(e, e->lease, T_STOP);
	drop_leadership(e);
	e->lease = 0;
	if (e->stop_left == 0)
		uv_timer_start(&e->tick, on_stopped_idle, 0, 0);
	return 0;
}

void elect_free(struct elect *e)
{
	if (e == NULL || e->freed)
		return;
	e->freed = 1;
	e->done = NULL;
	etcd_watch_free(e->watch);
	e->watch = NULL;
	uv_close((uv_handle_t *)&e->tick, on_timer_closed);
	uv_close((uv_handle_t *)&e->deadline, on_timer_closed);
	uv_close((uv_handle_t *)&e->soon, on_timer_closed);
	unref(e);
}

const char *elect_state_name(enum elect_state s)
{
	switch (s) {
	case ELECT_CAMPAIGNING: return "campaigning";
	case ELECT_LEADER: return "leader";
	case ELECT_FOLLOWER: return "follower";
	case ELECT_LOST: return "lost";
	}
	return "?";
}

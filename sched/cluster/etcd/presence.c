/*
 * presence.c - a controller's key P/ctl/NAME on a lease of its own
 * (presence.h): the value's codec, then the join, the renewals, the
 * rewrites and the leaving, on the loop over the etcd client. It stays
 * one file of about 750 lines: the value's codec is only used by the
 * member's life around it, and both are one struct's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../store/etcd/etcd_keys.h"
#include "presence.h"

#define TICK_MS	    250	 /* the timer that drives everything */
#define PUBLISH_MS  1000 /* the shortest time between two rewrites */
#define WAIT_MS	    500	 /* between two tries of a taken name */
#define WAIT_MARGIN 1500 /* past the ttl, the longest a join waits */
#define REVS_KEPT   128	 /* revisions of P/ctl/ changes remembered */
#define REWATCH_MS  1000 /* between two tries of the watch */

/* ============================================================ the value */

int presence_key(const char *cluster, const char *name, struct rt_buf *out)
{
	int rc;

	rt_buf_reset(out);
	if (name != NULL && !rt_name_valid(name))
		return -EINVAL;
	rc = etcd_keys_kind_prefix(cluster, ETCD_KEYS_MEMBER, out);
	if (rc == 0 && name != NULL)
		rc = rt_buf_puts(out, name);
	return rc < 0 ? rc : 0;
}

int presence_encode(const struct presence_value *v, struct rt_buf *out)
{
	json_t *o = NULL;
	char *s = NULL;
	int rc = -EINVAL;

	rt_buf_reset(out);
	if (!rt_name_valid(v->name) || v->pid < 0 || v->revision < 0 ||
	    v->seen_ms < 0 || v->started_ms < 0 ||
	    strnlen(v->host, sizeof(v->host)) >= sizeof(v->host) ||
	    strnlen(v->listen, sizeof(v->listen)) >= sizeof(v->listen) ||
	    strnlen(v->role, sizeof(v->role)) >= sizeof(v->role))
		goto out;
	rc = -ENOMEM;
	o = json_pack("{s:s, s:I, s:s, s:o, s:s, s:I, s:I, s:I, s:b}", "name",
		      v->name, "pid", (json_int_t)v->pid, "host", v->host,
		      "listen",
		      v->listen[0] ? json_string(v->listen) : json_null(),
		      "role", v->role, "revision", (json_int_t)v->revision,
		      "seen_ms", (json_int_t)v->seen_ms, "started_ms",
		      (json_int_t)v->started_ms, "stale", v->stale != 0);
	if (o == NULL)
		goto out;
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (s == NULL)
		goto out;
	rc = rt_buf_puts(out, s);
	rc = rc < 0 ? rc : 0;
out:
	free(s);
	json_decref(o);
	return rc;
}

/* Copies string field `k` of `o` into `dst` (`cap` bytes with its NUL);
 * `null_ok`: null is "". Returns 0 or -EINVAL. */
static int get_str(json_t *o, const char *k, char *dst, size_t cap, int null_ok)
{
	json_t *j = json_object_get(o, k);
	size_t n;

	if (null_ok && json_is_null(j)) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_is_string(j))
		return -EINVAL;
	n = json_string_length(j);
	if (n >= cap || strlen(json_string_value(j)) != n)
		return -EINVAL;
	memcpy(dst, json_string_value(j), n + 1);
	return 0;
}

/* Integer field `k` of `o`, >= 0, into *dst. Returns 0 or -EINVAL. */
static int get_num(json_t *o, const char *k, int64_t *dst)
{
	json_t *j = json_object_get(o, k);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return -EINVAL;
	*dst = (int64_t)json_integer_value(j);
	return 0;
}

int presence_decode(const char *p, size_t n, struct presence_value *v)
{
	json_t *o = json_loadb(p, n, JSON_REJECT_DUPLICATES, NULL);
	json_t *stale = json_object_get(o, "stale");
	int rc = -EINVAL;

	memset(v, 0, sizeof(*v));
	if (!json_is_object(o) || !json_is_boolean(stale))
		goto out;
	if (get_str(o, "name", v->name, sizeof(v->name), 0) < 0 ||
	    !rt_name_valid(v->name) ||
	    get_str(o, "host", v->host, sizeof(v->host), 0) < 0 ||
	    get_str(o, "listen", v->listen, sizeof(v->listen), 1) < 0 ||
	    get_str(o, "role", v->role, sizeof(v->role), 0) < 0 ||
	    get_num(o, "pid", &v->pid) < 0 ||
	    get_num(o, "revision", &v->revision) < 0 ||
	    get_num(o, "seen_ms", &v->seen_ms) < 0 ||
	    get_num(o, "started_ms", &v->started_ms) < 0)
		goto out;
	v->stale = json_is_true(stale);
	rc = 0;
out:
	json_decref(o);
	if (rc < 0)
		memset(v, 0, sizeof(*v));
	return rc;
}

/* ===================================================== the live member */

/* Where the presence stands. */
enum phase {
	PH_GRANT,   /* wants a lease */
	PH_CREATE,  /* has a lease, wants the key */
	PH_JOINED,  /* the key is ours */
	PH_STOPPED, /* presence_stop or presence_free */
};

struct presence {
	uv_loop_t *loop;
	struct etcd_client *c; /* owned */
	uv_timer_t tick;
	struct presence_callbacks cb;
	char *cluster, *key, *prefix, *prefix_end; /* owned */
	struct presence_value v; /* what we publish (v.revision, v.role
				    and v.stale: as last written) */
	int ttl_s;
	enum phase phase;
	int busy;	    /* a grant, txn or revoke is under way */
	int renewing;	    /* a keepalive is under way */
	int joined_told;    /* cb.joined was called */
	int freeing;	    /* presence_free: callbacks ignore their answer */
	int64_t lease;	    /* ours, or 0 */
	int64_t create_rev; /* our key's create_revision */
	int64_t renew_ms;   /* rt_mono_ms of the last renewal sent */
	int64_t publish_ms; /* rt_mono_ms of the last rewrite sent */
	int64_t retry_ms;   /* rt_mono_ms before which no join is tried */
	int64_t wait_until_ms;	 /* a first join waits for a taken name until */
	int warned;		 /* a taken name was logged (after joining) */
	struct etcd_watch *w;	 /* of P/ctl/, or NULL */
	int64_t watch_from;	 /* the revision after the last one seen */
	int64_t rewatch_ms;	 /* rt_mono_ms of the last watch started */
	int64_t revs[REVS_KEPT]; /* revisions of P/ctl/ changes, a ring */
	size_t nrevs;
	int lost_key;	       /* the watch saw our key deleted */
	presence_done_fn done; /* presence_stop's */
	void *done_arg;
	int done_due; /* call `done` on the next tick */
};

/* The first join ended with `rc`: tell the owner (once). */
static void tell_joined(struct presence *p, int rc, const char *why)
{
	if (p->joined_told)
		return;
	p->joined_told = 1;
	if (p->cb.joined != NULL)
		p->cb.joined(p->cb.joined_arg, rc, why);
}

/* Whether revision `r` is a change of P/ctl/ that the watch saw. */
static int ctl_rev(const struct presence *p, int64_t r)
{
	size_t i, n = p->nrevs < REVS_KEPT ? p->nrevs : REVS_KEPT;

	for (i = 0; i < n; i++)
		if (p->revs[i] == r)
			return 1;
	return 0;
}

/* Whether the tree moved from revision `from` to `to` for something
 * other than the members' keys: some revision between them is not one. */
static int moved(const struct presence *p, int64_t from, int64_t to)
{
	int64_t r;

	if (to <= from)
		return to != from;
	if (to - from > REVS_KEPT)
		return 1;
	for (r = from + 1; r <= to; r++)
		if (!ctl_rev(p, r))
			return 1;
	return 0;
}

/* Fills p->v's role, revision and stale from the owner; whether they
 * differ from what was written (`first`: always). */
static int refresh(struct presence *p, int first)
{
	const char *role = p->cb.role ? p->cb.role(p->cb.arg) : NULL;
	int64_t rev = p->v.revision;
	int stale = p->v.stale, changed = first;

	if (role == NULL)
		role = "member";
	if (p->cb.state != NULL && p->cb.state(p->cb.arg, &rev, &stale) < 0) {
		rev = p->v.revision;
		stale = p->v.stale;
	}
	if (strncmp(role, p->v.role, sizeof(p->v.role)) != 0) {
		snprintf(p->v.role, sizeof(p->v.role), "%s", role);
		changed = 1;
	}
	if ((stale != 0) != p->v.stale) {
		p->v.stale = stale != 0;
		changed = 1;
	}
	if (rev != p->v.revision) {
		if (first || moved(p, p->v.revision, rev))
			changed = 1;
		/* Either way, what we write next carries it. */
		p->v.revision = rev;
	}
	return changed;
}

/* The value to write now into `out`. */
static int value_now(struct presence *p, struct rt_buf *out)
{
	p->v.seen_ms = rt_now_ms();
	return presence_encode(&p->v, out);
}

/* A lease is no more: forget it and start again from a grant. */
static void lose_lease(struct presence *p)
{
	p->lease = 0;
	p->create_rev = 0;
	p->phase = PH_GRANT;
	p->retry_ms = 0;
}

/* ---------------------------------------------------------- the watch */

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;
	size_t i;

	if (a->rc < 0) {
		/* Ended: the tick watches again (not from in here). A
		 * compacted start watches from now. */
		etcd_watch_free(p->w);
		p->w = NULL;
		if (a->rc == -ERANGE)
			p->watch_from = 0;
		return;
	}
	for (i = 0; i < a->nevents; i++) {
		const struct etcd_kv *kv = &a->events[i];

		p->revs[p->nrevs++ % REVS_KEPT] = kv->mod_revision;
		if (kv->mod_revision >= p->watch_from)
			p->watch_from = kv->mod_revision + 1;
		if (a->deletes[i] && p->phase == PH_JOINED &&
		    strcmp(kv->key, p->key) == 0 &&
		    kv->mod_revision > p->create_rev)
			p->lost_key = 1;
	}
	if (a->header.revision >= p->watch_from)
		p->watch_from = a->header.revision + 1;
}

/* Watches P/ctl/ when it does not (at most once a REWATCH_MS). */
static void rewatch(struct presence *p)
{
	int64_t now = rt_mono_ms();

	if (p->w != NULL || now - p->rewatch_ms < REWATCH_MS)
		return;
	p->rewatch_ms = now;
	if (etcd_watch(p->c, p->prefix, p->prefix_end, p->watch_from, 0,
		       on_watch, p, &p->w) < 0)
		p->w = NULL;
}

/* ------------------------------------------------------------ joining */

static void send_create(struct presence *p);

static void on_grant(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;

	if (p->freeing || p->phase == PH_STOPPED) {
		/* A lease granted as we left: give it back. */
		if (a->rc == 0 && !p->freeing && a->lease_id != 0)
			p->lease = a->lease_id;
		p->busy = 0;
		return;
	}
	p->busy = 0;
	if (a->rc < 0) {
		if (!p->joined_told) {
			tell_joined(p, a->rc, a->error ? a->error : "no lease");
			return;
		}
		rt_log(RT_LOG_WARN, "cluster presence: lease: %s",
		       a->error ? a->error : strerror(-a->rc));
		p->retry_ms = rt_mono_ms() + p->ttl_s * 1000 / 3;
		return;
	}
	p->lease = a->lease_id;
	p->renew_ms = rt_mono_ms();
	p->phase = PH_CREATE;
	send_create(p);
}

/* What process `pid` of this host is: 0 none (or a zombie: killed, not
 * reaped yet), 1 a live fnfs, 2 a live process of another name. */
static int process_of(int64_t pid)
{
	char path[64], stat[512];
	const char *open_paren, *close_paren;
	FILE *f;
	size_t n;

	if (pid <= 0 || pid > 0x7fffffff)
		return 0;
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return kill((pid_t)pid, 0) < 0 && errno == ESRCH ? 0 : 2;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	/* "PID (COMM) STATE ...": COMM may hold anything, ')' too. */
	close_paren = strrchr(stat, ')');
	if (close_paren == NULL || close_paren[1] != ' ')
		return 2;
	if (close_paren[2] == 'Z' || close_paren[2] == 'X')
		return 0;
	open_paren = strchr(stat, '(');
	if (open_paren == NULL || close_paren - open_paren != 5)
		return 2;
	return memcmp(open_paren + 1, "fnfs", 4) == 0 ? 1 : 2;
}

/* Whether `v` (the key's value now) was written by a process of this
 * host that is gone: a predecessor killed and restarted. */
static int dead_predecessor(const struct presence *p,
			    const struct presence_value *v)
{
	if (strcmp(v->host, p->v.host) != 0)
		return 0;
	if (v->pid == p->v.pid)
		return 1; /* our own, from a lease we lost */
	return process_of(v->pid) == 0;
}

static void on_create(void *arg, const struct etcd_answer *a);

/* Sends the txn that takes the key: absent (`mod` 0), or last changed at
 * `mod` (a dead predecessor's). */
static void send_txn(struct presence *p, int64_t mod)
{
	struct etcd_cmp cmp = { .key = p->key };
	struct etcd_op put = { .kind = ETCD_OP_PUT,
			       .key = p->key,
			       .lease = p->lease };
	struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = p->key };
	struct rt_buf val = { 0 };
	int rc;

	if (mod == 0) {
		cmp.target = ETCD_CREATE;
		cmp.number = 0;
	} else {
		cmp.target = ETCD_MOD;
		cmp.number = mod;
	}
	cmp.result = ETCD_EQUAL;
	(void)refresh(p, 1);
	rc = value_now(p, &val);
	if (rc == 0) {
		put.value = val.data;
		put.value_len = val.len;
		rc = etcd_txn(p->c, &cmp, 1, &put, 1, &get, 1, on_create, p);
	}
	rt_buf_free(&val);
	if (rc == 0) {
		p->busy = 1;
		p->publish_ms = rt_mono_ms();
	} else {
		p->retry_ms = rt_mono_ms() + WAIT_MS;
	}
}

static void send_create(struct presence *p)
{
	send_txn(p, 0);
}

/* The key is someone else's: `kv` is it (NULL: not read). Decide. */
static void taken(struct presence *p, const struct etcd_kv *kv)
{
	struct presence_value old;
	char why[1024];
	int known = kv != NULL &&
		    presence_decode(kv->value, kv->value_len, &old) == 0;
	int64_t now = rt_mono_ms();

	if (known && dead_predecessor(p, &old)) {
		if (!p->joined_told || old.pid != p->v.pid)
			rt_log(RT_LOG_INFO,
			       "cluster %s: taking over %s from pid %lld of "
			       "this host, which is gone",
			       p->cluster, p->v.name, (long long)old.pid);
		p->create_rev = kv->create_revision;
		send_txn(p, kv->mod_revision);
		return;
	}
	if (known)
		snprintf(why, sizeof(why),
			 "a controller named %s is already in cluster %s "
			 "(pid %lld on %s%s%s)",
			 p->v.name, p->cluster, (long long)old.pid, old.host,
			 old.listen[0] ? ", listening on " : "", old.listen);
	else
		snprintf(why, sizeof(why),
			 "a controller named %s is already in cluster %s",
			 p->v.name, p->cluster);
	if (!p->joined_told) {
		int at_once = known && strcmp(old.host, p->v.host) == 0 &&
			      process_of(old.pid) == 1;

		if (!at_once && now < p->wait_until_ms) {
			p->retry_ms = now + WAIT_MS;
			return;
		}
		tell_joined(p, -EEXIST, why);
		return;
	}
	if (!p->warned)
		rt_log(RT_LOG_WARN, "cluster presence: %s; trying again", why);
	p->warned = 1;
	p->retry_ms = now + p->ttl_s * 1000 / 3;
}

static void on_create(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;

	p->busy = 0;
	if (p->freeing || p->phase == PH_STOPPED)
		return;
	if (a->rc < 0) {
		if (!p->joined_told) {
			tell_joined(p, a->rc,
				    a->error ? a->error : strerror(-a->rc));
			return;
		}
		if (a->rc == -ENOENT) /* the lease is gone */
			lose_lease(p);
		else
			p->retry_ms = rt_mono_ms() + WAIT_MS;
		return;
	}
	if (!a->succeeded) {
		taken(p, a->nkvs > 0 ? &a->kvs[0] : NULL);
		return;
	}
	if (p->create_rev == 0)
		p->create_rev = a->header.revision;
	p->phase = PH_JOINED;
	p->lost_key = 0;
	if (p->warned || p->joined_told)
		rt_log(RT_LOG_INFO, "cluster %s: %s is a member again",
		       p->cluster, p->v.name);
	p->warned = 0;
	tell_joined(p, 0, NULL);
}

/* --------------------------------------------------- staying, leaving */

static void on_keepalive(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;

	p->renewing = 0;
	if (p->freeing || p->phase == PH_STOPPED)
		return;
	if (a->rc == -ENOENT && p->lease != 0) {
		rt_log(RT_LOG_WARN,
		       "cluster %s: the lease of %s is gone: joining again",
		       p->cluster, p->v.name);
		lose_lease(p);
	} else if (a->rc < 0) {
		p->renew_ms = 0; /* again on the next tick */
	}
}

static void on_publish(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;

	p->busy = 0;
	if (p->freeing || p->phase == PH_STOPPED)
		return;
	if (a->rc < 0) {
		/* etcd may not have it: an empty role differs from any, so
		 * the next tick writes again. */
		p->publish_ms = 0;
		p->v.role[0] = '\0';
		if (a->rc == -ENOENT)
			lose_lease(p);
		return;
	}
	if (!a->succeeded) {
		/* Our key is gone (deleted by hand) or not ours any more. */
		p->phase = PH_CREATE;
		p->create_rev = 0;
	}
}

/* Rewrites the key if what it says changed (at most once a second). */
static void publish(struct presence *p)
{
	struct etcd_cmp cmp = { .key = p->key,
				.target = ETCD_CREATE,
				.result = ETCD_EQUAL,
				.number = p->create_rev };
	struct etcd_op put = { .kind = ETCD_OP_PUT,
			       .key = p->key,
			       .lease = p->lease };
	struct rt_buf val = { 0 };

	if (rt_mono_ms() - p->publish_ms < PUBLISH_MS || !refresh(p, 0))
		return;
	if (value_now(p, &val) == 0) {
		put.value = val.data;
		put.value_len = val.len;
		if (etcd_txn(p->c, &cmp, 1, &put, 1, NULL, 0, on_publish, p) ==
		    0) {
			p->busy = 1;
			p->publish_ms = rt_mono_ms();
		}
	}
	rt_buf_free(&val);
}

static void on_revoke(void *arg, const struct etcd_answer *a)
{
	struct presence *p = arg;

	(void)a;
	p->busy = 0;
	if (!p->freeing)
		p->done_due = 1; /* `done` on the next tick, off the client */
}

/* Sends the revoke of a stop once nothing else is under way. */
static void leave(struct presence *p)
{
	int64_t lease = p->lease;

	if (p->busy)
		return;
	p->lease = 0;
	if (lease == 0 || etcd_lease_revoke(p->c, lease, on_revoke, p) < 0) {
		p->done_due = 1;
		return;
	}
	p->busy = 1;
}

static void on_tick(uv_timer_t *t)
{
	struct presence *p = t->data;
	int64_t now = rt_mono_ms();

	if (p->phase == PH_STOPPED) {
		if (!p->done_due && !p->busy) {
			if (p->lease != 0)
				leave(p); /* a lease granted as we stopped */
			else
				p->done_due = 1;
		}
		if (p->done_due) {
			presence_done_fn done = p->done;

			p->done_due = 0;
			p->done = NULL;
			uv_timer_stop(&p->tick);
			if (done != NULL)
				done(p->done_arg); /* may free p */
		}
		return;
	}
	if (p->phase == PH_JOINED && p->lost_key && !p->busy) {
		rt_log(RT_LOG_WARN,
		       "cluster %s: the key of %s was deleted: "
		       "writing it again",
		       p->cluster, p->v.name);
		p->phase = PH_CREATE;
		p->create_rev = 0;
		p->lost_key = 0;
	}
	rewatch(p);
	if (p->lease != 0 && !p->renewing &&
	    now - p->renew_ms >= p->ttl_s * 1000 / 3) {
		if (etcd_lease_keepalive(p->c, p->lease, on_keepalive, p) ==
		    0) {
			p->renewing = 1;
			p->renew_ms = now;
		}
	}
	if (p->busy || now < p->retry_ms)
		return;
	switch (p->phase) {
	case PH_GRANT:
		if (etcd_lease_grant(p->c, p->ttl_s, on_grant, p) == 0)
			p->busy = 1;
		break;
	case PH_CREATE: send_create(p); break;
	case PH_JOINED: publish(p); break;
	case PH_STOPPED: break;
	}
}

int presence_start(uv_loop_t *loop, const struct etcd_config *cfg,
		   const char *cluster, const char *name, const char *listen,
		   int ttl_s, const struct presence_callbacks *cb,
		   struct presence **out)
{
	struct presence *p = NULL;
	struct rt_buf b = { 0 };
	int rc = -EINVAL;

	*out = NULL;
	if (ttl_s < 2 || name == NULL || !rt_name_valid(name) ||
	    strlen(name) >= sizeof(p->v.name) || cluster == NULL ||
	    (listen != NULL && strlen(listen) > PRESENCE_LISTEN_MAX))
		goto out;
	rc = -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto out;
	p->loop = loop;
	p->cb = *cb;
	p->ttl_s = ttl_s;
	p->tick.data = NULL;
	snprintf(p->v.name, sizeof(p->v.name), "%s", name);
	snprintf(p->v.listen, sizeof(p->v.listen), "%s", listen ? listen : "");
	if (gethostname(p->v.host, sizeof(p->v.host)) < 0)
		snprintf(p->v.host, sizeof(p->v.host), "unknown");
	p->v.host[sizeof(p->v.host) - 1] = '\0';
	p->v.pid = (int64_t)getpid();
	p->v.started_ms = rt_now_ms();
	p->cluster = strdup(cluster);
	if (p->cluster == NULL)
		goto out;
	if ((rc = presence_key(cluster, name, &b)) < 0)
		goto out;
	p->key = b.data;
	memset(&b, 0, sizeof(b)); /* p->key has its memory */
	if ((rc = presence_key(cluster, NULL, &b)) < 0)
		goto out;
	p->prefix = b.data;
	memset(&b, 0, sizeof(b));
	rc = -ENOMEM;
	p->prefix_end = malloc(strlen(p->prefix) + 2);
	if (p->prefix_end == NULL)
		goto out;
	etcd_prefix_end(p->prefix, p->prefix_end);
	if ((rc = etcd_client_new(loop, cfg, &p->c)) < 0)
		goto out;
	rc = uv_timer_init(loop, &p->tick);
	if (rc < 0)
		goto out;
	p->tick.data = p;
	p->phase = PH_GRANT;
	p->wait_until_ms = rt_mono_ms() + ttl_s * 1000 + WAIT_MARGIN;
	rc = uv_timer_start(&p->tick, on_tick, 0, TICK_MS);
out:
	rt_buf_free(&b);
	if (rc < 0 && p != NULL) {
		presence_free(p);
		p = NULL;
	}
	*out = p;
	return rc;
}

int presence_stop(struct presence *p, presence_done_fn done, void *arg)
{
	if (p->phase == PH_STOPPED)
		return -EALREADY;
	p->phase = PH_STOPPED;
	p->done = done;
	p->done_arg = arg;
	etcd_watch_free(p->w);
	p->w = NULL;
	/* The revoke now, or on a tick once what is under way answered (a
	 * grant under way keeps its lease for it); `done` on a tick. */
	if (!p->busy && p->lease != 0)
		leave(p);
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

void presence_free(struct presence *p)
{
	if (p == NULL)
		return;
	p->freeing = 1;
	p->phase = PH_STOPPED;
	p->done = NULL;
	etcd_watch_free(p->w);
	p->w = NULL;
	etcd_client_free(p->c); /* callbacks run now, ignoring answers */
	p->c = NULL;
	free(p->cluster);
	free(p->key);
	free(p->prefix);
	free(p->prefix_end);
	if (p->tick.data == p) {
		uv_close((uv_handle_t *)&p->tick, on_closed);
		return;
	}
	free(p);
}

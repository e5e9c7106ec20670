/*
 * store_etcd.c - tenants, namespaces and functions in etcd, followed by
 * range and watch, written by compare-and-set (see store_etcd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../runtime/base/rt.h"
#include "etcd_keys.h"
#include "../../model/staged.h"
#include "store_etcd.h"

/* How long a write may wait for the watch to bring it back. */
#define WAIT_MS 10000
/* How soon a broken watch is set up again. */
#define REWATCH_MS 500
/* How long the open reads the rows again while etcd answers that it is
 * busy (EAGAIN: "leader changed" while its members elect one), and the
 * pause between two reads. Any other error ends the open at once. */
#define OPEN_RETRY_MS 15000
#define OPEN_PAUSE_MS 200
/* The kinds of key a resync reads (kinds[] below). */
#define NKINDS 10
/* The most operations of one txn of the leader's writes (etcd takes 128;
 * one is the fence). */
#define MIRROR_OPS 127
/* How often the quorum is probed. */
#define PROBE_MS 1000

/* A row this controller knows: its key's mod_revision and value (what a
 * delete, which carries no value, is decoded from). */
struct known {
	int64_t mod;
	enum etcd_keys_kind kind;
	char *value;
	size_t len;
	unsigned gen; /* the resync that saw it */
};

/* A write sent, waiting for the watch. */
struct waiter {
	struct waiter *next;
	struct store_etcd *e;
	int64_t rev;   /* done once the model has this revision */
	int lost;      /* the compares failed: -EAGAIN then */
	char **absent; /* lost: keys the model must have lost first */
	size_t nabsent;
	char **present; /* compared keys expected to exist (lost) */
	size_t npresent;
	uint64_t deadline; /* rt_mono_ms */
	store_done_fn done;
	void *arg;
};

/* What this controller's last txn on a key wrote there: the change that
 * the watch brings for that key next is its own if it is this. */
struct mine {
	int del;     /* a delete */
	char *value; /* else the value put (owned) */
	size_t len;
};

struct store_etcd {
	uv_loop_t *loop;
	struct etcd_client *c;
	char *cluster;
	char *prefix, *prefix_end; /* "/fnfs/NAME/" and its range end */
	struct rt_map known;
	struct rt_map mine; /* key -> struct mine: writes sent, not seen */
	int64_t applied;    /* the newest revision the model has */
	struct etcd_watch *watch;
	int watching;
	uv_timer_t *timer; /* re-watch, and the waiters' deadlines */
	uv_timer_t *kick;  /* the waiters, after a watch's message */
	struct waiter *waiters;
	store_etcd_deliver_fn deliver;
	store_etcd_derived_fn derived;
	void *deliver_arg;
	/* the leader's writes of derived state (store_etcd_mirror_*) */
	struct rt_map mirror; /* key -> struct mirror_op, to send */
	int mirroring;
	int64_t mirror_term;   /* the leader's term the queue is of */
	int mirror_busy;       /* a txn of them is under way */
	uv_timer_t *mirror_tm; /* sends them on a later turn */
	store_etcd_fence_fn fence;
	store_etcd_deposed_fn deposed;
	void *mirror_arg;
	/* a resync: the three ranges, then the diff */
	int syncing;
	int loading;	      /* the open's: changes go to `loaded` */
	struct staged loaded; /* what the open read */
	struct etcd_kv *got[NKINDS];
	size_t ngot[NKINDS];
	int64_t sync_rev;
	int sync_step, sync_rc;
	unsigned gen;
	char *error;
	int stopped;	     /* store_etcd_stop: no client any more */
	int64_t stale_since; /* rt_now_ms when the watch went down */
	/* the quorum probe: a linearizable read every PROBE_MS, since a
	 * watch on a member cut off from the others stays open and quiet */
	int probing;
	uint64_t probe_sent;	/* rt_mono_ms */
	int64_t quorum_lost_ms; /* rt_now_ms of the first failed probe, or 0 */
};

/* What a resync reads, parents first: the rows, then the derived state
 * the leader writes, then code/ (entries, revisions, and which objects
 * are whole: not their chunks). */
static const enum etcd_keys_kind kinds[NKINDS] = {
	ETCD_KEYS_TENANT,   ETCD_KEYS_NAMESPACE, ETCD_KEYS_FUNCTION,
	ETCD_KEYS_INSTANCE, ETCD_KEYS_WORKER,	 ETCD_KEYS_SETTING,
	ETCD_KEYS_REVOKED,  ETCD_KEYS_CODE_FILE, ETCD_KEYS_CODE_REVISION,
	ETCD_KEYS_OBJECT
};

static int is_row(enum etcd_keys_kind k)
{
	return k == ETCD_KEYS_TENANT || k == ETCD_KEYS_NAMESPACE ||
	       k == ETCD_KEYS_FUNCTION;
}

/* Kinds told to the `derived` callback: the leader's state, and code/
 * (which any controller writes). */
static int is_derived(enum etcd_keys_kind k)
{
	return k == ETCD_KEYS_INSTANCE || k == ETCD_KEYS_WORKER ||
	       k == ETCD_KEYS_SETTING || k == ETCD_KEYS_REVOKED ||
	       k == ETCD_KEYS_CODE_FILE || k == ETCD_KEYS_CODE_REVISION ||
	       k == ETCD_KEYS_OBJECT;
}

static void mirror_send(uv_timer_t *tm);
static void mirror_drop(struct store_etcd *e);

static void set_error(struct store_etcd *e, const char *what, int rc,
		      const char *why)
{
	char *m = NULL;

	if (asprintf(&m, "%s: %s%s%s", what, strerror(-rc), why ? ": " : "",
		     why ? why : "") < 0)
		return;
	rt_log(RT_LOG_ERROR, "etcd: %s", m);
	free(e->error);
	e->error = m;
}

/* ============================================================== the model */

static void known_free(struct known *k)
{
	if (k != NULL)
		free(k->value);
	free(k);
}

/* A new entry of `known` for `key`. */
static int known_add(struct store_etcd *e, const char *key, struct known **out)
{
	struct known *k = calloc(1, sizeof(*k));

	*out = k;
	if (k != NULL && rt_map_put(&e->known, key, k) == 0)
		return 0;
	free(k);
	*out = NULL;
	return -ENOMEM;
}

/* What `known` keeps of `kv`. */
static void known_set(struct store_etcd *e, struct known *k,
		      const struct etcd_kv *kv, enum etcd_keys_kind kind)
{
	free(k->value);
	k->value = malloc(kv->value_len + 1);
	if (k->value != NULL) {
		memcpy(k->value, kv->value, kv->value_len);
		k->value[kv->value_len] = '\0';
	}
	k->len = k->value ? kv->value_len : 0;
	k->mod = kv->mod_revision;
	k->kind = kind;
	k->gen = e->gen;
}

/* The key of the parent of row `r` (a tenant's is none: ""). */
static int parent_key(const struct store_etcd *e, const struct store_row *r,
		      struct rt_buf *out)
{
	struct store_row p;

	rt_buf_reset(out);
	if (r->kind == STORE_TENANT)
		return rt_buf_puts(out, "");
	memset(&p, 0, sizeof(p));
	p.kind = r->kind == STORE_NAMESPACE ? STORE_TENANT : STORE_NAMESPACE;
	p.tenant = r->tenant;
	p.ns = r->kind == STORE_FUNCTION ? r->ns : NULL;
	return etcd_keys_row(e->cluster, &p, out, NULL);
}

static void mine_free(struct mine *m)
{
	if (m != NULL)
		free(m->value);
	free(m);
}

/* Remembers that a txn sent now writes `key` (`value`, or a delete). */
static void mine_set(struct store_etcd *e, const char *key, const char *value,
		     size_t len)
{
	struct mine *m = calloc(1, sizeof(*m));

	mine_free(rt_map_del(&e->mine, key));
	if (m == NULL)
		return;
	m->del = value == NULL;
	m->value = value ? malloc(len + 1) : NULL;
	if (value != NULL && m->value != NULL)
		memcpy(m->value, value, len);
	m->len = len;
	if ((value != NULL && m->value == NULL) ||
	    rt_map_put(&e->mine, key, m) < 0)
		mine_free(m);
}

/* Whether the change of `key` the watch brings (a delete, or `value`) is
 * this controller's write; it is forgotten either way. */
static int mine_take(struct store_etcd *e, const char *key, const char *value,
		     size_t len)
{
	struct mine *m = rt_map_del(&e->mine, key);
	int own = m != NULL &&
		  (value == NULL ? m->del
				 : !m->del && m->len == len &&
					   memcmp(m->value, value, len) == 0);

	mine_free(m);
	return own;
}

static void hand(struct store_etcd *e, enum store_op op,
		 const struct store_row *r, int own)
{
	struct store_change c = { op, *r, own };

	if (e->loading)
		staged_add(&e->loaded, op, r);
	else if (e->deliver != NULL)
		e->deliver(e->deliver_arg, &c);
}

/* Whether `key` is in the range of a kind this store reads. */
static int row_prefixed(const struct store_etcd *e, const char *key)
{
	static const char *const parts[NKINDS] = { "t/",  "ns/",  "fn/", "in/",
						   "w/",  "set/", "rv/", "cf/",
						   "cr/", "om/" };
	size_t n = strlen(e->prefix), i;

	if (strncmp(key, e->prefix, n) != 0)
		return 0;
	for (i = 0; i < NKINDS; i++)
		if (strncmp(key + n, parts[i], strlen(parts[i])) == 0)
			return 1;
	return 0;
}

/* A row's key is `key` with value `value` at `mod`: tells the model.
 * Returns 0, or -EAGAIN when its parent is not known yet (kept for a
 * second pass), or -EINVAL for what is not a row of this layout. */
static int learn_put(struct store_etcd *e, const struct etcd_kv *kv)
{
	struct etcd_keys_rec rec;
	struct rt_buf pk = { 0 };
	struct known *k;
	enum store_op op;
	int rc;

	rc = etcd_keys_decode(e->cluster, kv->key, kv->key_len, kv->value,
			      kv->value_len, &rec);
	if (rc == 0 && is_derived(rec.kind)) {
		k = rt_map_get(&e->known, kv->key);
		if (k == NULL)
			rc = known_add(e, kv->key, &k);
		if (rc == 0) {
			known_set(e, k, kv, rec.kind);
			if (kv->mod_revision > e->applied)
				e->applied = kv->mod_revision;
			if (e->derived != NULL)
				e->derived(e->deliver_arg, &rec, 0);
		}
		goto out;
	}
	if (rc < 0 || !is_row(rec.kind)) {
		/* The journal, the election, the controllers' presence and
		 * the objects' chunks have keys of their own here, read by
		 * others. */
		if (rc < 0 && row_prefixed(e, kv->key))
			rt_log(RT_LOG_WARN, "etcd: %.*s: not a row: skipped",
			       (int)kv->key_len, kv->key);
		rc = rc < 0 ? -EINVAL : 0;
		goto out;
	}
	k = rt_map_get(&e->known, kv->key);
	op = rec.kind == ETCD_KEYS_TENANT ? STORE_OWNER : STORE_UPDATE;
	if (k == NULL) {
		op = STORE_INSERT;
		rc = parent_key(e, &rec.row, &pk);
		if (rc == 0 && pk.len > 0 &&
		    rt_map_get(&e->known, pk.data) == NULL)
			rc = -EAGAIN;
		if (rc == 0)
			rc = known_add(e, kv->key, &k);
	}
	if (rc < 0)
		goto out;
	known_set(e, k, kv, rec.kind);
	if (kv->mod_revision > e->applied)
		e->applied = kv->mod_revision;
	hand(e, op, &rec.row, mine_take(e, kv->key, kv->value, kv->value_len));
out:
	etcd_keys_rec_free(&rec);
	rt_buf_free(&pk);
	return rc;
}

/* The row of `key` went at `rev`. */
static void learn_delete(struct store_etcd *e, const char *key, int64_t rev)
{
	struct known *k = rt_map_get(&e->known, key);
	struct etcd_keys_rec rec;
	int own = mine_take(e, key, NULL, 0);

	if (rev > e->applied)
		e->applied = rev;
	if (k == NULL)
		return; /* not a row, or never seen */
	if (k->value != NULL && etcd_keys_decode(e->cluster, key, strlen(key),
						 k->value, k->len, &rec) == 0) {
		if (is_derived(rec.kind)) {
			if (e->derived != NULL)
				e->derived(e->deliver_arg, &rec, 1);
		} else {
			rec.row.updated_ms = rt_now_ms();
			hand(e, STORE_DELETE, &rec.row, own);
		}
	}
	etcd_keys_rec_free(&rec);
	known_free(rt_map_del(&e->known, key));
}

/* ============================================================= waiters */

static void waiter_free(struct waiter *w)
{
	size_t i;

	for (i = 0; i < w->nabsent; i++)
		free(w->absent[i]);
	for (i = 0; i < w->npresent; i++)
		free(w->present[i]);
	free(w->absent);
	free(w->present);
	free(w);
}

static int waiter_ready(const struct waiter *w)
{
	size_t i;

	if (w->e->applied < w->rev)
		return 0;
	for (i = 0; i < w->nabsent; i++)
		if (rt_map_get(&w->e->known, w->absent[i]) != NULL)
			return 0;
	return 1;
}

/* Ends the waiters that the model has caught up with, or that waited
 * too long (`all`: every one, with `err`). */
static void check_waiters(struct store_etcd *e, int all, int err)
{
	struct waiter **pp = &e->waiters, *w;
	uint64_t now = rt_mono_ms();
	int rc;

	while ((w = *pp) != NULL) {
		if (all)
			rc = err;
		else if (waiter_ready(w))
			rc = w->lost ? -EAGAIN : 0;
		else if (now >= w->deadline) {
			rc = -EIO;
			set_error(e, "a write", -ETIMEDOUT,
				  "committed or not, the watch has not "
				  "brought it back");
		} else {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (w->done != NULL)
			w->done(w->arg, rc);
		waiter_free(w);
	}
}

/* ============================================================== resync */

static void start_watch(struct store_etcd *e);
static void sync_step(struct store_etcd *e);

/* The ranges are read: what the model has that they do not has gone,
 * what they have that it has not came, the rest may have changed. */
static int by_kind_desc(const void *a, const void *b)
{
	const struct known *x = *(struct known *const *)a;
	const struct known *y = *(struct known *const *)b;

	return (y->kind > x->kind) - (y->kind < x->kind);
}

struct gone_ctx {
	struct store_etcd *e;
	char **keys;
	struct known **ks;
	size_t n;
};

static int collect_gone(const char *key, void *value, void *arg)
{
	struct gone_ctx *g = arg;
	struct known *k = value;

	if (k->gen != g->e->gen) {
		g->keys[g->n] = strdup(key);
		g->ks[g->n] = k;
		if (g->keys[g->n] != NULL)
			g->n++;
	}
	return 0;
}

static void sync_apply(struct store_etcd *e)
{
	struct gone_ctx g = { e, NULL, NULL, 0 };
	size_t i, j, n = e->known.count;
	struct known **order;
	char **keys;

	e->gen++;
	for (i = 0; i < NKINDS; i++)
		for (j = 0; j < e->ngot[i]; j++) {
			struct known *k = rt_map_get(&e->known,
						     e->got[i][j].key);

			if (k != NULL && k->mod == e->got[i][j].mod_revision)
				k->gen = e->gen; /* unchanged */
			else if (learn_put(e, &e->got[i][j]) == -EAGAIN)
				rt_log(RT_LOG_WARN,
				       "etcd: %s has no parent: skipped",
				       e->got[i][j].key);
		}
	/* What went: children before their parents. */
	g.keys = calloc(n + 1, sizeof(*g.keys));
	g.ks = calloc(n + 1, sizeof(*g.ks));
	if (g.keys != NULL && g.ks != NULL) {
		rt_map_each(&e->known, collect_gone, &g);
		order = calloc(g.n + 1, sizeof(*order));
		keys = calloc(g.n + 1, sizeof(*keys));
		for (i = 0; order != NULL && keys != NULL && i < g.n; i++)
			order[i] = g.ks[i];
		if (order != NULL && keys != NULL) {
			qsort(order, g.n, sizeof(*order), by_kind_desc);
			for (i = 0; i < g.n; i++)
				for (j = 0; j < g.n; j++)
					if (g.ks[j] == order[i])
						keys[i] = g.keys[j];
			for (i = 0; i < g.n; i++)
				learn_delete(e, keys[i], e->sync_rev);
		}
		free(order);
		free(keys);
	}
	for (i = 0; g.keys != NULL && i < g.n; i++)
		free(g.keys[i]);
	free(g.keys);
	free(g.ks);
	if (e->sync_rev > e->applied)
		e->applied = e->sync_rev;
}

static void sync_clear(struct store_etcd *e)
{
	size_t i, j;

	for (i = 0; i < NKINDS; i++) {
		for (j = 0; j < e->ngot[i]; j++)
			etcd_kv_clear(&e->got[i][j]);
		free(e->got[i]);
		e->got[i] = NULL;
		e->ngot[i] = 0;
	}
}

static void on_range(void *arg, const struct etcd_answer *a)
{
	struct store_etcd *e = arg;
	int i = e->sync_step;

	if (a->rc < 0) {
		set_error(e, "reading the rows", a->rc, a->error);
		e->sync_rc = a->rc;
		e->syncing = 0;
		sync_clear(e);
		/* on_timer tries again */
		return;
	}
	if (i == 0)
		e->sync_rev = a->header.revision;
	/* The answer is the client's: keep a copy. */
	e->got[i] = calloc(a->nkvs + 1, sizeof(*e->got[i]));
	if (e->got[i] == NULL) {
		e->sync_rc = -ENOMEM;
		e->syncing = 0;
		sync_clear(e);
		return;
	}
	for (e->ngot[i] = 0; e->ngot[i] < a->nkvs; e->ngot[i]++) {
		const struct etcd_kv *s = &a->kvs[e->ngot[i]];
		struct etcd_kv *d = &e->got[i][e->ngot[i]];

		*d = *s;
		d->key = malloc(s->key_len + 1);
		d->value = malloc(s->value_len + 1);
		if (d->key == NULL || d->value == NULL) {
			free(d->key);
			free(d->value);
			memset(d, 0, sizeof(*d));
			e->sync_rc = -ENOMEM;
			break;
		}
		memcpy(d->key, s->key, s->key_len + 1);
		memcpy(d->value, s->value, s->value_len + 1);
	}
	e->sync_step++;
	if (e->sync_rc == 0 && e->sync_step < NKINDS) {
		sync_step(e);
		return;
	}
	if (e->sync_rc == 0)
		sync_apply(e);
	sync_clear(e);
	e->syncing = 0;
	if (e->sync_rc == 0) {
		if (!e->loading)
			check_waiters(e, 0, 0);
		start_watch(e);
	}
}

static void sync_step(struct store_etcd *e)
{
	struct rt_buf p = { 0 };
	char *end = NULL;
	int rc = etcd_keys_kind_prefix(e->cluster, kinds[e->sync_step], &p);

	if (rc == 0) {
		end = malloc(p.len + 2);
		rc = end ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		etcd_prefix_end(p.data, end);
		rc = etcd_range(e->c, p.data, end,
				e->sync_step ? e->sync_rev : 0, 0, on_range, e);
	}
	if (rc < 0) {
		set_error(e, "reading the rows", rc, NULL);
		e->sync_rc = rc;
		e->syncing = 0;
		sync_clear(e);
	}
	free(end);
	rt_buf_free(&p);
}

/* Reads every row again (at the open, and when the watch's revision was
 * compacted). */
static void resync(struct store_etcd *e)
{
	if (e->syncing)
		return;
	e->syncing = 1;
	e->sync_rc = 0;
	e->sync_step = 0;
	sync_step(e);
}

/* =============================================================== watch */

static void on_kick(uv_timer_t *t)
{
	check_waiters(t->data, 0, 0);
}

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct store_etcd *e = arg;
	struct etcd_kv **later = NULL;
	size_t i, nlater = 0;

	if (a->rc < 0) {
		set_error(e, "the watch ended", a->rc, a->error);
		etcd_watch_free(e->watch);
		e->watch = NULL;
		e->watching = 0;
		e->stale_since = rt_now_ms();
		if (a->rc == -ERANGE)
			resync(e);
		return; /* else on_timer watches again */
	}
	if (a->created) {
		e->watching = 1;
		return;
	}
	if (a->nevents > 0)
		later = calloc(a->nevents, sizeof(*later));
	for (i = 0; i < a->nevents; i++) {
		if (a->deletes[i])
			learn_delete(e, a->events[i].key,
				     a->events[i].mod_revision);
		else if (learn_put(e, &a->events[i]) == -EAGAIN &&
			 later != NULL)
			later[nlater++] = &a->events[i];
		else if (a->events[i].mod_revision > e->applied)
			e->applied = a->events[i].mod_revision;
	}
	/* A child that came in the same message as its parent, before it. */
	for (i = 0; i < nlater; i++)
		if (learn_put(e, later[i]) == -EAGAIN)
			rt_log(RT_LOG_WARN, "etcd: %s has no parent: skipped",
			       later[i]->key);
	free(later);
	/* Not from inside the watch's callback, where no etcd call can be
	 * made (a write that lost its race is sent again from its done):
	 * on the loop's next turn. */
	if (e->kick != NULL)
		uv_timer_start(e->kick, on_kick, 0, 0);
}

static void start_watch(struct store_etcd *e)
{
	int rc;

	if (e->watch != NULL || e->syncing)
		return;
	rc = etcd_watch(e->c, e->prefix, e->prefix_end, e->applied + 1, 0,
			on_watch, e, &e->watch);
	if (rc < 0) {
		set_error(e, "watching", rc, NULL);
		e->watch = NULL;
	}
}

static void on_probe(void *arg, const struct etcd_answer *a)
{
	struct store_etcd *e = arg;

	e->probing = 0;
	if (a->rc == 0)
		e->quorum_lost_ms = 0;
	else if (a->rc != -ECANCELED && e->quorum_lost_ms == 0) {
		e->quorum_lost_ms = rt_now_ms();
		set_error(e, "etcd's quorum", a->rc, a->error);
	}
}

/* A linearizable read of one key, which etcd answers only with a quorum:
 * the watch alone cannot tell a member cut off from the others. One key,
 * not the prefix with a limit: etcd 3.4 walks every key of a range under
 * its index's lock before it applies the limit, which at 100,000 keys
 * held its writes for hundreds of ms, three times a second. */
static void probe(struct store_etcd *e)
{
	uint64_t now = rt_mono_ms();

	if (e->probing || now - e->probe_sent < PROBE_MS)
		return;
	e->probe_sent = now;
	if (etcd_range(e->c, e->prefix, NULL, 0, 0, on_probe, e) == 0)
		e->probing = 1;
}

/* Every REWATCH_MS: the watch when it is down, the quorum probe, and the
 * waiters' deadlines. */
static void on_timer(uv_timer_t *t)
{
	struct store_etcd *e = t->data;

	if (e->stopped)
		return;
	probe(e);
	if (e->watch == NULL && !e->syncing) {
		if (e->sync_rc < 0)
			resync(e);
		else
			start_watch(e);
	}
	check_waiters(e, 0, 0);
}

/* ============================================================== writes */

/* The builder of one txn: strings it owns until the call. */
struct txn {
	struct etcd_cmp *cmp;
	struct etcd_op *ops, *fail;
	size_t ncmp, nops, nfail, cap;
	char **strs;
	size_t nstrs, capstrs;
	struct waiter *w;
};

static const char *keep(struct txn *t, const char *s, size_t n)
{
	char *d;

	if (t->nstrs == t->capstrs) {
		size_t cap = t->capstrs ? t->capstrs * 2 : 16;
		char **v = realloc(t->strs, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		t->strs = v;
		t->capstrs = cap;
	}
	d = malloc(n + 1);
	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	t->strs[t->nstrs++] = d;
	return d;
}

static int grow(struct txn *t)
{
	size_t cap = t->cap ? t->cap * 2 : 8;
	struct etcd_cmp *c = realloc(t->cmp, cap * sizeof(*c));
	struct etcd_op *o, *f;

	if (c == NULL)
		return -ENOMEM;
	t->cmp = c;
	o = realloc(t->ops, cap * sizeof(*o));
	if (o == NULL)
		return -ENOMEM;
	t->ops = o;
	f = realloc(t->fail, cap * sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	t->fail = f;
	t->cap = cap;
	return 0;
}

static int add_str(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (nv[*n] == NULL)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Adds a compare of `key` (up to `end`, or NULL) and, should it fail, a
 * read of it. `must_exist`: a key the write expects to be there. */
static int cmp_add(struct txn *t, const char *key, const char *end,
		   enum etcd_target target, enum etcd_cmp_result res,
		   int64_t number, int must_exist)
{
	int rc = 0;

	if (t->ncmp == t->cap || t->nfail == t->cap)
		rc = grow(t);
	if (rc < 0)
		return rc;
	key = keep(t, key, strlen(key));
	if (end != NULL)
		end = keep(t, end, strlen(end));
	if (key == NULL)
		return -ENOMEM;
	memset(&t->cmp[t->ncmp], 0, sizeof(t->cmp[0]));
	t->cmp[t->ncmp].key = key;
	t->cmp[t->ncmp].range_end = end;
	t->cmp[t->ncmp].target = target;
	t->cmp[t->ncmp].result = res;
	t->cmp[t->ncmp].number = number;
	t->ncmp++;
	memset(&t->fail[t->nfail], 0, sizeof(t->fail[0]));
	t->fail[t->nfail].kind = ETCD_OP_RANGE;
	t->fail[t->nfail].key = key;
	t->fail[t->nfail].range_end = end;
	t->nfail++;
	if (must_exist)
		rc = add_str(&t->w->present, &t->w->npresent, key);
	return rc;
}

static int op_add(struct txn *t, enum etcd_op_kind kind, const char *key,
		  const char *end, const char *value, size_t len)
{
	if (t->nops == t->cap && grow(t) < 0)
		return -ENOMEM;
	memset(&t->ops[t->nops], 0, sizeof(t->ops[0]));
	t->ops[t->nops].kind = kind;
	t->ops[t->nops].key = keep(t, key, strlen(key));
	t->ops[t->nops].range_end = end ? keep(t, end, strlen(end)) : NULL;
	t->ops[t->nops].value = value ? keep(t, value, len) : NULL;
	t->ops[t->nops].value_len = len;
	if (t->ops[t->nops].key == NULL || (value && !t->ops[t->nops].value))
		return -ENOMEM;
	t->nops++;
	return 0;
}

/* The prefix of the children of row `r` (a tenant's namespaces, a
 * namespace's functions), and its range end. */
static int children_range(const struct store_etcd *e, const struct store_row *r,
			  struct rt_buf *p, char **end)
{
	int rc;

	rt_buf_reset(p);
	rc = etcd_keys_kind_prefix(e->cluster,
				   r->kind == STORE_TENANT ? ETCD_KEYS_NAMESPACE
							   : ETCD_KEYS_FUNCTION,
				   p);
	if (rc == 0)
		rc = rt_buf_printf(p, "%s/", r->tenant);
	if (rc == 0 && r->kind == STORE_NAMESPACE)
		rc = rt_buf_printf(p, "%s/", r->ns);
	if (rc == 0) {
		*end = malloc(p->len + 2);
		if (*end == NULL)
			return -ENOMEM;
		etcd_prefix_end(p->data, *end);
	}
	return rc < 0 ? rc : 0;
}

/* The compares and operations of one change. */
static int txn_change(struct store_etcd *e, struct txn *t,
		      const struct store_change *c)
{
	struct rt_buf key = { 0 }, val = { 0 }, pk = { 0 }, cp = { 0 };
	const struct store_row *r = &c->row;
	struct known *k;
	char *end = NULL;
	int rc;

	rc = etcd_keys_row(e->cluster, r, &key,
			   c->op == STORE_DELETE ? NULL : &val);
	if (rc < 0)
		goto out;
	k = rt_map_get(&e->known, key.data);
	switch (c->op) {
	case STORE_INSERT:
		rc = cmp_add(t, key.data, NULL, ETCD_VERSION, ETCD_EQUAL, 0, 0);
		if (rc == 0)
			rc = parent_key(e, r, &pk);
		if (rc == 0 && pk.len > 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_UPDATE:
	case STORE_OWNER:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_DELETE:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0 && r->kind != STORE_FUNCTION) {
			rc = children_range(e, r, &cp, &end);
			if (rc == 0)
				rc = cmp_add(t, cp.data, end, ETCD_VERSION,
					     ETCD_EQUAL, 0, 0);
		}
		if (rc == 0)
			rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	}
out:
	free(end);
	rt_buf_free(&key);
	rt_buf_free(&val);
	rt_buf_free(&pk);
	rt_buf_free(&cp);
	return rc;
}

static void on_txn(void *arg, const struct etcd_answer *a)
{
	struct waiter *w = arg;
	struct store_etcd *e = w->e;
	size_t i, j;
	int found;

	if (a->rc < 0) {
		set_error(e, "a write", a->rc, a->error);
		if (w->done != NULL)
			w->done(w->arg, a->rc == -EAGAIN ? -EAGAIN : -EIO);
		waiter_free(w);
		return;
	}
	if (a->succeeded)
		w->rev = a->header.revision;
	else {
		/* Lost: wait until the model has what won, then the write is
		 * checked against it again. */
		w->lost = 1;
		for (i = 0; i < a->nkvs; i++)
			if (a->kvs[i].mod_revision > w->rev)
				w->rev = a->kvs[i].mod_revision;
		for (i = 0; i < w->npresent; i++) {
			for (found = 0, j = 0; j < a->nkvs && !found; j++)
				found = strcmp(a->kvs[j].key, w->present[i]) ==
					0;
			if (!found &&
			    add_str(&w->absent, &w->nabsent, w->present[i]) < 0)
				w->deadline = 0; /* out of memory: ends */
		}
	}
	w->next = e->waiters;
	e->waiters = w;
	check_waiters(e, 0, 0);
}

/* A function's code/ goes with it: its entries and revision are deleted
 * in the txn that deletes its row. */
static int txn_code_of_fn(struct store_etcd *e, struct txn *t,
			  const struct store_row *r)
{
	struct rt_buf p = { 0 }, k = { 0 };
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_CODE_REVISION };
	char *end = NULL;
	int rc;

	rc = etcd_keys_code_prefix(e->cluster, r->tenant, r->ns, r->name, &p);
	if (rc == 0) {
		end = malloc(p.len + 2);
		rc = end ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		etcd_prefix_end(p.data, end);
		rc = op_add(t, ETCD_OP_DELETE, p.data, end, NULL, 0);
	}
	rec.code.tenant = r->tenant;
	rec.code.ns = r->ns;
	rec.code.fn = r->name;
	rec.code.hash = "";
	if (rc == 0)
		rc = etcd_keys_encode(e->cluster, &rec, &k, NULL);
	if (rc == 0)
		rc = op_add(t, ETCD_OP_DELETE, k.data, NULL, NULL, 0);
	free(end);
	rt_buf_free(&p);
	rt_buf_free(&k);
	return rc;
}

/* The key of the directory that holds entry `f` of code/ ("": code/
 * itself, which has none). */
static int code_parent_key(const struct store_etcd *e,
			   const struct store_code_file *f, struct rt_buf *out)
{
	const char *slash = strrchr(f->path, '/');
	int rc;

	rt_buf_reset(out);
	if (slash == NULL)
		return rt_buf_puts(out, "");
	rc = etcd_keys_code_prefix(e->cluster, f->tenant, f->ns, f->fn, out);
	if (rc == 0)
		rc = etcd_keys_path(f->path, (size_t)(slash - f->path), out);
	return rc;
}

/* The compares and operations of one change of code/. */
static int txn_code(struct store_etcd *e, struct txn *t,
		    const struct store_code_op *c)
{
	struct rt_buf key = { 0 }, val = { 0 }, pk = { 0 };
	struct etcd_keys_rec rec;
	struct store_row fr;
	struct known *k;
	char *end = NULL;
	int rc;

	memset(&rec, 0, sizeof(rec));
	if (c->op == STORE_CODE_PUT || c->op == STORE_CODE_DEL) {
		rec.kind = ETCD_KEYS_CODE_FILE;
		rec.file = c->file;
	} else {
		rec.kind = ETCD_KEYS_CODE_REVISION;
		rec.code = c->rev;
	}
	if (c->op == STORE_CODE_DEL || c->op == STORE_CODE_REV_DEL) {
		/* Only the key is made: a value need not be valid. */
		if (rec.kind == ETCD_KEYS_CODE_FILE && rec.file.hash == NULL)
			rec.file.hash = "";
		if (rec.kind == ETCD_KEYS_CODE_REVISION)
			rec.code.hash = "";
	}
	rc = etcd_keys_encode(
		e->cluster, &rec, &key,
		c->op == STORE_CODE_PUT || c->op == STORE_CODE_REV_PUT ? &val
								       : NULL);
	if (rc < 0)
		goto out;
	k = rt_map_get(&e->known, key.data);
	switch (c->op) {
	case STORE_CODE_PUT:
		/* Over what this controller has seen there, or where there
		 * is nothing; under a directory that exists (unless the same
		 * txn makes it), of a function that exists. */
		rc = k ? cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
				 k->mod, 1)
		       : cmp_add(t, key.data, NULL, ETCD_VERSION, ETCD_EQUAL, 0,
				 0);
		if (rc == 0 && !c->parent_in_txn)
			rc = code_parent_key(e, &c->file, &pk);
		if (rc == 0 && !c->parent_in_txn && pk.len > 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		memset(&fr, 0, sizeof(fr));
		fr.kind = STORE_FUNCTION;
		fr.tenant = c->file.tenant;
		fr.ns = c->file.ns;
		fr.name = c->file.fn;
		if (rc == 0)
			rc = etcd_keys_row(e->cluster, &fr, &pk, NULL);
		if (rc == 0)
			rc = cmp_add(t, pk.data, NULL, ETCD_VERSION,
				     ETCD_GREATER, 0, 1);
		if (rc == 0)
			rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data,
				    val.len);
		break;
	case STORE_CODE_DEL:
		rc = cmp_add(t, key.data, NULL, ETCD_MOD, ETCD_EQUAL,
			     k ? k->mod : 0, 1);
		if (rc == 0 && c->empty_dir) {
			/* rmdir: nothing below it. */
			rc = rt_buf_puts(&key, "/");
			end = rc == 0 ? malloc(key.len + 2) : NULL;
			if (rc == 0 && end == NULL)
				rc = -ENOMEM;
			if (rc == 0) {
				etcd_prefix_end(key.data, end);
				rc = cmp_add(t, key.data, end, ETCD_VERSION,
					     ETCD_EQUAL, 0, 0);
			}
			if (rc == 0)
				key.data[--key.len] = '\0';
		}
		if (rc == 0)
			rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	case STORE_CODE_REV_PUT:
		rc = op_add(t, ETCD_OP_PUT, key.data, NULL, val.data, val.len);
		break;
	case STORE_CODE_REV_DEL:
		rc = op_add(t, ETCD_OP_DELETE, key.data, NULL, NULL, 0);
		break;
	}
out:
	free(end);
	rt_buf_free(&key);
	rt_buf_free(&val);
	rt_buf_free(&pk);
	return rc;
}

int store_etcd_submit(struct store_etcd *e, const struct store_change *v,
		      size_t n, store_done_fn done, void *arg)
{
	return store_etcd_submit_code(e, v, n, NULL, 0, done, arg);
}

int store_etcd_submit_code(struct store_etcd *e, const struct store_change *v,
			   size_t n, const struct store_code_op *cv, size_t cn,
			   store_done_fn done, void *arg)
{
	struct txn t;
	size_t i;
	int rc = 0;

	if (e->stopped)
		return -ESHUTDOWN;
	memset(&t, 0, sizeof(t));
	t.w = calloc(1, sizeof(*t.w));
	if (t.w == NULL)
		return -ENOMEM;
	t.w->e = e;
	t.w->done = done;
	t.w->arg = arg;
	t.w->deadline = rt_mono_ms() + WAIT_MS;
	/* Code first: a revision of code is known before the function's
	 * new revision that runs it. */
	for (i = 0; i < cn && rc == 0; i++)
		rc = txn_code(e, &t, &cv[i]);
	for (i = 0; i < n && rc == 0; i++)
		rc = txn_change(e, &t, &v[i]);
	for (i = 0; i < n && rc == 0; i++)
		if (v[i].op == STORE_DELETE && v[i].row.kind == STORE_FUNCTION)
			rc = txn_code_of_fn(e, &t, &v[i].row);
	if (rc == 0)
		rc = etcd_txn(e->c, t.cmp, t.ncmp, t.ops, t.nops, t.fail,
			      t.nfail, on_txn, t.w);
	if (rc < 0)
		waiter_free(t.w);
	/* What it writes: the watch tells this controller's changes from
	 * the others' by them (whichever of the watch and the txn's answer
	 * comes first). */
	for (i = 0; rc == 0 && i < t.nops; i++)
		mine_set(e, t.ops[i].key,
			 t.ops[i].kind == ETCD_OP_PUT ? t.ops[i].value : NULL,
			 t.ops[i].value_len);
	for (i = 0; i < t.nstrs; i++)
		free(t.strs[i]);
	free(t.strs);
	free(t.cmp);
	free(t.ops);
	free(t.fail);
	return rc < 0 ? rc : STORE_LATER;
}

/* ===================================================== derived state */

/* One key the leader writes: its value, or a delete (value NULL). */
struct mirror_op {
	char *value;
	size_t len;
};

static void mirror_op_free(struct mirror_op *m)
{
	if (m != NULL)
		free(m->value);
	free(m);
}

static int free_mirror_op(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	mirror_op_free(value);
	return 0;
}

static void mirror_drop(struct store_etcd *e)
{
	rt_map_each(&e->mirror, free_mirror_op, NULL);
	rt_map_free(&e->mirror);
	memset(&e->mirror, 0, sizeof(e->mirror));
}

static void mirror_kick(struct store_etcd *e, uint64_t ms)
{
	if (e->mirror_tm != NULL && !e->mirror_busy &&
	    !uv_is_active((uv_handle_t *)e->mirror_tm))
		uv_timer_start(e->mirror_tm, mirror_send, ms, 0);
}

/* The ops of one txn under way, to give back when it did not go. */
struct mirror_txn {
	struct store_etcd *e;
	int64_t term; /* the mirroring it is of (e->mirror_term then) */
	char **keys;
	struct mirror_op **ops;
	size_t n;
};

static void mirror_txn_free(struct mirror_txn *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->keys[i]);
		mirror_op_free(t->ops[i]);
	}
	free(t->keys);
	free(t->ops);
	free(t);
}

static void on_mirror_txn(void *arg, const struct etcd_answer *a)
{
	struct mirror_txn *t = arg;
	struct store_etcd *e = t->e;
	size_t i;

	e->mirror_busy = 0;
	if (a->rc == -ECANCELED || !e->mirroring || t->term != e->mirror_term) {
		/* Of an earlier term (or none now): what it held was
		 * dropped with its queue, whatever the answer. */
		mirror_txn_free(t);
		if (a->rc != -ECANCELED && e->mirroring && e->mirror.count > 0)
			mirror_kick(e, 0);
		return;
	}
	if (a->rc < 0) {
		/* Not written: again, unless a newer value came meanwhile. */
		set_error(e, "writing the leader's state", a->rc, a->error);
		for (i = 0; i < t->n; i++)
			if (rt_map_get(&e->mirror, t->keys[i]) == NULL &&
			    rt_map_put(&e->mirror, t->keys[i], t->ops[i]) == 0)
				t->ops[i] = NULL;
		mirror_txn_free(t);
		mirror_kick(e, REWATCH_MS);
		return;
	}
	mirror_txn_free(t);
	if (!a->succeeded) {
		/* The fence failed: another controller leads now. */
		e->mirroring = 0;
		mirror_drop(e);
		if (e->deposed != NULL)
			e->deposed(e->mirror_arg);
		return;
	}
	if (e->mirror.count > 0)
		mirror_kick(e, 0);
}

struct mirror_take {
	struct mirror_txn *t;
	size_t max;
};

static int take_op(const char *key, void *value, void *arg)
{
	struct mirror_take *k = arg;

	if (k->t->n >= k->max)
		return 1;
	k->t->keys[k->t->n] = strdup(key);
	if (k->t->keys[k->t->n] == NULL)
		return -ENOMEM;
	k->t->ops[k->t->n++] = value;
	return 0;
}

/* Sends up to MIRROR_OPS of the leader's writes as one txn, fenced. */
static void mirror_send(uv_timer_t *tm)
{
	struct store_etcd *e = tm->data;
	struct mirror_take k = { NULL, MIRROR_OPS };
	struct etcd_op *ops = NULL;
	struct etcd_cmp fence;
	size_t i;
	int rc = -ENOMEM;

	if (e->stopped || !e->mirroring || e->mirror_busy ||
	    e->mirror.count == 0)
		return;
	if (e->fence(e->mirror_arg, &fence) < 0 ||
	    fence.number != e->mirror_term) {
		/* Not the leader any more: the elector says so too. Or a
		 * leader again, on another key: what is queued says the
		 * term it was written in, and goes only behind its fence. */
		e->mirroring = 0;
		mirror_drop(e);
		if (e->deposed != NULL)
			e->deposed(e->mirror_arg);
		return;
	}
	k.t = calloc(1, sizeof(*k.t));
	if (k.t == NULL)
		goto out;
	k.t->e = e;
	k.t->term = e->mirror_term;
	k.t->keys = calloc(MIRROR_OPS, sizeof(*k.t->keys));
	k.t->ops = calloc(MIRROR_OPS, sizeof(*k.t->ops));
	ops = calloc(MIRROR_OPS, sizeof(*ops));
	if (k.t->keys == NULL || k.t->ops == NULL || ops == NULL)
		goto out;
	rt_map_each(&e->mirror, take_op, &k);
	for (i = 0; i < k.t->n; i++) {
		rt_map_del(&e->mirror, k.t->keys[i]);
		ops[i].key = k.t->keys[i];
		if (k.t->ops[i]->value != NULL) {
			ops[i].kind = ETCD_OP_PUT;
			ops[i].value = k.t->ops[i]->value;
			ops[i].value_len = k.t->ops[i]->len;
		} else
			ops[i].kind = ETCD_OP_DELETE;
	}
	rc = etcd_txn(e->c, &fence, 1, ops, k.t->n, NULL, 0, on_mirror_txn,
		      k.t);
	if (rc == 0) {
		e->mirror_busy = 1;
		k.t = NULL;
	}
out:
	if (rc < 0) {
		set_error(e, "writing the leader's state", rc, NULL);
		if (k.t != NULL) {
			for (i = 0; i < k.t->n; i++)
				if (rt_map_put(&e->mirror, k.t->keys[i],
					       k.t->ops[i]) == 0)
					k.t->ops[i] = NULL;
		}
		mirror_kick(e, REWATCH_MS);
	}
	if (k.t != NULL)
		mirror_txn_free(k.t);
	free(ops);
}

void store_etcd_mirror_start(struct store_etcd *e, store_etcd_fence_fn fence,
			     store_etcd_deposed_fn deposed, void *arg,
			     int64_t term)
{
	mirror_drop(e);
	e->mirror_term = term;
	e->fence = fence;
	e->deposed = deposed;
	e->mirror_arg = arg;
	e->mirroring = 1;
}

void store_etcd_mirror_stop(struct store_etcd *e)
{
	e->mirroring = 0;
	mirror_drop(e);
}

int store_etcd_mirroring(const struct store_etcd *e)
{
	return e != NULL && e->mirroring;
}

int store_etcd_mirror(struct store_etcd *e, const char *key, const char *value,
		      size_t len)
{
	struct mirror_op *m, *old;
	int rc = -ENOMEM;

	if (!e->mirroring || e->stopped)
		return 0;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		goto out;
	if (value != NULL) {
		m->value = malloc(len + 1);
		if (m->value == NULL)
			goto out;
		memcpy(m->value, value, len);
		m->value[len] = '\0';
		m->len = len;
	}
	old = rt_map_get(&e->mirror, key);
	if (old != NULL) {
		free(old->value);
		*old = *m;
		free(m);
		m = NULL;
		rc = 0;
		goto out;
	}
	rc = rt_map_put(&e->mirror, key, m);
	if (rc == 0)
		m = NULL;
out:
	mirror_op_free(m);
	if (rc == 0)
		mirror_kick(e, 0);
	return rc;
}

size_t store_etcd_mirror_pending(const struct store_etcd *e)
{
	return e->mirror.count + (size_t)e->mirror_busy;
}

/* ============================================================ barrier */

struct barrier {
	struct store_etcd *e;
	store_done_fn done;
	void *arg;
};

static void on_barrier(void *arg, const struct etcd_answer *a)
{
	struct barrier *b = arg;
	struct store_etcd *e = b->e;
	struct waiter *w;

	if (a->rc < 0) {
		b->done(b->arg, a->rc == -ECANCELED ? -ECANCELED : -EIO);
		free(b);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		b->done(b->arg, -ENOMEM);
		free(b);
		return;
	}
	w->e = e;
	w->rev = a->header.revision;
	w->deadline = rt_mono_ms() + WAIT_MS;
	w->done = b->done;
	w->arg = b->arg;
	free(b);
	w->next = e->waiters;
	e->waiters = w;
	check_waiters(e, 0, 0);
}

int store_etcd_barrier(struct store_etcd *e, store_done_fn done, void *arg)
{
	struct barrier *b;
	int rc;

	if (e->stopped)
		return -ESHUTDOWN;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return -ENOMEM;
	b->e = e;
	b->done = done;
	b->arg = arg;
	rc = etcd_range(e->c, e->prefix, NULL, 0, 0, on_barrier, b);
	if (rc < 0)
		free(b);
	return rc;
}

struct replay {
	struct store_etcd *e;
	store_etcd_derived_fn fn;
	void *arg;
};

static int replay_cb(const char *key, void *value, void *arg)
{
	struct replay *r = arg;
	struct known *k = value;
	struct etcd_keys_rec rec;

	if (k->kind != ETCD_KEYS_INSTANCE || k->value == NULL)
		return 0;
	if (etcd_keys_decode(r->e->cluster, key, strlen(key), k->value, k->len,
			     &rec) == 0)
		r->fn(r->arg, &rec, 0);
	etcd_keys_rec_free(&rec);
	return 0;
}

void store_etcd_replay(struct store_etcd *e, store_etcd_derived_fn fn,
		       void *arg)
{
	struct replay r = { e, fn, arg };

	rt_map_each(&e->known, replay_cb, &r);
}

struct code_each {
	enum etcd_keys_kind kind;
	const char **keys;
	size_t n, cap;
	int rc;
};

static int code_key_cb(const char *key, void *value, void *arg)
{
	struct code_each *x = arg;
	struct known *k = value;

	if (k->kind != x->kind || k->value == NULL)
		return 0;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		const char **v = realloc(x->keys, cap * sizeof(*v));

		if (v == NULL) {
			x->rc = -ENOMEM;
			return 1;
		}
		x->keys = v;
		x->cap = cap;
	}
	x->keys[x->n++] = key;
	return 0;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int store_etcd_code_each(struct store_etcd *e, enum etcd_keys_kind kind,
			 int (*fn)(const struct etcd_keys_rec *r, void *arg),
			 void *arg)
{
	struct code_each x = { kind, NULL, 0, 0, 0 };
	struct etcd_keys_rec rec;
	size_t i;
	int rc;

	rt_map_each(&e->known, code_key_cb, &x);
	rc = x.rc;
	/* A key is a prefix of the keys below it: sorted, a directory
	 * comes before what it holds. */
	if (x.n > 0)
		qsort(x.keys, x.n, sizeof(*x.keys), strp_cmp);
	for (i = 0; rc == 0 && i < x.n; i++) {
		struct known *k = rt_map_get(&e->known, x.keys[i]);

		if (etcd_keys_decode(e->cluster, x.keys[i], strlen(x.keys[i]),
				     k->value, k->len, &rec) == 0)
			rc = fn(&rec, arg);
		etcd_keys_rec_free(&rec);
	}
	free(x.keys);
	return rc;
}

int store_etcd_object_known(struct store_etcd *e, const char *hash,
			    uint64_t *size)
{
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_OBJECT, .hash = hash };
	struct rt_buf key = { 0 };
	struct known *k = NULL;
	int rc = etcd_keys_encode(e->cluster, &rec, &key, NULL), found = 0;

	if (rc == 0)
		k = rt_map_get(&e->known, key.data);
	if (k != NULL && k->value != NULL &&
	    etcd_keys_decode(e->cluster, key.data, key.len, k->value, k->len,
			     &rec) == 0) {
		*size = rec.size;
		found = 1;
	}
	etcd_keys_rec_free(&rec);
	rt_buf_free(&key);
	return found;
}

struct etcd_client *store_etcd_client(struct store_etcd *e)
{
	return e->c;
}

/* ========================================================= open, close */

int store_etcd_open(struct store_etcd **out, uv_loop_t *loop,
		    const struct etcd_config *cfg, const char *cluster,
		    store_etcd_deliver_fn deliver,
		    store_etcd_derived_fn derived, void *arg)
{
	struct store_etcd *e = calloc(1, sizeof(*e));
	struct rt_buf p = { 0 };
	uint64_t t0;
	int rc = -ENOMEM;

	*out = NULL;
	if (e == NULL)
		goto out;
	e->loop = loop;
	e->stale_since = rt_now_ms();
	e->deliver = deliver;
	e->derived = derived;
	e->deliver_arg = arg;
	rc = -EINVAL;
	if (!etcd_keys_cluster_valid(cluster))
		goto out;
	rc = -ENOMEM;
	e->cluster = strdup(cluster);
	if (e->cluster == NULL || etcd_keys_prefix(cluster, &p) < 0)
		goto out;
	e->prefix = p.data;
	p.data = NULL;
	e->prefix_end = malloc(strlen(e->prefix) + 2);
	if (e->prefix_end == NULL)
		goto out;
	etcd_prefix_end(e->prefix, e->prefix_end);
	rc = etcd_client_new(loop, cfg, &e->c);
	if (rc < 0)
		goto out;
	e->timer = calloc(1, sizeof(*e->timer));
	rc = e->timer ? uv_timer_init(loop, e->timer) : -ENOMEM;
	if (rc < 0) {
		free(e->timer);
		e->timer = NULL;
		goto out;
	}
	e->timer->data = e;
	e->kick = calloc(1, sizeof(*e->kick));
	rc = e->kick ? uv_timer_init(loop, e->kick) : -ENOMEM;
	if (rc < 0) {
		free(e->kick);
		e->kick = NULL;
		goto out;
	}
	e->kick->data = e;
	e->mirror_tm = calloc(1, sizeof(*e->mirror_tm));
	rc = e->mirror_tm ? uv_timer_init(loop, e->mirror_tm) : -ENOMEM;
	if (rc < 0) {
		free(e->mirror_tm);
		e->mirror_tm = NULL;
		goto out;
	}
	e->mirror_tm->data = e;
	/* The read before the mount serves: the loop runs for it alone, so
	 * a pause between two reads keeps nobody waiting. */
	e->loading = 1;
	uv_update_time(loop);
	for (t0 = uv_now(loop);;) {
		resync(e);
		while (e->syncing)
			uv_run(loop, UV_RUN_ONCE);
		if (e->sync_rc != -EAGAIN ||
		    uv_now(loop) - t0 + OPEN_PAUSE_MS > OPEN_RETRY_MS)
			break;
		rt_log(RT_LOG_WARN,
		       "etcd: busy; the rows are read again in "
		       "%d ms",
		       OPEN_PAUSE_MS);
		uv_sleep(OPEN_PAUSE_MS);
		uv_update_time(loop);
	}
	e->loading = 0;
	rc = e->sync_rc;
	if (rc == 0)
		uv_timer_start(e->timer, on_timer, REWATCH_MS, REWATCH_MS);
out:
	rt_buf_free(&p);
	if (rc < 0) {
		store_etcd_close(e);
		e = NULL;
	}
	*out = e;
	return rc;
}

static int free_known(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	known_free(value);
	return 0;
}

static int free_mine(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	mine_free(value);
	return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
	free(h);
}

void store_etcd_stop(struct store_etcd *e)
{
	if (e == NULL || e->stopped)
		return;
	e->stopped = 1;
	check_waiters(e, 1, -ECANCELED);
	etcd_watch_free(e->watch);
	e->watch = NULL;
	e->watching = 0;
	etcd_client_free(e->c);
	e->c = NULL;
	if (e->timer != NULL)
		uv_close((uv_handle_t *)e->timer, on_timer_closed);
	e->timer = NULL;
	if (e->kick != NULL)
		uv_close((uv_handle_t *)e->kick, on_timer_closed);
	e->kick = NULL;
	if (e->mirror_tm != NULL)
		uv_close((uv_handle_t *)e->mirror_tm, on_timer_closed);
	e->mirror_tm = NULL;
	mirror_drop(e);
}

void store_etcd_close(struct store_etcd *e)
{
	if (e == NULL)
		return;
	store_etcd_stop(e);
	rt_map_each(&e->known, free_known, NULL);
	rt_map_free(&e->known);
	rt_map_each(&e->mine, free_mine, NULL);
	rt_map_free(&e->mine);
	rt_map_free(&e->mirror);
	staged_free(&e->loaded);
	sync_clear(e);
	free(e->cluster);
	free(e->prefix);
	free(e->prefix_end);
	free(e->error);
	free(e);
}

int store_etcd_load(struct store_etcd *e,
		    int (*fn)(const struct store_row *, void *), void *arg)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < e->loaded.n && rc == 0; i++)
		rc = fn(&e->loaded.v[i].row, arg);
	staged_free(&e->loaded);
	return rc;
}

void store_etcd_state(const struct store_etcd *e, struct store_etcd_state *out)
{
	out->revision = e->applied;
	out->watching = e->watching && e->quorum_lost_ms == 0;
	out->stale_since = !e->watching ? e->stale_since : e->quorum_lost_ms;
	out->endpoint = e->c ? etcd_client_endpoint(e->c) : "";
	out->error = e->error;
}

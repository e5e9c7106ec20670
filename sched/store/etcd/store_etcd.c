/*
 * store_etcd.c - tenants, namespaces and functions in etcd, followed by
 * range and watch, written by compare-and-set (see store_etcd.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../runtime/base/rt.h"
#include "etcd_keys.h"
#include "../../model/staged.h"
#include "store_etcd.h"
#include "store_etcd_internal.h"

/* How long the open reads the rows again while etcd answers that it is
 * busy (EAGAIN: "leader changed" while its members elect one), and the
 * pause between two reads. Any other error ends the open at once. */
#define OPEN_RETRY_MS 15000
#define OPEN_PAUSE_MS 200

/* What this controller's last txn on a key wrote there: the change that
 * the watch brings for that key next is its own if it is this. */
struct mine {
	int del;     /* a delete */
	char *value; /* else the value put (owned) */
	size_t len;
};

/* What a resync reads, parents first: the rows, then the derived state
 * the leader writes, then code/ (entries, revisions, and which objects
 * are whole: not their chunks). */
const enum etcd_keys_kind store_etcd__kinds[NKINDS] = {
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

void store_etcd__set_error(struct store_etcd *e, const char *what, int rc,
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
int store_etcd__parent_key(const struct store_etcd *e,
			   const struct store_row *r, struct rt_buf *out)
{
	struct store_row p;

	assert(r->kind >= STORE_TENANT && r->kind <= STORE_FUNCTION);
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
void store_etcd__mine_set(struct store_etcd *e, const char *key,
			  const char *value, size_t len)
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

	assert(op >= STORE_INSERT && op <= STORE_OWNER);
	/* What the open reads is no controller's write of its own. */
	assert(!e->loading || !own);
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
int store_etcd__learn_put(struct store_etcd *e, const struct etcd_kv *kv)
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
		rc = store_etcd__parent_key(e, &rec.row, &pk);
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
void store_etcd__learn_delete(struct store_etcd *e, const char *key,
			      int64_t rev)
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

void store_etcd__waiter_free(struct waiter *w)
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
void store_etcd__check_waiters(struct store_etcd *e, int all, int err)
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
			store_etcd__set_error(
				e, "a write", -ETIMEDOUT,
				"committed or not, the watch has not "
				"brought it back");
		} else {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (w->done != NULL)
			w->done(w->arg, rc);
		store_etcd__waiter_free(w);
	}
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
		store_etcd__resync(e);
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
		uv_timer_start(e->timer, store_etcd__on_timer, REWATCH_MS,
			       REWATCH_MS);
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
	store_etcd__check_waiters(e, 1, -ECANCELED);
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
	store_etcd__mirror_drop(e);
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
	store_etcd__sync_clear(e);
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

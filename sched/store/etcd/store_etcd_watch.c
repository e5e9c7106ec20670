/*
 * store_etcd_watch.c - how the shared store follows etcd
 * (store_etcd_internal.h): a resync reads every key of the cluster at one
 * revision, the watch follows from the next, and a probe checks the quorum.
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

/* ============================================================== resync */

static void start_watch(struct store_etcd *e);

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
			else if (store_etcd__learn_put(e, &e->got[i][j]) ==
				 -EAGAIN)
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
				store_etcd__learn_delete(e, keys[i],
							 e->sync_rev);
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

void store_etcd__sync_clear(struct store_etcd *e)
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

	assert(i >= 0 && i < NKINDS);
	if (a->rc < 0) {
		store_etcd__set_error(e, "reading the rows", a->rc, a->error);
		e->sync_rc = a->rc;
		e->syncing = 0;
		store_etcd__sync_clear(e);
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
		store_etcd__sync_clear(e);
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
		store_etcd__sync_step(e);
		return;
	}
	if (e->sync_rc == 0)
		sync_apply(e);
	store_etcd__sync_clear(e);
	e->syncing = 0;
	if (e->sync_rc == 0) {
		if (!e->loading)
			store_etcd__check_waiters(e, 0, 0);
		start_watch(e);
	}
}

void store_etcd__sync_step(struct store_etcd *e)
{
	struct rt_buf p = { 0 };
	char *end = NULL;
	int rc = etcd_keys_kind_prefix(e->cluster,
				       store_etcd__kinds[e->sync_step], &p);

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
		store_etcd__set_error(e, "reading the rows", rc, NULL);
		e->sync_rc = rc;
		e->syncing = 0;
		store_etcd__sync_clear(e);
	}
	free(end);
	rt_buf_free(&p);
}

/* Reads every row again (at the open, and when the watch's revision was
 * compacted). */
void store_etcd__resync(struct store_etcd *e)
{
	if (e->syncing)
		return;
	e->syncing = 1;
	e->sync_rc = 0;
	e->sync_step = 0;
	store_etcd__sync_step(e);
}

/* =============================================================== watch */

static void on_kick(uv_timer_t *t)
{
	store_etcd__check_waiters(t->data, 0, 0);
}

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct store_etcd *e = arg;
	struct etcd_kv **later = NULL;
	size_t i, nlater = 0;

	if (a->rc < 0) {
		store_etcd__set_error(e, "the watch ended", a->rc, a->error);
		etcd_watch_free(e->watch);
		e->watch = NULL;
		e->watching = 0;
		e->stale_since = rt_now_ms();
		if (a->rc == -ERANGE)
			store_etcd__resync(e);
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
			store_etcd__learn_delete(e, a->events[i].key,
						 a->events[i].mod_revision);
		else if (store_etcd__learn_put(e, &a->events[i]) == -EAGAIN &&
			 later != NULL)
			later[nlater++] = &a->events[i];
		else if (a->events[i].mod_revision > e->applied)
			e->applied = a->events[i].mod_revision;
	}
	/* A child that came in the same message as its parent, before it. */
	for (i = 0; i < nlater; i++)
		if (store_etcd__learn_put(e, later[i]) == -EAGAIN)
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
		store_etcd__set_error(e, "watching", rc, NULL);
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
		store_etcd__set_error(e, "etcd's quorum", a->rc, a->error);
	}
}

/* A linearizable read of one key, which etcd answers only with a quorum:
 * the watch alone cannot tell a member cut off from the others. One key,
 * not the prefix with a limit: etcd 3.4 walks every key of a range under
 * its index's lock before it applies the limit, which at 100,000 keys
 * held its writes for hundreds of ms, three times a second. */
void store_etcd__probe(struct store_etcd *e)
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
void store_etcd__on_timer(uv_timer_t *t)
{
	struct store_etcd *e = t->data;

	if (e->stopped)
		return;
	store_etcd__probe(e);
	if (e->watch == NULL && !e->syncing) {
		if (e->sync_rc < 0)
			store_etcd__resync(e);
		else
			start_watch(e);
	}
	store_etcd__check_waiters(e, 0, 0);
}

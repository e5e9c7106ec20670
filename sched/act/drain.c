/*
 * drain.c - draining and resuming a worker (kept by id in the store),
 * converging the instances of a worker whose offer changed, and rebalance
 * (loose functions to their tags, then even counts).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "drain.h"
#include "../decide/even.h"
#include "reconcile.h"

static int other_usable(struct sched *s, const struct sched_worker *w)
{
	size_t i, n;
	void **all = rt_map_values(&s->pool.children, &n);
	int found = 0;

	for (i = 0; all != NULL && i < n && !found; i++)
		found = all[i] != w && sched__usable(all[i]);
	free(all);
	return found;
}

/* Stores a worker's drain by its id, so that it outlives the worker's row
 * (a pool worker's row goes at a clean unmount). */
static int store_drain(struct sched *s, const char *id, int drained)
{
	char key[96];

	snprintf(key, sizeof(key), "drained:%s", id);
	return drained ? store_setting_put(s->store, key, "1")
		       : store_setting_delete(s->store, key);
}

int sched__drained(struct sched *s, const char *id)
{
	char key[96], v[8];

	snprintf(key, sizeof(key), "drained:%s", id);
	return store_setting_get(s->store, key, v, sizeof(v)) == 0;
}

/* Brings every instance on worker `w` in line (after a drain, or a change
 * of what the worker offers). Returns 0 or -errno of the store. */
static int converge_worker(struct sched *s, struct sched_worker *w)
{
	struct sched_instance **v;
	size_t i, n;
	int rc = 0, began = store_begin_derived(s->store) == 0;

	v = (struct sched_instance **)rt_map_values(&w->assignments, &n);
	for (i = 0; v != NULL && i < n; i++) {
		int r = sched__act(s, v[i], DECIDE_CONVERGE, NULL, NULL);

		rc = rc < 0 ? rc : r;
	}
	free(v);
	return sched__derived_end(s, began, rc, w->obj.name);
}

/* Sets or clears a worker's drain: stored first, then in the model. */
static int set_drain(struct sched *s, struct sched_worker *w, int drained)
{
	int rc = store_begin(s->store);

	w->draining = drained;
	if (rc == 0)
		rc = store_drain(s, w->obj.name, drained);
	if (rc == 0)
		rc = sched__worker_persist(s, w);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0) {
		struct rt_buf kvs = { 0 };

		w->draining = !drained;
		rt_buf_kv(&kvs, "op", drained ? "drain" : "resume");
		rt_buf_kv(&kvs, "errno", rt_errno_name(-rc));
		rt_buf_kv(&kvs, "reason", "the store could not be written");
		sched__event(s, &w->obj, "worker.rejected", kvs.data);
		rt_buf_free(&kvs);
		return rc;
	}
	w->since_ms = rt_now_ms();
	return 0;
}

int sched__drain(struct sched *s, struct sched_worker *w)
{
	int rc;

	if (w->draining)
		return 0;
	if (!other_usable(s, w)) {
		struct rt_buf kvs = { 0 };

		rt_buf_kv(&kvs, "op", "drain");
		rt_buf_kv(&kvs, "errno", "EBUSY");
		rt_buf_kv(&kvs, "reason", "it is the last usable worker");
		sched__event(s, &w->obj, "worker.rejected", kvs.data);
		rt_buf_free(&kvs);
		return -EBUSY;
	}
	rc = set_drain(s, w, 1);
	if (rc < 0)
		return rc;
	sched__event(s, &w->obj, "worker.draining", NULL);
	/* The decision moves what is not busy; an instance busy with a call
	 * takes no other (its worker is draining) and moves once the call
	 * has ended (a drain fails no call). */
	if (w->assignments.count == 0)
		sched__event(s, &w->obj, "worker.drained", NULL);
	else if (converge_worker(s, w) < 0)
		rt_log(RT_LOG_ERROR, "drain of %s: store failed", w->obj.name);
	return 0;
}

int sched__resume(struct sched *s, struct sched_worker *w)
{
	int rc;

	if (!w->draining)
		return 0;
	rc = set_drain(s, w, 0);
	if (rc < 0)
		return rc;
	sched__event(s, &w->obj, "worker.resumed", NULL);
	sched__reconcile_all(s); /* pending instances may fit there now */
	return 0;
}

/* Fills `set` with the ids of the functions that have an instance on
 * `w`: one pass over its assignments. Returns 0 or -ENOMEM. */
static int functions_on(const struct sched_worker *w, struct rt_idmap *set)
{
	size_t i, n;
	void **v = rt_map_values(&w->assignments, &n);
	int rc = v == NULL ? -ENOMEM : 0;

	for (i = 0; rc == 0 && i < n; i++) {
		struct sched_function *fn = sched__fn_of(v[i]);

		if (rt_idmap_get(set, fn->obj.id) == NULL)
			rc = rt_idmap_put(set, fn->obj.id, fn);
	}
	free(v);
	return rc;
}

/* Rebalance, first part: an instance of a loose function on a worker
 * without its tags moves to one that has them, if one has room (the
 * decision says when to look). Returns how many moved, or -errno. */
static int rebalance_tags(struct sched *s)
{
	size_t i, n, k, m;
	void **all = rt_map_values(&s->pool.children, &n);
	int moved = 0, rc = 0;

	for (i = 0; all != NULL && i < n && rc == 0; i++) {
		struct sched_worker *w = all[i];
		struct sched_instance **on;

		if (!sched__usable(w))
			continue;
		on = (struct sched_instance **)rt_map_values(&w->assignments,
							     &m);
		for (k = 0; on != NULL && k < m && rc == 0; k++) {
			struct decide_result res;
			struct place_request r;
			struct sched_view v = { 0 };
			int pick;

			if (sched__decide(s, on[k], DECIDE_REBALANCE, &res) !=
			    DECIDE_MOVE)
				continue;
			rc = sched__view_build(s, &v, sched__fn_of(on[k]));
			sched__request_of(s, sched__fn_of(on[k]), &r);
			r.random = sched__random(s);
			if (rc == 0) {
				v.w[w->place_index].usable = 0;
				pick = sched_place(v.w, v.n, &r, NULL);
				if (pick >= 0 &&
				    sched_place_has_tags(&v.w[pick], &r)) {
					rc = sched__move(s, on[k], v.ws[pick],
							 res.reason, NULL);
					moved++;
				}
			}
			sched__view_free(&v);
		}
		free(on);
	}
	free(all);
	return rc < 0 ? rc : moved;
}

/* Whether moving `in` from `from` to `to` takes a loose function away
 * from the tags it asks for (the first part of rebalance brought it
 * there). */
static int loses_tags(struct sched *s, struct sched_instance *in,
		      struct sched_worker *from, struct sched_worker *to)
{
	struct place_worker a, b;
	struct place_request r;

	sched__request_of(s, sched__fn_of(in), &r);
	if (r.ntags == 0)
		return 0;
	sched__worker_view(from, &a);
	sched__worker_view(to, &b);
	return sched_place_has_tags(&a, &r) && !sched_place_has_tags(&b, &r);
}

/* Of the instances on `hi`, the one to move to `lo`: one that may run
 * there, preferring one that serves no call (a moved one's call fails),
 * then a function not yet on `lo`. NULL when `lo` takes none of them. */
static struct sched_instance *
pick_move(struct sched *s, struct sched_worker *hi, struct sched_worker *lo)
{
	struct sched_instance **on, *pick = NULL;
	struct rt_idmap there = { 0 };
	size_t k, m;
	int best;

	if (lo->fencing)
		return NULL; /* it takes no new instance for now (fence.c) */
	/* Without memory for the set, `lo` takes nothing this round. */
	if (functions_on(lo, &there) < 0) {
		rt_idmap_free(&there);
		return NULL;
	}
	on = (struct sched_instance **)rt_map_values(&hi->assignments, &m);
	for (k = 0, best = -1; on != NULL && k < m && best < 3; k++) {
		int score;

		if (!on[k]->desired_run || !sched__may_run_on(s, on[k], lo) ||
		    loses_tags(s, on[k], hi, lo))
			continue;
		score = (on[k]->busy == 0 ? 2 : 0) +
			(rt_idmap_get(&there, sched__fn_of(on[k])->obj.id) ==
			 NULL);
		if (score > best) {
			best = score;
			pick = on[k];
		}
	}
	free(on);
	rt_idmap_free(&there);
	return pick;
}

/* The usable workers of one round of rebalance and the move chosen. */
struct even_round {
	struct sched *s;
	struct sched_worker **ws;
	struct sched_instance *pick;
};

static int even_try(size_t from, size_t to, void *arg)
{
	struct even_round *r = arg;

	r->pick = pick_move(r->s, r->ws[from], r->ws[to]);
	return r->pick != NULL;
}

/* Rebalance, second part: moves instances until the counts of usable
 * workers differ by at most one, or no worker that is two below another
 * may take any of its instances. Each move goes from a fuller worker to
 * an emptier one, two or more apart (even.c), so the sum of the squared
 * counts falls and the loop ends. Returns how many moved, or -errno. */
static int rebalance_counts(struct sched *s)
{
	int moved = 0, rc = 0;

	while (rc == 0) {
		size_t i, n, k = 0, from, to;
		void **all = rt_map_values(&s->pool.children, &n);
		struct even_round r = { s, NULL, NULL };
		int *count = NULL;
		size_t *order = NULL;

		if (all == NULL)
			break; /* no worker */
		r.ws = calloc(n, sizeof(*r.ws));
		count = calloc(n, sizeof(*count));
		order = calloc(n, sizeof(*order));
		if (r.ws == NULL || count == NULL || order == NULL)
			rc = -ENOMEM;
		for (i = 0; rc == 0 && i < n; i++) {
			struct sched_worker *w = all[i];

			if (!sched__usable(w))
				continue;
			r.ws[k] = w;
			count[k++] = (int)w->assignments.count;
		}
		if (rc == 0)
			rc = sched_even_next(count, k, order, even_try, &r,
					     &from, &to);
		if (rc > 0) {
			assert(r.pick != NULL && r.pick->worker == r.ws[from]);
			rc = sched__move(s, r.pick, r.ws[to], "rebalance",
					 NULL);
			moved++;
		} else if (rc == 0) {
			rc = 1; /* as even as the workers allow */
		}
		free(all);
		free(r.ws);
		free(count);
		free(order);
	}
	return rc < 0 ? rc : moved;
}

int sched__rebalance(struct sched *s)
{
	struct rt_buf kvs = { 0 };
	char v[32];
	int tags, counts, rc = store_begin(s->store);

	if (rc < 0)
		return rc;
	tags = rebalance_tags(s);
	counts = tags < 0 ? 0 : rebalance_counts(s);
	rc = tags < 0 ? tags : counts < 0 ? counts : 0;
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0) {
		/* The moves are under way; their assignments are derived
		 * again from the workers' reports after a restart. */
		rt_buf_kv(&kvs, "errno", rt_errno_name(-rc));
		rt_buf_kv(&kvs, "reason", "the store could not be written");
		sched_event(s, "rebalance.failed", "workers", kvs.data);
		rt_buf_free(&kvs);
		return rc;
	}
	snprintf(v, sizeof(v), "%d", tags + counts);
	rt_buf_kv(&kvs, "moved", v);
	sched_event(s, "rebalance.done", "workers", kvs.data);
	rt_buf_free(&kvs);
	return 0;
}

/*
 * store_etcd_mirror.c - the leader's writes of derived state, fenced and
 * batched (store_etcd_internal.h), and what the shared store tells of
 * what it knows: barrier, replay, code/'s keys, objects.
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

/* ===================================================== derived state */

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

/* A wait of store_etcd_mirror_flush. */
struct mirror_flush {
	uint64_t ticket; /* the gen it waits for */
	uint64_t deadline;
	void (*done)(void *, int);
	void *arg;
	struct mirror_flush *next;
};

static int low_cb(const char *key, void *value, void *arg)
{
	const struct mirror_op *m = value;
	uint64_t *low = arg;

	(void)key;
	if (m->gen < *low)
		*low = m->gen;
	return 0;
}

/* The newest gen whose write, and every older one, etcd acknowledged. */
static uint64_t mirror_acked(struct store_etcd *e)
{
	uint64_t low = UINT64_MAX;

	rt_map_each(&e->mirror, low_cb, &low);
	if (e->mirror_busy && e->mirror_low < low)
		low = e->mirror_low;
	return low == UINT64_MAX ? e->mirror_gen : low - 1;
}

/* Ends the flushes that are done, past their deadline, or (`rc` < 0)
 * every one, with `rc`. */
static void check_flushes(struct store_etcd *e, int rc)
{
	struct mirror_flush **pp = &e->flushes, *f, *ready = NULL;
	uint64_t acked = 0, now = rt_mono_ms();
	int have_acked = 0;

	while ((f = *pp) != NULL) {
		if (rc == 0 && !have_acked) {
			acked = mirror_acked(e);
			have_acked = 1;
		}
		if (rc < 0 || f->ticket <= acked || now >= f->deadline) {
			*pp = f->next;
			f->next = ready;
			ready = f;
		} else
			pp = &f->next;
	}
	/* Called after the list is consistent: a callback may flush again. */
	while ((f = ready) != NULL) {
		ready = f->next;
		f->done(f->arg, rc < 0		     ? rc
				: f->ticket <= acked ? 0
						     : -ETIMEDOUT);
		free(f);
	}
}

int store_etcd_mirror_flush(struct store_etcd *e, void (*done)(void *, int),
			    void *arg)
{
	struct mirror_flush *f;

	if (!e->mirroring || e->stopped || mirror_acked(e) >= e->mirror_gen)
		return 1;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->ticket = e->mirror_gen;
	f->deadline = rt_mono_ms() + STORE_ETCD_FLUSH_MS;
	f->done = done;
	f->arg = arg;
	f->next = e->flushes;
	e->flushes = f;
	return 0;
}

void store_etcd__mirror_drop(struct store_etcd *e)
{
	rt_map_each(&e->mirror, free_mirror_op, NULL);
	rt_map_free(&e->mirror);
	memset(&e->mirror, 0, sizeof(e->mirror));
	check_flushes(e, -ECANCELED);
}

static void mirror_kick(struct store_etcd *e, uint64_t ms)
{
	if (e->mirror_tm != NULL && !e->mirror_busy &&
	    !uv_is_active((uv_handle_t *)e->mirror_tm))
		uv_timer_start(e->mirror_tm, store_etcd__mirror_send, ms, 0);
}

/* The ops of one txn under way, to give back when it did not go. */
struct mirror_txn {
	struct store_etcd *e;
	int64_t term; /* the mirroring it is of (e->mirror_term then) */
	uint64_t low; /* the oldest gen of its ops */
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

static void mirror_txn_ended(void *arg, const struct etcd_answer *a);

static void on_mirror_txn(void *arg, const struct etcd_answer *a)
{
	struct store_etcd *e = ((struct mirror_txn *)arg)->e;

	mirror_txn_ended(arg, a);
	/* Cancelled: the client is going, and the store with it. */
	if (a->rc != -ECANCELED && e->flushes != NULL)
		check_flushes(e, 0);
}

static void mirror_txn_ended(void *arg, const struct etcd_answer *a)
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
		store_etcd__set_error(e, "writing the leader's state", a->rc,
				      a->error);
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
		store_etcd__mirror_drop(e);
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
	assert(value != NULL && k->max <= MIRROR_OPS);
	k->t->ops[k->t->n++] = value;
	if (((struct mirror_op *)value)->gen < k->t->low)
		k->t->low = ((struct mirror_op *)value)->gen;
	return 0;
}

/* Sends up to MIRROR_OPS of the leader's writes as one txn, fenced. */
void store_etcd__mirror_send(uv_timer_t *tm)
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
		store_etcd__mirror_drop(e);
		if (e->deposed != NULL)
			e->deposed(e->mirror_arg);
		return;
	}
	k.t = calloc(1, sizeof(*k.t));
	if (k.t == NULL)
		goto out;
	k.t->e = e;
	k.t->term = e->mirror_term;
	k.t->low = UINT64_MAX;
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
		e->mirror_low = k.t->low;
		k.t = NULL;
	}
out:
	if (rc < 0) {
		store_etcd__set_error(e, "writing the leader's state", rc,
				      NULL);
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
	store_etcd__mirror_drop(e);
	e->mirror_term = term;
	e->fence = fence;
	e->deposed = deposed;
	e->mirror_arg = arg;
	e->mirroring = 1;
}

void store_etcd_mirror_stop(struct store_etcd *e)
{
	e->mirroring = 0;
	store_etcd__mirror_drop(e);
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
	m->gen = ++e->mirror_gen;
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
	store_etcd__check_waiters(e, 0, 0);
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

	if ((k->kind != ETCD_KEYS_INSTANCE && k->kind != ETCD_KEYS_WORKER) ||
	    k->value == NULL)
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
	assert(x->n < x->cap);
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

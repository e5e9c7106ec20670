/*
 * fetch.c - the worker's side of code that travels (code.h): a start
 * whose spec names code ("code": {"hash", "bytes", "files"}) waits until
 * that revision is unpacked here. One download per hash: code.want gets
 * the manifest (an object named by the hash itself), code.get the
 * objects this worker lacks, as code.chunk messages that are checked and
 * assembled in order and verified against their SHA-256. Objects are
 * cached in DATA/cache/ID/code/objects, trees unpacked (in libuv's
 * thread pool, into a temporary directory renamed into place) in
 * DATA/cache/ID/code/trees/HASH/t: files 0444 or 0555 and directories
 * 0555, owned by the worker; a file is a hard link to its object when
 * the object has its mode (no copy of the bytes). A tree and the objects
 * only it references are removed once no instance uses it and no start
 * waits for it; a tree downloaded ahead (code.prefetch: a new revision of
 * a function that runs here) is kept PREFETCH_KEEP_MS after it is
 * unpacked for the first start that uses it.
 *
 * The function enters its tree by a descriptor the worker opens before
 * it drops its privileges (supervise.c), so the tree is reached by no
 * path the function could walk: DATA stays 0700, and another tenant's
 * function cannot read it.
 */
#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "fetch_int.h"
#include "worker.h"

#define FETCH_TIMEOUT_MS 30000	/* a download without progress this long */
#define PREFETCH_KEEP_MS 120000 /* a prefetched tree no start used yet */

/* ============================================================ references */

void rt__fetch_ref_add(struct cache *c, const char *h)
{
	if (rt_map_ref(&c->refs, h) < 0) {
		/* A count lost: no object is unlinked any more (the next
		 * start sweeps), lest one in use go. */
		c->refs_lost = 1;
		rt_log(RT_LOG_ERROR,
		       "fetch: out of memory counting %.12s; objects are "
		       "kept",
		       h);
	}
}

/* Drops a reference; an object that loses its last one is unlinked
 * (at once: a download of it that follows must not race a removal). */
static void ref_drop(struct cache *c, const char *h)
{
	struct rt_buf p = { 0 };

	if (rt_map_unref(&c->refs, h) > 0 || c->refs_lost)
		return;
	path_of(&p, c->objects, h);
	if (p.data != NULL)
		unlink(p.data);
	rt_buf_free(&p);
}

/* ================================================================ trees */

static void wait_free(struct wait *q)
{
	free(q->id);
	json_decref(q->spec);
	free(q);
}

/* Forgets tree `t`: its directory and the objects only it used go. */
static void tree_drop(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	size_t i;

	/* Unused, unwaited, and no download or build refers to it. */
	assert(t->users == 0 && t->waits == NULL);
	assert(t->state == READY || t->state == FAILED);
	rt_map_del(&c->all, t->hash);
	if (t->receiving)
		rt_code_asm_free(&t->a);
	if (t->fd >= 0)
		close(t->fd);
	if (t->part != NULL)
		unlink(t->part);
	/* What arrived before the manifest was read cannot be: none. */
	for (i = 0; i < t->nobjs; i++)
		ref_drop(c, t->objs[i]);
	if (access(t->dir, F_OK) == 0)
		rt__fetch_remove_later(w, t->dir);
	else
		free(t->dir);
	free(t->part);
	free(t->objs);
	free(t->need);
	free(t->modes);
	rt_buf_free(&t->man);
	free(t);
}

/* Drops `t` when nothing uses or waits for it, it is not busy, and it
 * is not a prefetched tree still waiting for its first start. */
void rt__fetch_tree_tidy(struct rt_worker *w, struct tree *t)
{
	if (t->users == 0 && t->waits == NULL && t->state != BUILDING &&
	    t->state != FETCHING &&
	    (t->state == FAILED || t->kept_until <= rt_mono_ms()))
		tree_drop(w, t);
}

/* Fails every start waiting for `t`, for `why`. */
void rt__fetch_tree_fail(struct rt_worker *w, struct tree *t, int err,
			 const char *why)
{
	struct wait *q;

	/* Only a download or a build fails. */
	assert(t->state == FETCHING || t->state == BUILDING);
	t->state = FAILED;
	snprintf(t->why, sizeof(t->why), "%s", why);
	rt_log(RT_LOG_WARN, "worker %s: code %.12s: %s", w->id, t->hash, why);
	while ((q = t->waits) != NULL) {
		struct rt_instance *in = rt_map_get(&w->sup.instances, q->id);

		t->waits = q->next;
		if (in != NULL && !in->freeing)
			rt_instance_fail(in, t->why);
		rt_worker_reply(w, q->seq, err);
		wait_free(q);
	}
	rt__fetch_tree_tidy(w, t);
}

/* Records that instance `id` runs with tree `hash` (NULL: none),
 * releasing the one it used before. */
static void use(struct rt_worker *w, const char *id, const char *hash)
{
	struct cache *c = cache_of(w);
	char *was = rt_map_del(&c->uses, id);
	struct tree *t;

	if (hash != NULL) {
		char *h = strdup(hash);

		if (h == NULL || rt_map_put(&c->uses, id, h) < 0) {
			free(h);
		} else if ((t = rt_map_get(&c->all, hash)) != NULL) {
			t->users++;
			t->prefetched = 0; /* kept while used, as any tree */
			t->kept_until = 0;
		}
	}
	if (was != NULL && (t = rt_map_get(&c->all, was)) != NULL) {
		assert(t->users > 0); /* counted when `id` took it */
		t->users--;
		rt__fetch_tree_tidy(w, t);
	}
	free(was);
}

/* The spec `spec` with "code_dir" set to tree `t`: a new reference. */
static json_t *with_dir(json_t *spec, const struct tree *t)
{
	json_t *s = json_deep_copy(spec);
	struct rt_buf p = { 0 };

	rt_buf_printf(&p, "%s/t", t->dir);
	if (s != NULL && p.data != NULL)
		json_object_set_new(s, "code_dir", json_string(p.data));
	rt_buf_free(&p);
	return s;
}

/* Starts what waits for ready tree `t`. */
void rt__fetch_tree_ready(struct rt_worker *w, struct tree *t)
{
	struct wait *q;

	assert(t->state == BUILDING); /* unpacked by its build */
	t->state = READY;
	while ((q = t->waits) != NULL) {
		struct rt_instance *in = rt_map_get(&w->sup.instances, q->id);
		json_t *spec;

		t->waits = q->next;
		if (in == NULL || in->freeing) {
			rt_worker_reply(w, q->seq, ECANCELED);
		} else if ((spec = with_dir(q->spec, t)) == NULL) {
			rt_worker_reply(w, q->seq, ENOMEM);
		} else {
			use(w, q->id, t->hash);
			rt_worker_start(w, in, spec, q->revision, q->seq);
			json_decref(spec);
		}
		wait_free(q);
	}
	if (t->prefetched) /* kept for the first start that uses it */
		t->kept_until = rt_mono_ms() + PREFETCH_KEEP_MS;
	rt__fetch_tree_tidy(w, t);
}

static void prefetch(struct rt_worker *w, const struct rt_msg *m);

void rt_code_on_message(struct rt_worker *w, const struct rt_msg *m)
{
	struct cache *c = cache_of(w);
	const char *hash = rt_msg_str(m, "hash");
	struct tree *t = c && hash ? rt_map_get(&c->all, hash) : NULL;
	const char *why = rt_msg_str(m, "reason");
	char text[256];

	if (strcmp(m->type, "code.prefetch") == 0) {
		prefetch(w, m);
		return;
	}
	if (t == NULL || t->state != FETCHING)
		return; /* a download that ended already */
	if (strcmp(m->type, "code.chunk") == 0) {
		rt__fetch_on_chunk(w, t, m);
	} else if (strcmp(m->type, "code.error") == 0) {
		snprintf(text, sizeof(text), "code: the controller: %s",
			 why ? why : "an error");
		rt__fetch_tree_fail(w, t, (int)rt_msg_int(m, "err", EIO), text);
	}
}

/* Starts downloading `hash` again from the beginning (a new
 * connection). */
static void restart(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	size_t i;

	if (t->receiving)
		rt_code_asm_free(&t->a);
	t->receiving = 0;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->part != NULL)
		unlink(t->part);
	for (i = 0; i < t->nobjs; i++)
		ref_drop(c, t->objs[i]);
	free(t->objs);
	free(t->need);
	free(t->modes);
	t->modes = t->need_modes = NULL;
	t->objs = t->need = NULL;
	t->nobjs = t->nneed = t->got = 0;
	t->have_man = 0;
	rt_buf_reset(&t->man);
	rt__fetch_send_want(w, t);
}

static int reconnect_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;

	(void)key;
	if (t->state == FETCHING)
		restart(arg, t);
	return 0;
}

void rt_code_reconnected(struct rt_worker *w)
{
	if (cache_of(w) != NULL)
		rt_map_each(&cache_of(w)->all, reconnect_cb, w);
}

void rt_code_tick(struct rt_worker *w)
{
	struct cache *c = cache_of(w);
	void **v;
	size_t i, n;
	char why[128];

	if (c == NULL)
		return;
	v = rt_map_values(&c->all, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct tree *t = v[i];

		if (t->state == FETCHING &&
		    rt_mono_ms() - t->last_mono > FETCH_TIMEOUT_MS) {
			snprintf(why, sizeof(why),
				 "code: nothing arrived for %d s",
				 FETCH_TIMEOUT_MS / 1000);
			rt__fetch_tree_fail(w, t, ETIMEDOUT, why);
		} else if (t->kept_until != 0 &&
			   t->kept_until <= rt_mono_ms()) {
			t->kept_until = 0;
			t->prefetched = 0;
			rt__fetch_tree_tidy(
				w, t); /* a prefetch no start came for */
		}
	}
	free(v);
}

/* Begins downloading revision `hash` of `bytes` bytes. Returns its new
 * tree, or NULL when out of memory. */
static struct tree *tree_fetch(struct rt_worker *w, const char *hash,
			       uint64_t bytes)
{
	struct cache *c = cache_of(w);
	struct rt_buf dir = { 0 };
	struct tree *t = calloc(1, sizeof(*t));

	rt_buf_printf(&dir, "%s/%s", c->trees, hash);
	if (t == NULL || dir.data == NULL || rt_map_put(&c->all, hash, t) < 0) {
		free(t);
		rt_buf_free(&dir);
		return NULL;
	}
	memcpy(t->hash, hash, 65);
	t->dir = dir.data;
	t->fd = -1;
	t->bytes = bytes;
	t->state = FETCHING;
	rt__fetch_send_want(w, t);
	return t;
}

/* code.prefetch: the controller made revision `hash` of code that
 * instances here will be started with; it is downloaded now (one
 * download per hash, as for a start) and kept PREFETCH_KEEP_MS for the
 * first start that uses it. */
static void prefetch(struct rt_worker *w, const struct rt_msg *m)
{
	const char *hash = rt_msg_str(m, "hash");
	long long bytes = rt_msg_int(m, "bytes", 0);
	struct tree *t;

	if (cache_of(w) == NULL || !rt_code_hash_valid(hash) || bytes < 0)
		return;
	t = rt_map_get(&cache_of(w)->all, hash);
	if (t == NULL)
		t = tree_fetch(w, hash, (uint64_t)bytes);
	else if (t->users > 0 || t->waits != NULL)
		return; /* in use already: kept anyway */
	if (t == NULL || t->state == FAILED)
		return;
	t->prefetched = 1;
	if (t->state == READY)
		t->kept_until = rt_mono_ms() + PREFETCH_KEEP_MS;
}

/* Drops the start waiting for instance `id` in `t`, answering it. */
static int cancel_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;
	const char **a = arg;
	struct wait **pq = &t->waits, *q;

	(void)key;
	while ((q = *pq) != NULL) {
		if (strcmp(q->id, a[1]) == 0) {
			*pq = q->next;
			rt_worker_reply((struct rt_worker *)a[0], q->seq,
					ECANCELED);
			wait_free(q);
		} else {
			pq = &q->next;
		}
	}
	return 0;
}

void rt_code_cancel(struct rt_worker *w, const char *id)
{
	struct cache *c = cache_of(w);
	const void *a[2] = { w, id };
	void **v;
	size_t i, n;

	if (c == NULL)
		return;
	rt_map_each(&c->all, cancel_cb, (void *)a);
	/* Trees nobody waits for any more may go (not while busy). */
	v = rt_map_values(&c->all, &n);
	for (i = 0; v != NULL && i < n; i++)
		rt__fetch_tree_tidy(w, v[i]);
	free(v);
}

void rt_code_release(struct rt_worker *w, const char *id)
{
	if (cache_of(w) != NULL)
		use(w, id, NULL);
}

int rt_code_start(struct rt_worker *w, struct rt_instance *in, json_t **spec,
		  long long revision, long long seq)
{
	struct cache *c = cache_of(w);
	json_t *code = json_object_get(*spec, "code");
	const char *hash = json_string_value(json_object_get(code, "hash"));
	json_int_t bytes = json_integer_value(json_object_get(code, "bytes"));
	struct tree *t;
	struct wait *q;

	rt_code_cancel(w, in->id); /* a start replaces the one waiting */
	/* Where code runs is the worker's to say, never the message's. */
	json_object_del(*spec, "code_dir");
	if (code == NULL) {
		rt_code_release(w, in->id);
		*spec = json_incref(*spec);
		return 0;
	}
	if (c == NULL || !rt_code_hash_valid(hash) || bytes < 0) {
		rt_instance_fail(in, c == NULL ? "code: this worker has no "
						 "code cache"
					       : "code: a malformed start");
		rt_worker_reply(w, seq, c == NULL ? EIO : EINVAL);
		return 1;
	}
	t = rt_map_get(&c->all, hash);
	if (t != NULL && t->state == READY) {
		*spec = with_dir(*spec, t);
		if (*spec == NULL) {
			rt_worker_reply(w, seq, ENOMEM);
			return 1;
		}
		use(w, in->id, hash);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL || (q->id = strdup(in->id)) == NULL) {
		free(q);
		rt_worker_reply(w, seq, ENOMEM);
		return 1;
	}
	q->spec = json_incref(*spec);
	q->revision = revision;
	q->seq = seq;
	if (t == NULL && (t = tree_fetch(w, hash, (uint64_t)bytes)) == NULL) {
		wait_free(q);
		rt_worker_reply(w, seq, ENOMEM);
		return 1;
	}
	q->next = t->waits;
	t->waits = q;
	return 1;
}

/* Makes PARENT/NAME 0700 (made, or there already), its path in `b`.
 * Returns 0 or -errno. */
static int make_dir(struct rt_buf *b, const char *parent, const char *name)
{
	struct rt_buf p = { 0 };

	if (rt_buf_printf(&p, "%s/%s", parent, name) < 0)
		return -ENOMEM;
	rt_buf_free(b);
	*b = p;
	if (mkdir(b->data, 0700) < 0 &&
	    (errno != EEXIST || chmod(b->data, 0700) < 0))
		return -errno; /* one made loose since is private again */
	return 0;
}

int rt_code_init(struct rt_worker *w)
{
	struct cache *c = calloc(1, sizeof(*c));
	struct rt_buf b = { 0 }, old = { 0 };
	int rc = -ENOMEM;

	if (c == NULL)
		return -ENOMEM;
	rc = make_dir(&b, w->data_dir, "cache");
	if (rc == 0)
		rc = make_dir(&b, b.data, w->id);
	if (rc < 0)
		goto out;
	/* What a former run of this worker left: its instances died with
	 * it. Removed before the loop runs. */
	rt_buf_printf(&old, "%s/code", b.data);
	if (old.data != NULL && access(old.data, F_OK) == 0) {
		struct rt_buf aside = { 0 };

		rt_buf_printf(&aside, "%s/code.old-%d", b.data, (int)getpid());
		if (aside.data != NULL && rename(old.data, aside.data) == 0)
			rt__fetch_rm_tree(aside.data);
		rt_buf_free(&aside);
	}
	rc = make_dir(&b, b.data, "code");
	if (rc == 0 && (c->root = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "objects");
	if (rc == 0 && (c->objects = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "trees");
	if (rc == 0 && (c->trees = strdup(b.data)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = make_dir(&b, c->root, "tmp");
	if (rc == 0 && (c->tmp = strdup(b.data)) == NULL)
		rc = -ENOMEM;
out:
	rt_buf_free(&b);
	rt_buf_free(&old);
	if (rc < 0) {
		free(c->root);
		free(c->objects);
		free(c->trees);
		free(c->tmp);
		free(c);
		return rc;
	}
	w->code = c;
	return 0;
}

static int free_cb(const char *key, void *value, void *arg)
{
	struct tree *t = value;
	struct wait *q;

	(void)key;
	(void)arg;
	while ((q = t->waits) != NULL) {
		t->waits = q->next;
		wait_free(q);
	}
	if (t->receiving)
		rt_code_asm_free(&t->a);
	if (t->fd >= 0)
		close(t->fd);
	free(t->dir);
	free(t->part);
	free(t->objs);
	free(t->need);
	free(t->modes);
	rt_buf_free(&t->man);
	free(t);
	return 0;
}

static int free_use_cb(const char *key, void *value, void *arg)
{
	(void)key;
	(void)arg;
	free(value);
	return 0;
}

void rt_code_close(struct rt_worker *w)
{
	struct cache *c = cache_of(w);

	if (c == NULL)
		return;
	rt_map_each(&c->all, free_cb, NULL);
	rt_map_each(&c->uses, free_use_cb, NULL);
	rt_map_free(&c->all);
	rt_map_free(&c->uses);
	rt_map_free(&c->refs);
	free(c->root);
	free(c->objects);
	free(c->trees);
	free(c->tmp);
	free(c);
	w->code = NULL;
}

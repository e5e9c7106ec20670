/*
 * etcd_sync.c - blocking calls of the etcd client (etcd_sync.h): each one
 * runs the client's private loop until its callback, or a guard timer a
 * little past the client's own timeout, says it is over.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_sync.h"

#define TIMEOUT_MS 5000 /* per request, when the config says none */
#define MARGIN_MS  3000 /* the guard's margin past the client's bound */

/* What one call got, copied out of its answer. */
struct wait {
	uv_loop_t *loop;
	int done, rc, succeeded;
	int64_t deleted;
	struct rt_buf error;
	struct etcd_sync_kvs *kvs; /* range: where the copies go */
};

void etcd_sync_kvs_free(struct etcd_sync_kvs *r)
{
	size_t i;

	for (i = 0; r != NULL && i < r->n; i++)
		etcd_kv_clear(&r->kvs[i]);
	if (r != NULL) {
		free(r->kvs);
		memset(r, 0, sizeof(*r));
	}
}

/* A copy of `n` bytes (NUL-terminated), or NULL. */
static char *dup_bytes(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s != NULL) {
		if (n > 0)
			memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static int copy_kvs(const struct etcd_answer *a, struct etcd_sync_kvs *out)
{
	size_t i;

	out->kvs = a->nkvs ? calloc(a->nkvs, sizeof(*out->kvs)) : NULL;
	if (a->nkvs && out->kvs == NULL)
		return -ENOMEM;
	for (i = 0; i < a->nkvs; i++) {
		struct etcd_kv *d = &out->kvs[i];

		*d = a->kvs[i];
		d->key = dup_bytes(a->kvs[i].key, a->kvs[i].key_len);
		d->value = dup_bytes(a->kvs[i].value ? a->kvs[i].value : "",
				     a->kvs[i].value_len);
		out->n = i + 1;
		if (d->key == NULL || d->value == NULL)
			return -ENOMEM;
	}
	out->more = a->more;
	out->revision = a->header.revision;
	return 0;
}

static void on_answer(void *arg, const struct etcd_answer *a)
{
	struct wait *w = arg;

	w->done = 1;
	w->rc = a->rc;
	w->succeeded = a->succeeded;
	w->deleted = a->deleted;
	if (a->rc < 0 && a->error != NULL)
		rt_buf_puts(&w->error, a->error);
	if (a->rc == 0 && w->kvs != NULL)
		w->rc = copy_kvs(a, w->kvs);
	uv_stop(w->loop); /* the turn that answered returns */
}

static void on_guard(uv_timer_t *t)
{
	*(int *)t->data = 1;
	uv_stop(t->loop);
}

static void on_closed(uv_handle_t *h)
{
	*(int *)h->data = 1;
}

/* Runs the loop until `w` is answered or the guard fires; `rc` is what
 * starting the call returned. Returns the call's result. */
static int await(struct etcd_sync *s, int rc, struct wait *w,
		 struct rt_buf *why)
{
	uv_timer_t t;
	int expired = 0, closed = 0;

	if (rc < 0) {
		rt_buf_printf(why, "cannot ask etcd: %s", strerror(-rc));
		return rc;
	}
	uv_timer_init(&s->loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_guard, (uint64_t)s->bound_ms, 0);
	while (!w->done && !expired)
		uv_run(&s->loop, UV_RUN_ONCE);
	t.data = &closed;
	uv_close((uv_handle_t *)&t, on_closed);
	while (!closed)
		uv_run(&s->loop, UV_RUN_NOWAIT);
	if (!w->done) {
		/* The client broke its bound: end it (its callback runs now,
		 * with -ECANCELED, into `w`, which lives on). */
		etcd_client_free(s->c);
		s->c = NULL;
		rt_buf_printf(why, "etcd did not answer within %d ms",
			      s->bound_ms);
		rc = -ETIMEDOUT;
	} else if (w->rc < 0) {
		/* The client's text names the member and the request. */
		if (w->error.data != NULL)
			rt_buf_puts(why, w->error.data);
		else
			rt_buf_printf(why, "etcd (%s): %s", etcd_sync_where(s),
				      strerror(-w->rc));
		rc = w->rc;
	}
	rt_buf_free(&w->error);
	return rc;
}

/* The client, made again if a call that broke its bound ended the last
 * one; NULL if it cannot be. */
static struct etcd_client *client(struct etcd_sync *s)
{
	if (s->c == NULL && s->open &&
	    etcd_client_new(&s->loop, &s->cfg, &s->c) < 0)
		s->c = NULL;
	return s->c;
}

static const char *dup_or_null(const char *v, int *rc)
{
	char *d;

	if (v == NULL)
		return NULL;
	d = strdup(v);
	if (d == NULL)
		*rc = -ENOMEM;
	return d;
}

int etcd_sync_bound(struct etcd_sync *s, int ms)
{
	int was = s->bound_ms;

	s->bound_ms = ms > 0 ? ms : s->open_bound_ms;
	return was;
}

const char *etcd_sync_where(const struct etcd_sync *s)
{
	return s->c ? etcd_client_endpoint(s->c) : "closed";
}

int etcd_sync_open(struct etcd_sync *s, const struct etcd_config *cfg,
		   struct rt_buf *why)
{
	struct etcd_config c = *cfg;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (c.timeout_ms <= 0)
		c.timeout_ms = TIMEOUT_MS;
	s->bound_ms = s->open_bound_ms = c.timeout_ms + MARGIN_MS;
	if (uv_loop_init(&s->loop) < 0)
		return -ENOMEM;
	s->open = 1;
	/* Kept to make the client again after a call that broke its bound
	 * (the process was stopped, say): the next call still works. */
	s->cfg = c;
	s->cfg.endpoints = dup_or_null(c.endpoints, &rc);
	s->cfg.ca = dup_or_null(c.ca, &rc);
	s->cfg.cert = dup_or_null(c.cert, &rc);
	s->cfg.key = dup_or_null(c.key, &rc);
	if (rc == 0)
		rc = etcd_client_new(&s->loop, &s->cfg, &s->c);
	if (rc < 0) {
		rt_buf_printf(why, "%s: %s",
			      rc == -EINVAL ? "bad etcd endpoints"
					    : "cannot start the etcd client",
			      c.endpoints ? c.endpoints : "(none)");
		etcd_sync_close(s);
	}
	return rc;
}

void etcd_sync_close(struct etcd_sync *s)
{
	int i;

	if (!s->open)
		return;
	etcd_client_free(s->c);
	s->c = NULL;
	for (i = 0; i < 1000 && uv_run(&s->loop, UV_RUN_NOWAIT) != 0; i++)
		;
	uv_loop_close(&s->loop);
	free((char *)s->cfg.endpoints);
	free((char *)s->cfg.ca);
	free((char *)s->cfg.cert);
	free((char *)s->cfg.key);
	memset(&s->cfg, 0, sizeof(s->cfg));
	s->open = 0;
}

int etcd_sync_range(struct etcd_sync *s, const char *key, const char *range_end,
		    int64_t revision, int64_t limit, struct etcd_sync_kvs *out,
		    struct rt_buf *why)
{
	struct wait w = { .loop = &s->loop, .kvs = out };
	int rc;

	etcd_sync_kvs_free(out);
	if (client(s) == NULL)
		return -EIO;
	rc = etcd_range(s->c, key, range_end, revision, limit, on_answer, &w);
	rc = await(s, rc, &w, why);
	if (rc < 0)
		etcd_sync_kvs_free(out);
	return rc;
}

int etcd_sync_txn(struct etcd_sync *s, const struct etcd_cmp *cmp, size_t ncmp,
		  const struct etcd_op *ops, size_t nops, int *succeeded,
		  struct rt_buf *why)
{
	struct wait w = { .loop = &s->loop };
	int rc;

	if (client(s) == NULL)
		return -EIO;
	rc = etcd_txn(s->c, cmp, ncmp, ops, nops, NULL, 0, on_answer, &w);
	rc = await(s, rc, &w, why);
	*succeeded = w.succeeded;
	return rc;
}

int etcd_sync_delete(struct etcd_sync *s, const char *key,
		     const char *range_end, int64_t *deleted,
		     struct rt_buf *why)
{
	struct wait w = { .loop = &s->loop };
	int rc;

	if (client(s) == NULL)
		return -EIO;
	rc = etcd_delete(s->c, key, range_end, on_answer, &w);
	rc = await(s, rc, &w, why);
	if (deleted != NULL)
		*deleted = w.deleted;
	return rc;
}

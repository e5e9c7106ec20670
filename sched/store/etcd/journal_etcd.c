/*
 * journal_etcd.c - the cluster's journal in etcd (see journal_etcd.h):
 * lines queued here go out in compare-and-set txns on P/evh, and come
 * back into the controller's journal only through its watch of P/ev.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "etcd_keys.h"
#include "journal_etcd.h"
#include "journal_etcd_internal.h"

/* Keys read at once by a range. */
#define PAGE 256

/* ============================================================ values */

int journal_etcd_value(struct rt_buf *out, const char *tenant, int64_t ms,
		       const char *writer, const char *line, size_t n)
{
	size_t i;

	rt_buf_reset(out);
	if (tenant != NULL && !rt_name_valid(tenant))
		return -EINVAL;
	for (i = 0; writer[i] != '\0'; i++)
		if (!strchr("0123456789abcdef", writer[i]))
			return -EINVAL;
	if (i != 16 || ms < 0)
		return -EINVAL;
	if (rt_buf_printf(out, "%s %" PRId64 " %s ", tenant ? tenant : "-", ms,
			  writer) < 0 ||
	    rt_buf_append(out, line, n) < 0)
		return -ENOMEM;
	return 0;
}

/* The next space-ended field of `v` (from *at, `n` bytes in all) into
 * `out` (`size` bytes with its NUL). */
static int field(const char *v, size_t n, size_t *at, char *out, size_t size)
{
	const char *sp = memchr(v + *at, ' ', n - *at);
	size_t k;

	if (sp == NULL)
		return -EINVAL;
	k = (size_t)(sp - (v + *at));
	if (k == 0 || k >= size)
		return -EINVAL;
	memcpy(out, v + *at, k);
	out[k] = '\0';
	*at += k + 1;
	return 0;
}

int journal_etcd_parse(const char *value, size_t n,
		       struct journal_etcd_entry *e)
{
	char ms[24], *end;
	size_t at = 0, i;

	memset(e, 0, sizeof(*e));
	if (field(value, n, &at, e->tenant, sizeof(e->tenant)) < 0 ||
	    field(value, n, &at, ms, sizeof(ms)) < 0 ||
	    field(value, n, &at, e->writer, sizeof(e->writer)) < 0)
		return -EINVAL;
	if (strcmp(e->tenant, "-") == 0)
		e->tenant[0] = '\0';
	else if (!rt_name_valid(e->tenant))
		return -EINVAL;
	if (ms[0] < '0' || ms[0] > '9')
		return -EINVAL;
	errno = 0;
	e->ms = (int64_t)strtoll(ms, &end, 10);
	if (errno != 0 || *end != '\0' || e->ms < 0)
		return -EINVAL;
	for (i = 0; e->writer[i] != '\0'; i++)
		if (!strchr("0123456789abcdef", e->writer[i]))
			return -EINVAL;
	if (i != 16)
		return -EINVAL;
	e->line = value + at;
	e->len = n - at;
	if (e->len == 0 || e->line[e->len - 1] != '\n')
		return -EINVAL;
	return 0;
}

int journal_etcd_key_offset(const char *pre, const char *key, size_t n,
			    uint64_t *off)
{
	size_t p = strlen(pre), i;
	uint64_t v = 0;

	if (n != p + 20 || memcmp(key, pre, p) != 0)
		return -EINVAL;
	for (i = p; i < n; i++) {
		unsigned d = (unsigned)(key[i] - '0');

		if (key[i] < '0' || key[i] > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*off = v;
	return 0;
}

/* ================================================= lines coming back */

/* The line at `off` with value `v`: appended if it is the next one. */
static void learn_line(struct journal_etcd *j, uint64_t off, const char *v,
		       size_t n)
{
	struct journal_etcd_entry e;
	uint64_t end = events_end(j->ev);

	if (off < end)
		return; /* already here */
	if (journal_etcd_parse(v, n, &e) < 0) {
		rt_log(RT_LOG_WARN,
		       "journal: the line at %" PRIu64 " is not one: skipped",
		       off);
		return;
	}
	if (off > end) {
		/* Lines between went before this controller saw them (it
		 * was away while they were trimmed): offsets stay. */
		if (j->ev->n > 0)
			rt_log(RT_LOG_WARN,
			       "journal: lines %" PRIu64 "..%" PRIu64
			       " were trimmed before this controller saw "
			       "them",
			       end, off);
		events_restart(j->ev, off);
	}
	/* The line comes at the journal's end: offsets are absolute. */
	assert(events_end(j->ev) == off);
	if (events_append_line(j->ev, e.ms, e.line, e.len) < 0) {
		rt_log(RT_LOG_ERROR,
		       "journal: the line at %" PRIu64
		       " is lost here (no memory)",
		       off);
		/* Keep the offsets: what follows starts after it. */
		events_restart(j->ev, off + e.len);
		return;
	}
	assert(events_end(j->ev) == off + e.len);
	if (j->fn != NULL)
		j->fn(j->arg, e.tenant[0] ? e.tenant : NULL, off);
}

/* P/evh is `v` at revision `rev`. */
static void learn_head(struct journal_etcd *j, const char *v, int64_t rev)
{
	if (rev < j->head_rev)
		return;
	j->head_rev = rev;
	j->head = strtoull(v, NULL, 10);
}

/* One key and value read or watched. */
static void learn(struct journal_etcd *j, const struct etcd_kv *kv, int del)
{
	uint64_t off;

	if (strcmp(kv->key, j->head_key) == 0) {
		if (!del)
			learn_head(j, kv->value, kv->mod_revision);
		else if (kv->mod_revision >= j->head_rev)
			j->head_rev = 0; /* gone: numbered on from `head` */
	} else if (journal_etcd_key_offset(j->pre, kv->key, kv->key_len,
					   &off) == 0) {
		if (del && off + 1 > j->oldest)
			j->oldest = off + 1;
		else if (!del)
			learn_line(j, off, kv->value, kv->value_len);
	}
	if (kv->mod_revision > j->rev)
		j->rev = kv->mod_revision;
}

/* ============================================================ reading */

static void read_page(struct journal_etcd *j);

static void sync_failed(struct journal_etcd *j, int rc, const char *why)
{
	j->syncing = 0;
	j->resync = 1; /* the tick tries again */
	if (rc != -ECANCELED)
		rt_log(RT_LOG_WARN, "journal: reading etcd: %s%s%s",
		       strerror(-rc), why ? ": " : "", why ? why : "");
}

static void on_page(void *arg, const struct etcd_answer *a)
{
	struct journal_etcd *j = arg;
	uint64_t off, end;
	size_t i;

	if (a->rc < 0) {
		sync_failed(j, a->rc, a->error);
		return;
	}
	if (j->stopped)
		return;
	for (i = 0; i < a->nkvs; i++) {
		learn(j, &a->kvs[i], 0);
		if (journal_etcd_key_offset(j->pre, a->kvs[i].key,
					    a->kvs[i].key_len, &off) == 0) {
			if (i == 0 && j->sync_from == 0 && off > j->oldest)
				j->oldest = off;
			j->sync_from = off + 1;
		}
	}
	if (a->more && a->nkvs > 0) {
		read_page(j);
		return;
	}
	/* Every kept line up to P/evh at sync_rev is in: what is missing
	 * below it went. */
	end = events_end(j->ev);
	if (end < j->head)
		events_restart(j->ev, j->head);
	if (j->sync_from == 0 && j->head > j->oldest)
		j->oldest = j->head; /* no line kept */
	if (j->sync_rev > j->rev)
		j->rev = j->sync_rev;
	j->syncing = 0;
	j->synced = 1;
	journal_etcd__start_watch(j);
	if (j->kick != NULL && j->nq > 0)
		uv_timer_start(j->kick, journal_etcd__on_kick, 0, 0);
}

static void read_page(struct journal_etcd *j)
{
	char key[256];
	int rc;

	snprintf(key, sizeof(key), "%s%020" PRIu64, j->pre, j->sync_from);
	rc = etcd_range(j->c, key, j->pre_end, j->sync_rev, PAGE, on_page, j);
	if (rc < 0)
		sync_failed(j, rc, NULL);
}

static void on_head(void *arg, const struct etcd_answer *a)
{
	struct journal_etcd *j = arg;

	if (a->rc < 0) {
		sync_failed(j, a->rc, a->error);
		return;
	}
	if (j->stopped)
		return;
	j->sync_rev = a->header.revision;
	if (a->nkvs > 0)
		learn(j, &a->kvs[0], 0);
	j->sync_from = 0;
	read_page(j);
}

/* Reads P/evh, then every kept line, at one revision. */
void journal_etcd__read_all(struct journal_etcd *j)
{
	int rc;

	if (j->syncing || j->stopped)
		return;
	j->syncing = 1;
	j->resync = 0;
	rc = etcd_range(j->c, j->head_key, NULL, 0, 0, on_head, j);
	if (rc < 0)
		sync_failed(j, rc, NULL);
}

/* ============================================================ watching */

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct journal_etcd *j = arg;
	size_t i;

	if (a->rc < 0) {
		if (a->rc != -ECANCELED)
			rt_log(RT_LOG_WARN, "journal: the watch ended: %s%s%s",
			       strerror(-a->rc), a->error ? ": " : "",
			       a->error ? a->error : "");
		etcd_watch_free(j->watch);
		j->watch = NULL;
		j->watching = 0;
		if (a->rc == -ERANGE)
			j->resync = 1; /* compacted: read again (the tick) */
		return;
	}
	if (a->created) {
		j->watching = 1;
		return;
	}
	for (i = 0; i < a->nevents; i++)
		learn(j, &a->events[i], a->deletes[i]);
	/* No etcd call from inside the watch: the next loop turn sends. */
	if (j->kick != NULL && j->nq > 0)
		uv_timer_start(j->kick, journal_etcd__on_kick, 0, 0);
}

void journal_etcd__start_watch(struct journal_etcd *j)
{
	int rc;

	if (j->watch != NULL || j->stopped)
		return;
	rc = etcd_watch(j->c, j->lo, j->hi, j->rev + 1, 0, on_watch, j,
			&j->watch);
	if (rc < 0)
		j->watch = NULL; /* the tick tries again */
}

/* ============================================================ the API */

void journal_etcd_send(struct journal_etcd *j, int64_t ms, const char *tenant,
		       const char *line, size_t n)
{
	struct rt_buf v = { 0 };
	size_t at, max = JOURNAL_ETCD_BATCH_MAX - 128;
	char *cut = NULL;

	if (j == NULL || j->stopped)
		return;
	if (n > max) {
		/* One line fits one txn: the rest of it goes. */
		cut = malloc(max);
		if (cut == NULL)
			return;
		memcpy(cut, line, max - 1);
		cut[max - 1] = '\n';
		line = cut;
		n = max;
	}
	if (journal_etcd_value(&v, tenant, ms, j->writer, line, n) < 0) {
		rt_log(RT_LOG_ERROR, "journal: a line is lost (no memory)");
		goto out;
	}
	/* Full: the oldest lines that are not being sent go, down to
	 * seven eighths of the bounds, in one move of the rest. */
	if (j->nq > j->inflight && (j->nq >= JOURNAL_ETCD_QUEUE_LINES ||
				    j->qbytes + v.len > JOURNAL_ETCD_QUEUE)) {
		size_t go = 0, lines = JOURNAL_ETCD_QUEUE_LINES / 8 * 7;
		size_t bytes = JOURNAL_ETCD_QUEUE / 8 * 7;

		at = j->inflight;
		while (at + go < j->nq &&
		       (j->nq - go > lines || j->qbytes + v.len > bytes)) {
			j->qbytes -= j->q[at + go].len;
			journal_etcd__qline_free(&j->q[at + go]);
			go++;
		}
		memmove(j->q + at, j->q + at + go,
			(j->nq - at - go) * sizeof(*j->q));
		j->nq -= go;
		if (j->dropped == 0)
			rt_log(RT_LOG_WARN, "journal: the queue is full: "
					    "dropping its oldest lines");
		j->dropped += go;
		j->dropped_all += go;
	}
	if (j->nq == j->inflight) /* the first line waiting */
		j->linger_end = rt_mono_ms() + LINGER_MS;
	if (journal_etcd__insert(j, j->nq, v.data, v.len, n) == 0)
		v.data = NULL;
	else
		rt_log(RT_LOG_ERROR, "journal: a line is lost (no memory)");
	if (j->kick != NULL && !j->busy)
		uv_timer_start(j->kick, journal_etcd__on_kick, 0, 0);
out:
	rt_buf_free(&v);
	free(cut);
}

static void on_closed(uv_handle_t *h)
{
	free(h);
}

static int new_timer(uv_loop_t *loop, struct journal_etcd *j, uv_timer_t **out)
{
	uv_timer_t *t = calloc(1, sizeof(*t));
	int rc = t ? uv_timer_init(loop, t) : -ENOMEM;

	if (rc < 0) {
		free(t);
		t = NULL;
	} else
		t->data = j;
	*out = t;
	return rc;
}

/* A random id for this controller's values. */
static void make_writer(char out[17])
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = ((uint64_t)getpid() << 32) ^ (uint64_t)rt_now_ms();
	snprintf(out, 17, "%016" PRIx64, r);
}

int journal_etcd_open(struct journal_etcd **out, uv_loop_t *loop,
		      const struct etcd_config *cfg, const char *cluster,
		      size_t keep, struct events *ev, journal_etcd_line_fn fn,
		      void *arg)
{
	struct journal_etcd *j = calloc(1, sizeof(*j));
	struct rt_buf p = { 0 };
	int rc = -ENOMEM;

	*out = NULL;
	if (j == NULL)
		goto out;
	j->loop = loop;
	j->keep = keep ? keep : JOURNAL_ETCD_KEEP;
	j->ev = ev;
	j->fn = fn;
	j->arg = arg;
	make_writer(j->writer);
	rc = -EINVAL;
	if (!etcd_keys_cluster_valid(cluster))
		goto out;
	rc = etcd_keys_kind_prefix(cluster, ETCD_KEYS_EVENT, &p);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	j->pre = strdup(p.data);	    /* P/ev/ */
	j->pre_end = malloc(p.len + 2);	    /* P/ev0 */
	j->lo = strndup(p.data, p.len - 1); /* P/ev */
	j->hi = malloc(p.len + 1);	    /* P/ew */
	if (asprintf(&j->head_key, "%.*sh", (int)(p.len - 1), p.data) < 0)
		j->head_key = NULL; /* P/evh */
	if (!j->pre || !j->pre_end || !j->lo || !j->hi || !j->head_key)
		goto out;
	etcd_prefix_end(j->pre, j->pre_end);
	etcd_prefix_end(j->lo, j->hi);
	rc = etcd_client_new(loop, cfg, &j->c);
	if (rc == 0)
		rc = new_timer(loop, j, &j->tick);
	if (rc == 0)
		rc = new_timer(loop, j, &j->kick);
	if (rc < 0)
		goto out;
	events_restart(ev, 0);
	/* The first read before the mount serves: the loop runs for it
	 * alone, bounded by the client's timeouts. */
	journal_etcd__read_all(j);
	while (j->syncing)
		uv_run(loop, UV_RUN_ONCE);
	uv_timer_start(j->tick, journal_etcd__on_tick, TICK_MS, TICK_MS);
	rc = 0;
out:
	rt_buf_free(&p);
	if (rc < 0) {
		journal_etcd_close(j);
		j = NULL;
	}
	*out = j;
	return rc;
}

void journal_etcd_flush(struct journal_etcd *j)
{
	if (j == NULL || j->stopped)
		return;
	j->flushing = 1;
	j->linger_end = 0;
	if (j->kick != NULL && !j->busy)
		uv_timer_start(j->kick, journal_etcd__on_kick, 0, 0);
}

int journal_etcd_flushed(const struct journal_etcd *j)
{
	/* Nothing left; or it cannot be sent now: never read (no head
	 * to number from), or etcd refused the last try. */
	return j == NULL || j->stopped || j->nq == 0 || !j->synced ||
	       j->failing;
}

void journal_etcd_stop(struct journal_etcd *j)
{
	if (j == NULL || j->stopped)
		return;
	j->stopped = 1;
	etcd_watch_free(j->watch);
	j->watch = NULL;
	j->watching = 0;
	etcd_client_free(j->c);
	j->c = NULL;
	if (j->tick != NULL)
		uv_close((uv_handle_t *)j->tick, on_closed);
	j->tick = NULL;
	if (j->kick != NULL)
		uv_close((uv_handle_t *)j->kick, on_closed);
	j->kick = NULL;
	if (j->nq > 0)
		rt_log(RT_LOG_WARN, "journal: %zu lines not known to be sent",
		       j->nq);
}

void journal_etcd_close(struct journal_etcd *j)
{
	if (j == NULL)
		return;
	journal_etcd_stop(j);
	journal_etcd__pop(j, j->nq);
	free(j->q);
	free(j->pre);
	free(j->pre_end);
	free(j->head_key);
	free(j->lo);
	free(j->hi);
	free(j);
}

void journal_etcd_state(const struct journal_etcd *j,
			struct journal_etcd_state *out)
{
	out->head = j->head;
	out->oldest = j->oldest;
	out->queued = j->nq;
	out->dropped = j->dropped_all;
	out->watching = j->watching;
}

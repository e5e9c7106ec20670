/*
 * journal_etcd_send.c - this controller's journal lines into etcd
 * (journal_etcd.h): queued, sent in batches at the journal's end, each
 * txn asking that the end did not move.
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

/* ============================================================ sending */

void journal_etcd__qline_free(struct qline *l)
{
	free(l->value);
	memset(l, 0, sizeof(*l));
}

/* Takes the first `n` lines off the queue. */
void journal_etcd__pop(struct journal_etcd *j, size_t n)
{
	size_t i;

	assert(n <= j->nq);
	for (i = 0; i < n; i++) {
		assert(j->qbytes >= j->q[i].len);
		j->qbytes -= j->q[i].len;
		journal_etcd__qline_free(&j->q[i]);
	}
	if (n > 0)
		memmove(j->q, j->q + n, (j->nq - n) * sizeof(*j->q));
	j->nq -= n;
}

/* Puts a line at index `at` of the queue (it takes `v`). */
int journal_etcd__insert(struct journal_etcd *j, size_t at, char *v, size_t len,
			 size_t line)
{
	assert(at <= j->nq && j->nq <= j->capq);
	if (j->nq == j->capq) {
		size_t cap = j->capq ? j->capq * 2 : 64;
		struct qline *q = realloc(j->q, cap * sizeof(*q));

		if (q == NULL)
			return -ENOMEM;
		j->q = q;
		j->capq = cap;
	}
	memmove(j->q + at + 1, j->q + at, (j->nq - at) * sizeof(*j->q));
	j->q[at].value = v;
	j->q[at].len = len;
	j->q[at].line = line;
	j->nq++;
	j->qbytes += len;
	return 0;
}

/* The lines dropped from a full queue, said in a line of their own. */
static void report_dropped(struct journal_etcd *j)
{
	struct rt_buf line = { 0 }, v = { 0 };
	char kvs[48];
	int64_t now = rt_now_ms();

	snprintf(kvs, sizeof(kvs), " lines=%" PRIu64, j->dropped);
	if (events_line(&line, now, "journal.dropped", "-", kvs) == 0 &&
	    journal_etcd_value(&v, NULL, now, j->writer, line.data, line.len) ==
		    0 &&
	    journal_etcd__insert(j, 0, v.data, v.len, line.len) == 0) {
		v.data = NULL; /* the queue's */
		j->dropped = 0;
	}
	rt_buf_free(&line);
	rt_buf_free(&v);
}

static void on_txn(void *arg, const struct etcd_answer *a);

/* Sends the batch (the first lines of the queue, numbered from P/evh as
 * known) in one txn, unless one is under way. */
static void send_batch(struct journal_etcd *j)
{
	struct etcd_op *ops = NULL;
	struct etcd_op fail[2];
	struct etcd_cmp cmp;
	char **keys = NULL, head[32], lo[256], hi[256], first[256];
	size_t i, n, bytes = 0, nops = 0;
	uint64_t off;
	int rc = -ENOMEM;

	if (j->stopped || j->busy || !j->synced || j->nq == 0 ||
	    rt_mono_ms() < j->retry_at)
		return;
	if (j->inflight == 0) {
		uint64_t now = rt_mono_ms();

		/* Fewer than a batch, the first of them queued just now: it
		 * waits for company, LINGER_MS at most. */
		if (j->nq < JOURNAL_ETCD_BATCH && now < j->linger_end &&
		    !j->flushing) {
			if (j->kick != NULL)
				uv_timer_start(j->kick, journal_etcd__on_kick,
					       j->linger_end - now, 0);
			return;
		}
		/* A new batch, numbered from P/evh as last seen. */
		if (j->dropped > 0)
			report_dropped(j);
		for (n = 0; n < j->nq && n < JOURNAL_ETCD_BATCH; n++) {
			if (n > 0 &&
			    bytes + j->q[n].len > JOURNAL_ETCD_BATCH_MAX)
				break;
			bytes += j->q[n].len;
		}
		j->inflight = n;
		/* What is left waited already: it goes next, at once. */
		j->linger_end = 0;
		j->base = j->head;
		j->base_known = j->head_rev > 0;
		j->trim_to = 0;
	}
	n = j->inflight;
	ops = calloc(n + 2, sizeof(*ops));
	keys = calloc(n + 1, sizeof(*keys));
	if (ops == NULL || keys == NULL)
		goto out;
	for (off = j->base, i = 0; i < n; off += j->q[i].line, i++) {
		if (asprintf(&keys[i], "%s%020" PRIu64, j->pre, off) < 0) {
			keys[i] = NULL;
			goto out;
		}
		ops[nops].kind = ETCD_OP_PUT;
		ops[nops].key = keys[i];
		ops[nops].value = j->q[i].value;
		ops[nops].value_len = j->q[i].len;
		nops++;
	}
	snprintf(head, sizeof(head), "%" PRIu64, off);
	ops[nops].kind = ETCD_OP_PUT;
	ops[nops].key = j->head_key;
	ops[nops].value = head;
	ops[nops].value_len = strlen(head);
	nops++;
	/* The bound: past `keep` bytes, back to 3/4 of it. */
	if (off > j->oldest && off - j->oldest > j->keep) {
		j->trim_to = off - j->keep / 4 * 3;
		snprintf(lo, sizeof(lo), "%s%020" PRIu64, j->pre, j->oldest);
		snprintf(hi, sizeof(hi), "%s%020" PRIu64, j->pre, j->trim_to);
		ops[nops].kind = ETCD_OP_DELETE;
		ops[nops].key = lo;
		ops[nops].range_end = hi;
		nops++;
	}
	memset(&cmp, 0, sizeof(cmp));
	cmp.key = j->head_key;
	if (j->base_known) {
		snprintf(first, sizeof(first), "%" PRIu64, j->base);
		cmp.target = ETCD_VALUE;
		cmp.result = ETCD_EQUAL;
		cmp.value = first;
		cmp.value_len = strlen(first);
	} else {
		cmp.target = ETCD_VERSION;
		cmp.result = ETCD_EQUAL;
		cmp.number = 0;
	}
	/* Lost: what P/evh is now, and whether the batch's first line is
	 * there already (a txn whose answer was lost did commit). */
	memset(fail, 0, sizeof(fail));
	fail[0].kind = ETCD_OP_RANGE;
	fail[0].key = j->head_key;
	fail[1].kind = ETCD_OP_RANGE;
	fail[1].key = keys[0];
	rc = etcd_txn(j->c, &cmp, 1, ops, nops, fail, 2, on_txn, j);
	if (rc == 0)
		j->busy = 1;
out:
	if (rc < 0) {
		rt_log(RT_LOG_WARN, "journal: cannot send: %s", strerror(-rc));
		j->retry_at = rt_mono_ms() + TICK_MS;
	}
	for (i = 0; keys != NULL && i < n; i++)
		free(keys[i]);
	free(keys);
	free(ops);
}

static void on_txn(void *arg, const struct etcd_answer *a)
{
	struct journal_etcd *j = arg;
	const struct etcd_kv *h = NULL, *f = NULL;
	size_t i;

	j->busy = 0;
	if (a->rc == -ECANCELED || j->stopped)
		return;
	if (a->rc < 0) {
		/* Sent again as it was, numbered as it was: if it did
		 * commit, that txn loses and its first line says so. */
		if (!j->failing)
			rt_log(RT_LOG_WARN,
			       "journal: sending %zu lines: %s%s%s; they "
			       "wait",
			       j->inflight, strerror(-a->rc),
			       a->error ? ": " : "", a->error ? a->error : "");
		j->failing = 1;
		j->retry_at = rt_mono_ms() + TICK_MS;
		return;
	}
	if (j->failing)
		rt_log(RT_LOG_INFO, "journal: sending again");
	j->failing = 0;
	j->retry_at = 0;
	if (a->succeeded) {
		uint64_t end = j->base;

		for (i = 0; i < j->inflight; i++)
			end += j->q[i].line;
		if (a->header.revision >= j->head_rev) {
			j->head = end;
			j->head_rev = a->header.revision;
		}
		if (j->trim_to > j->oldest)
			j->oldest = j->trim_to;
		journal_etcd__pop(j, j->inflight);
		j->inflight = 0;
	} else {
		for (i = 0; i < a->nkvs; i++) {
			if (strcmp(a->kvs[i].key, j->head_key) == 0)
				h = &a->kvs[i];
			else
				f = &a->kvs[i];
		}
		if (h != NULL) {
			j->head_rev = h->mod_revision;
			j->head = strtoull(h->value, NULL, 10);
		} else
			j->head_rev = 0; /* P/evh went: numbered on from head */
		if (f != NULL && f->value_len == j->q[0].len &&
		    memcmp(f->value, j->q[0].value, f->value_len) == 0)
			journal_etcd__pop(j, j->inflight); /* sent already */
		j->inflight = 0;			   /* numbered again */
	}
	if (j->kick != NULL && j->nq > 0)
		uv_timer_start(j->kick, journal_etcd__on_kick, 0, 0);
}

void journal_etcd__on_kick(uv_timer_t *t)
{
	send_batch(t->data);
}

void journal_etcd__on_tick(uv_timer_t *t)
{
	struct journal_etcd *j = t->data;

	if (j->stopped)
		return;
	if (j->resync && !j->syncing && j->watch == NULL)
		journal_etcd__read_all(j);
	else if (j->synced && !j->syncing && j->watch == NULL)
		journal_etcd__start_watch(j);
	send_batch(j);
}

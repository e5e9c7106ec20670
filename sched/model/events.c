/*
 * events.c - the event journal: appended lines with absolute offsets, so
 * that `tail -f events` and `tail -n 20 events` behave as on a log file.
 * Each tenant's lines are a part of it with a budget of its own: a
 * tenant's flood drops its own oldest lines, not the others'.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

#define RUN_MAX (1u << 20) /* contiguous bytes events_at looks at, at most */

void events_init(struct events *ev, size_t cap)
{
	memset(ev, 0, sizeof(*ev));
	ev->cap = cap;
	ev->part_cap = cap / EVENTS_PART_SHARE;
}

void events_close(struct events *ev)
{
	rt_buf_free(&ev->text);
	free(ev->idx);
	ev->idx = NULL;
	ev->n = ev->icap = 0;
}

uint64_t events_end(const struct events *ev)
{
	return ev->end;
}

/* The index of the first kept line that ends after `off` (n if none). */
static size_t kept_after(const struct events *ev, uint64_t off)
{
	size_t lo = 0, hi = ev->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ev->idx[mid].at + ev->idx[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The kept line that starts at `at`, or NULL. */
static struct events_kept *kept_at(const struct events *ev, uint64_t at)
{
	size_t i = kept_after(ev, at);

	return i < ev->n && ev->idx[i].at == at ? &ev->idx[i] : NULL;
}

/* Removes the lines marked dead: the text closes up, offsets stay. */
static void compact(struct events *ev)
{
	size_t i, k = 0, pos = 0;

	for (i = 0; i < ev->n; i++) {
		struct events_kept *l = &ev->idx[i];

		if (l->dead)
			continue;
		/* Kept lines are in order and the text closes up only. */
		assert(k == 0 ||
		       ev->idx[k - 1].at + ev->idx[k - 1].len <= l->at);
		assert(l->pos >= pos && l->pos + l->len <= ev->text.len);
		if (l->pos != pos)
			memmove(ev->text.data + pos, ev->text.data + l->pos,
				l->len);
		l->pos = pos;
		pos += l->len;
		ev->idx[k++] = *l;
	}
	ev->n = k;
	ev->text.len = pos;
	if (ev->text.data)
		ev->text.data[pos] = '\0';
	ev->first = k > 0 ? ev->idx[0].at : ev->end;
}

/* Drops whole lines from the front until at most 3/4 of cap is kept. */
static void events_trim(struct events *ev)
{
	size_t i, keep = ev->cap / 4 * 3, len = ev->text.len;

	if (len <= ev->cap)
		return;
	for (i = 0; i < ev->n && len > keep; i++) {
		ev->idx[i].dead = 1;
		len -= ev->idx[i].len;
	}
	compact(ev);
	assert(ev->text.len == len && len <= keep);
}

int events_line(struct rt_buf *out, int64_t ms, const char *kind,
		const char *object, const char *kvs)
{
	char when[32];

	rt_buf_reset(out);
	rt_format_time(ms, when);
	return rt_buf_printf(out, "%s %s %s%s\n", when, kind, object,
			     kvs ? kvs : "") < 0
		       ? -ENOMEM
		       : 0;
}

/* Makes room in the index for `k` more lines. Returns 0 or -ENOMEM. */
static int idx_room(struct events *ev, size_t k)
{
	struct events_kept *v;
	size_t cap = ev->icap ? ev->icap : 64;

	if (ev->n + k <= ev->icap)
		return 0;
	while (cap < ev->n + k)
		cap *= 2;
	v = realloc(ev->idx, cap * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	ev->idx = v;
	ev->icap = cap;
	assert(ev->n + k <= ev->icap);
	return 0;
}

int events_append_line(struct events *ev, int64_t ms, const char *line,
		       size_t n)
{
	size_t mark = ev->text.len, lines = 0, i, start = 0;

	for (i = 0; i < n; i++)
		lines += line[i] == '\n';
	if (n == 0)
		return 0;
	if (idx_room(ev, lines + 1) < 0 ||
	    rt_buf_append(&ev->text, line, n) < 0) {
		/* Out of memory: keep the journal whole rather than half a
		 * line. */
		ev->text.len = mark;
		if (ev->text.data)
			ev->text.data[mark] = '\0';
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (line[i] != '\n' && i + 1 < n)
			continue;
		ev->idx[ev->n].at = ev->end;
		ev->idx[ev->n].pos = mark + start;
		ev->idx[ev->n].len = i + 1 - start;
		ev->idx[ev->n].dead = 0;
		ev->end += i + 1 - start;
		ev->n++;
		start = i + 1;
	}
	/* Every byte is in a line, and the last line ends the text. */
	assert(start == n && ev->n <= ev->icap);
	assert(ev->idx[ev->n - 1].pos + ev->idx[ev->n - 1].len == ev->text.len);
	if (ev->n == 1 || ev->first > ev->idx[0].at)
		ev->first = ev->idx[0].at;
	ev->last_ms = ms;
	events_trim(ev);
	return 0;
}

void events_restart(struct events *ev, uint64_t first)
{
	ev->text.len = 0;
	if (ev->text.data)
		ev->text.data[0] = '\0';
	ev->n = 0;
	ev->first = ev->end = first;
}

void events_append(struct events *ev, int64_t ms, const char *kind,
		   const char *object, const char *kvs)
{
	struct rt_buf line = { 0 };

	if (events_line(&line, ms, kind, object, kvs) < 0 ||
	    events_append_line(ev, ms, line.data, line.len) < 0)
		rt_log(RT_LOG_ERROR, "event lost (no memory): %s %s", kind,
		       object);
	rt_buf_free(&line);
}

size_t events_at(const struct events *ev, uint64_t off, const char **p,
		 uint64_t *first)
{
	size_t i = kept_after(ev, off), j, n;

	*p = NULL;
	if (i == ev->n) {
		*first = ev->end;
		return 0;
	}
	if (off < ev->idx[i].at) {
		*first = ev->idx[i].at; /* before the oldest, or in a hole */
		return 0;
	}
	*first = ev->first;
	*p = ev->text.data + ev->idx[i].pos + (off - ev->idx[i].at);
	n = (size_t)(ev->idx[i].at + ev->idx[i].len - off);
	for (j = i + 1; j < ev->n && n < RUN_MAX &&
			ev->idx[j].at == ev->idx[j - 1].at + ev->idx[j - 1].len;
	     j++)
		n += ev->idx[j].len;
	return n;
}

void events_part_free(struct events_part *pt)
{
	free(pt->lines);
	memset(pt, 0, sizeof(*pt));
}

/* The index of the first kept line of `pt`: lines that `ev` dropped from
 * its front are skipped (they stay in the array until the next add). */
static size_t part_head(const struct events_part *pt, const struct events *ev)
{
	size_t lo = pt->head, hi = pt->n;

	/* Lines are in order of `at`: the first not dropped, by bisection. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pt->lines[mid].at < ev->first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Drops the oldest lines of `pt` from `ev` while it holds more than its
 * share, down to 3/4 of it (its newest line stays). */
static void part_trim(struct events_part *pt, struct events *ev)
{
	uint64_t bytes;
	size_t h = pt->head;
	int cut = 0;

	if (ev->part_cap == 0 || h >= pt->n)
		return;
	bytes = pt->end - pt->lines[h].own;
	if (bytes <= ev->part_cap)
		return;
	while (h + 1 < pt->n && bytes > ev->part_cap / 4 * 3) {
		struct events_kept *k = kept_at(ev, pt->lines[h].at);

		if (k != NULL) {
			k->dead = 1;
			cut = 1;
		}
		bytes -= pt->lines[h].len;
		h++;
	}
	pt->head = h;
	if (cut)
		compact(ev);
}

/* events_part_add of the line at `at` that ends at `end`. */
static void part_add(struct events_part *pt, struct events *ev, uint64_t at,
		     uint64_t end)
{
	struct events_line *l;

	pt->head = part_head(pt, ev);
	if (pt->head > 0 && (pt->n == pt->cap || pt->head >= pt->n / 2)) {
		memmove(pt->lines, pt->lines + pt->head,
			(pt->n - pt->head) * sizeof(*pt->lines));
		pt->n -= pt->head;
		pt->head = 0;
	}
	if (kept_at(ev, at) == NULL || at >= end)
		return; /* the line was not appended, or is already gone */
	if (pt->n == pt->cap) {
		size_t cap = pt->cap ? pt->cap * 2 : 16;

		l = realloc(pt->lines, cap * sizeof(*l));
		if (l == NULL) {
			rt_log(RT_LOG_ERROR, "event not in its tenant's "
					     "journal (no memory)");
			return;
		}
		pt->lines = l;
		pt->cap = cap;
	}
	l = &pt->lines[pt->n++];
	l->at = at;
	l->own = pt->end;
	l->len = (size_t)(end - at);
	pt->end += l->len;
	pt->last_ms = ev->last_ms;
	part_trim(pt, ev);
}

void events_part_add(struct events_part *pt, struct events *ev, uint64_t at)
{
	part_add(pt, ev, at, ev->end);
}

void events_part_add_line(struct events_part *pt, struct events *ev,
			  uint64_t at)
{
	const struct events_kept *k = kept_at(ev, at);

	if (pt->n > 0 && pt->lines[pt->n - 1].at >= at)
		return; /* not after the part's lines */
	part_add(pt, ev, at, k ? k->at + k->len : at);
}

uint64_t events_part_first(const struct events_part *pt,
			   const struct events *ev)
{
	size_t h = part_head(pt, ev);

	return h < pt->n ? pt->lines[h].own : pt->end;
}

size_t events_part_at(const struct events_part *pt, const struct events *ev,
		      uint64_t off, char *buf, size_t size, uint64_t *first)
{
	size_t lo = part_head(pt, ev), hi = pt->n, got = 0;

	*first = lo < pt->n ? pt->lines[lo].own : pt->end;
	if (off < *first)
		return 0;
	/* The line holding `off`: the last one starting at or before it. */
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pt->lines[mid].own <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (; lo < pt->n && got < size; lo++) {
		const struct events_line *l = &pt->lines[lo];
		const struct events_kept *kp;
		size_t skip, k;

		if (off >= l->own + l->len)
			continue;
		kp = kept_at(ev, l->at);
		if (kp == NULL)
			break; /* cannot be: its lines from head on are kept */
		skip = (size_t)(off - l->own);
		k = l->len - skip < size - got ? l->len - skip : size - got;
		memcpy(buf + got, ev->text.data + kp->pos + skip, k);
		got += k;
		off += k;
	}
	return got;
}

/* ==================================================== refusals, limited */

/* Replaces `*p` with a copy of `v` (NULL stays NULL). Returns 0 or
 * -ENOMEM (then `*p` is unchanged). */
static int set_str(char **p, const char *v)
{
	char *c = NULL;

	if (v != NULL && (c = strdup(v)) == NULL)
		return -ENOMEM;
	free(*p);
	*p = c;
	return 0;
}

int events_limit_offer(struct events_limit *lm, int64_t ms, const char *kind,
		       const char *object, const char *kvs)
{
	struct events_held *h = NULL;
	int64_t sec = ms / 1000;
	size_t i;

	if (strlen(kind) >= sizeof(h->kind))
		return 1;
	for (i = 0; i < EVENTS_LIMIT_KINDS; i++) {
		if (strcmp(lm->v[i].kind, kind) == 0) {
			h = &lm->v[i];
			break;
		}
		if (h == NULL && lm->v[i].kind[0] == '\0')
			h = &lm->v[i];
	}
	if (h == NULL)
		return 1;
	if (h->kind[0] == '\0') {
		memcpy(h->kind, kind, strlen(kind) + 1);
		h->sec = -1;
	}
	if (sec > h->sec) {
		h->sec = sec;
		h->sent = 0;
	}
	if (h->count == 0 && h->sent < EVENTS_LIMIT_BURST) {
		h->sent++;
		return 1;
	}
	if (set_str(&h->object, object) < 0 || set_str(&h->kvs, kvs) < 0)
		return 1;
	h->count++;
	return 0;
}

int events_limit_flush(struct events_limit *lm, int64_t ms, int all,
		       events_limit_fn fn, void *arg)
{
	struct rt_buf kvs = { 0 };
	int64_t sec = ms / 1000;
	int left = 0;
	size_t i;
	char n[32];

	for (i = 0; i < EVENTS_LIMIT_KINDS; i++) {
		struct events_held *h = &lm->v[i];

		if (h->count == 0)
			continue;
		if (!all && sec <= h->sec) {
			left++;
			continue;
		}
		rt_buf_reset(&kvs);
		snprintf(n, sizeof(n), "%ld", h->count);
		if (h->kvs != NULL)
			rt_buf_puts(&kvs, h->kvs);
		rt_buf_kv(&kvs, "count", n);
		fn(arg, h->kind, h->object ? h->object : "-",
		   kvs.data ? kvs.data : "");
		h->count = 0;
		h->sec = sec;
		h->sent = EVENTS_LIMIT_BURST; /* the next, in a second */
	}
	rt_buf_free(&kvs);
	return left;
}

void events_limit_free(struct events_limit *lm)
{
	size_t i;

	for (i = 0; i < EVENTS_LIMIT_KINDS; i++) {
		free(lm->v[i].object);
		free(lm->v[i].kvs);
	}
	memset(lm, 0, sizeof(*lm));
}

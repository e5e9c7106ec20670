/*
 * events.c - the event journal: appended lines with absolute offsets, so
 * that `tail -f events` and `tail -n 20 events` behave as on a log file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

void events_init(struct events *ev, size_t cap)
{
	memset(ev, 0, sizeof(*ev));
	ev->cap = cap;
}

void events_close(struct events *ev)
{
	rt_buf_free(&ev->text);
}

/* Drops whole lines from the front until at most 3/4 of cap is kept. */
static void events_trim(struct events *ev)
{
	size_t drop, keep = ev->cap / 4 * 3;
	const char *nl;

	if (ev->text.len <= ev->cap)
		return;
	drop = ev->text.len - keep;
	nl = memchr(ev->text.data + drop, '\n', ev->text.len - drop);
	drop = nl ? (size_t)(nl - ev->text.data) + 1 : ev->text.len;
	memmove(ev->text.data, ev->text.data + drop, ev->text.len - drop);
	ev->text.len -= drop;
	ev->text.data[ev->text.len] = '\0';
	ev->first += drop;
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

int events_append_line(struct events *ev, int64_t ms, const char *line,
		       size_t n)
{
	size_t mark = ev->text.len;

	if (rt_buf_append(&ev->text, line, n) < 0) {
		/* Out of memory: keep the journal whole rather than half a
		 * line. */
		ev->text.len = mark;
		if (ev->text.data)
			ev->text.data[mark] = '\0';
		return -ENOMEM;
	}
	ev->last_ms = ms;
	events_trim(ev);
	return 0;
}

void events_restart(struct events *ev, uint64_t first)
{
	ev->text.len = 0;
	if (ev->text.data)
		ev->text.data[0] = '\0';
	ev->first = first;
}

void events_append(struct events *ev, int64_t ms, const char *kind,
		   const char *object, const char *kvs)
{
	char when[32];
	size_t mark = ev->text.len;

	rt_format_time(ms, when);
	if (rt_buf_printf(&ev->text, "%s %s %s%s\n", when, kind, object,
			  kvs ? kvs : "") < 0) {
		/* Out of memory: keep the journal whole rather than half a
		 * line. */
		ev->text.len = mark;
		if (ev->text.data)
			ev->text.data[mark] = '\0';
		rt_log(RT_LOG_ERROR, "event lost (no memory): %s %s", kind,
		       object);
		return;
	}
	ev->last_ms = ms;
	events_trim(ev);
}

size_t events_at(const struct events *ev, uint64_t off, const char **p,
		 uint64_t *first)
{
	uint64_t end = ev->first + ev->text.len;

	*first = ev->first;
	if (off < ev->first || off >= end) {
		*p = NULL;
		return 0;
	}
	*p = ev->text.data + (off - ev->first);
	return (size_t)(end - off);
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

/* events_part_add of the line at `at` that ends at `end`. */
static void part_add(struct events_part *pt, const struct events *ev,
		     uint64_t at, uint64_t end)
{
	struct events_line *l;

	pt->head = part_head(pt, ev);
	if (pt->head > 0 && (pt->n == pt->cap || pt->head >= pt->n / 2)) {
		memmove(pt->lines, pt->lines + pt->head,
			(pt->n - pt->head) * sizeof(*pt->lines));
		pt->n -= pt->head;
		pt->head = 0;
	}
	if (at < ev->first || at >= end)
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
}

void events_part_add(struct events_part *pt, const struct events *ev,
		     uint64_t at)
{
	part_add(pt, ev, at, ev->first + ev->text.len);
}

void events_part_add_line(struct events_part *pt, const struct events *ev,
			  uint64_t at)
{
	uint64_t end = ev->first + ev->text.len;
	const char *nl = NULL;

	if (at >= ev->first && at < end)
		nl = memchr(ev->text.data + (at - ev->first), '\n',
			    (size_t)(end - at));
	if (nl != NULL)
		end = ev->first + (uint64_t)(nl - ev->text.data) + 1;
	if (pt->n > 0 && pt->lines[pt->n - 1].at >= at)
		return; /* not after the part's lines */
	part_add(pt, ev, at, end);
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
		size_t skip, k;

		if (off >= l->own + l->len)
			continue;
		skip = (size_t)(off - l->own);
		k = l->len - skip < size - got ? l->len - skip : size - got;
		memcpy(buf + got, ev->text.data + (l->at - ev->first) + skip,
		       k);
		got += k;
		off += k;
	}
	return got;
}

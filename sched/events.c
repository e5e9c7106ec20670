/*
 * events.c - the event journal: appended lines with absolute offsets, so
 * that `tail -f events` and `tail -n 20 events` behave as on a log file.
 */
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

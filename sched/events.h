/*
 * events.h - the in-memory event journal behind the `events` file.
 */
#ifndef FNFS_SCHED_EVENTS_H
#define FNFS_SCHED_EVENTS_H

#include <stdint.h>

#include "../runtime/rt.h"

/* The journal: text lines at absolute offsets. Old lines are dropped from
 * the front once it holds more than `cap` bytes; offsets never change. */
struct events {
	struct rt_buf text; /* the kept lines */
	uint64_t first;	    /* absolute offset of text.data[0] */
	size_t cap;	    /* bytes kept at most (about) */
	int64_t last_ms;    /* time of the last line, epoch ms */
};

/* Starts an empty journal that keeps about `cap` bytes. */
void events_init(struct events *ev, size_t cap);

/* Frees the journal. */
void events_close(struct events *ev);

/* Appends "<time> <kind> <object><kvs>\n" at time `ms`. `kvs` holds
 * preformatted " key=value" pairs or is NULL. */
void events_append(struct events *ev, int64_t ms, const char *kind,
		   const char *object, const char *kvs);

/* `out` := the line "<time> <kind> <object><kvs>\n" events_append would
 * append at time `ms` (reset first). Returns 0 or -ENOMEM. */
int events_line(struct rt_buf *out, int64_t ms, const char *kind,
		const char *object, const char *kvs);

/* Appends `n` bytes of `line` (one or more whole lines, each ending in
 * '\n') made at time `ms`, as events_append does. Returns 0 or -ENOMEM
 * (then nothing is appended). */
int events_append_line(struct events *ev, int64_t ms, const char *line,
		       size_t n);

/* Empties the journal and makes `first` the absolute offset of its next
 * line: lines before it are gone (a part forgets them as dropped). */
void events_restart(struct events *ev, uint64_t first);

/* See sched_events_at. */
size_t events_at(const struct events *ev, uint64_t off, const char **p,
		 uint64_t *first);

/* One line of a part of the journal (a tenant's): where it is in the
 * whole journal, and where in the part. */
struct events_line {
	uint64_t at;  /* absolute offset in the whole journal */
	uint64_t own; /* absolute offset in the part */
	size_t len;
};

/* A part of the journal: some of its lines, numbered by offsets of their
 * own that never change. It holds no text, only where its lines are in
 * the whole journal, and loses a line when the journal drops it. */
struct events_part {
	struct events_line *lines; /* owned; lines[head..n) are kept */
	size_t head, n, cap;
	uint64_t end;	 /* own offset one past the last line */
	int64_t last_ms; /* time of its last line, or 0 */
};

/* Frees a part's memory and empties it (offsets start over at 0). */
void events_part_free(struct events_part *pt);

/* Adds the line of `ev` that starts at absolute offset `at` (its last
 * one, just appended) to part `pt`, and forgets the lines `ev` dropped.
 * Out of memory, the line is not added and the part's offsets do not
 * count it. */
void events_part_add(struct events_part *pt, const struct events *ev,
		     uint64_t at);

/* Adds the line of `ev` that starts at absolute offset `at` (any kept
 * line, after every line `pt` has) to part `pt`, as events_part_add. */
void events_part_add_line(struct events_part *pt, const struct events *ev,
			  uint64_t at);

/* The oldest own offset of `pt` still kept in `ev`. */
uint64_t events_part_first(const struct events_part *pt,
			   const struct events *ev);

/* Copies up to `size` bytes of part `pt` from own offset `off` into
 * `buf`, line after line, and returns how many (0 at its end or before
 * its oldest kept line; `*first` is then that line's own offset). */
size_t events_part_at(const struct events_part *pt, const struct events *ev,
		      uint64_t off, char *buf, size_t size, uint64_t *first);

#endif

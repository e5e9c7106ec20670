/*
 * events.h - the in-memory event journal behind the `events` file.
 */
#ifndef FNFS_SCHED_EVENTS_H
#define FNFS_SCHED_EVENTS_H

#include <stdint.h>

#include "../../runtime/base/rt.h"

/* One kept line of the journal: its absolute offset, where its text is
 * in `text`, and its length (with its '\n'). */
struct events_kept {
	uint64_t at;
	size_t pos, len;
	int dead; /* to go at the next compaction (only inside events.c) */
};

/* The journal: text lines at absolute offsets. Old lines are dropped from
 * the front once it holds more than `cap` bytes, and a part's (a
 * tenant's) oldest lines once that part holds more than `part_cap`
 * bytes: one tenant's lines evict only its own. Offsets never change; a
 * line dropped from the middle leaves a hole that readers skip. */
struct events {
	struct rt_buf text;	 /* the kept lines, in order, holes left out */
	struct events_kept *idx; /* the kept lines, in order of `at` */
	size_t n, icap;		 /* idx[0..n) */
	uint64_t first;		 /* absolute offset of the oldest kept line */
	uint64_t end;		 /* absolute offset one past the newest */
	size_t cap;		 /* bytes kept at most (about) */
	size_t part_cap;	 /* bytes one part may keep (about) */
	int64_t last_ms;	 /* time of the last line, epoch ms */
};

/* Starts an empty journal that keeps about `cap` bytes, of which one
 * part about `cap` / EVENTS_PART_SHARE. */
#define EVENTS_PART_SHARE 8
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

/* The absolute offset one past the newest line (the file's size). */
uint64_t events_end(const struct events *ev);

/* The kept bytes of the journal from absolute offset `off`: `*p` and the
 * count of contiguous bytes there (up to a hole or the end). 0 when `off`
 * is at or past the end, or before the oldest kept line or in a hole:
 * `*first` is then the offset of the next kept line (the end if none).
 * See sched_events_at. */
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
 * count it. When the part then holds more than `ev->part_cap` bytes, its
 * oldest lines are dropped from `ev` (down to about 3/4 of it). */
void events_part_add(struct events_part *pt, struct events *ev, uint64_t at);

/* Adds the line of `ev` that starts at absolute offset `at` (any kept
 * line, after every line `pt` has) to part `pt`, as events_part_add. */
void events_part_add_line(struct events_part *pt, struct events *ev,
			  uint64_t at);

/* The oldest own offset of `pt` still kept in `ev`. */
uint64_t events_part_first(const struct events_part *pt,
			   const struct events *ev);

/* Copies up to `size` bytes of part `pt` from own offset `off` into
 * `buf`, line after line, and returns how many (0 at its end or before
 * its oldest kept line; `*first` is then that line's own offset). */
size_t events_part_at(const struct events_part *pt, const struct events *ev,
		      uint64_t off, char *buf, size_t size, uint64_t *first);

/* ==================================================== refusals, limited */

#define EVENTS_LIMIT_KINDS 8 /* kinds limited per source at once */
#define EVENTS_LIMIT_BURST 5 /* lines of one kind a second, summary aside */

/* Refusals of one kind from one source (a tenant, or the root) held back
 * in the current second: the newest's object and key=values, and how
 * many. */
struct events_held {
	char kind[32]; /* "" for a free slot */
	char *object;  /* owned, the newest's, or NULL */
	char *kvs;     /* owned, the newest's, or NULL */
	long count;    /* held since the last line */
	int64_t sec;   /* epoch second of the last line of this kind */
	int sent;      /* lines of this kind journalled in that second */
};

/* A few lines a second per kind of refusal of one source: the first
 * EVENTS_LIMIT_BURST of a second go to the journal at once, the rest are
 * counted and summarised in one line with `count=N` after that second
 * (events_limit_flush), at most one a second. */
struct events_limit {
	struct events_held v[EVENTS_LIMIT_KINDS];
};

/* Offers a refusal of `kind` made at time `ms`. Returns 1 when it is to be
 * journalled now, 0 when it was counted (held for a summary line). Out
 * of slots or memory it returns 1 (unlimited rather than lost). */
int events_limit_offer(struct events_limit *lm, int64_t ms, const char *kind,
		       const char *object, const char *kvs);

/* The summary line of held refusals: `kvs` with " count=N" after it. */
typedef void (*events_limit_fn)(void *arg, const char *kind, const char *object,
				const char *kvs);

/* Calls `fn` once for each kind with refusals held from a second before
 * that of `ms` (all of them if `all`), and forgets them. Returns how many
 * kinds still hold some. */
int events_limit_flush(struct events_limit *lm, int64_t ms, int all,
		       events_limit_fn fn, void *arg);

/* Frees what `lm` holds, without summary lines. */
void events_limit_free(struct events_limit *lm);

#endif

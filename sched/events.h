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

/* See sched_events_at. */
size_t events_at(const struct events *ev, uint64_t off, const char **p,
		 uint64_t *first);

#endif

/*
 * place.h - placement of an instance on a worker (spec 8, OpenWhisk's
 * rules), as a pure function over a model: workers in, a choice and a
 * reason out. No I/O, no state: unit-tested over hand-built models.
 */
#ifndef FNFS_SCHED_PLACE_H
#define FNFS_SCHED_PLACE_H

#include <stddef.h>

#include "../../runtime/base/rt.h"

enum sched_strategy { SCHED_SPREAD, SCHED_PACK, SCHED_RANDOM };

/* What placement sees of one worker. */
struct place_worker {
	const char *id;
	int memory_mb;		/* capacity */
	int used_mb;		/* taken by instances placed on it */
	const char *tags;	/* space separated; "" = untagged */
	const char *namespaces; /* space separated tenant/ns; "" = any */
	int usable;		/* healthy and not draining */
	int same_function;	/* instances of this function on it */
	int instances;		/* instances on it */
};

/* What is to be placed. */
struct place_request {
	int memory_mb;
	char *const *tags; /* required tags */
	int ntags;
	int loose; /* tags_policy loose */
	const char *tenant, *ns;
	enum sched_strategy strategy;
	unsigned long random; /* any number, for SCHED_RANDOM */
};

/* Chooses a worker among `n` for request `r`. Returns its index, or -1
 * with the reason in `why` ("no worker with tags gpu and 512 MB free").
 *
 * Candidates are usable workers with free memory >= the request that are
 * not dedicated to other namespaces. Without required tags, untagged
 * candidates come first and tagged ones only if none fits. With required
 * tags, only candidates carrying them all; if there is none, `strict`
 * fails and `loose` falls back to untagged, then other tagged ones.
 * Among the candidates of the first tier that has any, `spread` picks the
 * least used memory share, avoiding workers that already run this
 * function when another fits; `pack` the most used; `random` any. */
int sched_place(const struct place_worker *w, size_t n,
		const struct place_request *r, struct rt_buf *why);

/* Whether an instance of request `r` may stay on worker `w`, where
 * `w->used_mb` leaves out what the instance itself holds there: `w` is
 * usable, serves the namespace, has `r->memory_mb` free and, for a strict
 * request, carries every tag (a loose one stays anywhere). Returns 1, or 0
 * with the reason in `why` (may be NULL): "worker w1 has 512 MB free, 4096
 * needed". Pure. */
int sched_place_fits(const struct place_worker *w,
		     const struct place_request *r, struct rt_buf *why);

/* Whether worker `w` carries every tag of `r`. */
int sched_place_has_tags(const struct place_worker *w,
			 const struct place_request *r);

/* The word of a strategy, and back (-1 when unknown). */
const char *sched_strategy_name(enum sched_strategy s);
int sched_strategy_parse(const char *word, size_t len);

#endif

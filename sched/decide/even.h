/*
 * even.h - the order in which rebalance tries to even out the instance
 * counts of workers: every pair of a fuller and an emptier worker, the
 * widest gaps first, until one pair can move an instance. Pure but for
 * the caller's test of a pair; unit-tested (tests/unit/test_even.c).
 */
#ifndef FNFS_SCHED_EVEN_H
#define FNFS_SCHED_EVEN_H

#include <stddef.h>

/* Whether an instance may move from worker `from` to worker `to`
 * (indexes into the counts); the caller remembers which one. Returns 1
 * (it may), 0 (that target refuses everything `from` holds) or -errno
 * (stop). */
typedef int (*sched_even_try)(size_t from, size_t to, void *arg);

/* Finds the next move that brings the `n` counts in `count` closer: from
 * the fullest worker to each worker at least two below it, the emptiest
 * first, then from the next fullest, and so on (workers of equal counts
 * are all tried, in an order fixed by their indexes). `order`
 * is scratch for `n` indexes. Asks `try` for each such pair and stops at
 * the first it accepts: a target that refuses does not end the search.
 * Returns 1 with `*from` and `*to` set, 0 when no pair is accepted (the
 * counts are as even as the workers allow), or what `try` returned when
 * negative. */
int sched_even_next(const int *count, size_t n, size_t *order,
		    sched_even_try try, void *arg, size_t *from, size_t *to);

#endif

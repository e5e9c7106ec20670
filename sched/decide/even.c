/*
 * even.c - the order of rebalance's moves (see even.h).
 */
#include <assert.h>

#include "even.h"

/* Sorts `order` (the indexes 0..n-1) by count, fullest first; ties keep
 * the lower index first. Insertion sort: a pool has few workers. */
static void by_count(const int *count, size_t n, size_t *order)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		size_t k = i;

		for (j = i; j > 0 && count[order[j - 1]] < count[k]; j--)
			order[j] = order[j - 1];
		order[j] = k;
	}
}

int sched_even_next(const int *count, size_t n, size_t *order,
		    sched_even_try try, void *arg, size_t *from, size_t *to)
{
	size_t hi, lo;

	by_count(count, n, order);
	for (hi = 0; hi < n; hi++) {
		/* From the emptiest up, while the gap is two or more. */
		for (lo = n; lo-- > hi + 1;) {
			int rc;

			if (count[order[hi]] <= count[order[lo]] + 1)
				break;
			rc = try(order[hi], order[lo], arg);
			if (rc < 0)
				return rc;
			if (rc > 0) {
				*from = order[hi];
				*to = order[lo];
				assert(count[*from] > count[*to] + 1);
				return 1;
			}
		}
	}
	return 0;
}

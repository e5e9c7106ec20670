/*
 * partial.h - a value that the writes of one open of an attribute file
 * have only begun: what fs/ops.c asks before it refuses a write(2), so
 * that a value split across several writes is judged whole.
 */
#ifndef FNFS_SCHED_PARTIAL_H
#define FNFS_SCHED_PARTIAL_H

#include <stddef.h>

#include "../sched.h"

/* Whether `v` (`len` bytes), what one open of attribute `a` has written
 * so far, may be the start of a longer value rather than all of it: it
 * does not end in a newline, or, for config, its JSON is not closed yet
 * (nothing but blanks, a string or an open brace or bracket at the end).
 * Pure. */
int sched_value_unfinished(enum sched_attr a, const char *v, size_t len);

/* Whether `v` would be a good value of attribute `a` of `fn` as it is
 * now: parsed and checked as sched_function_check does, but without the
 * caller's rights or the quotas, and recording nothing. Returns 0 or
 * -EINVAL/-ENOMEM. */
int sched_value_probe(const struct sched_function *fn, enum sched_attr a,
		      const char *v, size_t len);

#endif

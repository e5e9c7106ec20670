/*
 * staged.h - the changes of tenants, namespaces and functions that a write
 * transaction of the store holds until it ends: what a controller applies
 * to its model once they are committed (store_listen), whichever backend
 * committed them. Rows are copied.
 */
#ifndef FNFS_SCHED_STAGED_H
#define FNFS_SCHED_STAGED_H

#include <stddef.h>

#include "../store/store.h"

struct staged {
	struct store_change *v;
	size_t n, cap;
};

/* Appends a copy of `r` as change `op`. Returns 0 or -ENOMEM. */
int staged_add(struct staged *s, enum store_op op, const struct store_row *r);

/* Drops every change from index `from` on (a savepoint rolled back). */
void staged_truncate(struct staged *s, size_t from);

/* Frees what `s` holds and empties it. */
void staged_free(struct staged *s);

#endif

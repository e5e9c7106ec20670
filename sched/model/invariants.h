/*
 * invariants.h - the model's invariants, checked (docs/architecture.md):
 * a worker's free memory is not negative, an instance's assignment and
 * its worker's map agree, and an instance is held by at most one worker
 * (one running copy per epoch). Calls nothing above it.
 */
#ifndef FNFS_SCHED_INVARIANTS_H
#define FNFS_SCHED_INVARIANTS_H

#include "../internal.h"

/* Asserts the model's invariants after a change of what workers hold
 * (the end of a reconciliation). The cheap one (free memory, one pass
 * over the workers) always; in debug builds (FNFS_DEBUG, which
 * `make SANITIZE=1` defines) also every assignment, one pass over every
 * instance and every worker's map. */
void sched__model_check(struct sched *s);

/* Asserts that no worker's free memory is negative (debug builds). */
void sched__check_free(struct sched *s);

#endif

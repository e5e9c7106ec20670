/*
 * write.h - the writes a user makes to the tree of tenants, namespaces and
 * functions (mkdir, rmdir, chown/chmod of a tenant, an attribute's value),
 * whichever store stands behind them. With SQLite a write is applied
 * before sched_op_run returns; with a store shared by several controllers
 * it is committed there and applied when it comes back, and a write that
 * lost a race with another controller's is checked and tried again.
 * struct sched_op and sched_op_run, which fs/ uses, are in sched.h; here
 * is the bound of their retries.
 */
#ifndef FNFS_SCHED_WRITE_H
#define FNFS_SCHED_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "../sched.h"

/* How often a write that lost a race is checked and tried again: each
 * round has a winner, so N writers of one key end within N rounds. */
#define SCHED_OP_TRIES 64
/* And for how long in all: each try is bounded (the store's request and
 * its wait for the watch), but 64 of them against an etcd that answers
 * "unavailable" would keep a writer for minutes. */
#define SCHED_OP_DEADLINE_MS 30000

#endif

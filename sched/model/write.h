/*
 * write.h - the writes a user makes to the tree of tenants, namespaces and
 * functions (mkdir, rmdir, chown/chmod of a tenant, an attribute's value),
 * whichever store stands behind them. With SQLite a write is applied
 * before sched_op_run returns; with a store shared by several controllers
 * it is committed there and applied when it comes back, and a write that
 * lost a race with another controller's is checked and tried again.
 */
#ifndef FNFS_SCHED_WRITE_H
#define FNFS_SCHED_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "../sched.h"

enum sched_op_kind {
	SCHED_OP_CREATE, /* mkdir: child `name` of object `id` */
	SCHED_OP_REMOVE, /* rmdir: child `name` of object `id` */
	SCHED_OP_CHOWN,	 /* tenant `id`: uid, gid, mode (< 0: kept) */
	SCHED_OP_ATTR	 /* function `id`: attribute `attr` := value */
};

struct sched_op {
	enum sched_op_kind kind;
	uint64_t id; /* sched_obj id: the parent, tenant or function */
	const char *name;
	const struct sched_caller *who; /* NULL: fnfs itself */
	int64_t uid, gid, mode;
	enum sched_attr attr;
	const char *value;
	size_t len;
};

/* How often a write that lost a race is checked and tried again: each
 * round has a winner, so N writers of one key end within N rounds. */
#define SCHED_OP_TRIES 64
/* And for how long in all: each try is bounded (the store's request and
 * its wait for the watch), but 64 of them against an etcd that answers
 * "unavailable" would keep a writer for minutes. */
#define SCHED_OP_DEADLINE_MS 30000

/* Applies `op` (copied: nothing of it need outlive the call). Returns 0
 * once applied (a create's object is then the child `name` of `id`), a
 * -errno as sched_create, sched_remove, sched_tenant_chown and
 * sched_function_write give (-ENOENT when object `id` is gone), or
 * SCHED_LATER: `done` is called once, with 0 when the change is applied
 * on this controller, or with the positive errno; -EAGAIN when it lost
 * SCHED_OP_TRIES races in a row or was still losing them (or the store
 * still busy) after SCHED_OP_DEADLINE_MS, -EIO when the store cannot be reached
 * (`done` may be NULL: nobody waits). */
int sched_op_run(struct sched *s, const struct sched_op *op, sched_done_fn done,
		 void *arg);

#endif

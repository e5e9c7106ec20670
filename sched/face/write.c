/*
 * write.c - a user's write to the tree, applied now or once the shared
 * store has it (see write.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "../store/store.h"
#include "write.h"

/* A write under way with a shared store: its own copy of the op. */
struct op_req {
	struct sched *s;
	struct sched_op op;
	struct sched_caller who;
	int has_who;
	char *name, *value;
	uint32_t *groups;
	sched_done_fn done;
	void *arg;
	int tries;
	int64_t until; /* rt_mono_ms: no try starts after it */
};

static void req_free(struct op_req *q)
{
	free(q->name);
	free(q->value);
	free(q->groups);
	free(q);
}

static int run_once(struct sched *s, const struct sched_op *op,
		    store_done_fn done, void *arg)
{
	struct sched_obj *o = sched_find(s, op->id), *made;

	if (o == NULL)
		return -ENOENT;
	switch (op->kind) {
	case SCHED_OP_CREATE:
		return sched__create(s, o, op->name, op->who, done, arg, &made);
	case SCHED_OP_REMOVE:
		return sched__remove(s, o, op->name, op->who, done, arg);
	case SCHED_OP_CHOWN:
		return sched__tenant_chown(s, o, op->who, op->uid, op->gid,
					   op->mode, done, arg);
	case SCHED_OP_ATTR:
		if (o->type != SCHED_FUNCTION)
			return -EINVAL;
		return sched__function_write(s, (struct sched_function *)o,
					     op->attr, op->value, op->len,
					     op->who, done, arg);
	}
	return -EINVAL;
}

/* A write the shared store refused (`err`, EIO without etcd's quorum):
 * the function it is of says why in `error`, and the journal too, as a
 * refusal of validation would (a tenant or namespace has no `error`:
 * the log says it). */
static void say_why(struct op_req *q, int err)
{
	struct sched_obj *o = sched_find(q->s, q->op.id);
	struct rt_buf reason = { 0 };
	const char *file = NULL, *why = NULL, *ep = NULL;
	int64_t rev, since;
	int watching;

	if (err != EIO && err != ENOSPC)
		return;
	if (o != NULL && q->op.kind == SCHED_OP_ATTR)
		file = sched_attr_name(q->op.attr);
	else if (o != NULL && q->op.kind == SCHED_OP_REMOVE)
		o = sched_child(o, q->op.name); /* the function removed */
	if (store_shared_state(q->s->store, &rev, &watching, &since, &ep,
			       &why) < 0)
		why = NULL;
	rt_buf_printf(&reason, "%s%snot stored: %s%s%s", file ? file : "",
		      file ? ": " : "",
		      err == ENOSPC ? "the store is full"
				    : "the store could not be written",
		      why && why[0] ? ": " : "", why && why[0] ? why : "");
	if (o != NULL && o->type == SCHED_FUNCTION)
		sched__reject(q->s, (struct sched_function *)o,
			      file ? file : o->name, err,
			      reason.data ? reason.data : "not stored");
	else
		rt_log(RT_LOG_ERROR, "%s", reason.data ? reason.data : "?");
	rt_buf_free(&reason);
}

static void on_store(void *arg, int err)
{
	struct op_req *q = arg;
	int rc = err;

	/* Lost a race: the model now has the winner's change (the store
	 * calls back once it is applied), so the write is checked against
	 * it again, and may now be refused (EEXIST, ENOTEMPTY, ...). */
	while (rc == -EAGAIN && ++q->tries < SCHED_OP_TRIES &&
	       rt_mono_ms() < q->until) {
		rc = run_once(q->s, &q->op, on_store, q);
		if (rc == SCHED_LATER)
			return;
	}
	if (rc < 0 && rc != -EAGAIN)
		say_why(q, -rc);
	if (q->done != NULL)
		q->done(q->arg, rc < 0 ? -rc : 0);
	req_free(q);
}

/* Copies `op` into a request of its own. */
static struct op_req *req_new(struct sched *s, const struct sched_op *op,
			      sched_done_fn done, void *arg)
{
	struct op_req *q = calloc(1, sizeof(*q));
	int failed = 0;

	if (q == NULL)
		return NULL;
	q->s = s;
	q->until = rt_mono_ms() + SCHED_OP_DEADLINE_MS;
	q->op = *op;
	q->done = done;
	q->arg = arg;
	if (op->name != NULL && (q->name = strdup(op->name)) == NULL)
		failed = 1;
	if (op->value != NULL) {
		q->value = malloc(op->len + 1);
		if (q->value != NULL) {
			memcpy(q->value, op->value, op->len);
			q->value[op->len] = '\0';
		} else
			failed = 1;
	}
	if (op->who != NULL) {
		q->who = *op->who;
		if (op->who->ngroups > 0) {
			q->groups = calloc((size_t)op->who->ngroups,
					   sizeof(*q->groups));
			if (q->groups != NULL)
				memcpy(q->groups, op->who->groups,
				       (size_t)op->who->ngroups *
					       sizeof(*q->groups));
			else
				failed = 1;
		}
		q->who.groups = q->groups;
		q->op.who = &q->who;
	}
	q->op.name = q->name;
	q->op.value = q->value;
	if (failed) {
		req_free(q);
		return NULL;
	}
	return q;
}

int sched_op_run(struct sched *s, const struct sched_op *op, sched_done_fn done,
		 void *arg)
{
	struct op_req *q;
	int rc;

	if (!sched_cluster_shared(s))
		return run_once(s, op, NULL, NULL);
	q = req_new(s, op, done, arg);
	if (q == NULL)
		return -ENOMEM;
	rc = run_once(s, &q->op, on_store, q);
	if (rc != SCHED_LATER)
		req_free(q);
	return rc;
}

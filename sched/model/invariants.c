/*
 * invariants.c - the model's invariants as asserts (invariants.h).
 */
#include <assert.h>
#include <stdlib.h>

#include "../act/assign.h"
#include "../common.h"
#include "invariants.h"

#ifdef FNFS_DEBUG
/* Worker `w`'s map: every instance it holds says it is there, and what
 * they reserve is what the worker counts as used. */
static int worker_cb(const char *key, void *value, void *arg)
{
	const struct sched_worker *w = value;
	size_t i, n;
	struct sched_instance **v;
	long long reserved = 0;

	(void)key;
	(void)arg;
	assert(w->obj.type == SCHED_WORKER);
	v = (struct sched_instance **)rt_map_values(&w->assignments, &n);
	assert(v != NULL || n == 0);
	for (i = 0; v != NULL && i < n; i++) {
		assert(v[i]->obj.type == SCHED_INSTANCE);
		assert(v[i]->worker == w);
		reserved += v[i]->reserved_mb;
	}
	free(v);
	assert(reserved == w->used_mb);
	return 0;
}

/* Instance `in`: held by its worker under its name, and by no worker
 * when it has none. (Its state is checked against its assignment when
 * it is written, instance_state.c: a follower restores the leader's rows
 * in any order.) */
static void check_instance(struct sched_instance *in)
{
	struct rt_buf name = { 0 };

	if (in->worker == NULL) {
		/* No worker's map holds it: worker_cb checked that every
		 * instance in a map points back at that worker. */
		assert(in->reserved_mb == 0);
		return;
	}
	if (sched_assignment_name(in, &name) < 0)
		return; /* out of memory: nothing to check with */
	assert(rt_map_get(&in->worker->assignments, name.data) == in);
	rt_buf_free(&name);
}

static int tree_cb(const char *key, void *value, void *arg)
{
	struct sched_obj *o = value;

	(void)key;
	if (o->type == SCHED_INSTANCE) {
		check_instance((struct sched_instance *)o);
		return 0;
	}
	return rt_map_each(&o->children, tree_cb, arg);
}
#endif

static int check_free_cb(const char *key, void *value, void *arg)
{
	const struct sched_worker *w = value;

	(void)key;
	(void)arg;
	/* A worker's free memory is never negative, except while one that
	 * came back with less memory waits for this reconciliation. */
	assert(w->used_mb >= 0);
	assert(w->used_mb <= w->memory_mb || !w->online);
	return 0;
}

void sched__check_free(struct sched *s)
{
	rt_map_each(&s->pool.children, check_free_cb, NULL);
}

void sched__model_check(struct sched *s)
{
	sched__check_free(s);
#ifdef FNFS_DEBUG
	rt_map_each(&s->pool.children, worker_cb, s);
	rt_map_each(&s->root.children, tree_cb, s);
#endif
}

/*
 * common.h - small helpers the modules of sched/ share: an instance's
 * function and path, storing an instance or a worker's row, the end of a
 * derived transaction, instance events, and a few parsers. Calls nothing
 * above the model (model/journal.c, model/objects.c and the store).
 */
#ifndef FNFS_SCHED_COMMON_H
#define FNFS_SCHED_COMMON_H

#include <jansson.h>

#include "internal.h"

/* The instances of a function, in order of their number (a malloc'd
 * array of `n`; free `v`). */
struct sched_collect {
	struct sched_instance **v;
	int n;
};

/* The function an instance belongs to. */
struct sched_function *sched__fn_of(const struct sched_instance *in);

/* The path parts of an instance (tenant, namespace, function). */
void sched__parts(const struct sched_instance *in, const char **t,
		  const char **ns, const char **fn);

/* The word of an instance state ("pending" ... "lost"). */
const char *sched__state_word(enum sched_instance_state st);

/* Stores instance `in` as it is, but wanting `run`. Returns 0 or -errno
 * of the store. */
STORE_MUST int sched__store_put_as(struct sched *s,
				   const struct sched_instance *in, int run);

/* Stores instance `in` as it is. Returns 0 or -errno of the store. */
STORE_MUST int sched__store_put(struct sched *s,
				const struct sched_instance *in);

/* A cluster's leader: tells the other controllers the state and pid of
 * `in` (store_instance_publish); a no-op elsewhere. */
void sched__publish(struct sched *s, const struct sched_instance *in);

/* Ends a transaction of derived state (assignments, instances made from
 * a spec) begun if `began`, after work whose first store error is `rc`.
 * Such state is derived again from the specs and the workers' reports
 * after a restart, so a failure is logged, not returned to a writer.
 * Returns 0 or the -errno. */
int sched__derived_end(struct sched *s, int began, int rc, const char *what);

/* Journals `kind` for instance `in` with up to two pairs (a NULL key
 * ends them). */
void sched__inst_event(struct sched *s, const struct sched_instance *in,
		       const char *kind, const char *k1, const char *v1,
		       const char *k2, const char *v2);

/* Finds an instance by its id "t/ns/fn/N". */
struct sched_instance *sched__instance_by_id(struct sched *s, const char *id);

/* The function's instances in order of their number; free the array. */
struct sched_collect sched__instances_of(struct sched_function *fn);

/* The instances of `fn` in order of their number (a malloc'd array, `*n`
 * of them). */
struct sched_instance **sched__instances_sorted(struct sched_function *fn,
						int *n);

/* Stores a worker's row (id, memory, tags, namespaces, local, drained;
 * on a cluster also its state word, pid and since_ms, what the others
 * show). Returns 0 or -errno of the store. */
STORE_MUST int sched__worker_persist(struct sched *s, struct sched_worker *w);

/* The one word of worker `w`'s state: `healthy`, `unhealthy`,
 * `draining`, `drained`, `offline` or `revoked`; on a follower, the
 * word the cluster's leader told (w->view), when it told one. */
const char *sched__worker_word(const struct sched *s,
			       const struct sched_worker *w);

/* A cluster's leader: tells the other controllers each worker whose word
 * or pid changed since it last told them (store_worker_publish); a no-op
 * elsewhere. Called once a second, and at once after a worker's change. */
void sched__workers_publish(struct sched *s);

/* The strings of JSON array `a` (["a","b"]), joined by one space ("a
 * b"); NULL, not an array or no strings: "". Returns a string to free,
 * or NULL without memory. */
char *sched__words_of_json(const json_t *a);

/* A pseudo-random number (xorshift), for the random strategy. */
unsigned long sched__random(struct sched *s);

/* Parses a whole write as an integer in [lo, hi]. Returns 0 or -EINVAL. */
int sched__parse_int(const char *buf, size_t len, long lo, long hi, long *out);

/* The instance's id as workers and the journal know it, its path
 * TENANT/NS/FUNCTION/N: malloc'd (the caller frees it), NULL without
 * memory. */
char *sched__instance_id(const struct sched_instance *in);

#endif

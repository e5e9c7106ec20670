/*
 * sched.c - the controller's open and close (sched.h): the model, the
 * store, the role, the cluster's journal and the code module, in that
 * order, and the calls up the layers (s->hooks), which only this layer,
 * knowing them all, may set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../internal.h"
#include "../code/code.h"
#include "../act/reconcile.h"
#include "../act/reports.h"
#include "workers.h"
#include "face.h"

/* Journal size kept in memory. */
#define EVENTS_CAP (4u << 20)

/* A function leaves the model: its calls' queue and its code go. */
static void function_drop(struct sched *s, struct sched_function *fn)
{
	sched__calls_free(s, fn);
	sched__code_drop(s, fn);
}

static void set_hooks(struct sched *s)
{
	s->hooks.instance_free = sched__instance_free;
	s->hooks.worker_free = sched__worker_free;
	s->hooks.function_drop = function_drop;
	s->hooks.reconcile = sched__reconcile;
	s->hooks.reconcile_soon = sched__reconcile_soon;
	s->hooks.retire_idle = sched__retire_idle;
	s->hooks.worker_lost = sched__worker_lost;
}

int sched_open_config(struct sched **out, const char *datadir,
		      struct uv_loop_s *loop, const struct store_config *c)
{
	struct sched *s = calloc(1, sizeof(*s));
	struct rt_buf path = { 0 };
	struct store_config sc = *c;
	int rc = -ENOMEM;

	if (s == NULL)
		goto out;
	events_init(&s->journal.events, EVENTS_CAP);
	s->next_id = SCHED_POOL_ID + 1;
	s->root.id = SCHED_ROOT_ID;
	s->root.type = SCHED_ROOT;
	s->root.created_ms = s->root.updated_ms = rt_now_ms();
	s->pool.id = SCHED_POOL_ID;
	s->pool.type = SCHED_POOL;
	s->pool.created_ms = s->pool.updated_ms = s->root.created_ms;
	s->datadir = strdup(datadir);
	s->calls_state.stats = calloc(1, sizeof(*s->calls_state.stats));
	set_hooks(s);
	if (mkdir(datadir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		rt_log(RT_LOG_ERROR, "mkdir %s: %s", datadir, strerror(errno));
		goto out;
	}
	if (rt_buf_printf(&path, "%s/fnfs.db", datadir) < 0)
		goto out;
	sc.path = path.data;
	rc = store_open_config(&s->store, &sc, loop);
	if (rc == 0)
		rc = sched__tree_load(s);
	if (rc == 0)
		rc = sched_cluster_open(s);
	if (rc == 0)
		store_listen(s->store, sched__apply_change, s);
	if (rc == 0)
		rc = sched__cluster_journal_open(s, loop, &sc);
	if (rc == 0)
		/* The role says whether the tree is this controller's
		 * alone. */
		rc = sched__code_open(s, sched_cluster_shared(s)
						 ? &sched_code_cluster
						 : &sched_code_local);
	/* Instances and workers are loaded by sched_start. */
out:
	rt_buf_free(&path);
	if (rc < 0) {
		sched_close(s);
		s = NULL;
	}
	*out = s;
	return rc;
}

int sched_open(struct sched **out, const char *datadir)
{
	struct store_config c = { 0 };

	return sched_open_config(out, datadir, NULL, &c);
}

void sched_close(struct sched *s)
{
	if (s == NULL)
		return;
	sched__tree_free(s);
	sched_cluster_close(s);
	free(s->datadir);
	free(s->pool_state.self);
	free(s->pool_state.log_path);
	free(s->links.sock_path);
	rt_idmap_free(&s->links.requests);
	rt_idmap_free(&s->index);
	rt_idmap_free(&s->calls_state.live);
	rt_idmap_free(&s->calls_state.scaled);
	rt_idmap_free(&s->calls_state.failing);
	free(s->calls_state.stats);
	sched__code_close(s);
	store_close(s->store);
	events_close(&s->journal.events);
	events_limit_free(&s->journal.limit);
	free(s);
}

/*
 * single.c - the role of a controller alone (an SQLite store): it always
 * acts (places, reconciles, runs the pool, admits workers), never
 * forwards, has no election to start or stop and tells nobody its
 * derived state.
 */
#include <assert.h>

#include "../internal.h"
#include "cluster_state.h"

/* Alone, none of the election's state is ever set. */
static void check_alone(const struct sched *s)
{
	assert(s->cluster->ops == &sched_cluster_single);
	assert(s->cluster->elect == NULL);
	assert(!s->cluster->leading && !s->cluster->taking &&
	       !s->cluster->holding);
	assert(s->cluster->term == 0);
	(void)s;
}

static int single_start(struct sched *s, const struct sched_options *opt)
{
	(void)opt;
	check_alone(s);
	return 0;
}

static void single_tick(struct sched *s)
{
	check_alone(s);
}

static int single_stop(struct sched *s)
{
	check_alone(s);
	return 0;
}

static void single_abort(struct sched *s)
{
	check_alone(s);
}

static int single_acting(const struct sched *s)
{
	(void)s;
	return 1;
}

static int single_publishes(const struct sched *s)
{
	(void)s;
	return 0;
}

static const char *single_role(const struct sched *s)
{
	(void)s;
	return "single";
}

static int64_t single_term(const struct sched *s)
{
	(void)s;
	return 0;
}

static void single_leader(const struct sched *s, const char **name,
			  const char **listen, const char **sock)
{
	(void)s;
	*name = *listen = *sock = NULL;
}

/* Alone, the journal is the controller's own: nothing to send. */
static int single_journal(struct sched *s, int64_t now, const char *tenant,
			  const char *kind, const char *object, const char *kvs)
{
	(void)s;
	(void)now;
	(void)tenant;
	(void)kind;
	(void)object;
	(void)kvs;
	return 0;
}

static void single_journal_nothing(struct sched *s)
{
	(void)s;
}

static int single_journal_flushed(const struct sched *s)
{
	(void)s;
	return 1;
}

/* Alone, the stats have no cluster's lines. */
static int single_render(struct sched *s, struct rt_buf *out)
{
	(void)s;
	(void)out;
	return 0;
}

const struct sched_cluster_ops sched_cluster_single = {
	.kind = "single",
	.start = single_start,
	.tick = single_tick,
	.stop = single_stop,
	.stopping = single_stop,
	.abort = single_abort,
	.acting = single_acting,
	.publishes = single_publishes,
	.role = single_role,
	.term = single_term,
	.leader = single_leader,
	.journal = single_journal,
	.journal_stop = single_journal_nothing,
	.journal_flush = single_journal_nothing,
	.journal_flushed = single_journal_flushed,
	.render = single_render,
	.shared = 0,
};

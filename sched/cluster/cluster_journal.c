/*
 * cluster_journal.c - a cluster's journal (cluster.h): on a cluster every
 * controller's events go to the cluster's journal in etcd (a client of
 * its own, etcd/journal_etcd.h) and come back into each controller's
 * journal through its watch (sched__journal_line). Alone there is none,
 * and the model's journal (model/journal.c) appends the lines itself.
 */
#include <assert.h>

#include "../internal.h"
#include "../store/etcd/etcd.h"
#include "../store/etcd/journal_etcd.h"
#include "../store/etcd/store_cluster.h"
#include "cluster_state.h"

int sched__cluster_journal_open(struct sched *s, struct uv_loop_s *loop,
				const struct store_config *c)
{
	struct etcd_config ec;

	assert(s->cluster != NULL && s->cluster->journal == NULL);
	if (s->cluster->ops != &sched_cluster_etcd)
		return 0;
	store_etcd_config(c, &ec);
	return journal_etcd_open(&s->cluster->journal, loop, &ec, c->cluster, 0,
				 &s->journal.events, sched__journal_line, s);
}

void sched__cluster_journal_close(struct sched *s)
{
	journal_etcd_close(s->cluster->journal);
	s->cluster->journal = NULL;
}

int sched__cluster_journal(struct sched *s, int64_t now, const char *tenant,
			   const char *kind, const char *object,
			   const char *kvs)
{
	struct rt_buf line = { 0 };

	if (s->cluster == NULL || s->cluster->journal == NULL)
		return 0;
	if (events_line(&line, now, kind, object, kvs) == 0)
		journal_etcd_send(s->cluster->journal, now, tenant, line.data,
				  line.len);
	else
		rt_log(RT_LOG_ERROR, "event lost (no memory): %s %s", kind,
		       object);
	rt_buf_free(&line);
	return 1;
}

void sched__cluster_journal_stop(struct sched *s)
{
	if (s->cluster != NULL)
		journal_etcd_stop(s->cluster->journal);
}

void sched__cluster_journal_flush(struct sched *s)
{
	if (s->cluster != NULL)
		journal_etcd_flush(s->cluster->journal);
}

int sched__cluster_journal_flushed(const struct sched *s)
{
	return s->cluster == NULL || journal_etcd_flushed(s->cluster->journal);
}

/*
 * cluster.c - the role of a controller, chosen once (cluster.h): its
 * state, the calls the rest of sched/ makes, passed to the role's table
 * (single.c alone, leader.c on a cluster), and what a cluster's
 * controller tells the others about itself (sched/cluster/etcd/presence.h):
 * its role and how far its tree follows etcd.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "../internal.h"
#include "cluster_state.h"
#include "etcd/presence.h"

int sched_cluster_open(struct sched *s)
{
	assert(s->cluster == NULL);
	s->cluster = calloc(1, sizeof(*s->cluster));
	if (s->cluster == NULL)
		return -ENOMEM;
	s->cluster->ops = store_shared(s->store) ? &sched_cluster_etcd
						 : &sched_cluster_single;
	s->role = s->cluster->ops; /* role.h's queries */
	return 0;
}

void sched_cluster_close(struct sched *s)
{
	if (s->cluster == NULL)
		return;
	sched__cluster_journal_close(s);
	free(s->cluster->name);
	free(s->cluster->leader_name);
	free(s->cluster->leader_listen);
	free(s->cluster->leader_sock);
	free(s->cluster);
	s->cluster = NULL;
	s->role = NULL;
}

/* The state's invariants, whatever the role: one role, chosen when the
 * store opened; a holding controller does not lead; a leader has a
 * term. */
static const struct sched_cluster *checked(const struct sched *s)
{
	const struct sched_cluster *c = s->cluster;

	assert(c != NULL);
	assert(c->ops == &sched_cluster_single ||
	       c->ops == &sched_cluster_etcd);
	assert((c->ops == &sched_cluster_etcd) == store_shared(s->store));
	assert(!(c->holding && c->leading));
	assert(!(c->taking && c->leading));
	return c;
}

int sched_cluster_start(struct sched *s, const struct sched_options *opt)
{
	return checked(s)->ops->start(s, opt);
}

void sched_cluster_tick(struct sched *s)
{
	checked(s)->ops->tick(s);
}

int sched_cluster_stop(struct sched *s)
{
	return checked(s)->ops->stop(s);
}

int sched_cluster_stopping(struct sched *s)
{
	return checked(s)->ops->stopping(s);
}

void sched_cluster_abort(struct sched *s)
{
	checked(s)->ops->abort(s);
}

int sched_cluster_state(struct sched *s, int64_t *revision, int *stale)
{
	int64_t since;
	int watching;
	const char *endpoint, *error;
	int rc;

	rc = store_shared_state(s->store, revision, &watching, &since,
				&endpoint, &error);
	if (rc == 0)
		*stale = !watching;
	return rc;
}

static const char *role_of(void *arg)
{
	return sched_role(arg);
}

static int state_of(void *arg, int64_t *revision, int *stale)
{
	return sched_cluster_state(arg, revision, stale);
}

void sched_presence_callbacks(struct sched *s, struct presence_callbacks *cb)
{
	cb->role = role_of;
	cb->state = state_of;
	cb->arg = s;
}

/* etcd_stale is 1 while the watch is down (the tree may be behind),
 * etcd_stale_ms how long it has been. */
int sched__cluster_render(struct sched *s, struct rt_buf *out)
{
	int64_t rev, since;
	int watching;
	const char *ep, *err;
	const char *leader = NULL, *addr = NULL;

	if (store_shared_state(s->store, &rev, &watching, &since, &ep, &err) <
	    0)
		return 0;
	sched_leader(s, &leader, &addr);
	return rt_buf_printf(out,
			     "etcd_revision %lld\netcd_stale %d\n"
			     "etcd_stale_ms %lld\netcd_leader_writes_pending "
			     "%zu\ncluster_role %s\ncluster_leader %s\n"
			     "cluster_term %lld\nloop_held_max_ms %lld\n",
			     (long long)rev, !watching,
			     (long long)(watching ? 0 : rt_now_ms() - since),
			     store_mirror_pending(s->store), sched_role(s),
			     leader ? leader : "-",
			     (long long)sched_cluster_term(s),
			     (long long)s->held_max_ms);
}

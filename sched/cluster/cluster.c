/*
 * cluster.c - what a cluster's controller tells the others about itself
 * (sched/cluster/etcd/presence.h): its role and how far its tree follows etcd.
 */
#include <errno.h>

#include "../internal.h"
#include "etcd/presence.h"

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

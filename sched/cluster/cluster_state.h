/*
 * cluster_state.h - the state the cluster module owns (struct
 * sched_cluster, reached as s->cluster): only sched/cluster/ reads it.
 */
#ifndef FNFS_SCHED_CLUSTER_STATE_H
#define FNFS_SCHED_CLUSTER_STATE_H

#include <stdint.h>

#include "cluster.h"

struct elect;
struct sched_fwd_state; /* forward.c */
struct presence;	/* etcd/presence.h */
struct journal_etcd;	/* store/etcd/journal_etcd.h */

struct sched_cluster {
	const struct sched_cluster_ops *ops; /* the role, chosen once */
	/* A cluster's controller (leader.c): NULL / 0 alone. */
	struct elect *elect; /* its elector, owned */
	int leading;	     /* it acts as the leader: places, runs workers */
	int taking;	     /* it won, and waits for its model to catch up */
	int holding; /* led, lost etcd: keeps its workers, places nothing */
	int elect_stopped;    /* the elector's stop has been answered */
	char *name;	      /* --name, owned */
	char *leader_name;    /* the leader's, owned, or NULL: none known */
	char *leader_listen;  /* its --listen IP:PORT, owned, or NULL */
	char *leader_sock;    /* its control socket's path, owned, or NULL */
	int64_t leader_since; /* rt_now_ms this controller began to lead */
	int64_t term; /* the creation revision of its election key when it
			 last took office (0: never led); only grows */
	struct sched_fwd_state *fwd; /* forwarding (forward.c), or NULL */
	struct presence *presence;   /* its key in etcd (join.c), owned, or
					NULL */
	/* The cluster's journal in etcd (cluster_journal.c), owned; NULL
	 * alone. */
	struct journal_etcd *journal;
};

#endif

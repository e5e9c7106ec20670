/*
 * leader.h - a cluster's controller: the election, taking office and
 * stepping down, and following the leader's derived state (leader.c).
 * Its role's table is sched_cluster_etcd (cluster.h).
 */
#ifndef FNFS_SCHED_LEADER_H
#define FNFS_SCHED_LEADER_H

#include "../internal.h"

struct etcd_keys_rec;

/* How long a worker's attempt to reach a controller that does not
 * answer may take (its connect timeout), counted in the recovery window
 * of a new leader. */
#define SCHED_LEADER_CONNECT_MS 5000

/* The leader's lease when --leader-ttl is not given, seconds. */
#define SCHED_LEADER_TTL_S 5

/* The store's derived listener (store_derived_listen): a follower's
 * model follows what the leader writes. */
void sched__leader_derived(void *arg, const struct etcd_keys_rec *r,
			   int deleted);

#endif

/*
 * etcd_cluster.h - a real etcd cluster for unit tests: N members of
 * Debian's etcd-server on free loopback ports, their data in a new
 * directory under /var/tmp, started by the test and killed by pid at its
 * end (each also dies with the test's process: PR_SET_PDEATHSIG; and the
 * runner's time limit, SIGALRM, kills them and removes the directory).
 */
#ifndef FNFS_UNIT_ETCD_CLUSTER_H
#define FNFS_UNIT_ETCD_CLUSTER_H

#include <sys/types.h>

#define ETCD_CLUSTER_MAX 5

struct etcd_cluster {
	int n;				       /* members */
	pid_t pid[ETCD_CLUSTER_MAX];	       /* each member's, 0 when down */
	char client[ETCD_CLUSTER_MAX][40];     /* http://127.0.0.1:PORT */
	char peer[ETCD_CLUSTER_MAX][40];       /* its peer URL */
	char endpoints[ETCD_CLUSTER_MAX * 40]; /* the client URLs, "a,b,c" */
	char dir[64]; /* the data directories' parent, ours */
};

/* Starts `n` members as one new cluster and waits (at most `wait_ms`)
 * until each says it is healthy (it has a leader and a quorum). Returns 0
 * or -errno; on failure the caller still calls etcd_cluster_stop. */
int etcd_cluster_start(struct etcd_cluster *k, int n, int wait_ms);

/* Kills every member by pid, waits for them, removes the directory. */
void etcd_cluster_stop(struct etcd_cluster *k);

#endif

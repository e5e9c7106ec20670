/*
 * leader.h - a cluster's controller: the election, taking office and
 * stepping down, and following the leader's derived state (leader.c).
 * With SQLite none of it runs and sched__acting is always 1.
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

/* Starts campaigning (a shared store only), with the value
 * {"name","listen","sock"} that tells the others and the workers where
 * this controller is. Returns 0 or -errno (logged). */
int sched__leader_start(struct sched *s, const struct sched_options *opt);

/* Once a second: takes office after a catch-up that failed, and steps
 * down when the lease may have expired. */
void sched__leader_tick(struct sched *s);

/* At shutdown: resigns (the next leader need not wait for the lease),
 * then stops the store. Returns 1 while that is under way (s->elect is
 * NULL once it is over), 0 when there was nothing to stop. */
int sched__leader_stop(struct sched *s);

/* Called on the loop's turns while shutting down: once the resignation
 * has been answered, frees the elector and stops the store. Returns 1
 * while it waits, 0 when done (or there was nothing). */
int sched__leader_stopping(struct sched *s);

/* Frees the elector at once (an unfinished stop) and stops the store. */
void sched__leader_free(struct sched *s);

/* Frees the names leader.c keeps. */
void sched__leader_close(struct sched *s);

/* Whether this controller places, reconciles, runs the pool and admits
 * workers: always with SQLite; on a cluster, only the leader. */
int sched__acting(const struct sched *s);

/* The leader's address for a worker that came over TCP (`tcp` 1: its
 * --listen IP:PORT) or over a Unix socket (its ctl.sock), or NULL. */
const char *sched__leader_addr(const struct sched *s, int tcp);

/* The store's derived listener (store_derived_listen): a follower's
 * model follows what the leader writes. */
void sched__leader_derived(void *arg, const struct etcd_keys_rec *r,
			   int deleted);

#endif

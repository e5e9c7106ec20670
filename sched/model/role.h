/*
 * role.h - the controller's role as the rest of sched/ asks it: whether
 * it acts, shares its model, publishes, and who leads. The role is a
 * table (struct sched_cluster_ops) the cluster module chooses once when
 * the store opens (cluster.h: single.c alone, leader.c on a cluster) and
 * sets in s->role; these queries go through that table, so the layers
 * below the cluster module ask it without calling into it (as redis's
 * ae.c calls its chosen backend).
 */
#ifndef FNFS_SCHED_ROLE_H
#define FNFS_SCHED_ROLE_H

#include <stdint.h>

struct rt_buf;
struct sched;
struct sched_options;

/* What a role does; one table per kind of controller. */
struct sched_cluster_ops {
	const char *kind; /* "single", "etcd" */
	/* After sched_start's own setup: campaign (a cluster). 0 or -errno. */
	int (*start)(struct sched *s, const struct sched_options *opt);
	/* Once a second. */
	void (*tick)(struct sched *s);
	/* Shutdown: 1 while a resignation is under way, 0 when none. */
	int (*stop)(struct sched *s);
	/* Each turn while shutting down: 1 while it waits, 0 when done. */
	int (*stopping)(struct sched *s);
	/* An unfinished stop: frees the elector at once. */
	void (*abort)(struct sched *s);
	/* Places, reconciles, runs the pool and admits workers. */
	int (*acting)(const struct sched *s);
	/* Leads a cluster: tells the others its derived state. */
	int (*publishes)(const struct sched *s);
	/* The word of sched_role. */
	const char *(*role)(const struct sched *s);
	/* The term it last took office in (0: never led, or alone). */
	int64_t (*term)(const struct sched *s);
	/* The leader's --name, --listen and control socket, each NULL when
	 * not known (always alone). */
	void (*leader)(const struct sched *s, const char **name,
		       const char **listen, const char **sock);
	/* The cluster's journal (cluster_journal.c): sends an event of
	 * time `now` and tenant `tenant` (NULL: none), which its watch
	 * brings back, and returns 1; 0 alone (the caller appends it). Its
	 * stop, its flush (send what it holds at once from now on), and
	 * whether nothing is left to send that it can (1 alone). */
	int (*journal)(struct sched *s, int64_t now, const char *tenant,
		       const char *kind, const char *object, const char *kvs);
	void (*journal_stop)(struct sched *s);
	void (*journal_flush)(struct sched *s);
	int (*journal_flushed)(const struct sched *s);
	/* Appends to `out` (the controller's stats) the lines of a
	 * cluster's controller: how far its tree follows the shared store,
	 * its role, its leader and term. Nothing alone. 0 or -ENOMEM. */
	int (*render)(struct sched *s, struct rt_buf *out);
	int shared; /* other controllers share its model (a cluster) */
};

/* Whether this controller places, reconciles, runs the pool and admits
 * workers: always alone; on a cluster, only the leader. */
int sched__acting(const struct sched *s);

/* Whether other controllers share this one's model (a cluster): changes
 * come back through the store's watch, and what only the leader knows is
 * shown as the leader tells it. 0 alone. */
int sched_cluster_shared(const struct sched *s);

/* Whether it leads a cluster, and so writes its derived state
 * (instances, workers, code) for the others. 0 alone. */
int sched_cluster_publishes(const struct sched *s);

/* The term it last took office in (the election key's creation
 * revision), 0 if it never led or is alone. */
int64_t sched_cluster_term(const struct sched *s);

/* The leader's --name, or NULL (none known, or alone). */
const char *sched_cluster_leader_name(const struct sched *s);

/* The leader's address for a worker that came over TCP (`tcp` 1: its
 * --listen IP:PORT) or over a Unix socket (its ctl.sock), or NULL. */
const char *sched__leader_addr(const struct sched *s, int tcp);

/* The role's lines of the controller's stats (see the table's render). */
int sched__role_render(struct sched *s, struct rt_buf *out);

/* sched_role and sched_leader, the public two, are in sched.h. */

#endif

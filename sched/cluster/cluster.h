/*
 * cluster.h - the controller's role, chosen once when its store opens:
 * alone (single.c: it always acts, never forwards, tells nobody) or one
 * controller of a cluster sharing an etcd store (leader.c: elected,
 * taking office, stepping down, following the leader). The rest of
 * sched/ asks role.h's queries (through the chosen table), never the
 * store or the election, whether it leads, holds, forwards or shares its
 * model; the daemon's start, tick and stop call the functions below.
 * Everything runs on the loop.
 */
#ifndef FNFS_SCHED_CLUSTER_H
#define FNFS_SCHED_CLUSTER_H

#include <stdint.h>

#include "../model/role.h"

struct sched;
struct sched_options;

/* The two roles: alone (single.c) and a cluster's controller (leader.c). */
extern const struct sched_cluster_ops sched_cluster_single;
extern const struct sched_cluster_ops sched_cluster_etcd;

/* Chooses the role of `s` once its store is open (an etcd store: a
 * cluster's controller) and makes its state (s->cluster). Returns 0 or
 * -ENOMEM. */
int sched_cluster_open(struct sched *s);

/* Frees what sched_cluster_open made (NULL-safe; s->cluster may be NULL). */
void sched_cluster_close(struct sched *s);

/* The role's start, tick, stop, stopping and abort (see the ops). */
int sched_cluster_start(struct sched *s, const struct sched_options *opt);
void sched_cluster_tick(struct sched *s);
int sched_cluster_stop(struct sched *s);
int sched_cluster_stopping(struct sched *s);
void sched_cluster_abort(struct sched *s);

/* A cluster's controller's lines of the stats (the role's render). */
int sched__cluster_render(struct sched *s, struct rt_buf *out);

/* ---- a cluster's journal (cluster_journal.c) */

struct store_config;
struct uv_loop_s;

/* Opens the cluster's journal of store `c` (a cluster's controller,
 * after sched_cluster_open and the store's listener): 0 alone, else 0 or
 * -errno as journal_etcd_open. */
int sched__cluster_journal_open(struct sched *s, struct uv_loop_s *loop,
				const struct store_config *c);

/* Closes it (sched_cluster_close). */
void sched__cluster_journal_close(struct sched *s);

/* Sends the event `kind` `object` `kvs` of time `now` and tenant `tenant`
 * (NULL: none) to the cluster's journal, whence its watch brings it back
 * into the controller's: 1. Alone: 0, and the caller appends it. */
int sched__cluster_journal(struct sched *s, int64_t now, const char *tenant,
			   const char *kind, const char *object,
			   const char *kvs);

/* A shutdown's journal: stop it, send what is queued now, and whether
 * nothing is left to wait for (1 alone). */
void sched__cluster_journal_stop(struct sched *s);
void sched__cluster_journal_flush(struct sched *s);
int sched__cluster_journal_flushed(const struct sched *s);

/* Joining, leaving and `fnfs cluster status` are in sched.h. */

#endif

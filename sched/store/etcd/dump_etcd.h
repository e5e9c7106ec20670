/*
 * dump_etcd.h - `fnfs store import|export --store etcd://...`: a dump
 * (dump.h) into a cluster's keys in etcd (etcd_keys.h) and back, to move
 * a single-machine fnfs into a cluster of controllers.
 *
 * Import checks the whole dump exactly as an import into a data directory
 * does (it is one, in a temporary directory), so a dump refused there is
 * refused here with the same reason, before anything is written to etcd.
 * It then writes, in transactions within etcd's default limits (128
 * operations, 1.5 MiB a request): every object's chunks and its P/om,
 * then every row, then P/meta last. Every transaction also asks that
 * P/meta is still absent, so two imports never mix. A cluster that has
 * P/meta is never written to (-EEXIST); keys under P/ without P/meta are
 * what an import that did not finish leaves: they are kept (-EEXIST)
 * unless `force`, which deletes them and imports again.
 *
 * Export reads every key of the cluster at one revision (pages of a
 * range, all at the revision of the first), rebuilds a data directory in
 * a temporary directory and writes its dump: the same document as
 * `fnfs store export --data`, so export(import(D)) has D's tables and
 * objects.
 */
#ifndef FNFS_SCHED_DUMP_ETCD_H
#define FNFS_SCHED_DUMP_ETCD_H

#include <stdio.h>

#include "../../../runtime/base/rt.h"
#include "etcd.h"

/* Where a cluster's state is in etcd. */
struct sched_dump_etcd {
	struct etcd_config etcd; /* endpoints, TLS, timeout_ms (0: 5000) */
	const char *cluster;	 /* its name: keys under /fnfs/CLUSTER/ */
	int force;		 /* import: wipe a partial import first */
};

/* Imports the dump read from `in` into cluster `t`. Returns 0 or -errno
 * with the reason in `why`: what sched_dump_import returns for the dump
 * (-EINVAL, -EPROTO, ...), -EEXIST (the cluster has keys), -ETIMEDOUT,
 * -EAGAIN (no quorum), -EIO (etcd unreachable) and the client's other
 * errors (etcd.h). */
int sched_dump_etcd_import(const struct sched_dump_etcd *t, FILE *in,
			   struct rt_buf *why);

/* Writes the dump of cluster `t` to `out`. Returns 0 or -errno with the
 * reason in `why`: -ENOENT (no such cluster), -EPROTO (an import that did
 * not finish, another layout version), -EINVAL (a key outside the layout
 * or a damaged object), -ERANGE (the revision was compacted during the
 * read: export again), and the client's errors. */
int sched_dump_etcd_export(const struct sched_dump_etcd *t, FILE *out,
			   struct rt_buf *why);

#endif

/*
 * cluster_status.h - `fnfs cluster status --store etcd://... --cluster
 * NAME`: the leader, etcd's revision now and one row per controller, as
 * the controllers' keys (P/ctl/NAME, presence.h) and the election
 * (P/leader/..., elect.h) in etcd say, read with the blocking client
 * (etcd_sync.h: each request bounded), then each given endpoint asked
 * alone whether it answers with a quorum.
 *
 * The read (cluster_status_read) and the rendering (cluster_status_render,
 * pure, unit-tested) are apart.
 */
#ifndef FNFS_SCHED_CLUSTER_STATUS_H
#define FNFS_SCHED_CLUSTER_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "../../../runtime/base/rt.h"
#include "../../store/etcd/etcd.h"
#include "presence.h"

/* How long an endpoint's own probe may take (ms). */
#define CLUSTER_PROBE_MS 2000

/* One controller's row. */
struct cluster_member {
	char *key; /* its key (owned) */
	int valid; /* the value decoded into `v` */
	struct presence_value v;
	int64_t mod_revision; /* of its key */
	int64_t lag;	      /* revisions of the cluster it has not seen */
};

/* One endpoint of --store, asked alone. */
struct cluster_endpoint {
	char *endpoint;	  /* as given (owned) */
	int ok;		  /* it answered a linearizable read */
	int64_t revision; /* its revision then */
	char *error;	  /* why not (owned), or NULL */
};

/* What `fnfs cluster status` shows. */
struct cluster_status {
	char *cluster;	    /* owned */
	int64_t revision;   /* etcd's revision now */
	int64_t now_ms;	    /* the local clock when it was read */
	char *leader;	    /* the leader's value "NAME ADDR..." (owned), or
			       NULL: nobody leads */
	int64_t leader_rev; /* the creation revision of its key */
	struct cluster_member *members; /* by name */
	size_t nmembers;
	struct cluster_endpoint *endpoints;
	size_t nendpoints;
	/* the mod_revisions of the members' and the election's keys now:
	 * writes that are no news of the cluster's state (for the lag) */
	int64_t *own_revs;
	size_t nown_revs;
};

/* Frees what `st` holds; the struct is zeroed. */
void cluster_status_free(struct cluster_status *st);

/* Reads cluster `cluster`'s status from the etcd of `cfg` into `st`:
 * the election and the controllers' keys (each request bounded by the
 * client's timeout, 5 s by default), then, when `probe`, each endpoint
 * alone (CLUSTER_PROBE_MS each). Returns 0, or -errno with the reason in
 * `why` (-EINVAL: a bad cluster name or endpoints; etcd's -EIO,
 * -ETIMEDOUT, -EAGAIN: it cannot be read). */
int cluster_status_read(const struct etcd_config *cfg, const char *cluster,
			int probe, struct cluster_status *st,
			struct rt_buf *why);

/* Fills each member's lag from st->revision: the revisions after the one
 * it has seen, but those of the members' and the election's keys as they
 * are now (their writes are no news of the cluster's state; an older
 * write of such a key that was since overwritten or deleted still
 * counts). Sorts the members by name. Pure. */
void cluster_status_lag(struct cluster_status *st);

/* Renders `st` into `out`: a table for people, or (`json`) one JSON
 * object. Pure. Returns 0 or -ENOMEM. */
int cluster_status_render(const struct cluster_status *st, int json,
			  struct rt_buf *out);

#endif

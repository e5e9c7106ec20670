/*
 * store_cluster.h - what a cluster's code (sched/cluster/, the code/ of a
 * cluster) asks of a shared store beyond store.h: the etcd client, the
 * leader's fenced writes and the listeners of etcd's records. The rest of
 * sched/ knows only store.h. On a SQLite store these are no-ops.
 */
#ifndef FNFS_SCHED_STORE_CLUSTER_H
#define FNFS_SCHED_STORE_CLUSTER_H

#include <stdint.h>

#include "../store.h"

struct etcd_cmp;
struct etcd_config;
struct etcd_client;
struct etcd_keys_rec;
struct uv_loop_s;

/* The etcd client's configuration of shared store `c`
 * (store_config_check: 1): its endpoints and TLS files. */
void store_etcd_config(const struct store_config *c, struct etcd_config *out);

/* Opens the database at `path` as store_open, for what this controller
 * keeps alone, and the cluster `cluster` of the etcd of `cfg` for the
 * tenants, namespaces and functions, which every controller of the
 * cluster shares (store_etcd.h): read before this returns (running
 * `loop`), then followed on `loop`. Returns 0 or -errno (-EINVAL for a
 * bad cluster name or endpoint, -EIO/-ETIMEDOUT when etcd cannot be
 * read). store_open_config calls it for an "etcd://" url. */
int store_open_shared(struct store **out, const char *path,
		      struct uv_loop_s *loop, const struct etcd_config *cfg,
		      const char *cluster);

/* Called, on a shared store, for each change of the derived state that
 * the cluster's leader writes (instances, workers, settings,
 * revocations) and that this controller did not write itself, after the
 * local tables have it: `r` as etcd_keys decoded it, `deleted` 1 when it
 * went. */
typedef void (*store_derived_fn)(void *arg, const struct etcd_keys_rec *r,
				 int deleted);

/* Sets that listener (one; NULL: none), and tells it at once of every
 * instance the shared store knows. */
void store_derived_listen(struct store *st, store_derived_fn fn, void *arg);

/* From now on, a shared store also writes every change of derived state
 * (store_instance_*, store_worker_*, store_setting_*, store_revoke) to
 * etcd once its transaction commits, fenced by what `fence` gives (the
 * leader's compare, elect_fence: 0 or -ESTALE); a fence that fails calls
 * `deposed` once and ends it (store_etcd.h). Each instance it writes says
 * `term` (> 0: the creation revision the fence compares), so that etcd's
 * history tells which leader wrote it. A no-op with SQLite. */
void store_mirror_start(struct store *st,
			int (*fence)(void *arg, struct etcd_cmp *out),
			void (*deposed)(void *arg), void *arg, int64_t term);

/* The etcd client of a shared store, or NULL. */
struct etcd_client *store_client(struct store *st);

/* Called, on a shared store, for each change of code/ that etcd brings
 * (an entry, a revision, an object made whole), this controller's own
 * included: `r` as decoded, `deleted` 1 when its key went. */
typedef void (*store_code_fn)(void *arg, const struct etcd_keys_rec *r,
			      int deleted);

/* Sets that listener (one; NULL: none). */
void store_code_listen(struct store *st, store_code_fn fn, void *arg);

#endif

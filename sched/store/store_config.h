/*
 * store_config.h - where a controller's store is, as the command line
 * says it (--data, --store, --cluster and the TLS files), and the checks
 * and the dump every subcommand shares. It names no backend's types:
 * sched.h shows it to fs/, store.h to the store.
 */
#ifndef FNFS_SCHED_STORE_CONFIG_H
#define FNFS_SCHED_STORE_CONFIG_H

#include <stdio.h>

#include "../../runtime/base/rt.h"

/* Where a store is: the backend is chosen from `url`, once, at open. */
struct store_config {
	const char *path;    /* the database of what this controller keeps
			      * alone (store_open); for export and import
			      * (sched_store_export) a data directory */
	const char *url;     /* NULL or "sqlite": that database alone;
			      * "etcd://HOST:PORT,...": shared with the
			      * controllers of `cluster` */
	const char *cluster; /* a shared store's cluster name */
	const char *ca, *cert, *key; /* a shared store's TLS files, or NULL */
	int force; /* import into a shared store: wipe a partial import */
};

/* Checks the url, cluster and TLS files of `c` (not its path or force):
 * a url this fnfs knows; a shared one with a cluster (whose name the
 * store checks when it opens: rt_name_valid); the
 * cluster and TLS files only with a shared url; the certificate and key
 * together. Returns 0 (the database alone), 1 (a shared store) or
 * -EINVAL with the reason, in the command line's words, in `*why`. */
int store_config_check(const struct store_config *c, const char **why);

/* Whether `c` is a description the dump takes (sched_store_export): a
 * data directory alone, or a shared store (store_config_check) without
 * a path; force only with a shared store. Returns 1 or 0. */
int store_config_valid(const struct store_config *c);

/* `fnfs store export`: writes the dump of the store `c` describes
 * (store_config_valid; c->path: a data directory) to `out`: the data
 * directory's (dump.h) or a shared store's own. Returns 0 or -errno with
 * the reason in `why`, as those say. */
int sched_store_export(const struct store_config *c, FILE *out,
		       struct rt_buf *why);

/* `fnfs store import`: reads a dump from `in` into the store `c`
 * describes, the data directory's import (dump.h) or a shared store's
 * own. Returns 0 or -errno with the reason in `why`, as those say. */
int sched_store_import(const struct store_config *c, FILE *in,
		       struct rt_buf *why);

#endif

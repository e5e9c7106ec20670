/*
 * dump_pick.c - `fnfs store export|import` (dump.h): the dump of the
 * store a configuration describes, SQLite's (dump.c) or a shared store's
 * (etcd/dump_etcd.c), chosen by its url as store_open_config chooses.
 */
#include <assert.h>
#include <string.h>

#include "dump.h"
#include "etcd/dump_etcd.h"
#include "etcd/etcd.h"
#include "etcd/store_cluster.h"

/* The shared store `c` describes, as its dump wants it. */
static void shared_of(const struct store_config *c, struct sched_dump_etcd *t)
{
	memset(t, 0, sizeof(*t));
	store_etcd_config(c, &t->etcd);
	t->cluster = c->cluster;
	t->force = c->force;
}

int sched_store_export(const struct store_config *c, FILE *out,
		       struct rt_buf *why)
{
	struct sched_dump_etcd t;

	if (c->url == NULL)
		return sched_dump_export(c->path, out, why);
	shared_of(c, &t);
	return sched_dump_etcd_export(&t, out, why);
}

int sched_store_import(const struct store_config *c, FILE *in,
		       struct rt_buf *why)
{
	struct sched_dump_etcd t;

	if (c->url == NULL)
		return sched_dump_import(c->path, in, why);
	shared_of(c, &t);
	return sched_dump_etcd_import(&t, in, why);
}

/*
 * owners.h - what a tenant holds beyond a node of the tree: its Unix
 * owner, group and mode, and its part of the event journal. Private to
 * sched/.
 */
#ifndef FNFS_SCHED_OWNERS_H
#define FNFS_SCHED_OWNERS_H

#include "events.h"
#include "quota.h"
#include "../sched.h"

/* A tenant: a tree node with an owner. */
struct sched_tenant {
	struct sched_obj obj;	   /* first, so a pointer converts both ways */
	struct sched_owner owner;  /* persisted */
	struct events_part events; /* its lines of the journal */
	struct sched_quota quota;  /* its quotas and use (quota.h) */
	struct events_limit limit; /* its refusals held back */
};

/* The tenant `o` belongs to, or NULL outside the tenants. */
struct sched_tenant *sched__tenant_of(const struct sched_obj *o);

#endif

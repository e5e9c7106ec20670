/*
 * owners.c - who may do what: the Unix permission check of a caller
 * against an owner, a group and a mode, and the walk from any node up
 * to its tenant.
 */
#include "owners.h"

int sched_caller_is_root(const struct sched_caller *who)
{
	return who == NULL || who->uid == 0;
}

/* Whether `who` is in group `gid`, primary or supplementary. */
static int in_group(const struct sched_caller *who, uint32_t gid)
{
	int i;

	if (who->gid == gid)
		return 1;
	for (i = 0; i < who->ngroups; i++)
		if (who->groups[i] == gid)
			return 1;
	return 0;
}

int sched_caller_may(const struct sched_caller *who, uint32_t uid, uint32_t gid,
		     uint32_t mode, int mask)
{
	uint32_t bits;

	mask &= 7;
	if (sched_caller_is_root(who))
		return 1;
	if (who->uid == uid)
		bits = mode >> 6;
	else if (in_group(who, gid))
		bits = mode >> 3;
	else
		bits = mode;
	return ((uint32_t)mask & ~bits & 7) == 0;
}

struct sched_tenant *sched__tenant_of(const struct sched_obj *o)
{
	while (o != NULL && o->type != SCHED_TENANT) {
		if (o->type == SCHED_ROOT || o->type == SCHED_POOL ||
		    o->type == SCHED_WORKER)
			return NULL;
		o = o->parent;
	}
	return (struct sched_tenant *)o;
}

const struct sched_obj *sched_tenant_of(const struct sched_obj *o)
{
	struct sched_tenant *t = sched__tenant_of(o);

	return t ? &t->obj : NULL;
}

/*
 * role.c - the role's queries (role.h), through the table the cluster
 * module chose once (s->role).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>

#include "../internal.h"

static const struct sched_cluster_ops *role_of(const struct sched *s)
{
	assert(s->role != NULL);
	assert(s->role->acting != NULL && s->role->leader != NULL &&
	       s->role->journal != NULL);
	return s->role;
}

int sched__acting(const struct sched *s)
{
	return role_of(s)->acting(s);
}

int sched_cluster_shared(const struct sched *s)
{
	/* cluster check: the role's own answer, read from its table. */
	return role_of(s)->shared;
}

int sched_cluster_publishes(const struct sched *s)
{
	/* Only a cluster's controller tells others its derived state.
	 * cluster check: the role's own table, asserted. */
	assert(!role_of(s)->publishes(s) || role_of(s)->shared);
	return role_of(s)->publishes(s);
}

int64_t sched_cluster_term(const struct sched *s)
{
	return role_of(s)->term(s);
}

const char *sched_role(const struct sched *s)
{
	return role_of(s)->role(s);
}

int sched_leader(const struct sched *s, const char **name, const char **listen)
{
	const char *sock;

	role_of(s)->leader(s, name, listen, &sock);
	return *name == NULL ? -ENOENT : 0;
}

const char *sched_cluster_leader_name(const struct sched *s)
{
	const char *name, *listen, *sock;

	role_of(s)->leader(s, &name, &listen, &sock);
	return name;
}

const char *sched__leader_addr(const struct sched *s, int tcp)
{
	const char *name, *listen, *sock;

	role_of(s)->leader(s, &name, &listen, &sock);
	return tcp ? listen : sock;
}

int sched__role_render(struct sched *s, struct rt_buf *out)
{
	return role_of(s)->render(s, out);
}

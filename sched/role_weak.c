/*
 * role_weak.c - TEMPORARY stand-ins for sched_role and sched_leader,
 * which leader election (sched/leader.c) defines; weak, so that its
 * definitions win once it lands, when this file goes.
 */
#include <errno.h>

#include "sched.h"

/* Stand-in: no election runs, this controller is alone. */
__attribute__((weak)) const char *sched_role(const struct sched *s)
{
	(void)s;
	return "single";
}

/* Stand-in: no leader is known. */
__attribute__((weak)) int sched_leader(const struct sched *s, const char **name,
				       const char **listen)
{
	(void)s;
	*name = NULL;
	*listen = NULL;
	return -ENOENT;
}

/*
 * caller.c - who sends a request, and whether it may do what it asks:
 * the Unix check of fs_node_owner's owner, group and mode, as the kernel
 * makes it with default_permissions, made here again so that nothing
 * depends on the mount options alone.
 */
#include <stdlib.h>
#include <string.h>

#include "fs.h"

void fs_caller_init(struct fs_caller *c, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(c, 0, sizeof(*c));
	c->who.uid = ctx->uid;
	c->who.gid = ctx->gid;
	c->req = req;
}

const struct sched_caller *fs_caller_full(struct fs_caller *c)
{
	gid_t small[32], *list = small;
	int n, i;

	if (c->have_groups || c->req == NULL || c->who.uid == 0)
		return &c->who;
	c->have_groups = 1;
	/* Read from /proc/PID/task/TID/status by libfuse: a short file read,
	 * done only for a caller whose groups decide something. */
	n = fuse_req_getgroups(c->req, 32, small);
	if (n > 32) {
		list = malloc((size_t)n * sizeof(*list));
		if (list == NULL)
			return &c->who; /* no groups: fewer rights, never more
					 */
		n = fuse_req_getgroups(c->req, n, list);
	}
	if (n > 0) {
		c->groups = malloc((size_t)n * sizeof(*c->groups));
		for (i = 0; c->groups != NULL && i < n; i++)
			c->groups[i] = (uint32_t)list[i];
		if (c->groups != NULL) {
			c->who.groups = c->groups;
			c->who.ngroups = n;
		}
	}
	if (list != small)
		free(list);
	return &c->who;
}

void fs_caller_done(struct fs_caller *c)
{
	free(c->groups);
	c->groups = NULL;
	c->who.groups = NULL;
	c->who.ngroups = 0;
	c->have_groups = 0;
}

int fs_may(struct fs *fs, struct fs_caller *c, const struct fs_node *n,
	   int mask)
{
	uid_t uid;
	gid_t gid;
	mode_t mode;
	int as_group, as_other;

	if (c->who.uid == 0)
		return 1;
	fs_node_owner(fs, n, &uid, &gid, &mode);
	if (c->who.uid == uid || c->who.gid == gid || c->have_groups)
		return sched_caller_may(&c->who, uid, gid, mode, mask);
	/* Membership of the group matters only when the group's bits and
	 * the others' give different answers. */
	as_group = ((unsigned)mask & ~(mode >> 3) & 7) == 0;
	as_other = ((unsigned)mask & ~mode & 7) == 0;
	if (as_group == as_other)
		return as_other;
	return sched_caller_may(fs_caller_full(c), uid, gid, mode, mask);
}

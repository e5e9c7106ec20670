/*
 * forward_target.c - where a follower forwards (forward.h): the leader
 * the election names, or a fixed one (tests, workers' followers), its
 * certificate's role, and the `error` of the function a forwarded path
 * is in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "forward_state.h"
#include "cluster_state.h"

/* The leader to forward to: its name and address. Returns 0, or
 * -EAGAIN with the reason in `why`. */
int sched__fwd_leader_target(struct sched_fwd_state *st, const char **name,
			     const char **addr, struct rt_buf *why)
{
	if (st->fixed_addr != NULL) {
		*name = st->fixed_name;
		*addr = st->fixed_addr;
		return 0;
	}
	if (sched_leader(st->s, name, addr) < 0 || *name == NULL) {
		rt_buf_printf(why,
			      "no leader is known (this controller is %s): "
			      "try again once one is elected",
			      sched_role(st->s));
		return -EAGAIN;
	}
	if (strcmp(*name, st->name) == 0) {
		rt_buf_printf(why,
			      "this controller is taking over as the leader "
			      "(it is %s): try again",
			      sched_role(st->s));
		return -EAGAIN;
	}
	/* An address may come as a URL (tls://IP:PORT). */
	if (*addr != NULL && strstr(*addr, "://") != NULL)
		*addr = strstr(*addr, "://") + 3;
	if (*addr == NULL || (*addr)[0] == '\0') {
		rt_buf_printf(why,
			      "the leader %s has no --listen address: a "
			      "follower cannot forward to it",
			      *name);
		return -EAGAIN;
	}
	return 0;
}

int sched_fwd_active(const struct sched *s)
{
	const char *role;

	if (s->cluster->fwd == NULL)
		return 0;
	if (s->cluster->fwd->fixed_addr != NULL)
		return 1;
	role = sched_role(s);
	return strcmp(role, "single") != 0 && strcmp(role, "leader") != 0;
}

void sched__fwd_target(struct sched *s, const char *name, const char *addr)
{
	struct sched_fwd_state *st = s->cluster->fwd;

	if (st == NULL)
		return;
	free(st->fixed_name);
	free(st->fixed_addr);
	st->fixed_name = name ? strdup(name) : NULL;
	st->fixed_addr = addr ? strdup(addr) : NULL;
}

void sched__fwd_cert_role(struct sched *s, const char *role, const char *hello)
{
	if (s->cluster->fwd == NULL)
		return;
	snprintf(s->cluster->fwd->cert_role, sizeof(s->cluster->fwd->cert_role),
		 "%s", role);
	snprintf(s->cluster->fwd->hello, sizeof(s->cluster->fwd->hello), "%s",
		 hello);
}

const char *sched__fwd_last_error(const struct sched *s)
{
	return s->cluster->fwd != NULL ? s->cluster->fwd->last_error : "";
}

struct sched_function *sched_fwd_function_of(struct sched *s, const char *path)
{
	struct sched_obj *o = &s->root;
	char part[64];
	const char *p = path, *e;
	size_t n;
	int i;

	if (strncmp(p, "tenants/", 8) != 0)
		return NULL;
	p += 8;
	for (i = 0; i < 3; i++) {
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || n >= sizeof(part))
			return NULL;
		memcpy(part, p, n);
		part[n] = '\0';
		o = sched_child(o, part);
		if (o == NULL)
			return NULL;
		if (e == NULL)
			break;
		p = e + 1;
	}
	return o->type == SCHED_FUNCTION ? (struct sched_function *)o : NULL;
}

/* Sets the `error` of the function `path` is in to `line`, as it is (a
 * line of the leader, with its time), or to `reason` with the time now. */
void sched__fwd_set_error(struct sched *s, const char *path, const char *line,
			  const char *reason)
{
	struct sched_function *fn = sched_fwd_function_of(s, path);
	char *copy;

	if (fn == NULL)
		return;
	if (line != NULL && line[0]) {
		copy = strdup(line);
		if (copy != NULL) {
			free(fn->error);
			fn->error = copy;
		}
	} else if (reason != NULL) {
		sched__set_error(fn, reason);
	}
}

/*
 * forward_serve.c - the leader's side of forwarding (forward.h): conn.c
 * hands `peer` and the messages of a peer controller to the callbacks
 * below (struct sched_peer_ops), which pass each request to fs/ (struct
 * sched_fwd_serve_ops) and send its answer back. A peer that goes away
 * leaves its requests to end unanswered.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/base/rt.h"
#include "../store/store.h"
#include "../workers/conn.h"
#include "forward.h"
#include "forward_state.h"
#include "cluster_state.h"

/* ======================================================== the leader */

void sched__fwd_in_unlink(struct sched_fwd_in *in)
{
	if (in->pprev == NULL)
		return;
	*in->pprev = in->next;
	if (in->next != NULL)
		in->next->pprev = in->pprev;
	in->pprev = NULL;
}

/* The leader's writes of a forwarded write are in etcd (or could not be
 * waited for longer): its answer goes now. */
static void on_flushed(void *arg, int rc)
{
	struct sched_fwd_in *in = arg;

	in->flushing = 0;
	if (in->orphan) {
		free(in);
		return;
	}
	if (rc < 0 && rc != -ECANCELED)
		rt_log(RT_LOG_WARN,
		       "a forwarded write is answered before etcd has "
		       "what it did: %s",
		       strerror(-rc));
	sched_fwd_answer(in->st->s, in, 0, NULL, NULL, 0);
}

void sched_fwd_answer(struct sched *s, struct sched_fwd_in *in, int err,
		      const char *error, const char *body, size_t len)
{
	json_t *h;

	/* Each request is answered once: then it leaves the list. */
	assert(in->pprev != NULL && !in->flushing);
	/* Read-your-writes: a follower reads etcd, so a write it forwarded
	 * is answered once etcd has what the leader did (a new pid, a state):
	 * the follower then waits for its own view to catch up (forward.c). */
	if (err == 0 && in->write && !in->flushed && len == 0) {
		in->flushed = 1;
		if (store_mirror_flush(s->store, on_flushed, in) ==
		    STORE_LATER) {
			in->flushing = 1;
			return;
		}
	}
	if (in->c != NULL) {
		h = json_pack("{s:s, s:I, s:i}", "type", "fwd.reply", "seq",
			      (json_int_t)in->seq, "err", err);
		if (h != NULL && err != 0 && error != NULL)
			json_object_set_new(h, "error", json_string(error));
		if (h != NULL && err == 0 && len > RT_WIRE_BODY_MAX) {
			/* More than a frame carries (the log of a function
			 * of many instances): refused, with the reason as
			 * the function's error line on the follower. */
			char when[32];
			struct rt_buf line = { 0 };

			rt_format_time(rt_now_ms(), when);
			rt_buf_printf(&line,
				      "%s the answer of the leader is larger "
				      "than a forwarded reply carries (%u "
				      "bytes): read it on the leader, or the "
				      "instances' logs one by one\n",
				      when, RT_WIRE_BODY_MAX);
			err = EFBIG;
			json_object_set_new(h, "err", json_integer(err));
			if (line.data != NULL)
				json_object_set_new(h, "error",
						    json_string(line.data));
			rt_buf_free(&line);
		}
		sched__conn_send_body(in->c, h, body, err == 0 ? len : 0);
	}
	sched__fwd_in_unlink(in);
	free(in);
}

/* Whether this controller runs what followers forward: the leader (or
 * a controller alone, for tests). Else `why` says where the leader is. */
static int serving(struct sched *s, struct rt_buf *why)
{
	const char *role = sched_role(s), *name, *addr;

	if (strcmp(role, "leader") == 0 || strcmp(role, "single") == 0)
		return 1;
	if (sched_leader(s, &name, &addr) == 0 && name != NULL)
		rt_buf_printf(why,
			      "this controller is not the leader (it is %s): "
			      "the leader is %s at %s",
			      role, name, addr ? addr : "(no --listen)");
	else
		rt_buf_printf(why,
			      "this controller is not the leader (it is %s), "
			      "and no leader is known",
			      role);
	return 0;
}

static int peer_on_peer(struct sched *s, struct conn *c, const struct rt_msg *m,
			struct rt_buf *why)
{
	const struct sched_peer *p = sched__conn_peer(c);
	const char *name = rt_msg_str(m, "name");

	if (!serving(s, why))
		return -EPERM;
	rt_log(RT_LOG_INFO, "peer controller %s linked from %s%s",
	       name ? name : "?", p->addr,
	       p->transport == SCHED_TLS ? "" : " (plain TCP)");
	sched__conn_send(c, json_pack("{s:s}", "type", "peered"));
	return 0;
}

static void peer_on_message(struct sched *s, struct conn *c,
			    const struct rt_msg *m)
{
	struct sched_fwd_state *st = s->cluster->fwd;
	struct sched_caller who = { 0 };
	struct sched_fwd_in *in;
	struct rt_buf why = { 0 };
	uint32_t *groups = NULL;
	const char *op, *path;
	json_t *g;
	size_t i, n;

	/* Peers are served only once forwarding is set up. */
	assert(st != NULL);
	if (strcmp(m->type, "fwd") != 0) {
		rt_log(RT_LOG_DEBUG, "peer controller: message %s ignored",
		       m->type);
		return;
	}
	in = calloc(1, sizeof(*in));
	if (in == NULL)
		return; /* it times out on the follower */
	in->st = st;
	in->c = c;
	in->seq = (uint64_t)rt_msg_int(m, "seq", 0);
	in->next = st->ins;
	if (st->ins != NULL)
		st->ins->pprev = &in->next;
	st->ins = in;
	in->pprev = &st->ins;
	op = rt_msg_str(m, "op");
	path = rt_msg_str(m, "path");
	who.uid = (uint32_t)rt_msg_int(m, "uid", -1);
	who.gid = (uint32_t)rt_msg_int(m, "gid", -1);
	g = json_object_get(m->header, "groups");
	n = json_is_array(g) ? json_array_size(g) : 0;
	if (n > FWD_GROUPS_MAX)
		n = FWD_GROUPS_MAX;
	if (n > 0 && (groups = calloc(n, sizeof(*groups))) != NULL) {
		for (i = 0; i < n; i++)
			groups[i] = (uint32_t)json_integer_value(
				json_array_get(g, i));
		who.groups = groups;
		who.ngroups = (int)n;
	}
	if (!serving(s, &why)) {
		sched_fwd_answer(s, in, EAGAIN, why.data, NULL, 0);
	} else if (op == NULL || path == NULL || st->ops == NULL) {
		sched_fwd_answer(s, in, EINVAL, NULL, NULL, 0);
	} else if (strcmp(op, "write") == 0) {
		in->write = 1;
		st->ops->write(st->ops_arg, in, path, m->body ? m->body : "",
			       m->body_len, &who);
	} else if (strcmp(op, "read") == 0 && st->ops->read != NULL) {
		st->ops->read(st->ops_arg, in, path, &who);
	} else if (strcmp(op, "call") == 0) {
		st->ops->call(
			st->ops_arg, in, path, m->body ? m->body : "",
			m->body_len, &who,
			json_is_true(json_object_get(m->header, "async")));
	} else {
		sched_fwd_answer(s, in, EOPNOTSUPP, NULL, NULL, 0);
	}
	free(groups);
	rt_buf_free(&why);
}

static void peer_on_gone(struct sched *s, struct conn *c)
{
	struct sched_fwd_in *in;

	if (s->cluster->fwd == NULL)
		return;
	for (in = s->cluster->fwd->ins; in != NULL; in = in->next)
		if (in->c == c)
			in->c = NULL; /* answered into the void */
}

void sched_fwd_serve(struct sched *s, const struct sched_fwd_serve_ops *ops,
		     void *arg)
{
	static const struct sched_peer_ops peer_ops = {
		.on_peer = peer_on_peer,
		.on_message = peer_on_message,
		.on_gone = peer_on_gone,
	};

	if (s->cluster->fwd == NULL)
		return;
	s->cluster->fwd->ops = ops;
	s->cluster->fwd->ops_arg = arg;
	s->links.peer_ops = ops != NULL ? &peer_ops : NULL;
}

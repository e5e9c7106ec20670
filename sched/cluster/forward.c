/*
 * forward.c - a follower forwards to the leader what only the leader can
 * do (see forward.h), over the controllers' own link; the leader serves
 * what followers forward (forward_serve.c).
 *
 * The follower's side: one link at a time (struct fwd_link), to the
 * leader the election names (sched_leader). It is opened by the first
 * request, over TLS 1.3 with a client certificate this controller mints
 * from DATA/ca/ca.key (OU controller, CN its --name), or plain TCP when it
 * has no CA and runs with --insecure. The first message is `peer
 * {name}`; the leader answers `peered` or `refused {reason}`. Requests
 * wait in order until then, and are sent as `fwd {seq, op, path, uid,
 * gid, groups, async}` with the value or request in the body; each gets
 * one `fwd.reply {seq, err, error}` with the response in the body (op
 * "write", "call" or "read": a log's content). A timer checks every
 * FWD_WATCH_MS while anything is in flight that the leader is still the
 * one linked to: a change of leader or a lost link ends what is in
 * flight with EAGAIN and the reason (in the function's `error`), and the
 * next request opens a link to the new leader.
 *
 * The leader's side is forward_serve.c; where to forward, forward_target.c.
 * Over 600 lines: the link's
 * life (connect, TLS, peering, framing) and the requests that wait on
 * it share its state and failure paths; cut apart, each would reach into
 * the other's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/base/net.h"
#include "../../runtime/base/tls.h"
#include "../workers/conn.h"
#include "forward.h"
#include "forward_state.h"
#include "cluster_state.h"
#include "../workers/listen.h"
#include "../store/store.h"

/* How long the answer of a forwarded write waits, once the leader did
 * it, for this controller's model to show it (read-your-writes). */
#define FWD_CATCH_UP_MS 3000

static void link_fail(struct sched_fwd_state *st, const char *why);
static void catch_up(struct sched_fwd *f);
static void fwd_finish(struct sched_fwd *f, int err, const char *error,
		       const char *body, size_t len);

/* ================================================================ state */

static void watch_closed(uv_handle_t *h)
{
	struct sched_fwd_state *st = h->data;

	free(st->name);
	free(st->fixed_name);
	free(st->fixed_addr);
	free(st);
}

static void on_watch(uv_timer_t *t);

int sched_fwd_setup(struct sched *s, const char *name, int insecure)
{
	struct sched_fwd_state *st;

	if (s->cluster->fwd != NULL)
		return 0;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return -ENOMEM;
	st->s = s;
	st->name = strdup(name != NULL ? name : "controller");
	if (st->name == NULL) {
		free(st);
		return -ENOMEM;
	}
	st->insecure = insecure;
	st->next_seq = 1;
	snprintf(st->cert_role, sizeof(st->cert_role), "%s",
		 RT_CA_ROLE_CONTROLLER);
	snprintf(st->hello, sizeof(st->hello), "peer");
	st->qtail = &st->queue;
	uv_timer_init(s->loop, &st->watch);
	st->watch.data = st;
	uv_unref((uv_handle_t *)&st->watch);
	s->cluster->fwd = st;
	return 0;
}

/* ========================================================== the link */

static void link_closed(uv_handle_t *h)
{
	struct fwd_link *l = h->data;

	if (--l->handles > 0)
		return;
	rt_tls_free(&l->tls);
	rt_buf_free(&l->in);
	rt_buf_free(&l->dec);
	free(l);
}

/* Closes `l` (forgotten by its state already). */
static void link_close(struct fwd_link *l)
{
	if (l->state == LINK_DEAD)
		return;
	l->state = LINK_DEAD;
	l->st = NULL;
	rt_wire_out_close(&l->out);
	if (!l->plain && l->tls.ssl != NULL)
		rt_tls_shutdown(&l->tls);
	uv_timer_stop(&l->timer);
	uv_close((uv_handle_t *)&l->timer, link_closed);
	uv_close((uv_handle_t *)&l->tcp, link_closed);
}

/* The link is gone: everything in flight or waiting for it ends with
 * EAGAIN and `why`; the next request opens a new one. */
static void link_fail(struct sched_fwd_state *st, const char *why)
{
	struct fwd_link *l = st->link;
	struct rt_buf reason = { 0 };
	struct sched_fwd *f;
	void **v;
	size_t n, i;

	if (l == NULL)
		return;
	st->link = NULL;
	rt_buf_printf(&reason, "forwarded to the leader %s at %s: %s",
		      l->leader, l->addr, why);
	snprintf(st->last_error, sizeof(st->last_error), "%s", reason.data);
	rt_log(RT_LOG_WARN, "%s", reason.data);
	link_close(l);
	/* Sent or not, every request in flight is in `out`. */
	st->queue = NULL;
	st->qtail = &st->queue;
	v = rt_idmap_values(&st->out, &n);
	for (i = 0; v != NULL && i < n; i++) {
		f = v[i];
		sched__fwd_set_error(st->s, f->path, NULL, reason.data);
		fwd_finish(f, EAGAIN, NULL, NULL, 0);
	}
	free(v);
	rt_buf_free(&reason);
}

/* Sends what waits for the link, in order. */
static void link_drain(struct sched_fwd_state *st)
{
	struct fwd_link *l = st->link;
	struct sched_fwd *f;

	while (l != NULL && l->state == LINK_READY && (f = st->queue) != NULL) {
		st->queue = f->next;
		if (st->queue == NULL)
			st->qtail = &st->queue;
		f->next = NULL;
		f->sent = 1;
		rt_wire_out_send(&l->out, f->header, f->body, f->len);
		f->header = NULL;
		free(f->body);
		f->body = NULL;
	}
}

/* One message from the leader. */
static int link_message(const struct rt_msg *m, void *arg)
{
	struct sched_fwd_state *st = arg;
	struct fwd_link *l = st->link;
	struct sched_fwd *f;
	const char *reason;

	if (l == NULL)
		return 1;
	if (strcmp(m->type, "peered") == 0 && l->state == LINK_PEERING) {
		l->state = LINK_READY;
		uv_timer_stop(&l->timer);
		rt_log(RT_LOG_INFO, "linked to the leader %s at %s (%s)",
		       l->leader, l->addr, l->plain ? "plain TCP" : "TLS 1.3");
		link_drain(st);
		return 0;
	}
	if (strcmp(m->type, "refused") == 0) {
		reason = rt_msg_str(m, "reason");
		link_fail(st, reason ? reason : "refused");
		return 1;
	}
	if (strcmp(m->type, "fwd.reply") == 0) {
		f = rt_idmap_get(&st->out, (uint64_t)rt_msg_int(m, "seq", 0));
		if (f != NULL && f->write && !f->ok && m->body_len == 0 &&
		    rt_msg_int(m, "err", EIO) == 0)
			catch_up(f);
		else if (f != NULL && !f->ok)
			fwd_finish(f, (int)rt_msg_int(m, "err", EIO),
				   rt_msg_str(m, "error"), m->body,
				   m->body_len);
		return 0;
	}
	rt_log(RT_LOG_DEBUG, "link to the leader: message %s ignored", m->type);
	return 0;
}

static void link_frames(struct sched_fwd_state *st, const char *data, size_t n)
{
	struct fwd_link *l = st->link;
	struct rt_buf why = { 0 };

	if (rt_wire_feed(&l->in, data, n, link_message, st, &why) < 0 &&
	    st->link == l)
		link_fail(st, why.data ? why.data : "bad frame");
	rt_buf_free(&why);
}

static void link_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
	struct fwd_link *l = stream->data;
	struct sched_fwd_state *st = l->st;
	struct rt_buf why = { 0 };
	struct rt_cert_info ci;
	int rc;

	if (st == NULL || l->state == LINK_DEAD)
		return;
	if (n < 0) {
		link_fail(st, n == UV_EOF ? "the connection closed"
					  : uv_strerror((int)n));
		return;
	}
	if (n == 0)
		return;
	if (l->plain) {
		link_frames(st, buf->base, (size_t)n);
		return;
	}
	rc = rt_tls_feed(&l->tls, buf->base, (size_t)n, &l->dec, &why);
	if (rc < 0) {
		link_fail(st, rc == -EPIPE ? "the leader closed the link"
					   : (why.data ? why.data : "TLS"));
		goto out;
	}
	if (rc == 1) {
		rt_buf_reset(&why);
		if (rt_tls_peer_check(&l->tls, RT_CA_ROLE_CONTROLLER, &ci,
				      &why) < 0) {
			link_fail(st, why.data ? why.data
					       : "not a controller of the CA");
			goto out;
		}
	}
	if (l->dec.len > 0) {
		link_frames(st, l->dec.data, l->dec.len);
		if (st->link == l)
			rt_buf_reset(&l->dec);
	}
	if (st->link == l && l->tls.closed)
		link_fail(st, "the leader closed the link");
out:
	rt_buf_free(&why);
}

static void link_connected(uv_connect_t *req, int status)
{
	struct fwd_link *l = req->data;
	struct sched_fwd_state *st = l->st;

	if (st == NULL || l->state == LINK_DEAD)
		return;
	if (status < 0) {
		link_fail(st, uv_strerror(status));
		return;
	}
	rt_tcp_tune(&l->tcp);
	if (!l->plain) {
		if (rt_tls_start(&l->tls, st->ctx, 0, NULL,
				 (uv_stream_t *)&l->tcp) < 0) {
			link_fail(st, "out of memory");
			return;
		}
		rt_wire_out_transport(&l->out, rt_tls_send, &l->tls);
	}
	l->state = LINK_PEERING;
	uv_read_start((uv_stream_t *)&l->tcp, rt_read_alloc, link_read);
	/* Over TLS: held until the handshake is over. */
	rt_wire_out_send(&l->out,
			 json_pack("{s:s, s:s, s:s}", "type", st->hello, "name",
				   st->name, "id", st->name),
			 NULL, 0);
}

static void link_timeout(uv_timer_t *t)
{
	struct fwd_link *l = t->data;

	if (l->st != NULL && l->state != LINK_READY)
		link_fail(l->st, "no answer within the link's bound");
}

/* Makes the client context of the link: the cluster CA and a
 * certificate minted now from its key, OU controller, CN our name. */
static void make_ctx(struct sched_fwd_state *st)
{
	struct rt_buf ca = { 0 }, key = { 0 }, why = { 0 };
	struct rt_cred cacred = { 0 }, own = { 0 };

	st->ctx_tried = 1;
	rt_ca_path(&ca, st->s->datadir, "ca.pem");
	rt_ca_path(&key, st->s->datadir, "ca.key");
	if (rt_cred_load(&cacred, ca.data, key.data, &why) < 0 ||
	    rt_ca_issue(&cacred, st->name, st->cert_role, RT_CA_DAYS_DEFAULT,
			&own, &why) < 0 ||
	    rt_tls_ctx_new(&st->ctx, 0, cacred.cert, &own, NULL, &why) < 0) {
		snprintf(st->ctx_error, sizeof(st->ctx_error),
			 "no certificate to reach the leader with: %s",
			 why.data ? why.data : "?");
		st->ctx = NULL;
	}
	rt_cred_free(&cacred);
	rt_cred_free(&own);
	rt_buf_free(&ca);
	rt_buf_free(&key);
	rt_buf_free(&why);
}

/* Opens a link to `name` at `addr`. Returns 0, or -EAGAIN with the
 * reason in `why`. */
static int link_open(struct sched_fwd_state *st, const char *name,
		     const char *addr, struct rt_buf *why)
{
	struct sockaddr_storage ss;
	struct fwd_link *l;
	int rc;

	if (!st->ctx_tried)
		make_ctx(st);
	if (st->ctx == NULL && !st->insecure) {
		rt_buf_puts(why, st->ctx_error);
		return -EAGAIN;
	}
	if (rt_addr_parse(addr, 0, &ss) < 0) {
		rt_buf_printf(why, "the leader's address %s is not IP:PORT",
			      addr);
		return -EAGAIN;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	l->st = st;
	l->plain = st->ctx == NULL;
	snprintf(l->leader, sizeof(l->leader), "%s", name);
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	uv_tcp_init(st->s->loop, &l->tcp);
	uv_timer_init(st->s->loop, &l->timer);
	l->tcp.data = l;
	l->timer.data = l;
	l->handles = 2;
	l->connect_req.data = l;
	rt_wire_out_init(&l->out, &st->s->links.flusher,
			 (uv_stream_t *)&l->tcp);
	st->link = l;
	uv_timer_start(&l->timer, link_timeout, FWD_LINK_MS, 0);
	rc = uv_tcp_connect(&l->connect_req, &l->tcp, (struct sockaddr *)&ss,
			    link_connected);
	if (rc < 0) {
		rt_buf_printf(why, "cannot connect to the leader %s at %s: %s",
			      name, addr, uv_strerror(rc));
		st->link = NULL;
		link_close(l);
		return -EAGAIN;
	}
	return 0;
}

/* The link to the leader now: the one there, or a new one (the old one
 * closed when the leader changed). Returns 0 or -EAGAIN with `why`. */
static int link_get(struct sched_fwd_state *st, struct rt_buf *why)
{
	const char *name, *addr;
	int rc = sched__fwd_leader_target(st, &name, &addr, why);

	if (rc < 0) {
		if (st->link != NULL)
			link_fail(st, why->data);
		return rc;
	}
	if (st->link != NULL && (strcmp(st->link->leader, name) != 0 ||
				 strcmp(st->link->addr, addr) != 0))
		link_fail(st, "the leader changed");
	if (st->link != NULL)
		return 0;
	return link_open(st, name, addr, why);
}

/* While requests are in flight: has the leader changed? */
static void on_watch(uv_timer_t *t)
{
	struct sched_fwd_state *st = t->data;
	struct rt_buf why = { 0 };
	const char *name, *addr;

	if (st->out.count == 0 && st->queue == NULL) {
		uv_timer_stop(&st->watch);
		st->watching = 0;
		goto out;
	}
	if (st->link == NULL)
		goto out;
	if (sched__fwd_leader_target(st, &name, &addr, &why) < 0)
		link_fail(st, why.data);
	else if (strcmp(st->link->leader, name) != 0 ||
		 strcmp(st->link->addr, addr) != 0)
		link_fail(st, "the leader changed");
out:
	rt_buf_free(&why);
}

/* ====================================================== the follower */

static void fwd_closed(uv_handle_t *h)
{
	struct sched_fwd *f = h->data;

	if (f->catching) {
		f->closed = 1; /* on_caught_up frees it */
		return;
	}
	json_decref(f->header);
	free(f->body);
	free(f->path);
	free(f);
}

static void fwd_closed(uv_handle_t *h);
static void fwd_timeout(uv_timer_t *t);

/* This controller's model has what etcd had once the leader answered
 * write `f`: it is answered now (unless it ended meanwhile). */
static void on_caught_up(void *arg, int rc)
{
	struct sched_fwd *f = arg;

	(void)rc; /* whatever it was, the leader did the write */
	f->catching = 0;
	if (f->closed)
		fwd_closed((uv_handle_t *)&f->timer);
	else if (f->seq != 0)
		fwd_finish(f, 0, NULL, NULL, 0);
}

/* The leader did write `f`, and had etcd acknowledge what it did before
 * answering (forward_serve.c): read-your-writes, the answer waits until
 * this controller's model has what etcd has now, at most
 * FWD_CATCH_UP_MS. */
static void catch_up(struct sched_fwd *f)
{
	f->ok = 1;
	f->catching = 1;
	uv_timer_start(&f->timer, fwd_timeout, FWD_CATCH_UP_MS, 0);
	if (store_barrier(f->st->s->store, on_caught_up, f) < 0) {
		f->catching = 0;
		fwd_finish(f, 0, NULL, NULL, 0);
	}
}

/* Ends `f`: its caller is told (unless cancelled) and it is freed. */
static void fwd_finish(struct sched_fwd *f, int err, const char *error,
		       const char *body, size_t len)
{
	struct sched_fwd_state *st = f->st;
	sched_fwd_fn done = f->done;
	void *arg = f->arg;

	if (f->seq == 0)
		return; /* finished already */
	if (f->ok) {
		/* The leader did it: only this model's catching up was cut
		 * short (its bound, the link or the controller stopping). */
		err = 0;
		error = NULL;
	}
	rt_idmap_del(&st->out, f->seq);
	f->seq = 0;
	f->done = NULL;
	if (err != 0 && error != NULL)
		sched__fwd_set_error(st->s, f->path, error, NULL);
	uv_timer_stop(&f->timer);
	if (done != NULL)
		done(arg, err, body, len);
	uv_close((uv_handle_t *)&f->timer, fwd_closed);
}

static void fwd_timeout(uv_timer_t *t)
{
	struct sched_fwd *f = t->data;
	struct sched_fwd **pp;
	struct rt_buf why = { 0 };

	if (f->ok) {
		rt_log(RT_LOG_WARN,
		       "a write of %s forwarded to the leader: this "
		       "controller did not see what it did within %d ms",
		       f->path, FWD_CATCH_UP_MS);
		fwd_finish(f, 0, NULL, NULL, 0);
		return;
	}
	/* Not sent yet: out of the queue. */
	for (pp = &f->st->queue; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	f->st->qtail = &f->st->queue;
	for (pp = &f->st->queue; *pp != NULL; pp = &(*pp)->next)
		f->st->qtail = &(*pp)->next;
	/* The timer is a one-shot: its repeat is 0, its length is here. */
	rt_buf_printf(&why, "the leader did not answer within %d ms",
		      f->bound_ms);
	sched__fwd_set_error(f->st->s, f->path, NULL, why.data);
	rt_buf_free(&why);
	fwd_finish(f, ETIMEDOUT, NULL, NULL, 0);
}

/* The bound of a write to `path`: the leader's (face/files.c's
 * wait_bound), plus the link's margin. */
static int write_bound(struct sched *s, const char *path)
{
	struct sched_function *fn = sched_fwd_function_of(s, path);
	long long ms = SCHED_WAIT_MS;

	if (fn != NULL && strcmp(sched_spec_ready(&fn->spec), "started") != 0 &&
	    (long long)fn->spec.ready_timeout * 1000 + SCHED_READY_MARGIN_MS >
		    ms)
		ms = (long long)fn->spec.ready_timeout * 1000 +
		     SCHED_READY_MARGIN_MS;
	return (int)(ms + FWD_MARGIN_MS);
}

/* Starts a forwarded request `op` to `path`. */
static int fwd_start(struct sched *s, const char *op, const char *path,
		     const char *data, size_t len,
		     const struct sched_caller *who, int async, int bound,
		     sched_fwd_fn done, void *arg, struct sched_fwd **out)
{
	struct sched_fwd_state *st = s->cluster->fwd;
	struct rt_buf why = { 0 };
	struct sched_fwd *f = NULL;
	json_t *groups = NULL;
	int rc, i;

	if (out != NULL)
		*out = NULL;
	if (st == NULL) {
		rc = -EAGAIN;
		goto out;
	}
	rc = link_get(st, &why);
	if (rc < 0) {
		sched__fwd_set_error(s, path, NULL, why.data);
		rt_log(RT_LOG_WARN, "cannot forward %s of %s: %s", op, path,
		       why.data ? why.data : "?");
		goto out;
	}
	f = calloc(1, sizeof(*f));
	groups = json_array();
	if (f == NULL || groups == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; who != NULL && i < who->ngroups && i < FWD_GROUPS_MAX; i++)
		json_array_append_new(groups, json_integer(who->groups[i]));
	f->st = st;
	f->seq = st->next_seq++;
	f->write = strcmp(op, "write") == 0;
	f->done = done;
	f->arg = arg;
	f->path = strdup(path);
	f->header = json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:o, s:b}",
			      "type", "fwd", "seq", (json_int_t)f->seq, "op",
			      op, "path", path, "uid",
			      (json_int_t)(who ? who->uid : 0), "gid",
			      (json_int_t)(who ? who->gid : 0), "groups",
			      groups, "async", async);
	groups = NULL;
	if (len > 0) {
		f->body = malloc(len);
		if (f->body != NULL)
			memcpy(f->body, data, len);
	}
	f->len = len;
	if (f->path == NULL || f->header == NULL ||
	    (len > 0 && f->body == NULL) ||
	    rt_idmap_put(&st->out, f->seq, f) < 0) {
		json_decref(f->header);
		free(f->body);
		free(f->path);
		free(f);
		rc = -ENOMEM;
		goto out;
	}
	uv_timer_init(s->loop, &f->timer);
	f->timer.data = f;
	f->bound_ms = bound;
	uv_timer_start(&f->timer, fwd_timeout, (uint64_t)bound, 0);
	*st->qtail = f;
	st->qtail = &f->next;
	link_drain(st);
	if (!st->watching) {
		st->watching = 1;
		uv_timer_start(&st->watch, on_watch, FWD_WATCH_MS,
			       FWD_WATCH_MS);
	}
	if (out != NULL)
		*out = f;
	rc = SCHED_LATER;
out:
	json_decref(groups);
	rt_buf_free(&why);
	return rc;
}

int sched_fwd_write(struct sched *s, const char *path, const char *buf,
		    size_t len, const struct sched_caller *who,
		    sched_fwd_fn done, void *arg, struct sched_fwd **out)
{
	return fwd_start(s, "write", path, buf, len, who, 0,
			 write_bound(s, path), done, arg, out);
}

int sched_fwd_call(struct sched *s, const char *path, const char *body,
		   size_t len, const struct sched_caller *who,
		   sched_fwd_fn done, void *arg, struct sched_fwd **out)
{
	struct sched_function *fn = sched_fwd_function_of(s, path);
	long long ms = 2LL * (fn ? fn->spec.timeout : SCHED_TIMEOUT_MAX) +
		       SCHED_WAIT_MS;

	return fwd_start(s, "call", path, body, len, who, done == NULL,
			 (int)(ms > INT32_MAX ? INT32_MAX : ms), done, arg,
			 out);
}

int sched_fwd_read(struct sched *s, const char *path,
		   const struct sched_caller *who, sched_fwd_fn done, void *arg,
		   struct sched_fwd **out)
{
	return fwd_start(s, "read", path, NULL, 0, who, 0,
			 SCHED_LOG_WAIT_MS + FWD_MARGIN_MS, done, arg, out);
}

void sched_fwd_cancel(struct sched *s, struct sched_fwd *f)
{
	(void)s;
	if (f != NULL)
		f->done = NULL; /* the answer is dropped when it comes */
}

/* ========================================================= shutdown */

void sched_fwd_close(struct sched *s)
{
	struct sched_fwd_state *st = s->cluster->fwd;
	struct sched_fwd_in *in;

	if (st == NULL)
		return;
	link_fail(st, "the controller is stopping");
	while ((in = st->ins) != NULL) {
		sched__fwd_in_unlink(in);
		in->c = NULL;
		if (in->flushing)
			in->orphan = 1; /* its wait frees it */
		else
			free(in);
	}
	rt_idmap_free(&st->out);
	SSL_CTX_free(st->ctx);
	s->links.peer_ops = NULL;
	s->cluster->fwd = NULL;
	uv_timer_stop(&st->watch);
	uv_close((uv_handle_t *)&st->watch, watch_closed);
}

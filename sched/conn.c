/*
 * conn.c - worker connections on DATA/ctl.sock: accepting, reading and
 * decoding frames, sending, closing. It knows nothing of what the
 * messages mean: it hands them to the callbacks of struct sched_conn_ops
 * (set by lifecycle.c), so no call goes back up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn.h"

/* One worker connection. */
struct conn {
	struct sched *s;
	uv_pipe_t pipe;
	struct rt_wire_out out;	     /* frames not yet written */
	struct rt_buf in;	     /* bytes not yet decoded */
	struct sched_worker *worker; /* once registered */
	struct sched_peer peer;	     /* who connected */
	int closing;
};

const struct sched_peer *sched__conn_peer(const struct conn *c)
{
	return &c->peer;
}

void sched__conn_send_body(struct conn *c, json_t *header, const void *body,
			   size_t len)
{
	if (c == NULL || c->closing) {
		json_decref(header);
		return;
	}
	rt_wire_out_send(&c->out, header, body, len);
}

size_t sched__conn_backlog(const struct conn *c)
{
	if (c == NULL || c->closing)
		return 0;
	return c->out.pending.len +
	       uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
}

void sched__conn_send(struct conn *c, json_t *header)
{
	sched__conn_send_body(c, header, NULL, 0);
}

/* A message goes up: `register` before the worker is known, anything
 * else after. */
static void handle(struct conn *c, const struct rt_msg *m)
{
	struct sched *s = c->s;
	struct sched_worker *w = c->worker;

	if (w == NULL) {
		if (strcmp(m->type, "register") == 0)
			s->conn_ops->on_register(s, c, m);
		else
			sched__conn_close(c, "message before registration");
		return;
	}
	s->conn_ops->on_message(s, w, m);
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	rt_buf_free(&c->in);
	free(c);
}

void sched__conn_close(struct conn *c, const char *why)
{
	struct sched_worker *w = c->worker;

	if (c->closing)
		return;
	c->closing = 1;
	c->worker = NULL;
	if (w != NULL)
		c->s->conn_ops->on_gone(c->s, w, why);
	rt_wire_out_close(&c->out);
	uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct conn *c = arg;

	handle(c, m);
	return c->closing;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	struct rt_buf why = { 0 };
	int rc;

	if (n < 0) {
		sched__conn_close(c, n == UV_EOF ? "connection closed"
						 : uv_strerror((int)n));
		return;
	}
	rc = rt_wire_feed(&c->in, buf->base, (size_t)n, handle_cb, c, &why);
	if (rc < 0 && !c->closing) {
		rt_log(RT_LOG_WARN, "worker connection: %s; closing it",
		       why.data ? why.data : "bad frame");
		sched__conn_close(c, "protocol error");
	}
	rt_buf_free(&why);
}

/* Reads the peer's credentials and asks whether it may speak at all.
 * Returns 0, or -EPERM once the peer is told and the connection closed:
 * nothing it sent is read. */
static int admit(struct conn *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct rt_buf why = { 0 };
	uv_os_fd_t fd;
	int rc = 0;

	c->peer.uid = (uid_t)-1;
	c->peer.gid = (gid_t)-1;
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->peer.uid = cred.uid;
		c->peer.gid = cred.gid;
		if (rt_proc_id_of(cred.pid, &c->peer.proc) < 0)
			c->peer.proc.pid = 0; /* gone already */
	}
	if (c->s->conn_ops->on_accept != NULL)
		rc = c->s->conn_ops->on_accept(c->s, &c->peer, &why);
	if (rc < 0) {
		sched__conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
					      "reason",
					      why.data ? why.data : "refused"));
		sched__conn_close(c, "refused");
	}
	rt_buf_free(&why);
	return rc < 0 ? -EPERM : 0;
}

void sched__on_connection(uv_stream_t *server, int status)
{
	struct sched *s = server->data;
	struct conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return;
	c->s = s;
	uv_pipe_init(s->loop, &c->pipe, 0);
	c->pipe.data = c;
	rt_wire_out_init(&c->out, &s->flusher, (uv_stream_t *)&c->pipe);
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		uv_close((uv_handle_t *)&c->pipe, conn_closed);
		return;
	}
	if (admit(c) < 0)
		return;
	uv_read_start((uv_stream_t *)&c->pipe, rt_read_alloc, on_read);
}

void sched__conn_bind(struct conn *c, struct sched_worker *w)
{
	w->conn = c;
	c->worker = w;
}

void sched__conn_detach(struct conn *c)
{
	if (c != NULL)
		c->worker = NULL;
}

void sched__conn_drop(struct sched_worker *w)
{
	if (w->conn != NULL) {
		struct conn *c = w->conn;

		c->worker = NULL;
		w->conn = NULL;
		w->online = 0;
		if (!c->closing) {
			c->closing = 1;
			rt_wire_out_close(&c->out);
			uv_close((uv_handle_t *)&c->pipe, conn_closed);
		}
	}
}

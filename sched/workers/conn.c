/*
 * conn.c - worker connections on DATA/ctl.sock and on the --listen TCP
 * socket (plain, or TLS through runtime/base/tls.c): accepting, reading and
 * decoding frames, sending, closing. It knows nothing of what the
 * messages mean: it hands them to the callbacks of struct sched_conn_ops
 * (set by face/lifecycle.c), so no call goes back up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../runtime/base/tls.h"
#include "conn.h"
#include "listen.h"

/* One worker connection. */
struct conn {
	struct sched *s;
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_pipe_t pipe; /* the Unix socket */
		uv_tcp_t tcp;	/* --listen */
	} h;
	struct rt_wire_out out;	     /* frames not yet written */
	struct rt_buf in;	     /* bytes not yet decoded */
	struct sched_worker *worker; /* once registered */
	struct sched_peer peer;	     /* who connected */
	struct rt_tls *tls;	     /* TLS over TCP, owned, or NULL */
	struct rt_buf plain;	     /* TLS: decrypted, not yet decoded */
	uv_timer_t admit_timer;	     /* TCP: bounds the time to admission */
	int handles;		     /* open handles: freed at 0 */
	struct conn *next, **pprev;  /* in s->conns until its handles close */
	uv_shutdown_t shut_req;	     /* TCP: our end, when lingering */
	int lingering;		     /* closing: waits for the peer's end */
	int ended;		     /* its handles are closing */
	int sniffed;		     /* TCP: its first byte was seen */
	int admitted;		     /* it may speak (on_accept said so) */
	int is_peer;		     /* a peer controller (said `peer`) */
	int closing;
};

/* A TCP peer has this long to finish its TLS handshake. */
#define CONN_ADMIT_MS 10000
/* A closed TCP connection waits this long for the peer to close too. */
#define CONN_LINGER_MS 2000

const char *sched_transport_name(enum sched_transport t)
{
	return t == SCHED_TLS ? "tls" : t == SCHED_TCP ? "tcp" : "unix";
}

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

void sched__conn_flush(struct conn *c)
{
	if (c != NULL && !c->closing)
		rt_wire_out_flush(&c->out);
}

size_t sched__conn_backlog(const struct conn *c)
{
	if (c == NULL || c->closing)
		return 0;
	/* Frames, plaintext TLS holds until its handshake ends, and what
	 * the stream has queued (TLS hands its records over at once). */
	return c->out.pending.len + (c->tls ? rt_tls_backlog(c->tls) : 0) +
	       uv_stream_get_write_queue_size(&c->h.stream);
}

void sched__conn_send(struct conn *c, json_t *header)
{
	sched__conn_send_body(c, header, NULL, 0);
}

/* Tells the peer of `c` why it is refused, and closes `c`. */
static void refuse_close(struct conn *c, const char *why)
{
	sched__conn_send(
		c, json_pack("{s:s, s:s}", "type", "refused", "reason", why));
	sched__conn_close(c, "refused");
}

/* The first message of a peer controller, `peer`: only a certificate of
 * role controller (or plain TCP, admitted only with --insecure) may send
 * it, and a worker's never. */
static void peer_hello(struct conn *c, const struct rt_msg *m)
{
	struct sched *s = c->s;
	struct rt_buf why = { 0 };

	if (c->peer.transport == SCHED_UNIX ||
	    (c->peer.transport == SCHED_TLS && !c->peer.controller)) {
		rt_log(RT_LOG_WARN,
		       "connection from %s refused as a peer controller: "
		       "its certificate is a %s's",
		       c->peer.addr[0] ? c->peer.addr : "the Unix socket",
		       c->peer.cert.role[0] ? c->peer.cert.role : "worker");
		refuse_close(c, "a worker may not act as a peer controller: "
				"it needs a certificate of role controller");
		goto out;
	}
	if (s->links.peer_ops == NULL) {
		refuse_close(c, "this controller serves no peer controllers");
		goto out;
	}
	if (s->links.peer_ops->on_peer(s, c, m, &why) < 0) {
		refuse_close(c, why.data ? why.data : "refused");
		goto out;
	}
	c->is_peer = 1;
out:
	rt_buf_free(&why);
}

/* A message goes up: `register` (a worker) or `peer` (a controller)
 * first, anything else after. */
static void handle(struct conn *c, const struct rt_msg *m)
{
	struct sched *s = c->s;
	struct sched_worker *w = c->worker;

	if (c->is_peer) {
		if (s->links.peer_ops != NULL)
			s->links.peer_ops->on_message(s, c, m);
		else
			sched__conn_close(c, "peers are no longer served");
		return;
	}
	if (w == NULL) {
		if (strcmp(m->type, "peer") == 0)
			peer_hello(c, m);
		else if (strcmp(m->type, "register") != 0)
			sched__conn_close(c, "message before registration");
		else if (c->peer.controller)
			refuse_close(c, "a controller's certificate may not "
					"register as a worker");
		else
			s->links.conn_ops->on_register(s, c, m);
		return;
	}
	s->links.conn_ops->on_message(s, w, m);
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->handles > 0)
		return;
	rt_buf_free(&c->in);
	rt_buf_free(&c->plain);
	if (c->tls != NULL)
		rt_tls_free(c->tls);
	free(c->tls);
	free(c);
}

static void conn_link(struct conn *c)
{
	struct sched *s = c->s;

	c->next = s->links.conns;
	if (s->links.conns != NULL)
		s->links.conns->pprev = &c->next;
	s->links.conns = c;
	c->pprev = &s->links.conns;
}

/* Closes the handles now (idempotent). */
static void close_now(struct conn *c)
{
	if (c->ended)
		return;
	c->ended = 1;
	if (c->pprev != NULL) {
		*c->pprev = c->next;
		if (c->next != NULL)
			c->next->pprev = c->pprev;
		c->pprev = NULL;
	}
	if (c->h.handle.type == UV_TCP) {
		uv_timer_stop(&c->admit_timer);
		uv_close((uv_handle_t *)&c->admit_timer, conn_closed);
	}
	uv_close(&c->h.handle, conn_closed);
}

static void on_linger_timeout(uv_timer_t *t)
{
	close_now(t->data);
}

static void on_shut(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status; /* the peer's end of file, or the timeout, closes */
}

/* Writes what is queued and says goodbye (TLS). With `linger`, a TCP
 * connection then ends its side (FIN after the queued bytes) and is
 * closed when the peer closes its own, or after CONN_LINGER_MS: closed
 * at once with bytes of the peer unread, it would be reset, and a reset
 * can destroy the last frame (a refusal and its reason) before the peer
 * reads it. Else, and on the Unix socket, it is closed at once. */
static void conn_end(struct conn *c, int linger)
{
	rt_wire_out_close(&c->out);
	if (c->tls != NULL)
		rt_tls_shutdown(c->tls);
	if (linger && c->h.handle.type == UV_TCP && !c->ended &&
	    uv_shutdown(&c->shut_req, &c->h.stream, on_shut) == 0) {
		c->lingering = 1;
		uv_timer_stop(&c->admit_timer);
		uv_timer_start(&c->admit_timer, on_linger_timeout,
			       CONN_LINGER_MS, 0);
		return;
	}
	close_now(c);
}

void sched__conn_close(struct conn *c, const char *why)
{
	struct sched_worker *w = c->worker;

	if (c->closing)
		return;
	c->closing = 1;
	c->worker = NULL;
	if (w != NULL)
		c->s->links.conn_ops->on_gone(c->s, w, why);
	if (c->is_peer && c->s->links.peer_ops != NULL)
		c->s->links.peer_ops->on_gone(c->s, c);
	conn_end(c, 1);
}

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct conn *c = arg;

	handle(c, m);
	return c->closing;
}

/* Decodes `n` bytes of frames and hands them up. */
static void frames(struct conn *c, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	int rc;

	rc = rt_wire_feed(&c->in, data, n, handle_cb, c, &why);
	if (rc < 0 && !c->closing) {
		rt_log(RT_LOG_WARN, "worker connection %s: %s; closing it",
		       c->peer.addr, why.data ? why.data : "bad frame");
		sched__conn_close(c, "protocol error");
	}
	rt_buf_free(&why);
}

static int admit(struct conn *c);
static void tls_read(struct conn *c, const char *data, size_t n);

/* The first bytes on a --listen connection: a TLS record (0x16, a
 * handshake) or, as a frame's length starts, anything else. */
static void sniff(struct conn *c, const char *data)
{
	struct sched_listen *l = c->s->links.listen;

	c->sniffed = 1;
	if ((unsigned char)data[0] == 0x16 && l != NULL && l->tls != NULL) {
		c->peer.transport = SCHED_TLS;
		c->tls = calloc(1, sizeof(*c->tls));
		if (c->tls == NULL ||
		    rt_tls_start(c->tls, l->tls, 1, NULL, &c->h.stream) < 0) {
			free(c->tls);
			c->tls = NULL;
			sched__conn_close(c, "out of memory");
			return;
		}
		rt_wire_out_transport(&c->out, rt_tls_send, c->tls);
		return;
	}
	c->peer.transport = SCHED_TCP;
	admit(c); /* refused unless --insecure */
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = st->data;

	if (c->lingering) {
		/* Read and dropped until the peer closes its end. */
		if (n < 0)
			close_now(c);
		return;
	}
	if (n < 0) {
		if (c->tls != NULL && !c->admitted && !c->closing) {
			/* Gone during the handshake. */
			snprintf(c->peer.tls_error, sizeof(c->peer.tls_error),
				 "the connection closed during the TLS "
				 "handshake");
			admit(c);
			return;
		}
		sched__conn_close(c, n == UV_EOF ? "connection closed"
						 : uv_strerror((int)n));
		return;
	}
	if (n == 0 || c->closing)
		return;
	if (c->h.handle.type == UV_TCP && !c->sniffed) {
		sniff(c, buf->base);
		if (c->closing)
			return;
	}
	if (c->tls != NULL)
		tls_read(c, buf->base, (size_t)n);
	else
		frames(c, buf->base, (size_t)n);
}

/* Whether the certificate the peer of `t` presented names `role`. */
static int peer_role_is(const struct rt_tls *t, const char *role)
{
	X509 *x = SSL_get0_peer_certificate(t->ssl);
	struct rt_cert_info ci;

	return x != NULL && rt_cert_info_of(x, &ci) == 0 &&
	       strcmp(ci.role, role) == 0;
}

/* Bytes of a TLS connection: the handshake, then frames. When the
 * handshake ends the peer's certificate is checked and the connection
 * admitted (or refused, told so over TLS) before any frame is read. */
static void tls_read(struct conn *c, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	int rc;

	rc = rt_tls_feed(c->tls, data, n, &c->plain, &why);
	if (rc < 0) {
		if (!c->admitted) {
			snprintf(c->peer.tls_error, sizeof(c->peer.tls_error),
				 "TLS handshake failed: %s",
				 why.data ? why.data : "?");
			admit(c);
		} else {
			rt_log(RT_LOG_WARN, "worker connection %s: %s",
			       c->peer.addr,
			       why.data ? why.data : "TLS closed");
			sched__conn_close(c, rc == -EPIPE ? "connection closed"
							  : "TLS error");
		}
		goto out;
	}
	if (rc == 1) {
		c->peer.resumed = rt_tls_resumed(c->tls);
		rt_buf_reset(&why);
		/* A worker, or a peer controller (forward.c): the first
		 * message says which it wants to be, and must agree. */
		c->peer.controller = peer_role_is(c->tls,
						  RT_CA_ROLE_CONTROLLER);
		if (rt_tls_peer_check(c->tls,
				      c->peer.controller ? RT_CA_ROLE_CONTROLLER
							 : RT_CA_ROLE_WORKER,
				      &c->peer.cert, &why) < 0)
			snprintf(c->peer.tls_error, sizeof(c->peer.tls_error),
				 "%s", why.data ? why.data : "refused");
		if (admit(c) < 0)
			goto out;
	}
	if (c->plain.len > 0 && c->admitted) {
		/* Handling may close `c` (freed later, by libuv's close
		 * callback) and send, which does not touch `plain`. */
		frames(c, c->plain.data, c->plain.len);
		rt_buf_reset(&c->plain);
	}
	if (c->tls->closed && !c->closing)
		sched__conn_close(c, "connection closed");
out:
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
	if (c->peer.transport == SCHED_UNIX &&
	    uv_fileno(&c->h.handle, &fd) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->peer.uid = cred.uid;
		c->peer.gid = cred.gid;
		if (rt_proc_id_of(cred.pid, &c->peer.proc) < 0)
			c->peer.proc.pid = 0; /* gone already */
	}
	if (c->s->links.conn_ops->on_accept != NULL)
		rc = c->s->links.conn_ops->on_accept(c->s, &c->peer, &why);
	if (rc < 0) {
		/* Told in a frame where it can be read: plain, or once the
		 * TLS handshake is over; else it is just closed. */
		sched__conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
					      "reason",
					      why.data ? why.data : "refused"));
		sched__conn_close(c, "refused");
	} else {
		c->admitted = 1;
		if (c->h.handle.type == UV_TCP)
			uv_timer_stop(&c->admit_timer);
	}
	rt_buf_free(&why);
	return rc < 0 ? -EPERM : 0;
}

/* A new connection on `server` (a Unix socket, or TCP with `tcp`):
 * allocated, linked and accepted. Returns it, or NULL when there is
 * nothing to serve (the listener's error, no memory, a failed accept). */
static struct conn *conn_accept(uv_stream_t *server, int status, int tcp)
{
	struct sched *s = server->data;
	struct conn *c;

	if (status < 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->s = s;
	if (tcp) {
		uv_tcp_init(s->loop, &c->h.tcp);
		uv_timer_init(s->loop, &c->admit_timer);
		c->admit_timer.data = c;
		c->handles = 2;
		/* TCP until its first byte says TLS. */
		c->peer.transport = SCHED_TCP;
		c->peer.uid = (uid_t)-1;
		c->peer.gid = (gid_t)-1;
	} else {
		uv_pipe_init(s->loop, &c->h.pipe, 0);
		c->handles = 1;
		c->peer.transport = SCHED_UNIX;
	}
	c->h.stream.data = c;
	conn_link(c);
	rt_wire_out_init(&c->out, &s->links.flusher, &c->h.stream);
	if (uv_accept(server, &c->h.stream) < 0) {
		c->closing = 1;
		conn_end(c, 0);
		return NULL;
	}
	return c;
}

void sched__on_connection(uv_stream_t *server, int status)
{
	struct conn *c = conn_accept(server, status, 0);

	if (c == NULL || admit(c) < 0)
		return;
	uv_read_start(&c->h.stream, rt_read_alloc, on_read);
}

static void on_admit_timeout(uv_timer_t *t)
{
	struct conn *c = t->data;

	if (c->admitted || c->closing)
		return;
	if (c->tls == NULL) {
		sched__conn_close(c, "silent");
		return;
	}
	snprintf(c->peer.tls_error, sizeof(c->peer.tls_error),
		 "the TLS handshake did not end within %d ms", CONN_ADMIT_MS);
	admit(c);
}

void sched__on_tcp_connection(uv_stream_t *server, int status)
{
	struct conn *c = conn_accept(server, status, 1);

	if (c == NULL)
		return;
	rt_tcp_tune(&c->h.tcp);
	rt_tcp_peer(&c->h.tcp, c->peer.addr, sizeof(c->peer.addr));
	/* Nothing is admitted before the first byte and, for TLS, the end
	 * of the handshake, which must come within CONN_ADMIT_MS. */
	uv_timer_start(&c->admit_timer, on_admit_timeout, CONN_ADMIT_MS, 0);
	uv_read_start(&c->h.stream, rt_read_alloc, on_read);
}

int sched__conn_status(const struct sched_worker *w, struct rt_buf *out)
{
	const struct conn *c = w->conn;
	int rc;

	if (c == NULL || !w->online)
		return rt_buf_puts(out, "transport none\n");
	rc = rt_buf_printf(out, "transport %s\n",
			   sched_transport_name(c->peer.transport));
	if (rc == 0 && c->peer.transport != SCHED_UNIX)
		rc = rt_buf_printf(out, "address %s\n", c->peer.addr);
	if (rc == 0 && c->peer.transport == SCHED_TLS)
		rc = rt_buf_printf(out, "tls_resumed %s\ncert_serial %s\n",
				   c->peer.resumed ? "yes" : "no",
				   c->peer.cert.serial);
	return rc;
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

void sched__conn_close_all(struct sched *s)
{
	struct conn *c;

	while ((c = s->links.conns) != NULL) {
		c->worker = NULL; /* told no one */
		if (c->is_peer && s->links.peer_ops != NULL)
			s->links.peer_ops->on_gone(s, c); /* its requests end */
		c->is_peer = 0;
		if (!c->closing) {
			c->closing = 1;
			conn_end(c, 0); /* unlinks it */
		} else {
			close_now(c); /* lingering: unlinks it */
		}
	}
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
			conn_end(c, 0);
		}
	}
}

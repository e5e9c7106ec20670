/*
 * conn.h - the connections of workers to the controller's socket: frames
 * in and out, and closing. The bottom of the cluster side: it calls
 * nothing in sched/ but the callbacks of struct sched_conn_ops, which
 * face/lifecycle.c sets at sched_start.
 */
#ifndef FNFS_SCHED_CONN_H
#define FNFS_SCHED_CONN_H

#include "../../runtime/base/ca.h"
#include "../../runtime/base/net.h"
#include "../../runtime/base/private.h"
#include "../internal.h"

struct conn;

/* How a worker is connected. */
enum sched_transport {
	SCHED_UNIX, /* DATA/ctl.sock */
	SCHED_TCP,  /* --listen, plain (only with --insecure) */
	SCHED_TLS,  /* --listen, TLS 1.3 with a certificate of the CA */
};

/* Who is at the other end of a connection. On the Unix socket:
 * SO_PEERCRED, read when it is accepted (the credentials of the process
 * that connected). Over TCP: its address and, with TLS, its certificate,
 * once the handshake is over. */
struct sched_peer {
	uid_t uid; /* -1 over TCP */
	gid_t gid;
	struct rt_proc_id proc; /* pid 0: unknown (it exited already) */
	enum sched_transport transport;
	char addr[RT_NET_ADDR_MAX]; /* TCP: "IP:PORT", else "" */
	struct rt_cert_info cert;   /* TLS: its certificate ("" cn: none) */
	char tls_error[256];	    /* TLS: why the certificate will not do,
				       or "" */
	int resumed;		    /* TLS: the session was resumed */
	int controller; /* TLS: its certificate is a controller's (a peer) */
};

/* The word of transport `t`: unix, tcp or tls. */
const char *sched_transport_name(enum sched_transport t);

/* What a connection tells the layers above it. */
struct sched_conn_ops {
	/* A connection was accepted from `p`: returns 0 to serve it, or
	 * -EPERM with the reason in `why` (the peer is told, and the
	 * connection closed before anything is read from it). */
	int (*on_accept)(struct sched *s, const struct sched_peer *p,
			 struct rt_buf *why);
	/* A message on a connection with no worker yet: `register`. */
	void (*on_register)(struct sched *s, struct conn *c,
			    const struct rt_msg *m);
	/* A message from registered worker `w`. */
	void (*on_message)(struct sched *s, struct sched_worker *w,
			   const struct rt_msg *m);
	/* The connection of registered worker `w` closed, for `why`. */
	void (*on_gone)(struct sched *s, struct sched_worker *w,
			const char *why);
};

/* What the connection of a peer controller (a follower that forwards to
 * this leader, forward.c) tells the layer above: set by sched_fwd_serve;
 * without it a peer is refused. */
struct sched_peer_ops {
	/* `peer` came first on `c`, from a certificate of role controller
	 * (or plain TCP with --insecure): returns 0 to take it, or -EPERM
	 * with the reason in `why` (told, and `c` closed). */
	int (*on_peer)(struct sched *s, struct conn *c, const struct rt_msg *m,
		       struct rt_buf *why);
	/* A later message of peer `c`. */
	void (*on_message)(struct sched *s, struct conn *c,
			   const struct rt_msg *m);
	/* Peer `c` closed: forget it (it is freed later). */
	void (*on_gone)(struct sched *s, struct conn *c);
};

/* Accepts a worker's connection on the controller's socket (a libuv
 * connection callback; `server->data` is the struct sched). */
void sched__on_connection(uv_stream_t *server, int status);

/* Accepts a worker's connection on the --listen TCP socket: TLS when its
 * first byte starts a TLS record (0x16), else plain TCP (refused unless
 * --insecure). A libuv connection callback; `server->data` is the struct
 * sched. */
void sched__on_tcp_connection(uv_stream_t *server, int status);

/* Appends the transport lines of worker `w`'s connection to its status:
 * transport, and over TCP address (and tls_resumed, cert_serial). */
int sched__conn_status(const struct sched_worker *w, struct rt_buf *out);

/* The peer of connection `c`. */
const struct sched_peer *sched__conn_peer(const struct conn *c);

/* Queues a message with a body on `c` (dropped if `c` is NULL or
 * closing); consumes the header. */
void sched__conn_send_body(struct conn *c, json_t *header, const void *body,
			   size_t len);

/* Queues a message on `c` (dropped if `c` is NULL or closing); consumes
 * the header. */
void sched__conn_send(struct conn *c, json_t *header);

/* Hands what is queued on `c` to its transport now, not at the end of
 * the loop's turn: a sender of bulk data keeps the socket full. */
void sched__conn_flush(struct conn *c);

/* Bytes queued on `c` and not yet handed to the kernel (frames, and
 * what the transport has yet to write): senders of bulk data (code
 * chunks) keep it bounded so that calls are not stuck behind them. */
size_t sched__conn_backlog(const struct conn *c);

/* Closes `c`; its worker, if any, is gone (on_gone). Idempotent. */
void sched__conn_close(struct conn *c, const char *why);

/* Ties registered worker `w` and connection `c` to each other. */
void sched__conn_bind(struct conn *c, struct sched_worker *w);

/* Unties connection `c` (may be NULL) from its worker (being freed). */
void sched__conn_detach(struct conn *c);

/* At shutdown, after sched__conn_drop of every worker: closes the
 * connections left (peers that never registered) without telling
 * anyone, so that none keeps the loop alive. */
void sched__conn_close_all(struct sched *s);

/* At shutdown: closes the connection of worker `w` (if any) without
 * telling anyone, and marks the worker offline. */
void sched__conn_drop(struct sched_worker *w);

#endif

/*
 * tls.h - TLS 1.3 over libuv streams, on the one loop: OpenSSL drives no
 * socket; it reads the peer's bytes from one memory BIO and writes its
 * own to another, and this module moves them between those BIOs and the
 * stream (see docs/decisions.md, "TLS through memory BIOs"). Both ends
 * present a certificate of the cluster CA (ca.h): the controller checks a
 * worker's after every handshake, resumed or not; a worker checks that the
 * controller's chains to the CA and has the controller's role (not its
 * host name: workers connect by IP address).
 */
#ifndef FNFS_RT_TLS_H
#define FNFS_RT_TLS_H

#include <openssl/ssl.h>
#include <uv.h>

#include "ca.h"
#include "rt.h"

/* One TLS session over one stream. */
struct rt_tls {
	SSL *ssl;	     /* owned */
	BIO *net_in;	     /* the peer's bytes, for OpenSSL (owned by ssl) */
	BIO *net_out;	     /* OpenSSL's bytes, for the peer (owned by ssl) */
	uv_stream_t *stream; /* where net_out goes; NULL: nowhere (tests) */
	struct rt_buf early; /* plaintext sent before the handshake ended */
	int server;
	int done;   /* the handshake is over */
	int closed; /* the peer sent close_notify */
};

/* Makes the SSL_CTX of one side: TLS 1.3 only, the certificate `own` to
 * present, and `ca` to check the peer's against. A server asks for the
 * peer's certificate but lets the handshake end without a good one, so
 * that the refusal can be told over the channel (rt_tls_peer_check); a
 * client refuses a server whose chain does not verify. `ticket_keys`
 * (RT_CA_TICKET_KEY_LEN bytes, server only, may be NULL) keys session
 * tickets, so that sessions resume across restarts; a client keeps the
 * last session's ticket (rt_tls_session). Returns 0 or -EIO with the
 * reason in `why`. */
int rt_tls_ctx_new(SSL_CTX **out, int server, X509 *ca,
		   const struct rt_cred *own, const unsigned char *ticket_keys,
		   struct rt_buf *why);

/* As rt_tls_ctx_new from PEM files; `ticket_keys` is a path or NULL. */
int rt_tls_ctx_files(SSL_CTX **out, int server, const char *ca,
		     const char *cert, const char *key, const char *ticket_keys,
		     struct rt_buf *why);

/* The last session a client context was given by its server (a new
 * reference, or NULL): offer it at the next connection. */
SSL_SESSION *rt_tls_session(SSL_CTX *ctx);

/* Starts a session of `ctx` on `stream` (may be NULL): a client offers
 * `resume` (may be NULL) and sends its first flight at once. Returns 0 or
 * -ENOMEM. */
int rt_tls_start(struct rt_tls *t, SSL_CTX *ctx, int server,
		 SSL_SESSION *resume, uv_stream_t *stream);

/* Frees what `t` holds. */
void rt_tls_free(struct rt_tls *t);

/* Hands `n` bytes read from the peer to `t`: handshake messages are
 * answered, application data is appended to `plain`. Returns 1 when the
 * handshake ended during this call (check the peer before using
 * `plain`), 0, -EPIPE when the peer closed the session and sent nothing
 * more in these bytes, or -EPROTO with the reason in `why`. When the
 * peer's last data and its close come together, the data is appended,
 * 0 (or 1) is returned and t->closed is set: use `plain`, then close. */
int rt_tls_feed(struct rt_tls *t, const void *data, size_t n,
		struct rt_buf *plain, struct rt_buf *why);

/* Encrypts `len` bytes for the peer and writes them to the stream (held
 * until the handshake ends). A struct rt_wire_out write hook: `arg` is
 * the struct rt_tls. Returns 0 or -errno. */
int rt_tls_send(void *arg, const void *data, size_t len);

/* Moves what OpenSSL wrote to `out` (tests), or to the stream. Returns 0
 * or -errno. */
int rt_tls_take(struct rt_tls *t, struct rt_buf *out);
int rt_tls_flush(struct rt_tls *t);

/* Plaintext held until the handshake ends, and ciphertext not yet given
 * to the stream: bytes queued in `t`. */
size_t rt_tls_backlog(const struct rt_tls *t);

/* Queues close_notify for the peer (best effort). */
void rt_tls_shutdown(struct rt_tls *t);

/* Whether the session was resumed from a ticket. */
int rt_tls_resumed(const struct rt_tls *t);

/* Checks the peer of a finished handshake: it has a certificate of the
 * cluster CA, valid now, of role `role`. Fills `ci`. Returns 0, or
 * -EPERM with the reason in `why`. Run after every handshake, resumed or
 * not (a resumed session keeps the peer's certificate). */
int rt_tls_peer_check(const struct rt_tls *t, const char *role,
		      struct rt_cert_info *ci, struct rt_buf *why);

#endif

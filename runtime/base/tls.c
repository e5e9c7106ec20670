/*
 * tls.c - TLS 1.3 through memory BIOs (see tls.h).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tls.h"
#include "wire.h"

/* The session id context: sessions resume only within fnfs. */
static const unsigned char sid_ctx[] = "fnfs";

/* The ex_data slot of a client SSL_CTX holding its last session. */
static int session_slot = -1;

/* Appends OpenSSL's first queued error (or `what` alone) to `why`. */
static int ossl_fail(struct rt_buf *why, const char *what)
{
	unsigned long e = ERR_peek_error();
	char s[256];

	if (why != NULL) {
		if (e != 0) {
			ERR_error_string_n(e, s, sizeof(s));
			rt_buf_printf(why, "%s: %s", what, s);
		} else {
			rt_buf_puts(why, what);
		}
	}
	ERR_clear_error();
	return -EIO;
}

/* The server asks for a certificate and checks it after the handshake,
 * so that it can say why it refuses one (OpenSSL still records the
 * verification result). */
static int accept_any(int ok, X509_STORE_CTX *ctx)
{
	(void)ok;
	(void)ctx;
	return 1;
}

static void free_session(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
			 long argl, void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	SSL_SESSION_free(ptr);
}

/* A client was given a session ticket: keep a copy of the newest (a
 * copy: OpenSSL marks a connection's own session unresumable when the
 * connection ends without close_notify, as a lost one does). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	SSL_SESSION *copy;

	if (!SSL_SESSION_is_resumable(sess))
		return 0;
	copy = SSL_SESSION_dup(sess);
	if (copy == NULL)
		return 0;
	SSL_SESSION_free(SSL_CTX_get_ex_data(ctx, session_slot));
	SSL_CTX_set_ex_data(ctx, session_slot, copy);
	return 0;
}

SSL_SESSION *rt_tls_session(SSL_CTX *ctx)
{
	SSL_SESSION *s = session_slot >= 0
				 ? SSL_CTX_get_ex_data(ctx, session_slot)
				 : NULL;

	if (s != NULL)
		SSL_SESSION_up_ref(s);
	return s;
}

int rt_tls_ctx_new(SSL_CTX **out, int server, X509 *ca,
		   const struct rt_cred *own, const unsigned char *ticket_keys,
		   struct rt_buf *why)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method()
					  : TLS_client_method());
	X509_STORE *store;
	int rc = -EIO;

	if (ctx == NULL)
		return ossl_fail(why, "cannot make a TLS context");
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
		rc = ossl_fail(why, "cannot require TLS 1.3");
		goto out;
	}
	store = SSL_CTX_get_cert_store(ctx);
	if (ca == NULL || X509_STORE_add_cert(store, ca) != 1) {
		rc = ossl_fail(why, "cannot trust the CA");
		goto out;
	}
	if (own != NULL && own->cert != NULL &&
	    (SSL_CTX_use_certificate(ctx, own->cert) != 1 ||
	     SSL_CTX_use_PrivateKey(ctx, own->key) != 1 ||
	     SSL_CTX_check_private_key(ctx) != 1)) {
		rc = ossl_fail(why, "cannot use the certificate");
		goto out;
	}
	if (server) {
		SSL_CTX_set_verify(ctx,
				   SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE,
				   accept_any);
		SSL_CTX_set_session_id_context(ctx, sid_ctx,
					       sizeof(sid_ctx) - 1);
		SSL_CTX_set_num_tickets(ctx, 2);
		if (ticket_keys != NULL &&
		    SSL_CTX_set_tlsext_ticket_keys(ctx, (void *)ticket_keys,
						   RT_CA_TICKET_KEY_LEN) != 1) {
			rc = ossl_fail(why, "cannot set the ticket keys");
			goto out;
		}
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (session_slot < 0)
			session_slot = SSL_CTX_get_ex_new_index(
				0, NULL, NULL, NULL, free_session);
		SSL_CTX_set_session_cache_mode(
			ctx, SSL_SESS_CACHE_CLIENT |
				     SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(ctx, on_new_session);
	}
	*out = ctx;
	ctx = NULL;
	rc = 0;
out:
	SSL_CTX_free(ctx);
	return rc;
}

static int read_keys(const char *path, unsigned char *keys, struct rt_buf *why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		rt_buf_printf(why, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	n = read(fd, keys, RT_CA_TICKET_KEY_LEN);
	close(fd);
	if (n != RT_CA_TICKET_KEY_LEN) {
		rt_buf_printf(why, "%s: not %d bytes", path,
			      RT_CA_TICKET_KEY_LEN);
		return -EINVAL;
	}
	return 0;
}

int rt_tls_ctx_files(SSL_CTX **out, int server, const char *ca,
		     const char *cert, const char *key, const char *ticket_keys,
		     struct rt_buf *why)
{
	struct rt_cred c = { 0 }, own = { 0 };
	unsigned char keys[RT_CA_TICKET_KEY_LEN];
	int rc;

	rc = rt_cred_load(&c, ca, NULL, why);
	if (rc == 0)
		rc = rt_cred_load(&own, cert, key, why);
	if (rc == 0 && ticket_keys != NULL)
		rc = read_keys(ticket_keys, keys, why);
	if (rc == 0)
		rc = rt_tls_ctx_new(out, server, c.cert, &own,
				    ticket_keys ? keys : NULL, why);
	OPENSSL_cleanse(keys, sizeof(keys));
	rt_cred_free(&c);
	rt_cred_free(&own);
	return rc;
}

int rt_tls_start(struct rt_tls *t, SSL_CTX *ctx, int server,
		 SSL_SESSION *resume, uv_stream_t *stream)
{
	memset(t, 0, sizeof(*t));
	t->server = server;
	t->stream = stream;
	t->ssl = SSL_new(ctx);
	t->net_in = BIO_new(BIO_s_mem());
	t->net_out = BIO_new(BIO_s_mem());
	if (t->ssl == NULL || t->net_in == NULL || t->net_out == NULL) {
		BIO_free(t->net_in);
		BIO_free(t->net_out);
		SSL_free(t->ssl);
		memset(t, 0, sizeof(*t));
		ERR_clear_error();
		return -ENOMEM;
	}
	/* An empty memory BIO says "retry", not "end of file". */
	BIO_set_mem_eof_return(t->net_in, -1);
	BIO_set_mem_eof_return(t->net_out, -1);
	SSL_set_bio(t->ssl, t->net_in, t->net_out);
	if (server) {
		SSL_set_accept_state(t->ssl);
	} else {
		SSL_set_connect_state(t->ssl);
		if (resume != NULL)
			SSL_set_session(t->ssl, resume);
		ERR_clear_error();
		SSL_do_handshake(t->ssl); /* the ClientHello */
		ERR_clear_error();
		rt_tls_flush(t);
	}
	return 0;
}

void rt_tls_free(struct rt_tls *t)
{
	SSL_free(t->ssl); /* and its BIOs */
	rt_buf_free(&t->early);
	memset(t, 0, sizeof(*t));
}

/* Why an SSL call that returned `r` failed, or 0 when it only wants more
 * bytes. */
static int ssl_error(struct rt_tls *t, int r, const char *what,
		     struct rt_buf *why)
{
	int e = SSL_get_error(t->ssl, r);

	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	if (e == SSL_ERROR_ZERO_RETURN) {
		t->closed = 1;
		return -EPIPE;
	}
	ossl_fail(why, what);
	return -EPROTO;
}

/* Encrypts `len` plaintext bytes into net_out. */
static int encrypt(struct rt_tls *t, const void *data, size_t len,
		   struct rt_buf *why)
{
	size_t done = 0, n;
	int r;

	/* Before the handshake ends, plaintext waits in t->early. */
	assert(t->ssl != NULL && t->done);
	ERR_clear_error();
	while (done < len) {
		n = len - done > (1u << 30) ? (1u << 30) : len - done;
		r = SSL_write(t->ssl, (const char *)data + done, (int)n);
		if (r <= 0) {
			r = ssl_error(t, r, "TLS write", why);
			return r < 0 ? r : -EPROTO;
		}
		done += (size_t)r;
		assert(done <= len); /* SSL_write took at most what it had */
	}
	return 0;
}

int rt_tls_feed(struct rt_tls *t, const void *data, size_t n,
		struct rt_buf *plain, struct rt_buf *why)
{
	char chunk[16384];
	int r, rc = 0, ended = 0, got = 0;

	assert(n <= INT_MAX); /* what a stream read hands over */
	if (n > 0 && BIO_write(t->net_in, data, (int)n) != (int)n)
		return -ENOMEM;
	ERR_clear_error();
	if (!t->done) {
		r = SSL_do_handshake(t->ssl);
		if (r == 1) {
			t->done = ended = 1;
			if (t->early.len > 0) {
				rc = encrypt(t, t->early.data, t->early.len,
					     why);
				rt_buf_free(&t->early);
			}
		} else {
			rc = ssl_error(t, r, "TLS handshake", why);
		}
	}
	while (rc == 0 && t->done) {
		r = SSL_read(t->ssl, chunk, sizeof(chunk));
		if (r <= 0) {
			rc = ssl_error(t, r, "TLS read", why);
			break;
		}
		if (rt_buf_append(plain, chunk, (size_t)r) < 0)
			rc = -ENOMEM;
		got = 1;
		/* Not another call only to hear that nothing is left. */
		if (BIO_ctrl_pending(t->net_in) == 0 &&
		    SSL_pending(t->ssl) == 0)
			break;
	}
	/* Handshake answers, tickets, key updates. */
	if (rt_tls_flush(t) < 0 && rc == 0) {
		t->closed = 1; /* the stream is broken */
		rc = -EPIPE;
	}
	/* A peer that ends its handshake, or sends its last records, and
	 * closes at once: what it sent is handed over first (a refusal and
	 * its reason, a worker's last reports), and t->closed tells the
	 * caller it is gone. */
	if (rc < 0 && !(rc == -EPIPE && (ended || got)))
		return rc;
	return ended;
}

int rt_tls_take(struct rt_tls *t, struct rt_buf *out)
{
	char *p;
	long n = BIO_get_mem_data(t->net_out, &p);
	int rc = 0;

	if (n > 0) {
		rc = rt_buf_append(out, p, (size_t)n);
		if (rc == 0)
			(void)BIO_reset(t->net_out);
	}
	return rc;
}

int rt_tls_flush(struct rt_tls *t)
{
	char *p;
	long n;
	int rc;

	if (t->stream == NULL)
		return 0;
	n = BIO_get_mem_data(t->net_out, &p);
	if (n <= 0)
		return 0;
	/* Written at once, or copied onto the stream's write queue. */
	rc = rt_stream_write(t->stream, p, (size_t)n);
	(void)BIO_reset(t->net_out);
	return rc;
}

int rt_tls_send(void *arg, const void *data, size_t len)
{
	struct rt_tls *t = arg;
	int rc;

	if (t->ssl == NULL)
		return -EPIPE;
	if (!t->done)
		return rt_buf_append(&t->early, data, len);
	rc = encrypt(t, data, len, NULL);
	if (rc == 0)
		rc = rt_tls_flush(t);
	return rc;
}

size_t rt_tls_backlog(const struct rt_tls *t)
{
	return t->early.len +
	       (t->net_out ? (size_t)BIO_ctrl_pending(t->net_out) : 0);
}

void rt_tls_shutdown(struct rt_tls *t)
{
	if (t->ssl == NULL || !t->done)
		return;
	ERR_clear_error();
	SSL_shutdown(t->ssl);
	ERR_clear_error();
	rt_tls_flush(t);
}

int rt_tls_resumed(const struct rt_tls *t)
{
	return t->ssl != NULL && SSL_session_reused(t->ssl);
}

int rt_tls_peer_check(const struct rt_tls *t, const char *role,
		      struct rt_cert_info *ci, struct rt_buf *why)
{
	X509 *x = SSL_get0_peer_certificate(t->ssl);
	long v;

	memset(ci, 0, sizeof(*ci));
	if (x == NULL) {
		rt_buf_puts(why, "no client certificate");
		return -EPERM;
	}
	if (rt_cert_info_of(x, ci) < 0) {
		rt_buf_puts(why, "the certificate names no one (no CN)");
		return -EPERM;
	}
	v = SSL_get_verify_result(t->ssl);
	if (v == X509_V_ERR_CERT_HAS_EXPIRED) {
		rt_buf_printf(why, "the certificate of %s has expired", ci->cn);
		return -EPERM;
	}
	if (v != X509_V_OK) {
		rt_buf_printf(why,
			      "the certificate of %s is not from the cluster "
			      "CA: %s",
			      ci->cn, X509_verify_cert_error_string(v));
		return -EPERM;
	}
	/* A resumed session was verified when it began: it may have
	 * expired since. */
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		rt_buf_printf(why, "the certificate of %s has expired", ci->cn);
		return -EPERM;
	}
	if (strcmp(ci->role, role) != 0) {
		rt_buf_printf(
			why, "the certificate of %s is for a %s, not a %s",
			ci->cn, ci->role[0] ? ci->role : "(no role)", role);
		return -EPERM;
	}
	return 0;
}

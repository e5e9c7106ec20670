/*
 * test_tls.c - the cluster CA (runtime/base/ca.c) and the memory-BIO TLS engine
 * (runtime/base/tls.c): handshakes in memory, resumption, garbage, and the
 * checks of a peer's certificate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/ca.h"
#include "../../runtime/base/net.h"
#include "../../runtime/base/tls.h"
#include "../../runtime/base/wire.h"
#include "../../sched/store/store.h"
#include "unit.h"

/* A CA, the controller's credentials and a worker's. */
struct pki {
	struct rt_cred ca, ctl, w;
};

static void pki_make(struct pki *p, const char *id, int days)
{
	struct rt_buf why = { 0 };

	memset(p, 0, sizeof(*p));
	CHECK(rt_ca_make(&p->ca, 30, &why) == 0);
	CHECK(rt_ca_issue(&p->ca, RT_CA_CONTROLLER_CN, RT_CA_ROLE_CONTROLLER,
			  30, &p->ctl, &why) == 0);
	CHECK(rt_ca_issue(&p->ca, id, RT_CA_ROLE_WORKER, days, &p->w, &why) ==
	      0);
	rt_buf_free(&why);
}

static void pki_free(struct pki *p)
{
	rt_cred_free(&p->ca);
	rt_cred_free(&p->ctl);
	rt_cred_free(&p->w);
}

/* Moves bytes both ways until neither side has any. Returns the last
 * feed result of the server (or the first error of either). */
static int pump(struct rt_tls *c, struct rt_tls *s, struct rt_buf *cplain,
		struct rt_buf *splain, int *sended, int *cended)
{
	struct rt_buf b = { 0 }, why = { 0 };
	int i, r, rc = 0;

	for (i = 0; i < 20; i++) {
		rt_buf_reset(&b);
		rt_tls_take(c, &b);
		if (b.len > 0) {
			r = rt_tls_feed(s, b.data, b.len, splain, &why);
			if (r < 0) {
				rc = r;
				break;
			}
			if (r == 1)
				*sended = 1;
		}
		rt_buf_reset(&b);
		rt_tls_take(s, &b);
		if (b.len > 0) {
			r = rt_tls_feed(c, b.data, b.len, cplain, &why);
			if (r < 0) {
				rc = r;
				break;
			}
			if (r == 1)
				*cended = 1;
		}
		if (rt_tls_backlog(c) == 0 && rt_tls_backlog(s) == 0 &&
		    b.len == 0)
			break;
	}
	rt_buf_free(&b);
	rt_buf_free(&why);
	return rc;
}

TEST(tls_handshake_in_memory)
{
	struct pki p;
	SSL_CTX *sc = NULL, *cc = NULL;
	struct rt_tls s, c;
	struct rt_buf sp = { 0 }, cp = { 0 }, why = { 0 };
	struct rt_cert_info ci;
	int se = 0, ce = 0;

	pki_make(&p, "w1", 30);
	CHECK(rt_tls_ctx_new(&sc, 1, p.ca.cert, &p.ctl, NULL, &why) == 0);
	CHECK(rt_tls_ctx_new(&cc, 0, p.ca.cert, &p.w, NULL, &why) == 0);
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	CHECK(rt_tls_start(&c, cc, 0, NULL, NULL) == 0);
	/* Sent before the handshake ends: held, then delivered in order. */
	CHECK(rt_tls_send(&c, "hello ", 6) == 0);
	CHECK(rt_tls_send(&c, "server", 6) == 0);
	CHECK(rt_tls_backlog(&c) >= 12);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	CHECK(se && ce);
	CHECK(s.done && c.done);
	CHECK(sp.len == 12 && memcmp(sp.data, "hello server", 12) == 0);
	CHECK(SSL_version(s.ssl) == TLS1_3_VERSION);
	CHECK(!rt_tls_resumed(&c));
	/* Each side checks the other. */
	CHECK(rt_tls_peer_check(&s, RT_CA_ROLE_WORKER, &ci, &why) == 0);
	CHECK_STR(ci.cn, "w1");
	CHECK(rt_tls_peer_check(&c, RT_CA_ROLE_CONTROLLER, &ci, &why) == 0);
	CHECK_STR(ci.cn, RT_CA_CONTROLLER_CN);
	/* The wrong role is refused. */
	rt_buf_reset(&why);
	CHECK(rt_tls_peer_check(&s, RT_CA_ROLE_CONTROLLER, &ci, &why) ==
	      -EPERM);
	CHECK(why.data && strstr(why.data, "not a controller"));
	/* Data the other way. */
	CHECK(rt_tls_send(&s, "back", 4) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	CHECK(cp.len == 4 && memcmp(cp.data, "back", 4) == 0);
	rt_tls_free(&s);
	rt_tls_free(&c);
	SSL_CTX_free(sc);
	SSL_CTX_free(cc);
	rt_buf_free(&sp);
	rt_buf_free(&cp);
	rt_buf_free(&why);
	pki_free(&p);
}

/* The peer's last records and its close_notify in one read: the data
 * is handed over, then the close is seen (a refusal and its reason are
 * not lost when they arrive with the end of the session). */
TEST(tls_last_data_and_close_come_together)
{
	struct pki p;
	SSL_CTX *sc = NULL, *cc = NULL;
	struct rt_tls s, c;
	struct rt_buf sp = { 0 }, cp = { 0 }, b = { 0 }, why = { 0 };
	int se = 0, ce = 0;

	pki_make(&p, "w1", 30);
	CHECK(rt_tls_ctx_new(&sc, 1, p.ca.cert, &p.ctl, NULL, &why) == 0);
	CHECK(rt_tls_ctx_new(&cc, 0, p.ca.cert, &p.w, NULL, &why) == 0);
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	CHECK(rt_tls_start(&c, cc, 0, NULL, NULL) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	CHECK(se && ce);
	rt_buf_reset(&cp);
	CHECK(rt_tls_send(&s, "refused: why", 12) == 0);
	rt_tls_shutdown(&s);
	rt_tls_take(&s, &b);
	CHECK(b.len > 0);
	CHECK(rt_tls_feed(&c, b.data, b.len, &cp, &why) == 0);
	CHECK(cp.len == 12 && memcmp(cp.data, "refused: why", 12) == 0);
	CHECK(c.closed);
	/* A close alone is -EPIPE. */
	rt_buf_reset(&cp);
	CHECK(rt_tls_feed(&c, NULL, 0, &cp, &why) == -EPIPE);
	CHECK(cp.len == 0);
	rt_tls_free(&s);
	rt_tls_free(&c);
	SSL_CTX_free(sc);
	SSL_CTX_free(cc);
	rt_buf_free(&sp);
	rt_buf_free(&cp);
	rt_buf_free(&b);
	rt_buf_free(&why);
	pki_free(&p);
}

TEST(tls_session_resumes_across_server_contexts)
{
	struct pki p;
	SSL_CTX *sc = NULL, *sc2 = NULL, *cc = NULL;
	struct rt_tls s, c;
	struct rt_buf sp = { 0 }, cp = { 0 }, why = { 0 };
	struct rt_cert_info ci;
	unsigned char keys[RT_CA_TICKET_KEY_LEN];
	SSL_SESSION *sess;
	int se = 0, ce = 0;

	memset(keys, 7, sizeof(keys));
	pki_make(&p, "w1", 30);
	CHECK(rt_tls_ctx_new(&sc, 1, p.ca.cert, &p.ctl, keys, &why) == 0);
	CHECK(rt_tls_ctx_new(&cc, 0, p.ca.cert, &p.w, NULL, &why) == 0);
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	CHECK(rt_tls_start(&c, cc, 0, NULL, NULL) == 0);
	CHECK(rt_tls_send(&c, "x", 1) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	/* The tickets come after the handshake, with the server's data. */
	CHECK(rt_tls_send(&s, "y", 1) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	sess = rt_tls_session(cc);
	CHECK(sess != NULL);
	rt_tls_free(&s);
	rt_tls_free(&c);
	/* A new server context (a restarted controller) with the same
	 * ticket keys resumes the session, and still knows the peer. */
	CHECK(rt_tls_ctx_new(&sc2, 1, p.ca.cert, &p.ctl, keys, &why) == 0);
	CHECK(rt_tls_start(&s, sc2, 1, NULL, NULL) == 0);
	CHECK(rt_tls_start(&c, cc, 0, sess, NULL) == 0);
	se = ce = 0;
	CHECK(rt_tls_send(&c, "z", 1) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	CHECK(se && ce);
	CHECK(rt_tls_resumed(&c));
	CHECK(rt_tls_resumed(&s));
	CHECK(rt_tls_peer_check(&s, RT_CA_ROLE_WORKER, &ci, &why) == 0);
	CHECK_STR(ci.cn, "w1");
	SSL_SESSION_free(sess);
	rt_tls_free(&s);
	rt_tls_free(&c);
	SSL_CTX_free(sc);
	SSL_CTX_free(sc2);
	SSL_CTX_free(cc);
	rt_buf_free(&sp);
	rt_buf_free(&cp);
	rt_buf_free(&why);
	pki_free(&p);
}

TEST(tls_garbage_is_a_clean_error)
{
	struct pki p;
	SSL_CTX *sc = NULL;
	struct rt_tls s;
	struct rt_buf sp = { 0 }, why = { 0 };
	static const char junk[] = "\x00\x00\x00\x10{\"type\":\"register\"}"
				   "GET / HTTP/1.1\r\n\r\n";

	pki_make(&p, "w1", 30);
	CHECK(rt_tls_ctx_new(&sc, 1, p.ca.cert, &p.ctl, NULL, &why) == 0);
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	CHECK(rt_tls_feed(&s, junk, sizeof(junk) - 1, &sp, &why) == -EPROTO);
	CHECK(why.len > 0);
	CHECK(sp.len == 0);
	rt_tls_free(&s);
	/* A record header that claims TLS, then noise. */
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	rt_buf_reset(&why);
	CHECK(rt_tls_feed(&s, "\x16\x03\x01\x00\x05zzzzz", 10, &sp, &why) ==
	      -EPROTO);
	CHECK(why.len > 0);
	rt_tls_free(&s);
	SSL_CTX_free(sc);
	rt_buf_free(&sp);
	rt_buf_free(&why);
	pki_free(&p);
}

/* Runs a handshake of a client presenting `client` (NULL: nothing) and
 * returns the server's verdict on it, with the reason in `why`. */
static int verdict(const struct pki *p, const struct rt_cred *client,
		   struct rt_buf *why)
{
	SSL_CTX *sc = NULL, *cc = NULL;
	struct rt_tls s, c;
	struct rt_buf sp = { 0 }, cp = { 0 };
	struct rt_cert_info ci;
	int se = 0, ce = 0, rc;

	CHECK(rt_tls_ctx_new(&sc, 1, p->ca.cert, &p->ctl, NULL, why) == 0);
	CHECK(rt_tls_ctx_new(&cc, 0, p->ca.cert, client, NULL, why) == 0);
	CHECK(rt_tls_start(&s, sc, 1, NULL, NULL) == 0);
	CHECK(rt_tls_start(&c, cc, 0, NULL, NULL) == 0);
	CHECK(pump(&c, &s, &cp, &sp, &se, &ce) == 0);
	CHECK(se);
	rc = rt_tls_peer_check(&s, RT_CA_ROLE_WORKER, &ci, why);
	rt_tls_free(&s);
	rt_tls_free(&c);
	SSL_CTX_free(sc);
	SSL_CTX_free(cc);
	rt_buf_free(&sp);
	rt_buf_free(&cp);
	return rc;
}

TEST(tls_refuses_bad_client_certificates)
{
	struct pki p, other;
	struct rt_cred expired = { 0 }, ctl_as_client;
	struct rt_buf why = { 0 };
	struct rt_cred none = { 0 };

	pki_make(&p, "w1", 30);
	pki_make(&other, "w1", 30);
	CHECK(verdict(&p, &p.w, &why) == 0);
	rt_buf_reset(&why);
	CHECK(verdict(&p, &none, &why) == -EPERM);
	CHECK_STR(why.data, "no client certificate");
	rt_buf_reset(&why);
	CHECK(verdict(&p, &other.w, &why) == -EPERM);
	CHECK(why.data && strstr(why.data, "not from the cluster CA"));
	rt_buf_reset(&why);
	CHECK(rt_ca_issue(&p.ca, "w1", RT_CA_ROLE_WORKER, 0, &expired, &why) ==
	      0);
	rt_buf_reset(&why);
	CHECK(verdict(&p, &expired, &why) == -EPERM);
	CHECK(why.data && strstr(why.data, "expired"));
	/* The controller's own certificate is no worker's. */
	ctl_as_client = p.ctl;
	rt_buf_reset(&why);
	CHECK(verdict(&p, &ctl_as_client, &why) == -EPERM);
	CHECK(why.len > 0);
	rt_cred_free(&expired);
	rt_buf_free(&why);
	pki_free(&p);
	pki_free(&other);
}

TEST(ca_cert_info)
{
	struct pki p;
	struct rt_cert_info a, b;
	int64_t before = (int64_t)time(NULL), after;

	pki_make(&p, "worker-7.x", 10);
	after = (int64_t)time(NULL); /* key generation may take seconds */
	CHECK(rt_cert_info_of(p.w.cert, &a) == 0);
	CHECK_STR(a.cn, "worker-7.x");
	CHECK_STR(a.role, RT_CA_ROLE_WORKER);
	CHECK(strlen(a.serial) == 32); /* 128 bits */
	CHECK(a.not_before <= after && a.not_before >= before - 5);
	CHECK(a.not_after - a.not_before == 10 * 86400);
	CHECK(rt_cert_info_of(p.ctl.cert, &b) == 0);
	CHECK_STR(b.role, RT_CA_ROLE_CONTROLLER);
	CHECK(strcmp(a.serial, b.serial) != 0);
	/* The CA signed it. */
	CHECK(X509_verify(p.w.cert, p.ca.key) == 1);
	pki_free(&p);
	/* A name that could break a log or journal line is shown tamed. */
	{
		struct rt_cred ca = { 0 }, evil = { 0 };
		struct rt_buf why = { 0 };

		CHECK(rt_ca_make(&ca, 1, &why) == 0);
		CHECK(rt_ca_issue(&ca, "w1\nworker.registered x\x7f", "worker",
				  1, &evil, &why) == 0);
		CHECK(rt_cert_info_of(evil.cert, &a) == 0);
		CHECK_STR(a.cn, "w1?worker.registered x?");
		rt_cred_free(&ca);
		rt_cred_free(&evil);
		rt_buf_free(&why);
	}
}

TEST(ca_files_and_modes)
{
	char tmpl[] = "/tmp/fnfs-ca-XXXXXX";
	char *dir = mkdtemp(tmpl);
	struct rt_buf msg = { 0 }, path = { 0 };
	struct rt_cred c = { 0 };
	struct stat st;

	CHECK(dir != NULL);
	if (dir == NULL)
		return;
	CHECK(rt_ca_init_dir(dir, &msg) == 0);
	rt_buf_reset(&msg);
	CHECK(rt_ca_init_dir(dir, &msg) == -EEXIST);
	rt_ca_path(&path, dir, NULL);
	CHECK(stat(path.data, &st) == 0 && (st.st_mode & 0777) == 0700);
	rt_ca_path(&path, dir, "ca.key");
	CHECK(stat(path.data, &st) == 0 && (st.st_mode & 0777) == 0600);
	rt_ca_path(&path, dir, "ticket.key");
	CHECK(stat(path.data, &st) == 0 && st.st_size == RT_CA_TICKET_KEY_LEN);
	rt_buf_reset(&msg);
	CHECK(rt_ca_issue_files(dir, "w9", dir, 5, &msg) == 0);
	rt_buf_reset(&path);
	rt_buf_printf(&path, "%s/w9.key", dir);
	CHECK(stat(path.data, &st) == 0 && (st.st_mode & 0777) == 0600);
	/* Never overwritten. */
	rt_buf_reset(&msg);
	CHECK(rt_ca_issue_files(dir, "w9", dir, 5, &msg) == -EEXIST);
	rt_buf_reset(&path);
	rt_buf_printf(&path, "%s/w9.pem", dir);
	CHECK(rt_cred_load(&c, path.data, NULL, &msg) == 0);
	rt_cred_free(&c);
	rt_buf_reset(&path);
	rt_buf_printf(&path, "rm -rf '%s'", dir);
	CHECK(system(path.data) == 0);
	rt_buf_free(&msg);
	rt_buf_free(&path);
}

TEST(net_addr_parse)
{
	struct sockaddr_storage ss;
	char s[RT_NET_ADDR_MAX];

	CHECK(rt_addr_parse("127.0.0.1:7443", 0, &ss) == 0);
	rt_addr_format((struct sockaddr *)&ss, s, sizeof(s));
	CHECK_STR(s, "127.0.0.1:7443");
	CHECK(rt_addr_parse("[::1]:80", 0, &ss) == 0);
	rt_addr_format((struct sockaddr *)&ss, s, sizeof(s));
	CHECK_STR(s, "[::1]:80");
	CHECK(rt_addr_parse("0.0.0.0:0", 1, &ss) == 0);
	CHECK(rt_addr_parse("0.0.0.0:0", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("localhost:80", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("10.0.0.1", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("10.0.0.1:", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("10.0.0.1:65536", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("10.0.0.1:8x", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("::1:80", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse("[::1:80", 0, &ss) == -EINVAL);
	CHECK(rt_addr_parse(":80", 0, &ss) == -EINVAL);
}

TEST(net_backoff_full_jitter)
{
	uint64_t rng = 42;
	int i, d, lo = 1 << 30, hi = -1;

	for (i = 0; i < 10000; i++) {
		d = rt_backoff_delay(2000, &rng);
		CHECK(d >= 0 && d <= 2000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	/* Spread over the whole range, not bunched. */
	CHECK(lo < 100 && hi > 1900);
	CHECK(rt_backoff_delay(0, &rng) == 0);
	rng = 0; /* a zero state still moves */
	CHECK(rt_backoff_delay(100, &rng) <= 100 && rng != 0);
}

static int hook_calls;
static struct rt_buf hook_got;

static int hook(void *arg, const void *data, size_t len)
{
	CHECK(arg == &hook_got);
	hook_calls++;
	return rt_buf_append(&hook_got, data, len);
}

TEST(wire_out_transport_hook)
{
	struct rt_wire_out o;
	struct rt_msg m;
	size_t used;
	uv_pipe_t fake; /* never written: the hook takes the bytes */

	memset(&fake, 0, sizeof(fake));
	rt_wire_out_init(&o, NULL, (uv_stream_t *)&fake);
	rt_wire_out_transport(&o, hook, &hook_got);
	CHECK(rt_wire_out_send(&o, json_pack("{s:s}", "type", "ping"), "ab",
			       2) == 0);
	CHECK(hook_calls == 1);
	CHECK(rt_wire_decode(hook_got.data, hook_got.len, &m, &used, NULL) ==
	      1);
	CHECK_STR(m.type, "ping");
	CHECK(m.body_len == 2 && memcmp(m.body, "ab", 2) == 0);
	CHECK(used == hook_got.len);
	rt_msg_free(&m);
	rt_wire_out_close(&o);
	rt_buf_free(&hook_got);
}

TEST(store_revocation_rules)
{
	char tmpl[] = "/tmp/fnfs-revoke-XXXXXX", path[128], cmd[160];
	char *dir = mkdtemp(tmpl);
	struct store *st = NULL;

	CHECK(dir != NULL);
	if (dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/fnfs.db", dir);
	CHECK(store_open(&st, path) == 0);
	if (st == NULL)
		return;
	CHECK(store_revoked(st, "w1", "AA", 1000) == 0);
	/* w1 revoked at 2000 s, last seen with serial AA. */
	CHECK(store_revoke(st, "w1", "AA", 2000000) == 0);
	CHECK(store_revoked(st, "w1", "AA", 5000) == 1); /* by serial */
	CHECK(store_revoked(st, "w1", "BB", 1999) == 1); /* issued before */
	CHECK(store_revoked(st, "w1", "BB", 2000) == 1); /* the same second */
	CHECK(store_revoked(st, "w1", "BB", 2001) == 0); /* a new one */
	CHECK(store_revoked(st, "w2", "CC", 10) == 0);	 /* another id */
	/* A worker never seen with a certificate: every one until then. */
	CHECK(store_revoke(st, "w2", "", 3000000) == 0);
	CHECK(store_revoked(st, "w2", "CC", 10) == 1);
	CHECK(store_revoked(st, "w3", "", 10) == 0); /* '' is no serial */
	/* Kept across a reopen. */
	store_close(st);
	CHECK(store_open(&st, path) == 0);
	CHECK(store_revoked(st, "w1", "AA", 99999) == 1);
	store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

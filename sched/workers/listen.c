/*
 * listen.c - the --listen TCP socket and the controller's TLS context
 * (see listen.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/base/net.h"
#include "../../runtime/base/tls.h"
#include "conn.h"
#include "listen.h"

static const char *const needed[] = { "ca.pem", "controller.pem",
				      "controller.key", "ticket.key" };

int sched_listen_check(const char *datadir, struct rt_buf *why)
{
	struct rt_buf p = { 0 };
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(needed) / sizeof(needed[0]) && rc == 0; i++) {
		rt_ca_path(&p, datadir, needed[i]);
		if (access(p.data, R_OK) < 0) {
			rc = -ENOENT;
			rt_buf_printf(why,
				      "--listen needs the cluster CA, and %s "
				      "is missing: run fnfs ca init --data %s",
				      p.data, datadir);
		}
	}
	rt_buf_free(&p);
	return rc;
}

static void listen_closed(uv_handle_t *h)
{
	struct sched_listen *l = h->data;

	SSL_CTX_free(l->tls);
	free(l);
}

int sched__listen_start(struct sched *s, const char *hostport, int insecure)
{
	struct sched_listen *l = NULL;
	struct sockaddr_storage ss;
	struct rt_buf why = { 0 }, ca = { 0 }, cert = { 0 }, key = { 0 },
		      tk = { 0 };
	int len = sizeof(ss), rc;

	rc = rt_addr_parse(hostport, 1, &ss);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "--listen %s: want IP:PORT", hostport);
		goto out;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	l->insecure = insecure;
	rt_ca_path(&ca, s->datadir, "ca.pem");
	rt_ca_path(&cert, s->datadir, "controller.pem");
	rt_ca_path(&key, s->datadir, "controller.key");
	rt_ca_path(&tk, s->datadir, "ticket.key");
	rc = rt_tls_ctx_files(&l->tls, 1, ca.data, cert.data, key.data, tk.data,
			      &why);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "--listen: %s",
		       why.data ? why.data : "no TLS");
		free(l);
		l = NULL;
		goto out;
	}
	uv_tcp_init(s->loop, &l->server);
	l->server.data = s;
	rc = uv_tcp_bind(&l->server, (struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&l->server, 128,
			       sched__on_tcp_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&l->server, (struct sockaddr *)&ss,
					&len);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot listen on %s: %s", hostport,
		       uv_strerror(rc));
		l->server.data = l;
		uv_close((uv_handle_t *)&l->server, listen_closed);
		l = NULL;
		rc = -EIO;
		goto out;
	}
	rt_addr_format((struct sockaddr *)&ss, l->addr, sizeof(l->addr));
	s->links.listen = l;
	rt_log(RT_LOG_INFO, "listening for workers on %s (TLS 1.3%s)", l->addr,
	       insecure ? ", and plain TCP" : "");
	if (insecure)
		rt_log(RT_LOG_WARN,
		       "--insecure: workers on %s may also connect over "
		       "plain TCP, unauthenticated and unencrypted, and "
		       "register under any id. For tests and loopback only.",
		       l->addr);
out:
	rt_buf_free(&why);
	rt_buf_free(&ca);
	rt_buf_free(&cert);
	rt_buf_free(&key);
	rt_buf_free(&tk);
	return rc;
}

void sched__listen_close(struct sched *s)
{
	struct sched_listen *l = s->links.listen;

	if (l == NULL)
		return;
	s->links.listen = NULL;
	l->server.data = l;
	uv_close((uv_handle_t *)&l->server, listen_closed);
}

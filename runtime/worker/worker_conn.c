/*
 * worker_conn.c - the worker's connection to its controller: connecting
 * (a Unix socket, TCP or TLS, to each controller of the list in turn,
 * with backoff between rounds), the TLS handshake and the check of the
 * controller's certificate, and reading: frames are decoded and handed to
 * rt__worker_handle in slices, so that the loop runs between them. A lost
 * connection is tried again until the orphan timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "worker.h"
#include "worker_int.h"

/* A connection not registered this long after it was started (a connect
 * or a TLS handshake with no answer) is given up and tried again. */
#define CONNECT_TIMEOUT_MS 5000
/* The controller's messages are handled in slices of about this long:
 * a hundred starts at once (a failover) take the better part of a second,
 * and between slices the loop runs (the started reports go out as the
 * spawns proceed, pings are answered, exits reaped). */
#define SLICE_MS 10

static void on_resume(uv_idle_t *h);

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct rt_worker *w = arg;

	rt__worker_handle(w, m);
	/* A long run of messages (100 starts of sandboxed instances take
	 * seconds on a busy machine) keeps the loop from its tick: the
	 * heartbeat goes out between them (frames wait for the end of the
	 * loop's iteration otherwise), so the controller does not take this
	 * worker for silent while it starts what it was given. */
	if (w->connected && rt_mono_ms() - w->beat_mono >= RT_SAMPLE_MS) {
		rt__worker_send_heartbeat(w, rt__worker_samples(w));
		rt_wire_out_flush(&w->out); /* now, not after the run */
	}
	/* Stop when the connection ended while handling. */
	if (!w->connected && !w->connecting)
		return 1;
	/* The rest in the next slice (on_resume), after the loop has run. */
	return rt_mono_ms() - w->slice_t0 >= SLICE_MS ? RT_WIRE_PAUSE : 0;
}

/* Decodes `n` bytes of frames and handles them, with what a slice left
 * in `in` first. */
static void frames(struct rt_worker *w, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	int rc;

	w->slice_t0 = rt_mono_ms();
	rc = rt_wire_feed(&w->in, data, n, handle_cb, w, &why);
	if (rc == RT_WIRE_PAUSE && !w->closed)
		uv_idle_start(&w->resume, on_resume);
	else
		uv_idle_stop(&w->resume);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR,
		       "worker %s: bad message from the controller: %s", w->id,
		       why.data ? why.data : "?");
		rt__worker_conn_lost(w, "protocol error");
	}
	rt_buf_free(&why);
}

/* The next slice of the messages already read. */
static void on_resume(uv_idle_t *h)
{
	struct rt_worker *w = h->data;

	if (!w->connected && !w->connecting) {
		uv_idle_stop(h); /* lost meanwhile: `in` was emptied */
		return;
	}
	frames(w, NULL, 0);
}

/* Bytes of a TLS connection: the handshake, at whose end the controller's
 * certificate is checked (chain to --ca by OpenSSL, role here), then
 * frames. */
static void tls_read(struct rt_worker *w, const char *data, size_t n)
{
	struct rt_buf why = { 0 };
	struct rt_cert_info ci;
	int rc;

	rc = rt_tls_feed(&w->tls, data, n, &w->plain, &why);
	if (rc < 0) {
		if (rc != -EPIPE) /* not a close_notify */
			rt_log(RT_LOG_ERROR, "worker %s: TLS with %s: %s",
			       w->id, rt_connect_target(&w->targets)->text,
			       why.data ? why.data : "error");
		rt__worker_conn_lost(w, rc == -EPIPE ? "closed" : "TLS error");
		goto out;
	}
	if (rc == 1) {
		rt_buf_reset(&why);
		if (rt_tls_peer_check(&w->tls, RT_CA_ROLE_CONTROLLER, &ci,
				      &why) < 0) {
			rt_log(RT_LOG_ERROR,
			       "worker %s: %s is no controller of this "
			       "cluster: %s",
			       w->id, rt_connect_target(&w->targets)->text,
			       why.data);
			rt__worker_conn_lost(w, "not the controller");
			goto out;
		}
		rt_log(RT_LOG_INFO, "worker %s: TLS session with %s %s", w->id,
		       rt_connect_target(&w->targets)->text,
		       rt_tls_resumed(&w->tls) ? "resumed"
					       : "new (not resumed)");
	}
	if (w->plain.len > 0) {
		frames(w, w->plain.data, w->plain.len);
		rt_buf_reset(&w->plain);
	}
	if (w->tls.closed)
		rt__worker_conn_lost(w, "closed");
out:
	rt_buf_free(&why);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_worker *w = s->data;

	if (n < 0) {
		rt__worker_conn_lost(w, n == UV_EOF ? "closed"
						    : uv_strerror((int)n));
		return;
	}
	if (w->tls.ssl != NULL)
		tls_read(w, buf->base, (size_t)n);
	else
		frames(w, buf->base, (size_t)n);
}

/* ========================================================= connection */

static void on_retry(uv_timer_t *t)
{
	rt__worker_try_connect(t->data);
}

static void conn_closed(uv_handle_t *h)
{
	struct rt_worker *w = h->data;
	char from[RT_CONNECT_TEXT_MAX];
	int delay, over = 0;

	rt_tls_free(&w->tls);
	rt_buf_reset(&w->plain);
	if (w->shutting_down)
		return;
	if (rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms) {
		rt__worker_shutdown(w,
				    "no controller within the orphan timeout");
		return;
	}
	if (w->next_delay_ms >= 0) {
		/* A redirect: rt_connect_redirect chose the target. */
		delay = w->next_delay_ms;
		w->next_delay_ms = -1;
	} else {
		/* The next controller of the list; between full rounds (and
		 * after a registered connection was lost) full jitter, so
		 * that the workers that lost one controller do not all come
		 * back in the same instant. */
		snprintf(from, sizeof(from), "%s",
			 rt_connect_target(&w->targets)->text);
		delay = rt_connect_failed(&w->targets, w->was_registered,
					  &w->rng, &over);
		if (w->targets.n > 1 ||
		    strcmp(from, rt_connect_target(&w->targets)->text) != 0)
			rt_log(RT_LOG_INFO,
			       "worker %s: %s with %s (%s); trying %s%s in %d "
			       "ms",
			       w->id,
			       w->was_registered ? "lost the connection"
						 : "no registration",
			       from, w->lost_why ? w->lost_why : "?",
			       rt_connect_target(&w->targets)->text,
			       over && !w->was_registered
				       ? " (every controller tried: backoff)"
				       : "",
			       delay);
	}
	w->was_registered = 0;
	uv_timer_start(&w->retry, on_retry, (uint64_t)delay, 0);
}

void rt__worker_conn_lost(struct rt_worker *w, const char *why)
{
	if (!w->connected && !w->connecting)
		return;
	if (w->connected)
		rt_log(RT_LOG_WARN, "worker %s: lost the controller %s: %s",
		       w->id, rt_connect_target(&w->targets)->text, why);
	if (w->lost_mono == 0)
		w->lost_mono = rt_mono_ms();
	w->was_registered = w->connected;
	w->lost_why = why;
	w->connected = w->connecting = 0;
	rt_buf_reset(&w->in);
	rt_wire_out_flush(&w->out);
	rt_wire_out_transport(&w->out, NULL, NULL);
	uv_close(&w->conn.handle, conn_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct rt_worker *w = req->data;
	SSL_SESSION *last;
	int rc = 0;

	if (status == UV_ECANCELED)
		return; /* the handle is being closed already */
	if (status < 0) {
		w->connected = 0;
		w->connecting =
			1; /* so rt__worker_conn_lost closes the handle */
		rt__worker_conn_lost(w, uv_strerror(status));
		return;
	}
	if (w->tcp)
		rt_tcp_tune(&w->conn.tcp);
	if (w->tls_ctx != NULL) {
		/* Offer the last session (a TLS 1.3 ticket) to resume. */
		last = rt_tls_session(w->tls_ctx);
		rc = rt_tls_start(&w->tls, w->tls_ctx, 0, last,
				  &w->conn.stream);
		SSL_SESSION_free(last);
		if (rc < 0) {
			rt__worker_conn_lost(w, "out of memory");
			return;
		}
		rt_wire_out_transport(&w->out, rt_tls_send, &w->tls);
	}
	uv_read_start(&w->conn.stream, rt_read_alloc, on_read);
	rt__worker_register(w); /* over TLS: sent once the handshake is over */
}

static void on_connect_timeout(uv_timer_t *t)
{
	struct rt_worker *w = t->data;

	if (!w->connecting || w->connected)
		return;
	rt_log(RT_LOG_WARN,
	       "worker %s: no answer from %s within %d ms; trying again", w->id,
	       rt_connect_target(&w->targets)->text, CONNECT_TIMEOUT_MS);
	rt__worker_conn_lost(w, "no answer within the connect timeout");
}

void rt__worker_try_connect(struct rt_worker *w)
{
	const struct rt_connect_target *t = rt_connect_target(&w->targets);
	int rc;

	if (w->shutting_down)
		return;
	w->connect_req.data = w;
	w->connecting = 1;
	/* The retry timer is idle while connecting: it bounds the attempt
	 * (conn_closed starts it again for the next one). */
	uv_timer_start(&w->retry, on_connect_timeout, CONNECT_TIMEOUT_MS, 0);
	if (w->tcp) {
		uv_tcp_init(w->loop, &w->conn.tcp);
		w->conn.tcp.data = w;
		rc = uv_tcp_connect(&w->connect_req, &w->conn.tcp,
				    (const struct sockaddr *)&t->addr,
				    on_connect);
		if (rc < 0)
			rt__worker_conn_lost(w, uv_strerror(rc));
		return;
	}
	uv_pipe_init(w->loop, &w->conn.pipe, 0);
	w->conn.pipe.data = w;
	uv_pipe_connect(&w->connect_req, &w->conn.pipe, t->text, on_connect);
}

/*
 * direct.c - calls the controller sends itself to the http instances of
 * local workers (direct.h): the connections, the request written at the
 * call's start, the response read with runtime/base/httpcli.c and the call
 * ended as the worker would end it. It stays one file of about 600 lines:
 * a connection's states (connect, write, read, end) are one state machine
 * over one struct.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../runtime/base/httpcli.h"
#include "../../runtime/base/httpmsg.h"
#include "../../runtime/base/peer.h"
#include "../common.h"
#include "direct.h"
#include "../act/orders.h"
#include "../workers/requests.h"

#define READ_CHUNK 65536 /* bytes read at once from a server */

/* The direct side of an instance. */
struct sched_direct {
	struct sched *s;
	struct sched_instance *in;
	int pid;			/* the process its endpoint is of */
	int port;			/* 127.0.0.1:port, or 0 */
	char *listener;			/* FN_LISTENER's path, owned, or NULL */
	int listener_ok;		/* ... and we see the worker's file */
	int failed;			/* a connect failed: the worker's way */
	struct sched_direct_conn *idle; /* idle connections, a list */
	struct sched_direct_conn *all;	/* every open connection, a list */
	int inflight;			/* direct calls under way */
	int told;			/* the worker heard of them */
	struct rt_peer_owner owner;	/* its process (peer.h) */
};

/* One connection to an instance's server. */
struct sched_direct_conn {
	struct sched_direct *d; /* NULL once its instance is gone */
	uv_poll_t poll;		/* watches fd for the connection's life */
	int fd;
	int events;		 /* what poll watches now */
	int connecting;		 /* a non-blocking connect is under way */
	int closing;		 /* poll is closing; freed then */
	int unix_socket;	 /* to FN_LISTENER, not to PORT */
	struct sched_call *call; /* the call under way, or NULL: idle */
	int message;		 /* the call is a request message */
	struct rt_buf req;	 /* the request, until written */
	size_t off;		 /* bytes of req written */
	struct rt_httpcli_resp resp;
	struct sched_direct_conn *next_idle, *next, **pprev;
};

/* ============================================================ workers */

/* Whether /proc/PID/ns/NAME is our own namespace. */
static int same_ns(int pid, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	if (stat(path, &a) < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	if (stat(path, &b) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void sched__direct_worker(struct sched *s, struct sched_worker *w, int pid)
{
	/* 127.0.0.1 must be the same; a FN_LISTENER path is checked by its
	 * directory's identity (sched__direct_endpoint). */
	w->direct_ok = !s->calls_state.no_direct && pid > 0 &&
		       same_ns(pid, "net");
}

/* Whether directory `dir` of socket `path` is, in our mount namespace,
 * the one of identity `dev`, `ino` the worker reported. */
static int same_dir(const char *path, long long dev, long long ino)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat st;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return 0;
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	return stat(dir, &st) == 0 && (long long)st.st_dev == dev &&
	       (long long)st.st_ino == ino;
}

/* ======================================================== connections */

static void conn_freed(uv_handle_t *h)
{
	struct sched_direct_conn *k = h->data;

	close(k->fd);
	rt_buf_free(&k->req);
	rt_httpcli_resp_free(&k->resp);
	free(k);
}

/* Takes `k` off its instance's idle list. */
static void unidle(struct sched_direct_conn *k)
{
	struct sched_direct_conn **p;

	if (k->d == NULL)
		return;
	for (p = &k->d->idle; *p != NULL; p = &(*p)->next_idle)
		if (*p == k) {
			*p = k->next_idle;
			k->next_idle = NULL;
			return;
		}
}

/* Closes `k` (its call, if any, was let go first). */
static void conn_close(struct sched_direct_conn *k)
{
	if (k->closing)
		return;
	k->closing = 1;
	unidle(k);
	if (k->d != NULL) {
		*k->pprev = k->next;
		if (k->next != NULL)
			k->next->pprev = k->pprev;
		k->d = NULL;
	}
	if (k->call != NULL) {
		k->call->direct = NULL;
		k->call = NULL;
	}
	uv_close((uv_handle_t *)&k->poll, conn_freed);
}

/* Watches `k` for `events` (readable always, writable while a connect
 * or a write is pending). */
static void watch(struct sched_direct_conn *k, int events);

static void on_poll(uv_poll_t *h, int status, int events);

static void watch(struct sched_direct_conn *k, int events)
{
	if (k->events == events)
		return;
	k->events = events;
	uv_poll_start(&k->poll, events, on_poll);
}

/* Opens a connection to the server of `d`'s instance: its FN_LISTENER
 * socket when it exists (as the worker chooses), else 127.0.0.1:PORT.
 * Returns 0 or -errno of the connect (-EINPROGRESS is 0, with
 * k->connecting set). */
static int dial(struct sched_direct *d, struct sched_direct_conn **out)
{
	struct sched_direct_conn *k = NULL;
	struct stat st;
	int fd = -1, rc = 0, one = 1, unix_socket;

	*out = NULL;
	unix_socket = d->listener_ok && stat(d->listener, &st) == 0 &&
		      S_ISSOCK(st.st_mode);
	if (!unix_socket && d->port <= 0)
		return -ENOENT;
	fd = socket(unix_socket ? AF_UNIX : AF_INET,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (unix_socket) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", d->listener);
		rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_port = htons((uint16_t)d->port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	}
	if (rc < 0 && errno != EINPROGRESS) {
		rc = -errno;
		goto out;
	}
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	k->connecting = rc < 0;
	k->unix_socket = unix_socket;
	rc = uv_poll_init(d->s->loop, &k->poll, fd);
	if (rc < 0) {
		free(k);
		k = NULL;
		goto out;
	}
	k->poll.data = k;
	k->fd = fd;
	fd = -1;
	k->d = d;
	k->next = d->all;
	if (d->all != NULL)
		d->all->pprev = &k->next;
	d->all = k;
	k->pprev = &d->all;
	watch(k, k->connecting ? UV_WRITABLE : UV_READABLE | UV_DISCONNECT);
	*out = k;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Whether idle connection `k` may carry a request: its server has not
 * closed it (nor sent anything unasked) since its last response. */
static int usable(struct sched_direct_conn *k)
{
	char b;
	ssize_t n = recv(k->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* ============================================================== calls */

/* Ends direct call `c` with the worker's words for it (runtime/worker/http.c):
 * `k`, its connection, is kept for the next call when `keep`. */
static void end(struct sched_direct_conn *k, int keep, const char *status,
		const char *reason, const char *body, size_t len)
{
	struct sched_call *c = k->call;
	struct sched_direct *d = k->d;

	k->call = NULL;
	c->direct = NULL;
	if (keep && d != NULL) {
		k->next_idle = d->idle;
		d->idle = k;
	} else {
		conn_close(k);
	}
	sched__call_result(c->s, c, status, reason, body, len);
}

/* The response to `k`'s call is whole. */
static void responded(struct sched_direct_conn *k)
{
	struct rt_httpcli_resp *r = &k->resp;
	struct rt_buf head = r->head, body = r->body;
	struct rt_httpmsg_result res;
	int keep = r->keep_alive && r->extra == 0 && k->off == k->req.len;

	/* The buffers are the call's now: the connection may carry the
	 * next call before this one's result is delivered. */
	memset(&r->head, 0, sizeof(r->head));
	memset(&r->body, 0, sizeof(r->body));
	rt_httpmsg_result(&res, r->p.status_code, head.data, head.len,
			  body.data, body.len, k->message, r->head_request);
	end(k, keep, res.status, res.reason, res.body, res.len);
	rt_httpmsg_result_free(&res);
	rt_buf_free(&head);
	rt_buf_free(&body);
}

/* Writes what is left of the request; on an error the call ends. */
static void write_some(struct sched_direct_conn *k)
{
	while (k->off < k->req.len) {
		ssize_t n = send(k->fd, k->req.data + k->off,
				 k->req.len - k->off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			watch(k, UV_READABLE | UV_DISCONNECT | UV_WRITABLE);
			return;
		}
		if (n < 0) {
			char why[160];

			snprintf(why, sizeof(why),
				 "its server closed or reset the connection: "
				 "%s",
				 strerror(errno));
			end(k, 0, "reset", why, NULL, 0);
			return;
		}
		k->off += (size_t)n;
	}
	rt_buf_free(&k->req);
	k->off = 0;
	k->req.len = 0;
	watch(k, UV_READABLE | UV_DISCONNECT);
}

/* Reads from `k`: a piece of its call's response, or, idle, the server
 * closing it (then it goes). */
static void read_some(struct sched_direct_conn *k)
{
	static char buf[READ_CHUNK];
	ssize_t n = read(k->fd, buf, sizeof(buf));
	const char *why = NULL;

	if (n < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (k->call == NULL) {
		conn_close(k); /* closed, or talking out of turn */
		return;
	}
	switch (rt_httpcli_feed(&k->resp, buf, n > 0 ? (size_t)n : 0)) {
	case RT_HTTPCLI_MORE:
		if (n > 0)
			return;
		/* A read error cut it. */
		why = "its server closed or reset the connection";
		end(k, 0, "reset", why, NULL, 0);
		return;
	case RT_HTTPCLI_CUT:
		why = "its server closed or reset the connection";
		end(k, 0, "reset", why, NULL, 0);
		return;
	case RT_HTTPCLI_DONE: responded(k); return;
	case RT_HTTPCLI_MALFORMED:
		end(k, 0, "error", "malformed response", NULL, 0);
		return;
	case RT_HTTPCLI_TOO_LARGE:
		end(k, 0, "failed", "the response is too large", NULL, 0);
		return;
	}
}

/* A connect that failed, or reached a server we cannot tell is the
 * instance's (`why`, else strerror(err)): this instance's calls go
 * through its worker (which checks again, and refuses them if the port
 * is another's) until its endpoint changes. */
static void connect_failed(struct sched_direct *d, int err, const char *why)
{
	char id[32];

	if (d == NULL || d->failed)
		return;
	d->failed = 1;
	snprintf(id, sizeof(id), "%d", d->in->n);
	rt_log(RT_LOG_INFO,
	       "instance %s of %s: direct calls off, its server cannot be "
	       "reached (%s): calls go through its worker",
	       id, sched__fn_of(d->in)->obj.name, why ? why : strerror(err));
}

/* Whether the TCP connection `k` reaches a server of its instance's
 * process, not a socket someone else holds on that port (peer.h). 0, or
 * -errno with `why`. A connection to FN_LISTENER needs no check: its
 * directory is the function user's alone. */
static int check_peer(struct sched_direct_conn *k, char *why, size_t n)
{
	struct sched_direct *d = k->d;
	struct sockaddr_in local, server;
	socklen_t ll = sizeof(local), sl = sizeof(server);

	if (k->unix_socket)
		return 0;
	if (d == NULL ||
	    getsockname(k->fd, (struct sockaddr *)&local, &ll) < 0 ||
	    getpeername(k->fd, (struct sockaddr *)&server, &sl) < 0 ||
	    local.sin_family != AF_INET) {
		snprintf(why, n, "cannot tell whose its port is");
		return -EREMOTEIO;
	}
	rt_peer_owner_set(&d->owner, d->pid, 0);
	return rt_peer_check_server(&d->owner, -1, &local, &server, why, n);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sched_direct_conn *k = h->data;

	if (k->closing)
		return;
	if (k->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);
		struct sched_call *c = k->call;
		char why[200];

		/* libuv reports a failed connect (POLLERR) as UV_EBADF: the
		 * socket says what it was. */
		if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == 0 && status < 0)
			err = -status;
		if (err == 0 && !(events & UV_WRITABLE))
			return;
		k->connecting = 0;
		why[0] = '\0';
		if (err == 0 && check_peer(k, why, sizeof(why)) < 0)
			err = EREMOTEIO;
		if (err != 0) {
			/* Nothing was sent: the worker takes the call. */
			connect_failed(k->d, err, why[0] ? why : NULL);
			k->call = NULL;
			if (c != NULL) {
				c->direct = NULL;
				sched__direct_call_over(c->s, c);
				if (c->in != NULL)
					c->in->direct_calls--;
				conn_close(k);
				sched__send_to_worker(c->s, c);
			} else {
				conn_close(k);
			}
			return;
		}
		if (c != NULL)
			sched__call_body_free(c);
		write_some(k);
		return;
	}
	if (status < 0) {
		if (k->call != NULL)
			end(k, 0, "reset",
			    "its server closed or reset the connection", NULL,
			    0);
		else
			conn_close(k);
		return;
	}
	if ((events & UV_WRITABLE) && k->call != NULL && k->req.len > 0)
		write_some(k);
	if (!k->closing && (events & (UV_READABLE | UV_DISCONNECT)))
		read_some(k);
}

/* The direct state of `in`, made when first needed. */
static struct sched_direct *direct_of(struct sched *s,
				      struct sched_instance *in)
{
	if (in->direct == NULL) {
		in->direct = calloc(1, sizeof(*in->direct));
		if (in->direct != NULL) {
			in->direct->s = s;
			in->direct->in = in;
		}
	}
	return in->direct;
}

void sched__direct_endpoint(struct sched *s, struct sched_instance *in,
			    const struct rt_msg *m)
{
	struct sched_direct *d;
	const char *listener = rt_msg_str(m, "listener");
	int port = (int)rt_msg_int(m, "port", 0),
	    pid = (int)rt_msg_int(m, "pid", 0);

	if (in->direct == NULL && port <= 0 && listener == NULL)
		return;
	d = direct_of(s, in);
	if (d == NULL)
		return;
	if (d->pid == pid && d->port == port &&
	    (listener == NULL ? d->listener == NULL
			      : d->listener != NULL &&
					strcmp(listener, d->listener) == 0))
		return;
	/* Another process, or another endpoint: what was open goes. */
	while (d->idle != NULL)
		conn_close(d->idle);
	d->pid = pid;
	d->port = port;
	free(d->listener);
	d->listener = listener != NULL ? strdup(listener) : NULL;
	d->listener_ok = listener != NULL &&
			 same_dir(listener, rt_msg_int(m, "listen_dir_dev", -1),
				  rt_msg_int(m, "listen_dir_ino", -1));
	d->failed = 0;
}

int sched__direct_send(struct sched *s, struct sched_call *c,
		       struct sched_instance *in)
{
	struct sched_function *fn = c->fn;
	struct sched_direct *d = in->direct;
	struct sched_direct_conn *k = NULL;
	char host[32], id[24];
	int rc, head_request = 0;

	if (s->calls_state.no_direct || d == NULL || d->failed || d->pid <= 0 ||
	    (d->port <= 0 && !d->listener_ok) || in->worker == NULL ||
	    !in->worker->direct_ok || fn->spec.mode != SCHED_MODE_HOT ||
	    fn->spec.format != SCHED_FORMAT_HTTP || in->pid != d->pid)
		return 0;
	while (d->idle != NULL) {
		k = d->idle;
		d->idle = k->next_idle;
		k->next_idle = NULL;
		if (usable(k))
			break;
		/* Closed by its server while idle: nothing was sent on it,
		 * so a fresh connection takes the call. */
		conn_close(k);
		k = NULL;
	}
	if (k == NULL) {
		char why[200];

		rc = dial(d, &k);
		if (rc < 0) {
			connect_failed(d, -rc, NULL);
			return 0;
		}
		if (!k->connecting && check_peer(k, why, sizeof(why)) < 0) {
			conn_close(k);
			connect_failed(d, EREMOTEIO, why);
			return 0;
		}
	}
	snprintf(id, sizeof(id), "%llu", (unsigned long long)c->id);
	/* The Host libcurl sends: localhost over a Unix socket. */
	if (k->unix_socket)
		snprintf(host, sizeof(host), "localhost");
	else
		snprintf(host, sizeof(host), "127.0.0.1:%d", d->port);
	rt_buf_reset(&k->req);
	k->off = 0;
	rc = rt_httpcli_request(c->body ? c->body : "", c->len, host, id,
				c->deadline_ms, &k->req, &head_request, NULL);
	if (rc < 0) {
		/* The worker refuses it in its own words. */
		k->next_idle = d->idle;
		d->idle = k;
		return 0;
	}
	k->message = rt_httpmsg_is_request(c->body ? c->body : "", c->len);
	rt_httpcli_resp_free(&k->resp);
	rt_httpcli_resp_init(&k->resp, head_request);
	k->call = c;
	c->direct = k;
	c->via_direct = 1;
	d->inflight++;
	in->direct_calls++;
	if (d->told)
		sched__direct_tell(s, in);
	if (!k->connecting) {
		sched__call_body_free(c);
		write_some(k);
	}
	return 1;
}

void sched__direct_call_over(struct sched *s, struct sched_call *c)
{
	struct sched_instance *in = c->in;
	struct sched_direct_conn *k = c->direct;

	if (k != NULL) {
		/* Ended otherwise than by its response: the connection is
		 * in an unknown state. */
		k->call = NULL;
		c->direct = NULL;
		conn_close(k);
	}
	if (!c->via_direct)
		return;
	c->via_direct = 0;
	if (in == NULL || in->direct == NULL)
		return;
	in->direct->inflight--;
	if (in->direct->told)
		sched__direct_tell(s, in);
}

void sched__direct_tell(struct sched *s, struct sched_instance *in)
{
	struct sched_direct *d = in->direct;
	struct sched_call *c;
	int64_t until = 0;
	char *id;

	if (d == NULL || (d->inflight == 0 && !d->told) || in->worker == NULL)
		return;
	for (c = in->calls; c != NULL; c = c->on_next)
		if (c->via_direct && c->deadline_ms > until)
			until = c->deadline_ms;
	id = sched__instance_id(in);
	sched__send(s, in->worker,
		    json_pack("{s:s, s:s, s:i, s:I, s:I}", "type", "direct",
			      "instance", id ? id : "", "calls", d->inflight,
			      "until_ms", (json_int_t)until, "epoch",
			      (json_int_t)in->epoch));
	free(id);
	d->told = d->inflight > 0;
}

void sched__direct_free(struct sched_instance *in)
{
	struct sched_direct *d = in->direct;

	if (d == NULL)
		return;
	while (d->all != NULL)
		conn_close(d->all);
	free(d->listener);
	free(d);
	in->direct = NULL;
}

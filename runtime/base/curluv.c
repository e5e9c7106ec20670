/*
 * curluv.c - libcurl's multi interface on a libuv loop (curluv.h), the
 * pattern of libcurl's multi-uv.c example: curl says which sockets to
 * watch for what (on_socket: one uv_poll per socket, its record attached
 * with curl_multi_assign) and when to wake it (on_timer: one uv_timer);
 * each event is handed back with curl_multi_socket_action, and finished
 * transfers are read with curl_multi_info_read after it.
 *
 * A kept-alive connection is watched across its transfers: between two of
 * them curl stops watching its socket (CURL_POLL_REMOVE), and stopping a
 * uv_poll and starting it again costs system calls on every transfer
 * (epoll_ctl, and for a new handle a probe and an ioctl: 7 in all). So a
 * socket that curl opened through on_open, whose close on_close will
 * report, keeps its handle, still watched for input but unreferenced
 * ("parked"): curl asking for input again costs nothing. A parked socket
 * that becomes readable (the server closed the idle connection, or sent
 * something unasked) stops being watched at once, so the loop never spins
 * on it; curl finds that out itself on the next reuse, as it would have.
 * A socket of any other origin is let go on CURL_POLL_REMOVE, as before:
 * its close would not be reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "curluv.h"
#include "rt.h"

/* One socket curl opened (on_open) or asked to watch. */
struct sock {
	uv_poll_t poll;	     /* first: the handle's address is the record's */
	struct rt_curluv *m; /* owner */
	curl_socket_t fd;
	int polling; /* `poll` initialised: a loop handle */
	int events;  /* UV_READABLE|UV_WRITABLE it is started for */
	int wanted;  /* curl watches it (else parked or unwatched) */
	int ours;    /* opened by on_open: on_close reports its end */
	struct sock *next, *prev; /* m->socks */
};

struct rt_curluv {
	uv_loop_t *loop;
	CURLM *multi;		    /* owned */
	uv_timer_t timer;	    /* curl's timeout */
	struct sock *socks;	    /* watched sockets */
	struct rt_curl_xfer *xfers; /* transfers added */
	int running;		    /* transfers added */
	CURL *pool[RT_CURLUV_POOL]; /* released easy handles, owned */
	int npool;
	int handles; /* loop handles not closed yet */
	int closing; /* rt_curluv_close was called */
};

static int global_rc = -1; /* curl_global_init's, once per process */

static void handle_closed(uv_handle_t *h)
{
	struct rt_curluv *m;

	if (h->type == UV_POLL) {
		struct sock *k = (struct sock *)h;

		m = k->m;
		free(k);
	} else {
		m = h->data;
	}
	if (--m->handles == 0 && m->closing)
		free(m);
}

/* Forgets `k`: its handle stops watching the socket at once (before the
 * socket can be closed) and its memory goes with the handle. */
static void sock_close(struct sock *k)
{
	struct rt_curluv *m = k->m;

	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		m->socks = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	if (!k->polling) {
		free(k);
		return;
	}
	uv_poll_stop(&k->poll);
	uv_close((uv_handle_t *)&k->poll, handle_closed);
}

/* The record of socket `fd`, or NULL. Few sockets: one per connection. */
static struct sock *sock_find(struct rt_curluv *m, curl_socket_t fd)
{
	struct sock *k;

	for (k = m->socks; k != NULL; k = k->next)
		if (k->fd == fd)
			return k;
	return NULL;
}

/* A new record for `fd`, first in m->socks. NULL when out of memory. */
static struct sock *sock_new(struct rt_curluv *m, curl_socket_t fd)
{
	struct sock *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return NULL;
	k->m = m;
	k->fd = fd;
	k->next = m->socks;
	if (m->socks != NULL)
		m->socks->prev = k;
	m->socks = k;
	return k;
}

static void on_poll(uv_poll_t *p, int status, int events);

/* Watches `k` for `events` (0: not at all); a no-op when it is already
 * so. Returns 0 or -1. */
static int sock_watch(struct sock *k, int events)
{
	if (k->events == events)
		return 0;
	if (events == 0) {
		uv_poll_stop(&k->poll);
	} else if (uv_poll_start(&k->poll, events, on_poll) != 0) {
		k->events = 0;
		return -1;
	}
	k->events = events;
	return 0;
}

static void xfer_unlink(struct rt_curluv *m, struct rt_curl_xfer *x)
{
	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		m->xfers = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	x->next = x->prev = NULL;
	x->added = 0;
	m->running--;
}

/* Hands the transfers that ended to their owners. */
static void collect(struct rt_curluv *m)
{
	struct rt_curl_xfer *x;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		x = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
				  (char **)&x);
		curl_multi_remove_handle(m->multi, msg->easy_handle);
		if (x == NULL || !x->added)
			continue;
		xfer_unlink(m, x);
		x->done(x, msg->data.result);
	}
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock *k = (struct sock *)p;
	struct rt_curluv *m = k->m;
	int flags = 0, running;

	if (!k->wanted) {
		/* Parked, and readable: curl is not waiting for it. */
		sock_watch(k, 0);
		return;
	}
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(m->multi, k->fd, flags, &running);
	collect(m);
}

static void on_timeout(uv_timer_t *t)
{
	struct rt_curluv *m = t->data;
	int running;

	curl_multi_socket_action(m->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	collect(m);
}

/* CURLMOPT_SOCKETFUNCTION: watch `s` for `what`, or stop. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp,
		     void *socketp)
{
	struct rt_curluv *m = userp;
	struct sock *k = socketp;
	int events = 0;

	(void)easy;
	if (m->closing)
		return 0;
	if (k == NULL)
		k = sock_find(m, s);
	if (what == CURL_POLL_REMOVE) {
		if (k == NULL)
			return 0;
		curl_multi_assign(m->multi, s, NULL);
		k->wanted = 0;
		if (!k->ours || !k->polling) {
			sock_close(k);
			return 0;
		}
		/* Parked: still watched for input, not for output, and not
		 * keeping the loop alive. */
		if (sock_watch(k, k->events & UV_READABLE) < 0)
			sock_close(k);
		else
			uv_unref((uv_handle_t *)&k->poll);
		return 0;
	}
	if (k == NULL && (k = sock_new(m, s)) == NULL)
		return -1; /* curl fails the transfer */
	if (!k->polling) {
		if (uv_poll_init_socket(m->loop, &k->poll, s) != 0) {
			sock_close(k);
			return -1;
		}
		k->polling = 1;
		m->handles++;
	}
	k->wanted = 1;
	uv_ref((uv_handle_t *)&k->poll);
	curl_multi_assign(m->multi, s, k);
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	return sock_watch(k, events);
}

/* CURLOPT_OPENSOCKETFUNCTION: the socket of a connection, as curl would
 * make it (close-on-exec too: no function's process inherits it), known
 * as ours so that it may be parked between transfers. */
static curl_socket_t on_open(void *arg, curlsocktype purpose,
			     struct curl_sockaddr *a)
{
	struct rt_curl_xfer *x = arg;
	struct rt_curluv *m = x->multi;
	struct sock *k;
	curl_socket_t fd;

	if (x->open != NULL)
		fd = x->open(x, purpose, a);
	else
		fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd < 0)
		return CURL_SOCKET_BAD;
	if (m->closing)
		return fd;
	k = sock_find(m, fd); /* a stale record: cannot be, but be sure */
	if (k != NULL)
		sock_close(k);
	k = sock_new(m, fd);
	if (k == NULL) {
		close(fd);
		return CURL_SOCKET_BAD;
	}
	k->ours = 1;
	return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: its handle stops watching the socket
 * before the socket is closed, so that the loop never watches a number
 * that may be reused. */
static int on_close(void *arg, curl_socket_t fd)
{
	struct rt_curluv *m = arg;
	struct sock *k = sock_find(m, fd);

	if (k != NULL)
		sock_close(k);
	return close(fd);
}

/* CURLMOPT_TIMERFUNCTION: wake curl in `ms` (-1: never). Curl must not be
 * called back from here, so even 0 goes through the timer. */
static int on_timer(CURLM *multi, long ms, void *userp)
{
	struct rt_curluv *m = userp;

	(void)multi;
	if (m->closing)
		return 0;
	if (ms < 0)
		uv_timer_stop(&m->timer);
	else
		uv_timer_start(&m->timer, on_timeout, (uint64_t)ms, 0);
	return 0;
}

int rt_curluv_new(uv_loop_t *loop, long max_conns, struct rt_curluv **out)
{
	struct rt_curluv *m = NULL;
	int rc = 0;

	*out = NULL;
	if (global_rc < 0)
		global_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK
				    ? 0
				    : 1;
	if (global_rc != 0)
		return -EIO;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->loop = loop;
	m->multi = curl_multi_init();
	if (m->multi == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
	if (max_conns > 0)
		curl_multi_setopt(m->multi, CURLMOPT_MAXCONNECTS, max_conns);
	uv_timer_init(loop, &m->timer);
	m->timer.data = m;
	m->handles = 1;
	*out = m;
	m = NULL;
out:
	free(m);
	return rc;
}

int rt_curluv_add(struct rt_curluv *m, struct rt_curl_xfer *x)
{
	if (m->closing || x->added || x->easy == NULL || x->done == NULL)
		return -EINVAL;
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, (char *)x);
	curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETFUNCTION, on_open);
	x->multi = m;
	curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETDATA, m);
	if (curl_multi_add_handle(m->multi, x->easy) != CURLM_OK)
		return -ENOMEM;
	x->added = 1;
	x->prev = NULL;
	x->next = m->xfers;
	if (m->xfers != NULL)
		m->xfers->prev = x;
	m->xfers = x;
	m->running++;
	return 0;
}

void rt_curluv_cancel(struct rt_curluv *m, struct rt_curl_xfer *x)
{
	if (m == NULL || !x->added)
		return;
	xfer_unlink(m, x);
	curl_multi_remove_handle(m->multi, x->easy);
}

CURL *rt_curluv_easy(struct rt_curluv *m)
{
	if (m->npool > 0)
		return m->pool[--m->npool];
	return curl_easy_init();
}

void rt_curluv_release(struct rt_curluv *m, CURL *e)
{
	if (e == NULL)
		return;
	if (m == NULL || m->closing || m->npool == RT_CURLUV_POOL) {
		curl_easy_cleanup(e);
		return;
	}
	curl_easy_reset(e);
	m->pool[m->npool++] = e;
}

int rt_curluv_running(const struct rt_curluv *m)
{
	return m != NULL ? m->running : 0;
}

void rt_curluv_close(struct rt_curluv *m)
{
	if (m == NULL || m->closing)
		return;
	while (m->xfers != NULL)
		rt_curluv_cancel(m, m->xfers);
	/* The sockets are no longer watched before curl closes them (its
	 * cached connections); what it says meanwhile is ignored. */
	m->closing = 1;
	while (m->socks != NULL)
		sock_close(m->socks);
	curl_multi_cleanup(m->multi);
	m->multi = NULL;
	while (m->npool > 0)
		curl_easy_cleanup(m->pool[--m->npool]);
	uv_timer_stop(&m->timer);
	uv_close((uv_handle_t *)&m->timer, handle_closed);
}

/*
 * cut_proxy.c - a TCP proxy that can be cut (cut_proxy.h): each accepted
 * connection gets one to the server; bytes read on one side are written
 * to the other until either ends, or until the proxy is cut.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cut_proxy.h"

/* One client's connection and ours to the server. */
struct conn {
	struct cut_proxy *p;
	uv_tcp_t down; /* the client's side */
	uv_tcp_t up;   /* the server's side */
	uv_connect_t connect;
	int cut;		  /* forwards nothing any more */
	int closing;		  /* its handles are being closed */
	int handles;		  /* handles not closed yet */
	struct conn *next, *prev; /* p->conns, until closing */
};

struct cut_proxy {
	uv_loop_t *loop;
	uv_tcp_t listener;
	int port;	    /* ours */
	int upstream;	    /* the server's */
	int cut;	    /* cut now */
	int refs;	    /* the listener + each connection */
	struct conn *conns; /* open connections */
};

/* A write of what was read, and its bytes. */
struct chunk {
	uv_write_t req;
	char *base;
};

static void unref(struct cut_proxy *p)
{
	if (--p->refs == 0)
		free(p);
}

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct cut_proxy *p = c->p;

	if (--c->handles > 0)
		return;
	free(c);
	unref(p);
}

/* Closes both sides of `c` (no FIN is sent for a cut one's data: none is
 * queued, and the client sees the close only once healed). */
static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		c->p->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	uv_close((uv_handle_t *)&c->down, on_conn_closed);
	uv_close((uv_handle_t *)&c->up, on_conn_closed);
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(size);
	buf->len = buf->base != NULL ? size : 0;
}

static void on_written(uv_write_t *req, int status)
{
	struct chunk *k = (struct chunk *)req;

	(void)status;
	free(k->base);
	free(k);
}

/* Bytes from one side: to the other, unless cut. */
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	uv_stream_t *to = s == (uv_stream_t *)&c->down
				  ? (uv_stream_t *)&c->up
				  : (uv_stream_t *)&c->down;
	struct chunk *k;
	uv_buf_t b;

	if (n < 0 || c->closing) {
		free(buf->base);
		if (n < 0)
			conn_close(c);
		return;
	}
	if (n == 0 || c->cut || (k = calloc(1, sizeof(*k))) == NULL) {
		free(buf->base);
		return;
	}
	k->base = buf->base;
	b = uv_buf_init(buf->base, (unsigned int)n);
	if (uv_write(&k->req, to, &b, 1, on_written) < 0) {
		free(k->base);
		free(k);
		conn_close(c);
	}
}

static void on_connected(uv_connect_t *req, int status)
{
	struct conn *c = req->data;

	if (c->closing || c->cut)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	uv_read_start((uv_stream_t *)&c->down, on_alloc, on_read);
	uv_read_start((uv_stream_t *)&c->up, on_alloc, on_read);
}

static void on_connection(uv_stream_t *l, int status)
{
	struct cut_proxy *p = l->data;
	struct sockaddr_in to;
	struct conn *c;

	if (status < 0 || (c = calloc(1, sizeof(*c))) == NULL)
		return;
	c->p = p;
	p->refs++;
	uv_tcp_init(p->loop, &c->down);
	uv_tcp_init(p->loop, &c->up);
	c->handles = 2;
	c->down.data = c->up.data = c->connect.data = c;
	c->next = p->conns;
	if (p->conns != NULL)
		p->conns->prev = c;
	p->conns = c;
	if (uv_accept(l, (uv_stream_t *)&c->down) < 0) {
		conn_close(c);
		return;
	}
	c->cut = p->cut;
	if (c->cut)
		return; /* accepted, never answered */
	uv_ip4_addr("127.0.0.1", p->upstream, &to);
	if (uv_tcp_connect(&c->connect, &c->up, (struct sockaddr *)&to,
			   on_connected) < 0)
		conn_close(c);
}

int cut_proxy_new(uv_loop_t *loop, int upstream_port, struct cut_proxy **out)
{
	struct cut_proxy *p = calloc(1, sizeof(*p));
	struct sockaddr_in a;
	int len = sizeof(a), rc;

	*out = NULL;
	if (p == NULL)
		return -ENOMEM;
	p->loop = loop;
	p->upstream = upstream_port;
	p->refs = 1;
	uv_tcp_init(loop, &p->listener);
	p->listener.data = p;
	uv_ip4_addr("127.0.0.1", 0, &a);
	rc = uv_tcp_bind(&p->listener, (struct sockaddr *)&a, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&p->listener, 64, on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&p->listener, (struct sockaddr *)&a,
					&len);
	if (rc < 0) {
		cut_proxy_free(p);
		return rc;
	}
	p->port = ntohs(a.sin_port);
	*out = p;
	return 0;
}

int cut_proxy_port(const struct cut_proxy *p)
{
	return p->port;
}

void cut_proxy_cut(struct cut_proxy *p, int cut)
{
	struct conn *c, *next;

	p->cut = cut;
	for (c = p->conns; c != NULL; c = next) {
		next = c->next;
		if (cut) {
			c->cut = 1;
			uv_read_stop((uv_stream_t *)&c->down);
			uv_read_stop((uv_stream_t *)&c->up);
		} else if (c->cut) {
			conn_close(c);
		}
	}
}

static void on_listener_closed(uv_handle_t *h)
{
	unref(h->data);
}

void cut_proxy_free(struct cut_proxy *p)
{
	if (p == NULL)
		return;
	while (p->conns != NULL)
		conn_close(p->conns);
	uv_close((uv_handle_t *)&p->listener, on_listener_closed);
}

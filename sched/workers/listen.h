/*
 * listen.h - `fnfs mount --listen HOST:PORT`: the TCP socket workers on
 * other machines connect to, with TLS 1.3 and the certificates of the
 * cluster CA in DATA/ca (runtime/base/ca.h), or plain with --insecure.
 */
#ifndef FNFS_SCHED_LISTEN_H
#define FNFS_SCHED_LISTEN_H

#include <openssl/ssl.h>

#include "../../runtime/base/net.h"
#include "../internal.h"

/* The --listen socket. */
struct sched_listen {
	uv_tcp_t server;
	SSL_CTX *tls;		    /* owned: the controller's TLS context */
	int insecure;		    /* --insecure: plain TCP admitted too */
	char addr[RT_NET_ADDR_MAX]; /* the address bound */
};

/* Whether DATA/ca holds what --listen needs. Returns 0, or -ENOENT with
 * what is missing in `why`. */
int sched_listen_check(const char *datadir, struct rt_buf *why);

/* Listens on `hostport` ("IP:PORT"; port 0: any free one) with the
 * controller's certificate from DATA/ca. Returns 0 or -errno, logged. */
int sched__listen_start(struct sched *s, const char *hostport, int insecure);

/* Closes the socket (at shutdown); connections are closed apart. */
void sched__listen_close(struct sched *s);

#endif

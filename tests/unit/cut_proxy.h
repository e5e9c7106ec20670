/*
 * cut_proxy.h - a TCP proxy on the test's libuv loop that can be cut: a
 * partition between one client and a server, for unit tests. Cut, it
 * still accepts connections (the kernel would anyway) but forwards
 * nothing either way and sends no FIN or RST: what a client sees of a
 * network that drops its packets. Healed, it closes the connections that
 * were cut and forwards new ones again.
 */
#ifndef FNFS_UNIT_CUT_PROXY_H
#define FNFS_UNIT_CUT_PROXY_H

#include <uv.h>

struct cut_proxy;

/* Listens on 127.0.0.1 (a free port) and forwards each connection to
 * 127.0.0.1:`upstream_port`. Returns 0 or a libuv error / -ENOMEM. */
int cut_proxy_new(uv_loop_t *loop, int upstream_port, struct cut_proxy **out);

/* The port it listens on. */
int cut_proxy_port(const struct cut_proxy *p);

/* Cuts (`cut` 1) or heals (0) it. */
void cut_proxy_cut(struct cut_proxy *p, int cut);

/* Closes the listener and every connection; the memory goes once the
 * loop has run the closes. */
void cut_proxy_free(struct cut_proxy *p);

#endif

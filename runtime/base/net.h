/*
 * net.h - TCP addresses and sockets for the links between the controller
 * and its workers: "HOST:PORT" parsed and printed (an IPv4 address, or an
 * IPv6 one in brackets: workers and controllers are named by address,
 * never resolved), and the socket options a link wants.
 */
#ifndef FNFS_RT_NET_H
#define FNFS_RT_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#define RT_NET_ADDR_MAX	   64 /* "[v6]:port" and its NUL */
#define RT_NET_KEEPALIVE_S 15 /* idle seconds before TCP probes */

/* Parses "IP:PORT" or "[IPv6]:PORT" (port 0 to 65535, 0 only when
 * `any_port`). Returns 0 or -EINVAL. Pure. */
int rt_addr_parse(const char *s, int any_port, struct sockaddr_storage *out);

/* Prints `sa` as "IP:PORT" or "[IPv6]:PORT" into `out`. */
void rt_addr_format(const struct sockaddr *sa, char *out, size_t n);

/* The peer's address of a TCP handle into `out` ("?" when unknown). */
void rt_tcp_peer(const uv_tcp_t *t, char *out, size_t n);

/* Small messages go at once (TCP_NODELAY: a call is one small frame),
 * and a peer that vanished is found by keepalive probes. */
void rt_tcp_tune(uv_tcp_t *t);

/* The delay before a reconnection under `ceiling_ms`: full jitter,
 * uniform in [0, ceiling_ms], drawn from the xorshift state `*rng`
 * (advanced). Pure. */
int rt_backoff_delay(int ceiling_ms, uint64_t *rng);

#endif

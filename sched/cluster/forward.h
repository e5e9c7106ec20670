/*
 * forward.h - what a follower of a cluster forwards to the leader: the
 * writes whose state only the leader holds (instances' and functions'
 * state and restart, workers/ID/state, pool_size, strategy, rebalance,
 * a tenant's quota/ files),
 * calls (invoke) and the reads of logs (the leader asks its workers).
 * It goes over the controllers' own link: a TLS 1.3 connection to the
 * leader's --listen address with certificates of the cluster CA (OU
 * "controller", CN the --name), opened when first needed, kept, and
 * opened again when the leader changes. The leader runs each request as
 * a local write, call or read with the caller's credentials and answers
 * rc, the function's `error` line and the response.
 *
 * Nothing here knows FUSE. Everything runs on the loop. What fs/ uses
 * (sched_fwd_write, _call, _read, _cancel, _active, and the leader's
 * sched_fwd_serve and _answer) is declared in sched.h; here are the setup,
 * the close and the tests' hooks.
 */
#ifndef FNFS_SCHED_FORWARD_H
#define FNFS_SCHED_FORWARD_H

#include <stddef.h>

#include "../sched.h"

/* Sets up forwarding on controller `s` (after sched_start): `name` is
 * its --name (the CN of the certificate it presents to the leader) and
 * `insecure` lets it reach a leader over plain TCP when it has no CA.
 * Returns 0 or -ENOMEM. */
int sched_fwd_setup(struct sched *s, const char *name, int insecure);

/* The function that `path` (from the mount's root) is in, or NULL. */
struct sched_function *sched_fwd_function_of(struct sched *s, const char *path);

/* Tests: forward to `name` at `addr` ("IP:PORT") whatever the election
 * says (NULL: follow it again). */
void sched__fwd_target(struct sched *s, const char *name, const char *addr);

/* Tests: the role the certificate minted for the link names (default
 * RT_CA_ROLE_CONTROLLER) and the type of the link's first message
 * (default "peer"): the leader refuses a worker's certificate as a peer
 * and a controller's as a worker. */
void sched__fwd_cert_role(struct sched *s, const char *role, const char *hello);

/* Why the link last failed ("" if it never did). */
const char *sched__fwd_last_error(const struct sched *s);

/* At shutdown: fails what is in flight, closes the link. */
void sched_fwd_close(struct sched *s);

#endif

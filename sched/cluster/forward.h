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
 * For fs/: nothing here knows FUSE. Everything runs on the loop.
 */
#ifndef FNFS_SCHED_FORWARD_H
#define FNFS_SCHED_FORWARD_H

#include <stddef.h>

#include "../sched.h"

/* A forwarded request under way on a follower; owned by sched. */
struct sched_fwd;

/* Called once when a forwarded request ends: `err` 0 or a positive
 * errno, the response in `body` (a call's). Not called after
 * sched_fwd_cancel. */
typedef void (*sched_fwd_fn)(void *arg, int err, const char *body, size_t len);

/* Sets up forwarding on controller `s` (after sched_start): `name` is
 * its --name (the CN of the certificate it presents to the leader) and
 * `insecure` lets it reach a leader over plain TCP when it has no CA.
 * Returns 0 or -ENOMEM. */
int sched_fwd_setup(struct sched *s, const char *name, int insecure);

/* Whether `s` forwards what only the leader does: it is a controller of
 * a cluster and not its leader. */
int sched_fwd_active(const struct sched *s);

/* Forwards a write of `len` bytes of `buf` to the file at `path` (from
 * the mount's root: "tenants/t/ns/fn/restart") as `who`. Returns
 * SCHED_LATER with `*out` set and `done` called later, or -EAGAIN (no
 * leader known, or it cannot be reached; the reason is in the function's
 * `error` and the log) or -ENOMEM. A lost link or a change of leader
 * ends it with EAGAIN, and it is bounded by the leader's own bound plus
 * a margin (then ETIMEDOUT). On failure the function the path is in gets
 * the leader's `error` line. */
int sched_fwd_write(struct sched *s, const char *path, const char *buf,
		    size_t len, const struct sched_caller *who,
		    sched_fwd_fn done, void *arg, struct sched_fwd **out);

/* Forwards a call of the function whose invoke file is at `path` with
 * request `body` as `who`, as sched_fwd_write. With `done` NULL the call
 * is asynchronous: the leader answers once it is started, and nobody
 * waits (`*out` may then be NULL). Bounded by twice the function's
 * timeout plus a margin. */
int sched_fwd_call(struct sched *s, const char *path, const char *body,
		   size_t len, const struct sched_caller *who,
		   sched_fwd_fn done, void *arg, struct sched_fwd **out);

/* Forwards a read of the file at `path`, a function's or an instance's
 * `log` (what the leader asks of the workers it holds), as `who`, as
 * sched_fwd_write: `done` gets the content in `body`. Bounded by the
 * leader's wait for its workers plus a margin. */
int sched_fwd_read(struct sched *s, const char *path,
		   const struct sched_caller *who, sched_fwd_fn done, void *arg,
		   struct sched_fwd **out);

/* The caller no longer waits: `done` will not be called. */
void sched_fwd_cancel(struct sched *s, struct sched_fwd *f);

/* ---- the leader's side */

/* A request from a follower, until answered; owned by sched. */
struct sched_fwd_in;

/* What the leader does with forwarded requests (fs/ runs them as local
 * ones): each must end in exactly one sched_fwd_answer. */
struct sched_fwd_serve_ops {
	void (*write)(void *arg, struct sched_fwd_in *in, const char *path,
		      const char *buf, size_t len,
		      const struct sched_caller *who);
	/* `async`: answer once started; nobody waits for the result. */
	void (*call)(void *arg, struct sched_fwd_in *in, const char *path,
		     const char *body, size_t len,
		     const struct sched_caller *who, int async);
	/* A read (sched_fwd_read): answered with the content. */
	void (*read)(void *arg, struct sched_fwd_in *in, const char *path,
		     const struct sched_caller *who);
};

/* Serves followers' requests with `ops` (`arg` is theirs); without,
 * a peer controller is refused. */
void sched_fwd_serve(struct sched *s, const struct sched_fwd_serve_ops *ops,
		     void *arg);

/* Answers `in` (then freed): `err` 0 or a positive errno, `error` the
 * function's error line (or NULL), `body` the response. Dropped when the
 * follower is gone. */
void sched_fwd_answer(struct sched *s, struct sched_fwd_in *in, int err,
		      const char *error, const char *body, size_t len);

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

/*
 * admit.h - who may speak on the controller's socket, and who may take a
 * worker id: the peer's credentials (SO_PEERCRED), and the process
 * recorded for each id, kept in the store across restarts. Calls pool.h
 * and the store below it.
 */
#ifndef FNFS_SCHED_ADMIT_H
#define FNFS_SCHED_ADMIT_H

#include "conn.h"

/* Whether peer `p` may speak on the controller's socket at all: root or
 * the controller's own user. Returns 0, or -EPERM with the reason in
 * `why`, journalled (worker.refused) and logged. A struct sched_conn_ops
 * callback. */
int sched__admit_peer(struct sched *s, const struct sched_peer *p,
		      struct rt_buf *why);

/* Journals and logs (worker.refused) that peer `p` was refused before
 * it had an id: its registration was malformed, or claimed a reserved
 * name. */
void sched__admit_refused(struct sched *s, const struct sched_peer *p,
			  const char *reason);

/* Whether peer `p` may register as worker `id` (`w`: the worker known
 * under that id, or NULL); see docs/decisions.md ("Who may take a worker
 * id"). Returns 0, or -EBUSY/-EPERM with the reason in `why`, journalled
 * (worker.refused) and logged. */
int sched__admit_id(struct sched *s, const char *id,
		    const struct sched_worker *w, const struct sched_peer *p,
		    struct rt_buf *why);

/* Records `p` as the process registered as `id`, in the store (a worker
 * that outlives the controller is known again by it). Returns 0 or
 * -errno. */
int sched__admit_record(struct sched *s, const char *id,
			const struct sched_peer *p);

/* Before peer `p` registers as `id`: when it proves, by its certificate,
 * to be the worker `id` that is connected, and that connection has been
 * silent for more than two heartbeats and a half, the old connection is
 * closed (a partition the controller has not noticed yet leaves it
 * open); else the registration is refused as a duplicate. */
void sched__admit_replace(struct sched *s, const char *id,
			  const struct sched_peer *p);

/* `echo revoke > workers/ID/state`: refuses the certificate `w` last
 * registered with and every certificate of its id issued until now, for
 * good (the store's revoked table), marks it revoked (also refusing it
 * without a certificate), journals worker.revoked and closes its
 * connection. Returns 0, -EINVAL (a local worker) or -EIO/-ENOSPC. */
int sched__revoke(struct sched *s, struct sched_worker *w);

/* `echo resume > workers/ID/state` of a revoked worker: lets its id
 * register again without a certificate (its revoked certificates stay
 * refused). Returns 0 or -EIO. */
int sched__unrevoke(struct sched *s, struct sched_worker *w);

/* Whether worker `id` is marked revoked in the store. */
int sched__revoked_of(struct sched *s, const char *id);

/* Forgets the process registered as `id` (its worker is removed).
 * Returns 0 or -errno of the store. */
STORE_MUST int sched__admit_forget(struct sched *s, const char *id);

/* Makes worker `id`'s log directory (DATA/logs/ID, made by the worker
 * under its own umask) and what it holds private. */
void sched__logs_private(struct sched *s, const char *id);

#endif

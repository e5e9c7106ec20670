/*
 * fence.h - partitions: the epoch fence on what workers report, the
 * round-trip time of pings, and the healing of a worker that comes back
 * (it stops what now runs elsewhere before it takes new work).
 *
 * The pure decisions (sched_fence_check, sched_fence_adopt,
 * sched_rtt_update) take no state and are unit-tested; the rest runs on
 * the loop thread. Calls requests.h, reconcile.h and conn.h below it.
 */
#ifndef FNFS_SCHED_FENCE_H
#define FNFS_SCHED_FENCE_H

#include <stdint.h>

#include "../internal.h"

/* How long a returning worker has to acknowledge the stops of what now
 * runs elsewhere (a stop is answered once the process has exited: the
 * workers' 5 s stop grace, twice over). Past it, its connection is
 * closed: it is offline, and tries again. */
#define SCHED_FENCE_TIMEOUT_MS 10000

/* What a report about an instance does, given who sent it. */
enum sched_fence {
	SCHED_FENCE_ACCEPT, /* the current assignment: apply it */
	SCHED_FENCE_IGNORE, /* another assignment of the assignee: drop it */
	SCHED_FENCE_STOP    /* the sender holds no assignment: stop it */
};

/* The fence: a report with epoch `reported` (0: the worker names none, an
 * older worker or an instance started before epochs) about an instance
 * whose current assignment has epoch `current`, from a worker that is
 * (`assigned_here`) or is not its assignee. A sender that is not the
 * assignee runs a copy that must stop; the assignee's report counts only
 * for the current epoch (an older one is late: the start of the new
 * epoch is on its way behind it). Pure. */
enum sched_fence sched_fence_check(int assigned_here, uint64_t current,
				   uint64_t reported);

/* Whether a registering worker's running instance (epoch `reported`) is
 * adopted as it runs (1) or stopped and forgotten (0): it is adopted when
 * it is still assigned there (`assigned_here`), or assigned nowhere and
 * free to be taken (`free_to_take`), and only with the same epoch (or
 * none named): a copy of an older assignment stops, whatever happened
 * since. Pure. */
int sched_fence_adopt(int assigned_here, int free_to_take, uint64_t current,
		      uint64_t reported);

/* The smoothed round trip after one more sample, both in ms: the first
 * sample as it is (`srtt` <= 0), then an exponentially weighted moving
 * average with weight 1/8, as TCP's SRTT (RFC 6298). Pure. */
double sched_rtt_update(double srtt, double sample);

/* The epoch of a report (its "epoch" field; 0 when absent or bad). */
uint64_t sched__msg_epoch(const struct rt_msg *m);

/* Counts and logs a report of worker `w` about instance `id` that the
 * fence dropped. While `s` shuts down it is expected (the workers stop
 * what the controller let go of) and logged at debug level only. */
void sched__fenced(const struct sched *s, struct sched_worker *w,
		   const char *id, uint64_t reported, uint64_t current,
		   const char *what);

/* Tells worker `w`, which is registering, to stop and forget instance
 * `id` (a copy of epoch `epoch`, 0: any), and keeps `w` out of placement
 * until every such stop is acknowledged (or closes its connection after
 * SCHED_FENCE_TIMEOUT_MS). Call sched__fence_arm after the last one. */
void sched__fence_stop(struct sched *s, struct sched_worker *w, const char *id,
		       uint64_t epoch);

/* Ends the stops of a registration: if none is outstanding, `w` may take
 * work at once. */
void sched__fence_arm(struct sched *s, struct sched_worker *w);

/* Forgets the healing of worker `w` (it is being freed or registers
 * again). */
void sched__fence_drop(struct sched_worker *w);

/* Starts the heartbeat timer (every 250 ms: the silence of each worker,
 * and a ping to each registered one every second). */
void sched__heartbeat_start(struct sched *s);

/* Stops and closes the heartbeat timer (shutdown). */
void sched__heartbeat_stop(struct sched *s);

/* A worker's `pong`: one round-trip sample. */
void sched__on_pong(struct sched *s, struct sched_worker *w,
		    const struct rt_msg *m);

#endif

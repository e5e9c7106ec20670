/*
 * silence.h - the worker's clock of the controller's silence: a worker
 * that hears nothing (no frame of any kind) from its controller for its
 * heartbeat timeout treats it as lost, although the connection may look
 * open (a partition, a frozen controller). A connection attempt that is
 * not registered within that time is given up too. Pure: the caller
 * passes the time and acts on the answer. Private to runtime/.
 */
#ifndef FNFS_RT_SILENCE_H
#define FNFS_RT_SILENCE_H

#include <stdint.h>

/* The default heartbeat timeout of a worker, ms: the controller's
 * default (SCHED_HEARTBEAT_TIMEOUT_MS). */
#define RT_HEARTBEAT_TIMEOUT_MS 3000

struct rt_silence {
	int own_ms;	      /* --heartbeat-timeout, or 0: not given */
	int controller_ms;    /* what `registered` said, or 0 */
	int armed;	      /* the controller pings: its silence counts */
	int64_t heard_mono;   /* monotonic ms of the last frame heard, or 0 */
	int64_t attempt_mono; /* a connection attempt seen since, or 0 */
};

/* The timeout in force: the worker's own, else the controller's, else
 * RT_HEARTBEAT_TIMEOUT_MS. */
int rt_silence_timeout(const struct rt_silence *c);

/* A frame was heard at `now`. */
void rt_silence_heard(struct rt_silence *c, int64_t now);

/* The controller accepted the registration at `now`, saying its
 * heartbeat timeout (`controller_ms`, ms; 0: an older controller, which
 * does not ping, so that silence while connected proves nothing). */
void rt_silence_registered(struct rt_silence *c, int64_t now,
			   int controller_ms);

/* Whether the controller is lost at `now`: registered (`connected`) and
 * armed, with nothing heard for longer than the timeout; or connecting
 * (`connecting`) for longer than the timeout without being registered.
 * Returns 1 (lost: the caller closes the connection and counts the
 * orphan timeout from c->heard_mono) or 0. */
int rt_silence_lost(struct rt_silence *c, int64_t now, int connected,
		    int connecting);

#endif

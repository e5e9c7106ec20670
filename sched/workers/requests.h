/*
 * requests.h - messages to workers, requests that writes and reads wait
 * for, and the waits themselves (bounded). Calls only conn.h below it.
 */
#ifndef FNFS_SCHED_REQUESTS_H
#define FNFS_SCHED_REQUESTS_H

#include "../internal.h"

/* Sends a message with a body to a worker (dropped if it is not
 * connected); consumes the header. */
void sched__send_body(struct sched *s, struct sched_worker *w, json_t *header,
		      const void *body, size_t len);

/* Sends a message to a worker (dropped if it is not connected); consumes
 * the header. */
void sched__send(struct sched *s, struct sched_worker *w, json_t *header);

/* Sends a request that `wait` (may be NULL) waits for; consumes the
 * header. Returns 0, or -ENOTCONN when the worker is not connected. */
int sched__request(struct sched *s, struct sched_worker *w, json_t *header,
		   struct sched_wait *wait, int slot, uint64_t instance_id);

/* A request got its answer `m` (or never will: `m` NULL): its wait
 * counts it, and it is freed. */
void sched__request_done(struct sched *s, struct sched_request *r,
			 const struct rt_msg *m);

/* Ends every request sent to `w`: it will not answer. */
void sched__requests_fail(struct sched *s, struct sched_worker *w);

/* Ends every outstanding request (shutdown). */
void sched__requests_end_all(struct sched *s);

/* Starts a wait bounded by `ms`. Returns it, or NULL (no memory, or not
 * started). */
struct sched_wait *sched__wait_new(struct sched *s, sched_done_fn done,
				   void *arg, int ms);

/* Completes the wait if nothing is outstanding (call after sending). */
void sched__wait_arm(struct sched *s, struct sched_wait *w);

#endif

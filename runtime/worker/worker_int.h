/*
 * worker_int.h - what the worker's files share: worker.c (messages,
 * replies, the supervisor's events), worker_conn.c (the connection) and
 * worker_main.c (the command line, ticks and signals). Private to them.
 */
#ifndef FNFS_RT_WORKER_INT_H
#define FNFS_RT_WORKER_INT_H

#include <jansson.h>

#include "worker.h"

/* The supervisor's events, turned into messages (worker.c). */
extern const struct rt_sup_events rt__worker_events;

/* Handles one message of the controller (worker.c). */
void rt__worker_handle(struct rt_worker *w, const struct rt_msg *m);

/* Sends `register` on a new connection (worker.c). */
void rt__worker_register(struct rt_worker *w);

/* Stops every instance and the connection for good, saying `why`; the
 * worker exits once they are gone (worker.c). */
void rt__worker_shutdown(struct rt_worker *w, const char *why);

/* Exits the loop when shutting down and every instance is gone, or when
 * `give_up` (the children did not die in time) (worker.c). */
void rt__worker_maybe_exit(struct rt_worker *w, int give_up);

/* Ends direct calls whose time is up, or all of them when `all`
 * (worker.c). */
void rt__worker_direct_expire(struct rt_worker *w, int all);

/* Answers the requests that waited too long (worker.c). */
void rt__worker_answer_late(struct rt_worker *w);

/* The connection is lost for `why` (a static string): it is closed, and
 * tried again (worker_conn.c). A no-op when there is none. */
void rt__worker_conn_lost(struct rt_worker *w, const char *why);

/* Starts connecting to the current controller of the list
 * (worker_conn.c). */
void rt__worker_try_connect(struct rt_worker *w);

/* Sends a heartbeat with `samples` (taken over) (worker_main.c). */
void rt__worker_send_heartbeat(struct rt_worker *w, json_t *samples);

/* The instances' /proc samples, a new JSON array (worker_main.c). */
json_t *rt__worker_samples(struct rt_worker *w);

#endif

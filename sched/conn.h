/*
 * conn.h - the connections of workers to the controller's socket: frames
 * in and out, and closing. The bottom of the cluster side: it calls
 * nothing in sched/ but the callbacks of struct sched_conn_ops, which
 * lifecycle.c sets at sched_start.
 */
#ifndef FNFS_SCHED_CONN_H
#define FNFS_SCHED_CONN_H

#include "internal.h"

struct conn;

/* What a connection tells the layers above it. */
struct sched_conn_ops {
	/* A message on a connection with no worker yet: `register`. */
	void (*on_register)(struct sched *s, struct conn *c,
			    const struct rt_msg *m);
	/* A message from registered worker `w`. */
	void (*on_message)(struct sched *s, struct sched_worker *w,
			   const struct rt_msg *m);
	/* The connection of registered worker `w` closed, for `why`. */
	void (*on_gone)(struct sched *s, struct sched_worker *w,
			const char *why);
};

/* Accepts a worker's connection on the controller's socket (a libuv
 * connection callback; `server->data` is the struct sched). */
void sched__on_connection(uv_stream_t *server, int status);

/* Queues a message with a body on `c` (dropped if `c` is NULL or
 * closing); consumes the header. */
void sched__conn_send_body(struct conn *c, json_t *header, const void *body,
			   size_t len);

/* Queues a message on `c` (dropped if `c` is NULL or closing); consumes
 * the header. */
void sched__conn_send(struct conn *c, json_t *header);

/* Closes `c`; its worker, if any, is gone (on_gone). Idempotent. */
void sched__conn_close(struct conn *c, const char *why);

/* Ties registered worker `w` and connection `c` to each other. */
void sched__conn_bind(struct conn *c, struct sched_worker *w);

/* Unties connection `c` (may be NULL) from its worker (being freed). */
void sched__conn_detach(struct conn *c);

/* At shutdown: closes the connection of worker `w` (if any) without
 * telling anyone, and marks the worker offline. */
void sched__conn_drop(struct sched_worker *w);

#endif

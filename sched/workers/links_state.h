/*
 * links_state.h - the state of the workers' connections (the links),
 * which sched/workers/ owns (conn.c, listen.c, requests.c, fence.c):
 * where workers connect, every open connection, the frames they wait
 * to send, the requests that wait for an answer, and the heartbeat.
 * Reached as s->links; sched_start (face/lifecycle.c) opens it.
 */
#ifndef FNFS_SCHED_LINKS_STATE_H
#define FNFS_SCHED_LINKS_STATE_H

#include <stdint.h>

#include <uv.h>

#include "../../runtime/base/rt.h"
#include "../../runtime/base/wire.h"

struct conn;	       /* conn.h */
struct sched_conn_ops; /* conn.h */
struct sched_peer_ops; /* conn.h */
struct sched_listen;   /* listen.h */

struct sched_links_state {
	uv_pipe_t server;		       /* DATA/ctl.sock */
	const struct sched_conn_ops *conn_ops; /* conn.c's callbacks up */
	const struct sched_peer_ops *peer_ops; /* peer controllers (conn.h),
						  or NULL: refused */
	char *sock_path;		       /* owned */
	struct sched_listen *listen; /* --listen (listen.h), owned, or NULL */
	struct conn *conns;	     /* every open connection (conn.c) */
	struct rt_wire_flusher flusher; /* frames to workers, per loop turn */
	struct rt_idmap requests;	/* seq -> struct sched_request * */
	uint64_t next_seq;
	uv_timer_t heartbeat; /* every 250 ms: silence, pings (fence.c) */
	int64_t last_beat;    /* monotonic ms of the last heartbeat run */
	int64_t last_ping;    /* monotonic ms of the last pings */
};

#endif

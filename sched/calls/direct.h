/*
 * direct.h - direct calls: the controller sends a call of a hot `http`
 * instance itself, over a kept-alive connection to the instance's server,
 * when the instance's worker runs on this machine in the controller's own
 * network namespace (it connected over DATA/ctl.sock). One hop
 * fewer than through the worker (docs/architecture.md, "Direct calls").
 *
 * The worker reports each http instance's endpoint (PORT on 127.0.0.1,
 * FN_LISTENER's socket, with its directory's identity: used only when the
 * controller sees the same directory there) in its `instance` messages. Each
 * instance keeps its idle connections (at most one per slot, since each call in
 * flight has one of its own); a connection is watched by one uv_poll for its
 * whole life. A call ends as the worker's would (runtime/worker/http.c): the
 * same statuses, errnos and results. A connect that fails sends the call
 * through the worker, and the instance's calls keep going that way until
 * its endpoint changes. Before a stop, restart or start is sent to the
 * instance's worker, the worker is told how many direct calls are in
 * flight (and again as they end), so that its graceful stop waits for
 * them as for its own. --no-direct-calls turns it all off.
 */
#ifndef FNFS_SCHED_DIRECT_H
#define FNFS_SCHED_DIRECT_H

#include "../internal.h"

struct sched_direct;
struct sched_direct_conn;

/* Worker `w` registered over a Unix socket from process `pid` (0: not a
 * Unix socket): sets w->direct_ok when that process shares our network
 * namespace (and direct calls are on). */
void sched__direct_worker(struct sched *s, struct sched_worker *w, int pid);

/* Records the endpoint in `m`, an `instance` report of `in`'s worker (its
 * "port", "listener" with "listen_dir_dev" and "listen_dir_ino", its
 * process's "pid"). A new endpoint closes the idle connections to the old
 * one and allows direct calls again. */
void sched__direct_endpoint(struct sched *s, struct sched_instance *in,
			    const struct rt_msg *m);

/* Sends call `c` (just put on `in`, its body in c->body) to `in`'s server
 * directly when it can: returns 1 when it took the call (c->body is then
 * its to free), 0 when the call must go to the worker. Never blocks: the
 * request is written at once, without waiting for the loop. */
int sched__direct_send(struct sched *s, struct sched_call *c,
		       struct sched_instance *in);

/* Direct call `c` ends (any way: its response, its deadline, its instance
 * lost): its connection is let go (closed unless the response was
 * whole), its instance's count of direct calls goes down, and a worker
 * told about them hears the new count. */
void sched__direct_call_over(struct sched *s, struct sched_call *c);

/* About to send `in`'s worker a stop, restart or start: when direct calls
 * are in flight on `in`, the worker hears how many first (a `direct`
 * message), and hears again as they end, so that its graceful stop waits
 * for them. */
void sched__direct_tell(struct sched *s, struct sched_instance *in);

/* Frees `in`'s direct state; its connections are closed. */
void sched__direct_free(struct sched_instance *in);

#endif

/*
 * worker.h - the worker process (`fnfs worker`): its connection to the
 * controller, which it serves with a supervisor (supervise.h) that starts,
 * supervises, restarts and stops function instances, and the calls it
 * runs on them (call.c). Private to runtime/.
 */
#ifndef FNFS_RT_WORKER_H
#define FNFS_RT_WORKER_H

#include <jansson.h>
#include <sys/types.h>
#include <uv.h>

#include "connect_list.h"
#include "../base/net.h"
#include "../base/rt.h"
#include "silence.h"
#include "supervise.h"
#include "../base/tls.h"
#include "../base/wire.h"

#define RT_SAMPLE_MS 1000 /* /proc sampling and heartbeat period */
#define RT_REAP_WAIT_MS                                                        \
	1000 /* at exit, wait this long for SIGKILLed children */
#define RT_CGROUP_WAIT_MS 500 /* at exit, for their groups to empty */

struct rt_curluv;
/* The most calls one instance holds (a sanity bound: the controller sends
 * at most its concurrency, which may have changed since it started). */
#define RT_CALLS_MAX 4096

/* A call a worker runs on one of its hot or cold instances. */
struct rt_call {
	struct rt_instance *in; /* NULL once finished */
	struct rt_call *next;	/* on in->calls, oldest first */
	struct rt_call *prev;
	long long id;
	char idstr[24];
	int64_t deadline_ms; /* epoch ms */
	char *body;	     /* the request, owned */
	size_t len;
	int sent;	    /* handed to a process (in->nsent counts it) */
	uv_timer_t *timer;  /* the deadline; owned until closed */
	struct rt_run *run; /* cold: its process */
	struct rt_opening *opening; /* cold: its sandbox's binds being
				     * opened, before its process */
	struct rt_buf resp;	    /* cold: its stdout so far */
	void *lambda; /* lambda.c: the runtime API it was handed to */
	void *http;   /* http.c: its transfer under way, or NULL */
};

/* The worker process. */
struct rt_worker {
	struct rt_sup sup; /* its instances; sup.arg is the worker */
	uv_loop_t *loop;
	const char *sock_path; /* --connect as given: a controller's socket,
				  a list of them, or tls://IP:PORT,... (also
				  the key of its cgroups) */
	const char *data_dir;  /* its own files: logs/, code cache; owned
				  by main (--data, default the socket's
				  directory) */
	const char *id;
	int memory_mb;
	json_t *tags;	       /* array of strings, owned */
	json_t *namespaces;    /* array of strings, owned */
	int orphan_timeout_ms; /* without a controller this long: exit */
	struct rt_map waits;   /* instance id -> struct rt_waits *, owned */
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_pipe_t pipe; /* a Unix socket */
		uv_tcp_t tcp;	/* tls:// or tcp:// */
	} conn;
	int tcp;			/* --connect tls:// or tcp:// */
	struct rt_connect_list targets; /* the controllers, and which now */
	int next_delay_ms;    /* a redirect's delay before the next attempt,
				 or -1: the list's (rt_connect_failed) */
	int was_registered;   /* the connection lost last was registered */
	const char *lost_why; /* why it was lost: a static string */
	SSL_CTX *tls_ctx;     /* tls://: owned, keeps the session */
	struct rt_tls tls;    /* tls://: the current connection's */
	struct rt_buf plain;  /* tls://: decrypted, not decoded */
	uint64_t rng;	      /* the jitter of reconnections */
	struct rt_wire_flusher flusher; /* frames, written once per turn */
	struct rt_wire_out out;		/* the frames for conn */
	uv_connect_t connect_req;
	int connected;	     /* registered with the controller */
	int registered_once; /* it was, at least once */
	int connecting;
	struct rt_buf in;  /* bytes read, not yet decoded */
	uv_idle_t resume;  /* frames left in `in` for the next slice */
	int64_t slice_t0;  /* when the current slice began */
	uv_timer_t tick;   /* heartbeat and sampling */
	int64_t beat_mono; /* when the last heartbeat went out */
	uv_timer_t retry;  /* reconnection */
	int64_t lost_mono; /* when the controller went away, or 0 */
	uv_signal_t sig[3];
	uv_signal_t sigchld;	/* exits of instance processes */
	int shutting_down;	/* stopping everything, then exit */
	int64_t reap_wait_mono; /* shutting down: since when only unreaped
				   processes are left, or 0 */
	int closed;		/* its handles are closing: the loop ends */
	void *code;		/* the code cache (fetch.c), or NULL */
	struct rt_curluv *curl; /* the HTTP client (curluv.h), or NULL */
	int exit_code;

	/* The controller's silence (silence.h): heard, armed, timeout. */
	struct rt_silence silence;
};

/* The worker that owns instance `in`. */
static inline struct rt_worker *rt_worker_of(const struct rt_instance *in)
{
	return in->sup->arg;
}

/* ---- worker.c: the connection */

/* Sends one message to the controller (dropped when not connected). The
 * header reference is consumed. */
void rt_worker_send(struct rt_worker *w, json_t *header, const void *body,
		    size_t len);

/* ---- call.c: calls of hot and cold instances */

/* Ends call `c` (not finished yet) with its one result to the
 * controller: status ok, error (the function's: EREMOTEIO), timeout,
 * reset (its process died or dropped it: ECONNRESET) or failed (the
 * worker could not run it), and the response or the message in `body`
 * (`len` bytes, may be NULL). `c` is freed once its timer has closed:
 * it must not be used after this returns except through c->in == NULL. */
void rt_call_finish(struct rt_call *c, const char *status, const char *reason,
		    const char *body, size_t len);

/* Handles the controller's `call` message for `in` (NULL: unknown). */
void rt_call_start(struct rt_worker *w, struct rt_instance *in,
		   const struct rt_msg *m);

/* The calls one instance serves at once: for a hot json or http one, the
 * `slots` of the controller's latest call (a concurrency changed since it
 * started), else its run spec's `concurrency`; 1 for line and cold ones. */
int rt_call_slots(const struct rt_instance *in);

/* An instance may take calls now (its hot process was spawned or became
 * ready, a call ended): hands waiting calls to it, up to its slots. */
void rt_call_ready(struct rt_instance *in);

/* Whether a stop or restart of `in` must wait for its calls (the
 * supervisor's `busy` event): ones handed to its process, and when it
 * stops for good, ones waiting that it can still serve. */
int rt_call_busy(const struct rt_instance *in);

/* The process of a hot instance is gone: the calls written to it fail
 * (ECONNRESET); ones not yet written wait for the next process, or fail
 * when it is stopped for good. */
void rt_call_process_gone(struct rt_instance *in);

/* The instance goes away: its calls fail, and cold calls' processes are
 * killed. */
void rt_call_abort(struct rt_instance *in, const char *why);

/* A cold call's process was reaped. */
void rt_call_cold_exited(struct rt_run *r);

/* Reads a calls process's stdout (a libuv read callback). */
void rt_call_on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* ---- cgroup.c: what the controller cleans up after a killed worker */

/* Removes the empty cgroups (every hierarchy) that worker `worker_id` of the
 * controller `key` (its socket path, as given to the worker) left behind,
 * and then its root group if that is empty: for a worker that will not
 * come back to remove them (killed). Kills nothing: groups with members
 * stay. Retries up to `wait_ms` while some are busy (members dying), so
 * it may block that long. Returns 0 when nothing is left, -EBUSY. The
 * names carry $FNFS_CGROUP_TAG, as rt_cg_open_host gives them. */
int rt_cgroup_prune(const char *worker_id, const char *key, int wait_ms);

/* The main of `fnfs worker`. Returns the exit code. */
int rt_worker_main(int argc, char **argv);

#endif

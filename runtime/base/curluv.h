/*
 * curluv.h - libcurl's multi interface driven by a libuv loop: the
 * documented pattern (CURLMOPT_SOCKETFUNCTION watches curl's sockets with
 * uv_poll handles, CURLMOPT_TIMERFUNCTION arms one uv_timer, both call
 * curl_multi_socket_action, and finished transfers are collected with
 * curl_multi_info_read). One multi per loop; its connection cache keeps
 * connections alive across transfers. Nothing here blocks the loop.
 *
 * Generic: it knows easy handles and completion callbacks, not what the
 * transfers are for (HTTP calls to instances, the etcd client).
 * Private to runtime/ and sched/'s etcd client (sched/etcd*.c).
 */
#ifndef FNFS_RT_CURLUV_H
#define FNFS_RT_CURLUV_H

#include <curl/curl.h>
#include <uv.h>

#define RT_CURLUV_POOL 64 /* released easy handles kept for reuse */

struct rt_curluv;
struct rt_curl_xfer;

/* Called once when a transfer ends (`rc` is curl's result for it), on
 * the loop thread, outside libcurl; the easy handle is out of the multi
 * already, so the callback may clean it up, and may add transfers. */
typedef void (*rt_curl_done_fn)(struct rt_curl_xfer *x, CURLcode rc);

/* A transfer: embedded in its owner's record. */
struct rt_curl_xfer {
	CURL *easy;	      /* the owner's; its CURLOPT_PRIVATE is ours */
	rt_curl_done_fn done; /* called once at the end */
	void *arg;	      /* the owner's */
	int added;	      /* in the multi */
	struct rt_curl_xfer *next, *prev; /* the multi's list, while added */
	/* Optional: makes the socket of a new connection instead of curl
	 * (close-on-exec), or returns -1 to fail it. */
	int (*open)(struct rt_curl_xfer *x, curlsocktype purpose,
		    struct curl_sockaddr *a);
	struct rt_curluv *multi; /* set by rt_curluv_add */
};

/* Creates the multi of `loop`, with room for `max_conns` idle connections
 * in its cache (0: curl's default). Returns 0 or -errno (-ENOMEM, or
 * -EIO when libcurl cannot start). */
int rt_curluv_new(uv_loop_t *loop, long max_conns, struct rt_curluv **out);

/* Starts transfer `x` (x->easy set up, x->done set) on `m`. Returns 0, or
 * -errno when curl refuses it (then `done` is never called). The first
 * step runs on the next loop turn, never inside this call. */
int rt_curluv_add(struct rt_curluv *m, struct rt_curl_xfer *x);

/* Ends transfer `x` if it is under way, without calling `done`; its
 * connection is closed if the transfer was in the middle of it. The easy
 * handle stays the owner's. A no-op when `x` is not added. Must not be
 * called from inside a libcurl callback. */
void rt_curluv_cancel(struct rt_curluv *m, struct rt_curl_xfer *x);

/* An easy handle for a new transfer: one released earlier (reset to
 * curl's defaults, which is cheaper than a new one), or a new one. NULL
 * when out of memory. */
CURL *rt_curluv_easy(struct rt_curluv *m);

/* Gives back easy handle `e` (not added; NULL: a no-op) for a later
 * transfer, or cleans it up when RT_CURLUV_POOL are kept already. */
void rt_curluv_release(struct rt_curluv *m, CURL *e);

/* Transfers under way on `m`. */
int rt_curluv_running(const struct rt_curluv *m);

/* Closes `m` (NULL: a no-op): every transfer still added is cancelled
 * without its callback, cached connections are closed, and the loop
 * handles are closed; the memory goes once their close callbacks ran. */
void rt_curluv_close(struct rt_curluv *m);

#endif

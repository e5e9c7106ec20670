/*
 * etcd_internal.h - what etcd.c and etcd_watch.c share: the client's
 * record and the transfer helpers. Private to the etcd client.
 */
#ifndef FNFS_SCHED_ETCD_INTERNAL_H
#define FNFS_SCHED_ETCD_INTERNAL_H

#include <curl/curl.h>

#include "../../../runtime/base/curluv.h"
#include "etcd.h"

#define ETCD_MAX_ANSWER (64u << 20) /* bytes of one answer or stream line */

/* One call under way. */
struct etcd_req {
	struct rt_curl_xfer x; /* x.easy owned (released at the end) */
	struct etcd_client *c;
	const char *path;   /* "/v3/kv/put" (static) */
	char *body;	    /* the JSON request, owned */
	int64_t deadline;   /* rt_mono_ms() bound of every attempt */
	size_t endpoint;    /* index of the endpoint being tried */
	int tries;	    /* endpoints tried */
	int lease_call;	    /* a keepalive: no TTL is a lost lease */
	struct rt_buf resp; /* the answer's body */
	char err[CURL_ERROR_SIZE];
	etcd_cb cb;
	void *arg;
	struct etcd_req *next, *prev; /* c->reqs */
};

struct etcd_client {
	uv_loop_t *loop;
	struct rt_curluv *curl; /* owned: this client's multi */
	char **endpoints;	/* URLs without a trailing '/', owned */
	size_t nendpoints;
	size_t current;		    /* where the next request goes */
	char *ca, *cert, *key;	    /* owned, or NULL */
	int timeout_ms;		    /* per request */
	int dead_ms;		    /* keepalive bound of a silent connection */
	struct curl_slist *hdrs;    /* owned: the request headers */
	struct etcd_req *reqs;	    /* calls under way */
	struct etcd_watch *watches; /* watches not ended */
};

/* Sets up easy handle `e` for a POST of `body` (kept by the caller until
 * the transfer ends) to endpoint `endpoint` + `path`, bounded by
 * `timeout_ms` (0: none, for a stream), TLS as configured, curl's error
 * text into `errbuf`. Returns 0 or -ENAMETOOLONG. */
int etcd__easy_setup(struct etcd_client *c, CURL *e, size_t endpoint,
		     const char *path, const char *body, long timeout_ms,
		     char *errbuf);

/* CURLOPT_WRITEFUNCTION appending to the struct rt_buf `arg`, at most
 * ETCD_MAX_ANSWER bytes. */
size_t etcd__on_body(char *p, size_t size, size_t n, void *arg);

/* Curl's result `rc` means the endpoint could not be reached at all (so
 * another may be tried: nothing was sent). */
int etcd__unreachable(CURLcode rc);

/* The -errno of a failed transfer: -ETIMEDOUT or -EIO. */
int etcd__curl_errno(CURLcode rc);

/* Ends watch `w` as the client goes: its transfer is stopped, `fn` gets
 * its last message (`rc`, `why`), and it leaves c->watches (its owner
 * still frees it). */
void etcd__watch_detach(struct etcd_watch *w, int rc, const char *why);

#endif

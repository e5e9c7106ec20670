/*
 * etcd.c - the etcd client (etcd.h): one POST per call on the client's
 * own curl multi (runtime/base/curluv.h), the answer parsed by etcd_json.c and
 * handed to the caller's callback; endpoints tried in turn when one
 * cannot be reached. Watches are in etcd_watch.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "etcd_internal.h"

#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_DEAD_MS	   10000

/* ---------------------------------------------------------- the client */

/* Adds endpoint `s` (`n` bytes), with a scheme, to c->endpoints. */
static int add_endpoint(struct etcd_client *c, const char *s, size_t n)
{
	const char *scheme = c->ca != NULL ? "https://" : "http://";
	char **eps;
	char *url;
	size_t k;

	while (n > 0 && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n > 0 &&
	       (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '/'))
		n--;
	if (n == 0)
		return 0;
	for (k = 0; k < n; k++)
		if (s[k] == '"' || s[k] < ' ')
			return -EINVAL;
	if ((n > 7 && strncmp(s, "http://", 7) == 0) ||
	    (n > 8 && strncmp(s, "https://", 8) == 0))
		scheme = "";
	if (asprintf(&url, "%s%.*s", scheme, (int)n, s) < 0)
		return -ENOMEM;
	eps = realloc(c->endpoints, (c->nendpoints + 1) * sizeof(*eps));
	if (eps == NULL) {
		free(url);
		return -ENOMEM;
	}
	c->endpoints = eps;
	c->endpoints[c->nendpoints++] = url;
	return 0;
}

/* A copy of `s` (NULL stays NULL) into *out. */
static int dup_opt(const char *s, char **out)
{
	*out = NULL;
	if (s == NULL || *s == '\0')
		return 0;
	*out = strdup(s);
	return *out == NULL ? -ENOMEM : 0;
}

int etcd_client_new(uv_loop_t *loop, const struct etcd_config *cfg,
		    struct etcd_client **out)
{
	struct etcd_client *c = NULL;
	const char *p, *comma;
	int rc;

	*out = NULL;
	if (cfg->endpoints == NULL) {
		rc = -EINVAL;
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	c->loop = loop;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms
					    : DEFAULT_TIMEOUT_MS;
	c->dead_ms = cfg->dead_ms > 0 ? cfg->dead_ms : DEFAULT_DEAD_MS;
	if ((rc = dup_opt(cfg->ca, &c->ca)) < 0 ||
	    (rc = dup_opt(cfg->cert, &c->cert)) < 0 ||
	    (rc = dup_opt(cfg->key, &c->key)) < 0)
		goto out;
	for (p = cfg->endpoints; rc == 0; p = comma + 1) {
		comma = strchr(p, ',');
		if (comma == NULL)
			comma = p + strlen(p);
		rc = add_endpoint(c, p, (size_t)(comma - p));
		if (*comma == '\0')
			break;
	}
	if (rc == 0 && c->nendpoints == 0)
		rc = -EINVAL;
	if (rc < 0)
		goto out;
	c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (c->hdrs != NULL)
		c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	if (c->hdrs == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Its own multi: a connection cache for the members, whose
	 * sockets get etcd's keepalive bounds (on_sockopt). */
	rc = rt_curluv_new(loop, (long)c->nendpoints * 4 + 4, &c->curl);
out:
	if (rc < 0) {
		etcd_client_free(c);
		c = NULL;
	}
	*out = c;
	return rc;
}

/* Frees request `r` (out of the multi and the client's list). */
static void req_free(struct etcd_client *c, struct etcd_req *r)
{
	if (r->prev != NULL)
		r->prev->next = r->next;
	else if (c->reqs == r)
		c->reqs = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	rt_curluv_release(c->curl, r->x.easy);
	rt_buf_free(&r->resp);
	free(r->body);
	free(r);
}

/* Calls r's callback with error `rc` and text `why`. */
static void req_fail(struct etcd_req *r, int rc, const char *why)
{
	struct etcd_answer a = { 0 };

	a.rc = rc;
	a.error = (char *)why;
	r->cb(r->arg, &a);
}

void etcd_client_free(struct etcd_client *c)
{
	size_t i;

	if (c == NULL)
		return;
	while (c->reqs != NULL) {
		struct etcd_req *r = c->reqs;

		rt_curluv_cancel(c->curl, &r->x);
		req_fail(r, -ECANCELED, "the etcd client was closed");
		req_free(c, r);
	}
	while (c->watches != NULL)
		etcd__watch_detach(c->watches, -ECANCELED,
				   "the etcd client was closed");
	rt_curluv_close(c->curl);
	curl_slist_free_all(c->hdrs);
	for (i = 0; i < c->nendpoints; i++)
		free(c->endpoints[i]);
	free(c->endpoints);
	free(c->ca);
	free(c->cert);
	free(c->key);
	free(c);
}

const char *etcd_client_endpoint(const struct etcd_client *c)
{
	return c->endpoints[c->current];
}

/* ------------------------------------------------- one HTTP transfer */

/* Sets keepalive bounds on each new socket: a member that vanishes
 * without a FIN (a partition, a dead machine) is found in about dead_ms
 * even on an idle watch, and unacknowledged data fails in dead_ms. */
static int on_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	const struct etcd_client *c = arg;
	int on = 1, idle = c->dead_ms / 2000, cnt, intvl = 1;
	unsigned int user = (unsigned int)c->dead_ms;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	if (idle < 1)
		idle = 1;
	cnt = (c->dead_ms / 1000 - idle) / intvl;
	if (cnt < 1)
		cnt = 1;
	/* Best effort: a socket that refuses keeps curl's defaults. */
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user,
			 sizeof(user));
	return CURL_SOCKOPT_OK;
}

int etcd__easy_setup(struct etcd_client *c, CURL *e, size_t endpoint,
		     const char *path, const char *body, long timeout_ms,
		     char *errbuf)
{
	char url[1024];
	int n;

	n = snprintf(url, sizeof(url), "%s%s", c->endpoints[endpoint], path);
	if (n < 0 || (size_t)n >= sizeof(url))
		return -ENAMETOOLONG;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)strlen(body));
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms > 0 && timeout_ms < c->timeout_ms
				 ? timeout_ms
				 : (long)c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, c);
	if (c->ca != NULL) {
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	}
	if (c->cert != NULL)
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert);
	if (c->key != NULL)
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->key);
	return 0;
}

int etcd__unreachable(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

int etcd__curl_errno(CURLcode rc)
{
	return rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
}

/* ------------------------------------------------------ unary calls */

static void req_done(struct rt_curl_xfer *x, CURLcode crc);

/* Starts (or restarts, on the next endpoint) request `r`. */
static int req_start(struct etcd_req *r)
{
	struct etcd_client *c = r->c;
	int64_t left = r->deadline - rt_mono_ms();
	int rc;

	if (left < 1)
		left = 1;
	rt_buf_reset(&r->resp);
	r->err[0] = '\0';
	if (r->x.easy == NULL) {
		r->x.easy = rt_curluv_easy(c->curl);
		if (r->x.easy == NULL)
			return -ENOMEM;
	} else {
		curl_easy_reset(r->x.easy);
	}
	rc = etcd__easy_setup(c, r->x.easy, r->endpoint, r->path, r->body,
			      (long)left, r->err);
	if (rc < 0)
		return rc;
	curl_easy_setopt(r->x.easy, CURLOPT_WRITEFUNCTION, etcd__on_body);
	curl_easy_setopt(r->x.easy, CURLOPT_WRITEDATA, &r->resp);
	r->x.done = req_done;
	r->x.arg = r;
	r->tries++;
	return rt_curluv_add(c->curl, &r->x);
}

size_t etcd__on_body(char *p, size_t size, size_t n, void *arg)
{
	struct rt_buf *b = arg;

	if (b->len + n > ETCD_MAX_ANSWER || rt_buf_append(b, p, n) < 0)
		return 0; /* ends the transfer with an error */
	(void)size;
	return n;
}

/* The end of a transfer: the answer to the caller, or the next endpoint. */
static void req_done(struct rt_curl_xfer *x, CURLcode crc)
{
	struct etcd_req *r = x->arg;
	struct etcd_client *c = r->c;
	struct etcd_answer a = { 0 };
	char why[CURL_ERROR_SIZE + 160];
	long status = 0;
	int rc;

	if (crc != CURLE_OK) {
		if (etcd__unreachable(crc) && r->tries < (int)c->nendpoints &&
		    rt_mono_ms() < r->deadline) {
			r->endpoint = (r->endpoint + 1) % c->nendpoints;
			c->current = r->endpoint;
			if (req_start(r) == 0)
				return;
		}
		snprintf(why, sizeof(why), "etcd %s%s: %s",
			 c->endpoints[r->endpoint], r->path,
			 r->err[0] ? r->err : curl_easy_strerror(crc));
		if (crc == CURLE_OPERATION_TIMEDOUT)
			c->current = (r->endpoint + 1) % c->nendpoints;
		req_fail(r,
			 etcd__unreachable(crc) ? -EIO : etcd__curl_errno(crc),
			 why);
		goto out;
	}
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	rc = etcd_parse_answer(r->resp.data ? r->resp.data : "", r->resp.len,
			       &a);
	if (rc < 0) {
		snprintf(why, sizeof(why), "etcd %s%s: HTTP %ld, %s",
			 c->endpoints[r->endpoint], r->path, status,
			 a.error ? a.error : strerror(-rc));
		etcd_answer_clear(&a);
		req_fail(r, rc == -ENOMEM ? -ENOMEM : -EPROTO, why);
		goto out;
	}
	if (a.rc == 0 && r->lease_call && a.ttl <= 0) {
		a.rc = -ENOENT;
		a.error = strdup("the lease expired or was revoked");
	}
	if (a.rc == -EAGAIN) /* that member has no leader: try another */
		c->current = (r->endpoint + 1) % c->nendpoints;
	r->cb(r->arg, &a);
	etcd_answer_clear(&a);
out:
	req_free(c, r);
}

/* Sends `body` (owned, freed in every case) to `path`, bounded by
 * `timeout_ms` (0: the client's). */
static int submit(struct etcd_client *c, const char *path, char *body, int rc,
		  int timeout_ms, int lease_call, etcd_cb cb, void *arg)
{
	struct etcd_req *r = NULL;

	if (rc < 0)
		goto out;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	r->c = c;
	r->path = path;
	r->body = body;
	body = NULL;
	r->cb = cb;
	r->arg = arg;
	r->lease_call = lease_call;
	r->endpoint = c->current;
	r->deadline = rt_mono_ms() +
		      (timeout_ms > 0 ? timeout_ms : c->timeout_ms);
	r->next = c->reqs;
	if (c->reqs != NULL)
		c->reqs->prev = r;
	c->reqs = r;
	rc = req_start(r);
	if (rc < 0)
		req_free(c, r);
out:
	free(body);
	return rc;
}

int etcd_range(struct etcd_client *c, const char *key, const char *range_end,
	       int64_t revision, int64_t limit, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_range(key, range_end, revision, limit, 0, &body);

	return submit(c, "/v3/kv/range", body, rc, 0, 0, cb, arg);
}

int etcd_put(struct etcd_client *c, const char *key, const char *value,
	     size_t n, int64_t lease, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_put(key, value, n, lease, &body);

	return submit(c, "/v3/kv/put", body, rc, 0, 0, cb, arg);
}

int etcd_delete(struct etcd_client *c, const char *key, const char *range_end,
		etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_delete(key, range_end, &body);

	return submit(c, "/v3/kv/deleterange", body, rc, 0, 0, cb, arg);
}

int etcd_txn(struct etcd_client *c, const struct etcd_cmp *cmp, size_t ncmp,
	     const struct etcd_op *succ, size_t nsucc,
	     const struct etcd_op *fail, size_t nfail, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_txn(cmp, ncmp, succ, nsucc, fail, nfail, &body);

	return submit(c, "/v3/kv/txn", body, rc, 0, 0, cb, arg);
}

int etcd_lease_grant(struct etcd_client *c, int64_t ttl, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_lease_grant(ttl, &body);

	return submit(c, "/v3/lease/grant", body, rc, 0, 0, cb, arg);
}

int etcd_lease_keepalive(struct etcd_client *c, int64_t id, etcd_cb cb,
			 void *arg)
{
	char *body;
	int rc = etcd_req_lease_id(id, &body);

	return submit(c, "/v3/lease/keepalive", body, rc, 0, 1, cb, arg);
}

int etcd_lease_revoke(struct etcd_client *c, int64_t id, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_lease_id(id, &body);

	return submit(c, "/v3/lease/revoke", body, rc, 0, 0, cb, arg);
}

int etcd_campaign(struct etcd_client *c, const char *name, int64_t lease,
		  const char *value, size_t n, int timeout_ms, etcd_cb cb,
		  void *arg)
{
	char *body;
	int rc = etcd_req_campaign(name, lease, value, n, &body);

	return submit(c, "/v3/election/campaign", body, rc, timeout_ms, 0, cb,
		      arg);
}

int etcd_leader(struct etcd_client *c, const char *name, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_leader(name, &body);

	return submit(c, "/v3/election/leader", body, rc, 0, 0, cb, arg);
}

int etcd_resign(struct etcd_client *c, const char *name,
		const struct etcd_kv *leader, etcd_cb cb, void *arg)
{
	char *body;
	int rc = etcd_req_resign(name, leader->key, leader->key_len,
				 leader->mod_revision, leader->lease, &body);

	return submit(c, "/v3/election/resign", body, rc, 0, 0, cb, arg);
}

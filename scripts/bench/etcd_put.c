/*
 * etcd_put.c - sequential puts of SIZE-byte values to etcd's v3 JSON
 * gateway, one line per timed put (µs), two ways:
 *
 *   raw    a blocking libcurl easy handle, one kept-alive connection:
 *          the least a client of the gateway does (the floor of issue
 *          14's "write on etcd vs raw put")
 *   client fnfs's own client (sched/store/etcd/etcd.c) on a libuv loop, each
 * put waited for before the next: what the controller will pay
 *
 *   etcd_put raw|client|txn|watch URL WARM N SIZE
 *
 * and two more for scripts/bench/etcd-write, which break down what a
 * write through fnfs on etcd waits for (sched/store/etcd/store_etcd.c): each
 * iteration changes one key with a compare-and-set txn (compare its
 * mod_revision with the one the previous txn made, then put it), as fnfs
 * does for a function's key:
 *
 *   txn    the txn through the blocking easy handle, as raw
 *   watch  the txn through fnfs's client, with a watch of the key open on
 *          the same client; an iteration ends once the txn is answered
 *          and the watch has brought back the revision it made, as a
 *          write through a mount does. Prints three columns: the whole
 *          iteration, until the txn's answer, and from that answer to the
 *          watch's event (negative when the event came first)
 *
 * Every put is checked (an answer with a revision, none with an error;
 * a txn that succeeded); any failure ends the program with status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "../../sched/store/etcd/etcd.h"

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct rt_buf *b = arg;

	(void)size;
	return rt_buf_append(b, p, n) == 0 ? n : 0;
}

/* Puts through a blocking easy handle. */
static int run_raw(const char *url, int warm, int n, const char *value,
		   size_t size)
{
	struct rt_buf resp = { 0 };
	struct curl_slist *hdrs = NULL;
	char target[512], key[64];
	CURL *e = curl_easy_init();
	int i, rc = 0;

	snprintf(target, sizeof(target), "%s/v3/kv/put", url);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, target);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	for (i = 0; i < warm + n && rc == 0; i++) {
		char *body = NULL;
		double t0;

		snprintf(key, sizeof(key), "/bench/raw/%d", i % 100);
		if (etcd_req_put(key, value, size, 0, &body) < 0)
			return 1;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		rt_buf_reset(&resp);
		t0 = now_us();
		if (curl_easy_perform(e) != CURLE_OK || resp.data == NULL ||
		    strstr(resp.data, "\"revision\"") == NULL ||
		    strstr(resp.data, "\"error\"") != NULL) {
			fprintf(stderr, "etcd_put: raw put %d failed: %s\n", i,
				resp.data ? resp.data : "(no answer)");
			rc = 1;
		} else if (i >= warm) {
			printf("%.1f\n", now_us() - t0);
		}
		free(body);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	rt_buf_free(&resp);
	return rc;
}

/* The key's first revision, through a put on easy handle `e`. */
static int64_t first_put(CURL *e, const char *url, const char *key,
			 const char *value, size_t size, struct rt_buf *resp)
{
	struct etcd_answer a = { 0 };
	char target[512], *body = NULL;
	int64_t rev = -1;

	snprintf(target, sizeof(target), "%s/v3/kv/put", url);
	if (etcd_req_put(key, value, size, 0, &body) < 0)
		return -1;
	curl_easy_setopt(e, CURLOPT_URL, target);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	rt_buf_reset(resp);
	if (curl_easy_perform(e) == CURLE_OK && resp->data != NULL &&
	    etcd_parse_answer(resp->data, resp->len, &a) == 0 && a.rc == 0)
		rev = a.header.revision;
	etcd_answer_clear(&a);
	free(body);
	return rev;
}

/* Compare-and-set txns through a blocking easy handle. */
static int run_txn(const char *url, int warm, int n, const char *value,
		   size_t size)
{
	struct rt_buf resp = { 0 };
	struct curl_slist *hdrs = NULL;
	const char *key = "/bench/txn/k";
	char target[512];
	CURL *e = curl_easy_init();
	int64_t rev;
	int i, rc = 0;

	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	rev = first_put(e, url, key, value, size, &resp);
	if (rev <= 0) {
		fprintf(stderr, "etcd_put: the first put failed\n");
		rc = 1;
	}
	snprintf(target, sizeof(target), "%s/v3/kv/txn", url);
	curl_easy_setopt(e, CURLOPT_URL, target);
	for (i = 0; i < warm + n && rc == 0; i++) {
		struct etcd_cmp cmp = { .key = key,
					.target = ETCD_MOD,
					.result = ETCD_EQUAL,
					.number = rev };
		struct etcd_op op = { .kind = ETCD_OP_PUT,
				      .key = key,
				      .value = value,
				      .value_len = size };
		struct etcd_answer a = { 0 };
		char *body = NULL;
		double t0;

		if (etcd_req_txn(&cmp, 1, &op, 1, NULL, 0, &body) < 0)
			return 1;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		rt_buf_reset(&resp);
		t0 = now_us();
		if (curl_easy_perform(e) != CURLE_OK || resp.data == NULL ||
		    etcd_parse_answer(resp.data, resp.len, &a) < 0 ||
		    a.rc < 0 || !a.succeeded) {
			fprintf(stderr, "etcd_put: txn %d failed: %s\n", i,
				resp.data ? resp.data : "(no answer)");
			rc = 1;
		} else {
			if (i >= warm)
				printf("%.1f\n", now_us() - t0);
			rev = a.header.revision;
		}
		etcd_answer_clear(&a);
		free(body);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);
	rt_buf_free(&resp);
	return rc;
}

struct one {
	uv_loop_t *loop;
	int done, rc;
	int64_t revision;
	int succeeded;
	double t_done;	  /* when the answer came */
	int64_t seen;	  /* watch: the newest revision it brought */
	double t_seen;	  /* when it brought it */
	int created;	  /* watch: set up */
	int watch_failed; /* watch: ended */
};

static void on_put(void *arg, const struct etcd_answer *a)
{
	struct one *o = arg;

	o->done = 1;
	o->rc = a->rc;
	/* Curl may answer inside the timers phase of a UV_RUN_ONCE turn:
	 * without this, that turn would poll on for another event. */
	uv_stop(o->loop);
	o->t_done = now_us();
	o->revision = a->header.revision;
	o->succeeded = a->succeeded;
	if (a->rc < 0)
		fprintf(stderr, "etcd_put: %s\n", a->error ? a->error : "?");
}

/* Puts through sched/store/etcd/etcd.c, one at a time. */
static int run_client(const char *url, int warm, int n, const char *value,
		      size_t size)
{
	struct etcd_config cfg = { .endpoints = url, .timeout_ms = 5000 };
	struct etcd_client *c = NULL;
	uv_loop_t loop;
	char key[64];
	int i, rc = 0;

	uv_loop_init(&loop);
	if (etcd_client_new(&loop, &cfg, &c) < 0)
		return 1;
	for (i = 0; i < warm + n && rc == 0; i++) {
		struct one o = { .loop = &loop };
		double t0;

		snprintf(key, sizeof(key), "/bench/client/%d", i % 100);
		t0 = now_us();
		if (etcd_put(c, key, value, size, 0, on_put, &o) < 0)
			return 1;
		while (!o.done)
			uv_run(&loop, UV_RUN_ONCE); /* bounded: 5 s timeout */
		if (o.rc < 0 || o.revision <= 0)
			rc = 1;
		else if (i >= warm)
			printf("%.1f\n", now_us() - t0);
	}
	etcd_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return rc;
}

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct one *o = arg;
	size_t i;

	uv_stop(o->loop);
	if (a->rc < 0) {
		o->watch_failed = 1;
		fprintf(stderr, "etcd_put: the watch ended: %s\n",
			a->error ? a->error : "?");
		return;
	}
	if (a->created)
		o->created = 1;
	for (i = 0; i < a->nevents; i++)
		if (a->events[i].mod_revision > o->seen) {
			o->seen = a->events[i].mod_revision;
			o->t_seen = now_us();
		}
}

/* Compare-and-set txns through sched/store/etcd/etcd.c, each waited for until
 * the txn is answered and the client's own watch has brought it back. */
static int run_watch(const char *url, int warm, int n, const char *value,
		     size_t size)
{
	struct etcd_config cfg = { .endpoints = url, .timeout_ms = 5000 };
	struct etcd_client *c = NULL;
	struct etcd_watch *w = NULL;
	struct one seen = { 0 };
	const char *key = "/bench/watch/k";
	int64_t rev = 0;
	uv_loop_t loop;
	int i, rc = 0;

	uv_loop_init(&loop);
	seen.loop = &loop;
	if (etcd_client_new(&loop, &cfg, &c) < 0)
		return 1;
	{ /* the key's first revision */
		struct one o = { .loop = &loop };

		if (etcd_put(c, key, value, size, 0, on_put, &o) < 0)
			return 1;
		while (!o.done)
			uv_run(&loop, UV_RUN_ONCE);
		rev = o.revision;
		if (o.rc < 0 || rev <= 0)
			return 1;
	}
	if (etcd_watch(c, key, NULL, rev + 1, 0, on_watch, &seen, &w) < 0)
		return 1;
	while (!seen.created && !seen.watch_failed)
		uv_run(&loop, UV_RUN_ONCE); /* bounded: 5 s timeout */
	for (i = 0; i < warm + n && rc == 0 && !seen.watch_failed; i++) {
		struct one o = { .loop = &loop };
		struct etcd_cmp cmp = { .key = key,
					.target = ETCD_MOD,
					.result = ETCD_EQUAL,
					.number = rev };
		struct etcd_op op = { .kind = ETCD_OP_PUT,
				      .key = key,
				      .value = value,
				      .value_len = size };
		double t0 = now_us();

		if (etcd_txn(c, &cmp, 1, &op, 1, NULL, 0, on_put, &o) < 0)
			return 1;
		while (!o.done)
			uv_run(&loop, UV_RUN_ONCE); /* bounded: 5 s timeout */
		if (o.rc < 0 || !o.succeeded || o.revision <= rev) {
			fprintf(stderr, "etcd_put: txn %d failed\n", i);
			rc = 1;
			break;
		}
		rev = o.revision;
		/* bounded by the watch's dead connection detection */
		while (seen.seen < rev && !seen.watch_failed)
			uv_run(&loop, UV_RUN_ONCE);
		if (seen.watch_failed)
			rc = 1;
		else if (i >= warm) {
			double end = o.t_done > seen.t_seen ? o.t_done
							    : seen.t_seen;

			printf("%.1f %.1f %.1f\n", end - t0, o.t_done - t0,
			       seen.t_seen - o.t_done);
		}
	}
	etcd_watch_free(w);
	etcd_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return rc;
}

int main(int argc, char **argv)
{
	char *value;
	size_t size;
	int warm, n, rc;

	if (argc != 6) {
		fprintf(stderr, "usage: etcd_put raw|client|txn|watch URL WARM "
				"N SIZE\n");
		return 2;
	}
	warm = atoi(argv[3]);
	n = atoi(argv[4]);
	size = (size_t)atol(argv[5]);
	value = malloc(size + 1);
	if (value == NULL)
		return 1;
	memset(value, 'v', size);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(argv[1], "raw") == 0)
		rc = run_raw(argv[2], warm, n, value, size);
	else if (strcmp(argv[1], "txn") == 0)
		rc = run_txn(argv[2], warm, n, value, size);
	else if (strcmp(argv[1], "watch") == 0)
		rc = run_watch(argv[2], warm, n, value, size);
	else
		rc = run_client(argv[2], warm, n, value, size);
	free(value);
	return rc;
}

/*
 * curluv_loop.c - the HTTP client of the worker alone: sequential POSTs
 * of "hello world\n" to a server, each an easy handle of fnfs's libcurl
 * multi on a libuv loop (runtime/base/curluv.c), set up as
 * runtime/worker/http.c sets up a call, over one kept-alive connection.
 * Compared with http_direct (a blocking write and read on a socket, the least
 * any client does), it gives what libcurl and the loop cost per request
 * (docs/decisions.md).
 *
 *   curluv_loop PORT WARM N      one line per timed request, in µs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/base/curluv.h"

struct req {
	struct rt_curl_xfer x;
	char body[256];
	size_t len;
	int done;
	CURLcode rc;
};

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;

	n *= size;
	if (r->len + n < sizeof(r->body)) {
		memcpy(r->body + r->len, p, n);
		r->len += n;
	}
	return n;
}

static void on_done(struct rt_curl_xfer *x, CURLcode rc)
{
	struct req *r = x->arg;

	r->rc = rc;
	r->done = 1;
}

int main(int argc, char **argv)
{
	struct curl_slist *h = NULL;
	struct rt_curluv *m;
	uv_loop_t loop;
	char url[64];
	long warm, n, i;
	double t0;

	if (argc != 4) {
		fprintf(stderr, "usage: curluv_loop PORT WARM N\n");
		return 2;
	}
	warm = atol(argv[2]);
	n = atol(argv[3]);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s/", argv[1]);
	uv_loop_init(&loop);
	if (rt_curluv_new(&loop, 1024, &m) < 0)
		return 1;
	h = curl_slist_append(h, "Accept:");
	h = curl_slist_append(h, "Content-Type:");
	h = curl_slist_append(h, "Expect:");
	h = curl_slist_append(h, "Fn-Call-Id: 1");
	h = curl_slist_append(h, "Fn-Deadline: 2026-01-01T00:00:00.000Z");
	for (i = 0; i < warm + n; i++) {
		struct req r = { 0 };
		CURL *e = rt_curluv_easy(m);

		t0 = now_us();
		r.x.easy = e;
		r.x.arg = &r;
		r.x.done = on_done;
		curl_easy_setopt(e, CURLOPT_URL, url);
		curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
		curl_easy_setopt(e, CURLOPT_PROXY, "");
		curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
				 CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(e, CURLOPT_WRITEDATA, &r);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "hello world\n");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)12);
		if (rt_curluv_add(m, &r.x) < 0)
			return 1;
		while (!r.done)
			uv_run(&loop, UV_RUN_ONCE);
		if (r.rc != CURLE_OK || r.len != 12 ||
		    memcmp(r.body, "HELLO WORLD\n", 12) != 0) {
			fprintf(stderr, "curluv_loop: a wrong answer\n");
			return 1;
		}
		rt_curluv_release(m, e);
		if (i >= warm)
			printf("%.1f\n", now_us() - t0);
	}
	curl_slist_free_all(h);
	rt_curluv_close(m);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return 0;
}

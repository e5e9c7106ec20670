/*
 * etcd_watch.c - watches (etcd.h): one streaming POST to /v3/watch per
 * watch, whose answer is a line of JSON per message; the lines are cut
 * from curl's chunks as they come (etcd_lines_feed) and each is handed to
 * the owner at once. Only the first connection falls over to the next
 * endpoint; once the stream has started, its end is the owner's to
 * handle (watch again from the revision after the last seen).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

struct etcd_watch {
	struct rt_curl_xfer x;	 /* x.easy owned while the stream runs */
	struct etcd_client *c;	 /* NULL once the stream ended */
	char *body;		 /* the create request, owned */
	size_t endpoint;	 /* the endpoint tried */
	int tries;		 /* endpoints tried */
	int got;		 /* bytes came: no other endpoint is tried */
	int in_fn;		 /* inside the owner's callback */
	int freed;		 /* etcd_watch_free was called inside it */
	int ended;		 /* the last message was given */
	struct etcd_lines lines; /* the stream, cut into messages */
	char err[CURL_ERROR_SIZE];
	etcd_watch_fn fn;
	void *arg;
	struct etcd_watch *next, *prev; /* c->watches, while c is set */
};

/* Gives `a` to the owner unless the watch ended or was freed; the last
 * message (a->rc < 0) ends it. */
static void deliver(struct etcd_watch *w, const struct etcd_answer *a)
{
	if (w->ended || w->freed)
		return;
	if (a->rc < 0)
		w->ended = 1;
	w->in_fn = 1;
	w->fn(w->arg, a);
	w->in_fn = 0;
}

/* The last message: error `rc` with text `why`. */
static void final(struct etcd_watch *w, int rc, const char *why)
{
	struct etcd_answer a = { 0 };

	a.rc = rc;
	a.error = (char *)why;
	deliver(w, &a);
}

/* Ends the stream's side of `w`: its easy handle back, out of the
 * client's list. Frees `w` if its owner has let it go. */
static void detach(struct etcd_watch *w)
{
	struct etcd_client *c = w->c;

	if (c != NULL) {
		rt_curluv_cancel(c->curl, &w->x);
		rt_curluv_release(c->curl, w->x.easy);
		w->x.easy = NULL;
		if (w->prev != NULL)
			w->prev->next = w->next;
		else if (c->watches == w)
			c->watches = w->next;
		if (w->next != NULL)
			w->next->prev = w->prev;
		w->next = w->prev = NULL;
		w->c = NULL;
	}
	if (w->freed) {
		etcd_lines_free(&w->lines);
		free(w->body);
		free(w);
	}
}

/* One message of the stream. Returns nonzero to end the stream. */
static int on_line(void *arg, const char *line, size_t len)
{
	struct etcd_watch *w = arg;
	struct etcd_answer a;
	char why[200];
	int rc;

	rc = etcd_parse_answer(line, len, &a);
	if (rc < 0) {
		snprintf(why, sizeof(why),
			 "etcd watch: a message that is not "
			 "etcd's: %s",
			 a.error ? a.error : strerror(-rc));
		etcd_answer_clear(&a);
		final(w, -EPROTO, why);
		return 1;
	}
	if (a.rc == 0 && a.canceled) {
		a.rc = a.compact_revision > 0 ? -ERANGE : -ECANCELED;
		snprintf(why, sizeof(why),
			 a.compact_revision > 0
				 ? "etcd watch: revisions before %lld were "
				   "compacted"
				 : "etcd canceled the watch",
			 (long long)a.compact_revision);
		a.error = strdup(why);
	}
	deliver(w, &a);
	etcd_answer_clear(&a);
	return w->ended || w->freed;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_watch *w = arg;
	int rc;

	(void)size;
	w->got = 1;
	rc = etcd_lines_feed(&w->lines, p, n, on_line, w);
	if (rc < 0)
		final(w, -EPROTO, "etcd watch: a message past the bound");
	return rc != 0 ? 0 : n; /* 0 ends the transfer */
}

static void on_done(struct rt_curl_xfer *x, CURLcode crc);

/* Starts the stream of `w` on w->endpoint. */
static int start(struct etcd_watch *w)
{
	struct etcd_client *c = w->c;
	int rc;

	w->err[0] = '\0';
	if (w->x.easy == NULL) {
		w->x.easy = rt_curluv_easy(c->curl);
		if (w->x.easy == NULL)
			return -ENOMEM;
	} else {
		curl_easy_reset(w->x.easy);
	}
	rc = etcd__easy_setup(c, w->x.easy, w->endpoint, "/v3/watch", w->body,
			      0, w->err);
	if (rc < 0)
		return rc;
	curl_easy_setopt(w->x.easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(w->x.easy, CURLOPT_WRITEDATA, w);
	w->x.done = on_done;
	w->x.arg = w;
	w->tries++;
	return rt_curluv_add(c->curl, &w->x);
}

static void on_done(struct rt_curl_xfer *x, CURLcode crc)
{
	struct etcd_watch *w = x->arg;
	struct etcd_client *c = w->c;
	char why[CURL_ERROR_SIZE + 160];

	if (!w->ended && !w->freed && !w->got && etcd__unreachable(crc) &&
	    w->tries < (int)c->nendpoints) {
		w->endpoint = (w->endpoint + 1) % c->nendpoints;
		c->current = w->endpoint;
		if (start(w) == 0)
			return;
	}
	/* An error answer may end without a newline. */
	if (!w->ended && !w->freed && w->lines.partial.len > 0)
		on_line(w, w->lines.partial.data, w->lines.partial.len);
	if (!w->ended && !w->freed) {
		snprintf(why, sizeof(why), "etcd watch on %s ended: %s",
			 c->endpoints[w->endpoint],
			 crc == CURLE_OK ? "the stream closed"
			 : w->err[0]	 ? w->err
					 : curl_easy_strerror(crc));
		final(w, crc == CURLE_OK ? -EIO : etcd__curl_errno(crc), why);
	}
	detach(w);
}

int etcd_watch(struct etcd_client *c, const char *key, const char *range_end,
	       int64_t start_revision, int prev_kv, etcd_watch_fn fn, void *arg,
	       struct etcd_watch **out)
{
	struct etcd_watch *w = NULL;
	int rc;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = etcd_req_watch(key, range_end, start_revision, prev_kv, &w->body);
	if (rc < 0)
		goto out;
	w->c = c;
	w->fn = fn;
	w->arg = arg;
	w->endpoint = c->current;
	w->lines.max = ETCD_MAX_ANSWER;
	w->next = c->watches;
	if (c->watches != NULL)
		c->watches->prev = w;
	c->watches = w;
	rc = start(w);
out:
	if (rc < 0 && w != NULL) {
		w->freed = 1;
		detach(w);
		w = NULL;
	}
	*out = w;
	return rc;
}

void etcd__watch_detach(struct etcd_watch *w, int rc, const char *why)
{
	rt_curluv_cancel(w->c->curl, &w->x);
	final(w, rc, why);
	detach(w);
}

void etcd_watch_free(struct etcd_watch *w)
{
	if (w == NULL)
		return;
	w->freed = 1;
	if (w->in_fn)
		return; /* the stream's callback frees it after `fn` */
	detach(w);
}

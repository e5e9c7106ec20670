/*
 * requests.c - messages to workers, requests that writes and reads wait
 * for (answered by `reply`, failed when a worker goes), and the bounded
 * waits that collect their answers.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "conn.h"
#include "requests.h"

static void wait_closed(uv_handle_t *h)
{
	struct sched_wait *w = h->data;
	int i;

	for (i = 0; w->parts && i < w->nparts; i++)
		rt_buf_free(&w->parts[i]);
	for (i = 0; w->prefixes && i < w->nparts; i++)
		free(w->prefixes[i]);
	free(w->parts);
	free(w->prefixes);
	free(w);
}

static int unlink_cb(struct sched *s, struct sched_wait *w)
{
	size_t i;

	/* Outstanding requests of this wait will find it gone. */
	for (i = 0; i < s->links.requests.nslots; i++) {
		struct sched_request *r = s->links.requests.values[i];

		if (r != NULL && s->links.requests.keys[i] != 0 &&
		    s->links.requests.keys[i] != UINT64_MAX && r->wait == w)
			r->wait = NULL;
	}
	return 0;
}

/* Appends `part` to `out`, with `prefix` at the start of every line. */
static void add_prefixed(struct rt_buf *out, const struct rt_buf *part,
			 const char *prefix)
{
	size_t i = 0;

	if (prefix == NULL) {
		rt_buf_append(out, part->data, part->len);
		return;
	}
	while (i < part->len) {
		const char *nl = memchr(part->data + i, '\n', part->len - i);
		size_t n = nl ? (size_t)(nl - (part->data + i)) + 1
			      : part->len - i;

		rt_buf_puts(out, prefix);
		rt_buf_append(out, part->data + i, n);
		if (nl == NULL)
			rt_buf_puts(out, "\n");
		i += n;
	}
}

static void wait_finish(struct sched *s, struct sched_wait *w)
{
	int i;

	if (w->finished)
		return;
	w->finished = 1;
	uv_timer_stop(&w->timer);
	unlink_cb(s, w);
	if (w->out != NULL && w->done != NULL)
		for (i = 0; w->parts && i < w->nparts; i++)
			add_prefixed(w->out, &w->parts[i],
				     w->prefixes ? w->prefixes[i] : NULL);
	if (w->done != NULL)
		w->done(w->arg, w->err);
	uv_close((uv_handle_t *)&w->timer, wait_closed);
}

static void on_wait_timeout(uv_timer_t *t)
{
	struct sched_wait *w = t->data;

	/* Past the bound the write returns; the work goes on. */
	wait_finish(w->s, w);
}

struct sched_wait *sched__wait_new(struct sched *s, sched_done_fn done,
				   void *arg, int ms)
{
	struct sched_wait *w = calloc(1, sizeof(*w));

	if (w == NULL || s->loop == NULL) {
		free(w);
		return NULL;
	}
	w->s = s;
	w->done = done;
	w->arg = arg;
	uv_timer_init(s->loop, &w->timer);
	w->timer.data = w;
	uv_timer_start(&w->timer, on_wait_timeout, (uint64_t)ms, 0);
	return w;
}

void sched__wait_arm(struct sched *s, struct sched_wait *w)
{
	if (w->remaining == 0)
		wait_finish(s, w);
}

void sched_wait_cancel(struct sched *s, struct sched_wait *w)
{
	if (w == NULL || w->finished)
		return;
	w->done = NULL;
	w->out = NULL;
	wait_finish(s, w);
}

/* A start or restart that failed says why (a process not ready within
 * its ready_timeout): the function's `error` tells. */
static void reply_reason(struct sched *s, const struct sched_request *r,
			 const struct rt_msg *m, long long err)
{
	const char *why = rt_msg_str(m, "reason");
	struct sched_obj *o = r->instance_id ? sched_find(s, r->instance_id)
					     : NULL;
	struct rt_buf line = { 0 };

	if (why == NULL || err <= 0 || err == ECANCELED || o == NULL ||
	    o->type != SCHED_INSTANCE)
		return;
	if (rt_buf_printf(&line, "instance %d: %s",
			  ((struct sched_instance *)o)->n, why) == 0)
		sched__set_error(sched__fn_of((struct sched_instance *)o),
				 line.data);
	rt_buf_free(&line);
}

/* A request got its answer (or never will: `m` NULL). */
void sched__request_done(struct sched *s, struct sched_request *r,
			 const struct rt_msg *m)
{
	struct sched_wait *w = r->wait;

	rt_idmap_del(&s->links.requests, r->seq);
	if (m != NULL)
		reply_reason(s, r, m, rt_msg_int(m, "err", 0));
	if (w != NULL) {
		long long err = m ? rt_msg_int(m, "err", 0) : 0;

		if (err > 0 && err != ECANCELED && w->err == 0)
			w->err = (int)err;
		if (m != NULL && m->body != NULL && w->parts != NULL &&
		    r->slot < w->nparts)
			rt_buf_append(&w->parts[r->slot], m->body, m->body_len);
		if (--w->remaining == 0)
			wait_finish(s, w);
	}
	free(r);
}

void sched__send_body(struct sched *s, struct sched_worker *w, json_t *header,
		      const void *body, size_t len)
{
	(void)s;
	sched__conn_send_body(w != NULL ? w->conn : NULL, header, body, len);
}

void sched__send(struct sched *s, struct sched_worker *w, json_t *header)
{
	(void)s;
	sched__conn_send(w != NULL ? w->conn : NULL, header);
}

int sched__request(struct sched *s, struct sched_worker *w, json_t *header,
		   struct sched_wait *wait, int slot, uint64_t instance_id)
{
	struct sched_request *r;

	if (header == NULL) {
		/* jansson refused a value (validation keeps text UTF-8, so
		 * this is memory): say so rather than send half a message. */
		rt_log(RT_LOG_ERROR,
		       "a message to worker %s could not be built",
		       w != NULL ? w->obj.name : "?");
		return -ENOMEM;
	}
	if (w == NULL || w->conn == NULL || !w->online) {
		json_decref(header);
		return -ENOTCONN;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		json_decref(header);
		return -ENOMEM;
	}
	r->seq = s->links.next_seq++;
	r->wait = wait;
	r->worker = w;
	r->slot = slot;
	r->instance_id = instance_id;
	/* A seq is never reused: an answer finds its own request. */
	assert(r->seq > 0 && rt_idmap_get(&s->links.requests, r->seq) == NULL);
	if (rt_idmap_put(&s->links.requests, r->seq, r) < 0) {
		free(r);
		json_decref(header);
		return -ENOMEM;
	}
	if (wait != NULL)
		wait->remaining++;
	json_object_set_new(header, "seq", json_integer((json_int_t)r->seq));
	sched__conn_send(w->conn, header);
	return 0;
}

/* Ends every request sent to `w`: it will not answer. */
void sched__requests_fail(struct sched *s, struct sched_worker *w)
{
	size_t i;

	for (i = 0; i < s->links.requests.nslots; i++) {
		struct sched_request *r;

		if (s->links.requests.keys[i] == 0 ||
		    s->links.requests.keys[i] == UINT64_MAX)
			continue;
		r = s->links.requests.values[i];
		if (r->worker == w)
			sched__request_done(s, r, NULL);
	}
}

void sched__requests_end_all(struct sched *s)
{
	size_t i;

	for (i = 0; i < s->links.requests.nslots; i++)
		if (s->links.requests.keys[i] != 0 &&
		    s->links.requests.keys[i] != UINT64_MAX)
			sched__request_done(s, s->links.requests.values[i],
					    NULL);
}

/*
 * code_send.c - sending a revision of code to workers (code.get,
 * code.chunk, code.error): what a worker may ask for, and a pump that
 * sends chunks while the connection's backlog allows. Part of the code
 * module (code.c says how it is cut).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"
#include "../workers/conn.h"
#include "../workers/requests.h"

#define CODE_GET_MAX  1024 /* objects one code.get may ask for */
#define PUMP_RETRY_MS 1	   /* a full backlog is looked at again */
#define PUMP_SLICE_MS 5	   /* chunks sent in one go at most this long */

/* ============================================================= sending */

static void pump(struct sched *s);

static void on_pump(uv_timer_t *t)
{
	pump(t->data);
}

static void send_error(struct sched *s, struct sched_worker *w,
		       const char *hash, const char *object, int err,
		       const char *why)
{
	sched__send(s, w,
		    json_pack("{s:s, s:s, s:s, s:i, s:s}", "type", "code.error",
			      "hash", hash, "object", object ? object : "",
			      "err", err, "reason", why));
}

/* What pump_one did. */
enum { PUMP_DONE, PUMP_FULL, PUMP_SENT, PUMP_WAIT };

/* An object the pump waited for (the backend's obj_ready: a cluster's
 * fetch) is here, or not. */
static void on_pump_fetched(void *arg, int err, const char *hash)
{
	struct sched *s = arg;
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, n;

	v = err < 0 ? rt_idmap_values(&c->outs, &n) : NULL;
	for (i = 0; v != NULL && i < n; i++) {
		struct code_out *o = v[i];
		struct sched_obj *wo = sched_find(s, o->worker_id);
		struct code_item *it = o->head < o->n ? &o->items[o->head]
						      : NULL;

		if (o->fd >= 0 || it == NULL || strcmp(it->object, hash) != 0)
			continue;
		if (wo != NULL && wo->type == SCHED_WORKER &&
		    ((struct sched_worker *)wo)->online &&
		    ((struct sched_worker *)wo)->conn == o->conn)
			send_error(s, (struct sched_worker *)wo, it->hash,
				   it->object, EIO,
				   "the object cannot be read from etcd");
		o->head++;
	}
	free(v);
	pump(s);
}

/* Sends the next chunk of what `o` holds, unless the connection's
 * backlog is full. Returns PUMP_DONE when everything is sent, PUMP_FULL
 * when it stopped for the backlog, PUMP_SENT after a chunk. */
static int pump_one(struct sched *s, struct sched_worker *w, struct code_out *o)
{
	struct sched_code_state *c = st_of(s);
	static char buf[RT_CODE_CHUNK_MAX];

	while (o->head < o->n) {
		struct code_item *it = &o->items[o->head];
		struct stat sb;
		size_t len;
		ssize_t r;

		if (sched__conn_backlog(w->conn) >= SCHED_CODE_BACKLOG)
			return PUMP_FULL;
		if (o->fd < 0) {
			/* What this controller may not send yet (a cluster:
			 * what it lacks is fetched first). */
			const char *why = NULL;
			int rc = be_of(s)->obj_ready(s, it->object,
						     on_pump_fetched, s, &why);

			if (rc == SCHED_CODE_LATER)
				return PUMP_WAIT;
			if (rc < 0) {
				send_error(s, w, it->hash, it->object, -rc,
					   why ? why
					       : "the object cannot be sent");
				o->head++;
				continue;
			}
			o->fd = sched__code_object_open(c, it->object);
			if (o->fd >= 0 && fstat(o->fd, &sb) < 0) {
				close(o->fd);
				o->fd = -EIO;
			}
			if (o->fd < 0) {
				send_error(s, w, it->hash, it->object, -o->fd,
					   "the object is gone (the code "
					   "changed since)");
				o->fd = -1;
				o->head++;
				continue;
			}
			o->off = 0;
			o->size = (uint64_t)sb.st_size;
		}
		len = o->size - o->off < RT_CODE_CHUNK_MAX
			      ? (size_t)(o->size - o->off)
			      : RT_CODE_CHUNK_MAX;
		do
			r = pread(o->fd, buf, len, (off_t)o->off);
		while (r < 0 && errno == EINTR);
		if (r != (ssize_t)len) {
			send_error(s, w, it->hash, it->object, EIO,
				   "the object cannot be read");
			close(o->fd);
			o->fd = -1;
			o->head++;
			continue;
		}
		sched__send_body(s, w,
				 json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}",
					   "type", "code.chunk", "hash",
					   it->hash, "object", it->object,
					   "offset", (json_int_t)o->off, "size",
					   (json_int_t)o->size, "last",
					   o->off + len == o->size),
				 buf, len);
		/* To the kernel at once, not at the end of the loop's turn:
		 * while it takes them, chunks follow one another. */
		sched__conn_flush(w->conn);
		o->off += len;
		if (o->off == o->size) {
			close(o->fd);
			o->fd = -1;
			o->head++;
		}
		return o->head < o->n ? PUMP_SENT : PUMP_DONE;
	}
	return PUMP_DONE;
}

/* Sends chunks to every worker that waits for some, one chunk to each
 * in turn (downloads to several workers go side by side, not one after
 * the other), while their connections take them, for up to
 * PUMP_SLICE_MS; then again at the loop's next turn, or PUMP_RETRY_MS
 * later when every connection with more to send is full. */
static void pump(struct sched *s)
{
	struct sched_code_state *c = st_of(s);
	int64_t t0 = rt_mono_ms();
	void **v;
	size_t i, n;
	int full = 0, sent = 1, rc;

	v = rt_idmap_values(&c->outs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct code_out *o = v[i];
		struct sched_obj *wo = sched_find(s, o->worker_id);
		struct sched_worker *w = wo && wo->type == SCHED_WORKER
						 ? (struct sched_worker *)wo
						 : NULL;

		if (w == NULL || !w->online || w->conn != o->conn ||
		    o->head == o->n) {
			rt_idmap_del(&c->outs, o->worker_id);
			sched__code_out_free(o);
			v[i] = NULL;
		}
	}
	while (v != NULL && sent && rt_mono_ms() - t0 < PUMP_SLICE_MS) {
		sent = 0;
		for (i = 0; i < n; i++) {
			struct code_out *o = v[i];
			struct sched_worker *w;

			if (o == NULL)
				continue;
			w = (struct sched_worker *)sched_find(s, o->worker_id);
			rc = w != NULL && w->online && w->conn == o->conn
				     ? pump_one(s, w, o)
				     : PUMP_DONE;
			if (rc == PUMP_SENT) {
				sent = 1;
				continue;
			}
			if (rc == PUMP_FULL)
				full = 1;
			else if (rc != PUMP_WAIT)   /* WAIT: on_pump_fetched */
				o->head = o->n = 0; /* dropped next time */
			v[i] = NULL;
		}
	}
	free(v);
	if (c->started && (sent || full))
		uv_timer_start(&c->pump, on_pump, sent ? 0 : PUMP_RETRY_MS, 0);
}

/* Queues object `object` of download `hash` for `w`. */
static int enqueue(struct sched *s, struct sched_worker *w, const char *hash,
		   const char *object)
{
	struct sched_code_state *c = st_of(s);
	struct code_out *o = rt_idmap_get(&c->outs, w->obj.id);

	if (o != NULL && o->conn != w->conn) {
		rt_idmap_del(&c->outs, w->obj.id);
		sched__code_out_free(o);
		o = NULL;
	}
	if (o == NULL) {
		o = calloc(1, sizeof(*o));
		if (o == NULL || rt_idmap_put(&c->outs, w->obj.id, o) < 0) {
			free(o);
			return -ENOMEM;
		}
		o->worker_id = w->obj.id;
		o->conn = w->conn;
		o->fd = -1;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct code_item *it = realloc(o->items, cap * sizeof(*it));

		if (it == NULL)
			return -ENOMEM;
		o->items = it;
		o->cap = cap;
	}
	memcpy(o->items[o->n].hash, hash, 65);
	memcpy(o->items[o->n++].object, object, 65);
	return 0;
}

int sched_code_may_serve(const char *pub, const char (*objs)[65], size_t n,
			 const char *hash, const char *object)
{
	size_t i;

	if (pub == NULL || pub[0] == '\0' || strcmp(pub, hash) != 0)
		return 0;
	if (object == NULL || strcmp(object, hash) == 0)
		return 1;
	for (i = 0; i < n; i++)
		if (strcmp(objs[i], object) == 0)
			return 1;
	return 0;
}

struct may_ctx {
	struct sched *s;
	const char *hash;
	const char *object;
};

static int may_cb(const char *key, void *value, void *arg)
{
	struct may_ctx *x = arg;
	struct sched_instance *in = value;
	struct code_fn *f;

	(void)key;
	if (in->obj.parent == NULL || in->obj.parent->type != SCHED_FUNCTION)
		return 0;
	f = cfn_get(x->s, (struct sched_function *)in->obj.parent);
	if (f == NULL || strcmp(f->pub, x->hash) != 0)
		return 0;
	if (x->object != NULL)
		be_of(x->s)->pub_objects(x->s, f);
	return sched_code_may_serve(f->pub, (const char(*)[65])f->pub_objs,
				    f->npub, x->hash, x->object);
}

/* Whether `w` holds an instance of a function whose revision is `hash`
 * (and that references `object`, unless NULL). */
static int may_serve(struct sched *s, struct sched_worker *w, const char *hash,
		     const char *object)
{
	struct may_ctx x = { s, hash, object };

	return rt_map_each(&w->assignments, may_cb, &x) != 0;
}

void sched__code_on_message(struct sched *s, struct sched_worker *w,
			    const struct rt_msg *m)
{
	struct sched_code_state *c = st_of(s);
	const char *hash = rt_msg_str(m, "hash");
	json_t *objs = json_object_get(m->header, "objects"), *o;
	size_t i;

	if (!rt_code_hash_valid(hash)) {
		send_error(s, w, hash ? hash : "", NULL, EINVAL,
			   "not a code hash");
		return;
	}
	if (strcmp(m->type, "code.want") == 0) {
		if (!may_serve(s, w, hash, NULL))
			send_error(s, w, hash, hash, EACCES,
				   "not the code of an instance on this "
				   "worker");
		else if (refs_of(c, hash) == 0 && !be_of(s)->obj_known(s, hash))
			send_error(s, w, hash, hash, ENOENT,
				   "no such revision of code (it changed "
				   "since)");
		else if (enqueue(s, w, hash, hash) < 0)
			send_error(s, w, hash, hash, ENOMEM, "out of memory");
	} else if (!json_is_array(objs) ||
		   json_array_size(objs) > CODE_GET_MAX) {
		send_error(s, w, hash, NULL, EINVAL,
			   "code.get wants an array of at most 1024 objects");
	} else {
		json_array_foreach (objs, i, o) {
			const char *h = json_string_value(o);

			if (!rt_code_hash_valid(h))
				send_error(s, w, hash, NULL, EINVAL,
					   "not an object hash");
			else if (!may_serve(s, w, hash, h))
				send_error(s, w, hash, h, EACCES,
					   "not the code of an instance on "
					   "this worker");
			else if (enqueue(s, w, hash, h) < 0)
				send_error(s, w, hash, h, ENOMEM,
					   "out of memory");
		}
	}
	pump(s);
}

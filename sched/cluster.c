/*
 * cluster.c - the controller's side of its workers: the socket they
 * connect to, registration, heartbeats and health, requests that writes
 * and reads wait for, the pool of local workers (Flink's designated pool:
 * counted, started, replaced), the workers/ files, and shutdown.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* One worker connection. */
struct conn {
	struct sched *s;
	uv_pipe_t pipe;
	struct rt_wire_out out;	     /* frames not yet written */
	struct rt_buf in;	     /* bytes not yet decoded */
	struct sched_worker *worker; /* once registered */
	int closing;
};

static void conn_close(struct conn *c, const char *why);
static void pool_check(struct sched *s);

/* ================================================================ waits */

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
	for (i = 0; i < s->requests.nslots; i++) {
		struct sched_request *r = s->requests.values[i];

		if (r != NULL && s->requests.keys[i] != 0 &&
		    s->requests.keys[i] != UINT64_MAX && r->wait == w)
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

/* A request got its answer (or never will: `m` NULL). */
static void request_done(struct sched *s, struct sched_request *r,
			 const struct rt_msg *m)
{
	struct sched_wait *w = r->wait;

	rt_idmap_del(&s->requests, r->seq);
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

/* =============================================================== sending */

static void conn_send_body(struct conn *c, json_t *header, const void *body,
			   size_t len)
{
	if (c == NULL || c->closing) {
		json_decref(header);
		return;
	}
	rt_wire_out_send(&c->out, header, body, len);
}

static void conn_send(struct conn *c, json_t *header)
{
	conn_send_body(c, header, NULL, 0);
}

void sched__send_body(struct sched *s, struct sched_worker *w, json_t *header,
		      const void *body, size_t len)
{
	(void)s;
	conn_send_body(w != NULL ? w->conn : NULL, header, body, len);
}

void sched__send(struct sched *s, struct sched_worker *w, json_t *header)
{
	(void)s;
	conn_send(w != NULL ? w->conn : NULL, header);
}

int sched__request(struct sched *s, struct sched_worker *w, json_t *header,
		   struct sched_wait *wait, int slot, uint64_t instance_id)
{
	struct sched_request *r;

	if (w == NULL || w->conn == NULL || !w->online) {
		json_decref(header);
		return -ENOTCONN;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		json_decref(header);
		return -ENOMEM;
	}
	r->seq = s->next_seq++;
	r->wait = wait;
	r->worker = w;
	r->slot = slot;
	r->instance_id = instance_id;
	if (rt_idmap_put(&s->requests, r->seq, r) < 0) {
		free(r);
		json_decref(header);
		return -ENOMEM;
	}
	if (wait != NULL)
		wait->remaining++;
	json_object_set_new(header, "seq", json_integer((json_int_t)r->seq));
	conn_send(w->conn, header);
	return 0;
}

/* Ends every request sent to `w`: it will not answer. */
static void requests_fail(struct sched *s, struct sched_worker *w)
{
	size_t i;

	for (i = 0; i < s->requests.nslots; i++) {
		struct sched_request *r;

		if (s->requests.keys[i] == 0 ||
		    s->requests.keys[i] == UINT64_MAX)
			continue;
		r = s->requests.values[i];
		if (r->worker == w)
			request_done(s, r, NULL);
	}
}

/* =============================================================== workers */

void sched__worker_free(struct sched_worker *w)
{
	free(w->tags);
	free(w->namespaces);
	rt_map_free(&w->assignments);
	if (w->conn != NULL)
		((struct conn *)w->conn)->worker = NULL;
}

static char *join(json_t *a)
{
	struct rt_buf b = { 0 };
	json_t *v;
	size_t i;

	rt_buf_puts(&b, "");
	json_array_foreach (a, i, v) {
		if (json_is_string(v))
			rt_buf_printf(&b, "%s%s", i ? " " : "",
				      json_string_value(v));
	}
	return b.data;
}

static struct sched_local *local_of(struct sched *s, const char *id)
{
	int i;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		if (strcmp(s->locals[i].id, id) == 0)
			return &s->locals[i];
	return NULL;
}

void sched__worker_persist(struct sched *s, struct sched_worker *w)
{
	json_t *t = json_array(), *n = json_array();
	char *tj, *nj, *tok, *save = NULL, *copy;
	struct store_worker r;

	copy = strdup(w->tags ? w->tags : "");
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		json_array_append_new(t, json_string(tok));
	free(copy);
	copy = strdup(w->namespaces ? w->namespaces : "");
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		json_array_append_new(n, json_string(tok));
	free(copy);
	tj = json_dumps(t, JSON_COMPACT);
	nj = json_dumps(n, JSON_COMPACT);
	r.id = w->obj.name;
	r.memory_mb = w->memory_mb;
	r.tags = tj;
	r.namespaces = nj;
	r.local = w->local;
	r.drained = w->draining;
	store_worker_put(s->store, &r);
	free(tj);
	free(nj);
	json_decref(t);
	json_decref(n);
}

static int all_known_back(struct sched *s)
{
	size_t i, n;
	void **all = rt_map_values(&s->pool.children, &n);
	int back = 1;

	for (i = 0; all != NULL && i < n && back; i++)
		back = ((struct sched_worker *)all[i])->online;
	free(all);
	return back;
}

static void on_register(struct conn *c, const struct rt_msg *m)
{
	struct sched *s = c->s;
	const char *id = rt_msg_str(m, "id");
	long long mem = rt_msg_int(m, "memory", 0);
	struct sched_obj *o;
	struct sched_worker *w;
	struct rt_buf kvs = { 0 };
	char v[32];
	int64_t now = rt_now_ms();

	if (id == NULL || !rt_name_valid(id) || mem <= 0 || mem > (1LL << 30)) {
		conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
				       "reason", "bad registration"));
		conn_close(c, "bad registration");
		return;
	}
	if (strcmp(id, "pool_size") == 0 || strcmp(id, "strategy") == 0 ||
	    strcmp(id, "rebalance") == 0 || strcmp(id, "status") == 0) {
		conn_send(c,
			  json_pack("{s:s, s:s}", "type", "refused", "reason",
				    "that id is a file of workers/"));
		conn_close(c, "reserved id");
		return;
	}
	o = sched_child(&s->pool, id);
	w = (struct sched_worker *)o;
	if (w != NULL && w->online) {
		char why[160];

		snprintf(why, sizeof(why),
			 "a worker with id %s is already registered", id);
		conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
				       "reason", why));
		sched_event(s, "worker.refused", id, NULL);
		conn_close(c, "duplicate id");
		return;
	}
	if (w == NULL) {
		o = sched__obj_new(s, SCHED_WORKER, &s->pool, id, now, now);
		if (o == NULL) {
			conn_close(c, "out of memory");
			return;
		}
		w = (struct sched_worker *)o;
	}
	free(w->tags);
	free(w->namespaces);
	w->tags = join(json_object_get(m->header, "tags"));
	w->namespaces = join(json_object_get(m->header, "namespaces"));
	w->memory_mb = (int)mem;
	w->pid = (int)rt_msg_int(m, "pid", 0);
	w->cgroups = json_is_true(json_object_get(m->header, "cgroups"));
	w->local = local_of(s, id) != NULL || w->local;
	w->online = 1;
	w->leaving = 0;
	w->since_ms = now;
	w->obj.updated_ms = now;
	w->heartbeat_mono = rt_mono_ms();
	w->conn = c;
	c->worker = w;
	sched__worker_persist(s, w);
	conn_send(c, json_pack("{s:s}", "type", "registered"));
	snprintf(v, sizeof(v), "%d", w->pid);
	rt_buf_kv(&kvs, "pid", v);
	snprintf(v, sizeof(v), "%d", w->memory_mb);
	rt_buf_kv(&kvs, "memory_mb", v);
	if (w->tags[0])
		rt_buf_kv(&kvs, "tags", w->tags);
	if (w->namespaces[0])
		rt_buf_kv(&kvs, "namespaces", w->namespaces);
	sched__event(s, &w->obj, "worker.registered", kvs.data);
	rt_buf_free(&kvs);
	sched__adopt(s, w, json_object_get(m->header, "running"));
	if (s->recovery_until && all_known_back(s)) {
		/* Every known worker is back: no need to wait longer. */
		s->recovery_until = 0;
		sched_event(s, "recovery.done", "workers", NULL);
	}
	sched__reconcile_all(s);
}

/* The worker behind `c` is gone. */
static void worker_gone(struct sched *s, struct sched_worker *w,
			const char *why)
{
	struct sched_local *l = local_of(s, w->obj.name);
	struct rt_buf kvs = { 0 };

	w->online = 0;
	w->conn = NULL;
	w->since_ms = rt_now_ms();
	requests_fail(s, w);
	rt_buf_kv(&kvs, "reason", why);
	if (s->shutting_down) {
		sched__worker_lost(s, w, 1);
		sched__obj_drop(s, &w->obj);
	} else if (w->leaving || (l != NULL && !l->wanted)) {
		sched__worker_lost(s, w, 0);
		sched__event(s, &w->obj, "worker.removed", kvs.data);
		store_worker_delete(s->store, w->obj.name);
		sched__obj_drop(s, &w->obj);
	} else {
		sched__event(s, &w->obj, "worker.offline", kvs.data);
		sched__worker_lost(s, w, 0);
	}
	rt_buf_free(&kvs);
	if (!s->shutting_down)
		sched__reconcile_all(s);
}

/* ============================================================ connections */

static void handle(struct conn *c, const struct rt_msg *m)
{
	struct sched *s = c->s;
	struct sched_worker *w = c->worker;

	if (w == NULL) {
		if (strcmp(m->type, "register") == 0)
			on_register(c, m);
		else
			conn_close(c, "message before registration");
		return;
	}
	w->heartbeat_mono = rt_mono_ms();
	if (strcmp(m->type, "heartbeat") == 0) {
		sched__on_heartbeat(s, w, m);
	} else if (strcmp(m->type, "instance") == 0) {
		sched__on_instance(s, w, m);
	} else if (strcmp(m->type, "exited") == 0) {
		sched__on_exited(s, w, m);
	} else if (strcmp(m->type, "result") == 0) {
		sched__on_result(s, w, m);
	} else if (strcmp(m->type, "leaving") == 0) {
		/* It is shutting down: place nothing more there, and move
		 * what runs there before it goes. */
		if (!w->leaving) {
			w->leaving = 1;
			sched__worker_lost(s, w, 0);
			sched__reconcile_all(s);
		}
	} else if (strcmp(m->type, "reply") == 0) {
		long long seq = rt_msg_int(m, "seq", 0);
		struct sched_request *r = seq > 0 ? rt_idmap_get(&s->requests,
								 (uint64_t)seq)
						  : NULL;

		if (r != NULL && r->worker == w)
			request_done(s, r, m);
	} else {
		rt_log(RT_LOG_WARN, "worker %s: unknown message %s",
		       w->obj.name, m->type);
	}
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	rt_buf_free(&c->in);
	free(c);
}

static void conn_close(struct conn *c, const char *why)
{
	struct sched_worker *w = c->worker;

	if (c->closing)
		return;
	c->closing = 1;
	c->worker = NULL;
	if (w != NULL)
		worker_gone(c->s, w, why);
	rt_wire_out_close(&c->out);
	uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct conn *c = arg;

	handle(c, m);
	return c->closing;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	struct rt_buf why = { 0 };
	int rc;

	if (n < 0) {
		conn_close(c, n == UV_EOF ? "connection closed"
					  : uv_strerror((int)n));
		return;
	}
	rc = rt_wire_feed(&c->in, buf->base, (size_t)n, handle_cb, c, &why);
	if (rc < 0 && !c->closing) {
		rt_log(RT_LOG_WARN, "worker connection: %s; closing it",
		       why.data ? why.data : "bad frame");
		conn_close(c, "protocol error");
	}
	rt_buf_free(&why);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct sched *s = server->data;
	struct conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return;
	c->s = s;
	uv_pipe_init(s->loop, &c->pipe, 0);
	c->pipe.data = c;
	rt_wire_out_init(&c->out, &s->flusher, (uv_stream_t *)&c->pipe);
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		uv_close((uv_handle_t *)&c->pipe, conn_closed);
		return;
	}
	uv_read_start((uv_stream_t *)&c->pipe, rt_read_alloc, on_read);
}

/* ================================================================== pool */

static void local_closed(uv_handle_t *h)
{
	struct sched_local *l = h->data;

	l->closing = 0; /* the handle may be used for the next spawn */
}

static void local_exited(uv_process_t *p, int64_t status, int sig)
{
	struct sched_local *l = p->data;
	struct sched *s = l->s;

	l->live = 0;
	l->closing = 1;
	if (!s->shutting_down && l->wanted)
		rt_log(RT_LOG_WARN,
		       "local worker %s exited (status %lld, "
		       "signal %d); replacing it",
		       l->id, (long long)status, sig);
	l->next_spawn_mono = rt_mono_ms() + SCHED_RESPAWN_MS;
	uv_close((uv_handle_t *)p, local_closed);
}

static void note_start(struct sched *s);

static void local_spawn(struct sched *s, struct sched_local *l)
{
	char mem[32];
	char *argv[] = { s->self, "worker",   "--connect", s->sock_path, "--id",
			 l->id,	  "--memory", mem,	   NULL };
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	int rc, logfd = -1;

	snprintf(mem, sizeof(mem), "%d", s->worker_memory);
	if (s->log_path != NULL)
		logfd = open(s->log_path,
			     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	memset(&opt, 0, sizeof(opt));
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_IGNORE;
	stdio[2].flags = UV_INHERIT_FD; /* its log lines join ours */
	stdio[2].data.fd = logfd >= 0 ? logfd : 2;
	opt.file = s->self;
	opt.args = argv;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = local_exited;
	/* Its own session: a terminal's Ctrl-C, or a crash of the
	 * controller, does not take the instances down with it. */
	opt.flags = UV_PROCESS_DETACHED;
	l->proc.data = l;
	l->s = s;
	rc = uv_spawn(s->loop, &l->proc, &opt);
	if (logfd >= 0)
		close(logfd);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot start local worker %s: %s", l->id,
		       uv_strerror(rc));
		l->closing = 1;
		uv_close((uv_handle_t *)&l->proc, local_closed);
		l->next_spawn_mono = rt_mono_ms() + SCHED_RESPAWN_MS;
		return;
	}
	l->live = 1;
	l->closing = 0;
	note_start(s);
}

/* Starts in the last minute (the ring keeps the latest ones). */
static int starts_last_minute(const struct sched *s)
{
	int i, n = 0;
	int64_t since = rt_mono_ms() - 60000;

	for (i = 0; i < s->nstarts; i++)
		n += s->starts[i] >= since;
	return n;
}

/* Whether the pool may start a worker now: at most starts_per_minute a
 * minute; past that it pauses, and says so once. */
static int start_allowed(struct sched *s)
{
	int n = starts_last_minute(s);
	struct rt_buf kvs = { 0 };
	char v[32];

	if (n < s->starts_per_minute && n < 64) {
		if (s->paused) {
			s->paused = 0;
			sched_event(s, "pool.resumed", "workers", NULL);
		}
		return 1;
	}
	if (!s->paused) {
		s->paused = 1;
		snprintf(v, sizeof(v), "%d", s->starts_per_minute);
		rt_buf_kv(&kvs, "starts_per_minute", v);
		rt_buf_kv(&kvs, "reason", "start limit reached; waiting");
		sched_event(s, "pool.paused", "workers", kvs.data);
		rt_buf_free(&kvs);
	}
	return 0;
}

static void note_start(struct sched *s)
{
	int i, oldest = 0;

	if (s->nstarts < 64) {
		s->starts[s->nstarts++] = rt_mono_ms();
		return;
	}
	for (i = 1; i < 64; i++)
		if (s->starts[i] < s->starts[oldest])
			oldest = i;
	s->starts[oldest] = rt_mono_ms();
}

static int count_wanted(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		n += s->locals[i].wanted;
	return n;
}

static struct sched_worker *local_worker(struct sched *s,
					 const struct sched_local *l)
{
	return (struct sched_worker *)sched_child(&s->pool, l->id);
}

/* Grows or shrinks the wanted set, then starts what is missing and asks
 * the unwanted to leave. */
static void pool_check(struct sched *s)
{
	int i, n = count_wanted(s);

	if (s->loop == NULL || s->shutting_down)
		return;
	while (n < s->pool_size) {
		for (i = 0; i < SCHED_POOL_MAX && s->locals[i].wanted; i++)
			;
		if (i == SCHED_POOL_MAX)
			break;
		s->locals[i].wanted = 1;
		s->locals[i].next_spawn_mono = 0;
		n++;
	}
	while (n > s->pool_size) {
		/* Idle ones first, then the highest-numbered. */
		int pick = -1;
		size_t best = (size_t)-1;

		for (i = SCHED_POOL_MAX - 1; i >= 0; i--) {
			struct sched_worker *w;
			size_t load;

			if (!s->locals[i].wanted)
				continue;
			w = local_worker(s, &s->locals[i]);
			load = w ? w->assignments.count : 0;
			if (load < best) {
				best = load;
				pick = i;
			}
		}
		if (pick < 0)
			break;
		s->locals[pick].wanted = 0;
		n--;
	}
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_local *l = &s->locals[i];
		struct sched_worker *w = local_worker(s, l);

		if (l->wanted && !l->live && (w == NULL || !w->online) &&
		    rt_mono_ms() >= s->recovery_until &&
		    rt_mono_ms() >= l->next_spawn_mono && !l->closing &&
		    start_allowed(s))
			local_spawn(s, l);
		if (l->wanted && l->live && !l->closing && w != NULL &&
		    !w->online && rt_now_ms() - w->since_ms > SCHED_HUNG_MS) {
			/* Alive but silent for long: hung. Replace it. */
			rt_log(RT_LOG_WARN,
			       "local worker %s is hung; killing it", l->id);
			kill(-l->proc.pid, SIGKILL);
			kill(l->proc.pid, SIGKILL);
		}
		if (!l->wanted && w != NULL && w->online && !w->leaving) {
			w->leaving = 1;
			sched__worker_lost(s, w, 0);
			sched__send(s, w,
				    json_pack("{s:s}", "type", "shutdown"));
		}
	}
}

unsigned long sched__random(struct sched *s)
{
	uint64_t x = s->rng;

	if (x == 0)
		x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)rt_now_ms();
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	s->rng = x;
	return (unsigned long)x;
}

int sched__parse_int(const char *buf, size_t len, long lo, long hi, long *out)
{
	long v = 0;
	size_t i;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 0 || len > 9)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -EINVAL;
		v = v * 10 + (buf[i] - '0');
	}
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int sched__cluster_write(struct sched *s, struct sched_obj *o,
			 enum sched_file f, const char *buf, size_t len)
{
	struct rt_buf kvs = { 0 };
	size_t l = len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
	int k, rc = 0;

	switch (f) {
	case SCHED_POOL_SIZE: return sched__pool_write(s, buf, len);
	case SCHED_POOL_STRATEGY:
		k = sched_strategy_parse(buf, l);
		if (k < 0) {
			rt_buf_kv(&kvs, "file", "strategy");
			rt_buf_kv(&kvs, "errno", "EINVAL");
			rt_buf_kv(&kvs, "reason",
				  "strategy must be one of spread | pack | "
				  "random");
			sched_event(s, "pool.rejected", "workers", kvs.data);
			rt_buf_free(&kvs);
			return -EINVAL;
		}
		if (k == s->strategy)
			return 0;
		if (store_setting_put(
			    s->store, "strategy",
			    sched_strategy_name((enum sched_strategy)k)) < 0)
			return -EIO;
		s->strategy = k;
		rt_buf_kv(&kvs, "strategy",
			  sched_strategy_name((enum sched_strategy)k));
		sched_event(s, "pool.strategy", "workers", kvs.data);
		rt_buf_free(&kvs);
		return 0;
	case SCHED_POOL_REBALANCE:
		if (l != 1 || buf[0] != '1')
			return -EINVAL;
		return sched__rebalance(s);
	case SCHED_WORKER_STATE:
		if (l == 5 && memcmp(buf, "drain", 5) == 0)
			rc = sched__drain(s, (struct sched_worker *)o);
		else if (l == 6 && memcmp(buf, "resume", 6) == 0)
			rc = sched__resume(s, (struct sched_worker *)o);
		else
			rc = -EINVAL;
		return rc;
	default: return -EACCES;
	}
}

int sched__pool_write(struct sched *s, const char *buf, size_t len)
{
	struct rt_buf kvs = { 0 };
	char v[32], old[32];
	long n;

	if (sched__parse_int(buf, len, 0, SCHED_POOL_MAX, &n) < 0) {
		snprintf(v, sizeof(v), "%d", SCHED_POOL_MAX);
		rt_buf_kv(&kvs, "file", "pool_size");
		rt_buf_kv(&kvs, "errno", "EINVAL");
		rt_buf_printf(&kvs,
			      " reason=\"pool_size must be an integer "
			      "from 0 to %d\"",
			      SCHED_POOL_MAX);
		sched_event(s, "pool.rejected", "workers", kvs.data);
		rt_buf_free(&kvs);
		return -EINVAL;
	}
	if (n == s->pool_size)
		return 0;
	snprintf(v, sizeof(v), "%ld", n);
	if (store_setting_put(s->store, "pool_size", v) < 0)
		return -EIO;
	snprintf(old, sizeof(old), "%d", s->pool_size);
	s->pool_size = (int)n;
	rt_buf_kv(&kvs, "from", old);
	rt_buf_kv(&kvs, "to", v);
	sched_event(s, "pool.resized", "workers", kvs.data);
	rt_buf_free(&kvs);
	pool_check(s);
	return 0;
}

/* ============================================================ the files */

static const char *worker_state(const struct sched *s,
				const struct sched_worker *w)
{
	if (!w->online)
		return "offline";
	if (w->leaving || w->draining)
		return w->assignments.count > 0 ? "draining" : "drained";
	if (rt_mono_ms() - w->heartbeat_mono > s->heartbeat_timeout / 2)
		return "unhealthy";
	return "healthy";
}

struct sums {
	int running;
	double cpu;
	long long rss;
};

static int sum_cb(const char *key, void *value, void *arg)
{
	struct sched_instance *in = value;
	struct sums *t = arg;

	(void)key;
	if (in->state == SCHED_RUNNING) {
		t->running++;
		t->cpu += in->cpu_seconds;
		t->rss += in->rss_bytes;
	}
	return 0;
}

/* workers/status: the pool as Flink counts it. */
static int pool_status(struct sched *s, struct rt_buf *out)
{
	int i, wanted = 0, started = 0, registered = 0, pending = 0;
	int manual = 0, offline = 0;
	size_t n, k;
	void **all = rt_map_values(&s->pool.children, &n);

	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_local *l = &s->locals[i];
		struct sched_worker *w = local_worker(s, l);

		if (!l->wanted)
			continue;
		wanted++;
		started += l->live;
		if (w != NULL && w->online)
			registered++;
		else if (l->live)
			pending++; /* started, still registering */
	}
	for (k = 0; all != NULL && k < n; k++) {
		struct sched_worker *w = all[k];

		manual += !w->local && w->online;
		offline += !w->online;
	}
	free(all);
	return rt_buf_printf(
		out,
		"pool_size %d\nwanted %d\nstarted %d\nregistered %d\n"
		"registering %d\nmissing %d\nmanual %d\noffline %d\n"
		"starts_last_minute %d\nstarts_per_minute %d\npaused %s\n"
		"strategy %s\nheartbeat_timeout_ms %d\n",
		s->pool_size, wanted, started, registered, pending,
		wanted - registered - pending, manual, offline,
		starts_last_minute(s), s->starts_per_minute,
		s->paused ? "yes" : "no",
		sched_strategy_name((enum sched_strategy)s->strategy),
		s->heartbeat_timeout);
}

int sched__worker_render(struct sched *s, struct sched_obj *o,
			 enum sched_file f, struct rt_buf *out)
{
	struct sched_worker *w = (struct sched_worker *)o;
	struct sums t = { 0, 0, 0 };

	if (f == SCHED_POOL_SIZE)
		return rt_buf_printf(out, "%d\n", s->pool_size);
	if (f == SCHED_POOL_STRATEGY)
		return rt_buf_printf(
			out, "%s\n",
			sched_strategy_name((enum sched_strategy)s->strategy));
	if (f == SCHED_POOL_STATUS)
		return pool_status(s, out);
	if (o->type != SCHED_WORKER)
		return -EINVAL;
	switch (f) {
	case SCHED_WORKER_STATE:
		return rt_buf_printf(out, "%s\n", worker_state(s, w));
	case SCHED_WORKER_MEMORY:
		return rt_buf_printf(out, "%d\n", w->memory_mb);
	case SCHED_WORKER_FREE:
		return rt_buf_printf(out, "%d\n", w->memory_mb - w->used_mb);
	case SCHED_WORKER_TAGS:
		return rt_buf_printf(out, "%s\n", w->tags ? w->tags : "");
	case SCHED_WORKER_NAMESPACES:
		return rt_buf_printf(out, "%s\n",
				     w->namespaces ? w->namespaces : "");
	case SCHED_WORKER_PID:
		return w->online && w->pid > 0
			       ? rt_buf_printf(out, "%d\n", w->pid)
			       : 0;
	case SCHED_WORKER_STATUS:
		rt_map_each(&w->assignments, sum_cb, &t);
		return rt_buf_printf(
			out,
			"state %s\nsince_ms %lld\nheartbeat_age_ms %lld\n"
			"instances %zu\nrunning %d\nmemory_mb %d\nused_mb %d\n"
			"free_mb %d\nlocal %s\ncgroups %s\npid %d\n",
			worker_state(s, w), (long long)w->since_ms,
			w->online
				? (long long)(rt_mono_ms() - w->heartbeat_mono)
				: -1LL,
			w->assignments.count, t.running, w->memory_mb,
			w->used_mb, w->memory_mb - w->used_mb,
			w->local ? "yes" : "no", w->cgroups ? "yes" : "no",
			w->online ? w->pid : 0);
	case SCHED_WORKER_STATS:
		rt_map_each(&w->assignments, sum_cb, &t);
		return rt_buf_printf(out,
				     "instances %zu\nrunning %d\n"
				     "cpu_seconds %.3f\nrss_bytes %lld\n",
				     w->assignments.count, t.running, t.cpu,
				     t.rss);
	default: return -EINVAL;
	}
}

/* ============================================================== the tick */

/* Adds `*arg` ms to the heartbeat time of every worker. */
static int excuse_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	w->heartbeat_mono += *(int64_t *)arg;
	return 0;
}

static int health_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	struct sched *s = arg;

	(void)key;
	if (w->online && w->conn != NULL &&
	    rt_mono_ms() - w->heartbeat_mono > s->heartbeat_timeout) {
		rt_log(RT_LOG_WARN, "worker %s: no heartbeat for %d ms",
		       w->obj.name, s->heartbeat_timeout);
		conn_close(w->conn, "heartbeat timeout");
		return 1; /* the map changed: look again next tick */
	}
	return 0;
}

/* After the recovery window: a known worker still away loses its
 * instances to the others. */
static int absent_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	if (!w->online && w->assignments.count > 0)
		sched__worker_lost(arg, w, 0);
	return 0;
}

static void on_tick(uv_timer_t *t)
{
	struct sched *s = t->data;
	int was_recovering = s->recovery_until != 0;

	int64_t now = rt_mono_ms(), stall;

	if (s->shutting_down)
		return;
	/* Time this loop itself was stalled (a slow disk, say) is not the
	 * workers' silence: their heartbeats may be waiting to be read. */
	stall = s->last_tick ? now - s->last_tick - 1000 : 0;
	s->last_tick = now;
	if (stall > 250)
		rt_map_each(&s->pool.children, excuse_cb, &stall);
	rt_map_each(&s->pool.children, health_cb, s);
	if (was_recovering && rt_mono_ms() >= s->recovery_until) {
		s->recovery_until = 0;
		/* Workers that did not come back: their instances move. */
		rt_map_each(&s->pool.children, absent_cb, s);
		sched_event(s, "recovery.done", "workers", NULL);
	}
	pool_check(s);
	sched__calls_tick(s);
	if (s->capacity_changed || was_recovering) {
		s->capacity_changed = 0;
		sched__reconcile_all(s);
	}
}

/* ============================================================== start */

static int known_cb(const struct store_worker *r, void *arg)
{
	struct sched *s = arg;
	struct sched_obj *o;
	struct sched_worker *w;
	json_t *t = json_loads(r->tags, 0, NULL),
	       *n = json_loads(r->namespaces, 0, NULL);
	int64_t now = rt_now_ms();

	o = sched__obj_new(s, SCHED_WORKER, &s->pool, r->id, now, now);
	if (o != NULL) {
		w = (struct sched_worker *)o;
		w->memory_mb = r->memory_mb;
		w->tags = join(t);
		w->namespaces = join(n);
		w->local = r->local;
		w->draining = r->drained;
		w->since_ms = now;
	}
	json_decref(t);
	json_decref(n);
	return 0;
}

/* A fair share of the machine's memory for each local worker. */
static int fair_share(int workers)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	long long mb = pages > 0 && size > 0
			       ? (long long)pages * size / (1024 * 1024)
			       : 1024;

	return (int)(mb / (workers > 0 ? workers : 1));
}

int sched_start(struct sched *s, struct uv_loop_s *loop,
		const struct sched_options *opt)
{
	char v[32];
	int rc, i;
	long n;

	s->loop = loop;
	s->next_seq = 1;
	s->heartbeat_timeout = opt->heartbeat_timeout > 0
				       ? opt->heartbeat_timeout
				       : SCHED_HEARTBEAT_TIMEOUT_MS;
	s->starts_per_minute = opt->starts_per_minute > 0
				       ? opt->starts_per_minute
				       : SCHED_STARTS_PER_MINUTE;
	if (store_setting_get(s->store, "strategy", v, sizeof(v)) == 0 &&
	    sched_strategy_parse(v, strlen(v)) >= 0)
		s->strategy = sched_strategy_parse(v, strlen(v));
	s->self = strdup(opt->self);
	s->log_path = opt->log ? strdup(opt->log) : NULL;
	/* The pool's size: the command line, else the stored one, else 1. */
	if (opt->workers >= 0) {
		s->pool_size = opt->workers;
		snprintf(v, sizeof(v), "%d", opt->workers);
		store_setting_put(s->store, "pool_size", v);
	} else if (store_setting_get(s->store, "pool_size", v, sizeof(v)) ==
			   0 &&
		   sched__parse_int(v, strlen(v), 0, SCHED_POOL_MAX, &n) == 0) {
		s->pool_size = (int)n;
	} else {
		s->pool_size = 1;
	}
	s->worker_memory = opt->worker_memory > 0
				   ? opt->worker_memory
				   : fair_share(s->pool_size > 0 ? s->pool_size
								 : 1);
	for (i = 0; i < SCHED_POOL_MAX; i++)
		snprintf(s->locals[i].id, sizeof(s->locals[i].id), "local-%d",
			 i + 1);

	/* Workers known from before: give them a moment to come back. */
	rc = store_worker_load(s->store, known_cb, s);
	if (rc < 0)
		return rc;
	if (s->pool.children.count > 0)
		s->recovery_until = rt_mono_ms() + SCHED_RECOVERY_MS;
	rc = sched__instances_load(s);
	if (rc < 0)
		return rc;

	{
		struct rt_buf p = { 0 };

		rt_buf_printf(&p, "%s/ctl.sock", s->datadir);
		s->sock_path = p.data;
	}
	unlink(s->sock_path);
	uv_pipe_init(loop, &s->server, 0);
	s->server.data = s;
	rc = uv_pipe_bind(&s->server, s->sock_path);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->server, 64, on_connection);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot listen on %s: %s", s->sock_path,
		       uv_strerror(rc));
		uv_close((uv_handle_t *)&s->server, NULL);
		return -EIO;
	}
	rc = rt_wire_flusher_start(&s->flusher, loop);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot start the frame flusher: %s",
		       uv_strerror(rc));
		uv_close((uv_handle_t *)&s->server, NULL);
		return -EIO;
	}
	uv_timer_init(loop, &s->tick);
	s->tick.data = s;
	uv_timer_start(&s->tick, on_tick, 1000, 1000);
	pool_check(s);
	sched__reconcile_all(s);
	return 0;
}

int sched__workers_coming(struct sched *s)
{
	int i;

	if (s->recovery_until != 0 && rt_mono_ms() < s->recovery_until)
		return 1;
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_worker *w;

		/* A wanted one that is not running is due to be started
		 * again (after SCHED_RESPAWN_MS), unless the pool is paused
		 * by its start limit. */
		if (!s->locals[i].live) {
			if (s->locals[i].wanted && !s->paused)
				return 1;
			continue;
		}
		w = local_worker(s, &s->locals[i]);
		if (w == NULL || !w->online)
			return 1;
	}
	return 0;
}

/* ============================================================ shutdown */

static int pending_local(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		n += s->locals[i].live;
	return n;
}

static int online_local(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_worker *w = local_worker(s, &s->locals[i]);

		n += w != NULL && w->online;
	}
	return n;
}

static void close_noop(uv_handle_t *h)
{
	(void)h;
}

static int close_conn_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	(void)arg;
	if (w->conn != NULL) {
		struct conn *c = w->conn;

		c->worker = NULL;
		w->conn = NULL;
		w->online = 0;
		if (!c->closing) {
			c->closing = 1;
			rt_wire_out_close(&c->out);
			uv_close((uv_handle_t *)&c->pipe, conn_closed);
		}
	}
	return 0;
}

static void finish_shutdown(struct sched *s)
{
	void (*done)(void *) = s->shutdown_done;
	size_t i;

	if (done == NULL)
		return;
	s->shutdown_done = NULL;
	uv_timer_stop(&s->shutdown_timer);
	uv_close((uv_handle_t *)&s->shutdown_timer, close_noop);
	uv_timer_stop(&s->tick);
	uv_close((uv_handle_t *)&s->tick, close_noop);
	uv_close((uv_handle_t *)&s->server, close_noop);
	unlink(s->sock_path);
	rt_map_each(&s->pool.children, close_conn_cb, NULL);
	rt_wire_flusher_stop(&s->flusher);
	for (i = 0; i < s->requests.nslots; i++)
		if (s->requests.keys[i] != 0 &&
		    s->requests.keys[i] != UINT64_MAX)
			request_done(s, s->requests.values[i], NULL);
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		int killed = s->locals[i].live;

		if (killed) {
			/* Past the bound: make sure nothing is left. */
			rt_log(RT_LOG_WARN,
			       "local worker %s did not exit; "
			       "killing it",
			       s->locals[i].id);
			kill(-s->locals[i].proc.pid, SIGKILL);
			uv_close((uv_handle_t *)&s->locals[i].proc, NULL);
			s->locals[i].live = 0;
		}
		/* The empty memory groups of a local worker that was killed
		 * (now, or by kill -9 before) and cannot remove them: its
		 * instances die with it. Bounded; the FUSE mount is gone. */
		rt_cgroup_prune(s->locals[i].id, s->sock_path,
				killed ? 1000 : 100);
	}
	done(s->shutdown_arg);
}

static void on_shutdown_poll(uv_timer_t *t)
{
	struct sched *s = t->data;

	if ((pending_local(s) == 0 && online_local(s) == 0 &&
	     s->requests.count == 0) ||
	    rt_mono_ms() > s->recovery_until)
		finish_shutdown(s);
}

static int stop_manual_cb(const char *key, void *value, void *arg)
{
	struct sched_instance *in = value;
	struct sched_wait *none = NULL;
	struct rt_buf id = { 0 };

	(void)key;
	(void)none;
	sched_obj_path(&in->obj, &id);
	sched__request(
		arg, in->worker,
		json_pack("{s:s, s:s}", "type", "stop", "instance", id.data),
		NULL, 0, in->obj.id);
	rt_buf_free(&id);
	return 0;
}

static int stop_workers_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;
	struct sched *s = arg;

	(void)key;
	if (w->local)
		store_worker_delete(s->store, w->obj.name);
	if (!w->online)
		return 0;
	if (w->local)
		sched__send(s, w, json_pack("{s:s}", "type", "shutdown"));
	else /* a worker started by hand stays; its instances stop */
		rt_map_each(&w->assignments, stop_manual_cb, s);
	return 0;
}

void sched_shutdown(struct sched *s, void (*done)(void *arg), void *arg)
{
	if (s->shutting_down)
		return;
	s->shutting_down = 1;
	sched__calls_close(s);
	s->shutdown_done = done;
	s->shutdown_arg = arg;
	if (s->loop == NULL) {
		s->shutdown_done = NULL;
		done(arg);
		return;
	}
	rt_log(RT_LOG_INFO, "stopping every instance and local worker");
	rt_map_each(&s->pool.children, stop_workers_cb, s);
	/* Bounded: the workers' stop grace, and a little more. */
	s->recovery_until = rt_mono_ms() + 5000 + 3000;
	uv_timer_init(s->loop, &s->shutdown_timer);
	s->shutdown_timer.data = s;
	uv_timer_start(&s->shutdown_timer, on_shutdown_poll, 0, 50);
}

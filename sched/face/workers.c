/*
 * workers.c - the workers in the model: registration (and what is
 * refused), the messages of a registered worker, a worker gone (offline
 * or removed), workers known from the store, and the files of workers/
 * and of each worker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workers/admit.h"
#include "../common.h"
#include "../calls/direct.h"
#include "../act/drain.h"
#include "../workers/fence.h"
#include "../workers/pool.h"
#include "../act/reports.h"
#include "../workers/requests.h"
#include "workers.h"

void sched__worker_free(struct sched_worker *w)
{
	free(w->tags);
	free(w->namespaces);
	rt_map_free(&w->assignments);
	sched__fence_drop(w);
	sched__conn_detach(w->conn);
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

void sched__on_register(struct sched *s, struct conn *c, const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "id");
	long long mem = rt_msg_int(m, "memory", 0);
	const struct sched_peer *peer = sched__conn_peer(c);
	struct sched_obj *o;
	struct sched_worker *w;
	struct rt_buf kvs = { 0 };
	char v[32];
	int64_t now = rt_now_ms();
	int rc;

	if (id == NULL || !rt_name_valid(id) || mem <= 0 || mem > (1LL << 30)) {
		sched__admit_refused(s, peer, "bad registration");
		sched__conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
					      "reason", "bad registration"));
		sched__conn_close(c, "bad registration");
		return;
	}
	if (!sched__acting(s)) {
		/* Workers are the leader's: tell this one where it is. */
		const char *to = sched__leader_addr(s, peer->transport !=
							       SCHED_UNIX);
		struct rt_buf why = { 0 };
		json_t *r;

		if (sched_cluster_leader_name(s) != NULL && to != NULL)
			rt_buf_printf(&why, "not the leader: %s leads",
				      sched_cluster_leader_name(s));
		else if (sched_cluster_leader_name(s) != NULL)
			rt_buf_printf(&why,
				      "not the leader: %s leads, with no "
				      "address for this transport",
				      sched_cluster_leader_name(s));
		else
			rt_buf_printf(&why, "not the leader: none is known "
					    "yet");
		r = json_pack("{s:s, s:s, s:b}", "type", "refused", "reason",
			      why.data ? why.data : "not the leader", "retry",
			      1);
		if (r != NULL && to != NULL)
			json_object_set_new(r, "leader", json_string(to));
		sched__conn_send(c, r);
		sched__conn_close(c, "not the leader");
		rt_buf_free(&why);
		return;
	}
	if (strcmp(id, "pool_size") == 0 || strcmp(id, "strategy") == 0 ||
	    strcmp(id, "rebalance") == 0 || strcmp(id, "status") == 0) {
		sched__admit_refused(s, peer, "that id is a file of workers/");
		sched__conn_send(c, json_pack("{s:s, s:s}", "type", "refused",
					      "reason",
					      "that id is a file of workers/"));
		sched__conn_close(c, "reserved id");
		return;
	}
	sched__admit_replace(s, id, peer);
	o = sched_child(&s->pool, id);
	w = (struct sched_worker *)o;
	rc = sched__admit_id(s, id, w, peer, &kvs);
	if (rc < 0) {
		/* Over TCP, a busy id may be the worker's own connection,
		 * not yet seen lost: it may try again. */
		sched__conn_send(c,
				 json_pack("{s:s, s:s, s:b}", "type", "refused",
					   "reason", kvs.data, "retry",
					   rc == -EBUSY && peer->transport !=
								   SCHED_UNIX));
		rt_buf_free(&kvs);
		sched__conn_close(c, "refused");
		return;
	}
	if (w == NULL) {
		o = sched__obj_new(s, SCHED_WORKER, &s->pool, id, now, now);
		if (o == NULL) {
			sched__conn_close(c, "out of memory");
			return;
		}
		w = (struct sched_worker *)o;
	}
	free(w->tags);
	free(w->namespaces);
	w->tags = sched__words_of_json(json_object_get(m->header, "tags"));
	w->namespaces = sched__words_of_json(
		json_object_get(m->header, "namespaces"));
	w->memory_mb = (int)mem;
	/* The pid the kernel vouches for, in the controller's view; over
	 * TCP, the one the worker reports (on its machine). */
	w->pid = peer->transport == SCHED_UNIX ? (int)peer->proc.pid
					       : (int)rt_msg_int(m, "pid", 0);
	w->revoked = 0; /* admitted: not, or no longer */
	w->cgroups = json_is_true(json_object_get(m->header, "cgroups"));
	w->pongs = json_is_true(json_object_get(m->header, "pong"));
	w->local = sched__local_of(s, id) != NULL || w->local;
	sched__direct_worker(
		s, w, peer->transport == SCHED_UNIX ? (int)peer->proc.pid : 0);
	/* A drain is kept by id, across every kind of restart. */
	w->draining = w->draining || sched__drained(s, id);
	w->online = 1;
	w->leaving = 0;
	w->since_ms = now;
	w->obj.updated_ms = now;
	w->heartbeat_mono = rt_mono_ms();
	w->rtt_ms = -1;
	sched__fence_drop(w);
	sched__conn_bind(c, w);
	if (sched__worker_persist(s, w) < 0 ||
	    sched__admit_record(s, id, peer) < 0)
		rt_log(RT_LOG_ERROR, "worker %s: store failed", id);
	sched__logs_private(s, id);
	/* It hears a ping every second: silent past this, it is lost. */
	sched__conn_send(c,
			 json_pack("{s:s, s:i}", "type", "registered",
				   "heartbeat_timeout", s->heartbeat_timeout));
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
	sched__fence_arm(s, w);
	if (s->recovery_until && all_known_back(s)) {
		/* Every known worker is back: no need to wait longer. */
		s->recovery_until = 0;
		sched_event(s, "recovery.done", "workers", NULL);
	}
	s->hooks.reconcile_soon(s);
}

/* Removes worker `w`'s row and its recorded process, both or neither.
 * Returns 0 or -errno of the store (logged). */
static int forget(struct sched *s, struct sched_worker *w)
{
	int rc = store_begin(s->store);

	if (rc == 0)
		rc = store_worker_delete(s->store, w->obj.name);
	if (rc == 0)
		rc = sched__admit_forget(s, w->obj.name);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "worker %s: cannot remove its row: %s",
		       w->obj.name, strerror(-rc));
	return rc;
}

/* The connection of worker `w` closed: it is offline, or removed when it
 * was leaving (or at shutdown); its instances are lost. */
void sched__worker_gone(struct sched *s, struct sched_worker *w,
			const char *why)
{
	struct sched_local *l = sched__local_of(s, w->obj.name);
	struct rt_buf kvs = { 0 };

	w->online = 0;
	w->conn = NULL;
	w->since_ms = rt_now_ms();
	sched__requests_fail(s, w);
	rt_buf_kv(&kvs, "reason", why);
	if (!s->shutting_down && !sched__acting(s)) {
		/* A leader that stepped down: its workers go to the next
		 * one with their assignments, which are the cluster's. */
		sched__event(s, &w->obj, "worker.offline", kvs.data);
		rt_buf_free(&kvs);
		return;
	}
	if (s->shutting_down) {
		sched__worker_lost(s, w, 1);
		sched__obj_drop(s, &w->obj);
	} else if (w->leaving || (l != NULL && !l->wanted)) {
		sched__worker_lost(s, w, 0);
		if (forget(s, w) < 0) {
			/* Its row stays: so does the worker, offline. */
			sched__event(s, &w->obj, "worker.offline", kvs.data);
		} else {
			sched__event(s, &w->obj, "worker.removed", kvs.data);
			sched__obj_drop(s, &w->obj);
		}
	} else {
		sched__event(s, &w->obj, "worker.offline", kvs.data);
		sched__worker_lost(s, w, 0);
	}
	rt_buf_free(&kvs);
	s->hooks.reconcile_soon(s);
}

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
		w->tags = sched__words_of_json(t);
		w->namespaces = sched__words_of_json(n);
		w->local = r->local;
		w->draining = r->drained || sched__drained(s, r->id);
		w->revoked = sched__revoked_of(s, r->id);
		w->since_ms = now;
	}
	json_decref(t);
	json_decref(n);
	return 0;
}

int sched__workers_load(struct sched *s)
{
	return store_worker_load(s->store, known_cb, s);
}

/* A message from registered worker `w`: reports go to reports.c, results
 * to calls.c, replies to their requests. */
void sched__on_message(struct sched *s, struct sched_worker *w,
		       const struct rt_msg *m)
{
	w->heartbeat_mono = rt_mono_ms();
	if (strcmp(m->type, "heartbeat") == 0) {
		sched__on_heartbeat(s, w, m);
	} else if (strcmp(m->type, "pong") == 0) {
		sched__on_pong(s, w, m);
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
			s->hooks.reconcile_soon(s);
		}
	} else if (strncmp(m->type, "code.", 5) == 0) {
		sched__code_on_message(s, w, m);
	} else if (strcmp(m->type, "reply") == 0) {
		long long seq = rt_msg_int(m, "seq", 0);
		struct sched_request *r = seq > 0 ? rt_idmap_get(
							    &s->links.requests,
							    (uint64_t)seq)
						  : NULL;

		if (r != NULL && r->worker == w)
			sched__request_done(s, r, m);
	} else {
		rt_log(RT_LOG_WARN, "worker %s: unknown message %s",
		       w->obj.name, m->type);
	}
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
		rc = store_setting_put(
			s->store, "strategy",
			sched_strategy_name((enum sched_strategy)k));
		if (rc < 0)
			return rc;
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
		else if (l == 6 && memcmp(buf, "resume", 6) == 0) {
			/* Lifts a revocation's refusal of the id without a
			 * certificate, and a drain. */
			if (((struct sched_worker *)o)->revoked)
				rc = sched__unrevoke(s,
						     (struct sched_worker *)o);
			if (rc == 0)
				rc = sched__resume(s, (struct sched_worker *)o);
		} else if (l == 6 && memcmp(buf, "revoke", 6) == 0)
			rc = sched__revoke(s, (struct sched_worker *)o);
		else
			rc = -EINVAL;
		return rc;
	default: return -EACCES;
	}
}

/* Its process: as the leader told (a follower's view), or its own. */
static int worker_pid(const struct sched_worker *w)
{
	if (w->view[0] != '\0')
		return w->view_pid;
	return w->online && w->pid > 0 ? w->pid : 0;
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

int sched__worker_render(struct sched *s, struct sched_obj *o,
			 enum sched_file f, struct rt_buf *out)
{
	struct sched_worker *w = (struct sched_worker *)o;
	struct sums t = { 0, 0, 0 };
	int rc;

	if (f == SCHED_POOL_SIZE)
		return rt_buf_printf(out, "%d\n", s->pool_state.size);
	if (f == SCHED_POOL_STRATEGY)
		return rt_buf_printf(
			out, "%s\n",
			sched_strategy_name((enum sched_strategy)s->strategy));
	if (f == SCHED_POOL_STATUS)
		return sched__pool_status(s, out);
	if (o->type != SCHED_WORKER)
		return -EINVAL;
	switch (f) {
	case SCHED_WORKER_STATE:
		return rt_buf_printf(out, "%s\n", sched__worker_word(s, w));
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
		return worker_pid(w) > 0
			       ? rt_buf_printf(out, "%d\n", worker_pid(w))
			       : 0;
	case SCHED_WORKER_STATUS:
		rt_map_each(&w->assignments, sum_cb, &t);
		rc = rt_buf_printf(
			out,
			"state %s\nsince_ms %lld\nheartbeat_age_ms %lld\n"
			"instances %zu\nrunning %d\nmemory_mb %d\nused_mb %d\n"
			"free_mb %d\nlocal %s\ncgroups %s\npid %d\n"
			"rtt_ms %.3f\nfenced %lld\nhealing %s\nview %s\n",
			sched__worker_word(s, w),
			(long long)(w->view[0] ? w->view_since_ms
					       : w->since_ms),
			w->online
				? (long long)(rt_mono_ms() - w->heartbeat_mono)
				: -1LL,
			w->assignments.count, t.running, w->memory_mb,
			w->used_mb, w->memory_mb - w->used_mb,
			w->local ? "yes" : "no", w->cgroups ? "yes" : "no",
			worker_pid(w),
			w->online && w->rtt_ms >= 0 ? w->rtt_ms : -1.0,
			w->fenced, w->fencing ? "yes" : "no",
			w->view[0] ? "leader" : "own");
		return rc < 0 ? rc : sched__conn_status(w, out);
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

/*
 * fence.c - partitions: the epoch fence on what workers report, pings and
 * their round trip, the silence that makes a worker offline, and the
 * healing of a worker that comes back (it stops what now runs elsewhere
 * before it takes new work).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "conn.h"
#include "fence.h"
#include "requests.h"

#define BEAT_MS	     250  /* how often silence is looked for */
#define PING_MS	     1000 /* how often each worker is pinged */
#define RTT_WEIGHT   8	  /* 1/8 of a new sample goes into the average */
#define STALL_MIN_MS 250  /* a later beat than this is the loop's stall */

/* ================================================================ pure */

enum sched_fence sched_fence_check(int assigned_here, uint64_t current,
				   uint64_t reported)
{
	if (!assigned_here)
		return SCHED_FENCE_STOP;
	if (reported == 0 || reported == current)
		return SCHED_FENCE_ACCEPT;
	return SCHED_FENCE_IGNORE;
}

int sched_fence_adopt(int assigned_here, int free_to_take, uint64_t current,
		      uint64_t reported)
{
	if (!assigned_here && !free_to_take)
		return 0;
	return reported == 0 || reported == current;
}

double sched_rtt_update(double srtt, double sample)
{
	if (sample < 0)
		return srtt;
	if (srtt <= 0)
		return sample;
	return srtt + (sample - srtt) / RTT_WEIGHT;
}

/* ======================================================= the fence */

uint64_t sched__msg_epoch(const struct rt_msg *m)
{
	long long e = rt_msg_int(m, "epoch", 0);

	return e > 0 ? (uint64_t)e : 0;
}

void sched__fenced(const struct sched *s, struct sched_worker *w,
		   const char *id, uint64_t reported, uint64_t current,
		   const char *what)
{
	w->fenced++;
	rt_log(s->shutting_down ? RT_LOG_DEBUG : RT_LOG_INFO,
	       "worker %s: %s about %s (epoch %llu) dropped: %s %llu",
	       w->obj.name, what, id ? id : "?", (unsigned long long)reported,
	       current ? "the assignment's epoch is"
		       : "not assigned there; epoch",
	       (unsigned long long)current);
}

/* ============================================================ healing */

/* The stops a registering worker must acknowledge before it takes work. */
struct gate {
	struct sched *s;
	uint64_t worker;	 /* its object id, or 0 once detached */
	struct sched_wait *wait; /* valid until done runs */
	int stops;		 /* stops sent */
};

static void gate_done(void *arg, int err)
{
	struct gate *g = arg;
	struct sched *s = g->s;
	struct sched_obj *o = g->worker ? sched_find(s, g->worker) : NULL;
	struct sched_worker *w = o != NULL && o->type == SCHED_WORKER
					 ? (struct sched_worker *)o
					 : NULL;
	int timed_out = g->wait->remaining > 0;
	struct rt_buf kvs = { 0 };
	char v[32];

	(void)err;
	if (w == NULL || w->fence != g) {
		free(g);
		return;
	}
	w->fence = NULL;
	w->fencing = 0;
	if (s->shutting_down || !w->online || w->conn == NULL) {
		free(g);
		return;
	}
	snprintf(v, sizeof(v), "%d", g->stops);
	rt_buf_kv(&kvs, "stopped", v);
	if (timed_out) {
		rt_log(RT_LOG_WARN,
		       "worker %s: %d stale instances not stopped within %d "
		       "ms; closing it",
		       w->obj.name, g->wait->remaining, SCHED_FENCE_TIMEOUT_MS);
		rt_buf_kv(&kvs, "reason",
			  "stale instances not stopped in time");
		sched__event(s, &w->obj, "worker.unhealed", kvs.data);
		sched__conn_close(w->conn, "stale instances not stopped");
	} else {
		sched__event(s, &w->obj, "worker.healed", kvs.data);
		/* It may take work now. */
		s->hooks.reconcile_soon(s);
	}
	rt_buf_free(&kvs);
	free(g);
}

void sched__fence_stop(struct sched *s, struct sched_worker *w, const char *id,
		       uint64_t epoch)
{
	struct gate *g = w->fence;
	/* Its calls failed here already: no graceful stop for them. */
	json_t *h = json_pack("{s:s, s:s, s:b, s:b}", "type", "stop",
			      "instance", id, "forget", 1, "abort_calls", 1);

	if (h != NULL && epoch > 0)
		json_object_set_new(h, "epoch",
				    json_integer((json_int_t)epoch));
	if (g == NULL) {
		g = calloc(1, sizeof(*g));
		if (g != NULL) {
			g->s = s;
			g->worker = w->obj.id;
			g->wait = sched__wait_new(s, gate_done, g,
						  SCHED_FENCE_TIMEOUT_MS);
		}
		if (g == NULL || g->wait == NULL) {
			/* Without memory to wait: stopped all the same. */
			free(g);
			sched__send(s, w, h);
			return;
		}
		w->fence = g;
		w->fencing = 1;
	}
	if (sched__request(s, w, h, g->wait, 0, 0) == 0)
		g->stops++;
}

void sched__fence_arm(struct sched *s, struct sched_worker *w)
{
	struct gate *g = w->fence;

	if (g != NULL)
		sched__wait_arm(s, g->wait);
}

void sched__fence_drop(struct sched_worker *w)
{
	struct gate *g = w->fence;

	if (g != NULL)
		g->worker = 0; /* its wait ends, and frees it */
	w->fence = NULL;
	w->fencing = 0;
}

/* ========================================================== heartbeats */

/* Adds `*arg` ms to the heartbeat time of every worker. */
static int excuse_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	w->heartbeat_mono += *(int64_t *)arg;
	return 0;
}

/* Closes the connection of a worker silent past the heartbeat timeout:
 * returns 1 then, for the map may have changed. */
static int health_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;
	struct sched *s = arg;

	(void)key;
	if (w->online && w->conn != NULL &&
	    rt_mono_ms() - w->heartbeat_mono > s->heartbeat_timeout) {
		rt_log(RT_LOG_WARN, "worker %s: no heartbeat for %d ms",
		       w->obj.name, s->heartbeat_timeout);
		sched__conn_close(w->conn, "heartbeat timeout");
		return 1;
	}
	return 0;
}

static int ping_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	if (w->online && w->conn != NULL && w->pongs)
		sched__send(arg, w,
			    json_pack("{s:s, s:I}", "type", "ping", "t",
				      (json_int_t)(uv_hrtime() / 1000)));
	return 0;
}

static void on_beat(uv_timer_t *t)
{
	struct sched *s = t->data;
	int64_t now = rt_mono_ms(), stall;
	int guard;

	if (s->shutting_down)
		return;
	/* Time this loop itself was stalled (a slow disk, say) is not the
	 * workers' silence: their heartbeats may be waiting to be read. */
	stall = s->links.last_beat ? now - s->links.last_beat - BEAT_MS : 0;
	s->links.last_beat = now;
	if (stall > STALL_MIN_MS)
		rt_map_each(&s->pool.children, excuse_cb, &stall);
	/* Every silent worker now, one at a time (each closing changes the
	 * map); each is offline after it, so this ends. */
	for (guard = 0; guard < SCHED_POOL_MAX * 64; guard++)
		if (rt_map_each(&s->pool.children, health_cb, s) == 0)
			break;
	if (now - s->links.last_ping >= PING_MS) {
		s->links.last_ping = now;
		rt_map_each(&s->pool.children, ping_cb, s);
	}
}

void sched__heartbeat_start(struct sched *s)
{
	uv_timer_init(s->loop, &s->links.heartbeat);
	s->links.heartbeat.data = s;
	s->links.last_beat = rt_mono_ms();
	s->links.last_ping = s->links.last_beat;
	uv_timer_start(&s->links.heartbeat, on_beat, BEAT_MS, BEAT_MS);
}

static void close_noop(uv_handle_t *h)
{
	(void)h;
}

void sched__heartbeat_stop(struct sched *s)
{
	uv_timer_stop(&s->links.heartbeat);
	uv_close((uv_handle_t *)&s->links.heartbeat, close_noop);
}

void sched__on_pong(struct sched *s, struct sched_worker *w,
		    const struct rt_msg *m)
{
	long long t = rt_msg_int(m, "t", 0);
	long long now = (long long)(uv_hrtime() / 1000);

	(void)s;
	/* Only what we sent: a time of ours, in the past. */
	if (t <= 0 || t > now)
		return;
	w->rtt_ms = sched_rtt_update(w->rtt_ms, (double)(now - t) / 1000);
}

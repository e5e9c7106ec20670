/*
 * leader.c - a cluster's controller: which one leads, and what leading
 * means. Each controller of a shared store campaigns (elect.h); the one
 * that wins waits until its model has everything etcd had committed
 * (store_barrier: what a deposed leader wrote before its lease ended
 * included), then takes office: its writes of derived state go to etcd
 * behind the fence (store_mirror_start), it admits workers, and it
 * reconciles, places and recovers as a controller does after a restart:
 * workers that come back report what they run and keep it (same pid, no
 * restart: fence.c's adoption), those that do not come back within the
 * recovery window lose their instances to the others.
 *
 * A follower admits no worker (it tells the worker where the leader is),
 * places nothing, and keeps its model of instances and workers from what
 * the leader writes in etcd (on_derived). A leader that loses its lease,
 * or whose fenced write fails, steps down at once: it closes its workers'
 * connections (they come back to the next leader) without touching their
 * assignments, and follows again.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../common.h"
#include "../workers/conn.h"
#include "etcd/elect.h"
#include "../store/etcd/etcd_keys.h"
#include "../model/instance_state.h"
#include "leader.h"
#include "cluster_state.h"
#include "../model/quota.h"
#include "../act/reconcile.h"
#include "../act/reports.h"

/* The election's name under the cluster's prefix. */
static int election_name(struct sched *s, struct rt_buf *out)
{
	return rt_buf_printf(out, "/fnfs/%s/leader", store_cluster(s->store));
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
}

/* Reads the leader's value: {"name","listen","sock"}. */
static void learn_leader(struct sched *s, const char *value)
{
	json_t *o = value ? json_loads(value, 0, NULL) : NULL;
	const char *name = NULL, *listen = NULL, *sock = NULL;

	if (o != NULL)
		json_unpack(o, "{s?s, s?s, s?s}", "name", &name, "listen",
			    &listen, "sock", &sock);
	set_str(&s->cluster->leader_name, name);
	set_str(&s->cluster->leader_listen, listen);
	set_str(&s->cluster->leader_sock, sock);
	json_decref(o);
}

static int close_worker_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	(void)arg;
	if (w->conn != NULL)
		sched__conn_close(w->conn, "this controller no longer leads");
	return 0;
}

/* Forgets what a follower was told of each worker (`view`) and what a
 * leader told (`told`): a new leader shows its own view, and tells the
 * others all of it at its first tick. */
static int forget_told_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;

	(void)key;
	(void)arg;
	w->view[0] = '\0';
	w->told[0] = '\0';
	w->told_pid = 0;
	return 0;
}

/* Stops acting as the leader. With `release`, its workers go to the
 * next one; without (etcd cannot be reached, so nobody can be elected
 * where this controller cannot see it), it keeps their connections, so
 * that no instance stops because etcd is away, and places nothing until
 * it knows who leads. */
static void stop_leading(struct sched *s, const char *why, int release)
{
	struct rt_buf kvs = { 0 };

	assert(s->cluster->ops == &sched_cluster_etcd);
	s->cluster->taking = 0;
	if (s->cluster->leading) {
		s->cluster->leading = 0;
		s->recovery_until = 0;
		store_mirror_stop(s->store);
		rt_buf_kv(&kvs, "reason", why);
		sched_event(s, "controller.follower", s->cluster->name,
			    kvs.data);
		rt_buf_free(&kvs);
		rt_log(RT_LOG_WARN, "controller %s: no longer the leader: %s",
		       s->cluster->name, why);
		s->cluster->holding = !release;
		rt_map_each(&s->pool.children, forget_told_cb, s);
	}
	if (release && s->cluster->holding) {
		s->cluster->holding = 0;
		rt_log(RT_LOG_INFO, "controller %s: its workers go to %s",
		       s->cluster->name,
		       s->cluster->leader_name ? s->cluster->leader_name
					       : "the leader");
	}
	if (release)
		rt_map_each(&s->pool.children, close_worker_cb, s);
	/* It follows now: it places nothing, and holds only what it led. */
	assert(!s->cluster->leading && !s->cluster->taking);
	assert(!(release && s->cluster->holding));
}

static void step_down(struct sched *s, const char *why)
{
	stop_leading(s, why, 1);
}

static int fence_cb(void *arg, struct etcd_cmp *out)
{
	struct sched *s = arg;

	return s->cluster->elect ? elect_fence(s->cluster->elect, out)
				 : -ESTALE;
}

static void deposed_cb(void *arg)
{
	step_down(arg, "a fenced write failed: another controller leads");
}

/* Instances assigned to a worker not connected here: lost until it comes
 * back, as after a restart. */
static int mark_waiting_cb(const char *key, void *value, void *arg)
{
	struct sched_worker *w = value;
	size_t i, n;
	struct sched_instance **v;

	(void)key;
	v = (struct sched_instance **)rt_map_values(&w->assignments, &n);
	for (i = 0; v != NULL && i < n; i++) {
		if (w->online) {
			/* Kept across a lapse of the lease: what changed
			 * meanwhile was not written; it is now. */
			sched__publish(arg, v[i]);
			continue;
		}
		sched__instance_set_state(v[i], SCHED_LOST, "worker not back");
		snprintf(v[i]->reason, sizeof(v[i]->reason),
			 "waiting for worker %s", w->obj.name);
	}
	free(v);
	return 0;
}

static void take_office(struct sched *s)
{
	struct etcd_cmp fence;
	int64_t last = s->cluster->term;

	/* Only an elector that won and caught up takes office, once. */
	assert(s->cluster->ops == &sched_cluster_etcd);
	assert(s->cluster->elect != NULL && s->cluster->taking);
	assert(!s->cluster->leading);
	s->cluster->taking = 0;
	s->cluster->leading = 1;
	s->cluster->holding = 0;
	rt_map_each(&s->pool.children, forget_told_cb, s);
	s->cluster->leader_since = rt_now_ms();
	/* Its term: the creation revision of its election key, which
	 * fences its writes and which its instances' values say. */
	s->cluster->term = fence_cb(s, &fence) == 0 ? fence.number : 0;
	/* A leader's term only grows: a later campaign's key is newer. */
	assert(s->cluster->term == 0 || s->cluster->term >= last);
	(void)last;
	store_mirror_start(s->store, fence_cb, deposed_cb, s, s->cluster->term);
	/* Workers of the last leader reconnect here: give them the time a
	 * silent connection takes to be noticed, and their backoff. */
	s->recovery_until = rt_mono_ms() + s->heartbeat_timeout +
			    SCHED_RECOVERY_MS;
	rt_map_each(&s->pool.children, mark_waiting_cb, s);
	(void)sched__quota_sweep(s); /* tenants removed while none led */
	sched_event(s, "controller.leader", s->cluster->name, NULL);
	rt_log(RT_LOG_INFO, "controller %s: the leader", s->cluster->name);
	sched__reconcile_all(s);
}

static void on_caught_up(void *arg, int err)
{
	struct sched *s = arg;

	if (!s->cluster->taking || s->shutting_down)
		return;
	if (err < 0 || s->cluster->elect == NULL ||
	    !elect_is_leader(s->cluster->elect)) {
		/* Tried again at the next change or tick. */
		s->cluster->taking = 0;
		if (err < 0)
			rt_log(RT_LOG_WARN,
			       "controller %s: elected, but its model could "
			       "not catch up with etcd: %s",
			       s->cluster->name, strerror(-err));
		return;
	}
	take_office(s);
}

static void begin_taking(struct sched *s)
{
	if (s->cluster->leading || s->cluster->taking || s->shutting_down)
		return;
	s->cluster->taking = 1;
	assert(s->cluster->elect != NULL);
	if (store_barrier(s->store, on_caught_up, s) < 0)
		s->cluster->taking = 0;
}

static void on_change(void *arg, enum elect_state state,
		      const char *leader_value, int64_t fence_rev)
{
	struct sched *s = arg;

	(void)fence_rev;
	learn_leader(s, leader_value);
	if (state == ELECT_LEADER)
		begin_taking(s);
	else if (state == ELECT_LOST)
		stop_leading(s, "etcd cannot be reached", 0);
	else if (state == ELECT_CAMPAIGNING)
		/* Its lease lapsed and nobody is known to lead: it holds
		 * its workers, which a win takes back at once, and lets them
		 * go when another controller is known to lead. */
		stop_leading(s, "its lease lapsed: campaigning again", 0);
	else
		step_down(s, elect_state_name(state));
}

static int etcd_start(struct sched *s, const struct sched_options *opt)
{
	struct elect_callbacks cb = { on_change, s };
	struct rt_buf name = { 0 };
	char host[256] = "controller";
	json_t *v = NULL;
	char *self = NULL;
	int rc = -ENOMEM;

	assert(s->cluster->ops == &sched_cluster_etcd);
	assert(s->cluster->elect == NULL && !s->cluster->leading);
	/* The leader places; this one campaigns. */
	s->recovery_until = 0;
	if (opt->name != NULL)
		s->cluster->name = strdup(opt->name);
	else if (gethostname(host, sizeof(host) - 1) == 0 &&
		 rt_name_valid(host))
		s->cluster->name = strdup(host);
	else
		s->cluster->name = strdup("controller");
	if (s->cluster->name == NULL)
		goto out;
	v = json_pack("{s:s, s:s?, s:s}", "name", s->cluster->name, "listen",
		      opt->listen, "sock", s->links.sock_path);
	self = v ? json_dumps(v, JSON_COMPACT) : NULL;
	if (self == NULL || election_name(s, &name) < 0)
		goto out;
	rc = elect_start(s->loop, store_client(s->store), name.data, self,
			 opt->leader_ttl > 0 ? opt->leader_ttl
					     : SCHED_LEADER_TTL_S,
			 &cb, &s->cluster->elect);
	if (rc == 0)
		store_derived_listen(s->store, sched__leader_derived, s);
out:
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "cannot campaign for the lead: %s",
		       strerror(-rc));
	json_decref(v);
	free(self);
	rt_buf_free(&name);
	return rc;
}

static void etcd_tick(struct sched *s)
{
	/* A win whose catch-up failed: again. */
	if (s->cluster->elect != NULL && !s->cluster->leading &&
	    elect_is_leader(s->cluster->elect))
		begin_taking(s);
	if (s->cluster->leading && !elect_is_leader(s->cluster->elect))
		stop_leading(s, "its lease may have expired", 0);
}

/* From inside the etcd client's callback: no freeing of the client
 * here (store_stop would); etcd_stopping does it next turn. */
static void on_elect_stopped(void *arg)
{
	struct sched *s = arg;

	s->cluster->elect_stopped = 1;
}

static int etcd_stopping(struct sched *s)
{
	if (s->cluster->elect == NULL)
		return 0;
	if (!s->cluster->elect_stopped)
		return 1;
	elect_free(s->cluster->elect);
	s->cluster->elect = NULL;
	store_stop(s->store);
	return 0;
}

static int etcd_stop(struct sched *s)
{
	if (s->cluster->elect == NULL)
		return 0;
	s->cluster->leading = 0;
	s->cluster->taking = 0;
	assert(!s->cluster->elect_stopped);
	store_mirror_stop(s->store);
	if (elect_stop(s->cluster->elect, on_elect_stopped, s) < 0) {
		s->cluster->elect_stopped = 1;
		etcd_stopping(s);
		return 0;
	}
	return 1;
}

static void etcd_abort(struct sched *s)
{
	if (s->cluster->elect != NULL) {
		elect_free(s->cluster->elect);
		s->cluster->elect = NULL;
		store_stop(s->store);
	}
}

static int etcd_acting(const struct sched *s)
{
	return s->cluster->leading;
}

static int etcd_publishes(const struct sched *s)
{
	return s->cluster->leading;
}

static const char *etcd_role(const struct sched *s)
{
	if (s->cluster->leading)
		return "leader";
	if (s->cluster->holding)
		return "holding";
	if (s->cluster->elect == NULL)
		return "stopped";
	switch (elect_state(s->cluster->elect)) {
	case ELECT_LEADER: return "campaigning"; /* catching up */
	case ELECT_FOLLOWER: return "follower";
	case ELECT_CAMPAIGNING: return "campaigning";
	default: return "lost";
	}
}

static int64_t etcd_term(const struct sched *s)
{
	return s->cluster->term;
}

static void etcd_leader_of(const struct sched *s, const char **name,
			   const char **listen, const char **sock)
{
	*name = s->cluster->leader_name;
	*listen = s->cluster->leader_listen;
	*sock = s->cluster->leader_sock;
}

const struct sched_cluster_ops sched_cluster_etcd = {
	.kind = "etcd",
	.start = etcd_start,
	.tick = etcd_tick,
	.stop = etcd_stop,
	.stopping = etcd_stopping,
	.abort = etcd_abort,
	.acting = etcd_acting,
	.publishes = etcd_publishes,
	.role = etcd_role,
	.term = etcd_term,
	.leader = etcd_leader_of,
	.journal = sched__cluster_journal,
	.journal_stop = sched__cluster_journal_stop,
	.journal_flush = sched__cluster_journal_flush,
	.journal_flushed = sched__cluster_journal_flushed,
	.render = sched__cluster_render,
	.shared = 1,
};

/* ============================================ following the leader */

static struct sched_function *function_of(struct sched *s, const char *t,
					  const char *ns, const char *fn)
{
	struct sched_obj *o = sched_child(&s->root, t);

	o = o ? sched_child(o, ns) : NULL;
	o = o ? sched_child(o, fn) : NULL;
	return o && o->type == SCHED_FUNCTION ? (struct sched_function *)o
					      : NULL;
}

static enum sched_instance_state state_of(const char *word)
{
	int i;

	for (i = 0; word != NULL && i <= SCHED_LOST; i++)
		if (strcmp(sched__state_word(i), word) == 0)
			return (enum sched_instance_state)i;
	return SCHED_LOST;
}

/* Moves `in` to worker `w` (NULL: none) in this controller's model only. */
static void follow_assignment(struct sched *s, struct sched_instance *in,
			      struct sched_worker *w)
{
	struct rt_buf name = { 0 };

	if (in->worker == w)
		return;
	sched__unassign_model(s, in);
	if (w == NULL || sched_assignment_name(in, &name) < 0 ||
	    rt_map_put(&w->assignments, name.data, in) < 0) {
		rt_buf_free(&name);
		return;
	}
	rt_buf_free(&name);
	in->worker = w;
	in->reserved_mb = sched__fn_of(in)->spec.memory;
	w->used_mb += in->reserved_mb;
}

static void follow_instance(struct sched *s, const struct store_instance *r,
			    int deleted)
{
	struct sched_function *fn = function_of(s, r->tenant, r->ns, r->fn);
	struct sched_instance *in;
	struct sched_obj *w;
	char name[16];

	if (fn == NULL)
		return;
	snprintf(name, sizeof(name), "%d", r->n);
	in = (struct sched_instance *)sched_child(&fn->obj, name);
	if (deleted) {
		if (in != NULL) {
			sched__unassign_model(s, in);
			sched__obj_drop(s, &in->obj);
		}
		return;
	}
	if (in == NULL)
		in = sched__instance_new(s, fn, r->n, r->desired_run);
	if (in == NULL)
		return;
	in->desired_run = r->desired_run;
	in->epoch = r->epoch;
	w = r->worker ? sched_child(&s->pool, r->worker) : NULL;
	follow_assignment(s, in, (struct sched_worker *)w);
	sched__instance_restore(
		in, r->state ? state_of(r->state)
			     : (in->worker ? SCHED_LOST : SCHED_PENDING));
	in->pid = r->pid;
	/* What the leader knows of its process (0 from an older one). */
	in->revision = r->revision;
	in->started_ms = r->started_ms;
	in->restarts_total = r->restarts;
	snprintf(in->last_exit, sizeof(in->last_exit), "%s",
		 r->last_exit ? r->last_exit : "");
	snprintf(in->reason, sizeof(in->reason), "as the leader (%s) says",
		 s->cluster->leader_name ? s->cluster->leader_name
					 : "none now");
}

/* Sets `*words` to the words of JSON array `text`; kept on a failure. */
static void replace_words(char **words, const char *text)
{
	json_t *a = text ? json_loads(text, 0, NULL) : NULL;
	char *v = sched__words_of_json(a);

	json_decref(a);
	if (v == NULL)
		return;
	free(*words);
	*words = v;
}

static void follow_worker(struct sched *s, const struct store_worker *r,
			  int deleted)
{
	struct sched_obj *o = sched_child(&s->pool, r->id);
	struct sched_worker *w = (struct sched_worker *)o;
	int64_t now = rt_now_ms();

	if (deleted) {
		if (w != NULL && w->assignments.count == 0 && !w->online)
			sched__obj_drop(s, o);
		return;
	}
	if (o == NULL)
		o = sched__obj_new(s, SCHED_WORKER, &s->pool, r->id, now, now);
	if (o == NULL)
		return;
	w = (struct sched_worker *)o;
	w->memory_mb = r->memory_mb;
	w->local = r->local;
	w->draining = r->drained;
	w->since_ms = now;
	replace_words(&w->tags, r->tags);
	replace_words(&w->namespaces, r->namespaces);
	/* What the leader sees of it (nothing from an older leader). */
	/* Only a follower is told: a leader shows its own. */
	assert(!s->cluster->leading);
	snprintf(w->view, sizeof(w->view), "%s", r->state ? r->state : "");
	w->view_pid = r->state ? r->pid : 0;
	w->view_since_ms = r->state ? r->since_ms : 0;
}

void sched__leader_derived(void *arg, const struct etcd_keys_rec *r,
			   int deleted)
{
	struct sched *s = arg;

	assert(s->cluster->ops == &sched_cluster_etcd);
	if (s->cluster->leading)
		return; /* its own writes */
	switch (r->kind) {
	case ETCD_KEYS_INSTANCE:
		follow_instance(s, &r->instance, deleted);
		break;
	case ETCD_KEYS_WORKER: follow_worker(s, &r->worker, deleted); break;
	case ETCD_KEYS_SETTING:
		sched__quota_setting_changed(s, r->key);
		if (!deleted && strcmp(r->key, "strategy") == 0 &&
		    sched_strategy_parse(r->value, strlen(r->value)) >= 0)
			s->strategy = sched_strategy_parse(r->value,
							   strlen(r->value));
		break;
	default: break;
	}
}

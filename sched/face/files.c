/*
 * files.c - the files of functions and instances: state and restart
 * (what is wanted, stored before anything changes, then acted on),
 * status, stats, pid, and logs (asked of the workers).
 *
 * The rest of what concerns instances lives in the modules below:
 * reconcile.c (the decision carried out), assign.c (assignments and
 * placement), orders.c (messages to workers), reports.c (what workers
 * report), drain.c (drain, resume, rebalance).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "../model/instances.h"
#include "../model/invariants.h"
#include "../act/orders.h"
#include "../act/reconcile.h"
#include "../workers/requests.h"
#include "workers.h"

static const char *desired_word(const struct sched_instance *in)
{
	return in->desired_run ? "start" : "stop";
}

static int render_instance(struct sched_instance *in, enum sched_file f,
			   struct rt_buf *out)
{
	int64_t now = rt_now_ms();

	switch (f) {
	case SCHED_INST_STATE:
		return rt_buf_printf(out, "%s\n", sched__state_word(in->state));
	case SCHED_INST_PID:
		return in->pid > 0 ? rt_buf_printf(out, "%d\n", in->pid) : 0;
	case SCHED_INST_STATUS:
		rt_buf_printf(out,
			      "state %s\ndesired %s\nworker %s\npid %d\n"
			      "revision %llu\nepoch %llu\nstarted_ms %lld\n"
			      "restarts %lld\nslots %d\nbusy_slots %d\n"
			      "last_exit %s\n",
			      sched__state_word(in->state), desired_word(in),
			      in->worker ? in->worker->obj.name : "-", in->pid,
			      (unsigned long long)in->revision,
			      (unsigned long long)in->epoch,
			      (long long)in->started_ms, in->restarts_total,
			      sched_spec_slots(&sched__fn_of(in)->spec),
			      in->busy, in->last_exit[0] ? in->last_exit : "-");
		if (in->exits)
			rt_buf_puts(out, in->exits);
		return rt_buf_printf(out, "reason %s\n",
				     in->reason[0] ? in->reason : "-");
	case SCHED_INST_STATS:
		sched__instance_call_stats(NULL, in, out);
		return rt_buf_printf(
			out,
			"pid %d\nuptime_ms %lld\ncpu_seconds %.3f\n"
			"rss_bytes %lld\nrestarts_total %lld\n"
			"direct_calls_total %lld\n",
			in->pid,
			in->pid > 0 && in->started_ms > 0
				? (long long)(now - in->started_ms)
				: 0LL,
			in->pid > 0 ? in->cpu_seconds : 0.0,
			in->pid > 0 ? in->rss_bytes : 0LL, in->restarts_total,
			in->direct_calls);
	default: return -EINVAL;
	}
}

static int render_function(struct sched_function *fn, enum sched_file f,
			   struct rt_buf *out)
{
	int nrun, nwant, npend, nfail, i, busy = 0;
	const char *st = sched__function_states(fn, &nrun, &nwant, &npend,
						&nfail);
	struct sched_collect c;

	if (f == SCHED_FN_STATE)
		return rt_buf_printf(out, "%s\n", st);
	c = sched__instances_of(fn);
	for (i = 0; i < c.n; i++)
		busy += c.v[i]->busy;
	rt_buf_printf(out,
		      "state %s\ninstances %d\nwanted %d\nrunning %d\n"
		      "pending %d\nfailed %d\nrevision %llu\nslots %d\n"
		      "busy_slots %d\n",
		      st, c.n, nwant, nrun, npend, nfail,
		      (unsigned long long)fn->revision,
		      nrun * sched_spec_slots(&fn->spec), busy);
	for (i = 0; i < c.n; i++) {
		struct sched_instance *in = c.v[i];

		rt_buf_printf(out, "instance_%d %s %s %d busy %d/%d\n", in->n,
			      sched__state_word(in->state),
			      in->worker ? in->worker->obj.name : "-", in->pid,
			      in->busy, sched_spec_slots(&fn->spec));
	}
	free(c.v);
	return 0;
}

/* Parses "start" or "stop" (one trailing newline allowed). */
static int parse_state_word(const char *buf, size_t len, int *run)
{
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 5 && memcmp(buf, "start", 5) == 0)
		*run = 1;
	else if (len == 4 && memcmp(buf, "stop", 4) == 0)
		*run = 0;
	else
		return -EINVAL;
	return 0;
}

/* Stores that the instances `v` (`n` of them) want `run`, durably and
 * all or nothing, before anything changes in the model. Returns 0 or
 * -errno (EIO, ENOSPC). */
static int store_desired(struct sched *s, struct sched_instance **v, int n,
			 int run)
{
	int i, rc = store_begin(s->store);

	for (i = 0; rc == 0 && i < n; i++)
		if (v[i]->desired_run != run)
			rc = sched__store_put_as(s, v[i], run);
	if (rc == 0)
		return store_commit(s->store);
	store_rollback(s->store);
	return rc;
}

/* Rejects a bad write to a non-attribute file of a function. */
static int refuse(struct sched *s, struct sched_function *fn, const char *file,
		  const char *reason)
{
	sched__reject(s, fn, file, EINVAL, reason);
	return -EINVAL;
}

static int write_instances(struct sched *s, struct sched_obj *o,
			   enum sched_file f, const char *buf, size_t len,
			   struct sched_wait *wait)
{
	struct sched_function *fn = o->type == SCHED_INSTANCE
					    ? sched__fn_of((
						      struct sched_instance *)o)
					    : (struct sched_function *)o;
	int restart = f == SCHED_FN_RESTART || f == SCHED_INST_RESTART, run = 1,
	    i, began, rc, derived = 0;
	const char *file = restart ? "restart" : "state";
	struct sched_collect c;

	if (restart) {
		if (len > 0 && buf[len - 1] == '\n')
			len--;
		if (len != 1 || buf[0] != '1')
			return refuse(s, fn, file, "restart takes 1");
	} else if (parse_state_word(buf, len, &run) < 0) {
		return refuse(s, fn, file, "state takes start or stop");
	}
	if (o->type == SCHED_INSTANCE) {
		c.v = calloc(1, sizeof(*c.v));
		c.n = c.v != NULL;
		if (c.v == NULL)
			return -ENOMEM;
		c.v[0] = (struct sched_instance *)o;
	} else {
		c = sched__instances_of(fn);
	}
	/* What is wanted is stored first: a failure changes nothing. */
	rc = store_desired(s, c.v, c.n, restart ? 1 : run);
	if (rc < 0) {
		sched__reject(s, fn, file, -rc,
			      "the store could not be written");
		goto out;
	}
	/* What follows from it (assignments) is derived. */
	began = store_begin_derived(s->store) == 0;
	for (i = 0; i < c.n; i++) {
		int r;

		c.v[i]->desired_run = restart ? 1 : run;
		r = sched__act(s, c.v[i],
			       restart ? DECIDE_CMD_RESTART
			       : run   ? DECIDE_CMD_START
				       : DECIDE_CMD_STOP,
			       NULL, wait);
		derived = derived < 0 ? derived : r;
	}
	sched__derived_end(s, began, derived, fn->obj.name);
	sched__model_check(s);
out:
	free(c.v);
	return rc;
}

/* The bound of a start or restart of `o` (a function or an instance): a
 * start waits for its instances to be ready, which the worker says within
 * ready_timeout of their spawn, after the old process's stop grace. */
static int wait_bound(struct sched_obj *o)
{
	const struct sched_function *fn =
		o->type == SCHED_INSTANCE
			? sched__fn_of((struct sched_instance *)o)
			: (const struct sched_function *)o;
	long long ms = (long long)fn->spec.ready_timeout * 1000 +
		       SCHED_READY_MARGIN_MS;

	if (strcmp(sched_spec_ready(&fn->spec), "started") == 0 ||
	    ms < SCHED_WAIT_MS)
		return SCHED_WAIT_MS;
	return (int)ms;
}

int sched_file_write(struct sched *s, struct sched_obj *o, enum sched_file f,
		     const char *buf, size_t len, sched_done_fn done, void *arg,
		     struct sched_wait **wait)
{
	struct sched_wait *w;
	int rc;

	*wait = NULL;
	if (f == SCHED_POOL_SIZE || f == SCHED_POOL_STRATEGY ||
	    f == SCHED_POOL_REBALANCE || f == SCHED_WORKER_STATE)
		return sched__cluster_write(s, o, f, buf, len);
	if (f != SCHED_FN_STATE && f != SCHED_FN_RESTART &&
	    f != SCHED_INST_STATE && f != SCHED_INST_RESTART)
		return -EACCES;
	w = sched__wait_new(s, done, arg, wait_bound(o));
	if (w == NULL)
		return -ENOMEM;
	rc = write_instances(s, o, f, buf, len, w);
	if (rc < 0) {
		w->done = NULL;
		sched__wait_arm(s, w);
		return rc;
	}
	if (w->remaining == 0) {
		/* Nothing to wait for: done now. */
		w->done = NULL;
		sched__wait_arm(s, w);
		return 0;
	}
	*wait = w;
	return SCHED_LATER;
}

int sched_file_read(struct sched *s, struct sched_obj *o, enum sched_file f,
		    struct rt_buf *out, sched_done_fn done, void *arg,
		    struct sched_wait **wait)
{
	struct sched_wait *w;
	struct sched_collect c;
	int i;

	*wait = NULL;
	switch (f) {
	case SCHED_FN_STATE:
	case SCHED_FN_STATUS:
		return render_function((struct sched_function *)o, f, out);
	case SCHED_INST_STATE:
	case SCHED_INST_STATUS:
	case SCHED_INST_STATS:
	case SCHED_INST_PID:
		return render_instance((struct sched_instance *)o, f, out);
	case SCHED_FN_LOG:
	case SCHED_INST_LOG: break;
	case SCHED_FN_STATS:
	case SCHED_ROOT_STATUS:
	case SCHED_ROOT_STATS:
	case SCHED_ROOT_METRICS: return sched__calls_render(s, o, f, out);
	default: return sched__worker_render(s, o, f, out);
	}
	/* Logs live with the workers: ask them. */
	if (o->type == SCHED_INSTANCE) {
		c.v = calloc(1, sizeof(void *));
		c.n = c.v ? 1 : 0;
		if (c.v)
			c.v[0] = (struct sched_instance *)o;
	} else {
		c = sched__instances_of((struct sched_function *)o);
	}
	w = sched__wait_new(s, done, arg, SCHED_LOG_WAIT_MS);
	if (w == NULL) {
		free(c.v);
		return -ENOMEM;
	}
	w->out = out;
	w->nparts = c.n;
	w->parts = calloc((size_t)c.n + 1, sizeof(*w->parts));
	w->prefixes = calloc((size_t)c.n + 1, sizeof(char *));
	for (i = 0; i < c.n && w->parts && w->prefixes; i++) {
		struct sched_instance *in = c.v[i];
		struct sched_worker *lw;
		char *id;
		char pfx[16];

		if (o->type == SCHED_FUNCTION) {
			snprintf(pfx, sizeof(pfx), "%d: ", in->n);
			w->prefixes[i] = strdup(pfx);
		}
		lw = in->worker;
		if (lw == NULL && in->log_worker != NULL)
			/* Stopped: its last worker keeps its log. */
			lw = (struct sched_worker *)sched_child(&s->pool,
								in->log_worker);
		if (lw == NULL || !lw->online)
			continue;
		id = sched__instance_id(in);
		sched__request(s, lw,
			       json_pack("{s:s, s:s, s:i}", "type", "log",
					 "instance", id, "max", SCHED_LOG_TAIL),
			       w, i, in->obj.id);
		free(id);
	}
	free(c.v);
	if (w->remaining == 0) {
		/* No worker to ask: what there is, now. */
		w->done = NULL;
		sched__wait_arm(s, w);
		return 0;
	}
	*wait = w;
	return SCHED_LATER;
}

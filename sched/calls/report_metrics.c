/*
 * report_metrics.c - the root's metrics file (Prometheus text format),
 * rendered a family at a time through the cursor of report.c
 * (report_internal.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "report_internal.h"

/* =============================================================== metrics */

/* Appends a label value, escaped as the exposition format wants. */
static void label(struct text *t, const char *k, const char *v, int first)
{
	report__tprintf(t, "%s%s=\"", first ? "" : ",", k);
	while (*v) {
		size_t plain = strcspn(v, "\\\"\n");

		report__tappend(
			t, v, plain); /* a run that needs no escape, at once */
		v += plain;
		if (*v == '\0')
			break;
		if (*v == '\n')
			report__tput(t, "\\n");
		else
			report__tprintf(t, "\\%c", *v);
		v++;
	}
	report__tput(t, "\"");
}

static void fn_labels(struct text *t, const struct sched_function *fn)
{
	label(t, "tenant", fn->obj.parent->parent->name, 1);
	label(t, "namespace", fn->obj.parent->name, 0);
	label(t, "function", fn->obj.name, 0);
}

static void family(struct text *t, const char *name, const char *type,
		   const char *help)
{
	report__tprintf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
			type);
}

/* What a function or instance family shows. */
enum fig {
	F_RECEIVED,
	F_PROCESSED,
	F_USER,
	F_SYSTEM,
	F_TIMEOUTS,
	F_COLD,
	F_RESTARTS, /* this one and those below need the instances */
	F_QUEUE,
	F_INSTANCES,
	F_RUNNING,
	F_BUSY,
	F_BUSY_SLOTS,
	F_CPU,
	F_RSS,
	F_UP
};

struct family_def {
	const char *name, *type, *help;
	enum fig fig;
};

static const struct family_def fn_families[] = {
	{ "calls_received_total", "counter", "Calls received.", F_RECEIVED },
	{ "calls_processed_total", "counter", "Calls answered.", F_PROCESSED },
	{ "calls_user_errors_total", "counter",
	  "Calls the function answered with an error.", F_USER },
	{ "calls_system_errors_total", "counter",
	  "Calls that failed in fnfs: timeouts, crashes, full queues.",
	  F_SYSTEM },
	{ "calls_timeouts_total", "counter", "Calls that timed out.",
	  F_TIMEOUTS },
	{ "cold_starts_total", "counter",
	  "Processes started for waiting calls.", F_COLD },
	{ "restarts_total", "counter", "Restarts of instances.", F_RESTARTS },
	{ "queue_depth", "gauge", "Calls waiting for an instance.", F_QUEUE },
	{ "instances", "gauge", "Instances it has.", F_INSTANCES },
	{ "running_instances", "gauge", "Instances running.", F_RUNNING },
	{ "busy_instances", "gauge", "Instances serving a call.", F_BUSY },
	{ "busy_slots", "gauge", "Calls its instances serve.", F_BUSY_SLOTS },
	{ "cpu_seconds", "gauge",
	  "CPU time of the live processes (drops when one restarts).", F_CPU },
	{ "resident_memory_bytes", "gauge", "Resident memory of the instances.",
	  F_RSS },
};

static const struct family_def inst_families[] = {
	{ "up", "gauge", "Whether the instance is running.", F_UP },
	{ "calls_received_total", "counter", "Calls sent to the instance.",
	  F_RECEIVED },
	{ "calls_processed_total", "counter", "Calls answered.", F_PROCESSED },
	{ "calls_user_errors_total", "counter",
	  "Calls the function answered with an error.", F_USER },
	{ "calls_system_errors_total", "counter", "Calls that failed in fnfs.",
	  F_SYSTEM },
	{ "restarts_total", "counter", "Restarts.", F_RESTARTS },
	{ "busy", "gauge", "Whether it serves a call.", F_BUSY },
	{ "busy_slots", "gauge", "Calls it serves.", F_BUSY_SLOTS },
	{ "cpu_seconds", "gauge", "CPU time of its live process.", F_CPU },
	{ "resident_memory_bytes", "gauge", "Resident memory.", F_RSS },
};

static const char *const worker_families[][3] = {
	{ "fnfs_worker_up", "gauge", "Whether the worker is connected." },
	{ "fnfs_worker_memory_bytes", "gauge",
	  "Memory capacity of the worker." },
	{ "fnfs_worker_free_memory_bytes", "gauge",
	  "Memory not assigned to instances." },
	{ "fnfs_worker_instances", "gauge",
	  "Instances assigned to the worker." },
};

#define NFN	(sizeof(fn_families) / sizeof(fn_families[0]))
#define NINST	(sizeof(inst_families) / sizeof(inst_families[0]))
#define NWORKER (sizeof(worker_families) / sizeof(worker_families[0]))

/* The parts of metrics: a family each. Samples of a family stay
 * together, as the format requires. */
enum {
	P_FN = 0,		      /* + k: fn_families[k] */
	P_LATENCY = P_FN + NFN,	      /* the latency summary */
	P_INST = P_LATENCY + 1,	      /* + k: inst_families[k] */
	P_WORKER = P_INST + NINST,    /* + k: worker_families[k] */
	P_TOTAL = P_WORKER + NWORKER, /* fnfs_calls_received_total */
	P_QUOTA_USED,		      /* fnfs_tenant_quota_used */
	P_QUOTA_LIMIT,		      /* fnfs_tenant_quota_limit */
	P_METRICS_END
};

const int report__metrics_parts = P_METRICS_END;

static double fn_value(struct sched_function *fn, enum fig fig,
		       const struct figures *f)
{
	const struct sched_stats *st = report__stats_of(fn);

	switch (fig) {
	case F_RECEIVED: return (double)st->received;
	case F_PROCESSED: return (double)st->processed;
	case F_USER: return (double)st->user_errors;
	case F_SYSTEM: return (double)st->system_errors;
	case F_TIMEOUTS: return (double)st->timeouts;
	case F_COLD: return (double)st->cold_starts;
	case F_RESTARTS: return (double)f->restarts;
	case F_QUEUE: return report__queued(fn);
	case F_INSTANCES: return f->instances;
	case F_RUNNING: return f->running;
	case F_BUSY: return f->busy;
	case F_BUSY_SLOTS: return f->busy_slots;
	case F_CPU: return f->cpu;
	case F_RSS: return (double)f->rss;
	default: return 0;
	}
}

static double inst_value(const struct sched_instance *in, enum fig fig)
{
	static const struct sched_stats none;
	const struct sched_stats *st = in->stats ? in->stats : &none;
	int live = in->pid > 0;

	switch (fig) {
	case F_UP: return in->state == SCHED_RUNNING;
	case F_RECEIVED: return (double)st->received;
	case F_PROCESSED: return (double)st->processed;
	case F_USER: return (double)st->user_errors;
	case F_SYSTEM: return (double)st->system_errors;
	case F_RESTARTS: return (double)in->restarts_total;
	case F_BUSY: return in->busy > 0;
	case F_BUSY_SLOTS: return in->busy;
	case F_CPU: return live ? in->cpu_seconds : 0;
	case F_RSS: return live ? (double)in->rss_bytes : 0;
	default: return 0;
	}
}

static void inst_labels(struct text *t, const struct sched_instance *in)
{
	char n[16];

	fn_labels(t, (const struct sched_function *)in->obj.parent);
	snprintf(n, sizeof(n), "%d", in->n);
	label(t, "instance", n, 0);
	label(t, "worker", in->worker ? in->worker->obj.name : "", 0);
}

static void latency_summary(struct text *t, const struct sched_function *fn)
{
	static const char name[] = "fnfs_function_latency_seconds";
	static const double q[] = { 0.5, 0.99 };
	const struct sched_stats *st = report__stats_of(fn);
	size_t i;

	for (i = 0; i < 2; i++) {
		report__tprintf(t, "%s{", name);
		fn_labels(t, fn);
		report__tprintf(
			t, ",quantile=\"%g\"} %.6f\n", q[i],
			sched_hist_quantile(st->hist, st->latency_n, q[i]) /
				1000.0);
	}
	report__tprintf(t, "%s_sum{", name);
	fn_labels(t, fn);
	report__tprintf(t, "} %.6f\n%s_count{", (double)st->latency_us / 1e6,
			name);
	fn_labels(t, fn);
	report__tprintf(t, "} %llu\n", (unsigned long long)st->latency_n);
}

/* The lines of function `fn` in the function family `k`. */
static void fn_sample(struct text *t, struct sched_function *fn, size_t k)
{
	const struct family_def *d = &fn_families[k];
	struct figures f;

	memset(&f, 0, sizeof(f));
	if (d->fig >= F_RESTARTS)
		report__figures_of(fn, &f);
	report__tprintf(t, "fnfs_function_%s{", d->name);
	fn_labels(t, fn);
	report__tprintf(t, "} %.17g\n", fn_value(fn, d->fig, &f));
}

/* The lines of the instances of `fn` in the instance family `k`. */
static void inst_samples(struct text *t, struct sched_function *fn, size_t k)
{
	const struct family_def *d = &inst_families[k];
	int n, j;
	struct sched_instance **v = sched__instances_sorted(fn, &n);

	for (j = 0; j < n; j++) {
		report__tprintf(t, "fnfs_instance_%s{", d->name);
		inst_labels(t, v[j]);
		report__tprintf(t, "} %.17g\n", inst_value(v[j], d->fig));
	}
	free(v);
}

/* A family of workers, whole: a few lines a worker. */
static void worker_family(struct sched *s, struct text *t, size_t k)
{
	size_t i, nw;
	void **w = rt_map_values(&s->pool.children, &nw);
	const char *name = worker_families[k][0];

	for (i = 0; w != NULL && i < nw; i++) {
		struct sched_worker *x = w[i];
		double v = k == 0   ? x->online
			   : k == 1 ? (double)x->memory_mb * 1048576
			   : k == 2 ? (double)(x->memory_mb - x->used_mb) *
					      1048576
				    : (double)x->assignments.count;

		report__tprintf(t, "%s{", name);
		label(t, "worker", x->obj.name, 1);
		report__tprintf(t, "} %.17g\n", v);
	}
	free(w);
}

/* The calls received: by every function for root, by the functions of
 * the cursor for another caller. */
static uint64_t received_total(struct sched *s, const struct sched_cursor *c)
{
	uint64_t n = 0;
	size_t i;

	if (c->root)
		return s->calls_state.stats->received;
	for (i = 0; i < c->fns.n; i++) {
		struct sched_function *fn = report__fn_at(s, c, i);

		if (fn != NULL)
			n += report__stats_of(fn)->received;
	}
	return n;
}

/* The lines of the cursor's i-th tenant `o` in fnfs_tenant_quota_used
 * (`limit` 0) or fnfs_tenant_quota_limit (1; a limit of none is +Inf),
 * as at the open. */
static void quota_samples(const struct sched_cursor *c, size_t i,
			  struct text *t, struct sched_obj *o, int limit)
{
	int r;

	for (r = 0; r < SCHED_QUOTA_COUNT; r++) {
		const long long *v = c->quota[i][r];

		report__tprintf(t, "fnfs_tenant_quota_%s{",
				limit ? "limit" : "used");
		label(t, "tenant", o->name, 1);
		label(t, "resource", sched_quota_name(r), 0);
		if (v[limit] < 0)
			report__tput(t, "} +Inf\n");
		else
			report__tprintf(t, "} %lld\n", v[limit]);
	}
}

/* One step of metrics: a family's HELP and TYPE, or its lines for one
 * function or tenant, or a whole family of workers, or the total. */
void report__metrics_step(struct sched *s, struct sched_cursor *c,
			  struct text *t)
{
	size_t p = (size_t)c->part;
	struct sched_function *fn;
	char name[96];

	if (!c->begun) {
		if (p < P_LATENCY) {
			snprintf(name, sizeof(name), "fnfs_function_%s",
				 fn_families[p - P_FN].name);
			family(t, name, fn_families[p - P_FN].type,
			       fn_families[p - P_FN].help);
		} else if (p == P_LATENCY) {
			family(t, "fnfs_function_latency_seconds", "summary",
			       "Latency of answered calls, from receipt to "
			       "response.");
		} else if (p < P_WORKER) {
			snprintf(name, sizeof(name), "fnfs_instance_%s",
				 inst_families[p - P_INST].name);
			family(t, name, inst_families[p - P_INST].type,
			       inst_families[p - P_INST].help);
		} else if (p < P_TOTAL) {
			family(t, worker_families[p - P_WORKER][0],
			       worker_families[p - P_WORKER][1],
			       worker_families[p - P_WORKER][2]);
		} else if (p == P_TOTAL) {
			family(t, "fnfs_calls_received_total", "counter",
			       "Calls received by every function.");
		} else if (p == P_QUOTA_USED) {
			family(t, "fnfs_tenant_quota_used", "gauge",
			       "What a tenant holds against each quota: memory "
			       "in MB, code_bytes and request_bytes in bytes.");
		} else {
			family(t, "fnfs_tenant_quota_limit", "gauge",
			       "A tenant's limit of each quota (+Inf: none), "
			       "in the units of fnfs_tenant_quota_used.");
		}
		c->begun = 1;
		c->i = 0;
		return;
	}
	if (p >= P_QUOTA_USED) {
		struct sched_obj *o;

		if (c->i >= c->fns.tenants) {
			c->part++;
			c->begun = 0;
			return;
		}
		o = report__tenant_at(s, c, c->i);
		if (o != NULL)
			quota_samples(c, c->i, t, o, p == P_QUOTA_LIMIT);
		c->i++;
		return;
	}
	if (p >= P_WORKER) {
		if (p < P_TOTAL) {
			worker_family(s, t, p - P_WORKER);
		} else {
			report__tprintf(
				t, "fnfs_calls_received_total %llu\n",
				(unsigned long long)received_total(s, c));
		}
		c->part++;
		c->begun = 0;
		return;
	}
	if (c->i >= c->fns.n) {
		c->part++;
		c->begun = 0;
		return;
	}
	fn = report__fn_at(s, c, c->i++);
	if (fn == NULL)
		return;
	if (p < P_LATENCY)
		fn_sample(t, fn, p - P_FN);
	else if (p == P_LATENCY)
		latency_summary(t, fn);
	else
		inst_samples(t, fn, p - P_INST);
}

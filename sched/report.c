/*
 * report.c - what users read about calls and the whole mount: a
 * function's and an instance's stats, and the root files status (a
 * table), stats (totals) and metrics (Prometheus text format).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "instances.h"
#include "internal.h"

static const char *const mode_words[] = { "daemon", "hot", "cold" };

/* Figures of a function's instances. */
struct figures {
	int instances, running, busy;
	long long restarts;
	double cpu;
	long long rss;
};

static void figures_of(struct sched_function *fn, struct figures *f)
{
	int n, i;
	struct sched_instance **v = sched__instances_sorted(fn, &n);

	memset(f, 0, sizeof(*f));
	f->restarts = fn->restarts_gone; /* a counter never goes down */
	for (i = 0; i < n; i++) {
		f->instances++;
		f->running += v[i]->state == SCHED_RUNNING;
		f->busy += v[i]->call != NULL;
		f->restarts += v[i]->restarts_total;
		if (v[i]->pid > 0) {
			f->cpu += v[i]->cpu_seconds;
			f->rss += v[i]->rss_bytes;
		}
	}
	free(v);
}

static const struct sched_stats *stats_of(const struct sched_function *fn)
{
	static const struct sched_stats none;

	return fn->calls != NULL ? &fn->calls->stats : &none;
}

static int queued(const struct sched_function *fn)
{
	return fn->calls != NULL ? fn->calls->queued : 0;
}

static int render_fn_stats(struct sched_function *fn, struct rt_buf *out)
{
	struct sched_stats_view v;
	struct figures f;

	figures_of(fn, &f);
	sched_stats_view(stats_of(fn), rt_now_ms(), &v);
	sched_stats_render(&v, out);
	return rt_buf_printf(out,
			     "restarts_total %lld\nqueue_depth %d\n"
			     "instances %d\nrunning %d\nbusy %d\n"
			     "cpu_seconds %.3f\nrss_bytes %lld\n",
			     f.restarts, queued(fn), f.instances, f.running,
			     f.busy, f.cpu, f.rss);
}

int sched__instance_call_stats(struct sched *s, struct sched_instance *in,
			       struct rt_buf *out)
{
	static const struct sched_stats none;
	struct sched_stats_view v;

	(void)s;
	sched_stats_view(in->stats ? in->stats : &none, rt_now_ms(), &v);
	v.cold_starts += (uint64_t)in->on_demand;
	sched_stats_render(&v, out);
	return rt_buf_printf(out,
			     "queue_depth 0\ninstances 1\nrunning %d\n"
			     "busy %d\n",
			     in->state == SCHED_RUNNING, in->call != NULL);
}

/* ======================================================= all functions */

struct fn_list {
	struct sched_function **v;
	size_t n, cap;
};

static int add_fn(const char *key, void *value, void *arg)
{
	struct fn_list *l = arg;

	(void)key;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		void *p = realloc(l->v, cap * sizeof(*l->v));

		if (p == NULL)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = value;
	return 0;
}

static int each_ns(const char *key, void *value, void *arg)
{
	(void)key;
	return rt_map_each(&((struct sched_obj *)value)->children, add_fn, arg);
}

static int each_tenant(const char *key, void *value, void *arg)
{
	(void)key;
	return rt_map_each(&((struct sched_obj *)value)->children, each_ns,
			   arg);
}

static int by_path(const void *a, const void *b)
{
	const struct sched_obj *x = *(struct sched_obj *const *)a;
	const struct sched_obj *y = *(struct sched_obj *const *)b;
	int c = strcmp(x->parent->parent->name, y->parent->parent->name);

	if (c == 0)
		c = strcmp(x->parent->name, y->parent->name);
	return c != 0 ? c : strcmp(x->name, y->name);
}

/* Every function, in order of its path. Free `v`. */
static struct fn_list functions(struct sched *s)
{
	struct fn_list l = { 0 };

	rt_map_each(&s->root.children, each_tenant, &l);
	if (l.n > 0)
		qsort(l.v, l.n, sizeof(*l.v), by_path);
	return l;
}

/* ================================================================ status */

static int render_status(struct sched *s, struct rt_buf *out)
{
	static const char *const head[] = {
		"FUNCTION", "MODE",	"STATE",  "RUNNING/WANTED", "REVISION",
		"CALLS/S",  "ERRORS/S", "P99_MS", "RESTARTS"
	};
	enum { NCOL = 9 };
	struct fn_list l = functions(s);
	char **cells = calloc((l.n + 1) * NCOL, sizeof(char *));
	size_t width[NCOL], i, k;
	int64_t now = rt_now_ms();
	int rc = 0;

	if (cells == NULL) {
		free(l.v);
		return -ENOMEM;
	}
	for (k = 0; k < NCOL; k++) {
		cells[k] = strdup(head[k]);
		width[k] = strlen(head[k]);
	}
	for (i = 0; i < l.n; i++) {
		struct sched_function *fn = l.v[i];
		struct sched_stats_view v;
		struct figures f;
		struct rt_buf path = { 0 };
		char **row = &cells[(i + 1) * NCOL];
		int nrun, nwant;
		const char *st = sched__function_state(fn, &nrun, &nwant);

		figures_of(fn, &f);
		sched_stats_view(stats_of(fn), now, &v);
		sched_obj_path(&fn->obj, &path);
		row[0] = path.data;
		row[1] = strdup(mode_words[fn->spec.mode]);
		row[2] = strdup(st);
		if (asprintf(&row[3], "%d/%d", nrun, nwant) < 0)
			row[3] = NULL;
		if (asprintf(&row[4], "%llu",
			     (unsigned long long)fn->revision) < 0)
			row[4] = NULL;
		if (asprintf(&row[5], "%.2f",
			     (double)v.received_1min / SCHED_WINDOW_S) < 0)
			row[5] = NULL;
		if (asprintf(&row[6], "%.2f",
			     (double)(v.user_errors_1min +
				      v.system_errors_1min) /
				     SCHED_WINDOW_S) < 0)
			row[6] = NULL;
		if (asprintf(&row[7], "%.3f", v.latency_p99_ms) < 0)
			row[7] = NULL;
		if (asprintf(&row[8], "%lld", f.restarts) < 0)
			row[8] = NULL;
		for (k = 0; k < NCOL; k++) {
			if (row[k] == NULL)
				rc = -ENOMEM;
			else if (strlen(row[k]) > width[k])
				width[k] = strlen(row[k]);
		}
	}
	for (i = 0; rc == 0 && i <= l.n; i++) {
		char **row = &cells[i * NCOL];

		/* Aligned columns, two blanks apart, none after the last. */
		for (k = 0; k + 1 < NCOL; k++)
			rt_buf_printf(out, "%-*s  ", (int)width[k], row[k]);
		rt_buf_printf(out, "%s\n", row[NCOL - 1]);
	}
	for (i = 0; i < (l.n + 1) * NCOL; i++)
		free(cells[i]);
	free(cells);
	free(l.v);
	return rc;
}

/* ================================================================= stats */

static int count_children(const char *key, void *value, void *arg)
{
	(void)key;
	*(size_t *)arg += ((struct sched_obj *)value)->children.count;
	return 0;
}

static int render_stats(struct sched *s, struct rt_buf *out)
{
	struct fn_list l = functions(s);
	struct sched_stats_view v;
	size_t i, namespaces = 0, online = 0, n;
	long long restarts = 0;
	int instances = 0, running = 0, queue = 0;
	void **w = rt_map_values(&s->pool.children, &n);

	rt_map_each(&s->root.children, count_children, &namespaces);
	for (i = 0; i < l.n; i++) {
		struct figures f;

		figures_of(l.v[i], &f);
		instances += f.instances;
		running += f.running;
		restarts += f.restarts;
		queue += queued(l.v[i]);
	}
	for (i = 0; w != NULL && i < n; i++)
		online += ((struct sched_worker *)w[i])->online != 0;
	free(w);
	rt_buf_printf(out,
		      "tenants %zu\nnamespaces %zu\nfunctions %zu\n"
		      "instances %d\nrunning %d\nworkers %zu\n"
		      "workers_online %zu\n",
		      s->root.children.count, namespaces, l.n, instances,
		      running, s->pool.children.count, online);
	sched_stats_view(s->stats, rt_now_ms(), &v);
	sched_stats_render(&v, out);
	free(l.v);
	return rt_buf_printf(out, "restarts_total %lld\nqueue_depth %d\n",
			     restarts, queue);
}

/* =============================================================== metrics */

/* Appends a label value, escaped as the exposition format wants. */
static void label(struct rt_buf *out, const char *k, const char *v, int first)
{
	rt_buf_printf(out, "%s%s=\"", first ? "" : ",", k);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			rt_buf_printf(out, "\\%c", *v);
		else if (*v == '\n')
			rt_buf_puts(out, "\\n");
		else
			rt_buf_append(out, v, 1);
	}
	rt_buf_puts(out, "\"");
}

static void fn_labels(struct rt_buf *out, const struct sched_function *fn)
{
	label(out, "tenant", fn->obj.parent->parent->name, 1);
	label(out, "namespace", fn->obj.parent->name, 0);
	label(out, "function", fn->obj.name, 0);
}

static void family(struct rt_buf *out, const char *name, const char *type,
		   const char *help)
{
	rt_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
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
	F_RESTARTS,
	F_QUEUE,
	F_INSTANCES,
	F_RUNNING,
	F_BUSY,
	F_CPU,
	F_RSS,
	F_UP
};

static const struct {
	const char *name, *type, *help;
	enum fig fig;
} fn_families[] = {
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
	{ "cpu_seconds", "gauge",
	  "CPU time of the live processes (drops when one restarts).", F_CPU },
	{ "resident_memory_bytes", "gauge", "Resident memory of the instances.",
	  F_RSS },
};

static double fn_value(struct sched_function *fn, enum fig fig,
		       const struct figures *f)
{
	const struct sched_stats *st = stats_of(fn);

	switch (fig) {
	case F_RECEIVED: return (double)st->received;
	case F_PROCESSED: return (double)st->processed;
	case F_USER: return (double)st->user_errors;
	case F_SYSTEM: return (double)st->system_errors;
	case F_TIMEOUTS: return (double)st->timeouts;
	case F_COLD: return (double)st->cold_starts;
	case F_RESTARTS: return (double)f->restarts;
	case F_QUEUE: return queued(fn);
	case F_INSTANCES: return f->instances;
	case F_RUNNING: return f->running;
	case F_BUSY: return f->busy;
	case F_CPU: return f->cpu;
	case F_RSS: return (double)f->rss;
	default: return 0;
	}
}

static void latency_summary(struct rt_buf *out, const char *name,
			    const struct sched_stats *st,
			    void (*labels)(struct rt_buf *, const void *),
			    const void *obj)
{
	static const double q[] = { 0.5, 0.99 };
	size_t i;

	for (i = 0; i < 2; i++) {
		rt_buf_printf(out, "%s{", name);
		labels(out, obj);
		rt_buf_printf(
			out, ",quantile=\"%g\"} %.6f\n", q[i],
			sched_hist_quantile(st->hist, st->latency_n, q[i]) /
				1000.0);
	}
	rt_buf_printf(out, "%s_sum{", name);
	labels(out, obj);
	rt_buf_printf(out, "} %.6f\n%s_count{", (double)st->latency_us / 1e6,
		      name);
	labels(out, obj);
	rt_buf_printf(out, "} %llu\n", (unsigned long long)st->latency_n);
}

static void fn_labels_cb(struct rt_buf *out, const void *fn)
{
	fn_labels(out, fn);
}

static void inst_labels(struct rt_buf *out, const void *p)
{
	const struct sched_instance *in = p;
	char n[16];

	fn_labels(out, (const struct sched_function *)in->obj.parent);
	snprintf(n, sizeof(n), "%d", in->n);
	label(out, "instance", n, 0);
	label(out, "worker", in->worker ? in->worker->obj.name : "", 0);
}

static const struct {
	const char *name, *type, *help;
	enum fig fig;
} inst_families[] = {
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
	{ "cpu_seconds", "gauge", "CPU time of its live process.", F_CPU },
	{ "resident_memory_bytes", "gauge", "Resident memory.", F_RSS },
};

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
	case F_BUSY: return in->call != NULL;
	case F_CPU: return live ? in->cpu_seconds : 0;
	case F_RSS: return live ? (double)in->rss_bytes : 0;
	default: return 0;
	}
}

static int render_metrics(struct sched *s, struct rt_buf *out)
{
	struct fn_list l = functions(s);
	struct figures *figs = calloc(l.n + 1, sizeof(*figs));
	struct sched_instance ***insts = calloc(l.n + 1, sizeof(*insts));
	int *ninsts = calloc(l.n + 1, sizeof(int));
	size_t i, k, nw;
	void **w;
	int j;
	char name[96];

	if (figs == NULL || insts == NULL || ninsts == NULL) {
		free(figs);
		free(insts);
		free(ninsts);
		free(l.v);
		return -ENOMEM;
	}
	for (i = 0; i < l.n; i++) {
		figures_of(l.v[i], &figs[i]);
		insts[i] = sched__instances_sorted(l.v[i], &ninsts[i]);
	}
	/* Samples of a family stay together, as the format requires. */
	for (k = 0; k < sizeof(fn_families) / sizeof(fn_families[0]); k++) {
		snprintf(name, sizeof(name), "fnfs_function_%s",
			 fn_families[k].name);
		family(out, name, fn_families[k].type, fn_families[k].help);
		for (i = 0; i < l.n; i++) {
			rt_buf_printf(out, "%s{", name);
			fn_labels(out, l.v[i]);
			rt_buf_printf(
				out, "} %.17g\n",
				fn_value(l.v[i], fn_families[k].fig, &figs[i]));
		}
	}
	family(out, "fnfs_function_latency_seconds", "summary",
	       "Latency of answered calls, from receipt to response.");
	for (i = 0; i < l.n; i++)
		latency_summary(out, "fnfs_function_latency_seconds",
				stats_of(l.v[i]), fn_labels_cb, l.v[i]);
	for (k = 0; k < sizeof(inst_families) / sizeof(inst_families[0]); k++) {
		snprintf(name, sizeof(name), "fnfs_instance_%s",
			 inst_families[k].name);
		family(out, name, inst_families[k].type, inst_families[k].help);
		for (i = 0; i < l.n; i++)
			for (j = 0; j < ninsts[i]; j++) {
				rt_buf_printf(out, "%s{", name);
				inst_labels(out, insts[i][j]);
				rt_buf_printf(out, "} %.17g\n",
					      inst_value(insts[i][j],
							 inst_families[k].fig));
			}
	}
	w = rt_map_values(&s->pool.children, &nw);
	{
		static const char *const wf[][3] = {
			{ "fnfs_worker_up", "gauge",
			  "Whether the worker is connected." },
			{ "fnfs_worker_memory_bytes", "gauge",
			  "Memory capacity of the worker." },
			{ "fnfs_worker_free_memory_bytes", "gauge",
			  "Memory not assigned to instances." },
			{ "fnfs_worker_instances", "gauge",
			  "Instances assigned to the worker." },
		};

		for (k = 0; k < 4; k++) {
			family(out, wf[k][0], wf[k][1], wf[k][2]);
			for (i = 0; w != NULL && i < nw; i++) {
				struct sched_worker *x = w[i];
				double v =
					k == 0 ? x->online
					: k == 1
						? (double)x->memory_mb * 1048576
					: k == 2 ? (double)(x->memory_mb -
							    x->used_mb) *
							   1048576
						 : (double)x->assignments.count;

				rt_buf_printf(out, "%s{", wf[k][0]);
				label(out, "worker", x->obj.name, 1);
				rt_buf_printf(out, "} %.17g\n", v);
			}
		}
	}
	free(w);
	{
		struct sched_stats_view v;

		sched_stats_view(s->stats, rt_now_ms(), &v);
		family(out, "fnfs_calls_received_total", "counter",
		       "Calls received by every function.");
		rt_buf_printf(out, "fnfs_calls_received_total %llu\n",
			      (unsigned long long)v.received);
	}
	for (i = 0; i < l.n; i++)
		free(insts[i]);
	free(insts);
	free(ninsts);
	free(figs);
	free(l.v);
	return 0;
}

int sched__calls_render(struct sched *s, struct sched_obj *o, enum sched_file f,
			struct rt_buf *out)
{
	switch (f) {
	case SCHED_FN_STATS:
		return render_fn_stats((struct sched_function *)o, out);
	case SCHED_ROOT_STATUS: return render_status(s, out);
	case SCHED_ROOT_STATS: return render_stats(s, out);
	case SCHED_ROOT_METRICS: return render_metrics(s, out);
	default: return -EINVAL;
	}
}

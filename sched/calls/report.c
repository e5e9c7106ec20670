/*
 * report.c - what users read about calls and the whole mount: a
 * function's and an instance's stats, and the root files status (a
 * table), stats (totals) and metrics (Prometheus text format). status
 * and metrics grow with the functions, so they are rendered through a
 * cursor, a piece at a time, as a reader reaches them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "../model/instances.h"
#include "../internal.h"
#include "../model/owners.h"
#include "../model/quota.h"

static const char *const mode_words[] = { "daemon", "hot", "cold" };

/* Figures of a function's instances. */
struct figures {
	int instances, running, busy;
	int slots, busy_slots; /* of its running instances; calls served */
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
		f->busy += v[i]->busy > 0;
		f->busy_slots += v[i]->busy;
		if (v[i]->state == SCHED_RUNNING)
			f->slots += sched_spec_slots(&fn->spec);
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
			     "slots %d\nbusy_slots %d\n"
			     "cpu_seconds %.3f\nrss_bytes %lld\n",
			     f.restarts, queued(fn), f.instances, f.running,
			     f.busy, f.slots, f.busy_slots, f.cpu, f.rss);
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
			     "queue_depth 0\ninstances 1\nrunning %d\nbusy %d\n"
			     "slots %d\nbusy_slots %d\n",
			     in->state == SCHED_RUNNING, in->busy > 0,
			     in->state == SCHED_RUNNING
				     ? sched_spec_slots(&sched__fn_of(in)->spec)
				     : 0,
			     in->busy);
}

/* ======================================================= text and lists */

/* Text being rendered, and the first error of appending to it. */
struct text {
	struct rt_buf *b;
	int err;
};

static void tput(struct text *t, const char *s)
{
	if (t->err == 0)
		t->err = rt_buf_puts(t->b, s);
}

static void tappend(struct text *t, const char *p, size_t n)
{
	if (t->err == 0)
		t->err = rt_buf_append(t->b, p, n);
}

__attribute__((format(printf, 2, 3))) static void tprintf(struct text *t,
							  const char *fmt, ...)
{
	va_list ap;

	if (t->err != 0)
		return;
	va_start(ap, fmt);
	t->err = rt_buf_vprintf(t->b, fmt, ap);
	va_end(ap);
}

/* The functions of a walk, by id: an id outlives its function, so one
 * removed while a reader is in the middle of a file is found missing,
 * not freed. With them, the tenants and namespaces they were taken
 * from (for stats), and those tenants by id, in order of name (for
 * their quotas). */
struct fn_list {
	uint64_t *ids;
	size_t n;
	size_t tenants, namespaces;
	uint64_t *tids; /* `tenants` of them */
};

static int count_fns(const char *key, void *value, void *arg)
{
	(void)key;
	*(size_t *)arg += ((struct sched_obj *)value)->children.count;
	return 0;
}

static int count_ns_fns(const char *key, void *value, void *arg)
{
	(void)key;
	return rt_map_each(&((struct sched_obj *)value)->children, count_fns,
			   arg);
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct sched_obj *const *)a)->name,
		      (*(struct sched_obj *const *)b)->name);
}

/* The children of `o` in order of name, in `*v` (to free). Returns 0 or
 * -ENOMEM. */
static int sorted_children(const struct sched_obj *o, struct sched_obj ***v,
			   size_t *n)
{
	*v = (struct sched_obj **)rt_map_values(&o->children, n);
	if (*v == NULL)
		return -ENOMEM;
	if (*n > 1)
		qsort(*v, *n, sizeof(**v), by_name);
	return 0;
}

/* Whether `who` may read tenant `t` (and so see it in the root's
 * files). */
static int may_read(const struct sched_obj *t, const struct sched_caller *who)
{
	const struct sched_owner *w = &((const struct sched_tenant *)t)->owner;

	return sched_caller_may(who, w->uid, w->gid, w->mode, SCHED_MAY_READ);
}

/* Every function of the tenants `who` may read, in order of its path
 * (8 bytes a function): tenants, then namespaces, then functions, each
 * level sorted by name, which is cheaper than sorting every path against
 * every other. Returns 0 or -ENOMEM. */
static int functions_by_path(struct sched *s, const struct sched_caller *who,
			     struct fn_list *l)
{
	struct sched_obj **t = NULL, **ns, **fn;
	size_t nt = 0, nn, nf, i, j, k, total = 0;
	int rc;

	memset(l, 0, sizeof(*l));
	rt_map_each(&s->root.children, count_ns_fns, &total);
	l->ids = malloc((total + 1) * sizeof(*l->ids));
	l->tids = malloc((s->root.children.count + 1) * sizeof(*l->tids));
	rc = l->ids != NULL && l->tids != NULL
		     ? sorted_children(&s->root, &t, &nt)
		     : -ENOMEM;
	for (i = 0; rc == 0 && i < nt; i++) {
		if (!may_read(t[i], who))
			continue;
		l->tids[l->tenants++] = t[i]->id;
		l->namespaces += t[i]->children.count;
		rc = sorted_children(t[i], &ns, &nn);
		for (j = 0; rc == 0 && j < nn; j++) {
			rc = sorted_children(ns[j], &fn, &nf);
			for (k = 0; rc == 0 && k < nf && l->n < total; k++)
				l->ids[l->n++] = fn[k]->id;
			free(fn); /* NULL when it failed */
		}
		free(ns);
	}
	free(t);
	if (rc < 0) {
		free(l->ids);
		free(l->tids);
		memset(l, 0, sizeof(*l));
	}
	return rc;
}

/* ============================================================ cursors */

/* The table of `status`: its columns. */
enum { NCOL = 9 };
/* A cell holds at most a path (three names of 63 bytes) or a number. */
#define CELL_MAX 200

/* The parts of a rendering, in order: status is a header and rows;
 * metrics is a family after another (see metrics_step); stats is its
 * totals, then the quotas of its tenants, a tenant a step. */
enum { P_STATUS_HEAD, P_STATUS_ROWS, P_STATUS_END };
enum { P_STATS, P_STATS_QUOTA, P_STATS_END };

struct sched_cursor {
	enum sched_file f;
	int root;	    /* opened for root: every tenant, every call */
	struct fn_list fns; /* the functions to show, by id */
	int part;	    /* the part of the file reached */
	int begun;	    /* its opening lines (a family's HELP) are out */
	size_t i;	    /* the next function (or tenant) of the part */
	size_t width[NCOL]; /* status: the widths of its columns */
	size_t size;	    /* status: its size at the open */
	/* stats, metrics: each tenant's use and limit of each quota at the
	 * open ([tenant][resource][0: used, 1: limit]), so that a use and
	 * its limit are of one instant. */
	long long (*quota)[SCHED_QUOTA_COUNT][2];
};

/* The i-th function of the walk, or NULL if it has been removed. */
static struct sched_function *fn_at(struct sched *s,
				    const struct sched_cursor *c, size_t i)
{
	struct sched_obj *o = sched_find(s, c->fns.ids[i]);

	return o != NULL && o->type == SCHED_FUNCTION
		       ? (struct sched_function *)o
		       : NULL;
}

/* Takes the use and limits of the cursor's tenants now. Returns 0 or
 * -ENOMEM. */
static int quota_snapshot(struct sched *s, struct sched_cursor *c)
{
	size_t i;
	int r;

	c->quota = calloc(c->fns.tenants + 1, sizeof(*c->quota));
	if (c->quota == NULL)
		return -ENOMEM;
	for (i = 0; i < c->fns.tenants; i++) {
		struct sched_obj *o = sched_find(s, c->fns.tids[i]);

		for (r = 0; r < SCHED_QUOTA_COUNT; r++)
			if (o == NULL ||
			    sched_quota_get(s, o, r, &c->quota[i][r][0],
					    &c->quota[i][r][1]) < 0)
				c->quota[i][r][0] = c->quota[i][r][1] = 0;
	}
	return 0;
}

/* The i-th tenant of the walk, or NULL if it has been removed. */
static struct sched_obj *tenant_at(struct sched *s,
				   const struct sched_cursor *c, size_t i)
{
	struct sched_obj *o = sched_find(s, c->fns.tids[i]);

	return o != NULL && o->type == SCHED_TENANT ? o : NULL;
}

/* ================================================================ status */

static const char *const status_head[NCOL] = {
	"FUNCTION", "MODE",	"STATE",  "RUNNING/WANTED", "REVISION",
	"CALLS/S",  "ERRORS/S", "P99_MS", "RESTARTS"
};

/* The cells of a function's row of `status`, as it is now. */
static void status_cells(struct sched_function *fn, char cell[NCOL][CELL_MAX])
{
	const struct sched_obj *o = &fn->obj;
	struct sched_stats_view v;
	struct figures f;
	int nrun, nwant;
	const char *st = sched__function_state(fn, &nrun, &nwant);

	figures_of(fn, &f);
	sched_stats_view(stats_of(fn), rt_now_ms(), &v);
	snprintf(cell[0], CELL_MAX, "%s/%s/%s", o->parent->parent->name,
		 o->parent->name, o->name);
	snprintf(cell[1], CELL_MAX, "%s", mode_words[fn->spec.mode]);
	snprintf(cell[2], CELL_MAX, "%s", st);
	snprintf(cell[3], CELL_MAX, "%d/%d", nrun, nwant);
	snprintf(cell[4], CELL_MAX, "%llu", (unsigned long long)fn->revision);
	snprintf(cell[5], CELL_MAX, "%.2f",
		 (double)v.received_1min / SCHED_WINDOW_S);
	snprintf(cell[6], CELL_MAX, "%.2f",
		 (double)(v.user_errors_1min + v.system_errors_1min) /
			 SCHED_WINDOW_S);
	snprintf(cell[7], CELL_MAX, "%.3f", v.latency_p99_ms);
	snprintf(cell[8], CELL_MAX, "%lld", f.restarts);
}

/* Aligned columns, two blanks apart, none after the last. */
static void status_row(struct text *t, const struct sched_cursor *c,
		       const char *const *cell)
{
	size_t k;

	for (k = 0; k + 1 < NCOL; k++)
		tprintf(t, "%-*s  ", (int)c->width[k], cell[k]);
	tprintf(t, "%s\n", cell[NCOL - 1]);
}

/* The widths come from every row as it is at the open; a cell that has
 * grown since makes its row wider, never cut. The same pass gives the
 * size of the table as it is now: every line is the padded columns, two
 * blanks after each but the last, the last cell and a newline. */
static void status_widths(struct sched *s, struct sched_cursor *c)
{
	char cell[NCOL][CELL_MAX];
	size_t i, k, rows = 1, last = strlen(status_head[NCOL - 1]);

	for (k = 0; k < NCOL; k++)
		c->width[k] = strlen(status_head[k]);
	for (i = 0; i < c->fns.n; i++) {
		struct sched_function *fn = fn_at(s, c, i);

		if (fn == NULL)
			continue;
		status_cells(fn, cell);
		for (k = 0; k < NCOL; k++)
			if (strlen(cell[k]) > c->width[k])
				c->width[k] = strlen(cell[k]);
		rows++;
		last += strlen(cell[NCOL - 1]);
	}
	c->size = last + rows;
	for (k = 0; k + 1 < NCOL; k++)
		c->size += rows * (c->width[k] + 2);
}

static void status_step(struct sched *s, struct sched_cursor *c, struct text *t)
{
	char cell[NCOL][CELL_MAX];
	const char *row[NCOL];
	struct sched_function *fn;
	size_t k;

	if (c->part == P_STATUS_HEAD) {
		status_row(t, c, status_head);
		c->part = P_STATUS_ROWS;
		return;
	}
	if (c->i >= c->fns.n) {
		c->part = P_STATUS_END;
		return;
	}
	fn = fn_at(s, c, c->i++);
	if (fn == NULL)
		return;
	status_cells(fn, cell);
	for (k = 0; k < NCOL; k++)
		row[k] = cell[k];
	status_row(t, c, row);
}

/* ================================================================= stats */

/* Sums over every function, in no particular order. */
struct totals {
	size_t functions;
	int instances, running, queue;
	long long restarts;
};

static int add_fn_totals(const char *key, void *value, void *arg)
{
	struct totals *tot = arg;
	struct figures f;

	(void)key;
	figures_of(value, &f);
	tot->functions++;
	tot->instances += f.instances;
	tot->running += f.running;
	tot->restarts += f.restarts;
	tot->queue += queued(value);
	return 0;
}

static int ns_totals(const char *key, void *value, void *arg)
{
	(void)key;
	return rt_map_each(&((struct sched_obj *)value)->children,
			   add_fn_totals, arg);
}

static int tenant_totals(const char *key, void *value, void *arg)
{
	(void)key;
	return rt_map_each(&((struct sched_obj *)value)->children, ns_totals,
			   arg);
}

static int count_children(const char *key, void *value, void *arg)
{
	(void)key;
	*(size_t *)arg += ((struct sched_obj *)value)->children.count;
	return 0;
}

/* A cluster's controller: how far its tree follows etcd (nothing with
 * SQLite). etcd_stale is 1 while the watch is down (the tree may be
 * behind), etcd_stale_ms how long it has been. */
static int render_store(struct sched *s, struct rt_buf *out)
{
	int64_t rev, since;
	int watching;
	const char *ep, *err;

	const char *leader = NULL, *addr = NULL;

	if (store_shared_state(s->store, &rev, &watching, &since, &ep, &err) <
	    0)
		return 0;
	sched_leader(s, &leader, &addr);
	return rt_buf_printf(out,
			     "etcd_revision %lld\netcd_stale %d\n"
			     "etcd_stale_ms %lld\netcd_leader_writes_pending "
			     "%zu\ncluster_role %s\ncluster_leader %s\n"
			     "cluster_term %lld\nloop_held_max_ms %lld\n",
			     (long long)rev, !watching,
			     (long long)(watching ? 0 : rt_now_ms() - since),
			     store_mirror_pending(s->store), sched_role(s),
			     leader ? leader : "-", (long long)sched_cluster_term(s),
			     (long long)s->held_max_ms);
}

/* A few lines whatever the size of the tree: rendered whole. */
static int render_stats(struct sched *s, struct rt_buf *out)
{
	struct totals tot = { 0 };
	struct sched_stats_view v;
	size_t i, namespaces = 0, online = 0, n;
	void **w = rt_map_values(&s->pool.children, &n);
	int rc;

	rt_map_each(&s->root.children, count_children, &namespaces);
	rt_map_each(&s->root.children, tenant_totals, &tot);
	for (i = 0; w != NULL && i < n; i++)
		online += ((struct sched_worker *)w[i])->online != 0;
	free(w);
	rt_buf_printf(out,
		      "tenants %zu\nnamespaces %zu\nfunctions %zu\n"
		      "instances %d\nrunning %d\nworkers %zu\n"
		      "workers_online %zu\n",
		      s->root.children.count, namespaces, tot.functions,
		      tot.instances, tot.running, s->pool.children.count,
		      online);
	sched_stats_view(s->stats, rt_now_ms(), &v);
	sched_stats_render(&v, out);
	rc = rt_buf_printf(out, "restarts_total %lld\nqueue_depth %d\n",
			   tot.restarts, tot.queue);
	return rc < 0 ? rc : render_store(s, out);
}

/* Adds the counters of `src` to `dst`: totals, histogram, and the
 * seconds of the window (a newer second replaces an older one in the
 * same slot). */
static void stats_add(struct sched_stats *dst, const struct sched_stats *src)
{
	int i;

	dst->received += src->received;
	dst->processed += src->processed;
	dst->user_errors += src->user_errors;
	dst->system_errors += src->system_errors;
	dst->timeouts += src->timeouts;
	dst->cold_starts += src->cold_starts;
	dst->latency_n += src->latency_n;
	dst->latency_us += src->latency_us;
	if (src->last_ms > dst->last_ms)
		dst->last_ms = src->last_ms;
	for (i = 0; i < SCHED_HIST_BUCKETS; i++)
		dst->hist[i] += src->hist[i];
	for (i = 0; i < SCHED_WINDOW_S; i++) {
		const struct sched_second *b = &src->window[i];
		struct sched_second *d = &dst->window[i];

		if (b->sec == 0 || b->sec < d->sec)
			continue;
		if (b->sec > d->sec) {
			*d = *b;
			continue;
		}
		d->received += b->received;
		d->processed += b->processed;
		d->user_errors += b->user_errors;
		d->system_errors += b->system_errors;
		d->latency_n += b->latency_n;
		d->latency_us += b->latency_us;
	}
}

/* stats for a caller other than root: the sums over the functions of the
 * tenants it may read, taken at the open (calls of functions removed
 * since are not in them; root's stats count every call). */
static void stats_step(struct sched *s, struct sched_cursor *c, struct text *t)
{
	struct sched_stats *sum = calloc(1, sizeof(*sum));
	struct totals tot = { 0 };
	struct sched_stats_view v;
	size_t i, online = 0, n;
	void **w;

	c->part = P_STATS_QUOTA;
	c->i = 0;
	if (sum == NULL) {
		t->err = -ENOMEM;
		return;
	}
	if (c->root) {
		t->err = render_stats(s, t->b);
		free(sum);
		return;
	}
	for (i = 0; i < c->fns.n; i++) {
		struct sched_function *fn = fn_at(s, c, i);

		if (fn == NULL)
			continue;
		add_fn_totals(NULL, fn, &tot);
		stats_add(sum, stats_of(fn));
	}
	w = rt_map_values(&s->pool.children, &n);
	for (i = 0; w != NULL && i < n; i++)
		online += ((struct sched_worker *)w[i])->online != 0;
	free(w);
	tprintf(t,
		"tenants %zu\nnamespaces %zu\nfunctions %zu\n"
		"instances %d\nrunning %d\nworkers %zu\n"
		"workers_online %zu\n",
		c->fns.tenants, c->fns.namespaces, tot.functions, tot.instances,
		tot.running, s->pool.children.count, online);
	sched_stats_view(sum, rt_now_ms(), &v);
	if (t->err == 0)
		t->err = sched_stats_render(&v, t->b);
	tprintf(t, "restarts_total %lld\nqueue_depth %d\n", tot.restarts,
		tot.queue);
	if (t->err == 0)
		t->err = render_store(s, t->b);
	free(sum);
}

/* The quota lines of stats, a tenant a step (those the reader may read,
 * with their use and limits at the open; one removed since is left
 * out): "quota/T/R_used N" and "quota/T/R_limit N" (or "none") for each
 * resource R. */
static void stats_quota_step(struct sched *s, struct sched_cursor *c,
			     struct text *t)
{
	struct sched_obj *o;
	size_t i = c->i;
	int r;

	if (i >= c->fns.tenants) {
		c->part = P_STATS_END;
		return;
	}
	o = tenant_at(s, c, c->i++);
	for (r = 0; o != NULL && r < SCHED_QUOTA_COUNT; r++) {
		long long used = c->quota[i][r][0], limit = c->quota[i][r][1];

		tprintf(t, "quota/%s/%s_used %lld\n", o->name,
			sched_quota_name(r), used);
		if (limit < 0)
			tprintf(t, "quota/%s/%s_limit none\n", o->name,
				sched_quota_name(r));
		else
			tprintf(t, "quota/%s/%s_limit %lld\n", o->name,
				sched_quota_name(r), limit);
	}
}

/* =============================================================== metrics */

/* Appends a label value, escaped as the exposition format wants. */
static void label(struct text *t, const char *k, const char *v, int first)
{
	tprintf(t, "%s%s=\"", first ? "" : ",", k);
	while (*v) {
		size_t plain = strcspn(v, "\\\"\n");

		tappend(t, v, plain); /* a run that needs no escape, at once */
		v += plain;
		if (*v == '\0')
			break;
		if (*v == '\n')
			tput(t, "\\n");
		else
			tprintf(t, "\\%c", *v);
		v++;
	}
	tput(t, "\"");
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
	tprintf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
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
	const struct sched_stats *st = stats_of(fn);
	size_t i;

	for (i = 0; i < 2; i++) {
		tprintf(t, "%s{", name);
		fn_labels(t, fn);
		tprintf(t, ",quantile=\"%g\"} %.6f\n", q[i],
			sched_hist_quantile(st->hist, st->latency_n, q[i]) /
				1000.0);
	}
	tprintf(t, "%s_sum{", name);
	fn_labels(t, fn);
	tprintf(t, "} %.6f\n%s_count{", (double)st->latency_us / 1e6, name);
	fn_labels(t, fn);
	tprintf(t, "} %llu\n", (unsigned long long)st->latency_n);
}

/* The lines of function `fn` in the function family `k`. */
static void fn_sample(struct text *t, struct sched_function *fn, size_t k)
{
	const struct family_def *d = &fn_families[k];
	struct figures f;

	memset(&f, 0, sizeof(f));
	if (d->fig >= F_RESTARTS)
		figures_of(fn, &f);
	tprintf(t, "fnfs_function_%s{", d->name);
	fn_labels(t, fn);
	tprintf(t, "} %.17g\n", fn_value(fn, d->fig, &f));
}

/* The lines of the instances of `fn` in the instance family `k`. */
static void inst_samples(struct text *t, struct sched_function *fn, size_t k)
{
	const struct family_def *d = &inst_families[k];
	int n, j;
	struct sched_instance **v = sched__instances_sorted(fn, &n);

	for (j = 0; j < n; j++) {
		tprintf(t, "fnfs_instance_%s{", d->name);
		inst_labels(t, v[j]);
		tprintf(t, "} %.17g\n", inst_value(v[j], d->fig));
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

		tprintf(t, "%s{", name);
		label(t, "worker", x->obj.name, 1);
		tprintf(t, "} %.17g\n", v);
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
		return s->stats->received;
	for (i = 0; i < c->fns.n; i++) {
		struct sched_function *fn = fn_at(s, c, i);

		if (fn != NULL)
			n += stats_of(fn)->received;
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

		tprintf(t, "fnfs_tenant_quota_%s{", limit ? "limit" : "used");
		label(t, "tenant", o->name, 1);
		label(t, "resource", sched_quota_name(r), 0);
		if (v[limit] < 0)
			tput(t, "} +Inf\n");
		else
			tprintf(t, "} %lld\n", v[limit]);
	}
}

/* One step of metrics: a family's HELP and TYPE, or its lines for one
 * function or tenant, or a whole family of workers, or the total. */
static void metrics_step(struct sched *s, struct sched_cursor *c,
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
		o = tenant_at(s, c, c->i);
		if (o != NULL)
			quota_samples(c, c->i, t, o, p == P_QUOTA_LIMIT);
		c->i++;
		return;
	}
	if (p >= P_WORKER) {
		if (p < P_TOTAL) {
			worker_family(s, t, p - P_WORKER);
		} else {
			tprintf(t, "fnfs_calls_received_total %llu\n",
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
	fn = fn_at(s, c, c->i++);
	if (fn == NULL)
		return;
	if (p < P_LATENCY)
		fn_sample(t, fn, p - P_FN);
	else if (p == P_LATENCY)
		latency_summary(t, fn);
	else
		inst_samples(t, fn, p - P_INST);
}

/* ======================================================= the cursor API */

int sched_cursor_open(struct sched *s, enum sched_file f,
		      const struct sched_caller *who, struct sched_cursor **out)
{
	struct sched_cursor *c = NULL;
	int rc;

	*out = NULL;
	if (f != SCHED_ROOT_STATUS && f != SCHED_ROOT_METRICS &&
	    f != SCHED_ROOT_STATS) {
		rc = -EINVAL;
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	c->f = f;
	c->root = sched_caller_is_root(who);
	rc = functions_by_path(s, who, &c->fns);
	if (rc < 0)
		goto out;
	if (f == SCHED_ROOT_STATUS)
		status_widths(s, c);
	else
		rc = quota_snapshot(s, c);
	if (rc < 0)
		goto out;
	*out = c;
	return 0;
out:
	sched_cursor_close(c);
	return rc;
}

int sched_cursor_next(struct sched *s, struct sched_cursor *c,
		      struct rt_buf *out, size_t want)
{
	struct text t = { out, 0 };
	size_t before = out->len;
	int end = c->f == SCHED_ROOT_STATUS  ? P_STATUS_END
		  : c->f == SCHED_ROOT_STATS ? P_STATS_END
					     : P_METRICS_END;

	while (t.err == 0 && c->part < end &&
	       (out->len == before || out->len - before < want)) {
		size_t at = out->len;

		if (c->f == SCHED_ROOT_STATUS)
			status_step(s, c, &t);
		else if (c->f == SCHED_ROOT_STATS && c->part == P_STATS)
			stats_step(s, c, &t);
		else if (c->f == SCHED_ROOT_STATS)
			stats_quota_step(s, c, &t);
		else
			metrics_step(s, c, &t);
		if (t.err != 0) {
			/* No half line: what this step added goes. */
			out->len = at;
			if (out->data != NULL)
				out->data[at] = '\0';
		}
	}
	return t.err;
}

void sched_cursor_close(struct sched_cursor *c)
{
	if (c == NULL)
		return;
	free(c->fns.ids);
	free(c->fns.tids);
	free(c->quota);
	free(c);
}

int sched_cursor_size(struct sched *s, enum sched_file f,
		      const struct sched_caller *who, size_t *size)
{
	struct sched_cursor *c;
	struct rt_buf piece = { 0 };
	int rc = sched_cursor_open(s, f, who, &c);

	*size = 0;
	if (rc == 0 && f == SCHED_ROOT_STATUS) {
		*size = c->size; /* measured by the open */
	} else {
		while (rc == 0) {
			rt_buf_reset(&piece);
			rc = sched_cursor_next(s, c, &piece, 65536);
			if (piece.len == 0)
				break;
			*size += piece.len;
		}
	}
	sched_cursor_close(c);
	rt_buf_free(&piece);
	return rc;
}

/* The whole of a file rendered through a cursor. */
static int render_all(struct sched *s, enum sched_file f, struct rt_buf *out)
{
	struct sched_cursor *c;
	int rc = sched_cursor_open(s, f, NULL, &c);

	if (rc < 0)
		return rc;
	do {
		size_t before = out->len;

		rc = sched_cursor_next(s, c, out, SIZE_MAX);
		if (rc == 0 && out->len == before)
			break;
	} while (rc == 0);
	sched_cursor_close(c);
	return rc;
}

int sched__calls_render(struct sched *s, struct sched_obj *o, enum sched_file f,
			struct rt_buf *out)
{
	switch (f) {
	case SCHED_FN_STATS:
		return render_fn_stats((struct sched_function *)o, out);
	case SCHED_ROOT_STATUS:
	case SCHED_ROOT_STATS:
	case SCHED_ROOT_METRICS: return render_all(s, f, out);
	default: return -EINVAL;
	}
}

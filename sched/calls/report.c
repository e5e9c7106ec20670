/*
 * report.c - what users read about calls and the whole mount: a
 * function's and an instance's stats, and the root files status (a
 * table), stats (totals) and metrics (Prometheus text format). status
 * and metrics grow with the functions, so they are rendered through a
 * cursor, a piece at a time, as a reader reaches them. metrics is
 * report_metrics.c. This stays one file of about 700 lines: status and
 * stats are steps of the cursor defined here, and apart they would share
 * every helper through a header.
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
#include "report_internal.h"

const char *const report__mode_words[] = { "daemon", "hot", "cold" };

void report__figures_of(struct sched_function *fn, struct figures *f)
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

const struct sched_stats *report__stats_of(const struct sched_function *fn)
{
	static const struct sched_stats none;

	return fn->calls != NULL ? &fn->calls->stats : &none;
}

int report__queued(const struct sched_function *fn)
{
	return fn->calls != NULL ? fn->calls->queued : 0;
}

static int render_fn_stats(struct sched_function *fn, struct rt_buf *out)
{
	struct sched_stats_view v;
	struct figures f;

	report__figures_of(fn, &f);
	sched_stats_view(report__stats_of(fn), rt_now_ms(), &v);
	sched_stats_render(&v, out);
	return rt_buf_printf(out,
			     "restarts_total %lld\nqueue_depth %d\n"
			     "instances %d\nrunning %d\nbusy %d\n"
			     "slots %d\nbusy_slots %d\n"
			     "cpu_seconds %.3f\nrss_bytes %lld\n",
			     f.restarts, report__queued(fn), f.instances,
			     f.running, f.busy, f.slots, f.busy_slots, f.cpu,
			     f.rss);
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

void report__tput(struct text *t, const char *s)
{
	if (t->err == 0)
		t->err = rt_buf_puts(t->b, s);
}

void report__tappend(struct text *t, const char *p, size_t n)
{
	if (t->err == 0)
		t->err = rt_buf_append(t->b, p, n);
}

__attribute__((format(printf, 2, 3))) void report__tprintf(struct text *t,
							   const char *fmt, ...)
{
	va_list ap;

	if (t->err != 0)
		return;
	va_start(ap, fmt);
	t->err = rt_buf_vprintf(t->b, fmt, ap);
	va_end(ap);
}

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

/* The i-th function of the walk, or NULL if it has been removed. */
struct sched_function *report__fn_at(struct sched *s,
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
struct sched_obj *report__tenant_at(struct sched *s,
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

	report__figures_of(fn, &f);
	sched_stats_view(report__stats_of(fn), rt_now_ms(), &v);
	snprintf(cell[0], CELL_MAX, "%s/%s/%s", o->parent->parent->name,
		 o->parent->name, o->name);
	snprintf(cell[1], CELL_MAX, "%s", report__mode_words[fn->spec.mode]);
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
		report__tprintf(t, "%-*s  ", (int)c->width[k], cell[k]);
	report__tprintf(t, "%s\n", cell[NCOL - 1]);
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
		struct sched_function *fn = report__fn_at(s, c, i);

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
	fn = report__fn_at(s, c, c->i++);
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
	report__figures_of(value, &f);
	tot->functions++;
	tot->instances += f.instances;
	tot->running += f.running;
	tot->restarts += f.restarts;
	tot->queue += report__queued(value);
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
	sched_stats_view(s->calls_state.stats, rt_now_ms(), &v);
	sched_stats_render(&v, out);
	rc = rt_buf_printf(out, "restarts_total %lld\nqueue_depth %d\n",
			   tot.restarts, tot.queue);
	return rc < 0 ? rc : sched__role_render(s, out);
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
		struct sched_function *fn = report__fn_at(s, c, i);

		if (fn == NULL)
			continue;
		add_fn_totals(NULL, fn, &tot);
		stats_add(sum, report__stats_of(fn));
	}
	w = rt_map_values(&s->pool.children, &n);
	for (i = 0; w != NULL && i < n; i++)
		online += ((struct sched_worker *)w[i])->online != 0;
	free(w);
	report__tprintf(t,
			"tenants %zu\nnamespaces %zu\nfunctions %zu\n"
			"instances %d\nrunning %d\nworkers %zu\n"
			"workers_online %zu\n",
			c->fns.tenants, c->fns.namespaces, tot.functions,
			tot.instances, tot.running, s->pool.children.count,
			online);
	sched_stats_view(sum, rt_now_ms(), &v);
	if (t->err == 0)
		t->err = sched_stats_render(&v, t->b);
	report__tprintf(t, "restarts_total %lld\nqueue_depth %d\n",
			tot.restarts, tot.queue);
	if (t->err == 0)
		t->err = sched__role_render(s, t->b);
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
	o = report__tenant_at(s, c, c->i++);
	for (r = 0; o != NULL && r < SCHED_QUOTA_COUNT; r++) {
		long long used = c->quota[i][r][0], limit = c->quota[i][r][1];

		report__tprintf(t, "quota/%s/%s_used %lld\n", o->name,
				sched_quota_name(r), used);
		if (limit < 0)
			report__tprintf(t, "quota/%s/%s_limit none\n", o->name,
					sched_quota_name(r));
		else
			report__tprintf(t, "quota/%s/%s_limit %lld\n", o->name,
					sched_quota_name(r), limit);
	}
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
					     : report__metrics_parts;

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
			report__metrics_step(s, c, &t);
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

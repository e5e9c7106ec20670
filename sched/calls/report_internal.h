/*
 * report_internal.h - what report.c (status, stats, the cursor) and
 * report_metrics.c (metrics) share: the text being rendered, a
 * function's figures, the cursor a reader holds.
 */
#ifndef FNFS_SCHED_REPORT_INTERNAL_H
#define FNFS_SCHED_REPORT_INTERNAL_H

#include "../internal.h"
#include "../model/quota.h"

/* Figures of a function's instances. */
struct figures {
	int instances, running, busy;
	int slots, busy_slots; /* of its running instances; calls served */
	long long restarts;
	double cpu;
	long long rss;
};

/* Text being rendered, and the first error of appending to it. */
struct text {
	struct rt_buf *b;
	int err;
};

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

/* The table of `status`: its columns. */
enum { NCOL = 9 };
/* A cell holds at most a path (three names of 63 bytes) or a number. */
#define CELL_MAX 200

/* The parts of a rendering, in order: status is a header and rows;
 * metrics is a family after another (see report__metrics_step); stats is its
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

/* The words of enum sched_mode. */
extern const char *const report__mode_words[];

/* Fills `f` with the figures of fn's instances. */
void report__figures_of(struct sched_function *fn, struct figures *f);

/* fn's call statistics (zeros when it has had no call). */
const struct sched_stats *report__stats_of(const struct sched_function *fn);

/* The calls waiting in fn's queue. */
int report__queued(const struct sched_function *fn);

/* Append to `t` unless an append has failed (then t->err says how). */
void report__tput(struct text *t, const char *s);
void report__tappend(struct text *t, const char *p, size_t n);
void report__tprintf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The i-th function of c's walk, or NULL if it has been removed. */
struct sched_function *report__fn_at(struct sched *s,
				     const struct sched_cursor *c, size_t i);

/* The i-th tenant of c's walk, or NULL if it has been removed. */
struct sched_obj *report__tenant_at(struct sched *s,
				    const struct sched_cursor *c, size_t i);

/* The parts of metrics (report_metrics.c): a family each. */
extern const int report__metrics_parts;

/* Renders the next piece of metrics into `t` (report_metrics.c). */
void report__metrics_step(struct sched *s, struct sched_cursor *c,
			  struct text *t);

#endif

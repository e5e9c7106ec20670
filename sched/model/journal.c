/*
 * journal.c - the controller's journal of events: lines appended to the
 * whole journal and to their tenant's part, refusals limited (a flood of
 * them is a few lines a second and a summary), and on a cluster the
 * lines sent to the cluster's journal (cluster/cluster_journal.c) and
 * taken back from its watch, those of a tenant not here yet kept until it
 * comes.
 */
#include <string.h>

#include "../internal.h"
#include "owners.h"

/* ================================================================== events */

/* Appends one event to the journal, and to the part of tenant `t` (may
 * be NULL) too. In a cluster the line goes to the cluster's journal in
 * etcd instead, and comes back into both through its watch
 * (journal_line). */
static void journal_now(struct sched *s, struct sched_tenant *t,
			const char *kind, const char *object, const char *kvs)
{
	uint64_t at = sched_events_end(s);
	int64_t now = rt_now_ms();

	/* The role's journal (a cluster's in etcd) takes it, or not. */
	if (s->role != NULL &&
	    s->role->journal(s, now, t ? t->obj.name : NULL, kind, object, kvs))
		return;
	events_append(&s->journal.events, now, kind, object, kvs);
	if (t != NULL)
		events_part_add(&t->events, &s->journal.events, at);
}

/* Whether a line is a refusal that events_limit limits: a kind ending in
 * ".rejected" or ".refused", but for the summaries that count already
 * (calls.c's `function.rejected file=invoke`). */
static int limited(const char *kind, const char *kvs)
{
	size_t n = strlen(kind);

	if (kvs != NULL && strstr(kvs, " count=") != NULL)
		return 0;
	return (n > 9 && strcmp(kind + n - 9, ".rejected") == 0) ||
	       (n > 8 && strcmp(kind + n - 8, ".refused") == 0);
}

/* As journal_now, but a refusal goes through the limit of its tenant (or
 * the root's): a flood of them is a few lines a second and a summary. */
void sched__journal(struct sched *s, struct sched_tenant *t, const char *kind,
		    const char *object, const char *kvs)
{
	struct events_limit *lm = t ? &t->limit : &s->journal.limit;

	if (limited(kind, kvs) &&
	    !events_limit_offer(lm, rt_now_ms(), kind, object, kvs)) {
		s->journal.limits_held = 1;
		return;
	}
	journal_now(s, t, kind, object, kvs);
}

struct flush_ctx {
	struct sched *s;
	struct sched_tenant *t;
	int64_t now;
	int all;
	int left;
};

static void flush_line(void *arg, const char *kind, const char *object,
		       const char *kvs)
{
	struct flush_ctx *x = arg;

	journal_now(x->s, x->t, kind, object, kvs);
}

static int flush_tenant(const char *key, void *value, void *arg)
{
	struct flush_ctx *x = arg;
	struct sched_obj *o = value;

	(void)key;
	if (o->type != SCHED_TENANT)
		return 0;
	x->t = (struct sched_tenant *)o;
	x->left += events_limit_flush(&x->t->limit, x->now, x->all, flush_line,
				      x);
	return 0;
}

void sched__journal_tick(struct sched *s, int all)
{
	struct flush_ctx x = { s, NULL, rt_now_ms(), all, 0 };

	if (!s->journal.limits_held)
		return;
	x.left = events_limit_flush(&s->journal.limit, x.now, all, flush_line,
				    &x);
	rt_map_each(&s->root.children, flush_tenant, &x);
	s->journal.limits_held = x.left > 0;
}

/* A line of the cluster's journal came back at `at`: its tenant's part
 * has it too, if that tenant is here. */
void sched__journal_line(void *arg, const char *tenant, uint64_t at)
{
	struct sched *s = arg;
	struct sched_obj *t = tenant ? sched_child(&s->root, tenant) : NULL;

	if (t != NULL && t->type == SCHED_TENANT) {
		events_part_add(&((struct sched_tenant *)t)->events,
				&s->journal.events, at);
		return;
	}
	if (tenant == NULL)
		return;
	if (s->journal.norphans == SCHED_ORPHANS) {
		memmove(s->journal.orphans, s->journal.orphans + 1,
			(SCHED_ORPHANS - 1) * sizeof(*s->journal.orphans));
		s->journal.norphans--;
	}
	s->journal.orphans[s->journal.norphans].at = at;
	snprintf(s->journal.orphans[s->journal.norphans].tenant,
		 sizeof(s->journal.orphans[0].tenant), "%s", tenant);
	s->journal.norphans++;
}

/* Tenant `t` came: its lines that came first go to its part. */
void sched__adopt_orphans(struct sched *s, struct sched_tenant *t)
{
	size_t i, k = 0;

	for (i = 0; i < s->journal.norphans; i++) {
		struct sched_orphan *o = &s->journal.orphans[i];

		if (o->at < s->journal.events.first)
			continue; /* gone from the journal */
		if (strcmp(o->tenant, t->obj.name) == 0)
			events_part_add_line(&t->events, &s->journal.events,
					     o->at);
		else
			s->journal.orphans[k++] = *o;
	}
	s->journal.norphans = k;
}

void sched__journal_stop(struct sched *s)
{
	if (s->role != NULL)
		s->role->journal_stop(s);
}

void sched__journal_flush(struct sched *s)
{
	if (s->role != NULL)
		s->role->journal_flush(s);
}

int sched__journal_flushed(const struct sched *s)
{
	return s->role == NULL || s->role->journal_flushed(s);
}

void sched_event(struct sched *s, const char *kind, const char *object,
		 const char *kvs)
{
	sched__journal(s, NULL, kind, object, kvs);
}

void sched__event(struct sched *s, const struct sched_obj *o, const char *kind,
		  const char *kvs)
{
	struct rt_buf path = { 0 };

	sched_obj_path(o, &path);
	sched__journal(s, sched__tenant_of(o), kind,
		       path.data ? path.data : "-", kvs);
	rt_buf_free(&path);
}

uint64_t sched_events_end(const struct sched *s)
{
	return events_end(&s->journal.events);
}

size_t sched_events_at(const struct sched *s, uint64_t off, const char **p,
		       uint64_t *first)
{
	return events_at(&s->journal.events, off, p, first);
}

int64_t sched_events_mtime(const struct sched *s)
{
	return s->journal.events.last_ms ? s->journal.events.last_ms
					 : s->root.created_ms;
}

uint64_t sched_tenant_events_end(const struct sched_obj *t)
{
	return ((const struct sched_tenant *)t)->events.end;
}

size_t sched_tenant_events_at(const struct sched *s, const struct sched_obj *t,
			      uint64_t off, char *buf, size_t size,
			      uint64_t *first)
{
	return events_part_at(&((const struct sched_tenant *)t)->events,
			      &s->journal.events, off, buf, size, first);
}

int64_t sched_tenant_events_mtime(const struct sched_obj *t)
{
	const struct sched_tenant *x = (const struct sched_tenant *)t;

	return x->events.last_ms ? x->events.last_ms : t->created_ms;
}

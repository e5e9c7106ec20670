/*
 * place.c - placement (see place.h).
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "place.h"

static const char *const strategies[] = { "spread", "pack", "random" };

const char *sched_strategy_name(enum sched_strategy s)
{
	return strategies[s];
}

int sched_strategy_parse(const char *word, size_t len)
{
	int i;

	for (i = 0; i < 3; i++)
		if (strlen(strategies[i]) == len &&
		    memcmp(strategies[i], word, len) == 0)
			return i;
	return -1;
}

/* Whether the space-separated `list` holds `item` (of `n` bytes). */
static int has_word(const char *list, const char *item, size_t n)
{
	const char *p = list;

	while ((p = strstr(p, item)) != NULL) {
		if ((p == list || p[-1] == ' ') &&
		    (p[n] == ' ' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

static int serves(const struct place_worker *w, const char *t, const char *ns)
{
	char want[140];
	int n;

	if (w->namespaces == NULL || w->namespaces[0] == '\0')
		return 1;
	n = snprintf(want, sizeof(want), "%s/%s", t, ns);
	return has_word(w->namespaces, want, (size_t)n);
}

static int fits(const struct place_worker *w, const struct place_request *r)
{
	return w->usable && w->memory_mb - w->used_mb >= r->memory_mb &&
	       serves(w, r->tenant, r->ns);
}

static int untagged(const struct place_worker *w)
{
	return w->tags == NULL || w->tags[0] == '\0';
}

static int has_all_tags(const struct place_worker *w,
			const struct place_request *r)
{
	int i;

	for (i = 0; i < r->ntags; i++)
		if (untagged(w) ||
		    !has_word(w->tags, r->tags[i], strlen(r->tags[i])))
			return 0;
	return 1;
}

/* The tiers of candidates, in order: which workers each admits. */
enum tier { T_ALL_TAGS, T_UNTAGGED, T_TAGGED, T_NONE };

static int in_tier(const struct place_worker *w, const struct place_request *r,
		   enum tier t)
{
	if (!fits(w, r))
		return 0;
	switch (t) {
	case T_ALL_TAGS: return r->ntags > 0 && has_all_tags(w, r);
	case T_UNTAGGED: return untagged(w);
	case T_TAGGED:
		return !untagged(w) && !(r->ntags > 0 && has_all_tags(w, r));
	default: return 0;
	}
}

/* Compares memory shares: <0 when a is less used than b. */
static int share_cmp(const struct place_worker *a, const struct place_worker *b)
{
	long long x = (long long)a->used_mb * b->memory_mb,
		  y = (long long)b->used_mb * a->memory_mb;

	return (x > y) - (x < y);
}

/* Whether `a` beats the current best `b` under the strategy. */
static int better(const struct place_worker *a, const struct place_worker *b,
		  enum sched_strategy s, int avoid_same)
{
	int c;

	if (avoid_same && (a->same_function > 0) != (b->same_function > 0))
		return a->same_function == 0;
	c = share_cmp(a, b);
	if (s == SCHED_PACK)
		c = -c;
	if (c != 0)
		return c < 0;
	if (a->instances != b->instances)
		return s == SCHED_PACK ? a->instances > b->instances
				       : a->instances < b->instances;
	return strcmp(a->id, b->id) < 0;
}

static int choose(const struct place_worker *w, size_t n,
		  const struct place_request *r, enum tier t)
{
	size_t i, count = 0, pick;
	int best = -1;

	if (r->strategy == SCHED_RANDOM) {
		for (i = 0; i < n; i++)
			count += (size_t)in_tier(&w[i], r, t);
		if (count == 0)
			return -1;
		pick = r->random % count;
		for (i = 0; i < n; i++)
			if (in_tier(&w[i], r, t) && pick-- == 0)
				return (int)i;
		assert(0); /* the count-th candidate was found above */
	}
	for (i = 0; i < n; i++) {
		if (!in_tier(&w[i], r, t))
			continue;
		if (best < 0 || better(&w[i], &w[best], r->strategy,
				       r->strategy == SCHED_SPREAD))
			best = (int)i;
	}
	return best;
}

int sched_place(const struct place_worker *w, size_t n,
		const struct place_request *r, struct rt_buf *why)
{
	static const enum tier no_tags[] = { T_UNTAGGED, T_TAGGED, T_NONE };
	static const enum tier strict[] = { T_ALL_TAGS, T_NONE };
	static const enum tier loose[] = { T_ALL_TAGS, T_UNTAGGED, T_TAGGED,
					   T_NONE };
	const enum tier *order = r->ntags == 0 ? no_tags
				 : r->loose    ? loose
					       : strict;
	int i, pick;

	for (i = 0; order[i] != T_NONE; i++) {
		pick = choose(w, n, r, order[i]);
		if (pick >= 0) {
			/* Never a worker the request does not fit, nor one
			 * a strict request's tags rule out. */
			assert((size_t)pick < n && fits(&w[pick], r));
			assert(r->ntags == 0 || r->loose ||
			       has_all_tags(&w[pick], r));
			return pick;
		}
	}
	if (why != NULL) {
		rt_buf_puts(why, "no worker with ");
		if (r->ntags > 0) {
			rt_buf_puts(why, r->ntags > 1 ? "tags " : "tag ");
			for (i = 0; i < r->ntags; i++)
				rt_buf_printf(why, "%s%s", i ? "," : "",
					      r->tags[i]);
			rt_buf_puts(why, " and ");
		}
		rt_buf_printf(why, "%d MB free", r->memory_mb);
		/* Name the namespace only when it is what stood in the way:
		 * some worker fits but is dedicated to others. */
		for (i = 0; (size_t)i < n; i++)
			if (w[i].usable &&
			    w[i].memory_mb - w[i].used_mb >= r->memory_mb &&
			    (r->ntags == 0 || r->loose ||
			     has_all_tags(&w[i], r)) &&
			    !serves(&w[i], r->tenant, r->ns))
				break;
		if ((size_t)i < n)
			rt_buf_printf(why, " that serves %s/%s", r->tenant,
				      r->ns);
	}
	return -1;
}

int sched_place_has_tags(const struct place_worker *w,
			 const struct place_request *r)
{
	return has_all_tags(w, r);
}

int sched_place_fits(const struct place_worker *w,
		     const struct place_request *r, struct rt_buf *why)
{
	int i;

	if (!w->usable) {
		if (why != NULL)
			rt_buf_printf(why, "worker %s takes no instances",
				      w->id);
		return 0;
	}
	if (!serves(w, r->tenant, r->ns)) {
		if (why != NULL)
			rt_buf_printf(why, "worker %s does not serve %s/%s",
				      w->id, r->tenant, r->ns);
		return 0;
	}
	if (r->ntags > 0 && !r->loose && !has_all_tags(w, r)) {
		if (why != NULL) {
			rt_buf_printf(why, "worker %s lacks tag%s ", w->id,
				      r->ntags > 1 ? "s" : "");
			for (i = 0; i < r->ntags; i++)
				rt_buf_printf(why, "%s%s", i ? "," : "",
					      r->tags[i]);
		}
		return 0;
	}
	if (w->memory_mb - w->used_mb < r->memory_mb) {
		if (why != NULL)
			rt_buf_printf(
				why, "worker %s has %d MB free, %d needed",
				w->id, w->memory_mb - w->used_mb, r->memory_mb);
		return 0;
	}
	return 1;
}

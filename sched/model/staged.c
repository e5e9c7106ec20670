/*
 * staged.c - changes held by a write transaction (see staged.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "staged.h"

static char *dup_or_null(const char *p, int *failed)
{
	char *d;

	if (p == NULL)
		return NULL;
	d = strdup(p);
	if (d == NULL)
		*failed = 1;
	return d;
}

static void change_free(struct store_change *c)
{
	free((char *)c->row.tenant);
	free((char *)c->row.ns);
	free((char *)c->row.name);
	free((char *)c->row.spec);
}

int staged_add(struct staged *s, enum store_op op, const struct store_row *r)
{
	struct store_change *c;
	int failed = 0;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct store_change *v = realloc(s->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	c = &s->v[s->n];
	c->op = op;
	c->row = *r;
	c->row.tenant = dup_or_null(r->tenant, &failed);
	c->row.ns = dup_or_null(r->ns, &failed);
	c->row.name = dup_or_null(r->name, &failed);
	c->row.spec = dup_or_null(r->spec, &failed);
	if (failed) {
		change_free(c);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

void staged_truncate(struct staged *s, size_t from)
{
	while (s->n > from)
		change_free(&s->v[--s->n]);
}

void staged_free(struct staged *s)
{
	staged_truncate(s, 0);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}

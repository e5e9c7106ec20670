/*
 * test_even.c - the order of rebalance's moves (sched/decide/even.c): every
 * target is tried, not only the emptiest, and every source, not only the
 * fullest (issue 24: with counts 1, 1, 3 and 5 where both workers of 1
 * refuse, one instance moves from the 5 to the 3).
 */
#include <errno.h>

#include "../../sched/decide/even.h"
#include "unit.h"

/* A refusal table: refuses[from][to] = 1 when `to` takes nothing from
 * `from`; the pairs asked are recorded in order. */
struct table {
	int refuses[6][6];
	int fail; /* return -EIO when asked this many times (0: never) */
	int asked;
	size_t pairs[36][2];
};

static int ask(size_t from, size_t to, void *arg)
{
	struct table *t = arg;

	t->pairs[t->asked][0] = from;
	t->pairs[t->asked][1] = to;
	if (++t->asked == t->fail)
		return -EIO;
	return !t->refuses[from][to];
}

static int next(const int *count, size_t n, struct table *t, size_t *from,
		size_t *to)
{
	size_t order[6];

	t->asked = 0;
	return sched_even_next(count, n, order, ask, t, from, to);
}

TEST(even_tries_every_target)
{
	/* Issue 24's workers: 0 is dedicated to another namespace, 1 is
	 * tagged and full, 2 holds 3 and 3 holds 5. */
	int count[] = { 1, 1, 3, 5 };
	struct table t = { 0 };
	size_t from = 9, to = 9;

	t.refuses[3][0] = t.refuses[3][1] = 1;
	t.refuses[2][0] = t.refuses[2][1] = 1;
	CHECK(next(count, 4, &t, &from, &to) == 1);
	CHECK(from == 3 && to == 2);
	/* The two workers of 1 were asked first, then the 3. */
	CHECK(t.asked == 3);
	CHECK(t.pairs[0][1] <= 1 && t.pairs[1][1] <= 1 && t.pairs[2][1] == 2);
	/* After that move, 4 and 4: nothing is two apart that takes. */
	count[2] = 4;
	count[3] = 4;
	CHECK(next(count, 4, &t, &from, &to) == 0);
	CHECK(t.asked == 4); /* 3->0, 3->1, 2->0, 2->1: all refuse */
}

TEST(even_tries_every_source)
{
	/* The fullest holds nothing that may move anywhere; the next
	 * fullest gives to the emptiest. */
	int count[] = { 6, 5, 1 };
	struct table t = { 0 };
	size_t from = 9, to = 9;

	t.refuses[0][2] = 1;
	CHECK(next(count, 3, &t, &from, &to) == 1);
	CHECK(from == 1 && to == 2);
}

TEST(even_widest_gap_first)
{
	int count[] = { 2, 7, 0, 4 };
	struct table t = { 0 };
	size_t from = 9, to = 9;

	CHECK(next(count, 4, &t, &from, &to) == 1);
	CHECK(from == 1 && to == 2 && t.asked == 1);
}

TEST(even_stops_when_even)
{
	int count[] = { 3, 4, 4, 3 };
	struct table t = { 0 };
	size_t from = 9, to = 9;

	CHECK(next(count, 4, &t, &from, &to) == 0);
	CHECK(t.asked == 0);
	CHECK(next(count, 0, &t, &from, &to) == 0);
	CHECK(next(count, 1, &t, &from, &to) == 0);
}

TEST(even_error_stops)
{
	int count[] = { 0, 5 };
	struct table t = { 0 };
	size_t from = 9, to = 9;

	t.fail = 1;
	CHECK(next(count, 2, &t, &from, &to) == -EIO);
	CHECK(from == 9 && to == 9);
}

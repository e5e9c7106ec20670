/*
 * test_place.c - placement over hand-built models: OpenWhisk's cases
 * (tagged and untagged workers, strict and loose policies, dedicated
 * namespaces, memory running out part-way through a batch) and the
 * strategies.
 */
#include <stdlib.h>

#include "../../sched/decide/place.h"
#include "unit.h"

#define W(id, mem, used, tags, ns)                                             \
	{                                                                      \
		id, mem, used, tags, ns, 1, 0, 0                               \
	}

static struct place_request req(int mb)
{
	struct place_request r = { mb,	   NULL,	 0, 0, "acme",
				   "prod", SCHED_SPREAD, 0 };

	return r;
}

static const char *pick(const struct place_worker *w, size_t n,
			const struct place_request *r, char *why, size_t wn)
{
	struct rt_buf b = { 0 };
	int i = sched_place(w, n, r, &b);

	snprintf(why, wn, "%s", b.data ? b.data : "");
	rt_buf_free(&b);
	return i < 0 ? NULL : w[i].id;
}

TEST(place_untagged_first)
{
	struct place_worker w[] = { W("gpu", 4096, 0, "gpu", ""),
				    W("plain", 1024, 0, "", "") };
	struct place_request r = req(256);
	char why[128];

	/* The gpu worker has more free memory, but untagged ones come
	 * first for a function that asks for no tags. */
	CHECK_STR(pick(w, 2, &r, why, sizeof(why)), "plain");
	w[1].used_mb = 900; /* the untagged one is full */
	CHECK_STR(pick(w, 2, &r, why, sizeof(why)), "gpu");
}

TEST(place_strict_tags)
{
	char *gpu[] = { "gpu" };
	struct place_worker w[] = { W("plain", 8192, 0, "", ""),
				    W("ssd", 8192, 0, "ssd", ""),
				    W("gpu", 1024, 700, "gpu ssd", "") };
	struct place_request r = req(512);
	char why[128];

	r.tags = gpu;
	r.ntags = 1;
	CHECK(pick(w, 3, &r, why, sizeof(why)) == NULL);
	CHECK_STR(why, "no worker with tag gpu and 512 MB free");
	w[2].used_mb = 0;
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "gpu");
}

TEST(place_needs_every_tag)
{
	char *tags[] = { "gpu", "ssd" };
	struct place_worker w[] = { W("g", 8192, 0, "gpu", ""),
				    W("s", 8192, 0, "ssd", ""),
				    W("gs", 1024, 0, "ssd gpu", "") };
	struct place_request r = req(512);
	char why[128];

	r.tags = tags;
	r.ntags = 2;
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "gs");
	w[2].usable = 0;
	CHECK(pick(w, 3, &r, why, sizeof(why)) == NULL);
	CHECK_STR(why, "no worker with tags gpu,ssd and 512 MB free");
}

TEST(place_loose_falls_back)
{
	char *gpu[] = { "gpu" };
	struct place_worker w[] = { W("ssd", 8192, 0, "ssd", ""),
				    W("plain", 1024, 0, "", "") };
	struct place_request r = req(512);
	char why[128];

	r.tags = gpu;
	r.ntags = 1;
	r.loose = 1;
	/* No gpu worker: untagged first, then other tagged ones. */
	CHECK_STR(pick(w, 2, &r, why, sizeof(why)), "plain");
	w[1].used_mb = 1000;
	CHECK_STR(pick(w, 2, &r, why, sizeof(why)), "ssd");
}

TEST(place_dedicated_namespaces)
{
	struct place_worker w[] = { W("mine", 1024, 0, "",
				      "acme/dev acme/prod"),
				    W("theirs", 8192, 0, "", "other/prod"),
				    W("prefix", 8192, 0, "", "acme/prodx") };
	struct place_request r = req(256);
	char why[128];

	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "mine");
	w[0].used_mb = 1000;
	CHECK(pick(w, 3, &r, why, sizeof(why)) == NULL);
	CHECK_STR(why, "no worker with 256 MB free that serves acme/prod");
}

TEST(place_skips_unusable)
{
	struct place_worker w[] = { W("draining", 8192, 0, "", ""),
				    W("ok", 512, 0, "", "") };
	struct place_request r = req(256);
	char why[128];

	w[0].usable = 0;
	CHECK_STR(pick(w, 2, &r, why, sizeof(why)), "ok");
}

/* Places `count` instances one after the other, taking memory as the
 * controller does; returns how many found a worker. */
static int batch(struct place_worker *w, size_t n, struct place_request *r,
		 int count, char *last, size_t ln)
{
	int i, placed = 0;

	for (i = 0; i < count; i++) {
		struct rt_buf why = { 0 };
		int k = sched_place(w, n, r, &why);

		if (k >= 0) {
			w[k].used_mb += r->memory_mb;
			w[k].same_function++;
			w[k].instances++;
			placed++;
		} else {
			snprintf(last, ln, "%s", why.data);
		}
		rt_buf_free(&why);
	}
	return placed;
}

TEST(place_memory_runs_out_in_a_batch)
{
	struct place_worker w[] = { W("a", 1000, 0, "", ""),
				    W("b", 600, 0, "", "") };
	struct place_request r = req(256);
	char last[128] = "";

	/* 3 fit on a, 2 on b: the sixth of a batch of 8 is the first to
	 * find no room. */
	CHECK(batch(w, 2, &r, 8, last, sizeof(last)) == 5);
	CHECK(w[0].used_mb == 768 && w[1].used_mb == 512);
	CHECK_STR(last, "no worker with 256 MB free");
}

TEST(place_spread_and_anti_affinity)
{
	struct place_worker w[] = { W("a", 4096, 0, "", ""),
				    W("b", 4096, 1024, "", ""),
				    W("c", 4096, 2048, "", "") };
	struct place_request r = req(128);
	char why[128];

	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "a");
	/* a already runs this function: another worker that fits wins,
	 * even with a larger share used. */
	w[0].same_function = 1;
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "b");
	w[1].same_function = 1;
	w[2].same_function = 1;
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "a");
}

TEST(place_spread_evens_out)
{
	struct place_worker w[] = { W("a", 1024, 0, "", ""),
				    W("b", 1024, 0, "", ""),
				    W("c", 1024, 0, "", "") };
	struct place_request r = req(64);
	char last[128];

	CHECK(batch(w, 3, &r, 9, last, sizeof(last)) == 9);
	CHECK(w[0].instances == 3 && w[1].instances == 3 &&
	      w[2].instances == 3);
}

TEST(place_pack)
{
	struct place_worker w[] = { W("a", 1024, 100, "", ""),
				    W("b", 1024, 500, "", ""),
				    W("c", 1024, 900, "", "") };
	struct place_request r = req(128);
	char why[128];

	r.strategy = SCHED_PACK;
	/* The most used one that still fits. */
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "b");
	w[2].used_mb = 800;
	CHECK_STR(pick(w, 3, &r, why, sizeof(why)), "c");
}

TEST(place_random_stays_among_candidates)
{
	struct place_worker w[] = { W("a", 1024, 0, "", ""),
				    W("full", 1024, 1000, "", ""),
				    W("b", 1024, 0, "", "") };
	struct place_request r = req(128);
	int seen_a = 0, seen_b = 0, i;

	r.strategy = SCHED_RANDOM;
	for (i = 0; i < 100; i++) {
		int k;

		r.random = (unsigned long)rand();
		k = sched_place(w, 3, &r, NULL);
		CHECK(k == 0 || k == 2);
		seen_a += k == 0;
		seen_b += k == 2;
	}
	CHECK(seen_a > 10 && seen_b > 10);
}

TEST(place_strategy_words)
{
	CHECK(sched_strategy_parse("spread", 6) == SCHED_SPREAD);
	CHECK(sched_strategy_parse("pack", 4) == SCHED_PACK);
	CHECK(sched_strategy_parse("random", 6) == SCHED_RANDOM);
	CHECK(sched_strategy_parse("rand", 4) == -1);
	CHECK_STR(sched_strategy_name(SCHED_PACK), "pack");
}

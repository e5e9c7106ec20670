/*
 * test_quota.c - quotas per tenant: the values of the quota files, their
 * stored form, the arithmetic of a check and the claim of a spec.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "../../sched/model/quota.h"
#include "unit.h"

static int parse(const char *s, long long *v)
{
	struct rt_buf why = { 0 };
	int rc = sched_quota_parse(s, strlen(s), v, &why);

	if (rc < 0)
		CHECK(why.data != NULL && strstr(why.data, "none") != NULL);
	rt_buf_free(&why);
	return rc;
}

TEST(quota_parse)
{
	long long v = 7;

	CHECK(parse("4096\n", &v) == 0 && v == 4096);
	CHECK(parse("0", &v) == 0 && v == 0);
	CHECK(parse("none\n", &v) == 0 && v == SCHED_QUOTA_NONE);
	CHECK(parse("default", &v) == 0 && v == SCHED_QUOTA_UNSET);
	v = 7;
	CHECK(parse("", &v) == -EINVAL && v == 7);
	CHECK(parse("\n", &v) == -EINVAL);
	CHECK(parse("-5", &v) == -EINVAL);
	CHECK(parse("+5", &v) == -EINVAL);
	CHECK(parse("4096\n\n", &v) == -EINVAL);
	CHECK(parse("4096 ", &v) == -EINVAL);
	CHECK(parse("1e3", &v) == -EINVAL);
	CHECK(parse("None", &v) == -EINVAL);
	CHECK(parse("1125899906842624", &v) == 0 && v == SCHED_QUOTA_MAX);
	CHECK(parse("1125899906842625", &v) == -EINVAL);
	CHECK(parse("99999999999999999999", &v) == -EINVAL);
	CHECK(v == SCHED_QUOTA_MAX);
}

TEST(quota_names)
{
	CHECK_STR(sched_quota_name(SCHED_QUOTA_CODE_BYTES), "code_bytes");
	CHECK(sched_quota_name(SCHED_QUOTA_COUNT) == NULL);
	CHECK(sched_quota_find("request_bytes", 13) ==
	      SCHED_QUOTA_REQUEST_BYTES);
	CHECK(sched_quota_find("memory=", 6) == SCHED_QUOTA_MEMORY);
	CHECK(sched_quota_find("mem", 3) == -1);
	CHECK(sched_quota_default(SCHED_QUOTA_MEMORY, 1) == SCHED_QUOTA_NONE);
	CHECK(sched_quota_default(SCHED_QUOTA_MEMORY, 0) ==
	      SCHED_QUOTA_DEF_MEMORY);
	CHECK(sched_quota_default(SCHED_QUOTA_COUNT, 0) == SCHED_QUOTA_NONE);
}

TEST(quota_encode_decode)
{
	long long in[SCHED_QUOTA_COUNT], out[SCHED_QUOTA_COUNT];
	struct rt_buf b = { 0 };
	int i;

	for (i = 0; i < SCHED_QUOTA_COUNT; i++)
		in[i] = SCHED_QUOTA_UNSET;
	CHECK(sched_quota_encode(in, &b) == 0);
	CHECK_STR(b.data, "");
	in[SCHED_QUOTA_MEMORY] = 4096;
	in[SCHED_QUOTA_FUNCTIONS] = SCHED_QUOTA_NONE;
	in[SCHED_QUOTA_REQUEST_BYTES] = 0;
	rt_buf_reset(&b);
	CHECK(sched_quota_encode(in, &b) == 0);
	CHECK_STR(b.data, "memory=4096 functions=none request_bytes=0");
	CHECK(sched_quota_decode(b.data, out) == 0);
	CHECK(memcmp(in, out, sizeof(in)) == 0);
	CHECK(sched_quota_decode("", out) == 0);
	CHECK(out[SCHED_QUOTA_MEMORY] == SCHED_QUOTA_UNSET);
	/* What is not ours is refused; what reads is kept. */
	CHECK(sched_quota_decode("bogus=1 instances=3 memory=x", out) ==
	      -EINVAL);
	CHECK(out[SCHED_QUOTA_INSTANCES] == 3);
	CHECK(out[SCHED_QUOTA_MEMORY] == SCHED_QUOTA_UNSET);
	CHECK(sched_quota_decode("memory=default", out) == -EINVAL);
	CHECK(sched_quota_decode("memory", out) == -EINVAL);
	rt_buf_reset(&b);
	CHECK(sched_quota_format(SCHED_QUOTA_NONE, &b) == 0);
	CHECK(sched_quota_format(12, &b) == 0);
	CHECK_STR(b.data, "none\n12\n");
	rt_buf_free(&b);
}

TEST(quota_over)
{
	CHECK(!sched_quota_over(4096, 3072, 1024));
	CHECK(sched_quota_over(4096, 3072, 1025));
	CHECK(!sched_quota_over(SCHED_QUOTA_NONE, 1, LLONG_MAX));
	/* A release is always taken, even over a lowered limit. */
	CHECK(!sched_quota_over(10, 50, -5));
	CHECK(!sched_quota_over(10, 50, 0));
	CHECK(sched_quota_over(10, 50, 1));
	CHECK(sched_quota_over(0, 0, 1));
	CHECK(!sched_quota_over(LLONG_MAX, LLONG_MAX - 1, 1));
	CHECK(sched_quota_over(LLONG_MAX, LLONG_MAX - 1, 2));
}

TEST(quota_reason)
{
	struct rt_buf b = { 0 };

	CHECK(sched_quota_reason("acme", SCHED_QUOTA_MEMORY, 4096, 3072, 2048,
				 &b) == 0);
	CHECK_STR(b.data, "tenant acme: over its quota of 4096 MB of memory "
			  "(3072 used, 2048 asked)");
	rt_buf_free(&b);
}

TEST(quota_claim)
{
	struct sched_spec s;
	long long mem, inst;

	sched_spec_init(&s);
	sched_quota_claim(&s, &mem, &inst);
	CHECK(inst == 1 && mem == 128);
	s.mode = SCHED_MODE_HOT;
	s.max_instances = 10;
	s.memory = 256;
	sched_quota_claim(&s, &mem, &inst);
	CHECK(inst == 10 && mem == 2560);
	s.mode = SCHED_MODE_COLD;
	s.max_instances = 0;
	s.parallelism = 3;
	sched_quota_claim(&s, &mem, &inst);
	CHECK(inst == 3 && mem == 768);
	/* A daemon runs parallelism instances, whatever its ceiling. */
	s.mode = SCHED_MODE_DAEMON;
	s.max_instances = 10;
	s.parallelism = 2;
	sched_quota_claim(&s, &mem, &inst);
	CHECK(inst == 2 && mem == 512);
	s.parallelism = 0;
	sched_quota_claim(&s, &mem, &inst);
	CHECK(inst == 0 && mem == 0);
	s.parallelism = SCHED_PARALLELISM_MAX;
	s.max_instances = SCHED_MAX_INSTANCES_MAX;
	s.memory = SCHED_MEMORY_MAX;
	sched_quota_claim(&s, &mem, &inst);
	CHECK(mem == (long long)SCHED_PARALLELISM_MAX * SCHED_MEMORY_MAX);
	sched_spec_free(&s);
}

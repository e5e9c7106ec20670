/*
 * test_partial.c - a value the writes of one open have only begun
 * (sched/model/partial.c): what fs/ops.c does not refuse yet (issue 23, item
 * 9).
 */
#include <string.h>

#include "../../sched/sched.h"
#include "unit.h"

static int unfinished(enum sched_attr a, const char *v)
{
	return sched_value_unfinished(a, v, strlen(v));
}

TEST(partial_value_ends_at_a_newline)
{
	CHECK(unfinished(SCHED_ATTR_MEMORY, ""));
	CHECK(unfinished(SCHED_ATTR_MEMORY, "1"));
	CHECK(!unfinished(SCHED_ATTR_MEMORY, "1\n"));
	CHECK(unfinished(SCHED_ATTR_ENV, "A=1\nB"));
	CHECK(!unfinished(SCHED_ATTR_ENV, "A=1\n"));
	CHECK(unfinished(SCHED_ATTR_MOUNTS, "/srv/a\n/srv/b rw"));
	CHECK(!unfinished(SCHED_ATTR_COMMAND, "sleep 1\n"));
}

TEST(partial_config_until_its_json_closes)
{
	CHECK(unfinished(SCHED_ATTR_CONFIG, ""));
	CHECK(unfinished(SCHED_ATTR_CONFIG, " \n\t"));
	CHECK(unfinished(SCHED_ATTR_CONFIG, "{\n"));
	CHECK(unfinished(SCHED_ATTR_CONFIG, "{\"command\": \"a}"));
	CHECK(unfinished(SCHED_ATTR_CONFIG, "{\"command\": \"a\\\"}"));
	CHECK(unfinished(SCHED_ATTR_CONFIG, "{\"tags\": [\"x\"]"));
	CHECK(!unfinished(SCHED_ATTR_CONFIG, "{\"command\": \"a}\"}"));
	CHECK(!unfinished(SCHED_ATTR_CONFIG, "{}"));	/* no newline needed */
	CHECK(!unfinished(SCHED_ATTR_CONFIG, "{}}\n")); /* closed, and bad */
	CHECK(!unfinished(SCHED_ATTR_CONFIG, "x"));	/* never JSON */
	CHECK(!unfinished(SCHED_ATTR_CONFIG, "[1]"));
}

TEST(partial_probe_records_nothing)
{
	struct sched_function fn;

	memset(&fn, 0, sizeof(fn));
	sched_spec_init(&fn.spec);
	CHECK(sched_value_probe(&fn, SCHED_ATTR_MEMORY, "64\n", 3) == 0);
	CHECK(sched_value_probe(&fn, SCHED_ATTR_MEMORY, "6x", 2) < 0);
	CHECK(sched_value_probe(&fn, SCHED_ATTR_CPU, "1", 1) < 0);
	CHECK(sched_value_probe(&fn, SCHED_ATTR_CONFIG, "{", 1) < 0);
	CHECK(sched_value_probe(&fn, SCHED_ATTR_CONFIG, "{\"memory\": 64}",
				14) == 0);
	CHECK(fn.error == NULL);
	sched_spec_free(&fn.spec);
}

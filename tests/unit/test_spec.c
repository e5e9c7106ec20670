/*
 * test_spec.c - the spec parsers, validation and rendering.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../sched/sched.h"
#include "unit.h"

/* Parses `text` into attribute `a` of a default spec and returns the
 * result code; the rendering of the attribute is left in `out`. */
static int parse_render(enum sched_attr a, const char *text, char *out,
			size_t n)
{
	struct sched_spec s;
	struct rt_buf why = { 0 }, r = { 0 };
	int rc;

	sched_spec_init(&s);
	rc = sched_spec_parse(&s, a, text, strlen(text), &why);
	if (rc < 0)
		CHECK(why.len > 0); /* a refusal always says why */
	sched_spec_render(&s, a, &r);
	snprintf(out, n, "%s", r.data ? r.data : "");
	rt_buf_free(&why);
	rt_buf_free(&r);
	sched_spec_free(&s);
	return rc;
}

TEST(spec_defaults)
{
	struct sched_spec s;
	char out[256];

	sched_spec_init(&s);
	CHECK(s.mode == SCHED_MODE_DAEMON);
	CHECK(s.parallelism == 1);
	CHECK(s.memory == 128);
	CHECK(s.timeout == 30000);
	CHECK(s.idle_timeout == 30);
	CHECK(sched_spec_max_instances(&s) == 1);
	CHECK(parse_render(SCHED_ATTR_TAGS_POLICY, "strict", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "strict\n");
	sched_spec_free(&s);
}

TEST(spec_integers)
{
	char out[64];

	CHECK(parse_render(SCHED_ATTR_MEMORY, "512\n", out, sizeof(out)) == 0);
	CHECK_STR(out, "512\n");
	CHECK(parse_render(SCHED_ATTR_MEMORY, "512", out, sizeof(out)) == 0);
	CHECK_STR(out, "512\n");
	CHECK(parse_render(SCHED_ATTR_PARALLELISM, "0", out, sizeof(out)) == 0);
	CHECK_STR(out, "0\n");
	CHECK(parse_render(SCHED_ATTR_TIMEOUT, "3600000", out, sizeof(out)) ==
	      0);
	/* Refused: each leaves the default in place. */
	CHECK(parse_render(SCHED_ATTR_MEMORY, "abc", out, sizeof(out)) ==
	      -EINVAL);
	CHECK_STR(out, "128\n");
	CHECK(parse_render(SCHED_ATTR_MEMORY, "-5", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "0", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "1048577", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "", out, sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "12 ", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "12\n\n", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MEMORY, "99999999999999999999", out,
			   sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_PARALLELISM, "1001", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_TIMEOUT, "0", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_IDLE_TIMEOUT, "86401", out,
			   sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MAX_INSTANCES, "0", out, sizeof(out)) ==
	      -EINVAL);
}

TEST(spec_enums)
{
	char out[64];

	CHECK(parse_render(SCHED_ATTR_MODE, "hot\n", out, sizeof(out)) == 0);
	CHECK_STR(out, "hot\n");
	CHECK(parse_render(SCHED_ATTR_MODE, "cold", out, sizeof(out)) == 0);
	CHECK(parse_render(SCHED_ATTR_FORMAT, "json", out, sizeof(out)) == 0);
	CHECK_STR(out, "json\n");
	CHECK(parse_render(SCHED_ATTR_RESTART_POLICY, "on-failure", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "on-failure\n");
	CHECK(parse_render(SCHED_ATTR_TAGS_POLICY, "loose", out, sizeof(out)) ==
	      0);
	CHECK(parse_render(SCHED_ATTR_MODE, "warm", out, sizeof(out)) ==
	      -EINVAL);
	CHECK_STR(out, "daemon\n");
	CHECK(parse_render(SCHED_ATTR_MODE, "HOT", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MODE, "ho", out, sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MODE, "hott", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_FORMAT, "", out, sizeof(out)) == -EINVAL);
}

TEST(spec_enum_reason_lists_words)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };

	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_RESTART_POLICY, "sometimes", 9,
			       &why) == -EINVAL);
	CHECK_STR(why.data,
		  "restart_policy must be one of always | on-failure | never");
	rt_buf_free(&why);
	sched_spec_free(&s);
}

TEST(spec_strings)
{
	char out[256];

	CHECK(parse_render(SCHED_ATTR_COMMAND, "sleep 1000\n", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "sleep 1000\n");
	CHECK(parse_render(SCHED_ATTR_COMMAND, "\n", out, sizeof(out)) == 0);
	CHECK_STR(out, "\n");
	CHECK(parse_render(SCHED_ATTR_COMMAND, "a\nb", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_CWD, "/srv/app", out, sizeof(out)) == 0);
	CHECK_STR(out, "/srv/app\n");
	CHECK(parse_render(SCHED_ATTR_CWD, "relative", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_CWD, "", out, sizeof(out)) == 0);
	CHECK_STR(out, "\n");
}

TEST(spec_command_limits)
{
	struct sched_spec s;
	char *big = malloc(SCHED_COMMAND_MAX + 2);

	sched_spec_init(&s);
	memset(big, 'x', SCHED_COMMAND_MAX + 1);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_COMMAND, big, SCHED_COMMAND_MAX,
			       NULL) == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_COMMAND, big,
			       SCHED_COMMAND_MAX + 1, NULL) == -EINVAL);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_COMMAND, "a\0b", 3, NULL) ==
	      -EINVAL);
	free(big);
	sched_spec_free(&s);
}

TEST(spec_env)
{
	char out[256];

	CHECK(parse_render(SCHED_ATTR_ENV, "A=1\nB_2=x=y\n", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "A=1\nB_2=x=y\n");
	CHECK(parse_render(SCHED_ATTR_ENV, "EMPTY=", out, sizeof(out)) == 0);
	CHECK_STR(out, "EMPTY=\n");
	CHECK(parse_render(SCHED_ATTR_ENV, "\n", out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	CHECK(parse_render(SCHED_ATTR_ENV, "NOEQUALS", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "1A=x", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "A-B=x", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "=x", out, sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "A=1\nA=2", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "FN_TENANT=x", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ENV, "A=1\n\nB=2", out, sizeof(out)) ==
	      -EINVAL);
}

TEST(spec_tags)
{
	char out[256];

	CHECK(parse_render(SCHED_ATTR_TAGS, "gpu ssd\n", out, sizeof(out)) ==
	      0);
	CHECK_STR(out, "gpu ssd\n");
	CHECK(parse_render(SCHED_ATTR_TAGS, "  gpu   gpu ssd ", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "gpu ssd\n");
	CHECK(parse_render(SCHED_ATTR_TAGS, "", out, sizeof(out)) == 0);
	CHECK_STR(out, "\n");
	CHECK(parse_render(SCHED_ATTR_TAGS, "gpu,ssd", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_TAGS, "-gpu", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_TAGS, "a\nb", out, sizeof(out)) ==
	      -EINVAL);
}

TEST(spec_max_instances_follows_parallelism)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };

	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_PARALLELISM, "4", 1, NULL) == 0);
	CHECK(sched_spec_max_instances(&s) == 4);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_PARALLELISM, "0", 1, NULL) == 0);
	CHECK(sched_spec_max_instances(&s) == 1);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_MAX_INSTANCES, "3", 1, NULL) ==
	      0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_PARALLELISM, "5", 1, NULL) == 0);
	CHECK(sched_spec_check(&s, &why) == -EINVAL);
	CHECK(strstr(why.data, "max_instances") != NULL);
	rt_buf_free(&why);
	sched_spec_free(&s);
}

TEST(spec_config_roundtrip)
{
	const char *in = "{\"command\": \"python3 app.py\", \"mode\": \"hot\","
			 " \"format\": \"json\", \"parallelism\": 2,"
			 " \"max_instances\": 8, \"memory\": 256,"
			 " \"timeout\": 5000, \"idle_timeout\": 10,"
			 " \"env\": {\"K\": \"V\", \"X\": \"a b\"},"
			 " \"cwd\": \"/srv\", \"tags\": [\"gpu\"],"
			 " \"tags_policy\": \"loose\","
			 " \"restart_policy\": \"never\"}";
	struct sched_spec a, b;
	struct rt_buf r = { 0 }, why = { 0 };

	CHECK(sched_spec_from_json(&a, in, strlen(in), &why) == 0);
	CHECK(a.mode == SCHED_MODE_HOT && a.format == SCHED_FORMAT_JSON);
	CHECK(a.parallelism == 2 && a.max_instances == 8 && a.memory == 256);
	CHECK(a.nenv == 2 && strcmp(a.env[1], "X=a b") == 0);
	CHECK(a.ntags == 1 && a.tags_policy == SCHED_TAGS_LOOSE);
	CHECK(sched_spec_render(&a, SCHED_ATTR_CONFIG, &r) == 0);
	CHECK(sched_spec_from_json(&b, r.data, r.len, &why) == 0);
	CHECK(sched_spec_equal(&a, &b));
	rt_buf_reset(&r);
	CHECK(sched_spec_dump(&a, &r) == 0);
	sched_spec_free(&b);
	CHECK(sched_spec_from_json(&b, r.data, r.len, &why) == 0);
	CHECK(sched_spec_equal(&a, &b));
	rt_buf_free(&r);
	rt_buf_free(&why);
	sched_spec_free(&a);
	sched_spec_free(&b);
}

TEST(spec_config_missing_keys_take_defaults)
{
	struct sched_spec s, d;

	sched_spec_init(&d);
	CHECK(sched_spec_from_json(&s, "{}", 2, NULL) == 0);
	CHECK(sched_spec_equal(&s, &d));
	sched_spec_free(&s);
	CHECK(sched_spec_from_json(&s, "{\"memory\": 64}", 14, NULL) == 0);
	CHECK(s.memory == 64 && s.parallelism == 1);
	sched_spec_free(&s);
}

TEST(spec_config_rejects)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"memory\": 64",
		"{\"bogus\": 1}",
		"{\"revision\": 3}",
		"{\"memory\": \"64\"}",
		"{\"memory\": 64.5}",
		"{\"memory\": -1}",
		"{\"mode\": \"warm\"}",
		"{\"env\": [\"A=1\"]}",
		"{\"env\": {\"A\": 1}}",
		"{\"env\": {\"FN_X\": \"1\"}}",
		"{\"tags\": \"gpu\"}",
		"{\"tags\": [1]}",
		"{\"cwd\": \"rel\"}",
		"{\"memory\": 1, \"memory\": 2}",
		"{\"parallelism\": 5, \"max_instances\": 2}",
		"{\"command\": \"a\\nb\"}",
		"{\"env\": {\"A=B\": \"c\"}}",
		"{\"tags\": [\"a b\"]}",
		NULL,
	};
	struct sched_spec s;
	int i;

	for (i = 0; bad[i] != NULL; i++) {
		struct rt_buf why = { 0 };
		int rc = sched_spec_from_json(&s, bad[i], strlen(bad[i]), &why);

		if (rc != -EINVAL)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		CHECK(rc == -EINVAL);
		CHECK(why.len > 0);
		rt_buf_free(&why);
	}
}

TEST(spec_diff_names_changes)
{
	struct sched_spec a, b;
	struct rt_buf d = { 0 };

	sched_spec_init(&a);
	sched_spec_copy(&b, &a);
	CHECK(sched_spec_equal(&a, &b));
	sched_spec_parse(&b, SCHED_ATTR_MEMORY, "64", 2, NULL);
	sched_spec_parse(&b, SCHED_ATTR_TAGS, "gpu", 3, NULL);
	CHECK(!sched_spec_equal(&a, &b));
	CHECK(sched_spec_diff(&a, &b, &d) == 0);
	CHECK_STR(d.data, "memory,tags");
	rt_buf_free(&d);
	sched_spec_free(&a);
	sched_spec_free(&b);
}

TEST(spec_read_only_attrs)
{
	struct sched_spec s;

	sched_spec_init(&s);
	CHECK(!sched_attr_writable(SCHED_ATTR_REVISION));
	CHECK(!sched_attr_writable(SCHED_ATTR_ERROR));
	CHECK(sched_attr_writable(SCHED_ATTR_CONFIG));
	CHECK(sched_spec_parse(&s, SCHED_ATTR_REVISION, "3", 1, NULL) ==
	      -EINVAL);
	sched_spec_free(&s);
}

TEST(spec_config_written_back_keeps_following)
{
	struct sched_spec s;
	struct rt_buf r = { 0 };

	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_PARALLELISM, "3", 1, NULL) == 0);
	CHECK(sched_spec_render(&s, SCHED_ATTR_CONFIG, &r) == 0);
	CHECK(strstr(r.data, "\"max_instances\": 3") != NULL);
	/* Writing back what was read changes nothing... */
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONFIG, r.data, r.len, NULL) ==
	      0);
	CHECK(s.max_instances == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_PARALLELISM, "5", 1, NULL) == 0);
	CHECK(sched_spec_check(&s, NULL) == 0);
	CHECK(sched_spec_max_instances(&s) == 5);
	/* ...but another number pins it. */
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONFIG,
			       "{\"parallelism\": 2, \"max_instances\": 4}", 38,
			       NULL) == 0);
	CHECK(s.max_instances == 4);
	rt_buf_free(&r);
	sched_spec_free(&s);
}

TEST(spec_needs_restart)
{
	struct sched_spec a, b;

	sched_spec_init(&a);
	sched_spec_copy(&b, &a);
	sched_spec_parse(&b, SCHED_ATTR_PARALLELISM, "4", 1, NULL);
	sched_spec_parse(&b, SCHED_ATTR_TAGS, "gpu", 3, NULL);
	sched_spec_parse(&b, SCHED_ATTR_TIMEOUT, "5", 1, NULL);
	CHECK(!sched_spec_needs_restart(&a, &b));
	sched_spec_parse(&b, SCHED_ATTR_ENV, "A=1", 3, NULL);
	CHECK(sched_spec_needs_restart(&a, &b));
	sched_spec_free(&b);
	sched_spec_copy(&b, &a);
	sched_spec_parse(&b, SCHED_ATTR_COMMAND, "x", 1, NULL);
	CHECK(sched_spec_needs_restart(&a, &b));
	sched_spec_free(&a);
	sched_spec_free(&b);
}

TEST(spec_size_limits)
{
	struct sched_spec s;
	struct rt_buf big = { 0 };
	int i;

	sched_spec_init(&s);
	for (i = 0; i < 200; i++)
		rt_buf_printf(&big, "K%d=%0400d\n", i, 0);
	CHECK(big.len > SCHED_ENV_TOTAL_MAX);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_ENV, big.data, big.len, NULL) ==
	      -EINVAL);
	rt_buf_reset(&big);
	for (i = 0; i < 2100; i++)
		rt_buf_puts(&big, "a ");
	CHECK(sched_spec_parse(&s, SCHED_ATTR_TAGS, big.data, big.len, NULL) ==
	      -EINVAL);
	rt_buf_free(&big);
	sched_spec_free(&s);
}

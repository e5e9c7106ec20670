/*
 * test_spec.c - the spec parsers, validation and rendering.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
			 " \"restart_policy\": \"never\", \"ready\": \"tcp\"}";
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

/* Whether `p` is clean text for a reason: UTF-8 without control bytes. */
static int clean_utf8(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0, k, j;
	unsigned cp;

	while (i < n) {
		if (u[i] < 0x80) {
			if (u[i] < 0x20 || u[i] == 0x7f)
				return 0;
			i++;
			continue;
		}
		k = u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : u[i] >= 0xc2 ? 2 : 0;
		if (k == 0 || u[i] > 0xf4 || i + k > n)
			return 0;
		cp = u[i] & (0x7f >> k);
		for (j = 1; j < k; j++) {
			if ((u[i + j] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (u[i + j] & 0x3f);
		}
		if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
		    (cp >= 0x80 && cp <= 0x9f))
			return 0;
		i += k;
	}
	return 1;
}

/* Parses `len` bytes into attribute `a` of a default spec: the result,
 * and the reason of a refusal is checked to be clean. */
static int parse_bytes(enum sched_attr a, const char *v, size_t len)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };
	int rc;

	sched_spec_init(&s);
	rc = sched_spec_parse(&s, a, v, len, &why);
	if (rc < 0) {
		CHECK(why.len > 0);
		CHECK(clean_utf8(why.data, why.len));
		if (!clean_utf8(why.data, why.len))
			fprintf(stderr, "  unclean reason: %s\n", why.data);
	}
	rt_buf_free(&why);
	sched_spec_free(&s);
	return rc;
}

#define PARSE(a, lit) parse_bytes(a, lit, sizeof(lit) - 1)

TEST(spec_text_must_be_utf8)
{
	static const enum sched_attr text[] = { SCHED_ATTR_COMMAND,
						SCHED_ATTR_CWD };
	/* Not UTF-8: a stray byte, a stray continuation, an overlong '/',
	 * a surrogate, past U+10FFFF, a cut sequence, a bad continuation. */
	static const char *const bad_text[] = {
		"\xff",
		"\x80",
		"\xc0\xaf",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xe2\x82",
		"\xe2\x28\xa1",
		"\xf8\x88\x80\x80\x80",
	};
	struct rt_buf why = { 0 };
	struct sched_spec s;
	char v[64], out[128];
	size_t i, t;

	/* The example: refused, and the reason says why. */
	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_COMMAND, "sleep 2000\xff\n", 12,
			       &why) == -EINVAL);
	CHECK_STR(why.data, "command is not UTF-8 text: byte 0xff at offset "
			    "10 is not part of a character");
	CHECK(s.command == NULL);
	rt_buf_free(&why);
	sched_spec_free(&s);
	for (t = 0; t < 2; t++)
		for (i = 0; i < sizeof(bad_text) / sizeof(bad_text[0]); i++) {
			snprintf(v, sizeof(v), "/a%s", bad_text[i]);
			if (parse_bytes(text[t], v, strlen(v)) != -EINVAL)
				fprintf(stderr, "  accepted %s #%zu\n",
					sched_attr_name(text[t]), i);
			CHECK(parse_bytes(text[t], v, strlen(v)) == -EINVAL);
			snprintf(v, sizeof(v), "A=%s", bad_text[i]);
			CHECK(parse_bytes(SCHED_ATTR_ENV, v, strlen(v)) ==
			      -EINVAL);
		}
	CHECK(PARSE(SCHED_ATTR_ENV, "A=1\nB=x\xff\n") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_TAGS, "gpu \xff") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_MEMORY, "12\xff") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_MODE, "hot\xff") == -EINVAL);
	/* UTF-8 of every length is text like any other. */
	CHECK(parse_render(SCHED_ATTR_COMMAND,
			   "echo d\xc3\xa9j\xc3\xa0 "
			   "\xe2\x82\xac \xf0\x9f\x98\x80",
			   out, sizeof(out)) == 0);
	CHECK_STR(out,
		  "echo d\xc3\xa9j\xc3\xa0 \xe2\x82\xac \xf0\x9f\x98\x80\n");
	CHECK(parse_render(SCHED_ATTR_ENV, "GREETING=gr\xc3\xbc\xc3\x9f dich",
			   out, sizeof(out)) == 0);
	CHECK_STR(out, "GREETING=gr\xc3\xbc\xc3\x9f dich\n");
	CHECK(parse_render(SCHED_ATTR_CWD, "/srv/\xe6\x97\xa5", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "/srv/\xe6\x97\xa5\n");
}

TEST(spec_control_characters)
{
	static const char *const config_bad[] = {
		"{\"command\": \"a\\u001bb\"}",
		"{\"command\": \"a\\rb\"}",
		"{\"cwd\": \"/a\\u007f\"}",
		"{\"env\": {\"A\": \"\\u009b\"}}",
		"{\"command\": \"a\\u0000b\"}",
		"{\"env\": {\"A\": \"x\\ny\"}}",
		NULL,
	};
	const char *stored = "{\"command\": \"a\\u001bb\\r\", "
			     "\"env\": {\"A\": \"\\u0001\"}}";
	struct sched_spec s;
	struct rt_buf why = { 0 }, r = { 0 };
	char out[64];
	int i;

	/* Tab is allowed; the other controls (C0, DEL, C1) are not. */
	CHECK(parse_render(SCHED_ATTR_COMMAND, "a\tb", out, sizeof(out)) == 0);
	CHECK_STR(out, "a\tb\n");
	CHECK(parse_render(SCHED_ATTR_ENV, "A=1\t2", out, sizeof(out)) == 0);
	CHECK(PARSE(SCHED_ATTR_COMMAND, "sleep 1\r\n") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_COMMAND, "echo \x1b[31mred") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_COMMAND, "a\x7f") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_COMMAND, "a\xc2\x9b") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_CWD, "/a\x01") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_ENV, "A=\x1b") == -EINVAL);
	CHECK(PARSE(SCHED_ATTR_COMMAND, "a\0b") == -EINVAL);
	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_COMMAND, "echo \x1b[31m", 10,
			       &why) == -EINVAL);
	CHECK_STR(why.data, "command contains the control character U+001B at "
			    "offset 5 (of the controls only tab is allowed)");
	rt_buf_free(&why);
	for (i = 0; config_bad[i] != NULL; i++) {
		if (PARSE(SCHED_ATTR_CONFIG, config_bad[i]) != -EINVAL)
			fprintf(stderr, "  accepted: %s\n", config_bad[i]);
		CHECK(parse_bytes(SCHED_ATTR_CONFIG, config_bad[i],
				  strlen(config_bad[i])) == -EINVAL);
	}
	/* A stored spec keeps what an older fnfs accepted, and stores it
	 * again as it was. */
	CHECK(sched_spec_from_json(&s, stored, strlen(stored), NULL) == 0);
	CHECK_STR(s.command, "a\x1b"
			     "b\r");
	CHECK(s.nenv == 1 && strcmp(s.env[0], "A=\x01") == 0);
	CHECK(sched_spec_dump_checked(&s, &r, &why) == 0);
	rt_buf_free(&r);
	rt_buf_free(&why);
	sched_spec_free(&s);
}

TEST(spec_reasons_quote_cleanly)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };
	char big[300];

	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_MEMORY, "abc\xff\x1b\n", 6,
			       &why) == -EINVAL);
	CHECK_STR(why.data, "memory must be an integer from 1 to 1048576, not "
			    "\"abc\\xff\\x1b\"");
	rt_buf_reset(&why);
	/* A long value is cut at a character, never inside one (a key: an
	 * env line without '=' is not quoted, it may be a secret). */
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '=';
	memcpy(big + 46, "\xc3\xa9", 2);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_ENV, big, sizeof(big), &why) ==
	      -EINVAL);
	CHECK(clean_utf8(why.data, why.len));
	CHECK(strstr(why.data, "\xc3\xa9...\"") != NULL);
	rt_buf_reset(&why);
	memcpy(big + 46, "x\xc3\xa9", 3);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_ENV, big, sizeof(big), &why) ==
	      -EINVAL);
	CHECK(strstr(why.data, "xx...\"") != NULL);
	rt_buf_reset(&why);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_ENV, "A=1\ns3cr3t", 10, &why) ==
	      -EINVAL);
	CHECK_STR(why.data, "env line 2 is not KEY=VALUE");
	rt_buf_reset(&why);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONFIG,
			       "{\"env\": {\"A\": \"s3cr3t\\q\"}}", 26,
			       &why) == -EINVAL);
	CHECK(strstr(why.data, "config: not valid JSON: ") == why.data);
	CHECK(strstr(why.data, "s3cr3t") == NULL);
	rt_buf_reset(&why);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONFIG, "{\"a\xff\": 1}", 9,
			       &why) == -EINVAL);
	CHECK(clean_utf8(why.data, why.len));
	rt_buf_reset(&why);
	CHECK(PARSE(SCHED_ATTR_CONFIG, "{\"\\u001b[2J\": 1}") == -EINVAL);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONFIG, "{\"\\u001b[2J\": 1}", 16,
			       &why) == -EINVAL);
	CHECK_STR(why.data, "config: unknown key \"\\x1b[2J\"");
	rt_buf_free(&why);
	sched_spec_free(&s);
}

TEST(spec_dump_checked_refuses_what_does_not_read_back)
{
	struct sched_spec s;
	struct rt_buf out = { 0 }, why = { 0 }, plain = { 0 };

	/* A valid spec: the same text as sched_spec_dump. */
	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_ENV, "A=1\nB=\xc3\xa9", 8,
			       NULL) == 0);
	CHECK(sched_spec_dump_checked(&s, &out, &why) == 0);
	CHECK(sched_spec_dump(&s, &plain) == 0);
	CHECK_STR(out.data, plain.data);
	sched_spec_free(&s);
	rt_buf_reset(&out);

	/* Specs validation would never make, built by hand. */
	sched_spec_init(&s);
	s.command = strdup("sleep 2000\xff");
	CHECK(sched_spec_dump(&s, &out) == -EINVAL); /* never a missing key */
	CHECK(sched_spec_dump_checked(&s, &out, &why) == -EIO);
	CHECK(out.len == 0);
	CHECK(strstr(why.data, "not UTF-8") != NULL);
	rt_buf_reset(&why);
	CHECK(sched_spec_render(&s, SCHED_ATTR_CONFIG, &out) == -EINVAL);
	sched_spec_free(&s);

	sched_spec_init(&s);
	s.tags = calloc(2, sizeof(char *));
	s.tags[0] = strdup("gpu");
	s.tags[1] = strdup("gpu");
	s.ntags = 2;
	CHECK(sched_spec_dump_checked(&s, &out, &why) == -EIO);
	CHECK(out.len == 0);
	CHECK(strstr(why.data, "(tags)") != NULL);
	rt_buf_reset(&why);
	sched_spec_free(&s);

	sched_spec_init(&s);
	s.cwd = strdup("/a\nb");
	CHECK(sched_spec_dump_checked(&s, &out, &why) == -EIO);
	CHECK(strstr(why.data, "is refused") != NULL);
	sched_spec_free(&s);
	rt_buf_free(&out);
	rt_buf_free(&why);
	rt_buf_free(&plain);
}

/* A fixed-seed generator, so a failure repeats. */
static unsigned long long fuzz_state;

static unsigned fuzz_next(void)
{
	fuzz_state = fuzz_state * 6364136223846793005ULL +
		     1442695040888963407ULL;
	return (unsigned)(fuzz_state >> 33);
}

/* Fills `buf` with a value biased toward trouble; returns its length. */
static size_t fuzz_value(char *buf, size_t cap)
{
	static const char *const pieces[] = {
		"\xff",
		"\xc0\xaf",
		"\xed\xa0\x80",
		"\xe2\x82",
		"\xf4\x90\x80\x80",
		"\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"\xc2\x9b",
		"\0",
		"\n",
		"\r",
		"\t",
		"\x1b",
		"\x7f",
		" ",
		"=",
		"A=",
		"FN_X=",
		"/",
		"gpu",
		"-x",
		"{",
		"}",
		"\"",
		"\\",
		"\\u0000",
		"\\u001b",
		"\\ud800",
		"[",
		"]",
		",",
		":",
		"\"command\"",
		"\"env\"",
		"\"tags\"",
		"\"memory\"",
		"99999999999999999999",
		"0",
		"1",
		"-1",
		"1.5",
		"1e3",
		"null",
		"true",
		"hot",
		"json",
		"loose",
		"never",
		"{\"command\": \"",
		"{\"env\": {\"K\": \"",
		"{\"tags\": [\"",
		"{\"cwd\": \"/",
		"\"}",
		"\"]}",
	};
	size_t n = 0, want = fuzz_next() % 24, k, i;

	for (i = 0; i < want; i++) {
		if (fuzz_next() % 3 == 0) {
			if (n < cap)
				buf[n++] = (char)(fuzz_next() & 0xff);
			continue;
		}
		k = fuzz_next() % (sizeof(pieces) / sizeof(pieces[0]));
		/* "\0" is one byte; the others are C strings. */
		if (pieces[k][0] == '\0' && n < cap) {
			buf[n++] = '\0';
			continue;
		}
		if (n + strlen(pieces[k]) <= cap) {
			memcpy(buf + n, pieces[k], strlen(pieces[k]));
			n += strlen(pieces[k]);
		}
	}
	if (fuzz_next() % 2 && n < cap)
		buf[n++] = '\n';
	return n;
}

TEST(spec_fuzz_accepted_specs_round_trip)
{
	struct sched_spec s, back;
	struct rt_buf why = { 0 }, out = { 0 }, cfg = { 0 };
	char buf[512];
	int i, accepted = 0;

	fuzz_state = 20261123;
	sched_spec_init(&s);
	for (i = 0; i < 200000; i++) {
		enum sched_attr a = (enum sched_attr)(fuzz_next() %
						      SCHED_ATTR_REVISION);
		size_t n = fuzz_value(buf, sizeof(buf));
		int rc;

		rt_buf_reset(&why);
		rc = sched_spec_parse(&s, a, buf, n, &why);
		if (rc == 0)
			rc = sched_spec_check(&s, &why);
		if (rc < 0) {
			CHECK(rc == -EINVAL);
			if (!clean_utf8(why.data, why.len)) {
				fprintf(stderr, "  unclean reason: %s\n",
					why.data);
				CHECK(0);
				break;
			}
			/* A check failure after a parse leaves `s` past the
			 * rule; start again from the defaults. */
			sched_spec_free(&s);
			continue;
		}
		accepted++;
		/* Whatever is accepted is stored and read back unchanged,
		 * and its config is JSON that parses. */
		rt_buf_reset(&out);
		rt_buf_reset(&why);
		if (sched_spec_dump_checked(&s, &out, &why) != 0) {
			fprintf(stderr, "  %s: %s\n", sched_attr_name(a),
				why.data);
			CHECK(0);
			break;
		}
		CHECK(sched_spec_from_json(&back, out.data, out.len, NULL) ==
		      0);
		CHECK(sched_spec_equal(&back, &s));
		sched_spec_free(&back);
		rt_buf_reset(&cfg);
		CHECK(sched_spec_render(&s, SCHED_ATTR_CONFIG, &cfg) == 0);
		CHECK(sched_spec_from_json(&back, cfg.data, cfg.len, NULL) ==
		      0);
		sched_spec_free(&back);
	}
	CHECK(accepted > 1000);
	rt_buf_free(&why);
	rt_buf_free(&out);
	rt_buf_free(&cfg);
	sched_spec_free(&s);
}

TEST(spec_sandbox_attributes)
{
	struct sched_spec a, b;
	char out[512];

	sched_spec_init(&a);
	CHECK(a.pids == 256 && a.cpu == 0);
	CHECK(a.network == SCHED_NETWORK_HOST);
	CHECK(a.isolation == SCHED_ISOLATION_SANDBOX);
	sched_spec_free(&a);
	/* pids: 0 (no limit) up to pid_max */
	CHECK(parse_render(SCHED_ATTR_PIDS, "0", out, sizeof(out)) == 0);
	CHECK(parse_render(SCHED_ATTR_PIDS, "4194304", out, sizeof(out)) == 0);
	CHECK_STR(out, "4194304\n");
	CHECK(parse_render(SCHED_ATTR_PIDS, "4194305", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_PIDS, "-1", out, sizeof(out)) == -EINVAL);
	/* cpu: 0 (no limit) or 10 millicores and up */
	CHECK(parse_render(SCHED_ATTR_CPU, "0", out, sizeof(out)) == 0);
	CHECK(parse_render(SCHED_ATTR_CPU, "9", out, sizeof(out)) == -EINVAL);
	CHECK(parse_render(SCHED_ATTR_CPU, "10", out, sizeof(out)) == 0);
	CHECK(parse_render(SCHED_ATTR_CPU, "1024000", out, sizeof(out)) == 0);
	CHECK(parse_render(SCHED_ATTR_CPU, "1024001", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_CPU, "0.5", out, sizeof(out)) == -EINVAL);
	/* network, isolation */
	CHECK(parse_render(SCHED_ATTR_NETWORK, "none\n", out, sizeof(out)) ==
	      0);
	CHECK_STR(out, "none\n");
	CHECK(parse_render(SCHED_ATTR_NETWORK, "bridge", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_ISOLATION, "none", out, sizeof(out)) ==
	      0);
	CHECK(parse_render(SCHED_ATTR_ISOLATION, "off", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(sched_attr_root_only(SCHED_ATTR_ISOLATION));
	CHECK(!sched_attr_root_only(SCHED_ATTR_NETWORK));
	CHECK(!sched_attr_root_only(SCHED_ATTR_MOUNTS));
	/* mounts: normalised lines */
	CHECK(parse_render(SCHED_ATTR_MOUNTS,
			   "/srv/data\n\n/var/cache/x/ rw\n/opt/a b ro\n", out,
			   sizeof(out)) == 0);
	CHECK_STR(out, "/srv/data\n/var/cache/x rw\n/opt/a b\n");
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "", out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/ rw", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "srv", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/a/../etc", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/a/./b", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/a//b", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/a\n/a/ rw", out, sizeof(out)) ==
	      -EINVAL);
	CHECK(parse_render(SCHED_ATTR_MOUNTS, "/a\x01", out, sizeof(out)) ==
	      -EINVAL);
	/* a config carries them; only isolation is root's */
	sched_spec_init(&a);
	sched_spec_init(&b);
	{
		const char *j =
			"{\"pids\": 64, \"cpu\": 250, \"network\": "
			"\"none\", \"mounts\": [\"/srv\", \"/tmp/x rw\"]}";

		CHECK(sched_spec_parse(&b, SCHED_ATTR_CONFIG, j, strlen(j),
				       NULL) == 0);
	}
	CHECK(b.pids == 64 && b.cpu == 250 && b.network == SCHED_NETWORK_NONE);
	CHECK(b.nmounts == 2 && strcmp(b.mounts[1], "/tmp/x rw") == 0);
	CHECK(sched_spec_needs_restart(&a, &b));
	CHECK(sched_spec_root_only_changed(&a, &b) == -1);
	b.isolation = SCHED_ISOLATION_NONE;
	CHECK(sched_spec_root_only_changed(&a, &b) == SCHED_ATTR_ISOLATION);
	{
		struct rt_buf t = { 0 };
		struct sched_spec c;

		CHECK(sched_spec_dump(&b, &t) == 0);
		CHECK(sched_spec_from_json(&c, t.data, t.len, NULL) == 0);
		CHECK(sched_spec_equal(&b, &c));
		sched_spec_free(&c);
		rt_buf_free(&t);
	}
	sched_spec_free(&a);
	sched_spec_free(&b);
}

TEST(spec_ready_concurrency)
{
	struct sched_spec s;
	struct rt_buf why = { 0 }, r = { 0 };

	sched_spec_init(&s);
	CHECK(strcmp(sched_spec_ready(&s), "started") == 0);
	CHECK(sched_spec_slots(&s) == 1);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_CONCURRENCY, "4\n", 2, &why) ==
	      0);
	CHECK(sched_spec_slots(&s) == 1); /* a daemon serves no calls */
	CHECK(sched_spec_parse(&s, SCHED_ATTR_MODE, "hot", 3, &why) == 0);
	CHECK(sched_spec_slots(&s) == 1); /* line: one call at a time */
	CHECK(sched_spec_parse(&s, SCHED_ATTR_FORMAT, "http", 4, &why) == 0);
	CHECK(sched_spec_slots(&s) == 4);
	CHECK(strcmp(sched_spec_ready(&s), "http:/") == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_FORMAT, "json", 4, &why) == 0);
	CHECK(sched_spec_slots(&s) == 4);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_FORMAT, "lambda", 6, &why) == 0);
	CHECK(sched_spec_slots(&s) == 1);
	CHECK(strcmp(sched_spec_ready(&s), "lambda") == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_READY, "http:/ok", 8, &why) == 0);
	CHECK(strcmp(sched_spec_ready(&s), "http:/ok") == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_READY, "http:/a b", 9, &why) ==
	      -EINVAL);
	CHECK(strcmp(sched_spec_ready(&s), "http:/ok") == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_READY, "", 0, &why) == 0);
	CHECK(strcmp(sched_spec_ready(&s), "lambda") == 0);
	/* The store keeps only what was set; the config shows the effect. */
	CHECK(sched_spec_dump(&s, &r) == 0);
	CHECK(strstr(r.data, "\"ready\"") == NULL);
	rt_buf_reset(&r);
	CHECK(sched_spec_render(&s, SCHED_ATTR_CONFIG, &r) == 0);
	CHECK(strstr(r.data, "\"ready\": \"lambda\"") != NULL);
	CHECK(strstr(r.data, "\"concurrency\": 4") != NULL);
	rt_buf_free(&r);
	rt_buf_free(&why);
	sched_spec_free(&s);
}

TEST(spec_lambda_needs_network_host)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };

	sched_spec_init(&s);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_MODE, "hot", 3, &why) == 0);
	CHECK(sched_spec_parse(&s, SCHED_ATTR_FORMAT, "lambda", 6, &why) == 0);
	CHECK(sched_spec_check(&s, &why) == 0);
	/* A sandbox's own network cannot reach the worker's loopback. */
	s.network = SCHED_NETWORK_NONE;
	rt_buf_reset(&why);
	CHECK(sched_spec_check(&s, &why) == -EINVAL);
	CHECK(why.data != NULL &&
	      strstr(why.data, "format lambda needs network host") != NULL);
	/* Without a sandbox, network none changes nothing: accepted. */
	s.isolation = SCHED_ISOLATION_NONE;
	CHECK(sched_spec_check(&s, &why) == 0);
	/* Nor for another format or mode. */
	s.isolation = SCHED_ISOLATION_SANDBOX;
	s.format = SCHED_FORMAT_JSON;
	CHECK(sched_spec_check(&s, &why) == 0);
	s.format = SCHED_FORMAT_LAMBDA;
	s.mode = SCHED_MODE_COLD;
	CHECK(sched_spec_check(&s, &why) == 0);
	rt_buf_free(&why);
	sched_spec_free(&s);
}

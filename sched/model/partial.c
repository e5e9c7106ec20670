/*
 * partial.c - a value that the writes of one open have only begun.
 */
#include <errno.h>

#include "../sched.h"

/* Whether the JSON text `v` is not closed yet: blanks only, or a string
 * or an object or array still open at its end. */
static int json_open(const char *v, size_t len)
{
	long depth = 0;
	int seen = 0, in_str = 0, esc = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		char c = v[i];

		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		seen = 1;
		if (c == '"')
			in_str = 1;
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
	}
	return !seen || in_str || depth > 0;
}

int sched_value_unfinished(enum sched_attr a, const char *v, size_t len)
{
	if (a == SCHED_ATTR_CONFIG)
		return json_open(v, len);
	return len == 0 || v[len - 1] != '\n';
}

int sched_value_probe(const struct sched_function *fn, enum sched_attr a,
		      const char *v, size_t len)
{
	struct sched_spec next;
	struct rt_buf why = { 0 };
	int rc = sched_spec_copy(&next, &fn->spec);

	if (rc == 0)
		rc = sched_spec_parse(&next, a, v, len, &why);
	if (rc == 0)
		rc = sched_spec_check(&next, &why);
	sched_spec_free(&next);
	rt_buf_free(&why);
	return rc;
}

/*
 * spec_render.c - a spec as text: an attribute file's contents, and the
 * JSON of `config` and of the store, checked to read back to the same spec.
 * Pure: no I/O, no global state.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* =============================================================== rendering */

/* Whether every text of `s` is UTF-8 (what json_string takes). */
static int spec_text_utf8(const struct sched_spec *s)
{
	const char *t[2] = { s->command, s->cwd };
	unsigned cp;
	size_t i, k, n;
	int j;

	for (j = 0; j < 2 + s->nenv + s->ntags + s->nmounts; j++) {
		const char *v = j < 2		  ? t[j]
				: j < 2 + s->nenv ? s->env[j - 2]
				: j < 2 + s->nenv + s->ntags
					? s->tags[j - 2 - s->nenv]
					: s->mounts[j - 2 - s->nenv - s->ntags];

		for (i = 0, n = v ? strlen(v) : 0; i < n; i += k) {
			k = spec__utf8_char((const unsigned char *)v + i, n - i,
					    &cp);
			if (k == 0)
				return 0;
		}
	}
	return 1;
}

/* Adds `v` to `o` (an object with `key`, or an array without) and counts
 * a failure in `*bad`: jansson gives NULL for text that is not UTF-8 and
 * for want of memory, and a value silently missing is what lost commands. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
	int rc = key ? json_object_set_new(o, key, v)
		     : json_array_append_new(o, v);

	if (v == NULL || rc < 0)
		(*bad)++;
}

/* Builds the JSON object of `s`. Returns it, or NULL with -EINVAL (a text
 * that is not UTF-8, which validation keeps out) or -ENOMEM in `*err`. */
static json_t *spec_json(const struct sched_spec *s, int for_store, int *err)
{
	json_t *o = json_object(), *env = json_object(), *tags = json_array(),
	       *mounts = json_array();
	int i, fails = 0;

	if (o == NULL)
		fails++;
	for (i = 0; i < s->nenv && env != NULL; i++) {
		const char *eq = strchr(s->env[i], '=');
		char key[256];
		size_t kl = eq ? (size_t)(eq - s->env[i]) : 0;

		if (eq == NULL || kl >= sizeof(key)) {
			fails++;
			continue;
		}
		memcpy(key, s->env[i], kl);
		key[kl] = '\0';
		put(env, key, json_string(eq + 1), &fails);
	}
	for (i = 0; i < s->ntags && tags != NULL; i++)
		put(tags, NULL, json_string(s->tags[i]), &fails);
	for (i = 0; i < s->nmounts && mounts != NULL; i++)
		put(mounts, NULL, json_string(s->mounts[i]), &fails);
	if (o == NULL) {
		json_decref(env);
		json_decref(tags);
		json_decref(mounts);
		goto out;
	}
	put(o, "command", json_string(s->command ? s->command : ""), &fails);
	put(o, "mode", json_string(spec__mode_words[s->mode]), &fails);
	put(o, "format", json_string(spec__format_words[s->format]), &fails);
	put(o, "parallelism", json_integer(s->parallelism), &fails);
	if (!for_store || s->max_instances > 0)
		put(o, "max_instances",
		    json_integer(for_store ? s->max_instances
					   : sched_spec_max_instances(s)),
		    &fails);
	put(o, "memory", json_integer(s->memory), &fails);
	put(o, "timeout", json_integer(s->timeout), &fails);
	put(o, "idle_timeout", json_integer(s->idle_timeout), &fails);
	put(o, "env", env, &fails);
	put(o, "cwd", json_string(s->cwd ? s->cwd : ""), &fails);
	put(o, "tags", tags, &fails);
	put(o, "tags_policy",
	    json_string(spec__tags_policy_words[s->tags_policy]), &fails);
	put(o, "restart_policy",
	    json_string(spec__restart_words[s->restart_policy]), &fails);
	put(o, "pids", json_integer(s->pids), &fails);
	put(o, "cpu", json_integer(s->cpu), &fails);
	put(o, "network", json_string(spec__network_words[s->network]), &fails);
	put(o, "isolation", json_string(spec__isolation_words[s->isolation]),
	    &fails);
	put(o, "mounts", mounts, &fails);
	if (!for_store || (s->ready != NULL && s->ready[0] != '\0'))
		put(o, "ready",
		    json_string(for_store ? s->ready : sched_spec_ready(s)),
		    &fails);
	put(o, "ready_timeout", json_integer(s->ready_timeout), &fails);
	put(o, "concurrency", json_integer(s->concurrency), &fails);
out:
	if (fails > 0) {
		json_decref(o);
		*err = spec_text_utf8(s) ? -ENOMEM : -EINVAL;
		return NULL;
	}
	return o;
}

static int append_json(struct rt_buf *out, json_t *o, size_t flags)
{
	char *text = json_dumps(o, flags);
	int rc;

	if (text == NULL)
		return -ENOMEM;
	rc = rt_buf_puts(out, text);
	free(text);
	return rc;
}

int sched_spec_dump(const struct sched_spec *s, struct rt_buf *out)
{
	int rc = 0;
	json_t *o = spec_json(s, 1, &rc);

	if (o == NULL)
		return rc;
	rc = append_json(out, o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return rc;
}

int sched_spec_dump_checked(const struct sched_spec *s, struct rt_buf *out,
			    struct rt_buf *why)
{
	struct rt_buf text = { 0 }, diff = { 0 };
	struct sched_spec back;
	int rc;

	sched_spec_init(&back);
	rc = sched_spec_dump(s, &text);
	if (rc == -EINVAL) {
		rc = spec__bad(why, "the spec holds text that is not UTF-8 and "
				    "cannot be stored (a bug of fnfs)");
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = sched_spec_from_json(&back, text.data, text.len, NULL);
	if (rc == -ENOMEM)
		goto out;
	if (rc < 0 || !sched_spec_equal(&back, s)) {
		if (rc == 0)
			sched_spec_diff(s, &back, &diff);
		rc = spec__bad(
			why,
			"the spec does not read back as written (%s), so it "
			"is not stored (a bug of fnfs)",
			rc < 0	    ? "its stored form is refused"
			: diff.data ? diff.data
				    : "?");
		goto out;
	}
	rc = rt_buf_append(out, text.data, text.len);
out:
	sched_spec_free(&back);
	rt_buf_free(&text);
	rt_buf_free(&diff);
	/* Whatever `spec__bad` said, a spec that cannot round-trip is our bug.
	 */
	return rc == -EINVAL ? -EIO : rc;
}

int sched_spec_render(const struct sched_spec *s, enum sched_attr a,
		      struct rt_buf *out)
{
	int i, rc = 0;

	switch (a) {
	case SCHED_ATTR_CONFIG: {
		json_t *o = spec_json(s, 0, &rc);

		if (o == NULL)
			return rc;
		rc = append_json(out, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(o);
		return rc < 0 ? rc : rt_buf_puts(out, "\n");
	}
	case SCHED_ATTR_COMMAND:
		return rt_buf_printf(out, "%s\n", s->command ? s->command : "");
	case SCHED_ATTR_CWD:
		return rt_buf_printf(out, "%s\n", s->cwd ? s->cwd : "");
	case SCHED_ATTR_READY:
		return rt_buf_printf(out, "%s\n", sched_spec_ready(s));
	case SCHED_ATTR_MODE:
	case SCHED_ATTR_FORMAT:
	case SCHED_ATTR_TAGS_POLICY:
	case SCHED_ATTR_RESTART_POLICY:
	case SCHED_ATTR_NETWORK:
	case SCHED_ATTR_ISOLATION:
		return rt_buf_printf(out, "%s\n",
				     spec__enum_words(a)[spec__enum_get(s, a)]);
	case SCHED_ATTR_MAX_INSTANCES:
		return rt_buf_printf(out, "%d\n", sched_spec_max_instances(s));
	case SCHED_ATTR_PARALLELISM:
	case SCHED_ATTR_MEMORY:
	case SCHED_ATTR_TIMEOUT:
	case SCHED_ATTR_IDLE_TIMEOUT:
	case SCHED_ATTR_PIDS:
	case SCHED_ATTR_CPU:
	case SCHED_ATTR_READY_TIMEOUT:
	case SCHED_ATTR_CONCURRENCY:
		return rt_buf_printf(
			out, "%d\n",
			*spec__int_field((struct sched_spec *)s, a));
	case SCHED_ATTR_ENV:
		for (i = 0; i < s->nenv && rc == 0; i++)
			rc = rt_buf_printf(out, "%s\n", s->env[i]);
		return rc;
	case SCHED_ATTR_MOUNTS:
		for (i = 0; i < s->nmounts && rc == 0; i++)
			rc = rt_buf_printf(out, "%s\n", s->mounts[i]);
		return rc;
	case SCHED_ATTR_TAGS:
		for (i = 0; i < s->ntags && rc == 0; i++)
			rc = rt_buf_printf(out, "%s%s", i ? " " : "",
					   s->tags[i]);
		return rc < 0 ? rc : rt_buf_puts(out, "\n");
	default: return -EINVAL;
	}
}

/*
 * spec_parse.c - a spec from what is written: one attribute file's text,
 * or the `config` JSON, each value handed to a validator of spec_check.c.
 * Pure: no I/O, no global state.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* ================================================================= parsing */

int sched_parse_digits(const char *v, size_t len, long long *out)
{
	long long x = 0;
	size_t i;

	if (len == 0 || len > 18)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Puts the `n` strings `v` in place of `*field` when `rc` is 0, else
 * frees them. Returns `rc`. */
static int strv_take(char ***field, int *nfield, char **v, int n, int rc)
{
	if (rc == 0) {
		spec__strv_free(*field, *nfield);
		*field = v;
		*nfield = n;
	} else {
		spec__strv_free(v, n);
	}
	return rc;
}

static int parse_env_text(struct sched_spec *s, const char *v, size_t len,
			  struct rt_buf *why)
{
	char **env = NULL;
	int n = 0, rc = 0;
	size_t i = 0;

	while (i < len && rc == 0) {
		const char *nl = memchr(v + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (v + i)) : len - i;

		rc = spec__check_env_entry(env, n, v + i, l, 1, why);
		if (rc == 0)
			rc = spec__strv_push(&env, &n, v + i, l);
		i += l + 1;
	}
	return strv_take(&s->env, &s->nenv, env, n, rc);
}

static int parse_tags_text(struct sched_spec *s, const char *v, size_t len,
			   struct rt_buf *why)
{
	char **tags = NULL;
	int n = 0, rc = 0;
	size_t i = 0;

	if (len > SCHED_TAGS_TEXT_MAX)
		return spec__bad(why, "tags is longer than %d bytes",
				 SCHED_TAGS_TEXT_MAX);
	while (i < len && rc == 0) {
		size_t j = i;

		if (v[i] == ' ') {
			i++;
			continue;
		}
		while (j < len && v[j] != ' ')
			j++;
		rc = spec__add_tag(&tags, &n, v + i, j - i, why);
		i = j;
	}
	return strv_take(&s->tags, &s->ntags, tags, n, rc);
}

static int parse_mounts_text(struct sched_spec *s, const char *v, size_t len,
			     struct rt_buf *why)
{
	char **mounts = NULL;
	int n = 0, rc = 0;
	size_t i = 0;

	while (i < len && rc == 0) {
		const char *nl = memchr(v + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (v + i)) : len - i;

		if (l > 0)
			rc = spec__add_mount(&mounts, &n, v + i, l, 1, why);
		i += l + 1;
	}
	return strv_take(&s->mounts, &s->nmounts, mounts, n, rc);
}

static int spec_from_json(struct sched_spec *s, const char *buf, size_t len,
			  int strict, struct rt_buf *why);

int sched_spec_parse(struct sched_spec *s, enum sched_attr a, const char *buf,
		     size_t len, struct rt_buf *why)
{
	char q[SHOWN_CAP];
	long long x;

	if (a == SCHED_ATTR_CONFIG) {
		struct sched_spec n;
		int rc = spec_from_json(&n, buf, len, 1, why);

		if (rc < 0)
			return rc;
		/* A config read and written back shows max_instances as a
		 * number: while it followed parallelism, it keeps following
		 * when the number is the one it followed to. */
		if (s->max_instances == 0 &&
		    n.max_instances == (n.parallelism > 1 ? n.parallelism : 1))
			n.max_instances = 0;
		sched_spec_free(s);
		*s = n;
		return 0;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	switch (a) {
	case SCHED_ATTR_COMMAND: return spec__set_command(s, buf, len, 1, why);
	case SCHED_ATTR_CWD: return spec__set_cwd(s, buf, len, 1, why);
	case SCHED_ATTR_READY: return spec__set_ready(s, buf, len, why);
	case SCHED_ATTR_ENV: return parse_env_text(s, buf, len, why);
	case SCHED_ATTR_MOUNTS: return parse_mounts_text(s, buf, len, why);
	case SCHED_ATTR_TAGS:
		if (memchr(buf, '\n', len) || memchr(buf, '\0', len))
			return spec__bad(why, "tags must be one line of words "
					      "separated by spaces");
		return parse_tags_text(s, buf, len, why);
	case SCHED_ATTR_MODE:
	case SCHED_ATTR_FORMAT:
	case SCHED_ATTR_TAGS_POLICY:
	case SCHED_ATTR_RESTART_POLICY:
	case SCHED_ATTR_NETWORK:
	case SCHED_ATTR_ISOLATION: return spec__set_enum(s, a, buf, len, why);
	case SCHED_ATTR_PIDS:
	case SCHED_ATTR_CPU:
	case SCHED_ATTR_PARALLELISM:
	case SCHED_ATTR_MAX_INSTANCES:
	case SCHED_ATTR_MEMORY:
	case SCHED_ATTR_TIMEOUT:
	case SCHED_ATTR_READY_TIMEOUT:
	case SCHED_ATTR_CONCURRENCY:
	case SCHED_ATTR_IDLE_TIMEOUT: {
		long long lo = 0, hi = 0;

		if (sched_parse_digits(buf, len, &x) == 0)
			return spec__set_int(s, a, x, why);
		spec__int_range(a, &lo, &hi);
		return spec__bad(
			why,
			"%s must be an integer from %lld to %lld, not \"%s\"",
			spec__attrs[a].name, lo, hi, spec__shown(q, buf, len));
	}
	default: return spec__bad(why, "%s is read-only", sched_attr_name(a));
	}
}

/* Applies the JSON object `v` of env to `s`. */
static int json_set_env(struct sched_spec *s, json_t *v, int strict,
			struct rt_buf *why)
{
	char q[SHOWN_CAP];
	const char *k;
	json_t *val;
	struct rt_buf kv = { 0 };
	int rc = 0;

	if (!json_is_object(v))
		return spec__bad(why,
				 "config: env must be an object of strings");
	json_object_foreach (v, k, val) {
		if (!json_is_string(val)) {
			rc = spec__bad(why, "config: env.%s must be a string",
				       spec__shown(q, k, strlen(k)));
			break;
		}
		if (!spec__env_key_valid(k, strlen(k))) {
			rc = spec__bad(why,
				       "config: env key \"%s\" is not a valid "
				       "variable name",
				       spec__shown(q, k, strlen(k)));
			break;
		}
		rt_buf_reset(&kv);
		if (rt_buf_printf(&kv, "%s=", k) < 0 ||
		    rt_buf_append(&kv, json_string_value(val),
				  json_string_length(val)) < 0) {
			rc = -ENOMEM;
			break;
		}
		rc = spec__check_env_entry(s->env, s->nenv, kv.data, kv.len,
					   strict, why);
		if (rc == 0)
			rc = spec__strv_push(&s->env, &s->nenv, kv.data,
					     kv.len);
		if (rc < 0)
			break;
	}
	rt_buf_free(&kv);
	return rc;
}

/* Applies one JSON key to `s`. */
static int json_set(struct sched_spec *s, const char *key, json_t *v,
		    int strict, struct rt_buf *why)
{
	char q[SHOWN_CAP];
	size_t idx;
	json_t *t;
	int i, rc;

	for (i = SCHED_ATTR_COMMAND; i <= SCHED_ATTR_LAST_SPEC; i++)
		if (strcmp(spec__attrs[i].name, key) == 0)
			break;
	if (i > SCHED_ATTR_LAST_SPEC)
		return spec__bad(why, "config: unknown key \"%s\"",
				 spec__shown(q, key, strlen(key)));
	switch ((enum sched_attr)i) {
	case SCHED_ATTR_COMMAND:
	case SCHED_ATTR_CWD:
		if (!json_is_string(v))
			return spec__bad(why, "config: %s must be a string",
					 key);
		return i == SCHED_ATTR_COMMAND
			       ? spec__set_command(s, json_string_value(v),
						   json_string_length(v),
						   strict, why)
			       : spec__set_cwd(s, json_string_value(v),
					       json_string_length(v), strict,
					       why);
	case SCHED_ATTR_MODE:
	case SCHED_ATTR_FORMAT:
	case SCHED_ATTR_TAGS_POLICY:
	case SCHED_ATTR_RESTART_POLICY:
	case SCHED_ATTR_NETWORK:
	case SCHED_ATTR_ISOLATION:
		if (!json_is_string(v))
			return spec__bad(why, "config: %s must be a string",
					 key);
		return spec__set_enum(s, (enum sched_attr)i,
				      json_string_value(v),
				      json_string_length(v), why);
	case SCHED_ATTR_ENV: return json_set_env(s, v, strict, why);
	case SCHED_ATTR_READY:
		if (!json_is_string(v))
			return spec__bad(why, "config: ready must be a string");
		return spec__set_ready(s, json_string_value(v),
				       json_string_length(v), why);
	case SCHED_ATTR_TAGS:
		if (!json_is_array(v))
			return spec__bad(
				why,
				"config: tags must be an array of strings");
		json_array_foreach (v, idx, t) {
			if (!json_is_string(t))
				return spec__bad(
					why, "config: tags must be strings");
			rc = spec__add_tag(&s->tags, &s->ntags,
					   json_string_value(t),
					   json_string_length(t), why);
			if (rc < 0)
				return rc;
		}
		return 0;
	case SCHED_ATTR_MOUNTS:
		if (!json_is_array(v))
			return spec__bad(why,
					 "config: mounts must be an array of "
					 "strings (\"PATH\" or \"PATH rw\")");
		json_array_foreach (v, idx, t) {
			if (!json_is_string(t))
				return spec__bad(
					why, "config: mounts must be strings");
			rc = spec__add_mount(
				&s->mounts, &s->nmounts, json_string_value(t),
				json_string_length(t), strict, why);
			if (rc < 0)
				return rc;
		}
		return 0;
	default:
		if (!json_is_integer(v))
			return spec__bad(why, "config: %s must be an integer",
					 key);
		return spec__set_int(s, (enum sched_attr)i,
				     json_integer_value(v), why);
	}
}

/* Parses a spec from JSON; `strict` refuses the control characters that
 * only a stored spec may still hold (see check_text). */
static int spec_from_json(struct sched_spec *s, const char *buf, size_t len,
			  int strict, struct rt_buf *why)
{
	char q[SHOWN_ROOM(JSON_ERROR_TEXT_LENGTH)];
	json_error_t jerr;
	json_t *root, *v;
	const char *key;
	int rc = 0;

	sched_spec_init(s);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		/* jansson's text may quote the bytes it choked on, a secret
		 * of env maybe: its " near '...'" is left out. */
		char *near = strstr(jerr.text, " near '");

		if (near != NULL)
			*near = '\0';
		return spec__bad(
			why, "config: not valid JSON: %s (line %d, column %d)",
			spec__shown_max(q, jerr.text, strlen(jerr.text),
					JSON_ERROR_TEXT_LENGTH),
			jerr.line, jerr.column);
	}
	if (!json_is_object(root)) {
		rc = spec__bad(why, "config must be a JSON object");
		goto out;
	}
	json_object_foreach (root, key, v) {
		rc = json_set(s, key, v, strict, why);
		if (rc < 0)
			goto out;
	}
	rc = sched_spec_check(s, why);
out:
	json_decref(root);
	if (rc < 0)
		sched_spec_free(s);
	return rc;
}

int sched_spec_from_json(struct sched_spec *s, const char *buf, size_t len,
			 struct rt_buf *why)
{
	return spec_from_json(s, buf, len, 0, why);
}

int sched_spec_check(const struct sched_spec *s, struct rt_buf *why)
{
	if (s->max_instances > 0 && s->parallelism > s->max_instances)
		return spec__bad(
			why,
			"parallelism %d is above max_instances %d; raise "
			"max_instances first",
			s->parallelism, s->max_instances);
	if (strcmp(sched_spec_ready(s), "lambda") == 0 &&
	    !(s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_LAMBDA))
		return spec__bad(why,
				 "ready lambda is for a hot function of format "
				 "lambda; set mode and format first");
	/* The runtime API is on the worker's loopback, which a network
	 * namespace of its own does not reach (decisions.md). */
	if (s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_LAMBDA &&
	    s->isolation == SCHED_ISOLATION_SANDBOX &&
	    s->network == SCHED_NETWORK_NONE)
		return spec__bad(
			why, "format lambda needs network host: the runtime "
			     "API is on the worker's loopback, which network "
			     "none cuts off");
	return 0;
}

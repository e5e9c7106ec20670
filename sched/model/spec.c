/*
 * spec.c - a function's spec: the attribute table, defaults, copies and
 * comparisons. Pure: no I/O, no global state, so every rule here is
 * unit-tested and can be fuzzed.
 *
 * The spec is cut in four files of one concern each, which share
 * spec_internal.h: this one; spec_check.c (the validators: each value
 * checked and stored); spec_parse.c (attribute files and `config` JSON
 * into validators); spec_render.c (a spec back into text and JSON).
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* ========================================================== attribute table */

const struct spec__attr spec__attrs[SCHED_ATTR_COUNT] = {
	[SCHED_ATTR_CONFIG] = { "config", 1 },
	[SCHED_ATTR_COMMAND] = { "command", 1 },
	[SCHED_ATTR_MODE] = { "mode", 1 },
	[SCHED_ATTR_FORMAT] = { "format", 1 },
	[SCHED_ATTR_PARALLELISM] = { "parallelism", 1 },
	[SCHED_ATTR_MAX_INSTANCES] = { "max_instances", 1 },
	[SCHED_ATTR_MEMORY] = { "memory", 1 },
	[SCHED_ATTR_TIMEOUT] = { "timeout", 1 },
	[SCHED_ATTR_IDLE_TIMEOUT] = { "idle_timeout", 1 },
	[SCHED_ATTR_ENV] = { "env", 1 },
	[SCHED_ATTR_CWD] = { "cwd", 1 },
	[SCHED_ATTR_TAGS] = { "tags", 1 },
	[SCHED_ATTR_TAGS_POLICY] = { "tags_policy", 1 },
	[SCHED_ATTR_RESTART_POLICY] = { "restart_policy", 1 },
	[SCHED_ATTR_PIDS] = { "pids", 1 },
	[SCHED_ATTR_CPU] = { "cpu", 1 },
	[SCHED_ATTR_NETWORK] = { "network", 1 },
	[SCHED_ATTR_ISOLATION] = { "isolation", 1 },
	[SCHED_ATTR_MOUNTS] = { "mounts", 1 },
	[SCHED_ATTR_READY] = { "ready", 1 },
	[SCHED_ATTR_READY_TIMEOUT] = { "ready_timeout", 1 },
	[SCHED_ATTR_CONCURRENCY] = { "concurrency", 1 },
	[SCHED_ATTR_REVISION] = { "revision", 0 },
	[SCHED_ATTR_ERROR] = { "error", 0 },
};

const char *sched_attr_name(enum sched_attr a)
{
	return (unsigned)a < SCHED_ATTR_COUNT ? spec__attrs[a].name : "?";
}

int sched_attr_writable(enum sched_attr a)
{
	return (unsigned)a < SCHED_ATTR_COUNT && spec__attrs[a].writable;
}

int sched_attr_root_only(enum sched_attr a)
{
	/* Leaving the sandbox gives a function the whole system's view. */
	return a == SCHED_ATTR_ISOLATION;
}

/* The words of the enum-valued attributes, indexed by value. */
const char *const spec__mode_words[] = { "daemon", "hot", "cold", NULL };
const char *const spec__format_words[] = { "line", "json", "http", "lambda",
					   NULL };
const char *const spec__tags_policy_words[] = { "strict", "loose", NULL };
const char *const spec__restart_words[] = { "always", "on-failure", "never",
					    NULL };
const char *const spec__network_words[] = { "host", "none", NULL };
const char *const spec__isolation_words[] = { "sandbox", "none", NULL };

/* ================================================================ lifetime */

void sched_spec_init(struct sched_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->mode = SCHED_MODE_DAEMON;
	s->format = SCHED_FORMAT_LINE;
	s->parallelism = 1;
	s->max_instances = 0;
	s->memory = 128;
	s->timeout = 30000;
	s->idle_timeout = 30;
	s->tags_policy = SCHED_TAGS_STRICT;
	s->restart_policy = SCHED_RESTART_ALWAYS;
	s->pids = SCHED_PIDS_DEFAULT;
	s->cpu = 0;
	s->network = SCHED_NETWORK_HOST;
	s->isolation = SCHED_ISOLATION_SANDBOX;
	s->ready_timeout = 30;
	s->concurrency = 1;
}

void spec__strv_free(char **v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void sched_spec_free(struct sched_spec *s)
{
	free(s->command);
	free(s->cwd);
	free(s->ready);
	spec__strv_free(s->env, s->nenv);
	spec__strv_free(s->tags, s->ntags);
	spec__strv_free(s->mounts, s->nmounts);
	sched_spec_init(s);
}

static int strv_copy(char ***dst, char *const *src, int n)
{
	int i;

	*dst = NULL;
	if (n == 0)
		return 0;
	*dst = calloc((size_t)n, sizeof(char *));
	if (*dst == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		(*dst)[i] = strdup(src[i]);
		if ((*dst)[i] == NULL) {
			spec__strv_free(*dst, i);
			*dst = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static char *str_or_null_dup(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

int sched_spec_copy(struct sched_spec *dst, const struct sched_spec *src)
{
	int rc = 0;

	*dst = *src;
	dst->command = NULL;
	dst->cwd = NULL;
	dst->env = NULL;
	dst->tags = NULL;
	dst->mounts = NULL;
	dst->command = str_or_null_dup(src->command);
	dst->cwd = str_or_null_dup(src->cwd);
	dst->ready = str_or_null_dup(src->ready);
	if ((src->command && !dst->command) || (src->cwd && !dst->cwd) ||
	    (src->ready && !dst->ready))
		rc = -ENOMEM;
	if (rc == 0)
		rc = strv_copy(&dst->env, src->env, src->nenv);
	if (rc == 0)
		rc = strv_copy(&dst->tags, src->tags, src->ntags);
	if (rc == 0)
		rc = strv_copy(&dst->mounts, src->mounts, src->nmounts);
	if (rc < 0) {
		dst->nenv = dst->env ? dst->nenv : 0;
		dst->ntags = dst->tags ? dst->ntags : 0;
		dst->nmounts = 0;
		sched_spec_free(dst);
	}
	return rc;
}

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int strv_eq(char *const *a, int na, char *const *b, int nb)
{
	int i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

/* Whether attribute `a` has the same value in both specs. */
static int attr_eq(const struct sched_spec *x, const struct sched_spec *y,
		   enum sched_attr a)
{
	switch (a) {
	case SCHED_ATTR_COMMAND: return str_eq(x->command, y->command);
	case SCHED_ATTR_MODE: return x->mode == y->mode;
	case SCHED_ATTR_FORMAT: return x->format == y->format;
	case SCHED_ATTR_PARALLELISM: return x->parallelism == y->parallelism;
	case SCHED_ATTR_MAX_INSTANCES:
		return x->max_instances == y->max_instances;
	case SCHED_ATTR_MEMORY: return x->memory == y->memory;
	case SCHED_ATTR_TIMEOUT: return x->timeout == y->timeout;
	case SCHED_ATTR_IDLE_TIMEOUT: return x->idle_timeout == y->idle_timeout;
	case SCHED_ATTR_ENV: return strv_eq(x->env, x->nenv, y->env, y->nenv);
	case SCHED_ATTR_CWD: return str_eq(x->cwd, y->cwd);
	case SCHED_ATTR_TAGS:
		return strv_eq(x->tags, x->ntags, y->tags, y->ntags);
	case SCHED_ATTR_TAGS_POLICY: return x->tags_policy == y->tags_policy;
	case SCHED_ATTR_RESTART_POLICY:
		return x->restart_policy == y->restart_policy;
	case SCHED_ATTR_PIDS: return x->pids == y->pids;
	case SCHED_ATTR_CPU: return x->cpu == y->cpu;
	case SCHED_ATTR_NETWORK: return x->network == y->network;
	case SCHED_ATTR_ISOLATION: return x->isolation == y->isolation;
	case SCHED_ATTR_MOUNTS:
		return strv_eq(x->mounts, x->nmounts, y->mounts, y->nmounts);
	case SCHED_ATTR_READY:
		/* Unset (following the format) is not the same as set to
		 * what the format gives now, as for max_instances. */
		return str_eq(x->ready, y->ready);
	case SCHED_ATTR_READY_TIMEOUT:
		return x->ready_timeout == y->ready_timeout;
	case SCHED_ATTR_CONCURRENCY: return x->concurrency == y->concurrency;
	default: return 1;
	}
}

int sched_spec_equal(const struct sched_spec *a, const struct sched_spec *b)
{
	int i;

	for (i = SCHED_ATTR_COMMAND; i <= SCHED_ATTR_LAST_SPEC; i++)
		if (!attr_eq(a, b, (enum sched_attr)i))
			return 0;
	return 1;
}

int sched_spec_root_only_changed(const struct sched_spec *a,
				 const struct sched_spec *b)
{
	int i;

	for (i = SCHED_ATTR_COMMAND; i <= SCHED_ATTR_LAST_SPEC; i++)
		if (sched_attr_root_only((enum sched_attr)i) &&
		    !attr_eq(a, b, (enum sched_attr)i))
			return i;
	return -1;
}

int sched_spec_needs_restart(const struct sched_spec *a,
			     const struct sched_spec *b)
{
	static const enum sched_attr run[] = {
		SCHED_ATTR_COMMAND,
		SCHED_ATTR_MODE,
		SCHED_ATTR_FORMAT,
		SCHED_ATTR_MEMORY,
		SCHED_ATTR_ENV,
		SCHED_ATTR_CWD,
		SCHED_ATTR_RESTART_POLICY,
		SCHED_ATTR_PIDS,
		SCHED_ATTR_CPU,
		SCHED_ATTR_NETWORK,
		SCHED_ATTR_ISOLATION,
		SCHED_ATTR_MOUNTS,
		SCHED_ATTR_READY,
		SCHED_ATTR_READY_TIMEOUT,
	};
	size_t i;

	for (i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		if (!attr_eq(a, b, run[i]))
			return 1;
	return 0;
}

int sched_spec_diff(const struct sched_spec *a, const struct sched_spec *b,
		    struct rt_buf *out)
{
	int i, rc = 0, first = 1;

	for (i = SCHED_ATTR_COMMAND; i <= SCHED_ATTR_LAST_SPEC && rc == 0;
	     i++) {
		if (attr_eq(a, b, (enum sched_attr)i))
			continue;
		rc = rt_buf_printf(out, "%s%s", first ? "" : ",",
				   spec__attrs[i].name);
		first = 0;
	}
	return rc;
}

int sched_spec_max_instances(const struct sched_spec *s)
{
	if (s->max_instances > 0)
		return s->max_instances;
	return s->parallelism > 1 ? s->parallelism : 1;
}

const char *sched_spec_ready(const struct sched_spec *s)
{
	if (s->ready != NULL && s->ready[0] != '\0')
		return s->ready;
	if (s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_HTTP)
		return "http:/";
	if (s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_LAMBDA)
		return "lambda";
	return "started";
}

int sched_spec_slots(const struct sched_spec *s)
{
	if (s->mode == SCHED_MODE_HOT &&
	    (s->format == SCHED_FORMAT_HTTP || s->format == SCHED_FORMAT_JSON))
		return s->concurrency;
	return 1;
}

const char *sched_format_word(enum sched_format f)
{
	return (unsigned)f < sizeof(spec__format_words) /
					       sizeof(spec__format_words[0]) -
				       1
		       ? spec__format_words[f]
		       : "?";
}

/*
 * spec.c - a function's spec: defaults, parsing of attribute files and of
 * `config` JSON, validation and rendering. Pure: no I/O, no global state,
 * so every rule here is unit-tested and can be fuzzed.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../sched.h"

/* ========================================================== attribute table */

static const struct {
	const char *name;
	int writable;
} attrs[SCHED_ATTR_COUNT] = {
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
	return (unsigned)a < SCHED_ATTR_COUNT ? attrs[a].name : "?";
}

int sched_attr_writable(enum sched_attr a)
{
	return (unsigned)a < SCHED_ATTR_COUNT && attrs[a].writable;
}

int sched_attr_root_only(enum sched_attr a)
{
	/* Leaving the sandbox gives a function the whole system's view. */
	return a == SCHED_ATTR_ISOLATION;
}

/* The words of the enum-valued attributes, indexed by value. */
static const char *const mode_words[] = { "daemon", "hot", "cold", NULL };
static const char *const format_words[] = { "line", "json", "http", "lambda",
					    NULL };
static const char *const tags_policy_words[] = { "strict", "loose", NULL };
static const char *const restart_words[] = { "always", "on-failure", "never",
					     NULL };
static const char *const network_words[] = { "host", "none", NULL };
static const char *const isolation_words[] = { "sandbox", "none", NULL };

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

static void strv_free(char **v, int n)
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
	strv_free(s->env, s->nenv);
	strv_free(s->tags, s->ntags);
	strv_free(s->mounts, s->nmounts);
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
			strv_free(*dst, i);
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
				   attrs[i].name);
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
	return (unsigned)f < sizeof(format_words) / sizeof(format_words[0]) - 1
		       ? format_words[f]
		       : "?";
}

/* ================================================================ validators
 *
 * Each validator takes a typed value, checks it, and on success stores it
 * in the spec. The text parsers and the JSON parser both end here, so a
 * value means the same whichever file it arrives through.
 */

static int bad(struct rt_buf *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct rt_buf *why, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL) {
		va_start(ap, fmt);
		rt_buf_vprintf(why, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The inclusive range of each integer attribute. */
static int int_range(enum sched_attr a, long long *lo, long long *hi)
{
	switch (a) {
	case SCHED_ATTR_PARALLELISM:
		*lo = 0, *hi = SCHED_PARALLELISM_MAX;
		return 1;
	case SCHED_ATTR_MAX_INSTANCES:
		*lo = 1, *hi = SCHED_MAX_INSTANCES_MAX;
		return 1;
	case SCHED_ATTR_MEMORY: *lo = 1, *hi = SCHED_MEMORY_MAX; return 1;
	case SCHED_ATTR_TIMEOUT: *lo = 1, *hi = SCHED_TIMEOUT_MAX; return 1;
	case SCHED_ATTR_IDLE_TIMEOUT:
		*lo = 0, *hi = SCHED_IDLE_TIMEOUT_MAX;
		return 1;
	case SCHED_ATTR_PIDS: *lo = 0, *hi = SCHED_PIDS_MAX; return 1;
	case SCHED_ATTR_CPU: *lo = 0, *hi = SCHED_CPU_MAX; return 1;
	case SCHED_ATTR_READY_TIMEOUT:
		*lo = 1, *hi = SCHED_READY_TIMEOUT_MAX;
		return 1;
	case SCHED_ATTR_CONCURRENCY:
		*lo = 1, *hi = SCHED_CONCURRENCY_MAX;
		return 1;
	default: return 0;
	}
}

static int *int_field(struct sched_spec *s, enum sched_attr a)
{
	switch (a) {
	case SCHED_ATTR_PARALLELISM: return &s->parallelism;
	case SCHED_ATTR_MAX_INSTANCES: return &s->max_instances;
	case SCHED_ATTR_MEMORY: return &s->memory;
	case SCHED_ATTR_TIMEOUT: return &s->timeout;
	case SCHED_ATTR_IDLE_TIMEOUT: return &s->idle_timeout;
	case SCHED_ATTR_PIDS: return &s->pids;
	case SCHED_ATTR_CPU: return &s->cpu;
	case SCHED_ATTR_READY_TIMEOUT: return &s->ready_timeout;
	case SCHED_ATTR_CONCURRENCY: return &s->concurrency;
	default: return NULL;
	}
}

static int set_int(struct sched_spec *s, enum sched_attr a, long long v,
		   struct rt_buf *why)
{
	long long lo = 0, hi = 0;

	int_range(a, &lo, &hi);
	if (v < lo || v > hi)
		return bad(why,
			   "%s must be an integer from %lld to %lld, not %lld",
			   attrs[a].name, lo, hi, v);
	if (a == SCHED_ATTR_CPU && v > 0 && v < SCHED_CPU_MIN)
		return bad(why,
			   "cpu must be 0 (no limit) or at least %d "
			   "millicores, not %lld",
			   SCHED_CPU_MIN, v);
	*int_field(s, a) = (int)v;
	return 0;
}

static const char *const *enum_words(enum sched_attr a)
{
	switch (a) {
	case SCHED_ATTR_MODE: return mode_words;
	case SCHED_ATTR_FORMAT: return format_words;
	case SCHED_ATTR_TAGS_POLICY: return tags_policy_words;
	case SCHED_ATTR_RESTART_POLICY: return restart_words;
	case SCHED_ATTR_NETWORK: return network_words;
	case SCHED_ATTR_ISOLATION: return isolation_words;
	default: return NULL;
	}
}

static int enum_get(const struct sched_spec *s, enum sched_attr a)
{
	switch (a) {
	case SCHED_ATTR_MODE: return (int)s->mode;
	case SCHED_ATTR_FORMAT: return (int)s->format;
	case SCHED_ATTR_TAGS_POLICY: return (int)s->tags_policy;
	case SCHED_ATTR_RESTART_POLICY: return (int)s->restart_policy;
	case SCHED_ATTR_NETWORK: return (int)s->network;
	case SCHED_ATTR_ISOLATION: return (int)s->isolation;
	default: return 0;
	}
}

static int set_enum(struct sched_spec *s, enum sched_attr a, const char *word,
		    size_t len, struct rt_buf *why)
{
	const char *const *w = enum_words(a);
	int i;

	for (i = 0; w[i] != NULL; i++) {
		if (strlen(w[i]) != len || memcmp(w[i], word, len) != 0)
			continue;
		switch (a) {
		case SCHED_ATTR_MODE: s->mode = (enum sched_mode)i; break;
		case SCHED_ATTR_FORMAT: s->format = (enum sched_format)i; break;
		case SCHED_ATTR_TAGS_POLICY:
			s->tags_policy = (enum sched_tags_policy)i;
			break;
		case SCHED_ATTR_NETWORK:
			s->network = (enum sched_network)i;
			break;
		case SCHED_ATTR_ISOLATION:
			s->isolation = (enum sched_isolation)i;
			break;
		default:
			s->restart_policy = (enum sched_restart_policy)i;
			break;
		}
		return 0;
	}
	bad(why, "%s must be one of", attrs[a].name);
	for (i = 0; w[i] != NULL; i++)
		bad(why, "%s %s", i ? " |" : "", w[i]);
	return -EINVAL;
}

/* ==================================================================== text
 *
 * Text attributes (command, cwd, env values) are UTF-8: the spec is stored
 * and shown as JSON, and JSON carries nothing else. They are one line with
 * no NUL (a value, a C string, an argument of execve). The other control
 * characters (Unicode Cc: U+0001-U+001F, U+007F-U+009F) except tab are
 * refused in what is written, since a CR or an escape sequence in a command
 * is a mistake or a trap for whoever cats it; a spec loaded from the store
 * keeps them (an older fnfs accepted them, and a mount must not fail).
 */

/* The UTF-8 character at `p` (see rt_utf8_char). */
static size_t utf8_char(const unsigned char *p, size_t n, unsigned *cp)
{
	return rt_utf8_char((const char *)p, n, cp);
}

static int is_control(unsigned cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* The room `shown_max` needs to show `max` bytes: each at worst 4. */
#define SHOWN_ROOM(max) ((max)*4 + 4)
/* How much of a value a reason quotes, and the room for it. */
#define SHOWN_MAX 48
#define SHOWN_CAP SHOWN_ROOM(SHOWN_MAX)

/* Renders up to `max` bytes of user text `v` into `dst` (SHOWN_ROOM(max)
 * bytes) for a reason: printable UTF-8 as it is, control characters and
 * bytes that are not UTF-8 as \xNN, cut at a character with "..." when
 * longer. A reason is then always clean UTF-8 text, whatever was written.
 * Returns `dst`. */
static const char *shown_max(char *dst, const char *v, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t i = 0, o = 0, k;
	unsigned cp;

	while (i < len) {
		k = utf8_char(p + i, len - i, &cp);
		if (i + (k ? k : 1) > max) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (k == 0 || is_control(cp)) {
			for (k = k ? k : 1; k > 0; k--, i++, o += 4)
				snprintf(dst + o, 5, "\\x%02x", p[i]);
			continue;
		}
		memcpy(dst + o, p + i, k);
		i += k;
		o += k;
	}
	dst[o] = '\0';
	return dst;
}

/* shown_max of at most SHOWN_MAX bytes, into SHOWN_CAP bytes. */
static const char *shown(char *dst, const char *v, size_t len)
{
	return shown_max(dst, v, len, SHOWN_MAX);
}

/* Checks text attribute `name`: at most `max` bytes of UTF-8 on one line,
 * no NUL, and (`strict`) no control character but tab. */
static int check_text(const char *name, const char *v, size_t len, size_t max,
		      int strict, struct rt_buf *why)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t i, k;
	unsigned cp = 0;

	if (len > max)
		return bad(why, "%s is longer than %zu bytes", name, max);
	for (i = 0; i < len; i += k) {
		k = utf8_char(p + i, len - i, &cp);
		if (k == 0)
			return bad(why,
				   "%s is not UTF-8 text: byte 0x%02x at "
				   "offset %zu is not part of a character",
				   name, p[i], i);
		if (cp == 0)
			return bad(why, "%s contains a NUL byte", name);
		if (cp == '\n')
			return bad(why, "%s must be a single line", name);
		if (strict && cp != '\t' && is_control(cp))
			return bad(why,
				   "%s contains the control character U+%04X "
				   "at offset %zu (of the controls only tab "
				   "is allowed)",
				   name, cp, i);
	}
	return 0;
}

static int set_string(char **field, const char *v, size_t len)
{
	char *p = strndup(v, len);

	if (p == NULL)
		return -ENOMEM;
	free(*field);
	*field = p;
	return 0;
}

static int set_command(struct sched_spec *s, const char *v, size_t len,
		       int strict, struct rt_buf *why)
{
	int rc = check_text("command", v, len, SCHED_COMMAND_MAX, strict, why);

	return rc < 0 ? rc : set_string(&s->command, v, len);
}

static int set_cwd(struct sched_spec *s, const char *v, size_t len, int strict,
		   struct rt_buf *why)
{
	int rc = check_text("cwd", v, len, SCHED_PATH_MAX, strict, why);

	if (rc < 0)
		return rc;
	if (len > 0 && v[0] != '/')
		return bad(why, "cwd must be an absolute path or empty");
	return set_string(&s->cwd, v, len);
}

/* `ready`: started | tcp | notify | lambda | http:/PATH, or empty for the
 * format's default. PATH is printable ASCII without spaces. */
static int set_ready(struct sched_spec *s, const char *v, size_t len,
		     struct rt_buf *why)
{
	static const char *const words[] = { "started", "tcp", "notify",
					     "lambda" };
	char q[SHOWN_CAP];
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == len && memcmp(words[i], v, len) == 0)
			return set_string(&s->ready, v, len);
	if (len == 0)
		return set_string(&s->ready, v, len);
	if (len > 6 && memcmp(v, "http:/", 6) == 0 &&
	    len - 5 <= SCHED_READY_PATH_MAX) {
		for (i = 5; i < len; i++)
			if (v[i] <= ' ' || v[i] > '~')
				break;
		if (i == len)
			return set_string(&s->ready, v, len);
	} else if (len == 6 && memcmp(v, "http:/", 6) == 0) {
		return set_string(&s->ready, v, len);
	}
	return bad(why,
		   "ready must be one of started | tcp | http:/PATH | notify | "
		   "lambda (PATH printable, no spaces, at most %d bytes), not "
		   "\"%s\"",
		   SCHED_READY_PATH_MAX, shown(q, v, len));
}

static int env_key_valid(const char *k, size_t n)
{
	size_t i;

	if (n == 0 || n > 255)
		return 0;
	for (i = 0; i < n; i++) {
		char c = k[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			 c == '_' || (i > 0 && c >= '0' && c <= '9');

		if (!ok)
			return 0;
	}
	return 1;
}

/* Checks one KEY=VALUE entry against the ones before it. */
static int check_env_entry(char *const *env, int n, const char *kv, size_t len,
			   int strict, struct rt_buf *why)
{
	const char *eq = memchr(kv, '=', len);
	char q[SHOWN_CAP], name[300];
	size_t klen, total;
	int i, rc;

	if (eq == NULL) /* not quoted: it may be a secret */
		return bad(why, "env line %d is not KEY=VALUE", n + 1);
	klen = (size_t)(eq - kv);
	if (!env_key_valid(kv, klen))
		return bad(why, "env key \"%s\" is not a valid variable name",
			   shown(q, kv, klen));
	if (klen >= 3 && memcmp(kv, "FN_", 3) == 0)
		return bad(why, "env key %.*s: FN_ names are set by fnfs",
			   (int)klen, kv);
	snprintf(name, sizeof(name), "env value of %.*s", (int)klen, kv);
	rc = check_text(name, eq + 1, len - klen - 1, SCHED_ENV_VALUE_MAX,
			strict, why);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (strncmp(env[i], kv, klen + 1) == 0)
			return bad(why, "env key %.*s is given twice",
				   (int)klen, kv);
	if (n >= SCHED_ENV_MAX)
		return bad(why, "env has more than %d variables",
			   SCHED_ENV_MAX);
	for (i = 0, total = len; i < n; i++)
		total += strlen(env[i]) + 1;
	if (total > SCHED_ENV_TOTAL_MAX)
		return bad(why, "env is longer than %d bytes in all",
			   SCHED_ENV_TOTAL_MAX);
	return 0;
}

/* Appends a copy of `len` bytes to a string vector. */
static int strv_push(char ***v, int *n, const char *p, size_t len)
{
	char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(char *));

	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strndup(p, len);
	if (nv[*n] == NULL)
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int tag_valid(const char *t, size_t n)
{
	char name[64];

	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, t, n);
	name[n] = '\0';
	return rt_name_valid(name);
}

/* Adds one tag; a repeated tag is dropped (the set is what matters). */
static int add_tag(char ***tags, int *n, const char *t, size_t len,
		   struct rt_buf *why)
{
	char q[SHOWN_CAP];
	int i;

	if (!tag_valid(t, len))
		return bad(why,
			   "tag \"%s\" must be 1 to 63 of [A-Za-z0-9._-], "
			   "starting with a letter or digit",
			   shown(q, t, len));
	for (i = 0; i < *n; i++)
		if (strlen((*tags)[i]) == len &&
		    memcmp((*tags)[i], t, len) == 0)
			return 0;
	if (*n >= SCHED_TAGS_MAX)
		return bad(why, "more than %d tags", SCHED_TAGS_MAX);
	return strv_push(tags, n, t, len);
}

/* What a `mounts` write refuses, and anything under it: the host's
 * kernel views, which undo the sandbox (its pids, its devices), and
 * fnfs's own data directory and mount (sched_spec_reserve). */
static const char *const host_views[] = { "/proc", "/sys", "/dev" };
static char *reserved_data, *reserved_mount;

int sched_spec_reserve(const char *datadir, const char *mountpoint)
{
	char *d = datadir != NULL ? strdup(datadir) : NULL,
	     *m = mountpoint != NULL ? strdup(mountpoint) : NULL;

	if ((datadir != NULL && d == NULL) ||
	    (mountpoint != NULL && m == NULL)) {
		free(d);
		free(m);
		return -ENOMEM;
	}
	free(reserved_data);
	free(reserved_mount);
	reserved_data = d;
	reserved_mount = m;
	return 0;
}

/* Whether the `plen` bytes of `v` name `dir` or a path below it. */
static int path_under(const char *v, size_t plen, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n > 0 && plen >= n && memcmp(v, dir, n) == 0 &&
	       (plen == n || v[n] == '/' || n == 1);
}

/* Refuses a path of `mounts` that is reserved (host_views). */
static int check_reserved(const char *v, size_t plen, struct rt_buf *why)
{
	char q[SHOWN_CAP];
	size_t i;

	for (i = 0; i < sizeof(host_views) / sizeof(*host_views); i++)
		if (path_under(v, plen, host_views[i]))
			return bad(why,
				   "mounts: \"%s\": %s is the host's, and "
				   "never bound into a sandbox",
				   shown(q, v, plen), host_views[i]);
	if (reserved_data != NULL && path_under(v, plen, reserved_data))
		return bad(why,
			   "mounts: \"%s\" is in fnfs's data directory, "
			   "which is never bound into a sandbox",
			   shown(q, v, plen));
	if (reserved_mount != NULL && path_under(v, plen, reserved_mount))
		return bad(why,
			   "mounts: \"%s\" is in the fnfs mount: no FUSE "
			   "filesystem is shown in a sandbox",
			   shown(q, v, plen));
	return 0;
}

/* Adds one line of `mounts`: "PATH", "PATH ro" or "PATH rw", PATH being
 * absolute, not "/", without "." or ".." parts, given once. It is kept as
 * "PATH" (read-only) or "PATH rw". */
static int add_mount(char ***mounts, int *n, const char *v, size_t len,
		     int strict, struct rt_buf *why)
{
	char q[SHOWN_CAP];
	size_t plen = len, i, k;
	int rw = 0, rc;

	if (len > 3 && (memcmp(v + len - 3, " rw", 3) == 0 ||
			memcmp(v + len - 3, " ro", 3) == 0)) {
		rw = v[len - 1] == 'w';
		plen = len - 3;
	}
	while (plen > 1 && v[plen - 1] == '/')
		plen--; /* "/srv/data/" is "/srv/data" */
	rc = check_text("mounts", v, plen, SCHED_PATH_MAX, strict, why);
	if (rc < 0)
		return rc;
	if (plen == 0 || v[0] != '/')
		return bad(why,
			   "mounts: \"%s\" is not an absolute path (one path "
			   "per line, optionally followed by \" rw\")",
			   shown(q, v, len));
	if (plen == 1)
		return bad(why, "mounts: \"/\" is the whole system, which "
				"the sandbox shows read-only already");
	for (i = 1; i < plen; i = k + 1) {
		for (k = i; k < plen && v[k] != '/'; k++)
			;
		if ((k - i == 1 && v[i] == '.') ||
		    (k - i == 2 && v[i] == '.' && v[i + 1] == '.') || k == i)
			return bad(why,
				   "mounts: \"%s\" must be a plain path, "
				   "without \".\", \"..\" or \"//\"",
				   shown(q, v, plen));
	}
	/* A stored spec from before is read as it is: the worker refuses
	 * such a path when it starts the function. */
	if (strict && (rc = check_reserved(v, plen, why)) < 0)
		return rc;
	for (i = 0; i < (size_t)*n; i++) {
		const char *m = (*mounts)[i];
		size_t ml = strlen(m);

		if (ml > 3 && strcmp(m + ml - 3, " rw") == 0)
			ml -= 3;
		if (ml == plen && memcmp(m, v, plen) == 0)
			return bad(why, "mounts: \"%s\" is given twice",
				   shown(q, v, plen));
	}
	if (*n >= SCHED_MOUNTS_MAX)
		return bad(why, "mounts has more than %d paths",
			   SCHED_MOUNTS_MAX);
	rc = strv_push(mounts, n, v, plen);
	if (rc == 0 && rw) {
		char *line = malloc(plen + 4);

		if (line == NULL)
			return -ENOMEM;
		memcpy(line, v, plen);
		memcpy(line + plen, " rw", 4);
		free((*mounts)[*n - 1]);
		(*mounts)[*n - 1] = line;
	}
	return rc;
}

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
		strv_free(*field, *nfield);
		*field = v;
		*nfield = n;
	} else {
		strv_free(v, n);
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

		rc = check_env_entry(env, n, v + i, l, 1, why);
		if (rc == 0)
			rc = strv_push(&env, &n, v + i, l);
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
		return bad(why, "tags is longer than %d bytes",
			   SCHED_TAGS_TEXT_MAX);
	while (i < len && rc == 0) {
		size_t j = i;

		if (v[i] == ' ') {
			i++;
			continue;
		}
		while (j < len && v[j] != ' ')
			j++;
		rc = add_tag(&tags, &n, v + i, j - i, why);
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
			rc = add_mount(&mounts, &n, v + i, l, 1, why);
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
	case SCHED_ATTR_COMMAND: return set_command(s, buf, len, 1, why);
	case SCHED_ATTR_CWD: return set_cwd(s, buf, len, 1, why);
	case SCHED_ATTR_READY: return set_ready(s, buf, len, why);
	case SCHED_ATTR_ENV: return parse_env_text(s, buf, len, why);
	case SCHED_ATTR_MOUNTS: return parse_mounts_text(s, buf, len, why);
	case SCHED_ATTR_TAGS:
		if (memchr(buf, '\n', len) || memchr(buf, '\0', len))
			return bad(why, "tags must be one line of words "
					"separated by spaces");
		return parse_tags_text(s, buf, len, why);
	case SCHED_ATTR_MODE:
	case SCHED_ATTR_FORMAT:
	case SCHED_ATTR_TAGS_POLICY:
	case SCHED_ATTR_RESTART_POLICY:
	case SCHED_ATTR_NETWORK:
	case SCHED_ATTR_ISOLATION: return set_enum(s, a, buf, len, why);
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
			return set_int(s, a, x, why);
		int_range(a, &lo, &hi);
		return bad(
			why,
			"%s must be an integer from %lld to %lld, not \"%s\"",
			attrs[a].name, lo, hi, shown(q, buf, len));
	}
	default: return bad(why, "%s is read-only", sched_attr_name(a));
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
		return bad(why, "config: env must be an object of strings");
	json_object_foreach (v, k, val) {
		if (!json_is_string(val)) {
			rc = bad(why, "config: env.%s must be a string",
				 shown(q, k, strlen(k)));
			break;
		}
		if (!env_key_valid(k, strlen(k))) {
			rc = bad(why,
				 "config: env key \"%s\" is not a valid "
				 "variable name",
				 shown(q, k, strlen(k)));
			break;
		}
		rt_buf_reset(&kv);
		if (rt_buf_printf(&kv, "%s=", k) < 0 ||
		    rt_buf_append(&kv, json_string_value(val),
				  json_string_length(val)) < 0) {
			rc = -ENOMEM;
			break;
		}
		rc = check_env_entry(s->env, s->nenv, kv.data, kv.len, strict,
				     why);
		if (rc == 0)
			rc = strv_push(&s->env, &s->nenv, kv.data, kv.len);
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
		if (strcmp(attrs[i].name, key) == 0)
			break;
	if (i > SCHED_ATTR_LAST_SPEC)
		return bad(why, "config: unknown key \"%s\"",
			   shown(q, key, strlen(key)));
	switch ((enum sched_attr)i) {
	case SCHED_ATTR_COMMAND:
	case SCHED_ATTR_CWD:
		if (!json_is_string(v))
			return bad(why, "config: %s must be a string", key);
		return i == SCHED_ATTR_COMMAND
			       ? set_command(s, json_string_value(v),
					     json_string_length(v), strict, why)
			       : set_cwd(s, json_string_value(v),
					 json_string_length(v), strict, why);
	case SCHED_ATTR_MODE:
	case SCHED_ATTR_FORMAT:
	case SCHED_ATTR_TAGS_POLICY:
	case SCHED_ATTR_RESTART_POLICY:
	case SCHED_ATTR_NETWORK:
	case SCHED_ATTR_ISOLATION:
		if (!json_is_string(v))
			return bad(why, "config: %s must be a string", key);
		return set_enum(s, (enum sched_attr)i, json_string_value(v),
				json_string_length(v), why);
	case SCHED_ATTR_ENV: return json_set_env(s, v, strict, why);
	case SCHED_ATTR_READY:
		if (!json_is_string(v))
			return bad(why, "config: ready must be a string");
		return set_ready(s, json_string_value(v), json_string_length(v),
				 why);
	case SCHED_ATTR_TAGS:
		if (!json_is_array(v))
			return bad(why,
				   "config: tags must be an array of strings");
		json_array_foreach (v, idx, t) {
			if (!json_is_string(t))
				return bad(why, "config: tags must be strings");
			rc = add_tag(&s->tags, &s->ntags, json_string_value(t),
				     json_string_length(t), why);
			if (rc < 0)
				return rc;
		}
		return 0;
	case SCHED_ATTR_MOUNTS:
		if (!json_is_array(v))
			return bad(why, "config: mounts must be an array of "
					"strings (\"PATH\" or \"PATH rw\")");
		json_array_foreach (v, idx, t) {
			if (!json_is_string(t))
				return bad(why,
					   "config: mounts must be strings");
			rc = add_mount(&s->mounts, &s->nmounts,
				       json_string_value(t),
				       json_string_length(t), strict, why);
			if (rc < 0)
				return rc;
		}
		return 0;
	default:
		if (!json_is_integer(v))
			return bad(why, "config: %s must be an integer", key);
		return set_int(s, (enum sched_attr)i, json_integer_value(v),
			       why);
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
		return bad(why,
			   "config: not valid JSON: %s (line %d, column %d)",
			   shown_max(q, jerr.text, strlen(jerr.text),
				     JSON_ERROR_TEXT_LENGTH),
			   jerr.line, jerr.column);
	}
	if (!json_is_object(root)) {
		rc = bad(why, "config must be a JSON object");
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
		return bad(why,
			   "parallelism %d is above max_instances %d; raise "
			   "max_instances first",
			   s->parallelism, s->max_instances);
	if (strcmp(sched_spec_ready(s), "lambda") == 0 &&
	    !(s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_LAMBDA))
		return bad(why, "ready lambda is for a hot function of format "
				"lambda; set mode and format first");
	/* The runtime API is on the worker's loopback, which a network
	 * namespace of its own does not reach (decisions.md). */
	if (s->mode == SCHED_MODE_HOT && s->format == SCHED_FORMAT_LAMBDA &&
	    s->isolation == SCHED_ISOLATION_SANDBOX &&
	    s->network == SCHED_NETWORK_NONE)
		return bad(why,
			   "format lambda needs network host: the runtime "
			   "API is on the worker's loopback, which network "
			   "none cuts off");
	return 0;
}

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
			k = utf8_char((const unsigned char *)v + i, n - i, &cp);
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
	put(o, "mode", json_string(mode_words[s->mode]), &fails);
	put(o, "format", json_string(format_words[s->format]), &fails);
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
	put(o, "tags_policy", json_string(tags_policy_words[s->tags_policy]),
	    &fails);
	put(o, "restart_policy", json_string(restart_words[s->restart_policy]),
	    &fails);
	put(o, "pids", json_integer(s->pids), &fails);
	put(o, "cpu", json_integer(s->cpu), &fails);
	put(o, "network", json_string(network_words[s->network]), &fails);
	put(o, "isolation", json_string(isolation_words[s->isolation]), &fails);
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
		rc = bad(why, "the spec holds text that is not UTF-8 and "
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
		rc = bad(why,
			 "the spec does not read back as written (%s), so it "
			 "is not stored (a bug of fnfs)",
			 rc < 0	     ? "its stored form is refused"
			 : diff.data ? diff.data
				     : "?");
		goto out;
	}
	rc = rt_buf_append(out, text.data, text.len);
out:
	sched_spec_free(&back);
	rt_buf_free(&text);
	rt_buf_free(&diff);
	/* Whatever `bad` said, a spec that cannot round-trip is our bug. */
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
				     enum_words(a)[enum_get(s, a)]);
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
		return rt_buf_printf(out, "%d\n",
				     *int_field((struct sched_spec *)s, a));
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

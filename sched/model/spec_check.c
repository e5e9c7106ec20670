/*
 * spec_check.c - a spec's validators: each takes a value (an integer, an
 * enum word, a text, an env entry, a tag, a mount), checks it and stores it
 * in the spec, or says why not. Pure: no I/O, no global state.
 */
#include <stdarg.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

/* ================================================================ validators
 *
 * Each validator takes a typed value, checks it, and on success stores it
 * in the spec. The text parsers and the JSON parser both end here, so a
 * value means the same whichever file it arrives through.
 */

int spec__bad(struct rt_buf *why, const char *fmt, ...)
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
int spec__int_range(enum sched_attr a, long long *lo, long long *hi)
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

int *spec__int_field(struct sched_spec *s, enum sched_attr a)
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

int spec__set_int(struct sched_spec *s, enum sched_attr a, long long v,
		  struct rt_buf *why)
{
	long long lo = 0, hi = 0;

	spec__int_range(a, &lo, &hi);
	if (v < lo || v > hi)
		return spec__bad(
			why,
			"%s must be an integer from %lld to %lld, not %lld",
			spec__attrs[a].name, lo, hi, v);
	if (a == SCHED_ATTR_CPU && v > 0 && v < SCHED_CPU_MIN)
		return spec__bad(why,
				 "cpu must be 0 (no limit) or at least %d "
				 "millicores, not %lld",
				 SCHED_CPU_MIN, v);
	*spec__int_field(s, a) = (int)v;
	return 0;
}

const char *const *spec__enum_words(enum sched_attr a)
{
	switch (a) {
	case SCHED_ATTR_MODE: return spec__mode_words;
	case SCHED_ATTR_FORMAT: return spec__format_words;
	case SCHED_ATTR_TAGS_POLICY: return spec__tags_policy_words;
	case SCHED_ATTR_RESTART_POLICY: return spec__restart_words;
	case SCHED_ATTR_NETWORK: return spec__network_words;
	case SCHED_ATTR_ISOLATION: return spec__isolation_words;
	default: return NULL;
	}
}

int spec__enum_get(const struct sched_spec *s, enum sched_attr a)
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

int spec__set_enum(struct sched_spec *s, enum sched_attr a, const char *word,
		   size_t len, struct rt_buf *why)
{
	const char *const *w = spec__enum_words(a);
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
	spec__bad(why, "%s must be one of", spec__attrs[a].name);
	for (i = 0; w[i] != NULL; i++)
		spec__bad(why, "%s %s", i ? " |" : "", w[i]);
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
size_t spec__utf8_char(const unsigned char *p, size_t n, unsigned *cp)
{
	return rt_utf8_char((const char *)p, n, cp);
}

static int is_control(unsigned cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Renders up to `max` bytes of user text `v` into `dst` (SHOWN_ROOM(max)
 * bytes) for a reason: printable UTF-8 as it is, control characters and
 * bytes that are not UTF-8 as \xNN, cut at a character with "..." when
 * longer. A reason is then always clean UTF-8 text, whatever was written.
 * Returns `dst`. */
const char *spec__shown_max(char *dst, const char *v, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t i = 0, o = 0, k;
	unsigned cp;

	while (i < len) {
		k = spec__utf8_char(p + i, len - i, &cp);
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
const char *spec__shown(char *dst, const char *v, size_t len)
{
	return spec__shown_max(dst, v, len, SHOWN_MAX);
}

/* Checks text attribute `name`: at most `max` bytes of UTF-8 on one line,
 * no NUL, and (`strict`) no control character but tab. */
int spec__check_text(const char *name, const char *v, size_t len, size_t max,
		     int strict, struct rt_buf *why)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t i, k;
	unsigned cp = 0;

	if (len > max)
		return spec__bad(why, "%s is longer than %zu bytes", name, max);
	for (i = 0; i < len; i += k) {
		k = spec__utf8_char(p + i, len - i, &cp);
		if (k == 0)
			return spec__bad(
				why,
				"%s is not UTF-8 text: byte 0x%02x at "
				"offset %zu is not part of a character",
				name, p[i], i);
		if (cp == 0)
			return spec__bad(why, "%s contains a NUL byte", name);
		if (cp == '\n')
			return spec__bad(why, "%s must be a single line", name);
		if (strict && cp != '\t' && is_control(cp))
			return spec__bad(
				why,
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

int spec__set_command(struct sched_spec *s, const char *v, size_t len,
		      int strict, struct rt_buf *why)
{
	int rc = spec__check_text("command", v, len, SCHED_COMMAND_MAX, strict,
				  why);

	return rc < 0 ? rc : set_string(&s->command, v, len);
}

int spec__set_cwd(struct sched_spec *s, const char *v, size_t len, int strict,
		  struct rt_buf *why)
{
	int rc = spec__check_text("cwd", v, len, SCHED_PATH_MAX, strict, why);

	if (rc < 0)
		return rc;
	if (len > 0 && v[0] != '/')
		return spec__bad(why, "cwd must be an absolute path or empty");
	return set_string(&s->cwd, v, len);
}

/* `ready`: started | tcp | notify | lambda | http:/PATH, or empty for the
 * format's default. PATH is printable ASCII without spaces. */
int spec__set_ready(struct sched_spec *s, const char *v, size_t len,
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
	return spec__bad(
		why,
		"ready must be one of started | tcp | http:/PATH | notify | "
		"lambda (PATH printable, no spaces, at most %d bytes), not "
		"\"%s\"",
		SCHED_READY_PATH_MAX, spec__shown(q, v, len));
}

int spec__env_key_valid(const char *k, size_t n)
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
int spec__check_env_entry(char *const *env, int n, const char *kv, size_t len,
			  int strict, struct rt_buf *why)
{
	const char *eq = memchr(kv, '=', len);
	char q[SHOWN_CAP], name[300];
	size_t klen, total;
	int i, rc;

	if (eq == NULL) /* not quoted: it may be a secret */
		return spec__bad(why, "env line %d is not KEY=VALUE", n + 1);
	klen = (size_t)(eq - kv);
	if (!spec__env_key_valid(kv, klen))
		return spec__bad(why,
				 "env key \"%s\" is not a valid variable name",
				 spec__shown(q, kv, klen));
	if (klen >= 3 && memcmp(kv, "FN_", 3) == 0)
		return spec__bad(why, "env key %.*s: FN_ names are set by fnfs",
				 (int)klen, kv);
	snprintf(name, sizeof(name), "env value of %.*s", (int)klen, kv);
	rc = spec__check_text(name, eq + 1, len - klen - 1, SCHED_ENV_VALUE_MAX,
			      strict, why);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (strncmp(env[i], kv, klen + 1) == 0)
			return spec__bad(why, "env key %.*s is given twice",
					 (int)klen, kv);
	if (n >= SCHED_ENV_MAX)
		return spec__bad(why, "env has more than %d variables",
				 SCHED_ENV_MAX);
	for (i = 0, total = len; i < n; i++)
		total += strlen(env[i]) + 1;
	if (total > SCHED_ENV_TOTAL_MAX)
		return spec__bad(why, "env is longer than %d bytes in all",
				 SCHED_ENV_TOTAL_MAX);
	return 0;
}

/* Appends a copy of `len` bytes to a string vector. */
int spec__strv_push(char ***v, int *n, const char *p, size_t len)
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
int spec__add_tag(char ***tags, int *n, const char *t, size_t len,
		  struct rt_buf *why)
{
	char q[SHOWN_CAP];
	int i;

	if (!tag_valid(t, len))
		return spec__bad(
			why,
			"tag \"%s\" must be 1 to 63 of [A-Za-z0-9._-], "
			"starting with a letter or digit",
			spec__shown(q, t, len));
	for (i = 0; i < *n; i++)
		if (strlen((*tags)[i]) == len &&
		    memcmp((*tags)[i], t, len) == 0)
			return 0;
	if (*n >= SCHED_TAGS_MAX)
		return spec__bad(why, "more than %d tags", SCHED_TAGS_MAX);
	return spec__strv_push(tags, n, t, len);
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
			return spec__bad(
				why,
				"mounts: \"%s\": %s is the host's, and "
				"never bound into a sandbox",
				spec__shown(q, v, plen), host_views[i]);
	if (reserved_data != NULL && path_under(v, plen, reserved_data))
		return spec__bad(why,
				 "mounts: \"%s\" is in fnfs's data directory, "
				 "which is never bound into a sandbox",
				 spec__shown(q, v, plen));
	if (reserved_mount != NULL && path_under(v, plen, reserved_mount))
		return spec__bad(why,
				 "mounts: \"%s\" is in the fnfs mount: no FUSE "
				 "filesystem is shown in a sandbox",
				 spec__shown(q, v, plen));
	return 0;
}

/* Adds one line of `mounts`: "PATH", "PATH ro" or "PATH rw", PATH being
 * absolute, not "/", without "." or ".." parts, given once. It is kept as
 * "PATH" (read-only) or "PATH rw". */
int spec__add_mount(char ***mounts, int *n, const char *v, size_t len,
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
	rc = spec__check_text("mounts", v, plen, SCHED_PATH_MAX, strict, why);
	if (rc < 0)
		return rc;
	if (plen == 0 || v[0] != '/')
		return spec__bad(
			why,
			"mounts: \"%s\" is not an absolute path (one path "
			"per line, optionally followed by \" rw\")",
			spec__shown(q, v, len));
	if (plen == 1)
		return spec__bad(why,
				 "mounts: \"/\" is the whole system, which "
				 "the sandbox shows read-only already");
	for (i = 1; i < plen; i = k + 1) {
		for (k = i; k < plen && v[k] != '/'; k++)
			;
		if ((k - i == 1 && v[i] == '.') ||
		    (k - i == 2 && v[i] == '.' && v[i + 1] == '.') || k == i)
			return spec__bad(why,
					 "mounts: \"%s\" must be a plain path, "
					 "without \".\", \"..\" or \"//\"",
					 spec__shown(q, v, plen));
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
			return spec__bad(why, "mounts: \"%s\" is given twice",
					 spec__shown(q, v, plen));
	}
	if (*n >= SCHED_MOUNTS_MAX)
		return spec__bad(why, "mounts has more than %d paths",
				 SCHED_MOUNTS_MAX);
	rc = spec__strv_push(mounts, n, v, plen);
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

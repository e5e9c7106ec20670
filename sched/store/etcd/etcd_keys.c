/*
 * etcd_keys.c - the key layout of a cluster in etcd (etcd_keys.h): keys
 * and values made from rows and read back into rows, with no I/O.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "etcd_keys.h"
#include "etcd_keys_internal.h"

#define SETTING_KEY_MAX 127

const char *const etcd_keys__kind_name[ETCD_KEYS_KINDS] = {
	[ETCD_KEYS_META] = "meta",     [ETCD_KEYS_TENANT] = "t",
	[ETCD_KEYS_NAMESPACE] = "ns",  [ETCD_KEYS_FUNCTION] = "fn",
	[ETCD_KEYS_INSTANCE] = "in",   [ETCD_KEYS_WORKER] = "w",
	[ETCD_KEYS_SETTING] = "set",   [ETCD_KEYS_REVOKED] = "rv",
	[ETCD_KEYS_CODE_FILE] = "cf",  [ETCD_KEYS_CODE_REVISION] = "cr",
	[ETCD_KEYS_OBJECT] = "om",     [ETCD_KEYS_CHUNK] = "oc",
	[ETCD_KEYS_EVENT] = "ev",      [ETCD_KEYS_LEADER] = "leader",
	[ETCD_KEYS_IMPORT] = "import", [ETCD_KEYS_EVENT_HEAD] = "evh",
	[ETCD_KEYS_MEMBER] = "ctl",
};

/* ============================================================ checks */

/* A kind whose key is P/KIND itself, with nothing after it. */
int etcd_keys__single(int k)
{
	return k == ETCD_KEYS_META || k == ETCD_KEYS_LEADER ||
	       k == ETCD_KEYS_IMPORT || k == ETCD_KEYS_EVENT_HEAD;
}

int etcd_keys__name_ok(const char *s)
{
	return s != NULL && rt_name_valid(s);
}

/* A setting's key: a name that may hold ':' too. */
int etcd_keys__setting_key_ok(const char *s)
{
	size_t i;

	if (s == NULL ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-' || s[i] == ':'))
			return 0;
	return i <= SETTING_KEY_MAX;
}

int etcd_keys__hex64_ok(const char *h)
{
	size_t i;

	if (h == NULL)
		return 0;
	for (i = 0; h[i] != '\0'; i++)
		if (!((h[i] >= '0' && h[i] <= '9') ||
		      (h[i] >= 'a' && h[i] <= 'f')))
			return 0;
	return i == 64;
}

/* Whether `s` is UTF-8 (what a JSON string may hold). */
static int utf8_ok(const char *s)
{
	json_t *v = json_string(s);

	json_decref(v);
	return v != NULL;
}

/* A byte a path keeps as it is in a key. */
int etcd_keys__path_plain(unsigned char c)
{
	return c >= '!' && c <= '~' && c != '%';
}

/* A code/ path: components that are not empty, "." or "..", no NUL. */
int etcd_keys__path_ok(const char *p, size_t n)
{
	size_t i, start = 0;

	if (p == NULL || n == 0 || memchr(p, '\0', n) != NULL)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		if (i == start || (i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

uint32_t etcd_keys_chunks(uint64_t size)
{
	uint64_t n = (size + ETCD_KEYS_CHUNK_BYTES - 1) / ETCD_KEYS_CHUNK_BYTES;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

int etcd_keys_cluster_valid(const char *name)
{
	return etcd_keys__name_ok(name);
}

/* ============================================================== keys */

int etcd_keys_prefix(const char *cluster, struct rt_buf *out)
{
	rt_buf_reset(out);
	if (!etcd_keys__name_ok(cluster))
		return -EINVAL;
	return rt_buf_printf(out, "/fnfs/%s/", cluster);
}

int etcd_keys_kind_prefix(const char *cluster, enum etcd_keys_kind kind,
			  struct rt_buf *out)
{
	int rc;

	if ((unsigned)kind >= ETCD_KEYS_KINDS)
		return -EINVAL;
	rc = etcd_keys_prefix(cluster, out);
	assert(etcd_keys__kind_name[kind] != NULL);
	if (rc == 0)
		rc = rt_buf_printf(out, "%s%s", etcd_keys__kind_name[kind],
				   etcd_keys__single(kind) ? "" : "/");
	return rc;
}

int etcd_keys_path(const char *path, size_t n, struct rt_buf *out)
{
	size_t i;
	int rc = 0;

	if (!etcd_keys__path_ok(path, n))
		return -EINVAL;
	for (i = 0; i < n && rc == 0; i++) {
		unsigned char c = (unsigned char)path[i];

		rc = etcd_keys__path_plain(c) ? rt_buf_append(out, path + i, 1)
					      : rt_buf_printf(out, "%%%02X", c);
	}
	return rc;
}

int etcd_keys_code_prefix(const char *cluster, const char *tenant,
			  const char *ns, const char *fn, struct rt_buf *out)
{
	int rc;

	if (!etcd_keys__name_ok(tenant) || !etcd_keys__name_ok(ns) ||
	    !etcd_keys__name_ok(fn))
		return -EINVAL;
	rc = etcd_keys_kind_prefix(cluster, ETCD_KEYS_CODE_FILE, out);
	if (rc == 0)
		rc = rt_buf_printf(out, "%s/%s/%s/", tenant, ns, fn);
	return rc;
}

/* `key` := P/KIND/ followed by the names of `names` joined by '/' (each
 * checked with `ok`). */
static int make_key(const char *cluster, enum etcd_keys_kind kind,
		    struct rt_buf *key, const char *const *names, int n)
{
	int i, rc = etcd_keys_kind_prefix(cluster, kind, key);

	/* A kind of one key has no names; the others at least one. */
	assert(etcd_keys__single(kind) ? n == 0 : n > 0);
	for (i = 0; i < n && rc == 0; i++)
		rc = etcd_keys__name_ok(names[i])
			     ? rt_buf_printf(key, "%s%s", i ? "/" : "",
					     names[i])
			     : -EINVAL;
	return rc;
}

/* ============================================================ values */

/* `value` := the compact JSON of `o` (taken). */
static int put_json(json_t *o, struct rt_buf *value)
{
	char *s;
	int rc;

	if (o == NULL)
		return -ENOMEM;
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (s == NULL)
		return -ENOMEM;
	rt_buf_reset(value);
	rc = rt_buf_puts(value, s);
	free(s);
	return rc;
}

/* The JSON text `s` parsed, when it is an object (`array` 0) or an array
 * of strings (`array` 1); NULL otherwise. */
static json_t *parse_text(const char *s, int array)
{
	json_t *v = s ? json_loads(s, JSON_REJECT_DUPLICATES, NULL) : NULL, *e;
	size_t i;

	if (v == NULL)
		return NULL;
	if (!array && json_is_object(v))
		return v;
	if (array && json_is_array(v)) {
		json_array_foreach (v, i, e) {
			if (!json_is_string(e))
				goto bad;
		}
		return v;
	}
bad:
	json_decref(v);
	return NULL;
}

static int64_t s64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
}

static int tenant_value(const struct store_row *r, struct rt_buf *value)
{
	if (r->created_ms < 0 || r->updated_ms < 0)
		return -EINVAL;
	return put_json(json_pack("{sIsIsIsIsI}", "created_ms",
				  (json_int_t)r->created_ms, "updated_ms",
				  (json_int_t)r->updated_ms, "uid",
				  (json_int_t)r->uid, "gid", (json_int_t)r->gid,
				  "mode", (json_int_t)r->mode),
			value);
}

static int function_value(const struct store_row *r, struct rt_buf *value)
{
	json_t *spec = parse_text(r->spec, 0);

	if (spec == NULL || r->created_ms < 0 || r->updated_ms < 0 ||
	    s64(r->revision) < 0 || s64(r->run_revision) < 0) {
		json_decref(spec);
		return -EINVAL;
	}
	return put_json(json_pack("{sIsIsIsIso}", "created_ms",
				  (json_int_t)r->created_ms, "updated_ms",
				  (json_int_t)r->updated_ms, "revision",
				  (json_int_t)r->revision, "run_revision",
				  (json_int_t)r->run_revision, "spec", spec),
			value);
}

int etcd_keys_row(const char *cluster, const struct store_row *r,
		  struct rt_buf *key, struct rt_buf *value)
{
	const char *names[3] = { r->tenant, r->ns, r->name };
	int rc;

	rt_buf_reset(key);
	switch (r->kind) {
	case STORE_TENANT:
		rc = make_key(cluster, ETCD_KEYS_TENANT, key, names, 1);
		if (rc == 0 && value != NULL)
			rc = tenant_value(r, value);
		return rc;
	case STORE_NAMESPACE:
		rc = make_key(cluster, ETCD_KEYS_NAMESPACE, key, names, 2);
		if (rc == 0 && value != NULL)
			rc = r->created_ms < 0 || r->updated_ms < 0
				     ? -EINVAL
				     : put_json(
					       json_pack("{sIsI}", "created_ms",
							 (json_int_t)
								 r->created_ms,
							 "updated_ms",
							 (json_int_t)
								 r->updated_ms),
					       value);
		return rc;
	case STORE_FUNCTION:
		rc = make_key(cluster, ETCD_KEYS_FUNCTION, key, names, 3);
		if (rc == 0 && value != NULL)
			rc = function_value(r, value);
		return rc;
	}
	return -EINVAL;
}

/* Whether `s` may be an instance's last exit: "", "oom", "status:N",
 * "signal:N" (sched/act/reports.c's words), at most 31 bytes. */
int etcd_keys__last_exit_ok(const char *s)
{
	size_t n = strlen(s), i, from;

	if (n == 0 || strcmp(s, "oom") == 0)
		return 1;
	if (n > 31)
		return 0;
	if (strncmp(s, "status:", 7) != 0 && strncmp(s, "signal:", 7) != 0)
		return 0;
	from = 7 + (s[7] == '-');
	if (n == from)
		return 0;
	for (i = from; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int etcd_keys_instance(const char *cluster, const struct store_instance *in,
		       struct rt_buf *key, struct rt_buf *value)
{
	const char *names[3] = { in->tenant, in->ns, in->fn };
	json_t *o;
	int rc;

	rt_buf_reset(key);
	rc = make_key(cluster, ETCD_KEYS_INSTANCE, key, names, 3);
	if (rc == 0)
		rc = in->n < 0 ? -EINVAL : rt_buf_printf(key, "/%d", in->n);
	if (rc < 0 || value == NULL)
		return rc;
	if ((in->desired_run != 0 && in->desired_run != 1) ||
	    (in->worker != NULL && !etcd_keys__name_ok(in->worker)) ||
	    s64(in->epoch) < 0 || in->term < 0)
		return -EINVAL;
	if (in->state != NULL &&
	    (!etcd_keys__name_ok(in->state) || in->pid < 0 ||
	     s64(in->revision) < 0 || in->started_ms < 0 || in->restarts < 0 ||
	     (in->last_exit != NULL &&
	      !etcd_keys__last_exit_ok(in->last_exit))))
		return -EINVAL;
	o = json_pack("{sisosI}", "desired", in->desired_run, "worker",
		      in->worker ? json_string(in->worker) : json_null(),
		      "epoch", (json_int_t)in->epoch);
	if (o == NULL)
		return -ENOMEM;
	if (in->term > 0)
		json_object_set_new(o, "term", json_integer(in->term));
	if (in->state != NULL) {
		json_object_set_new(o, "state", json_string(in->state));
		json_object_set_new(o, "pid", json_integer(in->pid));
		json_object_set_new(o, "revision",
				    json_integer((json_int_t)in->revision));
		json_object_set_new(o, "started_ms",
				    json_integer(in->started_ms));
		json_object_set_new(o, "restarts", json_integer(in->restarts));
		if (in->last_exit != NULL && in->last_exit[0] != '\0')
			json_object_set_new(o, "last_exit",
					    json_string(in->last_exit));
	}
	return put_json(o, value);
}

int etcd_keys_worker(const char *cluster, const struct store_worker *w,
		     struct rt_buf *key, struct rt_buf *value)
{
	json_t *tags, *nss, *o;

	rt_buf_reset(key);
	if (make_key(cluster, ETCD_KEYS_WORKER, key, &w->id, 1) < 0)
		return -EINVAL;
	if (value == NULL)
		return 0;
	if (w->memory_mb < 0 || (w->local != 0 && w->local != 1) ||
	    (w->drained != 0 && w->drained != 1))
		return -EINVAL;
	if (w->state != NULL &&
	    (!etcd_keys__name_ok(w->state) || w->pid < 0 || w->since_ms < 0))
		return -EINVAL;
	tags = parse_text(w->tags, 1);
	nss = parse_text(w->namespaces, 1);
	if (tags == NULL || nss == NULL) {
		json_decref(tags);
		json_decref(nss);
		return -EINVAL;
	}
	o = json_pack("{sisososisi}", "memory", w->memory_mb, "tags", tags,
		      "namespaces", nss, "local", w->local, "drained",
		      w->drained);
	if (o != NULL && w->state != NULL) {
		json_object_set_new(o, "state", json_string(w->state));
		json_object_set_new(o, "pid", json_integer(w->pid));
		json_object_set_new(o, "since_ms", json_integer(w->since_ms));
	}
	return put_json(o, value);
}

int etcd_keys_code_file(const char *cluster, const struct store_code_file *f,
			struct rt_buf *key, struct rt_buf *value)
{
	int rc = etcd_keys_code_prefix(cluster, f->tenant, f->ns, f->fn, key);

	if (rc == 0)
		rc = f->path ? etcd_keys_path(f->path, strlen(f->path), key)
			     : -EINVAL;
	if (rc < 0 || value == NULL)
		return rc;
	if (f->hash == NULL ||
	    (f->hash[0] != '\0' && !etcd_keys__hex64_ok(f->hash)) ||
	    s64(f->size) < 0 || f->mtime_ms < 0)
		return -EINVAL;
	return put_json(json_pack("{sIsIsssI}", "mode", (json_int_t)f->mode,
				  "size", (json_int_t)f->size, "hash", f->hash,
				  "mtime_ms", (json_int_t)f->mtime_ms),
			value);
}

int etcd_keys_code_revision(const char *cluster,
			    const struct store_code_revision *c,
			    struct rt_buf *key, struct rt_buf *value)
{
	const char *names[3] = { c->tenant, c->ns, c->fn };

	rt_buf_reset(key);
	if (make_key(cluster, ETCD_KEYS_CODE_REVISION, key, names, 3) < 0)
		return -EINVAL;
	if (value == NULL)
		return 0;
	if (c->hash == NULL ||
	    (c->hash[0] != '\0' && !etcd_keys__hex64_ok(c->hash)) ||
	    s64(c->bytes) < 0 || c->files < 0)
		return -EINVAL;
	return put_json(json_pack("{sssIsi}", "hash", c->hash, "bytes",
				  (json_int_t)c->bytes, "files", c->files),
			value);
}

/* Raw bytes as the value. */
static int put_raw(const char *p, size_t n, struct rt_buf *value)
{
	rt_buf_reset(value);
	if (p == NULL && n > 0)
		return -EINVAL;
	return n ? rt_buf_append(value, p, n) : rt_buf_puts(value, "");
}

int etcd_keys_encode(const char *cluster, const struct etcd_keys_rec *r,
		     struct rt_buf *key, struct rt_buf *value)
{
	const char *names[2];
	int rc;

	rt_buf_reset(key);
	if (value != NULL)
		rt_buf_reset(value);
	switch (r->kind) {
	case ETCD_KEYS_META:
		rc = etcd_keys_kind_prefix(cluster, r->kind, key);
		if (rc == 0 && value != NULL)
			rc = r->version < 1
				     ? -EINVAL
				     : put_json(json_pack("{sssi}", "format",
							  ETCD_KEYS_FORMAT,
							  "version",
							  r->version),
						value);
		return rc;
	case ETCD_KEYS_TENANT:
	case ETCD_KEYS_NAMESPACE:
	case ETCD_KEYS_FUNCTION:
		if (r->row.kind !=
		    (enum store_kind)(r->kind - ETCD_KEYS_TENANT))
			return -EINVAL;
		return etcd_keys_row(cluster, &r->row, key, value);
	case ETCD_KEYS_INSTANCE:
		return etcd_keys_instance(cluster, &r->instance, key, value);
	case ETCD_KEYS_WORKER:
		return etcd_keys_worker(cluster, &r->worker, key, value);
	case ETCD_KEYS_SETTING:
		rc = etcd_keys__setting_key_ok(r->key)
			     ? etcd_keys_kind_prefix(cluster, r->kind, key)
			     : -EINVAL;
		if (rc == 0)
			rc = rt_buf_puts(key, r->key);
		if (rc == 0 && value != NULL)
			rc = r->value == NULL
				     ? -EINVAL
				     : put_json(json_pack("{ss}", "value",
							  r->value),
						value);
		/* json_pack fails (NULL: "-ENOMEM") on text that is not
		 * UTF-8: say so as what it is. */
		if (rc == -ENOMEM && r->value != NULL && !utf8_ok(r->value))
			rc = -EINVAL;
		return rc;
	case ETCD_KEYS_REVOKED:
		if (r->revoked.serial == NULL || r->revoked.revoked_ms < 0 ||
		    (r->revoked.serial[0] != '\0' &&
		     !etcd_keys__name_ok(r->revoked.serial)))
			return -EINVAL;
		names[0] = r->revoked.worker;
		names[1] = r->revoked.serial[0] ? r->revoked.serial : "-";
		rc = make_key(cluster, r->kind, key, names, 1);
		if (rc == 0)
			rc = rt_buf_printf(key, "/%s", names[1]);
		if (rc == 0 && value != NULL)
			rc = put_json(
				json_pack("{sssI}", "serial", r->revoked.serial,
					  "revoked_ms",
					  (json_int_t)r->revoked.revoked_ms),
				value);
		return rc;
	case ETCD_KEYS_CODE_FILE:
		return etcd_keys_code_file(cluster, &r->file, key, value);
	case ETCD_KEYS_CODE_REVISION:
		return etcd_keys_code_revision(cluster, &r->code, key, value);
	case ETCD_KEYS_OBJECT:
	case ETCD_KEYS_CHUNK:
		if (!etcd_keys__hex64_ok(r->hash))
			return -EINVAL;
		rc = etcd_keys_kind_prefix(cluster, r->kind, key);
		if (rc == 0)
			rc = rt_buf_puts(key, r->hash);
		if (rc == 0 && r->kind == ETCD_KEYS_CHUNK)
			rc = r->index >= ETCD_KEYS_CHUNKS_MAX
				     ? -EINVAL
				     : rt_buf_printf(key, "/%06u", r->index);
		if (rc < 0 || value == NULL)
			return rc;
		if (r->kind == ETCD_KEYS_CHUNK)
			return r->len > ETCD_KEYS_CHUNK_BYTES
				       ? -EINVAL
				       : put_raw(r->data, r->len, value);
		if (s64(r->size) < 0 ||
		    r->chunks != etcd_keys_chunks(r->size) ||
		    r->chunks > ETCD_KEYS_CHUNKS_MAX)
			return -EINVAL;
		return put_json(json_pack("{sIsI}", "size", (json_int_t)r->size,
					  "chunks", (json_int_t)r->chunks),
				value);
	case ETCD_KEYS_EVENT:
		rc = etcd_keys_kind_prefix(cluster, r->kind, key);
		if (rc == 0)
			rc = rt_buf_printf(key, "%020" PRIu64, r->seq);
		return rc < 0 || value == NULL
			       ? rc
			       : put_raw(r->data, r->len, value);
	case ETCD_KEYS_MEMBER:
		if (!etcd_keys__name_ok(r->key))
			return -EINVAL;
		rc = etcd_keys_kind_prefix(cluster, r->kind, key);
		if (rc == 0)
			rc = rt_buf_puts(key, r->key);
		return rc < 0 || value == NULL
			       ? rc
			       : put_raw(r->data, r->len, value);
	case ETCD_KEYS_LEADER:
	case ETCD_KEYS_IMPORT:
	case ETCD_KEYS_EVENT_HEAD:
		rc = etcd_keys_kind_prefix(cluster, r->kind, key);
		return rc < 0 || value == NULL
			       ? rc
			       : put_raw(r->data, r->len, value);
	default: return -EINVAL;
	}
}

/*
 * etcd_keys_decode.c - a key and value of an fnfs cluster back into a
 * record (etcd_keys.h): the key's kind and names, then its value, checked
 * field by field.
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

/* ========================================================== decoding */

void etcd_keys_rec_free(struct etcd_keys_rec *r)
{
	int i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	memset(r, 0, sizeof(*r));
}

/* A copy of `n` bytes at `p` (NUL-terminated) owned by `r`. */
static const char *own(struct etcd_keys_rec *r, const char *p, size_t n)
{
	char *s;

	if (r->nowned >= (int)(sizeof(r->owned) / sizeof(r->owned[0])))
		return NULL;
	s = malloc(n + 1);
	if (s == NULL)
		return NULL;
	if (n > 0)
		memcpy(s, p, n);
	s[n] = '\0';
	r->owned[r->nowned++] = s;
	return s;
}

/* The key split into `want` components by '/' (`rest`: the last one is
 * all that follows, slashes included); each one non-empty. The pieces are
 * copies owned by `r`. */
static int split(struct etcd_keys_rec *r, const char *p, size_t n, int want,
		 int rest, const char **out)
{
	int i;

	for (i = 0; i < want; i++) {
		const char *slash = (i == want - 1 && rest) ? NULL
							    : memchr(p, '/', n);
		size_t len = slash ? (size_t)(slash - p) : n;

		if ((i == want - 1) != (slash == NULL) || len == 0)
			return -EINVAL;
		out[i] = own(r, p, len);
		if (out[i] == NULL)
			return -ENOMEM;
		p += len + (slash != NULL);
		n -= len + (slash != NULL);
	}
	return 0;
}

/* Reads integer field `name` of `o` into *out: 0 <= v <= max. */
static int get_num(json_t *o, const char *name, int64_t max, int64_t *out)
{
	json_t *v = json_object_get(o, name);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > max)
		return -EINVAL;
	*out = json_integer_value(v);
	return 0;
}

/* Reads string field `name` of `o` into a copy owned by `r`. */
static int get_str(struct etcd_keys_rec *r, json_t *o, const char *name,
		   const char **out)
{
	json_t *v = json_object_get(o, name);

	if (!json_is_string(v))
		return -EINVAL;
	*out = own(r, json_string_value(v), json_string_length(v));
	return *out ? 0 : -ENOMEM;
}

/* Reads field `name` of `o` (an object or an array of strings) as
 * compact JSON text owned by `r`. */
static int get_text(struct etcd_keys_rec *r, json_t *o, const char *name,
		    int array, const char **out)
{
	json_t *v = json_object_get(o, name), *e;
	size_t i;
	char *s;

	if (array ? !json_is_array(v) : !json_is_object(v))
		return -EINVAL;
	if (array) {
		json_array_foreach (v, i, e) {
			if (!json_is_string(e))
				return -EINVAL;
		}
	}
	s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	*out = s ? own(r, s, strlen(s)) : NULL;
	free(s);
	return *out ? 0 : -ENOMEM;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The decoded path of a key's PATH component, checked canonical. */
static int get_path(struct etcd_keys_rec *r, const char *p, size_t n,
		    const char **out)
{
	struct rt_buf b = { 0 };
	size_t i;
	int rc = 0, hi, lo;

	for (i = 0; i < n && rc == 0; i++) {
		unsigned char c = (unsigned char)p[i];

		if (etcd_keys__path_plain(c)) {
			rc = rt_buf_append(&b, p + i, 1);
			continue;
		}
		if (c != '%' || i + 2 >= n) {
			rc = -EINVAL;
			break;
		}
		hi = hexval(p[i + 1]);
		lo = hexval(p[i + 2]);
		c = (unsigned char)(hi * 16 + lo);
		if (hi < 0 || lo < 0 || c == 0 || etcd_keys__path_plain(c)) {
			rc = -EINVAL;
			break;
		}
		rc = rt_buf_append(&b, &c, 1);
		i += 2;
	}
	if (rc == 0 && !etcd_keys__path_ok(b.data, b.len))
		rc = -EINVAL;
	if (rc == 0)
		rc = (*out = own(r, b.data, b.len)) != NULL ? 0 : -ENOMEM;
	rt_buf_free(&b);
	return rc;
}

/* A canonical decimal number of at most `digits` digits (exactly that
 * many when `fixed`) below `max`. */
static int get_decimal(const char *p, size_t n, int digits, int fixed,
		       uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > (size_t)digits || (fixed && n != (size_t)digits) ||
	    (!fixed && n > 1 && p[0] == '0'))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uint64_t d = (uint64_t)(p[i] - '0');

		if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The JSON object of a value, with exactly `nfields` fields. */
/* Parses `value` as a JSON object of exactly `nfields` fields (0: any
 * number), or returns NULL. */
static json_t *load_obj(const char *value, size_t vlen, size_t nfields)
{
	json_t *o = json_loadb(value, vlen, JSON_REJECT_DUPLICATES, NULL);

	if (o != NULL && (!json_is_object(o) ||
			  (nfields > 0 && json_object_size(o) != nfields))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Decodes a tenant, namespace or function. */
static int decode_row(struct etcd_keys_rec *r, const char *p, size_t n,
		      json_t *o)
{
	struct store_row *w = &r->row;
	const char *names[3] = { NULL, NULL, NULL };
	int64_t v[5] = { 0 };
	int rc, depth = (int)(r->kind - ETCD_KEYS_TENANT) + 1;

	w->kind = (enum store_kind)(depth - 1);
	rc = split(r, p, n, depth, 0, names);
	for (int i = 0; rc == 0 && i < depth; i++)
		if (!etcd_keys__name_ok(names[i]))
			rc = -EINVAL;
	w->tenant = names[0];
	w->ns = names[1];
	w->name = names[2];
	if (rc == 0)
		rc = get_num(o, "created_ms", INT64_MAX, &v[0]);
	if (rc == 0)
		rc = get_num(o, "updated_ms", INT64_MAX, &v[1]);
	w->created_ms = v[0];
	w->updated_ms = v[1];
	if (rc == 0 && w->kind == STORE_TENANT) {
		rc = get_num(o, "uid", UINT32_MAX, &v[2]);
		if (rc == 0)
			rc = get_num(o, "gid", UINT32_MAX, &v[3]);
		if (rc == 0)
			rc = get_num(o, "mode", UINT32_MAX, &v[4]);
		w->uid = (uint32_t)v[2];
		w->gid = (uint32_t)v[3];
		w->mode = (uint32_t)v[4];
	}
	if (rc == 0 && w->kind == STORE_FUNCTION) {
		rc = get_num(o, "revision", INT64_MAX, &v[2]);
		if (rc == 0)
			rc = get_num(o, "run_revision", INT64_MAX, &v[3]);
		if (rc == 0)
			rc = get_text(r, o, "spec", 0, &w->spec);
		w->revision = (uint64_t)v[2];
		w->run_revision = (uint64_t)v[3];
	}
	return rc;
}

/* The fields each JSON kind has. */
static const size_t nfields[ETCD_KEYS_KINDS] = {
	[ETCD_KEYS_META] = 2,	   [ETCD_KEYS_TENANT] = 5,
	[ETCD_KEYS_NAMESPACE] = 2, [ETCD_KEYS_FUNCTION] = 5,
	[ETCD_KEYS_WORKER] = 0, /* 5 or 8: decode_worker_told; an
				 * instance's: decode_told */
	[ETCD_KEYS_SETTING] = 1,   [ETCD_KEYS_REVOKED] = 2,
	[ETCD_KEYS_CODE_FILE] = 4, [ETCD_KEYS_CODE_REVISION] = 3,
	[ETCD_KEYS_OBJECT] = 2,
};

/* The optional fields of an instance's value `o` (its three others read
 * already): the leader's term, and what the leader tells of it - state
 * and pid both or neither, and revision, started_ms, restarts and
 * last_exit only with them (each may be missing: a value of an older
 * leader, 0 or none). No other field. */
static int decode_told(struct etcd_keys_rec *r, json_t *o)
{
	struct store_instance *in = &r->instance;
	const char *opt[] = { "revision", "started_ms", "restarts" };
	int64_t v = 0;
	size_t known = 3, i;
	int rc = 0;

	if (json_object_get(o, "term") != NULL) {
		rc = get_num(o, "term", INT64_MAX, &v);
		in->term = v;
		known++;
	}
	if (rc == 0 && (json_object_get(o, "state") != NULL ||
			json_object_get(o, "pid") != NULL)) {
		rc = get_str(r, o, "state", &in->state);
		if (rc == 0 && !etcd_keys__name_ok(in->state))
			rc = -EINVAL;
		if (rc == 0)
			rc = get_num(o, "pid", INT32_MAX, &v);
		in->pid = (int)v;
		known += 2;
		for (i = 0; rc == 0 && i < sizeof(opt) / sizeof(opt[0]); i++) {
			if (json_object_get(o, opt[i]) == NULL)
				continue;
			v = 0;
			rc = get_num(o, opt[i], INT64_MAX, &v);
			known++;
			if (i == 0)
				in->revision = (uint64_t)v;
			else if (i == 1)
				in->started_ms = v;
			else
				in->restarts = v;
		}
		if (rc == 0 && json_object_get(o, "last_exit") != NULL) {
			rc = get_str(r, o, "last_exit", &in->last_exit);
			if (rc == 0 && !etcd_keys__last_exit_ok(in->last_exit))
				rc = -EINVAL;
			known++;
		}
	}
	return rc == 0 && json_object_size(o) != known ? -EINVAL : rc;
}

/* The optional fields of a worker's value `o` (its five others read
 * already): what the leader tells of it, state, pid and since_ms, all
 * three or none. No other field. */
static int decode_worker_told(struct etcd_keys_rec *r, json_t *o)
{
	int64_t v[2] = { 0, 0 };
	int rc;

	if (json_object_size(o) == 5)
		return 0;
	if (json_object_size(o) != 8)
		return -EINVAL;
	rc = get_str(r, o, "state", &r->worker.state);
	if (rc == 0 && !etcd_keys__name_ok(r->worker.state))
		rc = -EINVAL;
	if (rc == 0)
		rc = get_num(o, "pid", INT32_MAX, &v[0]);
	if (rc == 0)
		rc = get_num(o, "since_ms", INT64_MAX, &v[1]);
	r->worker.pid = (int)v[0];
	r->worker.since_ms = v[1];
	return rc;
}

/* Decodes what follows "P/KIND/" (`p`, `n` bytes) with its value `o`. */
static int decode_json_kind(struct etcd_keys_rec *r, const char *p, size_t n,
			    json_t *o)
{
	const char *names[4] = { NULL, NULL, NULL, NULL }, *s = NULL;
	int64_t v[4] = { 0 };
	uint64_t u = 0;
	json_t *wk;
	int rc = 0;

	switch (r->kind) {
	case ETCD_KEYS_META:
		rc = get_str(r, o, "format", &s);
		if (rc == 0 && strcmp(s, ETCD_KEYS_FORMAT) != 0)
			rc = -EINVAL;
		if (rc == 0)
			rc = get_num(o, "version", INT32_MAX, &v[0]);
		r->version = (int)v[0];
		return rc == 0 && r->version < 1 ? -EINVAL : rc;
	case ETCD_KEYS_TENANT:
	case ETCD_KEYS_NAMESPACE:
	case ETCD_KEYS_FUNCTION: return decode_row(r, p, n, o);
	case ETCD_KEYS_INSTANCE:
		rc = split(r, p, n, 4, 0, names);
		r->instance.tenant = names[0];
		r->instance.ns = names[1];
		r->instance.fn = names[2];
		if (rc == 0)
			rc = get_decimal(names[3], strlen(names[3]), 10, 0,
					 INT32_MAX, &u);
		r->instance.n = (int)u;
		if (rc == 0)
			rc = get_num(o, "desired", 1, &v[0]);
		if (rc == 0)
			rc = get_num(o, "epoch", INT64_MAX, &v[1]);
		r->instance.desired_run = (int)v[0];
		r->instance.epoch = (uint64_t)v[1];
		wk = json_object_get(o, "worker");
		if (rc == 0 && json_is_string(wk))
			rc = get_str(r, o, "worker", &r->instance.worker);
		else if (rc == 0 && !json_is_null(wk))
			rc = -EINVAL;
		if (rc == 0 && r->instance.worker != NULL &&
		    !etcd_keys__name_ok(r->instance.worker))
			rc = -EINVAL;
		if (rc == 0)
			rc = decode_told(r, o);
		break;
	case ETCD_KEYS_WORKER:
		rc = split(r, p, n, 1, 0, names);
		r->worker.id = names[0];
		if (rc == 0)
			rc = get_num(o, "memory", INT32_MAX, &v[0]);
		if (rc == 0)
			rc = get_num(o, "local", 1, &v[1]);
		if (rc == 0)
			rc = get_num(o, "drained", 1, &v[2]);
		r->worker.memory_mb = (int)v[0];
		r->worker.local = (int)v[1];
		r->worker.drained = (int)v[2];
		if (rc == 0)
			rc = get_text(r, o, "tags", 1, &r->worker.tags);
		if (rc == 0)
			rc = get_text(r, o, "namespaces", 1,
				      &r->worker.namespaces);
		if (rc == 0)
			rc = decode_worker_told(r, o);
		break;
	case ETCD_KEYS_SETTING:
		r->key = own(r, p, n);
		if (r->key == NULL)
			return -ENOMEM;
		if (!etcd_keys__setting_key_ok(r->key) || strlen(r->key) != n)
			return -EINVAL;
		return get_str(r, o, "value", &r->value);
	case ETCD_KEYS_REVOKED:
		rc = split(r, p, n, 2, 0, names);
		r->revoked.worker = names[0];
		if (rc == 0 && !etcd_keys__name_ok(names[0]))
			rc = -EINVAL;
		if (rc == 0)
			rc = get_str(r, o, "serial", &r->revoked.serial);
		if (rc == 0)
			rc = get_num(o, "revoked_ms", INT64_MAX, &v[0]);
		r->revoked.revoked_ms = v[0];
		if (rc == 0 &&
		    (r->revoked.serial[0] == '\0'
			     ? strcmp(names[1], "-") != 0
			     : (!etcd_keys__name_ok(r->revoked.serial) ||
				strcmp(names[1], r->revoked.serial) != 0)))
			rc = -EINVAL;
		return rc;
	case ETCD_KEYS_CODE_FILE:
		rc = split(r, p, n, 4, 1, names);
		r->file.tenant = names[0];
		r->file.ns = names[1];
		r->file.fn = names[2];
		if (rc == 0)
			rc = get_path(r, names[3], strlen(names[3]),
				      &r->file.path);
		if (rc == 0)
			rc = get_num(o, "mode", UINT32_MAX, &v[0]);
		if (rc == 0)
			rc = get_num(o, "size", INT64_MAX, &v[1]);
		if (rc == 0)
			rc = get_num(o, "mtime_ms", INT64_MAX, &v[2]);
		if (rc == 0)
			rc = get_str(r, o, "hash", &r->file.hash);
		r->file.mode = (uint32_t)v[0];
		r->file.size = (uint64_t)v[1];
		r->file.mtime_ms = v[2];
		if (rc == 0 && r->file.hash[0] != '\0' &&
		    !etcd_keys__hex64_ok(r->file.hash))
			rc = -EINVAL;
		break;
	case ETCD_KEYS_CODE_REVISION:
		rc = split(r, p, n, 3, 0, names);
		r->code.tenant = names[0];
		r->code.ns = names[1];
		r->code.fn = names[2];
		if (rc == 0)
			rc = get_num(o, "bytes", INT64_MAX, &v[0]);
		if (rc == 0)
			rc = get_num(o, "files", INT32_MAX, &v[1]);
		if (rc == 0)
			rc = get_str(r, o, "hash", &r->code.hash);
		r->code.bytes = (uint64_t)v[0];
		r->code.files = (int)v[1];
		if (rc == 0 && r->code.hash[0] != '\0' &&
		    !etcd_keys__hex64_ok(r->code.hash))
			rc = -EINVAL;
		break;
	case ETCD_KEYS_OBJECT:
		rc = split(r, p, n, 1, 0, names);
		r->hash = names[0];
		if (rc == 0 && !etcd_keys__hex64_ok(r->hash))
			rc = -EINVAL;
		if (rc == 0)
			rc = get_num(o, "size", INT64_MAX, &v[0]);
		if (rc == 0)
			rc = get_num(o, "chunks", ETCD_KEYS_CHUNKS_MAX, &v[1]);
		r->size = (uint64_t)v[0];
		r->chunks = (uint32_t)v[1];
		if (rc == 0 && r->chunks != etcd_keys_chunks(r->size))
			rc = -EINVAL;
		return rc;
	default: return -EINVAL;
	}
	/* The names of the key: checked here for all kinds at once. */
	for (int i = 0; rc == 0 && i < 3 && names[i] != NULL; i++)
		if (!etcd_keys__name_ok(names[i]))
			rc = -EINVAL;
	return rc;
}

/* Decodes the raw kinds: chunks, events, the leader, the import, the
 * members (their values are presence.h's, not checked here). */
static int decode_raw_kind(struct etcd_keys_rec *r, const char *p, size_t n,
			   const char *value, size_t vlen)
{
	const char *names[2] = { NULL, NULL };
	uint64_t u = 0;
	int rc = 0;

	if (r->kind == ETCD_KEYS_CHUNK) {
		rc = split(r, p, n, 2, 0, names);
		r->hash = names[0];
		if (rc == 0 && !etcd_keys__hex64_ok(r->hash))
			rc = -EINVAL;
		if (rc == 0)
			rc = get_decimal(names[1], strlen(names[1]), 6, 1,
					 ETCD_KEYS_CHUNKS_MAX - 1, &u);
		r->index = (uint32_t)u;
		if (rc == 0 && vlen > ETCD_KEYS_CHUNK_BYTES)
			rc = -EINVAL;
	} else if (r->kind == ETCD_KEYS_EVENT) {
		rc = get_decimal(p, n, 20, 1, UINT64_MAX, &u);
		r->seq = u;
	} else if (r->kind == ETCD_KEYS_MEMBER) {
		rc = split(r, p, n, 1, 0, names);
		r->key = names[0];
		if (rc == 0 && !etcd_keys__name_ok(r->key))
			rc = -EINVAL;
	}
	if (rc == 0) {
		r->data = own(r, value ? value : "", value ? vlen : 0);
		r->len = value ? vlen : 0;
		rc = r->data ? 0 : -ENOMEM;
	}
	return rc;
}

int etcd_keys_decode(const char *cluster, const char *key, size_t klen,
		     const char *value, size_t vlen, struct etcd_keys_rec *r)
{
	struct rt_buf pre = { 0 };
	const char *p;
	size_t n, kl;
	json_t *o = NULL;
	int rc, k;

	memset(r, 0, sizeof(*r));
	rc = etcd_keys_prefix(cluster, &pre);
	if (rc < 0)
		goto out;
	if (key == NULL || klen <= pre.len || memchr(key, '\0', klen) ||
	    memcmp(key, pre.data, pre.len) != 0) {
		rc = -EINVAL;
		goto out;
	}
	p = key + pre.len;
	n = klen - pre.len;
	rc = -EINVAL;
	for (k = 0; k < ETCD_KEYS_KINDS; k++) {
		kl = strlen(etcd_keys__kind_name[k]);
		if (etcd_keys__single(k)) {
			if (n == kl &&
			    memcmp(p, etcd_keys__kind_name[k], kl) == 0)
				break;
		} else if (n > kl + 1 &&
			   memcmp(p, etcd_keys__kind_name[k], kl) == 0 &&
			   p[kl] == '/') {
			break;
		}
	}
	if (k == ETCD_KEYS_KINDS)
		goto out;
	r->kind = (enum etcd_keys_kind)k;
	/* A key of a kind with names has a non-empty rest. */
	assert(etcd_keys__single(k) || n > kl + 1);
	if (!etcd_keys__single(k)) {
		p += kl + 1;
		n -= kl + 1;
	}
	if (k == ETCD_KEYS_CHUNK || k == ETCD_KEYS_EVENT ||
	    k == ETCD_KEYS_LEADER || k == ETCD_KEYS_IMPORT ||
	    k == ETCD_KEYS_EVENT_HEAD || k == ETCD_KEYS_MEMBER) {
		rc = decode_raw_kind(r, p, n, value, vlen);
		goto out;
	}
	/* An instance's value has optional fields: decode_told counts. */
	o = value ? load_obj(value, vlen,
			     k == ETCD_KEYS_INSTANCE ? 0 : nfields[k])
		  : NULL;
	rc = o ? decode_json_kind(r, p, n, o) : -EINVAL;
	assert(rc <= 0);
out:
	json_decref(o);
	rt_buf_free(&pre);
	return rc;
}

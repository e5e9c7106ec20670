/*
 * etcd_json.c - the request bodies of etcd's v3 JSON gateway and the
 * parser of its answers (etcd_json.h): pure functions over buffers, with
 * jansson.
 *
 * One file over 600 lines: the builders and the parser are two faces of
 * one wire format (the same field names, the same base64 and int64-as-
 * string rules), kept side by side so that a change to one is seen
 * against the other; etcd.c and the bench scripts link it as one object.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "etcd_json.h"

/* ------------------------------------------------------------ building */

/* Sets obj[name] to the base64 of `n` bytes at `p`. 0 or -ENOMEM. */
static int set_b64(json_t *obj, const char *name, const void *p, size_t n)
{
	struct rt_buf b = { 0 };
	int rc;

	rc = sched_b64_encode(p, n, &b);
	if (rc < 0)
		goto out;
	if (json_object_set_new(obj, name, json_stringn(b.data, b.len)) < 0)
		rc = -ENOMEM;
out:
	rt_buf_free(&b);
	return rc;
}

/* Sets obj[name] to `v` as a JSON string, unless it is 0. */
static int set_i64(json_t *obj, const char *name, int64_t v)
{
	char s[24];

	if (v == 0)
		return 0;
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_set_new(obj, name, json_string(s)) < 0 ? -ENOMEM : 0;
}

/* Sets obj[name] to true, unless `v` is 0. */
static int set_bool(json_t *obj, const char *name, int v)
{
	if (!v)
		return 0;
	return json_object_set_new(obj, name, json_true()) < 0 ? -ENOMEM : 0;
}

/* Sets obj["key"] and, when given, obj["range_end"]. -EINVAL without a
 * key (a fence of a candidate that holds no election key yet). */
static int set_range(json_t *obj, const char *key, const char *range_end)
{
	int rc = key != NULL ? set_b64(obj, "key", key, strlen(key)) : -EINVAL;

	if (rc == 0 && range_end != NULL)
		rc = set_b64(obj, "range_end", range_end, strlen(range_end));
	return rc;
}

/* Dumps `obj` (consumed) into *out. */
static int finish(json_t *obj, int rc, char **out)
{
	*out = NULL;
	if (rc == 0) {
		*out = json_dumps(obj, JSON_COMPACT);
		if (*out == NULL)
			rc = -ENOMEM;
	}
	json_decref(obj);
	return rc;
}

size_t etcd_prefix_end(const char *prefix, char *out)
{
	size_t n = strlen(prefix);

	memcpy(out, prefix, n + 1);
	while (n > 0) {
		if ((unsigned char)out[n - 1] < 0xff) {
			out[n - 1]++;
			out[n] = '\0';
			return n;
		}
		n--;
	}
	/* All 0xff (or empty): every key from `key` on. */
	out[0] = '\0';
	out[1] = '\0';
	return 1;
}

int etcd_req_range(const char *key, const char *range_end, int64_t revision,
		   int64_t limit, int keys_only, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0 && (revision < 0 || limit < 0))
		rc = -EINVAL;
	if (rc == 0)
		rc = set_range(o, key, range_end);
	if (rc == 0)
		rc = set_i64(o, "revision", revision);
	if (rc == 0)
		rc = set_i64(o, "limit", limit);
	if (rc == 0)
		rc = set_bool(o, "keys_only", keys_only);
	return finish(o, rc, out);
}

/* The fields of a put, into `o`. */
static int put_fields(json_t *o, const char *key, const char *value, size_t n,
		      int64_t lease)
{
	int rc = set_b64(o, "key", key, strlen(key));

	if (rc == 0 && n > 0)
		rc = set_b64(o, "value", value, n);
	if (rc == 0)
		rc = set_i64(o, "lease", lease);
	return rc;
}

int etcd_req_put(const char *key, const char *value, size_t n, int64_t lease,
		 char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0)
		rc = put_fields(o, key, value, n, lease);
	return finish(o, rc, out);
}

int etcd_req_delete(const char *key, const char *range_end, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0)
		rc = set_range(o, key, range_end);
	return finish(o, rc, out);
}

static const char *const target_names[] = { "VERSION", "CREATE", "MOD",
					    "VALUE" };
static const char *const result_names[] = { "EQUAL", "GREATER", "LESS",
					    "NOT_EQUAL" };
static const char *const number_fields[] = { "version", "create_revision",
					     "mod_revision" };

/* One compare as JSON, appended to array `arr`. */
static int add_cmp(json_t *arr, const struct etcd_cmp *c)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0 && ((unsigned)c->target > ETCD_VALUE ||
			(unsigned)c->result > ETCD_NOT_EQUAL))
		rc = -EINVAL;
	if (rc == 0)
		rc = set_range(o, c->key, c->range_end);
	/* EQUAL and VERSION are zero: left out, as the gateway does. */
	if (rc == 0 && c->result != ETCD_EQUAL &&
	    json_object_set_new(o, "result",
				json_string(result_names[c->result])) < 0)
		rc = -ENOMEM;
	if (rc == 0 && c->target != ETCD_VERSION &&
	    json_object_set_new(o, "target",
				json_string(target_names[c->target])) < 0)
		rc = -ENOMEM;
	if (rc == 0 && c->target == ETCD_VALUE)
		rc = set_b64(o, "value", c->value ? c->value : "",
			     c->value_len);
	else if (rc == 0)
		rc = set_i64(o, number_fields[c->target], c->number);
	if (rc == 0 && json_array_append(arr, o) < 0)
		rc = -ENOMEM;
	json_decref(o);
	return rc;
}

/* One operation as JSON ({"request_put": {...}}), appended to `arr`. */
static int add_op(json_t *arr, const struct etcd_op *op)
{
	json_t *o = json_object(), *in = json_object();
	const char *name = NULL;
	int rc = o == NULL || in == NULL ? -ENOMEM : 0;

	if (rc == 0) {
		switch (op->kind) {
		case ETCD_OP_RANGE:
			name = "request_range";
			rc = set_range(in, op->key, op->range_end);
			break;
		case ETCD_OP_PUT:
			name = "request_put";
			rc = put_fields(in, op->key, op->value, op->value_len,
					op->lease);
			break;
		case ETCD_OP_DELETE:
			name = "request_delete_range";
			rc = set_range(in, op->key, op->range_end);
			break;
		default: rc = -EINVAL;
		}
	}
	if (rc == 0 && json_object_set(o, name, in) < 0)
		rc = -ENOMEM;
	if (rc == 0 && json_array_append(arr, o) < 0)
		rc = -ENOMEM;
	json_decref(in);
	json_decref(o);
	return rc;
}

/* obj[name] = the array of the `n` operations. */
static int set_ops(json_t *obj, const char *name, const struct etcd_op *ops,
		   size_t n)
{
	json_t *arr;
	size_t i;
	int rc = 0;

	if (n == 0)
		return 0;
	arr = json_array();
	if (arr == NULL)
		return -ENOMEM;
	for (i = 0; i < n && rc == 0; i++)
		rc = add_op(arr, &ops[i]);
	if (rc == 0 && json_object_set(obj, name, arr) < 0)
		rc = -ENOMEM;
	json_decref(arr);
	return rc;
}

int etcd_req_txn(const struct etcd_cmp *cmp, size_t ncmp,
		 const struct etcd_op *succ, size_t nsucc,
		 const struct etcd_op *fail, size_t nfail, char **out)
{
	json_t *o = json_object(), *arr = json_array();
	size_t i;
	int rc = o == NULL || arr == NULL ? -ENOMEM : 0;

	for (i = 0; i < ncmp && rc == 0; i++)
		rc = add_cmp(arr, &cmp[i]);
	if (rc == 0 && ncmp > 0 && json_object_set(o, "compare", arr) < 0)
		rc = -ENOMEM;
	if (rc == 0)
		rc = set_ops(o, "success", succ, nsucc);
	if (rc == 0)
		rc = set_ops(o, "failure", fail, nfail);
	json_decref(arr);
	return finish(o, rc, out);
}

int etcd_req_watch(const char *key, const char *range_end,
		   int64_t start_revision, int prev_kv, char **out)
{
	json_t *o = json_object(), *in = json_object();
	int rc = o == NULL || in == NULL ? -ENOMEM : 0;

	if (rc == 0 && start_revision < 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = set_range(in, key, range_end);
	if (rc == 0)
		rc = set_i64(in, "start_revision", start_revision);
	if (rc == 0)
		rc = set_bool(in, "progress_notify", 1);
	if (rc == 0)
		rc = set_bool(in, "prev_kv", prev_kv);
	if (rc == 0 && json_object_set(o, "create_request", in) < 0)
		rc = -ENOMEM;
	json_decref(in);
	return finish(o, rc, out);
}

int etcd_req_lease_grant(int64_t ttl, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0 && ttl <= 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = set_i64(o, "TTL", ttl);
	return finish(o, rc, out);
}

int etcd_req_lease_id(int64_t id, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0 && id == 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = set_i64(o, "ID", id);
	return finish(o, rc, out);
}

int etcd_req_campaign(const char *name, int64_t lease, const char *value,
		      size_t n, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0 && lease == 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = set_b64(o, "name", name, strlen(name));
	if (rc == 0)
		rc = set_i64(o, "lease", lease);
	if (rc == 0 && n > 0)
		rc = set_b64(o, "value", value, n);
	return finish(o, rc, out);
}

int etcd_req_leader(const char *name, char **out)
{
	json_t *o = json_object();
	int rc = o == NULL ? -ENOMEM : 0;

	if (rc == 0)
		rc = set_b64(o, "name", name, strlen(name));
	return finish(o, rc, out);
}

int etcd_req_resign(const char *name, const char *key, size_t key_len,
		    int64_t rev, int64_t lease, char **out)
{
	json_t *o = json_object(), *in = json_object();
	int rc = o == NULL || in == NULL ? -ENOMEM : 0;

	if (rc == 0)
		rc = set_b64(in, "name", name, strlen(name));
	if (rc == 0)
		rc = set_b64(in, "key", key, key_len);
	if (rc == 0)
		rc = set_i64(in, "rev", rev);
	if (rc == 0)
		rc = set_i64(in, "lease", lease);
	if (rc == 0 && json_object_set(o, "leader", in) < 0)
		rc = -ENOMEM;
	json_decref(in);
	return finish(o, rc, out);
}

/* ------------------------------------------------------------- parsing */

void etcd_kv_clear(struct etcd_kv *kv)
{
	if (kv == NULL)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void etcd_answer_clear(struct etcd_answer *a)
{
	size_t i;

	if (a == NULL)
		return;
	free(a->error);
	for (i = 0; i < a->nkvs; i++)
		etcd_kv_clear(&a->kvs[i]);
	free(a->kvs);
	for (i = 0; i < a->nevents; i++)
		etcd_kv_clear(&a->events[i]);
	free(a->events);
	free(a->deletes);
	etcd_kv_clear(&a->leader);
	memset(a, 0, sizeof(*a));
}

int etcd_grpc_errno(int code, const char *text)
{
	if (text != NULL && strstr(text, "election: no leader") != NULL)
		return -ENOENT;
	switch (code) {
	case 1: return -ECANCELED;
	case 3: return -EINVAL;
	case 4: return -ETIMEDOUT;
	case 5: return -ENOENT;
	case 6: return -EEXIST;
	case 7: return -EACCES;
	case 8: return -ENOSPC;
	case 11: return -ERANGE;
	case 14: return -EAGAIN;
	case 16: return -EACCES;
	default: return -EIO;
	}
}

/* Says why a body is not an answer, into a->error. Returns -EPROTO (or
 * -ENOMEM). */
static int bad(struct etcd_answer *a, const char *why)
{
	free(a->error);
	a->error = strdup(why);
	return a->error == NULL ? -ENOMEM : -EPROTO;
}

/* *v = obj[name] as an int64 (a JSON string or number); 0 when absent.
 * Returns 0 or -EPROTO. */
static int get_i64(const json_t *obj, const char *name, int64_t *v)
{
	const json_t *j = json_object_get(obj, name);
	const char *s;
	char *end;
	long long n;

	*v = 0;
	if (j == NULL || json_is_null(j))
		return 0;
	if (json_is_integer(j)) {
		*v = json_integer_value(j);
		return 0;
	}
	if (!json_is_string(j))
		return -EPROTO;
	s = json_string_value(j);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return -EPROTO;
	*v = n;
	return 0;
}

/* *v = obj[name] as an unsigned 64-bit number (member ids use all 64). */
static int get_u64(const json_t *obj, const char *name, uint64_t *v)
{
	const json_t *j = json_object_get(obj, name);
	const char *s;
	char *end;
	unsigned long long n;

	*v = 0;
	if (j == NULL)
		return 0;
	if (json_is_integer(j)) {
		*v = (uint64_t)json_integer_value(j);
		return 0;
	}
	if (!json_is_string(j))
		return -EPROTO;
	s = json_string_value(j);
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-')
		return -EPROTO;
	*v = n;
	return 0;
}

/* *out = a copy of the base64 in obj[name], decoded ("" when absent).
 * Returns 0, -EPROTO or -ENOMEM. */
static int get_b64(const json_t *obj, const char *name, char **out, size_t *len)
{
	const json_t *j = json_object_get(obj, name);
	struct rt_buf b = { 0 };
	int rc;

	*out = NULL;
	*len = 0;
	if (j != NULL && !json_is_string(j))
		return -EPROTO;
	if (j != NULL)
		rc = sched_b64_decode(json_string_value(j),
				      json_string_length(j), &b);
	else
		rc = rt_buf_reserve(&b, 0);
	if (rc == -EINVAL)
		rc = -EPROTO;
	if (rc == 0 && b.data == NULL)
		rc = rt_buf_reserve(&b, 0);
	if (rc < 0) {
		rt_buf_free(&b);
		return rc;
	}
	b.data[b.len] = '\0';
	*out = b.data;
	*len = b.len;
	return 0;
}

/* Parses a KeyValue object into `kv` (cleared on failure). */
static int parse_kv(const json_t *o, struct etcd_kv *kv)
{
	int rc = json_is_object(o) ? 0 : -EPROTO;

	memset(kv, 0, sizeof(*kv));
	if (rc == 0)
		rc = get_b64(o, "key", &kv->key, &kv->key_len);
	if (rc == 0)
		rc = get_b64(o, "value", &kv->value, &kv->value_len);
	if (rc == 0)
		rc = get_i64(o, "create_revision", &kv->create_revision);
	if (rc == 0)
		rc = get_i64(o, "mod_revision", &kv->mod_revision);
	if (rc == 0)
		rc = get_i64(o, "version", &kv->version);
	if (rc == 0)
		rc = get_i64(o, "lease", &kv->lease);
	if (rc < 0)
		etcd_kv_clear(kv);
	return rc;
}

/* Appends the KeyValues of array `arr` (absent: none) to a->kvs. */
static int add_kvs(struct etcd_answer *a, const json_t *arr)
{
	struct etcd_kv *kvs;
	size_t i, n;
	int rc = 0;

	if (arr == NULL)
		return 0;
	if (!json_is_array(arr))
		return -EPROTO;
	n = json_array_size(arr);
	if (n == 0)
		return 0;
	kvs = realloc(a->kvs, (a->nkvs + n) * sizeof(*kvs));
	if (kvs == NULL)
		return -ENOMEM;
	a->kvs = kvs;
	for (i = 0; i < n && rc == 0; i++) {
		rc = parse_kv(json_array_get(arr, i), &a->kvs[a->nkvs]);
		if (rc == 0)
			a->nkvs++;
	}
	return rc;
}

/* The events of a watch message. */
static int parse_events(struct etcd_answer *a, const json_t *arr)
{
	size_t i, n;
	int rc = 0;

	if (arr == NULL)
		return 0;
	if (!json_is_array(arr))
		return -EPROTO;
	n = json_array_size(arr);
	if (n == 0)
		return 0;
	a->events = calloc(n, sizeof(*a->events));
	a->deletes = calloc(n, sizeof(*a->deletes));
	if (a->events == NULL || a->deletes == NULL)
		return -ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		const json_t *e = json_array_get(arr, i);
		const json_t *type = json_object_get(e, "type");

		if (!json_is_object(e))
			return -EPROTO;
		if (type != NULL && !json_is_string(type))
			return -EPROTO;
		a->deletes[i] = type != NULL &&
				strcmp(json_string_value(type), "DELETE") == 0;
		rc = parse_kv(json_object_get(e, "kv"), &a->events[i]);
		if (rc == 0)
			a->nevents++;
	}
	return rc;
}

/* The answers of a txn's operations: kvs of ranges, counts of deletes. */
static int parse_responses(struct etcd_answer *a, const json_t *arr)
{
	size_t i;
	int rc = 0;

	if (arr == NULL)
		return 0;
	if (!json_is_array(arr))
		return -EPROTO;
	for (i = 0; i < json_array_size(arr) && rc == 0; i++) {
		const json_t *r = json_array_get(arr, i), *j;
		int64_t n;

		if ((j = json_object_get(r, "response_range")) != NULL) {
			rc = add_kvs(a, json_object_get(j, "kvs"));
		} else if ((j = json_object_get(r, "response_delete_range")) !=
			   NULL) {
			rc = get_i64(j, "deleted", &n);
			a->deleted += n;
		}
	}
	return rc;
}

/* The error of an error answer: {"error": TEXT, "code": N} (unary) or
 * {"error": {"grpc_code": N, "message": TEXT}} (a stream's). */
static int parse_error(struct etcd_answer *a, const json_t *err,
		       const json_t *top)
{
	const json_t *msg, *code;
	const char *text = "etcd error";

	if (json_is_object(err)) {
		msg = json_object_get(err, "message");
		code = json_object_get(err, "grpc_code");
	} else {
		msg = json_is_string(err) ? err
					  : json_object_get(top, "message");
		code = json_object_get(top, "code");
	}
	if (json_is_string(msg) && json_string_length(msg) > 0)
		text = json_string_value(msg);
	a->rc = etcd_grpc_errno(
		json_is_integer(code) ? (int)json_integer_value(code) : 2,
		text);
	a->error = strdup(text);
	return a->error == NULL ? -ENOMEM : 0;
}

int etcd_parse_answer(const char *body, size_t len, struct etcd_answer *a)
{
	json_t *top, *o, *h, *j;
	json_error_t jerr;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	top = json_loadb(body, len, 0, &jerr);
	if (!json_is_object(top)) {
		rc = bad(a, top == NULL ? jerr.text : "not a JSON object");
		goto out;
	}
	if ((j = json_object_get(top, "error")) != NULL) {
		rc = parse_error(a, j, top);
		goto out;
	}
	o = json_object_get(top, "result");
	if (o == NULL)
		o = top;
	if (!json_is_object(o)) {
		rc = bad(a, "\"result\" is not an object");
		goto out;
	}
	h = json_object_get(o, "header");
	if (h != NULL && !json_is_object(h)) {
		rc = bad(a, "\"header\" is not an object");
		goto out;
	}
	if (h != NULL) {
		rc = get_i64(h, "revision", &a->header.revision);
		if (rc == 0)
			rc = get_u64(h, "member_id", &a->header.member_id);
		if (rc == 0)
			rc = get_i64(h, "raft_term", &a->header.raft_term);
		if (rc < 0)
			goto proto;
	}
	a->succeeded = json_is_true(json_object_get(o, "succeeded"));
	a->more = json_is_true(json_object_get(o, "more"));
	a->created = json_is_true(json_object_get(o, "created"));
	a->canceled = json_is_true(json_object_get(o, "canceled"));
	if ((rc = get_i64(o, "count", &a->count)) < 0 ||
	    (rc = get_i64(o, "deleted", &a->deleted)) < 0 ||
	    (rc = get_i64(o, "ID", &a->lease_id)) < 0 ||
	    (rc = get_i64(o, "TTL", &a->ttl)) < 0 ||
	    (rc = get_i64(o, "compact_revision", &a->compact_revision)) < 0 ||
	    (rc = get_i64(o, "watch_id", &a->watch_id)) < 0)
		goto proto;
	rc = add_kvs(a, json_object_get(o, "kvs"));
	if (rc == 0)
		rc = parse_responses(a, json_object_get(o, "responses"));
	if (rc == 0)
		rc = parse_events(a, json_object_get(o, "events"));
	if (rc == 0 && (j = json_object_get(o, "leader")) != NULL) {
		/* A campaign's LeaderKey: name, key, rev, lease. */
		rc = json_is_object(j) ? 0 : -EPROTO;
		if (rc == 0)
			rc = get_b64(j, "key", &a->leader.key,
				     &a->leader.key_len);
		if (rc == 0)
			rc = get_b64(j, "name", &a->leader.value,
				     &a->leader.value_len);
		if (rc == 0)
			rc = get_i64(j, "rev", &a->leader.mod_revision);
		if (rc == 0)
			rc = get_i64(j, "lease", &a->leader.lease);
	} else if (rc == 0 && (j = json_object_get(o, "kv")) != NULL) {
		rc = parse_kv(j, &a->leader);
	}
proto:
	if (rc == -EPROTO)
		rc = bad(a, "a field of the wrong type or format");
out:
	if (rc < 0 && rc != -EPROTO)
		etcd_answer_clear(a);
	json_decref(top);
	return rc;
}

/* ------------------------------------------------------------- lines */

int etcd_lines_feed(struct etcd_lines *l, const char *p, size_t n,
		    etcd_line_fn fn, void *arg)
{
	const char *nl;
	int rc = 0;

	while (n > 0) {
		size_t k;

		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) : n;
		if (l->max > 0 && l->partial.len + k > l->max) {
			rc = -EMSGSIZE;
			goto out;
		}
		if (nl == NULL) {
			rc = rt_buf_append(&l->partial, p, n);
			goto out;
		}
		if (l->partial.len > 0) {
			rc = rt_buf_append(&l->partial, p, k);
			if (rc == 0)
				rc = fn(arg, l->partial.data, l->partial.len);
			rt_buf_reset(&l->partial);
		} else if (k > 0) {
			rc = fn(arg, p, k);
		}
		if (rc != 0)
			goto out;
		p += k + 1;
		n -= k + 1;
	}
out:
	return rc;
}

void etcd_lines_free(struct etcd_lines *l)
{
	rt_buf_free(&l->partial);
}

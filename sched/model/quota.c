/*
 * quota.c - per-tenant quotas: the values of the quota files, their
 * store (a setting "quota:TENANT" per tenant), and the use of each
 * tenant, moved by the changes that make or free something, so that a
 * check is a comparison (docs/decisions.md, "Quotas").
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "owners.h"
#include "quota.h"

static const char *const names[SCHED_QUOTA_COUNT] = { "memory", "instances",
						      "functions", "code_bytes",
						      "request_bytes" };

/* How a limit and its use are said in a reason: "4096 MB of memory". */
static const char *const units[SCHED_QUOTA_COUNT] = {
	"MB of memory", "instances", "functions", "bytes of code",
	"bytes of held requests"
};

static const long long user_defaults[SCHED_QUOTA_COUNT] = {
	SCHED_QUOTA_DEF_MEMORY, SCHED_QUOTA_DEF_INSTANCES,
	SCHED_QUOTA_DEF_FUNCTIONS, SCHED_QUOTA_DEF_CODE_BYTES,
	SCHED_QUOTA_DEF_REQUEST_BYTES
};

/* ============================================================ pure parts */

const char *sched_quota_name(enum sched_quota_res r)
{
	return (unsigned)r < SCHED_QUOTA_COUNT ? names[r] : NULL;
}

int sched_quota_find(const char *name, size_t len)
{
	int i;

	for (i = 0; i < SCHED_QUOTA_COUNT; i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return i;
	return -1;
}

long long sched_quota_default(enum sched_quota_res r, int root)
{
	if (root || (unsigned)r >= SCHED_QUOTA_COUNT)
		return SCHED_QUOTA_NONE;
	return user_defaults[r];
}

int sched_quota_parse(const char *buf, size_t len, long long *out,
		      struct rt_buf *why)
{
	long long v;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 4 && memcmp(buf, "none", 4) == 0) {
		*out = SCHED_QUOTA_NONE;
		return 0;
	}
	if (len == 7 && memcmp(buf, "default", 7) == 0) {
		*out = SCHED_QUOTA_UNSET;
		return 0;
	}
	if (sched_parse_digits(buf, len, &v) < 0 || v > SCHED_QUOTA_MAX) {
		rt_buf_printf(why,
			      "a quota is a number from 0 to %lld, `none` "
			      "(unlimited) or `default`",
			      SCHED_QUOTA_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int sched_quota_format(long long limit, struct rt_buf *out)
{
	if (limit < 0)
		return rt_buf_puts(out, "none\n");
	return rt_buf_printf(out, "%lld\n", limit);
}

int sched_quota_encode(const long long limit[SCHED_QUOTA_COUNT],
		       struct rt_buf *out)
{
	int i, rc = rt_buf_puts(out, "");

	for (i = 0; i < SCHED_QUOTA_COUNT && rc == 0; i++) {
		const char *sep = out->len > 0 ? " " : "";

		if (limit[i] == SCHED_QUOTA_NONE)
			rc = rt_buf_printf(out, "%s%s=none", sep, names[i]);
		else if (limit[i] >= 0)
			rc = rt_buf_printf(out, "%s%s=%lld", sep, names[i],
					   limit[i]);
	}
	return rc;
}

int sched_quota_decode(const char *text, long long limit[SCHED_QUOTA_COUNT])
{
	const char *p = text;
	int i, rc = 0;

	for (i = 0; i < SCHED_QUOTA_COUNT; i++)
		limit[i] = SCHED_QUOTA_UNSET;
	while (*p != '\0') {
		size_t n = strcspn(p, " "), k = strcspn(p, "=");
		struct rt_buf why = { 0 };
		long long v;
		int r;

		if (n == 0) {
			p++;
			continue;
		}
		r = k < n ? sched_quota_find(p, k) : -1;
		if (r < 0 ||
		    sched_quota_parse(p + k + 1, n - k - 1, &v, &why) < 0 ||
		    v == SCHED_QUOTA_UNSET)
			rc = -EINVAL;
		else
			limit[r] = v;
		rt_buf_free(&why);
		p += n;
	}
	return rc;
}

int sched_quota_over(long long limit, long long used, long long asked)
{
	if (asked <= 0 || limit < 0)
		return 0;
	return used > limit || asked > limit - used;
}

int sched_quota_reason(const char *tenant, enum sched_quota_res r,
		       long long limit, long long used, long long asked,
		       struct rt_buf *why)
{
	return rt_buf_printf(why,
			     "tenant %s: over its quota of %lld %s (%lld used, "
			     "%lld asked)",
			     tenant, limit, units[r], used, asked);
}

void sched_quota_claim(const struct sched_spec *s, long long *memory,
		       long long *instances)
{
	int n = sched_spec_max_instances(s);

	/* A daemon runs `parallelism`; a hot or cold function scales up
	 * to its ceiling, never past it (sched__wanted). */
	if (s->mode == SCHED_MODE_DAEMON && s->parallelism < n)
		n = s->parallelism;
	*instances = n;
	*memory = (long long)n * s->memory;
}

/* =============================================================== tenants */

static void setting_key(const char *tenant, char *key, size_t n)
{
	snprintf(key, n, "quota:%s", tenant);
}

/* Tenant `t`'s quotas, read from the store the first time. */
static struct sched_quota *quota_of(struct sched *s, struct sched_tenant *t)
{
	struct sched_quota *q = &t->quota;
	char key[96], v[512];
	int i;

	if (q->loaded)
		return q;
	for (i = 0; i < SCHED_QUOTA_COUNT; i++)
		q->limit[i] = SCHED_QUOTA_UNSET;
	setting_key(t->obj.name, key, sizeof(key));
	if (store_setting_get(s->store, key, v, sizeof(v)) == 0 &&
	    sched_quota_decode(v, q->limit) < 0)
		rt_log(RT_LOG_WARN,
		       "store: %s: bad value \"%s\"; kept what "
		       "reads",
		       key, v);
	q->loaded = 1;
	return q;
}

/* The limit of `r` that applies to tenant `t` now. */
static long long limit_of(struct sched *s, struct sched_tenant *t,
			  enum sched_quota_res r)
{
	struct sched_quota *q = quota_of(s, t);

	if (q->limit[r] != SCHED_QUOTA_UNSET)
		return q->limit[r];
	return sched_quota_default(r, t->owner.uid == 0);
}

/* 0, or -EDQUOT with the reason when `asked` more of `r` passes `t`'s
 * limit. */
static int check(struct sched *s, struct sched_tenant *t,
		 enum sched_quota_res r, long long asked, struct rt_buf *why)
{
	long long limit = limit_of(s, t, r);

	if (!sched_quota_over(limit, t->quota.used[r], asked))
		return 0;
	sched_quota_reason(t->obj.name, r, limit, t->quota.used[r], asked, why);
	return -EDQUOT;
}

int sched_quota_render(struct sched *s, struct sched_obj *o, int r,
		       struct rt_buf *out)
{
	struct sched_tenant *t = sched__tenant_of(o);
	int i, rc = 0;

	if (t == NULL || r < 0 || r > SCHED_QUOTA_COUNT)
		return -ENOENT;
	if (r < SCHED_QUOTA_COUNT)
		return sched_quota_format(limit_of(s, t, r), out);
	for (i = 0; i < SCHED_QUOTA_COUNT && rc == 0; i++) {
		long long limit = limit_of(s, t, i);

		rc = rt_buf_printf(out, "%s %lld ", names[i], t->quota.used[i]);
		if (rc == 0)
			rc = sched_quota_format(limit, out);
	}
	return rc;
}

int sched_quota_write(struct sched *s, struct sched_obj *o,
		      enum sched_quota_res r, const char *buf, size_t len,
		      const struct sched_caller *who)
{
	struct sched_tenant *t = sched__tenant_of(o);
	struct rt_buf why = { 0 }, text = { 0 }, kvs = { 0 };
	long long next[SCHED_QUOTA_COUNT], v;
	struct sched_quota *q;
	char key[96];
	int rc;

	if (t == NULL || (unsigned)r >= SCHED_QUOTA_COUNT)
		return -ENOENT;
	if (!sched_caller_is_root(who))
		return -EPERM; /* an owner never raises its own quota */
	rc = sched_quota_parse(buf, len, &v, &why);
	if (rc < 0) {
		rt_log(RT_LOG_INFO, "tenants/%s/quota/%s: %s", t->obj.name,
		       names[r], why.data);
		goto out;
	}
	q = quota_of(s, t);
	memcpy(next, q->limit, sizeof(next));
	next[r] = v;
	setting_key(t->obj.name, key, sizeof(key));
	rc = sched_quota_encode(next, &text);
	if (rc < 0)
		goto out;
	rc = store_begin(s->store);
	if (rc < 0)
		goto out;
	rc = text.len > 0 ? store_setting_put(s->store, key, text.data)
			  : store_setting_delete(s->store, key);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0)
		goto out;
	q->limit[r] = v;
	rt_buf_kv(&kvs, "quota", names[r]);
	rt_buf_reset(&why);
	sched_quota_format(limit_of(s, t, r), &why);
	if (why.len > 0)
		why.data[--why.len] = '\0'; /* the newline */
	rt_buf_kv(&kvs, "limit", why.data);
	sched__event(s, &t->obj, "tenant.quota", kvs.data);
out:
	rt_buf_free(&why);
	rt_buf_free(&text);
	rt_buf_free(&kvs);
	return rc;
}

int sched__quota_hold(struct sched *s, struct sched_function *fn, size_t n,
		      struct rt_buf *why)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);
	int rc = 0;

	if (t == NULL)
		return -ENOENT;
	if (n == 0)
		return 0;
	rc = check(s, t, SCHED_QUOTA_REQUEST_BYTES, (long long)n, why);
	if (rc == 0 && sched_quota_over(SCHED_REQUEST_BYTES_MAX,
					s->held_requests, (long long)n)) {
		rt_buf_printf(why,
			      "fnfs holds %lld bytes of requests not yet "
			      "read, its bound: try again later",
			      (long long)SCHED_REQUEST_BYTES_MAX);
		rc = -EAGAIN;
	}
	if (rc == 0) {
		t->quota.used[SCHED_QUOTA_REQUEST_BYTES] += (long long)n;
		s->held_requests += (long long)n;
	}
	return rc;
}

void sched_quota_release(struct sched *s, uint64_t tenant_id, size_t n)
{
	struct sched_obj *o = sched_find(s, tenant_id);
	struct sched_tenant *t = o ? sched__tenant_of(o) : NULL;

	s->held_requests -= (long long)n;
	/* Released once, after it was held. */
	assert(s->held_requests >= 0);
	if (t != NULL && &t->obj == o) {
		t->quota.used[SCHED_QUOTA_REQUEST_BYTES] -= (long long)n;
		assert(t->quota.used[SCHED_QUOTA_REQUEST_BYTES] >= 0);
	}
}

long long sched_quota_held(const struct sched *s)
{
	return s->held_requests;
}

/* ================================================================= hooks */

void sched__quota_fn_update(struct sched_function *fn)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);
	long long mem, inst;

	if (t == NULL)
		return;
	sched__quota_fn_drop(fn);
	sched_quota_claim(&fn->spec, &mem, &inst);
	assert(mem >= 0 && inst >= 0 && !fn->quota_counted);
	t->quota.used[SCHED_QUOTA_MEMORY] += mem;
	t->quota.used[SCHED_QUOTA_INSTANCES] += inst;
	t->quota.used[SCHED_QUOTA_FUNCTIONS]++;
	fn->quota_claim[0] = mem;
	fn->quota_claim[1] = inst;
	fn->quota_counted = 1;
}

void sched__quota_fn_drop(struct sched_function *fn)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);

	if (t == NULL || !fn->quota_counted)
		return;
	t->quota.used[SCHED_QUOTA_MEMORY] -= fn->quota_claim[0];
	t->quota.used[SCHED_QUOTA_INSTANCES] -= fn->quota_claim[1];
	t->quota.used[SCHED_QUOTA_FUNCTIONS]--;
	fn->quota_counted = 0;
	/* A tenant's use is the sum of its functions' claims. */
	assert(t->quota.used[SCHED_QUOTA_MEMORY] >= 0);
	assert(t->quota.used[SCHED_QUOTA_INSTANCES] >= 0);
	assert(t->quota.used[SCHED_QUOTA_FUNCTIONS] >= 0);
}

int sched__quota_spec(struct sched *s, struct sched_function *fn,
		      const struct sched_spec *next, struct rt_buf *why)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);
	long long mem, inst, old_mem = 0, old_inst = 0;
	int rc;

	if (t == NULL)
		return 0;
	sched_quota_claim(next, &mem, &inst);
	if (fn->quota_counted) {
		old_mem = fn->quota_claim[0];
		old_inst = fn->quota_claim[1];
	}
	rc = check(s, t, SCHED_QUOTA_INSTANCES, inst - old_inst, why);
	if (rc == 0)
		rc = check(s, t, SCHED_QUOTA_MEMORY, mem - old_mem, why);
	return rc;
}

int sched__quota_create(struct sched *s, struct sched_obj *ns,
			struct rt_buf *why)
{
	struct sched_tenant *t = sched__tenant_of(ns);
	struct sched_spec defaults;
	long long mem, inst;
	int rc;

	if (t == NULL)
		return 0;
	sched_spec_init(&defaults);
	sched_quota_claim(&defaults, &mem, &inst);
	sched_spec_free(&defaults);
	rc = check(s, t, SCHED_QUOTA_FUNCTIONS, 1, why);
	if (rc == 0)
		rc = check(s, t, SCHED_QUOTA_INSTANCES, inst, why);
	if (rc == 0)
		rc = check(s, t, SCHED_QUOTA_MEMORY, mem, why);
	return rc;
}

int sched__quota_code(struct sched *s, struct sched_function *fn, uint64_t grow,
		      struct rt_buf *why)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);

	if (t == NULL || grow == 0)
		return 0;
	if (grow > (uint64_t)SCHED_QUOTA_MAX)
		grow = (uint64_t)SCHED_QUOTA_MAX + 1;
	return check(s, t, SCHED_QUOTA_CODE_BYTES, (long long)grow, why);
}

void sched__quota_code_add(struct sched_function *fn, int64_t delta)
{
	struct sched_tenant *t = sched__tenant_of(&fn->obj);

	if (t != NULL)
		t->quota.used[SCHED_QUOTA_CODE_BYTES] += delta;
}

int sched__quota_unstore(struct sched *s, const char *name)
{
	char key[96];

	setting_key(name, key, sizeof(key));
	return store_setting_delete(s->store, key);
}

/* The keys found stale by sweep_cb. */
struct stale {
	struct sched *s;
	char **key;
	size_t n, cap;
};

static int sweep_cb(const char *key, void *arg)
{
	struct stale *st = arg;
	char **grown;

	if (sched_child(&st->s->root, key + 6) != NULL)
		return 0;
	if (st->n == st->cap) {
		grown = realloc(st->key, (st->cap * 2 + 8) * sizeof(*grown));
		if (grown == NULL)
			return -ENOMEM;
		st->key = grown;
		st->cap = st->cap * 2 + 8;
	}
	st->key[st->n] = strdup(key);
	return st->key[st->n] == NULL ? -ENOMEM : (st->n++, 0);
}

int sched__quota_sweep(struct sched *s)
{
	struct stale st = { .s = s };
	size_t i;
	int rc = store_setting_each(s->store, "quota:", sweep_cb, &st);

	if (rc == 0 && st.n > 0) {
		rc = store_begin(s->store);
		if (rc == 0) {
			for (i = 0; rc == 0 && i < st.n; i++)
				rc = store_setting_delete(s->store, st.key[i]);
			if (rc == 0)
				rc = store_commit(s->store);
			else
				store_rollback(s->store);
		}
	}
	if (rc < 0)
		rt_log(RT_LOG_ERROR,
		       "store: the quotas of removed tenants not deleted: %s",
		       strerror(-rc));
	for (i = 0; i < st.n; i++)
		free(st.key[i]);
	free(st.key);
	return rc;
}

int sched_quota_keep(struct sched *s, struct sched_obj *o,
		     enum sched_quota_res r, const char *buf, size_t len)
{
	struct sched_tenant *t = sched__tenant_of(o);
	struct rt_buf why = { 0 };
	long long v;
	int rc;

	if (t == NULL || (unsigned)r >= SCHED_QUOTA_COUNT)
		return -ENOENT;
	rc = sched_quota_parse(buf, len, &v, &why);
	if (rc == 0)
		quota_of(s, t)->limit[r] = v;
	rt_buf_free(&why);
	return rc;
}

void sched__quota_setting_changed(struct sched *s, const char *key)
{
	struct sched_obj *o;

	if (strncmp(key, "quota:", 6) != 0)
		return;
	o = sched_child(&s->root, key + 6);
	if (o != NULL && o->type == SCHED_TENANT)
		((struct sched_tenant *)o)->quota.loaded = 0;
}

int sched_quota_get(struct sched *s, struct sched_obj *o,
		    enum sched_quota_res r, long long *used, long long *limit)
{
	struct sched_tenant *t = sched__tenant_of(o);

	if (t == NULL || &t->obj != o || (unsigned)r >= SCHED_QUOTA_COUNT)
		return -ENOENT;
	*limit = limit_of(s, t, r);
	*used = t->quota.used[r];
	return 0;
}

/*
 * cluster_status.c - `fnfs cluster status` (cluster_status.h): two range
 * reads (the election's keys, the controllers' keys), a probe of each
 * endpoint alone, and the rendering of what they said.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster_status.h"
#include "../../store/etcd/etcd_keys.h"
#include "../../store/etcd/etcd_sync.h"
#include "../../store/etcd/store_cluster.h"
#include "../../sched.h"

void cluster_status_free(struct cluster_status *st)
{
	size_t i;

	for (i = 0; i < st->nmembers; i++)
		free(st->members[i].key);
	for (i = 0; i < st->nendpoints; i++) {
		free(st->endpoints[i].endpoint);
		free(st->endpoints[i].error);
	}
	free(st->members);
	free(st->endpoints);
	free(st->own_revs);
	free(st->cluster);
	free(st->leader);
	memset(st, 0, sizeof(*st));
}

/* ------------------------------------------------------------ the read */

/* Remembers `rev` as a write of a member's or the election's key. */
static int add_own(struct cluster_status *st, int64_t rev)
{
	int64_t *r = realloc(st->own_revs, (st->nown_revs + 1) * sizeof(*r));

	if (r == NULL)
		return -ENOMEM;
	st->own_revs = r;
	st->own_revs[st->nown_revs++] = rev;
	return 0;
}

/* The leader: the oldest key under P/leader/ (as etcd's election says). */
static int take_leader(struct cluster_status *st,
		       const struct etcd_sync_kvs *kvs)
{
	const struct etcd_kv *best = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < kvs->n && rc == 0; i++) {
		if (best == NULL ||
		    kvs->kvs[i].create_revision < best->create_revision)
			best = &kvs->kvs[i];
		rc = add_own(st, kvs->kvs[i].mod_revision);
	}
	if (rc == 0 && best != NULL) {
		st->leader = strdup(best->value);
		st->leader_rev = best->create_revision;
		if (st->leader == NULL)
			rc = -ENOMEM;
	}
	return rc;
}

static int take_members(struct cluster_status *st,
			const struct etcd_sync_kvs *kvs)
{
	size_t i;
	int rc = 0;

	st->members = kvs->n ? calloc(kvs->n, sizeof(*st->members)) : NULL;
	if (kvs->n && st->members == NULL)
		return -ENOMEM;
	for (i = 0; i < kvs->n && rc == 0; i++) {
		struct cluster_member *m = &st->members[i];
		const struct etcd_kv *kv = &kvs->kvs[i];

		st->nmembers = i + 1;
		m->key = strdup(kv->key);
		if (m->key == NULL) {
			rc = -ENOMEM;
			break;
		}
		m->mod_revision = kv->mod_revision;
		m->valid = presence_decode(kv->value, kv->value_len, &m->v) ==
			   0;
		rc = add_own(st, kv->mod_revision);
	}
	return rc;
}

/* Asks endpoint `ep` (`n` bytes) alone for a linearizable read of `key`. */
static int probe(const struct etcd_config *cfg, const char *ep, size_t n,
		 const char *key, const char *end, struct cluster_endpoint *e)
{
	struct etcd_config one = *cfg;
	struct etcd_sync s;
	struct etcd_sync_kvs kvs = { 0 };
	struct rt_buf why = { 0 };
	int rc;

	e->endpoint = strndup(ep, n);
	if (e->endpoint == NULL)
		return -ENOMEM;
	one.endpoints = e->endpoint;
	one.timeout_ms = CLUSTER_PROBE_MS;
	rc = etcd_sync_open(&s, &one, &why);
	if (rc == 0) {
		rc = etcd_sync_range(&s, key, end, 0, 1, &kvs, &why);
		etcd_sync_close(&s);
	}
	e->ok = rc == 0;
	e->revision = kvs.revision;
	if (rc < 0) {
		e->error = strdup(why.data ? why.data : strerror(-rc));
		rc = e->error == NULL ? -ENOMEM : 0;
	}
	etcd_sync_kvs_free(&kvs);
	rt_buf_free(&why);
	return rc;
}

/* Probes each endpoint of cfg->endpoints alone. */
static int probe_all(const struct etcd_config *cfg, const char *key,
		     const char *end, struct cluster_status *st)
{
	const char *p = cfg->endpoints, *comma;
	int rc = 0;

	while (rc == 0 && *p != '\0') {
		struct cluster_endpoint *e;

		comma = strchr(p, ',');
		if (comma == NULL)
			comma = p + strlen(p);
		if (comma > p) {
			e = realloc(st->endpoints,
				    (st->nendpoints + 1) * sizeof(*e));
			if (e == NULL)
				return -ENOMEM;
			st->endpoints = e;
			e = &st->endpoints[st->nendpoints++];
			memset(e, 0, sizeof(*e));
			rc = probe(cfg, p, (size_t)(comma - p), key, end, e);
		}
		p = *comma ? comma + 1 : comma;
	}
	return rc;
}

int cluster_status_read(const struct etcd_config *cfg, const char *cluster,
			int probe_each, struct cluster_status *st,
			struct rt_buf *why)
{
	struct etcd_sync s = { 0 };
	struct etcd_sync_kvs kvs = { 0 };
	struct rt_buf lk = { 0 }, ck = { 0 };
	char *lend = NULL, *cend = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!etcd_keys_cluster_valid(cluster)) {
		rt_buf_printf(why, "--cluster wants 1 to 63 of [A-Za-z0-9._-]");
		rc = -EINVAL;
		goto out;
	}
	rc = -ENOMEM;
	st->cluster = strdup(cluster);
	if (st->cluster == NULL || etcd_keys_prefix(cluster, &lk) < 0 ||
	    rt_buf_puts(&lk, "leader/") < 0 ||
	    presence_key(cluster, NULL, &ck) < 0)
		goto out;
	lend = malloc(lk.len + 2);
	cend = malloc(ck.len + 2);
	if (lend == NULL || cend == NULL)
		goto out;
	etcd_prefix_end(lk.data, lend);
	etcd_prefix_end(ck.data, cend);
	if ((rc = etcd_sync_open(&s, cfg, why)) < 0)
		goto out;
	/* The election first, then the members: "now" is the later. */
	rc = etcd_sync_range(&s, lk.data, lend, 0, 0, &kvs, why);
	if (rc == 0)
		rc = take_leader(st, &kvs);
	if (rc == 0)
		rc = etcd_sync_range(&s, ck.data, cend, 0, 0, &kvs, why);
	if (rc == 0) {
		st->revision = kvs.revision;
		st->now_ms = rt_now_ms();
		rc = take_members(st, &kvs);
	}
	etcd_sync_close(&s);
	if (rc == 0)
		cluster_status_lag(st);
	if (rc == 0 && probe_each)
		rc = probe_all(cfg, ck.data, cend, st);
out:
	if (rc == -ENOMEM && why->len == 0)
		rt_buf_puts(why, strerror(ENOMEM));
	etcd_sync_kvs_free(&kvs);
	rt_buf_free(&lk);
	rt_buf_free(&ck);
	free(lend);
	free(cend);
	if (rc < 0)
		cluster_status_free(st);
	return rc;
}

/* ------------------------------------------------- lag, the rendering */

static int by_name(const void *a, const void *b)
{
	const struct cluster_member *x = a, *y = b;

	return strcmp(x->key, y->key);
}

void cluster_status_lag(struct cluster_status *st)
{
	size_t i, k;

	for (i = 0; i < st->nmembers; i++) {
		struct cluster_member *m = &st->members[i];
		int64_t lag, seen = m->v.revision;

		if (!m->valid || seen >= st->revision) {
			m->lag = 0;
			continue;
		}
		lag = st->revision - seen;
		for (k = 0; k < st->nown_revs; k++)
			if (st->own_revs[k] > seen &&
			    st->own_revs[k] <= st->revision)
				lag--;
		m->lag = lag > 0 ? lag : 0;
	}
	if (st->nmembers > 1)
		qsort(st->members, st->nmembers, sizeof(*st->members), by_name);
}

/* `s` with every byte that is not printable ASCII as '?' (for a
 * terminal: what etcd holds may be anything). */
static const char *printable(const char *s, char *buf, size_t cap)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < cap; i++)
		buf[i] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return i ? buf : "-";
}

/* The leader's name and listen address ("" when none) from its value in
 * the election: the JSON object {"name", "listen", ...} of
 * sched/cluster/leader.c, or else "NAME ADDR..." (its first word, and the
 * rest). */
static void leader_parts(const char *value, char *name, size_t ncap,
			 char *listen, size_t lcap)
{
	json_t *o = json_loads(value, 0, NULL);
	json_t *n = json_object_get(o, "name"),
	       *l = json_object_get(o, "listen");
	size_t k;

	if (json_is_string(n)) {
		snprintf(name, ncap, "%s", json_string_value(n));
		snprintf(listen, lcap, "%s",
			 json_is_string(l) ? json_string_value(l) : "");
	} else {
		k = strcspn(value, " ");
		snprintf(name, ncap, "%.*s", (int)(k < ncap ? k : ncap - 1),
			 value);
		snprintf(listen, lcap, "%s", value[k] ? value + k + 1 : "");
	}
	json_decref(o);
}

static int render_text(const struct cluster_status *st, struct rt_buf *out)
{
	char b1[80], b2[300], b3[300], b4[300];
	size_t i;
	int rc;

	rc = rt_buf_printf(out, "cluster %s, etcd revision %lld\n", st->cluster,
			   (long long)st->revision);
	if (rc == 0 && st->leader != NULL) {
		leader_parts(st->leader, b1, sizeof(b1), b4, sizeof(b4));
		rc = rt_buf_printf(
			out, "leader: %s (%s%s%ssince revision %lld)\n",
			printable(b1, b2, sizeof(b2)), b4[0] ? "listen " : "",
			b4[0] ? printable(b4, b3, sizeof(b3)) : "",
			b4[0] ? ", " : "", (long long)st->leader_rev);
	} else if (rc == 0) {
		rc = rt_buf_puts(out, "leader: none\n");
	}
	if (rc == 0)
		rc = rt_buf_printf(out, "%-20s %-12s %-21s %10s %6s %5s %8s\n",
				   "MEMBER", "ROLE", "LISTEN", "REVISION",
				   "LAG", "STALE", "AGE");
	for (i = 0; i < st->nmembers && rc == 0; i++) {
		const struct cluster_member *m = &st->members[i];
		int64_t ms = st->now_ms - m->v.seen_ms;
		char age[40];

		if (!m->valid) {
			rc = rt_buf_printf(out,
					   "%-20s (not a member's value)\n",
					   printable(m->key, b2, sizeof(b2)));
			continue;
		}
		snprintf(age, sizeof(age), "%lld.%llds",
			 (long long)(ms > 0 ? ms / 1000 : 0),
			 (long long)(ms > 0 ? ms % 1000 / 100 : 0));
		rc = rt_buf_printf(
			out, "%-20s %-12s %-21s %10lld %6lld %5s %8s\n",
			m->v.name, printable(m->v.role, b1, sizeof(b1)),
			printable(m->v.listen, b2, sizeof(b2)),
			(long long)m->v.revision, (long long)m->lag,
			m->v.stale ? "yes" : "no", age);
	}
	if (rc == 0 && st->nendpoints > 0)
		rc = rt_buf_puts(out, "etcd endpoints:\n");
	for (i = 0; i < st->nendpoints && rc == 0; i++) {
		const struct cluster_endpoint *e = &st->endpoints[i];

		if (e->ok)
			rc = rt_buf_printf(out, "  %s: ok, revision %lld\n",
					   e->endpoint, (long long)e->revision);
		else
			rc = rt_buf_printf(out, "  %s: %s\n", e->endpoint,
					   e->error ? e->error : "failed");
	}
	return rc < 0 ? rc : 0;
}

static json_t *member_json(const struct cluster_status *st,
			   const struct cluster_member *m)
{
	if (!m->valid)
		return json_pack("{s:s, s:b}", "key", m->key, "valid", 0);
	return json_pack("{s:s, s:s, s:s?, s:I, s:s, s:I, s:I, s:b, s:I, "
			 "s:I, s:I, s:I}",
			 "name", m->v.name, "role", m->v.role, "listen",
			 m->v.listen[0] ? m->v.listen : NULL, "pid",
			 (json_int_t)m->v.pid, "host", m->v.host, "revision",
			 (json_int_t)m->v.revision, "lag", (json_int_t)m->lag,
			 "stale", m->v.stale, "age_ms",
			 (json_int_t)(st->now_ms - m->v.seen_ms), "seen_ms",
			 (json_int_t)m->v.seen_ms, "started_ms",
			 (json_int_t)m->v.started_ms, "key_revision",
			 (json_int_t)m->mod_revision);
}

static int render_json(const struct cluster_status *st, struct rt_buf *out)
{
	json_t *o = NULL, *members = json_array(), *eps = json_array();
	json_t *leader = json_null();
	char name[80], listen[300], *s = NULL;
	size_t i;
	int rc = -ENOMEM;

	if (st->leader != NULL) {
		leader_parts(st->leader, name, sizeof(name), listen,
			     sizeof(listen));
		json_decref(leader);
		leader = json_pack("{s:s, s:s?, s:s, s:I}", "name", name,
				   "listen", listen[0] ? listen : NULL, "value",
				   st->leader, "revision",
				   (json_int_t)st->leader_rev);
	}
	for (i = 0; members != NULL && i < st->nmembers; i++)
		if (json_array_append_new(members,
					  member_json(st, &st->members[i])) < 0)
			goto out;
	for (i = 0; eps != NULL && i < st->nendpoints; i++) {
		const struct cluster_endpoint *e = &st->endpoints[i];

		if (json_array_append_new(
			    eps, json_pack("{s:s, s:b, s:I, s:s?}", "endpoint",
					   e->endpoint, "ok", e->ok, "revision",
					   (json_int_t)e->revision, "error",
					   e->error)) < 0)
			goto out;
	}
	if (members == NULL || eps == NULL || leader == NULL)
		goto out;
	o = json_pack("{s:s, s:I, s:O, s:O, s:O}", "cluster", st->cluster,
		      "revision", (json_int_t)st->revision, "leader", leader,
		      "members", members, "etcd", eps);
	if (o == NULL)
		goto out;
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (s == NULL || rt_buf_puts(out, s) < 0 || rt_buf_puts(out, "\n") < 0)
		goto out;
	rc = 0;
out:
	free(s);
	json_decref(o);
	json_decref(leader);
	json_decref(members);
	json_decref(eps);
	return rc;
}

int cluster_status_render(const struct cluster_status *st, int json,
			  struct rt_buf *out)
{
	return json ? render_json(st, out) : render_text(st, out);
}

int sched_cluster_status(const struct store_config *c, int json,
			 struct rt_buf *out, struct rt_buf *why)
{
	struct cluster_status st = { 0 };
	struct etcd_config ec;
	const char *bad;
	int rc;

	if (store_config_check(c, &bad) != 1)
		return -EINVAL;
	store_etcd_config(c, &ec);
	rc = cluster_status_read(&ec, c->cluster, 1, &st, why);
	if (rc == 0)
		rc = cluster_status_render(&st, json, out);
	cluster_status_free(&st);
	return rc;
}

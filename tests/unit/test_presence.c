/*
 * test_presence.c - a controller's key in etcd (sched/cluster/etcd/presence.h)
 * and `fnfs cluster status` (sched/cluster/etcd/cluster_status.h), their pure
 * parts: the value round-trips and bad values are refused; the key is in the
 * layout (etcd_keys.h) as a member; the lag leaves out the members' own writes;
 * the table and the JSON say what was read.
 */
#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "../../sched/cluster/etcd/cluster_status.h"
#include "../../sched/store/etcd/etcd_keys.h"
#include "../../sched/cluster/etcd/presence.h"
#include "unit.h"

static struct presence_value sample(void)
{
	struct presence_value v = { .pid = 4242,
				    .revision = 17,
				    .seen_ms = 1700000000123,
				    .started_ms = 1700000000000,
				    .stale = 1 };

	snprintf(v.name, sizeof(v.name), "ctl-a");
	snprintf(v.host, sizeof(v.host), "host1.example");
	snprintf(v.listen, sizeof(v.listen), "10.0.0.1:7443");
	snprintf(v.role, sizeof(v.role), "leader");
	return v;
}

TEST(presence_value_round_trip)
{
	struct presence_value v = sample(), o;
	struct rt_buf b = { 0 };

	CHECK(presence_encode(&v, &b) == 0);
	CHECK_STR(b.data, "{\"name\":\"ctl-a\",\"pid\":4242,\"host\":"
			  "\"host1.example\",\"listen\":\"10.0.0.1:7443\","
			  "\"role\":\"leader\",\"revision\":17,\"seen_ms\":"
			  "1700000000123,\"started_ms\":1700000000000,"
			  "\"stale\":true}");
	CHECK(presence_decode(b.data, b.len, &o) == 0);
	CHECK(memcmp(&v, &o, sizeof(v)) == 0);
	/* No listen address: null, back to "". */
	v.listen[0] = '\0';
	v.stale = 0;
	CHECK(presence_encode(&v, &b) == 0);
	CHECK(strstr(b.data, "\"listen\":null") != NULL);
	CHECK(strstr(b.data, "\"stale\":false") != NULL);
	CHECK(presence_decode(b.data, b.len, &o) == 0);
	CHECK(o.listen[0] == '\0' && o.stale == 0 && o.pid == 4242);
	rt_buf_free(&b);
}

TEST(presence_value_refused)
{
	struct presence_value v = sample(), o;
	struct rt_buf b = { 0 };
	char big[400];
	static const char *const bad[] = {
		"",
		"[]",
		"{\"name\":\"ctl-a\"}",
		/* each field missing or of the wrong type in turn */
		"{\"pid\":1,\"host\":\"h\",\"listen\":null,\"role\":\"r\","
		"\"revision\":1,\"seen_ms\":1,\"started_ms\":1,\"stale\":"
		"false}",
		"{\"name\":\"a/b\",\"pid\":1,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":false}",
		"{\"name\":\"a\",\"pid\":-1,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":false}",
		"{\"name\":\"a\",\"pid\":1,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"r\",\"revision\":\"1\",\"seen_ms\":1,"
		"\"started_ms\":1,\"stale\":false}",
		"{\"name\":\"a\",\"pid\":1,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":0}",
		"{\"name\":\"a\",\"pid\":1,\"host\":\"h\",\"listen\":7,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":false}",
		"{\"name\":\"a\",\"pid\":1.5,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":false}",
		"{\"name\":\"a\",\"pid\":1,\"host\":\"h\",\"listen\":null,"
		"\"role\":\"a very long role name over 31 "
		"bytes\",\"revision\":1,"
		"\"seen_ms\":1,\"started_ms\":1,\"stale\":false}",
		/* a duplicate field */
		"{\"name\":\"a\",\"name\":\"b\",\"pid\":1,\"host\":\"h\","
		"\"listen\":null,\"role\":\"r\",\"revision\":1,\"seen_ms\":1,"
		"\"started_ms\":1,\"stale\":false}",
		"{\"name\":\"a\",\"pid\":1,\"host\":\"h\\u0000x\",\"listen\":"
		"null,"
		"\"role\":\"r\",\"revision\":1,\"seen_ms\":1,\"started_ms\":1,"
		"\"stale\":false}",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (presence_decode(bad[i], strlen(bad[i]), &o) != -EINVAL)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		CHECK(presence_decode(bad[i], strlen(bad[i]), &o) == -EINVAL);
	}
	/* More fields are taken (a later version's). */
	{
		static const char later[] =
			"{\"name\":\"a\",\"pid\":1,\"host\":\"h\","
			"\"listen\":null,\"role\":\"r\",\"revision\":1,"
			"\"seen_ms\":1,\"started_ms\":1,\"stale\":false,"
			"\"later\":[1]}";

		CHECK(presence_decode(later, strlen(later), &o) == 0);
		CHECK_STR(o.name, "a");
	}
	/* A host too long to hold (256 bytes), and one just short. */
	memset(big, 'h', 256);
	big[256] = '\0';
	rt_buf_printf(&b,
		      "{\"name\":\"a\",\"pid\":1,\"host\":\"%s\","
		      "\"listen\":null,\"role\":\"r\",\"revision\":1,"
		      "\"seen_ms\":1,\"started_ms\":1,\"stale\":false}",
		      big);
	CHECK(presence_decode(b.data, b.len, &o) == -EINVAL);
	rt_buf_reset(&b);
	big[255] = '\0';
	rt_buf_printf(&b,
		      "{\"name\":\"a\",\"pid\":1,\"host\":\"%s\","
		      "\"listen\":null,\"role\":\"r\",\"revision\":1,"
		      "\"seen_ms\":1,\"started_ms\":1,\"stale\":false}",
		      big);
	CHECK(presence_decode(b.data, b.len, &o) == 0);
	CHECK(strlen(o.host) == 255);
	/* Encoding refuses a bad name or a negative number. */
	snprintf(v.name, sizeof(v.name), "no/slash");
	CHECK(presence_encode(&v, &b) == -EINVAL);
	v = sample();
	v.revision = -1;
	CHECK(presence_encode(&v, &b) == -EINVAL);
	rt_buf_free(&b);
}

TEST(presence_key_in_layout)
{
	struct rt_buf k = { 0 }, val = { 0 };
	struct etcd_keys_rec r = { 0 }, o;

	CHECK(presence_key("prod", "ctl-a", &k) == 0);
	CHECK_STR(k.data, "/fnfs/prod/ctl/ctl-a");
	CHECK(presence_key("prod", NULL, &k) == 0);
	CHECK_STR(k.data, "/fnfs/prod/ctl/");
	CHECK(presence_key("prod", "a/b", &k) == -EINVAL);
	CHECK(presence_key("bad/cluster", "a", &k) < 0);
	/* The layout knows the kind: the store and export skip it. */
	r.kind = ETCD_KEYS_MEMBER;
	r.key = "ctl-a";
	r.data = "{}";
	r.len = 2;
	CHECK(etcd_keys_encode("prod", &r, &k, &val) == 0);
	CHECK_STR(k.data, "/fnfs/prod/ctl/ctl-a");
	CHECK(etcd_keys_decode("prod", k.data, k.len, val.data, val.len, &o) ==
	      0);
	CHECK(o.kind == ETCD_KEYS_MEMBER);
	CHECK_STR(o.key, "ctl-a");
	CHECK(o.len == 2 && memcmp(o.data, "{}", 2) == 0);
	etcd_keys_rec_free(&o);
	CHECK(etcd_keys_decode("prod", "/fnfs/prod/ctl/", 15, "", 0, &o) ==
	      -EINVAL);
	etcd_keys_rec_free(&o); /* what a refused decode took */
	CHECK(etcd_keys_decode("prod", "/fnfs/prod/ctl/a/b", 18, "", 0, &o) ==
	      -EINVAL);
	etcd_keys_rec_free(&o); /* what a refused decode took */
	CHECK(etcd_keys_decode("prod", "/fnfs/prod/ctl/a b", 18, "", 0, &o) ==
	      -EINVAL);
	etcd_keys_rec_free(&o); /* what a refused decode took */
	r.key = "a/b";
	CHECK(etcd_keys_encode("prod", &r, &k, &val) == -EINVAL);
	rt_buf_free(&k);
	rt_buf_free(&val);
}

/* A status of two members read at revision 20 (strings owned by it). */
static void two_members(struct cluster_status *st)
{
	static const int64_t own[] = { 18, 19, 20, 5 };
	struct presence_value a = sample(), b = sample();

	memset(st, 0, sizeof(*st));
	st->cluster = strdup("prod");
	st->revision = 20;
	st->now_ms = a.seen_ms + 2500;
	st->leader = strdup("{\"name\":\"ctl-b\",\"listen\":"
			    "\"10.0.0.2:7443\",\"sock\":\"/d/ctl.sock\"}");
	st->leader_rev = 5;
	st->members = calloc(3, sizeof(*st->members));
	st->nmembers = 3;
	/* ctl-b first: the lag sorts them by name */
	snprintf(b.name, sizeof(b.name), "ctl-b");
	snprintf(b.role, sizeof(b.role), "follower");
	b.listen[0] = '\0';
	b.revision = 12;
	b.stale = 0;
	st->members[0] = (struct cluster_member){
		.key = strdup("/fnfs/prod/ctl/ctl-b"),
		.valid = 1,
		.v = b,
		.mod_revision = 19
	};
	a.revision = 17;
	st->members[1] = (struct cluster_member){
		.key = strdup("/fnfs/prod/ctl/ctl-a"),
		.valid = 1,
		.v = a,
		.mod_revision = 18
	};
	st->members[2] = (struct cluster_member){
		.key = strdup("/fnfs/prod/ctl/zz"), .mod_revision = 20
	};
	st->own_revs = malloc(sizeof(own));
	memcpy(st->own_revs, own, sizeof(own));
	st->nown_revs = 4;
	st->endpoints = calloc(2, sizeof(*st->endpoints));
	st->nendpoints = 2;
	st->endpoints[0] = (struct cluster_endpoint){
		.endpoint = strdup("127.0.0.1:2379"), .ok = 1, .revision = 20
	};
	st->endpoints[1] = (struct cluster_endpoint){
		.endpoint = strdup("127.0.0.1:2381"),
		.error = strdup("etcd: connection refused")
	};
}

TEST(cluster_status_lag_and_render)
{
	struct cluster_status st;
	struct rt_buf out = { 0 };
	json_t *doc, *m;

	two_members(&st);
	cluster_status_lag(&st);
	/* sorted by key */
	CHECK_STR(st.members[0].v.name, "ctl-a");
	CHECK_STR(st.members[1].v.name, "ctl-b");
	/* ctl-a saw 17: 18, 19, 20 are members' writes: no lag */
	CHECK(st.members[0].lag == 0);
	/* ctl-b saw 12: 13..20 is 8, less 18, 19, 20 */
	CHECK(st.members[1].lag == 5);
	CHECK(st.members[2].lag == 0 && !st.members[2].valid);

	CHECK(cluster_status_render(&st, 0, &out) == 0);
	CHECK(strstr(out.data, "cluster prod, etcd revision 20\n") == out.data);
	CHECK(strstr(out.data, "leader: ctl-b (listen 10.0.0.2:7443, "
			       "since revision 5)\n") != NULL);
	CHECK(strstr(out.data, "\nctl-a                leader       "
			       "10.0.0.1:7443                 17      0   "
			       "yes     2.5s\n") != NULL);
	CHECK(strstr(out.data, "\nctl-b                follower     -") !=
	      NULL);
	CHECK(strstr(out.data, "/fnfs/prod/ctl/zz") != NULL);
	CHECK(strstr(out.data, "  127.0.0.1:2379: ok, revision 20\n") != NULL);
	CHECK(strstr(out.data,
		     "  127.0.0.1:2381: etcd: connection refused\n") != NULL);

	rt_buf_reset(&out);
	CHECK(cluster_status_render(&st, 1, &out) == 0);
	doc = json_loads(out.data, 0, NULL);
	CHECK(doc != NULL);
	CHECK(json_integer_value(json_object_get(doc, "revision")) == 20);
	CHECK_STR(json_string_value(json_object_get(
			  json_object_get(doc, "leader"), "name")),
		  "ctl-b");
	CHECK_STR(json_string_value(json_object_get(
			  json_object_get(doc, "leader"), "listen")),
		  "10.0.0.2:7443");
	CHECK(json_array_size(json_object_get(doc, "members")) == 3);
	m = json_array_get(json_object_get(doc, "members"), 1);
	CHECK_STR(json_string_value(json_object_get(m, "name")), "ctl-b");
	CHECK(json_integer_value(json_object_get(m, "lag")) == 5);
	CHECK(json_is_null(json_object_get(m, "listen")));
	CHECK(json_is_false(json_object_get(m, "stale")));
	CHECK(json_integer_value(json_object_get(m, "age_ms")) == 2500);
	CHECK(json_is_false(json_object_get(
		json_array_get(json_object_get(doc, "etcd"), 1), "ok")));
	json_decref(doc);

	/* A leader's value of another form: "NAME ADDR". */
	free(st.leader);
	st.leader = strdup("ctl-a tls://10.0.0.1:7443");
	rt_buf_reset(&out);
	CHECK(cluster_status_render(&st, 0, &out) == 0);
	CHECK(strstr(out.data, "leader: ctl-a (listen tls://10.0.0.1:7443, "
			       "since revision 5)\n") != NULL);

	/* Nobody leads, nobody is there. */
	cluster_status_free(&st);
	st.cluster = strdup("prod");
	st.revision = 3;
	rt_buf_reset(&out);
	CHECK(cluster_status_render(&st, 0, &out) == 0);
	CHECK(strstr(out.data, "leader: none\n") != NULL);
	rt_buf_reset(&out);
	CHECK(cluster_status_render(&st, 1, &out) == 0);
	doc = json_loads(out.data, 0, NULL);
	CHECK(doc != NULL && json_is_null(json_object_get(doc, "leader")));
	CHECK(json_array_size(json_object_get(doc, "members")) == 0);
	json_decref(doc);
	cluster_status_free(&st);
	rt_buf_free(&out);
}

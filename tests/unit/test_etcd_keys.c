/*
 * test_etcd_keys.c - the cluster's key layout in etcd
 * (sched/store/etcd/etcd_keys.h): every kind of row round-trips through its key
 * and value; keys and values outside the layout are refused with -EINVAL;
 * mutated inputs never crash.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../sched/store/etcd/etcd_keys.h"
#include "unit.h"

#define C "prod"

/* Encodes `r`, checks the key, decodes it back into `out`. */
static void round_trip(const struct etcd_keys_rec *r, const char *want_key,
		       struct etcd_keys_rec *out)
{
	struct rt_buf k = { 0 }, v = { 0 };

	CHECK(etcd_keys_encode(C, r, &k, &v) == 0);
	CHECK_STR(k.data, want_key);
	CHECK(etcd_keys_decode(C, k.data, k.len, v.data ? v.data : "", v.len,
			       out) == 0);
	CHECK(out->kind == r->kind);
	rt_buf_free(&k);
	rt_buf_free(&v);
}

/* The value `r` encodes to (the test frees it). */
static char *value_of(const struct etcd_keys_rec *r)
{
	struct rt_buf k = { 0 }, v = { 0 };

	CHECK(etcd_keys_encode(C, r, &k, &v) == 0);
	rt_buf_free(&k);
	return v.data;
}

TEST(etcd_keys_prefixes)
{
	struct rt_buf b = { 0 };

	CHECK(etcd_keys_prefix(C, &b) == 0);
	CHECK_STR(b.data, "/fnfs/prod/");
	CHECK(etcd_keys_kind_prefix(C, ETCD_KEYS_CODE_FILE, &b) == 0);
	CHECK_STR(b.data, "/fnfs/prod/cf/");
	CHECK(etcd_keys_kind_prefix(C, ETCD_KEYS_META, &b) == 0);
	CHECK_STR(b.data, "/fnfs/prod/meta");
	CHECK(etcd_keys_code_prefix(C, "a", "b", "c", &b) == 0);
	CHECK_STR(b.data, "/fnfs/prod/cf/a/b/c/");
	CHECK(etcd_keys_prefix("bad/name", &b) == -EINVAL);
	CHECK(etcd_keys_prefix("", &b) == -EINVAL);
	CHECK(etcd_keys_prefix("-x", &b) == -EINVAL);
	CHECK(etcd_keys_code_prefix(C, "a", "b/c", "d", &b) == -EINVAL);
	CHECK(etcd_keys_chunks(0) == 0);
	CHECK(etcd_keys_chunks(1) == 1);
	CHECK(etcd_keys_chunks(ETCD_KEYS_CHUNK_BYTES) == 1);
	CHECK(etcd_keys_chunks(ETCD_KEYS_CHUNK_BYTES + 1) == 2);
	rt_buf_free(&b);
}

TEST(etcd_keys_rows_round_trip)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_TENANT }, o;
	char *v;

	r.row = (struct store_row){ .kind = STORE_TENANT,
				    .tenant = "acme",
				    .created_ms = 1700000000000,
				    .updated_ms = 1700000000001,
				    .uid = 65534,
				    .gid = 65534,
				    .mode = 0750 };
	round_trip(&r, "/fnfs/prod/t/acme", &o);
	CHECK_STR(o.row.tenant, "acme");
	CHECK(o.row.kind == STORE_TENANT && o.row.ns == NULL);
	CHECK(o.row.created_ms == 1700000000000 &&
	      o.row.updated_ms == 1700000000001);
	CHECK(o.row.uid == 65534 && o.row.gid == 65534 && o.row.mode == 0750);
	etcd_keys_rec_free(&o);
	v = value_of(&r);
	CHECK_STR(v, "{\"created_ms\":1700000000000,\"updated_ms\":"
		     "1700000000001,\"uid\":65534,\"gid\":65534,\"mode\":488}");
	free(v);

	r.kind = ETCD_KEYS_NAMESPACE;
	r.row.kind = STORE_NAMESPACE;
	r.row.ns = "prod.eu-1";
	round_trip(&r, "/fnfs/prod/ns/acme/prod.eu-1", &o);
	CHECK_STR(o.row.ns, "prod.eu-1");
	CHECK(o.row.created_ms == 1700000000000);
	etcd_keys_rec_free(&o);

	r.kind = ETCD_KEYS_FUNCTION;
	r.row.kind = STORE_FUNCTION;
	r.row.name = "app_2";
	r.row.spec = "{\"mode\":\"hot\",\"memory\":96,\"env\":{\"Z\":\"1\","
		     "\"A\":\"2\"},\"ratio\":0.5}";
	r.row.revision = 7;
	r.row.run_revision = 5;
	round_trip(&r, "/fnfs/prod/fn/acme/prod.eu-1/app_2", &o);
	CHECK_STR(o.row.name, "app_2");
	CHECK_STR(o.row.spec, r.row.spec); /* the order of keys kept */
	CHECK(o.row.revision == 7 && o.row.run_revision == 5);
	etcd_keys_rec_free(&o);
	v = value_of(&r);
	CHECK(strstr(v, "\"spec\":{\"mode\":\"hot\"") != NULL);
	free(v);

	/* The key alone, for a delete. */
	{
		struct rt_buf k = { 0 };

		CHECK(etcd_keys_row(C, &r.row, &k, NULL) == 0);
		CHECK_STR(k.data, "/fnfs/prod/fn/acme/prod.eu-1/app_2");
		rt_buf_free(&k);
	}
}

static int refused(const char *key, const char *value);
static int decode(const char *key, const char *value);

TEST(etcd_keys_instances_workers_round_trip)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_INSTANCE }, o;

	r.instance = (struct store_instance){ .tenant = "a",
					      .ns = "b",
					      .fn = "c",
					      .n = 12,
					      .desired_run = 1,
					      .worker = "w-1",
					      .epoch = 99 };
	round_trip(&r, "/fnfs/prod/in/a/b/c/12", &o);
	CHECK(o.instance.n == 12 && o.instance.desired_run == 1 &&
	      o.instance.epoch == 99);
	CHECK_STR(o.instance.worker, "w-1");
	CHECK_STR(o.instance.fn, "c");
	etcd_keys_rec_free(&o);
	r.instance.worker = NULL;
	r.instance.n = 0;
	r.instance.desired_run = 0;
	round_trip(&r, "/fnfs/prod/in/a/b/c/0", &o);
	CHECK(o.instance.worker == NULL && o.instance.n == 0 &&
	      o.instance.desired_run == 0);
	CHECK(o.instance.state == NULL && o.instance.pid == 0);
	etcd_keys_rec_free(&o);

	/* What a cluster's leader tells of it: its state and pid too. */
	r.instance.worker = "w-2";
	r.instance.state = "running";
	r.instance.pid = 4242;
	round_trip(&r, "/fnfs/prod/in/a/b/c/0", &o);
	CHECK_STR(o.instance.state, "running");
	CHECK(o.instance.pid == 4242);
	CHECK_STR(o.instance.worker, "w-2");
	etcd_keys_rec_free(&o);
	r.instance.state = "not a word";
	{
		struct rt_buf k = { 0 }, v = { 0 };

		CHECK(etcd_keys_encode("prod", &r, &k, &v) == -EINVAL);
		rt_buf_free(&k);
		rt_buf_free(&v);
	}
	r.instance.state = NULL;
	/* Both or neither; no other field. */
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"state\":\"running\"}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"state\":\"running\",\"pod\":3}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"state\":\"running\",\"pid\":-3}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"pid\":3}"));

	/* What a leader tells now: its process's revision, start,
	 * restarts and last exit too, and the term that wrote it. */
	r.instance.state = "backoff";
	r.instance.pid = 0;
	r.instance.revision = 7;
	r.instance.started_ms = 1700000000123;
	r.instance.restarts = 3;
	r.instance.last_exit = "signal:9";
	r.instance.term = 4021;
	{
		char *v = value_of(&r);

		CHECK_STR(v, "{\"desired\":0,\"worker\":\"w-2\",\"epoch\":99,"
			     "\"term\":4021,\"state\":\"backoff\",\"pid\":0,"
			     "\"revision\":7,\"started_ms\":1700000000123,"
			     "\"restarts\":3,\"last_exit\":\"signal:9\"}");
		free(v);
	}
	round_trip(&r, "/fnfs/prod/in/a/b/c/0", &o);
	CHECK_STR(o.instance.state, "backoff");
	CHECK(o.instance.revision == 7 &&
	      o.instance.started_ms == 1700000000123 &&
	      o.instance.restarts == 3 && o.instance.term == 4021);
	CHECK_STR(o.instance.last_exit, "signal:9");
	etcd_keys_rec_free(&o);
	/* No last exit: not written. */
	r.instance.last_exit = "";
	round_trip(&r, "/fnfs/prod/in/a/b/c/0", &o);
	CHECK(o.instance.last_exit == NULL);
	etcd_keys_rec_free(&o);
	/* A term alone (what is written before any report). */
	r.instance.state = NULL;
	round_trip(&r, "/fnfs/prod/in/a/b/c/0", &o);
	CHECK(o.instance.term == 4021 && o.instance.state == NULL &&
	      o.instance.revision == 0);
	etcd_keys_rec_free(&o);
	r.instance.term = -1;
	{
		struct rt_buf k = { 0 }, v = { 0 };

		CHECK(etcd_keys_encode("prod", &r, &k, &v) == -EINVAL);
		r.instance.term = 0;
		r.instance.state = "failed";
		r.instance.last_exit = "status:x";
		CHECK(etcd_keys_encode("prod", &r, &k, &v) == -EINVAL);
		rt_buf_free(&k);
		rt_buf_free(&v);
	}
	r.instance.state = NULL;
	r.instance.last_exit = NULL;
	/* An older leader's values still read: no term, no revision. */
	CHECK(0 == decode("/fnfs/prod/in/a/b/c/0",
			  "{\"desired\":1,\"worker\":\"w\",\"epoch\":1,"
			  "\"state\":\"running\",\"pid\":3}"));
	CHECK(0 == decode("/fnfs/prod/in/a/b/c/0",
			  "{\"desired\":1,\"worker\":\"w\",\"epoch\":1}"));
	CHECK(0 ==
	      decode("/fnfs/prod/in/a/b/c/0",
		     "{\"desired\":1,\"worker\":\"w\",\"epoch\":1,"
		     "\"state\":\"stopped\",\"pid\":0,\"last_exit\":\"oom\"}"));
	/* The process's fields only with state and pid; nothing unknown;
	 * the three first always. */
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"revision\":3}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"term\":3,\"by\":\"a\"}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"term\":3}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"term\":-3}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"state\":\"running\",\"pid\":3,"
		      "\"last_exit\":\"exit:1\"}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/0",
		      "{\"desired\":1,\"worker\":null,\"epoch\":1,"
		      "\"state\":\"running\",\"pid\":3,"
		      "\"restarts\":\"2\"}"));

	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_WORKER };
	r.worker = (struct store_worker){ .id = "local-1",
					  .memory_mb = 2048,
					  .tags = "[\"gpu\",\"eu\"]",
					  .namespaces = "[]",
					  .local = 1,
					  .drained = 0 };
	round_trip(&r, "/fnfs/prod/w/local-1", &o);
	CHECK_STR(o.worker.id, "local-1");
	CHECK_STR(o.worker.tags, "[\"gpu\",\"eu\"]");
	CHECK_STR(o.worker.namespaces, "[]");
	CHECK(o.worker.memory_mb == 2048 && o.worker.local == 1 &&
	      o.worker.drained == 0);
	CHECK(o.worker.state == NULL && o.worker.pid == 0);
	etcd_keys_rec_free(&o);

	/* What a leader tells of a worker: its word, pid and since. */
	r.worker.state = "unhealthy";
	r.worker.pid = 4242;
	r.worker.since_ms = 1700000000123LL;
	round_trip(&r, "/fnfs/prod/w/local-1", &o);
	CHECK_STR(o.worker.state, "unhealthy");
	CHECK(o.worker.pid == 4242 && o.worker.since_ms == 1700000000123LL);
	CHECK_STR(o.worker.tags, "[\"gpu\",\"eu\"]");
	etcd_keys_rec_free(&o);
	/* All three or none; nothing else. */
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":0,\"drained\":0,\"state\":\"healthy\"}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":0,\"drained\":0,\"state\":\"a b\","
		      "\"pid\":1,\"since_ms\":2}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":0,\"drained\":0,\"state\":\"healthy\","
		      "\"pid\":-1,\"since_ms\":2}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":0,\"drained\":0,\"state\":\"healthy\","
		      "\"pid\":1,\"other\":2}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":0,\"other\":0}"));
}

TEST(etcd_keys_settings_revocations_round_trip)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_SETTING }, o;

	r.key = "cert:w-1";
	r.value = "0A1B \"quoted\" é";
	round_trip(&r, "/fnfs/prod/set/cert:w-1", &o);
	CHECK_STR(o.key, "cert:w-1");
	CHECK_STR(o.value, r.value);
	etcd_keys_rec_free(&o);

	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_REVOKED };
	r.revoked = (struct etcd_keys_revoked){ "w-1", "0A1B2C", 12345 };
	round_trip(&r, "/fnfs/prod/rv/w-1/0A1B2C", &o);
	CHECK_STR(o.revoked.worker, "w-1");
	CHECK_STR(o.revoked.serial, "0A1B2C");
	CHECK(o.revoked.revoked_ms == 12345);
	etcd_keys_rec_free(&o);
	r.revoked.serial = "";
	round_trip(&r, "/fnfs/prod/rv/w-1/-", &o);
	CHECK_STR(o.revoked.serial, "");
	etcd_keys_rec_free(&o);
}

TEST(etcd_keys_code_round_trip)
{
	static const char h[] = "0123456789abcdef0123456789abcdef"
				"0123456789abcdef0123456789abcdef";
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_CODE_FILE }, o;
	struct rt_buf b = { 0 };

	r.file = (struct store_code_file){ .tenant = "a",
					   .ns = "b",
					   .fn = "c",
					   .path = "lib/caf\xe9 100%.txt",
					   .mode = 0100644,
					   .size = 5,
					   .hash = h,
					   .mtime_ms = 42 };
	round_trip(&r, "/fnfs/prod/cf/a/b/c/lib/caf%E9%20100%25.txt", &o);
	CHECK_STR(o.file.path, "lib/caf\xe9 100%.txt");
	CHECK_STR(o.file.hash, h);
	CHECK(o.file.mode == 0100644 && o.file.size == 5 &&
	      o.file.mtime_ms == 42);
	etcd_keys_rec_free(&o);
	r.file.path = "lib";
	r.file.hash = "";
	r.file.mode = 040755;
	round_trip(&r, "/fnfs/prod/cf/a/b/c/lib", &o);
	CHECK_STR(o.file.hash, "");
	etcd_keys_rec_free(&o);
	CHECK(etcd_keys_path("a/b", 3, &b) == 0);
	CHECK_STR(b.data, "a/b");
	CHECK(etcd_keys_path("a//b", 4, &b) == -EINVAL);
	CHECK(etcd_keys_path("/a", 2, &b) == -EINVAL);
	CHECK(etcd_keys_path("a/", 2, &b) == -EINVAL);
	CHECK(etcd_keys_path("a/../b", 6, &b) == -EINVAL);
	CHECK(etcd_keys_path("a\0b", 3, &b) == -EINVAL);
	rt_buf_free(&b);

	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_CODE_REVISION };
	r.code = (struct store_code_revision){ "a", "b", "c", h, 1234, 3 };
	round_trip(&r, "/fnfs/prod/cr/a/b/c", &o);
	CHECK_STR(o.code.hash, h);
	CHECK(o.code.bytes == 1234 && o.code.files == 3);
	etcd_keys_rec_free(&o);

	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_OBJECT };
	r.hash = h;
	r.size = 3 * ETCD_KEYS_CHUNK_BYTES + 1;
	r.chunks = 4;
	round_trip(&r,
		   "/fnfs/prod/om/0123456789abcdef0123456789abcdef"
		   "0123456789abcdef0123456789abcdef",
		   &o);
	CHECK(o.size == 3 * ETCD_KEYS_CHUNK_BYTES + 1 && o.chunks == 4);
	etcd_keys_rec_free(&o);
	r.chunks = 3; /* not what the size says */
	CHECK(etcd_keys_encode(C, &r, &b, NULL) == 0); /* the key alone */
	{
		struct rt_buf v = { 0 };

		CHECK(etcd_keys_encode(C, &r, &b, &v) == -EINVAL);
		rt_buf_free(&v);
	}

	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_CHUNK };
	r.hash = h;
	r.index = 7;
	r.data = "\0\1\2bytes";
	r.len = 8;
	round_trip(&r,
		   "/fnfs/prod/oc/0123456789abcdef0123456789abcdef"
		   "0123456789abcdef0123456789abcdef/000007",
		   &o);
	CHECK(o.index == 7 && o.len == 8 && memcmp(o.data, r.data, 8) == 0);
	etcd_keys_rec_free(&o);
	rt_buf_free(&b);
}

TEST(etcd_keys_meta_events_leader)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_META, .version = 1 }, o;
	char *v = value_of(&r);

	CHECK_STR(v, "{\"format\":\"fnfs-cluster\",\"version\":1}");
	free(v);
	round_trip(&r, "/fnfs/prod/meta", &o);
	CHECK(o.version == 1);
	etcd_keys_rec_free(&o);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_EVENT,
				    .seq = 18446744073709551615ull,
				    .data = "tenant.created acme",
				    .len = 19 };
	round_trip(&r, "/fnfs/prod/ev/18446744073709551615", &o);
	CHECK(o.seq == 18446744073709551615ull && o.len == 19);
	etcd_keys_rec_free(&o);
	r.seq = 3;
	round_trip(&r, "/fnfs/prod/ev/00000000000000000003", &o);
	CHECK(o.seq == 3);
	etcd_keys_rec_free(&o);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_LEADER,
				    .data = "ctl-a",
				    .len = 5 };
	round_trip(&r, "/fnfs/prod/leader", &o);
	CHECK(o.len == 5 && memcmp(o.data, "ctl-a", 5) == 0);
	etcd_keys_rec_free(&o);
	r.kind = ETCD_KEYS_IMPORT;
	round_trip(&r, "/fnfs/prod/import", &o);
	CHECK(o.len == 5 && memcmp(o.data, "ctl-a", 5) == 0);
	etcd_keys_rec_free(&o);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_EVENT_HEAD,
				    .data = "4096",
				    .len = 4 };
	round_trip(&r, "/fnfs/prod/evh", &o);
	CHECK(o.len == 4 && memcmp(o.data, "4096", 4) == 0);
	etcd_keys_rec_free(&o);
}

/* decode(key, value) of cluster C: 0 or -EINVAL. */
static int decode(const char *key, const char *value)
{
	struct etcd_keys_rec o;
	int rc = etcd_keys_decode(C, key, strlen(key), value,
				  value ? strlen(value) : 0, &o);

	etcd_keys_rec_free(&o);
	return rc;
}

/* decode(key, value) is -EINVAL (else says what it took). */
static int refused(const char *key, const char *value)
{
	int rc = decode(key, value);

	if (rc != -EINVAL)
		fprintf(stderr, "  accepted (%d): %s = %s\n", rc, key,
			value ? value : "(null)");
	return rc == -EINVAL;
}

#define T5  "{\"created_ms\":1,\"updated_ms\":2,\"uid\":0,\"gid\":0,\"mode\":1}"
#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(etcd_keys_rejects)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_TENANT };
	struct rt_buf k = { 0 }, v = { 0 };

	/* the good one first, so that each reject below is its mutation */
	CHECK(0 == decode("/fnfs/prod/t/acme", T5));
	CHECK(refused("/fnfs/prod/t/acme/", T5));  /* trailing slash */
	CHECK(refused("/fnfs/prod/t/acme/x", T5)); /* extra component */
	CHECK(refused("/fnfs/prod/t/", T5));	   /* no name */
	CHECK(refused("/fnfs/prod/t/-acme", T5));  /* bad name */
	CHECK(refused("/fnfs/prod/t/ac me", T5));  /* bad name */
	CHECK(refused("/fnfs/other/t/acme", T5));  /* another cluster */
	CHECK(refused("/fnfs/prodx/t/acme", T5));  /* a longer one */
	CHECK(refused("/fnfs/prod", T5));	   /* the bare prefix */
	CHECK(refused("/fnfs/prod/", T5));	   /* nothing after */
	CHECK(refused("/fnfs/prod/x/acme", T5));   /* no such kind */
	CHECK(refused("/fnfs/prod/tt/acme", T5));  /* no such kind */
	CHECK(refused("/fnfs/prod/t/acme", "{"));  /* bad JSON */
	CHECK(refused("/fnfs/prod/t/acme", "[]")); /* not an object */
	CHECK(refused("/fnfs/prod/t/acme", NULL)); /* no value */
	CHECK(refused("/fnfs/prod/t/acme",	   /* missing field */
		      "{\"created_ms\":1,\"updated_ms\":2,\"uid\":0,"
		      "\"gid\":0}"));
	CHECK(refused("/fnfs/prod/t/acme", /* extra field */
		      "{\"created_ms\":1,\"updated_ms\":2,\"uid\":0,"
		      "\"gid\":0,\"mode\":1,\"x\":1}"));
	CHECK(refused("/fnfs/prod/t/acme", /* negative */
		      "{\"created_ms\":-1,\"updated_ms\":2,\"uid\":0,"
		      "\"gid\":0,\"mode\":1}"));
	CHECK(refused("/fnfs/prod/t/acme", /* out of range */
		      "{\"created_ms\":1,\"updated_ms\":2,\"uid\":4294967296,"
		      "\"gid\":0,\"mode\":1}"));
	CHECK(refused("/fnfs/prod/t/acme", /* a string for a number */
		      "{\"created_ms\":\"1\",\"updated_ms\":2,\"uid\":0,"
		      "\"gid\":0,\"mode\":1}"));
	CHECK(refused("/fnfs/prod/t/acme", /* a real for an integer */
		      "{\"created_ms\":1.5,\"updated_ms\":2,\"uid\":0,"
		      "\"gid\":0,\"mode\":1}"));
	CHECK(refused("/fnfs/prod/t/acme", /* a duplicate field */
		      "{\"created_ms\":1,\"created_ms\":1,\"updated_ms\":2,"
		      "\"uid\":0,\"gid\":0}"));

	CHECK(refused("/fnfs/prod/ns/acme", "{\"created_ms\":1,"
					    "\"updated_ms\":2}"));
	CHECK(refused("/fnfs/prod/fn/a/b/c",
		      "{\"created_ms\":1,\"updated_ms\":2,\"revision\":1,"
		      "\"run_revision\":0,\"spec\":\"{}\"}")); /* a string */
	CHECK(0 == decode("/fnfs/prod/fn/a/b/c",
			  "{\"created_ms\":1,\"updated_ms\":2,\"revision\":1,"
			  "\"run_revision\":0,\"spec\":{}}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/01",
		      "{\"desired\":1,\"worker\":null,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/-1",
		      "{\"desired\":1,\"worker\":null,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/x",
		      "{\"desired\":1,\"worker\":null,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/1",
		      "{\"desired\":2,\"worker\":null,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/1",
		      "{\"desired\":1,\"worker\":\"a/b\",\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/1",
		      "{\"desired\":1,\"worker\":5,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/in/a/b/c/99999999999",
		      "{\"desired\":1,\"worker\":null,\"epoch\":0}"));
	CHECK(0 == decode("/fnfs/prod/in/a/b/c/1",
			  "{\"desired\":1,\"worker\":null,\"epoch\":0}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[1],\"namespaces\":[],"
		      "\"local\":0,\"drained\":0}"));
	CHECK(refused("/fnfs/prod/w/w1",
		      "{\"memory\":1,\"tags\":[],\"namespaces\":[],"
		      "\"local\":2,\"drained\":0}"));
	CHECK(refused("/fnfs/prod/set/a/b", "{\"value\":\"x\"}"));
	CHECK(refused("/fnfs/prod/set/a", "{\"value\":1}"));
	CHECK(refused("/fnfs/prod/rv/w1/-",
		      "{\"serial\":\"AB\",\"revoked_ms\":1}")); /* disagree */
	CHECK(refused("/fnfs/prod/rv/w1/AB",
		      "{\"serial\":\"\",\"revoked_ms\":1}"));
	CHECK(refused("/fnfs/prod/rv/w1/AC",
		      "{\"serial\":\"AB\",\"revoked_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x/",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x//y",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x/..",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x%41", /* not canonical */
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x%e9", /* lower-case hex */
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x%00",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x%2",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cf/a/b/c/x y",
		      "{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}"));
	CHECK(refused(
		"/fnfs/prod/cf/a/b/c/x",
		"{\"mode\":1,\"size\":1,\"hash\":\"abc\",\"mtime_ms\":1}"));
	CHECK(0 == decode("/fnfs/prod/cf/a/b/c/x%E9/y",
			  "{\"mode\":1,\"size\":1,\"hash\":\"" H64
			  "\",\"mtime_ms\":1}"));
	CHECK(refused("/fnfs/prod/cr/a/b/c/d",
		      "{\"hash\":\"\",\"bytes\":1,\"files\":1}"));
	CHECK(refused("/fnfs/prod/om/" H64, "{\"size\":5,\"chunks\":2}"));
	CHECK(refused("/fnfs/prod/om/" H64 "0", "{\"size\":5,\"chunks\":1}"));
	CHECK(refused("/fnfs/prod/om/ABCDEF", "{\"size\":5,\"chunks\":1}"));
	CHECK(0 == decode("/fnfs/prod/om/" H64, "{\"size\":5,\"chunks\":1}"));
	CHECK(refused("/fnfs/prod/oc/" H64 "/7", "x"));
	CHECK(refused("/fnfs/prod/oc/" H64 "/1000000", "x"));
	CHECK(refused("/fnfs/prod/oc/" H64, "x"));
	CHECK(0 == decode("/fnfs/prod/oc/" H64 "/000007", "x"));
	CHECK(refused("/fnfs/prod/ev/3", "x"));
	CHECK(refused("/fnfs/prod/ev/99999999999999999999", "x"));
	CHECK(refused("/fnfs/prod/meta", "{\"format\":\"x\",\"version\":1}"));
	CHECK(refused("/fnfs/prod/meta",
		      "{\"format\":\"fnfs-cluster\",\"version\":0}"));
	CHECK(refused("/fnfs/prod/meta/x",
		      "{\"format\":\"fnfs-cluster\",\"version\":1}"));
	CHECK(refused("/fnfs/prod/leaderx", "a"));
	CHECK(refused("/fnfs/prod/import/x", "a"));

	/* encoding refuses what decoding would */
	r.row = (struct store_row){ .kind = STORE_TENANT, .tenant = "a/b" };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r.row.tenant = "a";
	r.row.created_ms = -1;
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r.row.kind = STORE_NAMESPACE; /* disagrees with r.kind */
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_FUNCTION };
	r.row = (struct store_row){ .kind = STORE_FUNCTION,
				    .tenant = "a",
				    .ns = "b",
				    .name = "c",
				    .spec = "[1]" };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_SETTING,
				    .key = "k",
				    .value = "\xff" };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r.key = "a b";
	r.value = "x";
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_WORKER };
	r.worker = (struct store_worker){ .id = "w",
					  .tags = "{}",
					  .namespaces = "[]" };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_REVOKED };
	r.revoked = (struct etcd_keys_revoked){ "w", "-", 1 };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_CHUNK,
				    .hash = H64,
				    .index = ETCD_KEYS_CHUNKS_MAX };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	r = (struct etcd_keys_rec){ .kind = ETCD_KEYS_KINDS };
	CHECK(etcd_keys_encode(C, &r, &k, &v) == -EINVAL);
	rt_buf_free(&k);
	rt_buf_free(&v);
}

/* A small deterministic generator (xorshift). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

TEST(etcd_keys_fuzz_never_crashes)
{
	static const char *const keys[] = {
		"/fnfs/prod/t/acme",
		"/fnfs/prod/ns/acme/prod",
		"/fnfs/prod/fn/a/b/c",
		"/fnfs/prod/in/a/b/c/3",
		"/fnfs/prod/w/w1",
		"/fnfs/prod/set/cert:w1",
		"/fnfs/prod/rv/w1/-",
		"/fnfs/prod/cf/a/b/c/lib/x%E9",
		"/fnfs/prod/cr/a/b/c",
		"/fnfs/prod/om/" H64,
		"/fnfs/prod/oc/" H64 "/000001",
		"/fnfs/prod/ev/00000000000000000003",
		"/fnfs/prod/meta",
		"/fnfs/prod/import",
	};
	static const char *const values[] = {
		T5,
		"{\"created_ms\":1,\"updated_ms\":2}",
		"{\"created_ms\":1,\"updated_ms\":2,\"revision\":1,"
		"\"run_revision\":0,\"spec\":{\"a\":[1,2,{\"b\":null}]}}",
		"{\"desired\":1,\"worker\":\"w1\",\"epoch\":4}",
		"{\"memory\":1,\"tags\":[\"x\"],\"namespaces\":[],"
		"\"local\":0,\"drained\":1}",
		"{\"value\":\"v\"}",
		"{\"serial\":\"\",\"revoked_ms\":1}",
		"{\"mode\":1,\"size\":1,\"hash\":\"\",\"mtime_ms\":1}",
		"{\"hash\":\"" H64 "\",\"bytes\":1,\"files\":1}",
		"{\"size\":5,\"chunks\":1}",
		"raw",
		"event",
		"{\"format\":\"fnfs-cluster\",\"version\":1}",
		"host 1 pid 2",
	};
	static const char alphabet[] = "/%09AFaz:.-_{}[]\",:\xe9\0 ";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t nk = sizeof(keys) / sizeof(keys[0]), ok = 0;
	int i, j;

	for (i = 0; i < (int)nk; i++) {
		struct etcd_keys_rec o;

		CHECK(etcd_keys_decode(C, keys[i], strlen(keys[i]), values[i],
				       strlen(values[i]), &o) == 0);
		etcd_keys_rec_free(&o);
	}
	for (i = 0; i < 40000; i++) {
		char k[256], v[512];
		size_t kl, vl, m = rnd(&seed) % nk;
		struct etcd_keys_rec o;
		int muts = 1 + (int)(rnd(&seed) % 4), rc;

		kl = strlen(keys[m]);
		vl = strlen(values[m]);
		memcpy(k, keys[m], kl);
		memcpy(v, values[m], vl);
		for (j = 0; j < muts; j++) {
			int in_key = rnd(&seed) % 2;
			char *p = in_key ? k : v;
			size_t *l = in_key ? &kl : &vl,
			       cap = in_key ? 255 : 511;
			size_t at = *l ? rnd(&seed) % *l : 0;
			char c = alphabet[rnd(&seed) % (sizeof(alphabet) - 1)];

			switch (rnd(&seed) % 4) {
			case 0: p[at] = c; break; /* replace */
			case 1: *l = at; break;	  /* cut */
			case 2:			  /* insert */
				if (*l < cap) {
					memmove(p + at + 1, p + at, *l - at);
					p[at] = c;
					(*l)++;
				}
				break;
			default: p[at] = (char)(rnd(&seed) & 0xff); /* byte */
			}
		}
		rc = etcd_keys_decode(C, k, kl, v, vl, &o);
		CHECK(rc == 0 || rc == -EINVAL);
		if (rc == 0) {
			/* What decodes encodes back to the same key. */
			struct rt_buf k2 = { 0 }, v2 = { 0 };

			ok++;
			CHECK(etcd_keys_encode(C, &o, &k2, &v2) == 0);
			CHECK(k2.len == kl && memcmp(k2.data, k, kl) == 0);
			rt_buf_free(&k2);
			rt_buf_free(&v2);
		}
		etcd_keys_rec_free(&o);
	}
	CHECK(ok > 0); /* some mutations stay valid (a changed digit...) */
}

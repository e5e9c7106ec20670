/*
 * test_code.c - code that travels: names and paths, manifests (built,
 * hashed, read back, and refused when malformed), the worker's chunk
 * assembler (in order, out of order, oversized, garbage, a corrupted
 * object), and the controller's accounting of a function's limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "../../sched/sched.h"
#include "../../sched/code/code.h"
#include "unit.h"

/* SHA-256 test vectors (FIPS 180-2). */
#define SHA_EMPTY                                                              \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_ABC                                                                \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

TEST(code_sha256_vectors)
{
	char h[65];

	CHECK(rt_sha256_hex("", 0, h) == 0);
	CHECK_STR(h, SHA_EMPTY);
	CHECK(rt_sha256_hex("abc", 3, h) == 0);
	CHECK_STR(h, SHA_ABC);
	CHECK(rt_code_hash_valid(SHA_ABC));
	CHECK(!rt_code_hash_valid("BA7816BF8F01CFEA414140DE5DAE2223B00361A39617"
				  "7A9CB410FF61F20015AD"));
	CHECK(!rt_code_hash_valid("abc"));
	CHECK(!rt_code_hash_valid(SHA_ABC "0"));
	CHECK(!rt_code_hash_valid(NULL));
}

TEST(code_names_and_paths)
{
	char longname[300];

	CHECK(rt_code_name_valid("run.sh", 6));
	CHECK(rt_code_name_valid("with space", 10));
	CHECK(rt_code_name_valid("ünïcode", strlen("ünïcode")));
	CHECK(rt_code_name_valid(".hidden", 7));
	CHECK(!rt_code_name_valid("", 0));
	CHECK(!rt_code_name_valid(".", 1));
	CHECK(!rt_code_name_valid("..", 2));
	CHECK(!rt_code_name_valid("a/b", 3));
	CHECK(!rt_code_name_valid("a\nb", 3));
	CHECK(!rt_code_name_valid("a\x7f", 2));
	memset(longname, 'x', sizeof(longname));
	CHECK(rt_code_name_valid(longname, 255));
	CHECK(!rt_code_name_valid(longname, 256));

	CHECK(rt_code_path_valid("a"));
	CHECK(rt_code_path_valid("lib/x/y.txt"));
	CHECK(!rt_code_path_valid(""));
	CHECK(!rt_code_path_valid("/etc/passwd"));
	CHECK(!rt_code_path_valid("a/../b"));
	CHECK(!rt_code_path_valid(".."));
	CHECK(!rt_code_path_valid("a//b"));
	CHECK(!rt_code_path_valid("a/"));
	CHECK(!rt_code_path_valid("./a"));
	CHECK(!rt_code_path_valid(NULL));
}

struct seen {
	int n;
	char paths[8][64];
	int dirs[8];
	unsigned perms[8];
	unsigned long long sizes[8];
};

static int seen_cb(const struct rt_code_entry *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", e->path);
		s->dirs[s->n] = e->dir;
		s->perms[s->n] = e->perm;
		s->sizes[s->n] = e->size;
	}
	s->n++;
	return 0;
}

TEST(code_manifest_round_trip)
{
	struct rt_buf m = { 0 }, why = { 0 };
	struct rt_code_entry e[] = {
		{ 1, 0755, 0, "", "lib" },
		{ 0, 0644, 3, SHA_ABC, "lib/abc" },
		{ 0, 0755, 0, SHA_EMPTY, "run sh" },
	};
	struct seen s = { 0 };
	char h[65];
	size_t i;

	for (i = 0; i < 3; i++)
		CHECK(rt_code_manifest_add(&m, &e[i]) == 0);
	CHECK_STR(m.data, "d 755 0 - lib\n"
			  "f 644 3 " SHA_ABC " lib/abc\n"
			  "f 755 0 " SHA_EMPTY " run sh\n");
	/* The revision's identity is the hash of that text. */
	CHECK(rt_sha256_hex(m.data, m.len, h) == 0);
	CHECK(rt_code_hash_valid(h));
	CHECK(rt_code_manifest_parse(m.data, m.len, 10, seen_cb, &s, &why) ==
	      0);
	CHECK(s.n == 3);
	CHECK_STR(s.paths[1], "lib/abc");
	CHECK(s.dirs[0] == 1 && s.dirs[1] == 0);
	CHECK(s.perms[0] == 0755 && s.perms[1] == 0644);
	CHECK(s.sizes[1] == 3);
	CHECK_STR(s.paths[2], "run sh");
	/* At most max entries. */
	memset(&s, 0, sizeof(s));
	CHECK(rt_code_manifest_parse(m.data, m.len, 2, seen_cb, &s, &why) ==
	      -EPROTO);
	rt_buf_free(&m);
	rt_buf_free(&why);
}

/* Whether `text` is refused as a manifest. */
static int refused(const char *text)
{
	struct rt_buf why = { 0 };
	struct seen s = { 0 };
	int rc = rt_code_manifest_parse(text, strlen(text), 100, seen_cb, &s,
					&why);

	if (rc == -EPROTO && why.data == NULL)
		rc = 0; /* a refusal says why */
	rt_buf_free(&why);
	return rc == -EPROTO;
}

TEST(code_manifest_refusals)
{
	CHECK(!refused(""));
	CHECK(refused("f 644 3 " SHA_ABC " a")); /* no newline */
	CHECK(refused("x 644 3 " SHA_ABC " a\n"));
	CHECK(refused("f 1644 3 " SHA_ABC " a\n"));	     /* mode */
	CHECK(refused("f 648 3 " SHA_ABC " a\n"));	     /* not octal */
	CHECK(refused("f 644 -3 " SHA_ABC " a\n"));	     /* size */
	CHECK(refused("f 644 3 abc a\n"));		     /* hash */
	CHECK(refused("f 644 3 - a\n"));		     /* a file's hash */
	CHECK(refused("d 755 1 - a\n"));		     /* a dir's size */
	CHECK(refused("d 755 0 " SHA_ABC " a\n"));	     /* a dir's hash */
	CHECK(refused("f 644 3 " SHA_ABC " /etc/passwd\n")); /* absolute */
	CHECK(refused("f 644 3 " SHA_ABC " ../x\n"));	     /* .. */
	CHECK(refused("f 644 3 " SHA_ABC " a/x\n"));	     /* a not listed */
	CHECK(refused("f 644 3 " SHA_ABC " b\n"
		      "f 644 3 " SHA_ABC " a\n")); /* not sorted */
	CHECK(refused("f 644 3 " SHA_ABC " a\n"
		      "f 644 3 " SHA_ABC " a\n")); /* twice */
	CHECK(refused("f 644 3 " SHA_ABC " a\n"
		      "f 644 3 " SHA_ABC " a/b\n")); /* a is a file */
	CHECK(refused("f 644 3 " SHA_ABC " a\0b\n"));
	CHECK(!refused("d 700 0 - a\n"
		       "f 600 3 " SHA_ABC " a/b\n"));
}

TEST(code_assembler_in_order)
{
	struct rt_code_asm a;
	struct rt_buf why = { 0 };
	char path[] = "/tmp/fnfs-unit-code.XXXXXX", back[4] = { 0 };
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK(rt_code_asm_begin(&a, SHA_ABC, 3, 100, fd, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_ABC, 0, 3, "a", 1, 0, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_ABC, 1, 3, "bc", 2, 1, &why) == 1);
	CHECK(pread(fd, back, 3, 0) == 3);
	CHECK_STR(back, "abc");
	rt_code_asm_free(&a);
	/* An empty object: one empty last chunk. */
	CHECK(rt_code_asm_begin(&a, SHA_EMPTY, 0, 100, -1, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_EMPTY, 0, 0, "", 0, 1, &why) == 1);
	rt_code_asm_free(&a);
	close(fd);
	unlink(path);
	rt_buf_free(&why);
}

/* Feeds "abc" as the chunks given, returning the last result. */
static int feed3(int off1, size_t len1, int last1, const char *obj2, int off2,
		 size_t len2, int last2)
{
	struct rt_code_asm a;
	struct rt_buf why = { 0 };
	int rc;

	rc = rt_code_asm_begin(&a, SHA_ABC, 3, 100, -1, &why);
	if (rc == 0)
		rc = rt_code_asm_feed(&a, SHA_ABC, (uint64_t)off1, 3,
				      "abc" + off1, len1, last1, &why);
	if (rc == 0)
		rc = rt_code_asm_feed(&a, obj2, (uint64_t)off2, 3, "abc" + off2,
				      len2, last2, &why);
	if (rc < 0 && why.data == NULL)
		rc = -1000; /* every refusal says why */
	rt_code_asm_free(&a);
	rt_buf_free(&why);
	return rc;
}

TEST(code_assembler_refusals)
{
	struct rt_code_asm a;
	struct rt_buf why = { 0 };
	static char big[RT_CODE_CHUNK_MAX + 1];

	CHECK(feed3(0, 1, 0, SHA_ABC, 1, 2, 1) == 1);	      /* fine */
	CHECK(feed3(0, 1, 0, SHA_ABC, 2, 1, 1) == -EPROTO);   /* a gap */
	CHECK(feed3(0, 2, 0, SHA_ABC, 1, 2, 1) == -EPROTO);   /* overlap */
	CHECK(feed3(0, 1, 0, SHA_EMPTY, 1, 2, 1) == -EPROTO); /* another */
	CHECK(feed3(0, 1, 1, SHA_ABC, 1, 2, 1) == -EPROTO);   /* early end */
	CHECK(feed3(0, 1, 0, SHA_ABC, 1, 2, 0) == -EPROTO);   /* no end */
	/* Bytes that do not hash to the object: detected at the end. */
	CHECK(rt_code_asm_begin(&a, SHA_ABC, 3, 100, -1, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_ABC, 0, 3, "abd", 3, 1, &why) ==
	      -EBADMSG);
	rt_code_asm_free(&a);
	/* A size that changes between chunks. */
	CHECK(rt_code_asm_begin(&a, SHA_ABC, 3, 100, -1, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_ABC, 0, 4, "a", 1, 0, &why) == -EPROTO);
	rt_code_asm_free(&a);
	/* Garbage: no valid object, or more than allowed. */
	CHECK(rt_code_asm_begin(&a, "../../etc/passwd", 3, 100, -1, &why) ==
	      -EPROTO);
	CHECK(rt_code_asm_begin(&a, SHA_ABC, 101, 100, -1, &why) == -EPROTO);
	/* An oversized chunk. */
	CHECK(rt_code_asm_begin(&a, SHA_ABC, sizeof(big), sizeof(big), -1,
				&why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_ABC, 0, sizeof(big), big, sizeof(big), 1,
			       &why) == -EPROTO);
	rt_code_asm_free(&a);
	/* Fed after its end. */
	CHECK(rt_code_asm_begin(&a, SHA_EMPTY, 0, 100, -1, &why) == 0);
	CHECK(rt_code_asm_feed(&a, SHA_EMPTY, 0, 0, "", 0, 1, &why) == 1);
	CHECK(rt_code_asm_feed(&a, SHA_EMPTY, 0, 0, "", 0, 1, &why) == -EPROTO);
	rt_code_asm_free(&a);
	rt_buf_free(&why);
}

/* ======================================= the controller's accounting */

static char dir[] = "/tmp/fnfs-unit-code.XXXXXX";

static void rm_rf(const char *d)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	CHECK(system(cmd) == 0);
}

/* A function acme/prod/fn in a fresh data directory. */
static struct sched *one_function(struct sched_function **fn)
{
	struct sched *s = NULL;
	struct sched_obj *t, *n, *f;

	memcpy(dir + sizeof(dir) - 7, "XXXXXX", 6);
	CHECK(mkdtemp(dir) != NULL);
	CHECK(sched_open(&s, dir) == 0);
	if (s == NULL)
		return NULL;
	CHECK(sched_create(s, sched_find(s, SCHED_ROOT_ID), "acme", NULL, &t) ==
	      0);
	CHECK(sched_create(s, t, "prod", NULL, &n) == 0);
	CHECK(sched_create(s, n, "fn", NULL, &f) == 0);
	*fn = (struct sched_function *)f;
	return s;
}

TEST(code_limits_accounting)
{
	struct sched_function *fn;
	struct sched *s = one_function(&fn);
	struct sched_code_node *root, *a, *d, *x;
	uint64_t bytes;
	int entries, i, rc = 0;
	char name[16];

	if (s == NULL)
		return;
	root = sched_code_root(s, fn);
	CHECK(root != NULL && S_ISDIR(root->mode));
	if (root == NULL) {
		sched_close(s);
		return;
	}
	CHECK(sched_code_create(s, root, "a", S_IFREG | 0644, &a, NULL, NULL) ==
	      0);
	CHECK(sched_code_create(s, root, "d", S_IFDIR | 0755, &d, NULL, NULL) ==
	      0);
	CHECK(sched_code_create(s, root, "a", S_IFREG | 0644, &x, NULL, NULL) ==
	      -EEXIST);
	CHECK(sched_code_create(s, root, "..", S_IFREG | 0644, &x, NULL,
				NULL) == -EINVAL);
	CHECK(sched_code_create(s, root, "l", S_IFLNK | 0777, &x, NULL, NULL) ==
	      -EPERM);
	sched_code_usage(s, fn, &entries, &bytes);
	CHECK(entries == 2 && bytes == 0);

	/* Bytes: writes, truncation, the 64 MiB limit. */
	CHECK(sched_code_open_write(s, a, 0) == 0);
	CHECK(sched_code_write(s, a, "hello", 5, 0) == 0);
	CHECK(sched_code_commit(s, a, NULL, NULL) == 0);
	sched_code_usage(s, fn, &entries, &bytes);
	CHECK(bytes == 5);
	CHECK(sched_code_truncate(s, a, SCHED_CODE_MAX_BYTES + 1) == -EDQUOT);
	CHECK(fn->error != NULL && strstr(fn->error, "64 MiB") != NULL);
	CHECK(sched_code_truncate(s, a, SCHED_CODE_MAX_BYTES) == 0);
	CHECK(sched_code_write(s, a, "x", 1, SCHED_CODE_MAX_BYTES) == -EDQUOT);
	CHECK(sched_code_write(s, a, "x", 1, UINT64_MAX - 1) == -EDQUOT);
	CHECK(sched_code_truncate(s, a, 3) == 0);
	CHECK(sched_code_commit(s, a, NULL, NULL) == 0);
	sched_code_close_write(s, a);
	sched_code_usage(s, fn, &entries, &bytes);
	CHECK(bytes == 3 && a->size == 3);
	/* What was written reads back. */
	{
		char buf[8] = { 0 }, h[65];

		CHECK(sched_code_read(s, a, buf, sizeof(buf), 0) == 3);
		CHECK_STR(buf, "hel");
		CHECK(rt_sha256_hex("hel", 3, h) == 0);
		CHECK_STR(a->hash, h); /* stored by its content's hash */
	}
	/* Renaming moves, removing gives back. */
	CHECK(sched_code_rename(s, root, "a", d, "b", 0, NULL, NULL) == 0);
	CHECK(sched_code_child(d, "b") == a &&
	      sched_code_child(root, "a") == NULL);
	CHECK(sched_code_rename(s, root, "d", d, "e", 0, NULL, NULL) ==
	      -EINVAL);
	CHECK(sched_code_remove(s, root, "d", 1, NULL, NULL) == -ENOTEMPTY);
	CHECK(sched_code_remove(s, d, "b", 0, NULL, NULL) == 0);
	sched_code_usage(s, fn, &entries, &bytes);
	CHECK(entries == 1 && bytes == 0);

	/* Entries: 10,000 files and directories. */
	for (i = 1; i < SCHED_CODE_MAX_FILES && rc == 0; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		rc = sched_code_create(s, d, name, S_IFREG | 0644, &x, NULL,
				       NULL);
	}
	CHECK(rc == 0);
	sched_code_usage(s, fn, &entries, &bytes);
	CHECK(entries == SCHED_CODE_MAX_FILES);
	CHECK(sched_code_create(s, d, "one-more", S_IFREG | 0644, &x, NULL,
				NULL) == -EDQUOT);
	CHECK(sched_code_create(s, root, "dir", S_IFDIR | 0755, &x, NULL,
				NULL) == -EDQUOT);
	CHECK(fn->error != NULL && strstr(fn->error, "10000 files") != NULL);
	CHECK(sched_code_remove(s, d, "f1", 0, NULL, NULL) == 0);
	CHECK(sched_code_create(s, d, "one-more", S_IFREG | 0644, &x, NULL,
				NULL) == 0);
	sched_close(s);

	/* The tree comes back from the store. */
	s = NULL;
	CHECK(sched_open(&s, dir) == 0);
	if (s != NULL) {
		struct sched_obj *o = sched_find(s, SCHED_ROOT_ID);

		o = sched_child(sched_child(sched_child(o, "acme"), "prod"),
				"fn");
		CHECK(o != NULL);
		if (o != NULL)
			sched_code_usage(s, (struct sched_function *)o,
					 &entries, &bytes);
		CHECK(o != NULL && entries == SCHED_CODE_MAX_FILES);
		sched_close(s);
	}
	rm_rf(dir);
}

TEST(code_served_only_to_its_instances_worker)
{
	char objs[3][65];
	const char *pub = "1111111111111111111111111111111111111111111111111111"
			  "111111111111";
	const char *other = "22222222222222222222222222222222222222222222222222"
			    "22222222222222";

	memset(objs, 0, sizeof(objs));
	memcpy(objs[0], pub, 65);
	memset(objs[1], 'a', 64);
	memset(objs[2], 'b', 64);
	/* Its revision and the objects it references. */
	CHECK(sched_code_may_serve(pub, (const char(*)[65])objs, 3, pub,
				   NULL) == 1);
	CHECK(sched_code_may_serve(pub, (const char(*)[65])objs, 3, pub,
				   objs[2]) == 1);
	/* Another revision, or an object of another function's code. */
	CHECK(sched_code_may_serve(pub, (const char(*)[65])objs, 3, other,
				   NULL) == 0);
	CHECK(sched_code_may_serve(pub, (const char(*)[65])objs, 3, pub,
				   other) == 0);
	CHECK(sched_code_may_serve(pub, (const char(*)[65])objs, 3, other,
				   objs[1]) == 0);
	/* A function without code serves nothing. */
	CHECK(sched_code_may_serve("", (const char(*)[65])objs, 0, pub, NULL) ==
	      0);
}

/*
 * test_binds.c - what a sandbox binds in (runtime/worker/binds.c): paths as
 * text, the kinds of filesystem, the sources opened as the function's
 * user (as root only: nobody's rights), and the paths a `mounts` write
 * refuses (sched/model/spec.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/worker/sandbox.h"
#include "../../sched/sched.h"
#include "unit.h"

static int normal(const char *in, const char *want)
{
	char out[64];

	return rt_path_normal(in, out, sizeof(out)) == 0 &&
	       strcmp(out, want) == 0;
}

TEST(binds_path_normal)
{
	char small[8];

	CHECK(normal("/a/b", "/a/b"));
	CHECK(normal("/a//b/", "/a/b"));
	CHECK(normal("/a/./b/.", "/a/b"));
	CHECK(normal("/a/../b", "/b"));
	CHECK(normal("/../..", "/"));
	CHECK(normal("/", "/"));
	CHECK(normal("/x/y/../../z/..", "/"));
	CHECK(rt_path_normal("a/b", small, sizeof(small)) == -EINVAL);
	CHECK(rt_path_normal("/abcdefghij", small, sizeof(small)) ==
	      -ENAMETOOLONG);
}

TEST(binds_path_under_and_kinds)
{
	CHECK(rt_path_under("/proc", "/proc"));
	CHECK(rt_path_under("/proc/1", "/proc"));
	CHECK(!rt_path_under("/procfs", "/proc"));
	CHECK(!rt_path_under("/pro", "/proc"));
	CHECK(rt_path_under("/anything", "/"));
	CHECK(rt_fs_is_fuse("fuse.fnfs") && rt_fs_is_fuse("fuseblk") &&
	      rt_fs_is_fuse("fuse"));
	CHECK(!rt_fs_is_fuse("fusectl") && !rt_fs_is_fuse("ext4"));
	CHECK(rt_fs_is_kernel("proc") && rt_fs_is_kernel("sysfs") &&
	      rt_fs_is_kernel("cgroup2"));
	CHECK(!rt_fs_is_kernel("tmpfs") && !rt_fs_is_kernel("ext4"));
}

static void unescape(const char *in, const char *want)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", in);
	rt_mountinfo_unescape(buf);
	CHECK_STR(buf, want);
}

TEST(binds_mountinfo_unescape)
{
	unescape("/a\\040b", "/a b");
	unescape("/a\\134b", "/a\\b");
	unescape("/plain", "/plain");
	unescape("/bad\\9", "/bad\\9");
}

/* One line of mountinfo: its mount point (unescaped), type, id and
 * whether the mount is writable; a line of another shape is NULL. */
TEST(binds_mountinfo_split)
{
	char l1[] = "36 25 0:32 / /var/tmp/a\\040b rw,nosuid shared:9 - "
		    "fuse.fnfs fnfs rw,user_id=0\n";
	char l2[] = "40 1 0:5 / /proc rw - proc proc rw";
	char l3[] = "12 1 0:5 / /x rw";
	char l4[] = "1 2 - fuse";
	char l5[] = "41 1 0:5 / /r ro,rwx - ext4 /dev/x rw";
	char l6[] = "42 1 0:5 / /w rw - ext4 /dev/x ro";
	unsigned long long id = 0;
	int rw = -1;
	const char *type = NULL;
	char *at;

	at = rt_mountinfo_split(l1, &type, &id, &rw);
	CHECK(at != NULL && strcmp(at, "/var/tmp/a b") == 0);
	CHECK(type != NULL && strcmp(type, "fuse.fnfs") == 0);
	CHECK(id == 36 && rw == 1);
	at = rt_mountinfo_split(l2, &type, NULL, &rw);
	CHECK(at != NULL && strcmp(at, "/proc") == 0 &&
	      strcmp(type, "proc") == 0 && rw == 1);
	/* The mount's own options decide, not the superblock's. */
	CHECK(rt_mountinfo_split(l5, &type, NULL, &rw) != NULL && rw == 0);
	CHECK(rt_mountinfo_split(l6, &type, NULL, &rw) != NULL && rw == 1);
	CHECK(rt_mountinfo_split(l3, &type, &id, NULL) == NULL);
	CHECK(rt_mountinfo_split(l4, &type, &id, NULL) == NULL);
}

/* Parses a sandbox spec as nobody with one mounts entry. */
static int parse_one(const char *path, int rw, const char **why)
{
	struct rt_sandbox sb;
	json_t *spec = json_pack("{s:i, s:s, s:[{s:s, s:b}]}", "uid", 65534,
				 "isolation", "sandbox", "mounts", "path", path,
				 "rw", rw);
	int rc = rt_sandbox_parse(spec, &sb, why);

	if (rc == 0)
		rt_sandbox_free(&sb);
	json_decref(spec);
	return rc;
}

TEST(binds_opened_as_the_user)
{
	char dir[64], p[128], q[128];
	const char *why = NULL;

	if (geteuid() != 0) {
		fprintf(stderr, "  # not root: binds unchecked\n");
		return;
	}
	snprintf(dir, sizeof(dir), "/var/tmp/fnfs-binds-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0755);
	snprintf(p, sizeof(p), "%s/open", dir);
	CHECK(mkdir(p, 0755) == 0);
	CHECK(parse_one(p, 0, &why) == 0);
	/* rw: nobody may not write there */
	CHECK(parse_one(p, 1, &why) == -EACCES && strstr(why, "rw") != NULL);
	chmod(p, 0777);
	CHECK(parse_one(p, 1, &why) == 0);
	/* a link, at the end or in the middle */
	snprintf(q, sizeof(q), "%s/link", dir);
	CHECK(symlink(p, q) == 0);
	CHECK(parse_one(q, 0, &why) == -ELOOP &&
	      strstr(why, "symbolic link") != NULL);
	snprintf(q, sizeof(q), "%s/link/.", dir);
	CHECK(parse_one(q, 0, &why) == -ELOOP);
	/* a directory nobody cannot enter, and what is below it */
	snprintf(q, sizeof(q), "%s/closed", dir);
	CHECK(mkdir(q, 0700) == 0);
	CHECK(parse_one(q, 0, &why) == -EACCES);
	snprintf(q, sizeof(q), "%s/closed/x", dir);
	CHECK(mkdir(q, 0777) == 0);
	CHECK(parse_one(q, 0, &why) == -EACCES);
	/* the host's views */
	CHECK(parse_one("/proc/self/root/etc", 0, &why) == -EINVAL &&
	      strstr(why, "/proc") != NULL);
	CHECK(parse_one("/sys/kernel", 0, &why) == -EINVAL);
	snprintf(q, sizeof(q), "rm -rf %s", dir);
	CHECK(system(q) == 0);
}

static int write_mounts(const char *text)
{
	struct sched_spec s;
	struct rt_buf why = { 0 };
	int rc;

	sched_spec_init(&s);
	rc = sched_spec_parse(&s, SCHED_ATTR_MOUNTS, text, strlen(text), &why);
	if (rc < 0)
		CHECK(why.len > 0);
	rt_buf_free(&why);
	sched_spec_free(&s);
	return rc;
}

TEST(binds_mounts_refused_at_the_write)
{
	CHECK(sched_spec_reserve("/srv/fnfs-data", "/srv/fnfs") == 0);
	CHECK(write_mounts("/proc\n") == -EINVAL);
	CHECK(write_mounts("/proc/1 rw\n") == -EINVAL);
	CHECK(write_mounts("/sys\n") == -EINVAL);
	CHECK(write_mounts("/dev/shm\n") == -EINVAL);
	CHECK(write_mounts("/srv/fnfs-data/cache\n") == -EINVAL);
	CHECK(write_mounts("/srv/fnfs\n") == -EINVAL);
	CHECK(write_mounts("/srv/fnfs/tenants rw\n") == -EINVAL);
	CHECK(write_mounts("/srv/a\n/proc\n") == -EINVAL);
	CHECK(write_mounts("/procfs\n/srv/fnfs-other\n/srv\n") == 0);
	CHECK(write_mounts("/srv/fnfs-data2 rw\n") == 0);
	CHECK(sched_spec_reserve(NULL, NULL) == 0);
	CHECK(write_mounts("/srv/fnfs\n") == 0);
}

/*
 * test_caches.c - what a sandboxed start keeps between starts: the
 * worker's mount table (runtime/worker/mnttable.c), read again only once the
 * kernel says it changed, and users' groups (runtime/worker/usercache.c), asked
 * of NSS again when the user files change or the answer is too old.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/worker/mnttable.h"
#include "../../runtime/worker/usercache.h"
#include "unit.h"

/* The type of the mount at `point` in `t`, or NULL. */
static const char *type_at(const struct rt_mnt_table *t, const char *point)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->m[i].point, point) == 0)
			return t->m[i].type;
	return NULL;
}

TEST(mnttable_read_again_after_a_change)
{
	char dir[] = "/tmp/fnfs-mnttable.XXXXXX";
	struct rt_mnt_table *a, *b, *c, *d, *e;
	unsigned long reads;

	/* A mount namespace of its own: other tests' mounts on the host
	 * must not count as changes. */
	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "  (a private mount namespace needs root: "
				"skipped)\n");
		return;
	}
	a = rt_mnt_table_get(0);
	CHECK(a != NULL && a->n > 0);
	CHECK(a != NULL && type_at(a, "/") != NULL);
	reads = rt_mnt_table_reads;
	/* Nothing changed: the same snapshot, not read again. */
	b = rt_mnt_table_get(0);
	CHECK(b == a && rt_mnt_table_reads == reads);
	/* Asked for fresh: read again. */
	c = rt_mnt_table_get(1);
	CHECK(c != NULL && rt_mnt_table_reads == reads + 1);
	rt_mnt_table_put(a);
	rt_mnt_table_put(b);
	CHECK(mkdtemp(dir) != NULL);
	/* A mount, then an unmount: each is seen at the next get. */
	CHECK(mount("fnfs-test", dir, "tmpfs", 0, "size=64k") == 0);
	d = rt_mnt_table_get(0);
	CHECK(d != NULL && d != c && rt_mnt_table_reads == reads + 2);
	CHECK(d != NULL && type_at(d, dir) != NULL &&
	      strcmp(type_at(d, dir), "tmpfs") == 0);
	CHECK(umount2(dir, MNT_DETACH) == 0);
	e = rt_mnt_table_get(0);
	CHECK(e != NULL && rt_mnt_table_reads == reads + 3);
	CHECK(e != NULL && type_at(e, dir) == NULL);
	/* An old snapshot stays whole while it is held. */
	CHECK(d != NULL && type_at(d, dir) != NULL);
	rt_mnt_table_put(c);
	rt_mnt_table_put(d);
	rt_mnt_table_put(e);
	rmdir(dir);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0 &&
		 write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* One lookup of uid 0's groups; whether gid 0 is among them. */
static int lookup_root(void)
{
	gid_t *g = NULL;
	char *home = NULL;
	int n = 0, i, has = 0;

	if (rt_user_lookup(0, 0, &g, &n, &home) < 0)
		return 0;
	for (i = 0; i < n; i++)
		has |= g[i] == 0;
	free(g);
	free(home);
	return has;
}

TEST(usercache_until_the_files_change)
{
	char dir[] = "/tmp/fnfs-usercache.XXXXXX", pw[64], gr[64];
	const char *saved[2] = { rt_user_files[0], rt_user_files[1] };
	unsigned long asked;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(pw, sizeof(pw), "%s/passwd", dir);
	snprintf(gr, sizeof(gr), "%s/group", dir);
	CHECK(write_file(pw, "a\n") && write_file(gr, "b\n"));
	rt_user_files[0] = pw;
	rt_user_files[1] = gr;
	asked = rt_user_nss_lookups;
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 1);
	/* Again: the answer kept. */
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 1);
	/* A user file changed (its size): asked again, then kept. */
	CHECK(write_file(gr, "bb\n"));
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 2);
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 2);
	/* Replaced by another file (as useradd does): asked again. */
	CHECK(write_file(pw, "a\n") && rename(pw, gr) == 0 &&
	      write_file(pw, "a\n"));
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 3);
	/* Answers older than the limit are not used. */
	rt_user_cache_ttl_ms = 0;
	CHECK(lookup_root());
	CHECK(lookup_root());
	CHECK(rt_user_nss_lookups == asked + 5);
	rt_user_cache_ttl_ms = 5000;
	rt_user_files[0] = saved[0];
	rt_user_files[1] = saved[1];
	unlink(pw);
	unlink(gr);
	rmdir(dir);
}

/*
 * mnttable.h - the worker's mount table (/proc/self/mountinfo), read
 * once and again only when the kernel says it changed: a poll of the
 * open file reports any mount or unmount in the worker's namespace. A
 * sandbox's start reads it to refuse binds on FUSE or kernel
 * filesystems and to list the FUSE mounts it leaves out; a cold call's
 * start no longer pays for a read of the whole table. Private to
 * runtime/.
 */
#ifndef FNFS_RT_MNTTABLE_H
#define FNFS_RT_MNTTABLE_H
#include <stddef.h>

/* One mount of the worker's view. */
struct rt_mnt {
	unsigned long long id;
	char *point; /* unescaped */
	char *type;
};

/* A snapshot of the table, parents before children as mountinfo lists
 * them; shared by its users and never changed. */
struct rt_mnt_table {
	struct rt_mnt *m;
	size_t n;
	int refs; /* under the module's lock */
};

/* The table as it is now: the snapshot held, or a new one read when
 * the table changed since, or when `fresh`. Any thread. Returns a
 * reference to give back with rt_mnt_table_put, or NULL with errno. */
struct rt_mnt_table *rt_mnt_table_get(int fresh);

/* Gives back a reference of rt_mnt_table_get (NULL: nothing). */
void rt_mnt_table_put(struct rt_mnt_table *t);

/* The file-system type of mount `id` in `t`, or NULL. */
const char *rt_mnt_table_type(const struct rt_mnt_table *t,
			      unsigned long long id);

/* How many times the table was read since the process started (tests). */
extern unsigned long rt_mnt_table_reads;

#endif

/*
 * cgroup.h - the cgroups that hold instance limits: memory, process count
 * (pids) and CPU time, on cgroup v1 (one hierarchy per controller) or v2
 * (one hierarchy). Each worker has a root group named after its id and
 * its controller (fnfs-HASH-ID) in each hierarchy it uses, with one group
 * per spawn inside, named alike in each.
 *
 * The layer takes the cgroup file system's mount point and the text of
 * /proc/self/cgroup as parameters, so that the unit tests run it against
 * a fake directory tree for both layouts. Private to runtime/.
 */
#ifndef FNFS_RT_CGROUP_H
#define FNFS_RT_CGROUP_H

#include <sys/types.h>

#define RT_CG_FS	    "/sys/fs/cgroup"
#define RT_CG_CPU_PERIOD_US 100000 /* the CFS period for cpu limits */

/* The controllers fnfs uses. */
enum rt_cg_ctl { RT_CG_MEMORY, RT_CG_PIDS, RT_CG_CPU, RT_CG_COUNT };

/* The worker's root groups. */
struct rt_cgroups {
	int v2;			 /* one unified hierarchy (root[] alike) */
	char *root[RT_CG_COUNT]; /* owned; NULL: that controller is unusable */
};

/* The limits of one group; 0 leaves a controller out. */
struct rt_cg_limits {
	long long memory_bytes;
	long long pids;
	long long cpu_millis; /* 1000: one CPU */
};

/* One step of joining a group, prepared before fork. */
struct rt_cg_step {
	int op;	    /* RT_CG_MKDIR, RT_CG_WRITE, RT_CG_WRITE_OPT */
	char *path; /* owned */
	char *text; /* owned, for writes */
};

enum { RT_CG_MKDIR, RT_CG_WRITE, RT_CG_WRITE_OPT };

#define RT_CG_STEPS 24

/* The steps that make a spawn's groups, set their limits and move the
 * calling process in: run by the child between fork and exec. */
struct rt_cg_plan {
	int n;
	struct rt_cg_step step[RT_CG_STEPS];
};

/* Writes the name of the root group of worker `worker_id` of controller
 * `key` (its socket path) into `out`: "fnfs-HASH-ID". Pure. */
void rt_cg_root_name(const char *worker_id, const char *key, char *out,
		     size_t n);

/* Writes into `out` the id a worker's root group is named with: "TAG-ID"
 * when `tag` (the environment's FNFS_CGROUP_TAG, may be NULL) is 1 to 16
 * letters and digits, else `worker_id` as it is. Returns 1 when tagged,
 * 0 when not, -EINVAL for a tag that is set but not of that form. Pure. */
int rt_cg_tagged_id(const char *tag, const char *worker_id, char *out,
		    size_t n);

/* Finds the hierarchies under `fs` (RT_CG_FS, or a fake tree) where this
 * process's groups are those `self` (the text of /proc/self/cgroup)
 * names, and writes the paths of the worker's root groups there into
 * `cg` (owned strings, NULL where a controller is missing); makes
 * nothing. Returns 0, or -ENOENT when there is no hierarchy at all. */
int rt_cg_paths(struct rt_cgroups *cg, const char *fs, const char *self,
		const char *worker_id, const char *key);

/* As rt_cg_paths, then makes the root groups and keeps those whose
 * controller can set limits there (v1: the limit file exists; v2: the
 * root's cgroup.controllers lists it, after enabling it). Returns 0 when
 * at least one is usable, -ENOENT. */
int rt_cg_open(struct rt_cgroups *cg, const char *fs, const char *self,
	       const char *worker_id, const char *key);

/* rt_cg_open on this host (RT_CG_FS, /proc/self/cgroup), with the id
 * tagged by $FNFS_CGROUP_TAG (rt_cg_tagged_id). */
int rt_cg_open_host(struct rt_cgroups *cg, const char *worker_id,
		    const char *key);

/* Frees the paths (removes nothing). */
void rt_cg_free(struct rt_cgroups *cg);

/* Whether `cg` holds controller `ctl`'s root. */
int rt_cg_has(const struct rt_cgroups *cg, enum rt_cg_ctl ctl);

/* The path of group `name` in controller `ctl`'s hierarchy (malloc'd),
 * or NULL when that controller is unusable or out of memory. */
char *rt_cg_path(const struct rt_cgroups *cg, enum rt_cg_ctl ctl,
		 const char *name);

/* The distinct root paths (v2: one), into `out`; returns how many. */
int rt_cg_roots(const struct rt_cgroups *cg, const char *out[RT_CG_COUNT]);

/* Prepares the steps for group `name` with limits `lim`: only the
 * controllers with a limit and a root. p->n is 0 when there is nothing
 * to join. Returns 0 or -ENOMEM (p is then empty). */
int rt_cg_plan(const struct rt_cgroups *cg, const char *name,
	       const struct rt_cg_limits *lim, struct rt_cg_plan *p);

/* Runs the steps (raw calls only, safe after fork). Returns 0, or -errno
 * with the failed step's path in *failed. */
int rt_cg_apply(const struct rt_cg_plan *p, const char **failed);

/* Frees the steps' strings. */
void rt_cg_plan_free(struct rt_cg_plan *p);

/* The count of OOM kills in group `name`'s memory group, or -1. */
long long rt_cg_oom_kills(const struct rt_cgroups *cg, const char *name);

/* Kills every process in group `name`, in every hierarchy. */
void rt_cg_kill(const struct rt_cgroups *cg, const char *name);

#endif

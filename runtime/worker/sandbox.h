/*
 * sandbox.h - what a function's process runs as and inside: a user's
 * identity, and a sandbox of namespaces (pid, mount, ipc, uts, and the
 * network when cut off) with a read-only view of the system, a private
 * /tmp, its cwd and mounts bound in, no capabilities, no_new_privs and a
 * seccomp filter against new user namespaces.
 *
 * The worker parses the spec before fork (rt_sandbox_parse: the user's
 * groups come from the user database there); the child applies it with
 * calls safe after fork. The pid namespace's init (pid 1) is the worker's
 * own binary started as "fnfs-init" (a constructor here takes over), and
 * the function's process is the worker's child too, forked into that
 * namespace: its wait status is its own. Private to runtime/.
 */
#ifndef FNFS_RT_SANDBOX_H
#define FNFS_RT_SANDBOX_H

#include <jansson.h>
#include <sys/types.h>
#include <uv.h>

#define RT_SB_MOUNTS_MAX 32 /* entries of "mounts" */

#define RT_BIND_WORKER 0 /* the worker's own (code tree, listen dir) */
#define RT_BIND_MOUNTS 1 /* a "mounts" entry: the function's */
#define RT_BIND_CWD                                                            \
	2 /* its cwd: the function's, read-only where its                      \
	   * user may not write */

/* Where the function's code (its code/ tree) is inside a sandbox: a
 * path its user can walk, unlike the worker's cache (issue 23). */
#define RT_SB_CODE_AT "/tmp/code"
/* The size of a sandbox's /tmp and /dev/shm without a "memory". */
#define RT_SB_TMP_MB 128

/* A path bound into the sandbox at the same place (or at `at`). */
struct rt_bind {
	char *path;	/* absolute, owned */
	int rw;		/* writable; else read-only */
	int user;	/* whose source: RT_BIND_WORKER, _MOUNTS or _CWD */
	int fd;		/* an O_PATH descriptor of it (opened by the worker,
			 * as the function's user when `user`), or -1 */
	int fuse_below; /* FUSE mounts lie below it (to take away) */
	const char *at; /* where inside (static), or NULL: at `path` */
};

/* What the spec asks for, ready for the child. */
struct rt_sandbox {
	int any;    /* a key was present: no_new_privs, umask */
	int set_id; /* "uid" given: switch to it */
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary groups, owned */
	int ngroups;
	char *home;  /* the user's home directory, owned, or NULL */
	int isolate; /* "isolation": "sandbox" */
	int no_net;  /* "network": "none" (sandbox only) */
	struct rt_bind binds[RT_SB_MOUNTS_MAX + 3]; /* cwd, code, listen
						     * dir, mounts */
	int nbinds;
	char **hide; /* FUSE mount points left out of the view, owned */
	int nhide;
	/* The options of its /tmp and /dev/shm: each holds at most the
	 * function's "memory" (default RT_SB_TMP_MB), which outlives a run
	 * (they are the instance's). */
	char tmpfs_opts[80];
};

/* Reads "uid", "gid", "isolation", "network", "mounts" and "cwd" from
 * `spec` into `sb`, resolving the user's groups (initgroups' list) and
 * home. Refuses, with a reason in `why`, a malformed key and what this
 * worker cannot do: another uid, or a sandbox, when it is not root.
 * In a sandbox it opens what is bound in: the function's own sources
 * ("mounts", the cwd) with the function user's credentials, refusing a
 * symbolic link anywhere in the path, `rw` where that user may not
 * write, a FUSE filesystem, /proc, /sys, /dev, the data directory
 * (rt_sandbox_reserve) and a kernel filesystem such as proc or sysfs
 * ("cwd" is bound read-only where the user may not write). `why` then
 * names the path and the cause (a static buffer of this thread, good
 * until the next call). Returns 0 or -errno (`sb` is then empty). */
int rt_sandbox_parse(json_t *spec, struct rt_sandbox *sb, const char **why);

/* rt_sandbox_parse without opening the binds (they stay -1): for
 * rt_open_binds_async when rt_sandbox_needs_thread. */
int rt_sandbox_parse_only(json_t *spec, struct rt_sandbox *sb,
			  const char **why);

/* Whether the binds of `sb` include the function's own sources (a
 * "mounts" entry, its cwd): paths of the host, whose lookup may hang. */
int rt_sandbox_needs_thread(const struct rt_sandbox *sb);

/* A sandbox's binds being opened off the loop (opening.c). */
struct rt_opening;

/* Called on the loop: `sb` (the callee's, to rt_sandbox_free and free)
 * with its binds open, or NULL with the reason in `why` (good during the
 * call only). */
typedef void (*rt_opened_fn)(void *arg, struct rt_sandbox *sb, const char *why);

/* How long a start waits for rt_open_binds_async (default 5000 ms). */
extern int rt_open_timeout_ms;

/* Tests only: called (binds.c) before each open of a function's own
 * source, with the function user's identity taken. */
extern void (*rt_open_test_hook)(const struct rt_sandbox *sb);

/* Runs rt_sandbox_open_binds on `sb` (parsed, its binds not open; taken:
 * emptied) on a thread of `loop`'s pool, which takes the function user's
 * fsuid, fsgid and groups for the open (binds.c: that thread's alone),
 * then calls `done` on the loop. After rt_open_timeout_ms `done` gets a
 * reason instead, and what the thread still opens is closed when it
 * ends; while two such opens hang, a new one fails at once. Returns the
 * opening, or NULL with `why` (`sb` then stays the caller's). */
struct rt_opening *rt_open_binds_async(uv_loop_t *loop, struct rt_sandbox *sb,
				       rt_opened_fn done, void *arg,
				       const char **why);

/* Forgets an opening (NULL: nothing): `done` is not called; what it
 * opens is closed when its thread ends. */
void rt_open_binds_cancel(struct rt_opening *o);

/* Names a directory no function may bind (the worker's data directory),
 * with /proc, /sys and /dev, which always are. Once, at start. Returns
 * 0 or -errno. */
int rt_sandbox_reserve(const char *dir);

/* Part of rt_sandbox_parse (binds.c): reads the mount table into
 * `sb->hide` (the FUSE mount points) and opens every bind, as described
 * there. Returns 0 or -errno with the reason in `why`. */
int rt_sandbox_open_binds(struct rt_sandbox *sb, const char **why);

/* Writes `path` (absolute) without "." and ".." parts or repeated
 * slashes into `out` (`cap` bytes), as text: no link is followed.
 * Returns 0, -EINVAL (not absolute) or -ENAMETOOLONG. Pure. */
int rt_path_normal(const char *path, char *out, size_t cap);

/* Whether `path` is `dir` or below it (both normal). Pure. */
int rt_path_under(const char *path, const char *dir);

/* Whether a mountinfo file-system type is FUSE's ("fuse", "fuseblk",
 * "fuse.NAME"), or a kernel one that shows the host (proc, sysfs...). */
int rt_fs_is_fuse(const char *type);
int rt_fs_is_kernel(const char *type);

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
void rt_mountinfo_unescape(char *p);

/* Splits one line of /proc/self/mountinfo in place ("ID PARENT MAJ:MIN
 * ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER"): returns its
 * mount point, unescaped, with its filesystem type in *type, (`id` not
 * NULL) its ID in *id and (`rw` not NULL) in *rw whether the mount itself
 * is writable, or NULL for a line of another shape. No allocation
 * (safe in a forked child). */
char *rt_mountinfo_split(char *line, const char **type, unsigned long long *id,
			 int *rw);

/* Frees what rt_sandbox_parse allocated. */
void rt_sandbox_free(struct rt_sandbox *sb);

#define RT_SB_INIT_STACK (64 * 1024) /* the init's stack until its exec */

/* In the worker, before forking the function's process: makes a new pid
 * namespace for the worker's next children and starts its init there.
 * Returns the init's pid (as the worker sees it) and in `stack` the
 * memory it runs on until its exec, to free with rt_sandbox_free_stack
 * once it is reaped; or -errno with the worker's children back in its
 * own namespace. On success the caller forks the function's process,
 * then calls rt_sandbox_leave_pidns. */
pid_t rt_sandbox_start_init(void **stack);

/* Frees an init's stack (NULL: nothing). */
void rt_sandbox_free_stack(void *stack);

/* Puts the worker's next children back in its own pid namespace.
 * Returns 0 or -errno. */
int rt_sandbox_leave_pidns(void);

/* Puts the worker's next children in the pid namespace of the init whose
 * pidfd is `pidfd` (a sandbox kept across runs). Returns 0 or -errno
 * (the init is gone). */
int rt_sandbox_enter_pidns(int pidfd);

/* A close-on-exec pidfd of `pid`, or -errno. */
int rt_sandbox_pidfd(pid_t pid);

/* In a child: whether the worker that forked it is still alive (its
 * parent, when a pid namespace hides it from getppid). */
int rt_sandbox_worker_alive(void);

/* In the child of a spawn, which shares the worker's memory until its
 * exec (vfork): writes "fnfs: ", the strings up to NULL and, when `err`
 * is non-zero, ": " and its description, as one line to `fd`. Neither
 * allocates nor takes a lock (dprintf does both). */
void rt_child_say(int fd, int err, const char *s, ...)
	__attribute__((sentinel));

/* A sandbox's view, made once for an instance (per revision of its
 * spec) and entered by each of its runs: its namespaces (mount, uts,
 * and network with "network none") held by descriptors, and the mounts
 * it was made with. Each run has an IPC namespace of its own: what
 * SysV and POSIX queues hold is not bounded by a size, so it goes with
 * the run. */
struct rt_sb_view {
	int mnt, ipc, uts, net;	 /* close-on-exec descriptors, or -1 */
	unsigned long long *ids; /* its mounts: ID and a hash of the point */
	unsigned long long *points;
	size_t nids;
	int watch; /* its mount table, polled for changes, or -1 */
	int dirty; /* changed since a run last tidied it */
	/* What it bound: each source's identity and mode, in order. */
	struct {
		unsigned long long dev, ino;
		int rw;
	} binds[RT_SB_MOUNTS_MAX + 3];
	int nbinds;
};

/* In the worker, on a thread of its own (joined before it returns): a
 * view for `sb`: a mount namespace where the host's mounts are slaves,
 * read-only and nosuid, without the FUSE mounts of `sb->hide` nor any
 * other FUSE or stray kernel filesystem, with a private /tmp and
 * /dev/shm (bounded: sb->tmpfs_opts) and the binds of `sb` (its /proc is
 * mounted by the first run, in the pid namespace); a new uts namespace,
 * and a network one with loopback up for "network none". Fills `v`; returns 0
 * or -errno
 * (`v` then holds nothing). Its owner keeps it across the runs of one
 * instance and one init (its /proc shows that init's pids), never
 * another's, and closes it with rt_sandbox_view_close. */
int rt_sandbox_view(const struct rt_sandbox *sb, struct rt_sb_view *v);

/* Whether view `v` binds what `sb` (opened for a new run) binds: the
 * same sources (device and inode), in order, with the same modes. A
 * directory replaced on the host since (a new cwd moved into place)
 * needs a new view. */
int rt_sandbox_view_fits(const struct rt_sb_view *v,
			 const struct rt_sandbox *sb);

/* Makes `v` a view of nothing (all -1), without closing anything. */
void rt_sandbox_view_none(struct rt_sb_view *v);

/* In the worker, before a run enters `v`: notes whether the view's
 * mounts changed (a poll on its mount table: host propagation, a run's
 * /proc) since a run last tidied it; rt_sandbox_enter tidies only
 * then. */
void rt_sandbox_view_check(struct rt_sb_view *v);

/* Lets go of a view (all -1: nothing). */
void rt_sandbox_view_close(struct rt_sb_view *v);

/* In the child, as root, after its cgroups: the namespaces and the
 * mounts. With a view `v` (not NULL), it enters the view's namespaces
 * and a new IPC one, mounts /proc there if no run did yet, and, when
 * rt_sandbox_view_check found a change (then clearing `v->dirty`: the
 * one write of the worker's memory a child makes), tidies what the
 * host's
 * mounts brought in since it was made: FUSE mounts and stray kernel
 * filesystems are taken away, and writable mounts made read-only and
 * nosuid. Without one, it makes the same view alone, for this run:
 * every bind nosuid and nodev, no FUSE filesystem left in the view
 * (neither the host's nor one a bind carried in), no copy of a kernel
 * filesystem (proc, sysfs...) brought in by a bind. Writes the reason
 * to `err` and returns -1 on failure. */
int rt_sandbox_enter(const struct rt_sandbox *sb, struct rt_sb_view *v,
		     int err);

/* Writes "fnfs: sandbox: WHAT ARG: <errno>" to `err`; returns -1. Safe
 * in the child of a spawn. */
int rt_sb_fail(int err, const char *what, const char *arg);

/* In the child, last before chdir and exec: capabilities, the identity,
 * no_new_privs, the seccomp filter, umask 022. Writes the reason to
 * `err` and returns -1 on failure. */
int rt_sandbox_drop(const struct rt_sandbox *sb, int err);

#endif

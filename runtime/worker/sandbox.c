/*
 * sandbox.c - a function's identity and sandbox (see sandbox.h): parsed
 * in the worker, applied in the child between fork and exec with calls
 * that are safe there, and the pid namespace's init. It is one file
 * over 600 lines because the parse in the worker and the application in
 * the child are the two halves of one struct rt_sandbox, side by side so
 * that what is parsed and what is applied cannot drift apart; the view
 * of the file system is sandbox_view.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init/loop.h"
#include "../base/rt.h"
#include "sandbox.h"
#include "usercache.h"

extern char **environ;

/* ================================================== in the worker */

/* A bind: a "mounts" entry, the cwd, the code's tree or the listen
 * directory (`user`: whose, RT_BIND_*). Opened later (binds.c). */
static int add_bind(struct rt_sandbox *sb, const char *path, int rw, int user)
{
	struct rt_bind *b = &sb->binds[sb->nbinds];

	if (sb->nbinds >= RT_SB_MOUNTS_MAX + 3)
		return -E2BIG;
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->path = strdup(path);
	if (b->path == NULL)
		return -ENOMEM;
	b->rw = rw;
	b->user = user;
	sb->nbinds++;
	return 0;
}

/* The user's supplementary groups, as initgroups would set them, and
 * home (usercache.c); a uid without an entry gets its primary group
 * alone. */
static int resolve_user(struct rt_sandbox *sb)
{
	return rt_user_lookup(sb->uid, sb->gid, &sb->groups, &sb->ngroups,
			      &sb->home);
}

static int id_value(json_t *v, unsigned *out)
{
	json_int_t i;

	if (!json_is_integer(v))
		return 0;
	i = json_integer_value(v);
	if (i < 0 || i >= 4294967295LL)
		return 0;
	*out = (unsigned)i;
	return 1;
}

/* Reads "mounts": [{"path": "/abs", "rw": false}, ...]. */
static int parse_mounts(json_t *mounts, struct rt_sandbox *sb, const char **why)
{
	json_t *m;
	size_t i;

	if (mounts == NULL)
		return 0;
	if (!json_is_array(mounts) ||
	    json_array_size(mounts) > RT_SB_MOUNTS_MAX) {
		*why = "mounts: not an array of at most 32 entries";
		return -EINVAL;
	}
	json_array_foreach (mounts, i, m) {
		const char *path = json_string_value(
			json_object_get(m, "path"));
		json_t *rw = json_object_get(m, "rw");

		if (path == NULL || path[0] != '/' ||
		    (rw != NULL && !json_is_boolean(rw))) {
			*why = "mounts: each entry needs an absolute \"path\" "
			       "and a boolean \"rw\"";
			return -EINVAL;
		}
		if (add_bind(sb, path, json_is_true(rw), RT_BIND_MOUNTS) < 0) {
			*why = "out of memory";
			return -ENOMEM;
		}
	}
	return 0;
}

char *rt_mountinfo_split(char *line, const char **type, unsigned long long *id,
			 int *rw)
{
	char *field[10], *save = NULL, *tok;
	int n = 0;

	*type = NULL;
	for (tok = strtok_r(line, " \n", &save); tok != NULL && n < 10;
	     tok = strtok_r(NULL, " \n", &save)) {
		if (strcmp(tok, "-") == 0) {
			*type = strtok_r(NULL, " \n", &save);
			break;
		}
		field[n++] = tok;
	}
	if (n < 5 || *type == NULL)
		return NULL;
	if (id != NULL)
		*id = strtoull(field[0], NULL, 10);
	if (rw != NULL)
		*rw = n > 5 && strncmp(field[5], "rw", 2) == 0 &&
		      (field[5][2] == '\0' || field[5][2] == ',');
	rt_mountinfo_unescape(field[4]);
	return field[4];
}

void rt_mountinfo_unescape(char *p)
{
	char *o = p;

	for (; *p; p++, o++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
		    p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*o = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 +
				    (p[3] - '0'));
			p += 3;
		} else {
			*o = *p;
		}
	}
	*o = '\0';
}

/* rt_sandbox_parse, which opens the binds when `open`. */
static int parse(json_t *spec, struct rt_sandbox *sb, const char **why,
		 int open)
{
	json_t *uid = json_object_get(spec, "uid"),
	       *gid = json_object_get(spec, "gid");
	const char *iso = json_string_value(json_object_get(spec, "isolation"));
	const char *net = json_string_value(json_object_get(spec, "network"));
	const char *cwd = json_string_value(json_object_get(spec, "cwd"));
	const char *code_dir = json_string_value(
		json_object_get(spec, "code_dir"));
	const char *listen_dir = json_string_value(
		json_object_get(spec, "listen_dir"));
	unsigned u = 0, g = 0;
	int rc = 0;

	memset(sb, 0, sizeof(*sb));
	sb->any = uid != NULL || gid != NULL ||
		  json_object_get(spec, "isolation") != NULL;
	if ((uid != NULL && !id_value(uid, &u)) ||
	    (gid != NULL && !id_value(gid, &g))) {
		*why = "uid and gid must be integers from 0";
		rc = -EINVAL;
		goto out;
	}
	if (json_object_get(spec, "isolation") != NULL && iso == NULL) {
		*why = "isolation must be \"sandbox\" or \"none\"";
		rc = -EINVAL;
		goto out;
	}
	if (iso != NULL && strcmp(iso, "sandbox") != 0 &&
	    strcmp(iso, "none") != 0) {
		*why = "isolation must be \"sandbox\" or \"none\"";
		rc = -EINVAL;
		goto out;
	}
	if ((net != NULL && strcmp(net, "host") != 0 &&
	     strcmp(net, "none") != 0) ||
	    (net == NULL && json_object_get(spec, "network") != NULL)) {
		*why = "network must be \"host\" or \"none\"";
		rc = -EINVAL;
		goto out;
	}
	sb->isolate = iso != NULL && strcmp(iso, "sandbox") == 0;
	{
		long long mb = json_integer_value(
			json_object_get(spec, "memory"));

		if (mb <= 0 || mb > 1048576)
			mb = RT_SB_TMP_MB;
		snprintf(sb->tmpfs_opts, sizeof(sb->tmpfs_opts),
			 "mode=1777,size=%lldm,nr_inodes=%lld", mb, mb * 256);
	}
	sb->no_net = sb->isolate && net != NULL && strcmp(net, "none") == 0;
	if (uid != NULL) {
		sb->set_id = 1;
		sb->uid = (uid_t)u;
		sb->gid = (gid_t)(gid != NULL ? g : u);
	} else if (gid != NULL) {
		*why = "a gid needs a uid";
		rc = -EINVAL;
		goto out;
	}
	/* What only root can do. */
	if (geteuid() != 0 &&
	    (sb->isolate ||
	     (sb->set_id && (sb->uid != geteuid() || sb->gid != getegid())))) {
		*why = sb->isolate ? "the worker is not root: it cannot build "
				     "a sandbox"
				   : "the worker is not root: it cannot run a "
				     "function as another user";
		rc = -EPERM;
		goto out;
	}
	if (sb->set_id && (rc = resolve_user(sb)) < 0) {
		*why = "cannot read the user's groups";
		goto out;
	}
	if (sb->isolate) {
		/* The cwd first (binds.c knows it as RT_BIND_CWD). */
		if (cwd != NULL && cwd[0] != '\0' && strcmp(cwd, "/") != 0 &&
		    (rc = add_bind(sb, cwd, 1, RT_BIND_CWD)) < 0) {
			*why = "out of memory";
			goto out;
		}
		/* The function's code (the worker's cache): read-only. */
		if (code_dir != NULL && code_dir[0] == '/') {
			if ((rc = add_bind(sb, code_dir, 0, RT_BIND_WORKER)) <
			    0) {
				*why = "out of memory";
				goto out;
			}
			sb->binds[sb->nbinds - 1].at = RT_SB_CODE_AT;
		}
		/* The directory of its FN_LISTENER socket (endpoint.c). */
		if (listen_dir != NULL && listen_dir[0] == '/' &&
		    (rc = add_bind(sb, listen_dir, 1, RT_BIND_WORKER)) < 0) {
			*why = "out of memory";
			goto out;
		}
		rc = parse_mounts(json_object_get(spec, "mounts"), sb, why);
		if (rc == 0 && open)
			rc = rt_sandbox_open_binds(sb, why);
	}
out:
	if (rc < 0)
		rt_sandbox_free(sb);
	return rc;
}

int rt_sandbox_parse(json_t *spec, struct rt_sandbox *sb, const char **why)
{
	return parse(spec, sb, why, 1);
}

int rt_sandbox_parse_only(json_t *spec, struct rt_sandbox *sb, const char **why)
{
	return parse(spec, sb, why, 0);
}

void rt_sandbox_free(struct rt_sandbox *sb)
{
	int i;

	for (i = 0; i < sb->nbinds; i++) {
		free(sb->binds[i].path);
		if (sb->binds[i].fd >= 0)
			close(sb->binds[i].fd);
	}
	for (i = 0; i < sb->nhide; i++)
		free(sb->hide[i]);
	free(sb->hide);
	free(sb->groups);
	free(sb->home);
	memset(sb, 0, sizeof(*sb));
}

/* The worker's pidfd (for its children to tell whether it is alive), its
 * own pid namespace, and a memfd holding the init program, opened once. */
static int self_pidfd = -1, self_pidns = -1, init_memfd = -1;

/* The bytes of runtime/worker/init/fnfs-init.c built statically (the Makefile
 * links them in with `ld -b binary`). */
extern const char _binary_fnfs_init_start[], _binary_fnfs_init_end[];

/* A memfd with the init program, or -1 (the init is then fnfs itself,
 * started as "fnfs-init", which costs an exec of fnfs's libraries). */
static int init_program(void)
{
	const char *p = _binary_fnfs_init_start;
	size_t left = (size_t)((uintptr_t)_binary_fnfs_init_end -
			       (uintptr_t)_binary_fnfs_init_start);
	int fd = memfd_create("fnfs-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	while (fd >= 0 && left > 0) {
		ssize_t n = write(fd, p, left);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	if (fd >= 0)
		fcntl(fd, F_ADD_SEALS,
		      F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	return fd;
}

static void open_self(void)
{
	if (self_pidfd < 0)
		self_pidfd = pidfd_open(getpid(), 0);
	if (self_pidns < 0)
		self_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (init_memfd < 0)
		init_memfd = init_program();
}

/* The init's first steps, in a child that shares the worker's memory
 * (CLONE_VM) on a stack of its own until its exec: raw system calls only
 * (no libc state, no sanitizer interceptor, errno untouched), and
 * nothing written but its stack. Signals stay blocked (as in the worker
 * across the spawn) until init_main sets its own mask. */
static char *init_argv[] = { "fnfs-init", NULL };

static int init_trampoline(void *arg)
{
	long null;

	(void)arg;
	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	syscall(SYS_setsid);
	null = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR, 0);
	if (null >= 0) {
		syscall(SYS_dup3, null, 0, 0);
		syscall(SYS_dup3, null, 1, 0);
		syscall(SYS_dup3, null, 2, 0);
	}
	/* fd 3: the worker's pidfd (dup3 clears its close-on-exec); fd 4:
	 * the init program, closed by its own exec. The program first, in
	 * case it sits at 3. */
	if (init_memfd == 3)
		syscall(SYS_dup3, 3, 4, O_CLOEXEC);
	else if (init_memfd >= 0 && init_memfd != 4 && self_pidfd != 4)
		syscall(SYS_dup3, init_memfd, 4, O_CLOEXEC);
	if (self_pidfd >= 0 && self_pidfd != 3)
		syscall(SYS_dup3, self_pidfd, 3, 0);
	else if (self_pidfd == 3)
		syscall(SYS_fcntl, 3, F_SETFD, 0);
	if (self_pidfd == 4 && init_memfd >= 0)
		syscall(SYS_dup3, init_memfd, 4, O_CLOEXEC);
	syscall(SYS_close_range, 5U, ~0U, 0);
	if (init_memfd >= 0)
		syscall(SYS_execveat, 4, "", init_argv, environ, AT_EMPTY_PATH);
	syscall(SYS_close, 4);
	syscall(SYS_execve, "/proc/self/exe", init_argv, environ);
	syscall(SYS_exit, 127);
	return 0;
}

pid_t rt_sandbox_start_init(void **stack)
{
	pid_t pid;

	*stack = NULL;
	open_self();
	if (self_pidns < 0)
		return -errno;
	/* Its stack, kept until the init is reaped (it runs on it until its
	 * exec, which the worker does not wait for). */
	*stack = mmap(NULL, RT_SB_INIT_STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (*stack == MAP_FAILED) {
		*stack = NULL;
		return -ENOMEM;
	}
	if (unshare(CLONE_NEWPID) < 0) {
		int e = errno;

		rt_sandbox_free_stack(*stack);
		*stack = NULL;
		return -e;
	}
	/* No copy of the worker's memory and no wait for the exec: the
	 * init's exec runs beside the function's own setup. */
	pid = clone(init_trampoline, (char *)*stack + RT_SB_INIT_STACK,
		    CLONE_VM | SIGCHLD, NULL);
	if (pid < 0) {
		int e = errno;

		rt_sandbox_leave_pidns();
		rt_sandbox_free_stack(*stack);
		*stack = NULL;
		return -e;
	}
	return pid;
}

void rt_sandbox_free_stack(void *stack)
{
	if (stack != NULL)
		munmap(stack, RT_SB_INIT_STACK);
}

int rt_sandbox_enter_pidns(int pidfd)
{
	return setns(pidfd, CLONE_NEWPID) < 0 ? -errno : 0;
}

int rt_sandbox_pidfd(pid_t pid)
{
	int fd = pidfd_open(pid, 0);

	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int rt_sandbox_leave_pidns(void)
{
	return setns(self_pidns, CLONE_NEWPID) < 0 ? -errno : 0;
}

int rt_sandbox_worker_alive(void)
{
	struct pollfd p = { self_pidfd, POLLIN, 0 };

	if (self_pidfd < 0)
		return getppid() != 1;
	return poll(&p, 1, 0) == 0;
}

/* =========================================== the pid namespace's init */

/* Runs before main: the worker's binary started as "fnfs-init" is the
 * sandbox's init, not the program. */
__attribute__((constructor(101))) static void init_hook(int argc, char **argv)
{
	if (argc >= 1 && argv != NULL && argv[0] != NULL &&
	    strcmp(argv[0], "fnfs-init") == 0 && getpid() == 1)
		rt_init_loop();
}

/* ============================================== in the child, as root */

/* Appends `p` to the line of rt_child_say, keeping room for '\n'. */
static size_t say_put(char *line, size_t n, size_t cap, const char *p)
{
	size_t k = strlen(p);

	if (k > cap - 1 - n)
		k = cap - 1 - n;
	memcpy(line + n, p, k);
	return n + k;
}

void rt_child_say(int fd, int err, const char *s, ...)
{
	char line[1024];
	const char *desc;
	size_t n = say_put(line, 0, sizeof(line), "fnfs: ");
	va_list ap;

	va_start(ap, s);
	for (; s != NULL; s = va_arg(ap, const char *))
		n = say_put(line, n, sizeof(line), s);
	va_end(ap);
	if (err != 0) {
		desc = strerrordesc_np(err);
		n = say_put(line, n, sizeof(line), ": ");
		n = say_put(line, n, sizeof(line),
			    desc != NULL ? desc : "unknown error");
	}
	line[n++] = '\n';
	if (write(fd, line, n) < 0)
		return; /* nowhere else to say it */
}

int rt_sb_fail(int err, const char *what, const char *arg)
{
	int e = errno;

	rt_child_say(err, e, "sandbox: ", what, arg ? " " : "", arg ? arg : "",
		     (char *)NULL);
	return -1;
}

/* The seccomp filter: unshare and clone with CLONE_NEWUSER fail with
 * EPERM, clone3 (whose flags a filter cannot read) with ENOSYS, so that
 * libc falls back to clone. x86-64 also checks the i386 entry points and
 * refuses x32's. */
static int seccomp_install(void)
{
#define LD_NR                                                                  \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET(v)	    BPF_STMT(BPF_RET | BPF_K, (v))
#define IS(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#if defined(__x86_64__)
	struct sock_filter f[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, arch)),
		/* 1 */ IS(AUDIT_ARCH_X86_64, 0, 6),
		/* 2 */ LD_NR,
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 14, 0),
		/* 4 */ IS(435, 13, 0), /* clone3 */
		/* 5 */ IS(272, 8, 0),	/* unshare */
		/* 6 */ IS(56, 7, 0),	/* clone */
		/* 7 */ RET(SECCOMP_RET_ALLOW),
		/* 8 */ IS(AUDIT_ARCH_I386, 0, 4),
		/* 9 */ LD_NR,
		/* 10 */ IS(435, 7, 0), /* clone3 */
		/* 11 */ IS(310, 2, 0), /* unshare */
		/* 12 */ IS(120, 1, 0), /* clone */
		/* 13 */ RET(SECCOMP_RET_ALLOW),
		/* 14 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		/* 15 */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
		/* 16 */ RET(SECCOMP_RET_ERRNO | EPERM),
		/* 17 */ RET(SECCOMP_RET_ALLOW),
		/* 18 */ RET(SECCOMP_RET_ERRNO | ENOSYS),
	};
#else
	struct sock_filter f[] = {
		/* 0 */ LD_NR,
		/* 1 */ IS(__NR_clone3, 6, 0),
		/* 2 */ IS(__NR_unshare, 1, 0),
		/* 3 */ IS(__NR_clone, 0, 3),
		/* 4 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		/* 5 */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
		/* 6 */ RET(SECCOMP_RET_ERRNO | EPERM),
		/* 7 */ RET(SECCOMP_RET_ALLOW),
		/* 8 */ RET(SECCOMP_RET_ERRNO | ENOSYS),
	};
#endif
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])),
				   f };

	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#undef LD_NR
#undef RET
#undef IS
}

int rt_sandbox_drop(const struct rt_sandbox *sb, int err)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct none[2];
	int c;

	umask(022);
	if (!sb->any)
		return 0;
	if (sb->isolate) {
		/* The bounding set first (that needs CAP_SETPCAP): nothing
		 * exec'ed later can get a capability back. */
		for (c = 0; c <= 63; c++)
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
			    errno == EINVAL)
				break;
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	}
	/* Raw calls: they change this thread, the only one. */
	if (sb->set_id &&
	    (syscall(SYS_setgroups, (size_t)sb->ngroups, sb->groups) < 0 ||
	     syscall(SYS_setresgid, sb->gid, sb->gid, sb->gid) < 0 ||
	     syscall(SYS_setresuid, sb->uid, sb->uid, sb->uid) < 0))
		return rt_sb_fail(err, "cannot switch to the function's user",
				  NULL);
	memset(none, 0, sizeof(none));
	if (sb->isolate && syscall(SYS_capset, &hdr, none) < 0)
		return rt_sb_fail(err, "capset", NULL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return rt_sb_fail(err, "no_new_privs", NULL);
	if (sb->isolate && seccomp_install() < 0)
		return rt_sb_fail(err, "seccomp", NULL);
	return 0;
}

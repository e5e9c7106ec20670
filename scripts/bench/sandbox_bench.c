/*
 * sandbox_bench.c - what the sandbox costs, driving the worker's
 * supervisor (runtime/) directly, in one run with interleaved rounds:
 *
 *   restart   rt_instance_restart of a hot instance until the new process
 *             has written its first byte (it runs the program)
 *   cold      rt_run_spawn of a cold call until its process has exited
 *             and been reaped, having written its byte
 *
 * for these specs (all with the default memory limit of 128 MB):
 *   plain     today's: root, no sandbox
 *   sandbox   uid nobody, isolation sandbox, pids 256
 *   bwrap     the program under bubblewrap with the sandbox's options
 *             (root: bwrap cannot switch uid without a user namespace)
 *
 * and a breakdown of the sandbox's steps, each timed alone in a child.
 *
 *   sandbox_bench PROBE N     (PROBE: the program, see sandbox_probe.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/worker/sandbox.h"
#include "../../runtime/worker/supervise.h"

#define NV 3
static const char *const names[NV] = { "plain", "sandbox", "bwrap" };

static uv_loop_t loop;
static struct rt_sup sup;
static uv_signal_t chld;
static long long outputs[2][NV]; /* bytes seen: [hot, cold][variant] */
static int cold_exits;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int variant_of(const struct rt_instance *in)
{
	return in->id[0] - '0'; /* ids "V/..." */
}

static void on_out(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_run *r = s->data;

	(void)buf;
	if (n > 0 && r->in != NULL)
		outputs[r->cold][variant_of(r->in)] += n;
	if (n < 0)
		rt_run_close(r, (uv_pipe_t *)s);
}

static void on_cold_exit(struct rt_run *r)
{
	(void)r;
	cold_exits++;
}

static const struct rt_sup_events events = {
	.call_output = on_out,
	.call_exited = on_cold_exit,
};

static void on_chld(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	rt_sup_reap(&sup);
}

static json_t *spec(int v, const char *probe, const char *mode)
{
	char cmd[1024];
	json_t *j;

	if (v == 2)
		snprintf(cmd, sizeof(cmd),
			 "bwrap --ro-bind / / --tmpfs /tmp --proc /proc "
			 "--dev-bind /dev /dev --unshare-pid --unshare-ipc "
			 "--unshare-uts --die-with-parent --new-session "
			 "--cap-drop ALL %s",
			 probe);
	else
		snprintf(cmd, sizeof(cmd), "%s", probe);
	j = json_pack("{s:s, s:s, s:s, s:i}", "command", cmd, "mode", mode,
		      "restart_policy", "always", "memory", 128);
	if (v == 1) {
		json_object_set_new(j, "uid", json_integer(65534));
		json_object_set_new(j, "gid", json_integer(65534));
		json_object_set_new(j, "isolation", json_string("sandbox"));
		json_object_set_new(j, "pids", json_integer(256));
	}
	if (v == 2)
		json_object_set_new(j, "pids", json_integer(256));
	return j;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%-24s median %8.2f ms   p90 %8.2f ms\n", what, t[n / 2] / 1000,
	       t[n * 9 / 10] / 1000);
}

/* Runs the loop until `*p` exceeds `old` (or 5 s pass). */
static int wait_more(long long *p, long long old)
{
	double until = now_us() + 5e6;

	while (*p <= old && now_us() < until)
		uv_run(&loop, UV_RUN_ONCE);
	return *p > old;
}

static int wait_int(int *p, int want)
{
	double until = now_us() + 5e6;

	while (*p < want && now_us() < until)
		uv_run(&loop, UV_RUN_ONCE);
	return *p >= want;
}

/* ----------------------------------------------------------- breakdown */

/* Times each step of the sandbox in a fresh child; prints microseconds. */
static void breakdown_child(int fd, const char *probe)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY |
					     MOUNT_ATTR_NOSUID };
	double t[16];
	int k = 0, tree;
	pid_t p;

	t[k++] = now_us();
	unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS);
	t[k++] = now_us();
	mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
	tree = open_tree(AT_FDCWD, "/var", OPEN_TREE_CLONE | AT_RECURSIVE);
	mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro));
	t[k++] = now_us();
	mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	t[k++] = now_us();
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	t[k++] = now_us();
	move_mount(tree, "", AT_FDCWD, "/var", MOVE_MOUNT_F_EMPTY_PATH);
	t[k++] = now_us();
	{
		struct rt_sandbox sb = { .any = 1, .set_id = 1, .isolate = 1 };
		gid_t g = 65534;

		sb.uid = 65534;
		sb.gid = 65534;
		sb.groups = &g;
		sb.ngroups = 1;
		rt_sandbox_drop(&sb, 2);
	}
	t[k++] = now_us();
	p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(probe, probe, "exit", (char *)NULL);
		_exit(127);
	}
	waitpid(p, NULL, 0);
	t[k++] = now_us();
	if (write(fd, t, sizeof(t)) < 0)
		_exit(1);
	_exit(0);
}

static void breakdown(const char *probe, int n)
{
	static const char *const steps[] = {
		"unshare mnt+ipc+uts",
		"rslave, clone, ro /",
		"tmpfs /tmp, /dev/shm",
		"mount /proc",
		"bind (move_mount)",
		"caps, ids, nnp, seccomp",
		"fork+exec+exit of the program",
	};
	double sum[8] = { 0 }, t[16], a, b, c;
	double netns = 0, init = 0, cg = 0, fork_us = 0, view_us = 0, made = 0;
	struct rt_sandbox vsb = { .isolate = 1 };
	struct rt_sb_view view;
	struct rt_cg_plan plan;
	struct rt_cg_limits lim = { 128LL << 20, 256, 0 };
	const char *failed;
	int i, j, pfd[2];
	pid_t p, ip;

	/* The view each run of an instance enters, made once. */
	a = now_us();
	if (rt_sandbox_view(&vsb, &view) < 0) {
		fprintf(stderr, "sandbox_bench: no view\n");
		return;
	}
	made = now_us() - a;
	for (i = 0; i < n; i++) {
		/* a run entering the view: setns, /proc, tidy when its
		 * mounts changed (a forked child's note that it tidied is
		 * its own: the parent takes it over, as vfork shares it) */
		rt_sandbox_view_check(&view);
		p = fork();
		if (p == 0) {
			double x = now_us();

			if (rt_sandbox_enter(&vsb, &view, 2) < 0)
				_exit(255);
			x = now_us() - x;
			_exit(x / 10 > 250 ? 250 : (int)(x / 10));
		}
		{
			int st;

			waitpid(p, &st, 0);
			view_us += WEXITSTATUS(st) * 10.0;
			view.dirty = 0;
		}
		if (pipe(pfd) < 0)
			return;
		a = now_us();
		p = fork();
		if (p == 0)
			breakdown_child(pfd[1], probe);
		b = now_us();
		close(pfd[1]);
		if (read(pfd[0], t, sizeof(t)) != sizeof(t))
			return;
		close(pfd[0]);
		waitpid(p, NULL, 0);
		for (j = 0; j < 7; j++)
			sum[j] += t[j + 1] - t[j];
		fork_us += b - a;
		/* a network namespace */
		p = fork();
		if (p == 0) {
			unshare(CLONE_NEWNET);
			_exit(0);
		}
		a = now_us();
		waitpid(p, NULL, 0);
		c = now_us();
		p = fork();
		if (p == 0) {
			double x = now_us();

			unshare(CLONE_NEWNET);
			x = now_us() - x;
			_exit(x > 250000 ? 250 : (int)(x / 1000));
		}
		{
			int st;

			waitpid(p, &st, 0);
			netns += WEXITSTATUS(st) * 1000.0;
		}
		(void)a;
		(void)c;
		/* the init: unshare(CLONE_NEWPID) + posix_spawn, the init's
		 * own exec included (it runs beside the function's setup) */
		a = now_us();
		{
			void *stack;

			ip = rt_sandbox_start_init(&stack);
			rt_sandbox_leave_pidns();
			init += now_us() - a;
			if (ip > 0) {
				kill(ip, SIGKILL);
				waitpid(ip, NULL, 0);
			}
			rt_sandbox_free_stack(stack);
		}
		/* the cgroups: memory and pids groups joined (v1: two) */
		if (rt_cg_plan(&sup.cg, "bench:breakdown.1", &lim, &plan) ==
		    0) {
			p = fork();
			if (p == 0) {
				double x = now_us();

				rt_cg_apply(&plan, &failed);
				x = now_us() - x;
				_exit(x / 100 > 250 ? 250 : (int)(x / 100));
			}
			{
				int st;

				waitpid(p, &st, 0);
				cg += WEXITSTATUS(st) * 100.0;
			}
			rt_cg_plan_free(&plan);
			rt_cgroup_finish(&sup, strdup("bench:breakdown.1"));
			rt_sup_collect(&sup);
		}
	}
	rt_sandbox_view_close(&view);
	printf("\nbreakdown of a sandboxed spawn, mean of %d (in the child "
	       "unless said):\n",
	       n);
	printf("  %-34s %8.0f us\n", "fork of the worker (in the worker)",
	       fork_us / n);
	printf("  %-34s %8.0f us\n", "init: unshare pid + clone (worker)",
	       init / n);
	printf("  %-34s %8.0f us (ms resolution)\n", "cgroups memory+pids",
	       cg / n);
	printf("  %-34s %8.0f us (once per instance)\n",
	       "make the view (worker, a thread)", made);
	printf("  %-34s %8.0f us (each run; 10 us resolution)\n",
	       "enter the view: setns, tidy", view_us / n);
	printf("  a run without a view (when none could be made), each step "
	       "alone:\n");
	for (j = 0; j < 7; j++)
		printf("    %-32s %8.0f us\n", steps[j], sum[j] / n);
	printf("  %-34s %8.0f us (ms resolution; network none only)\n",
	       "unshare net", netns / n);
}

int main(int argc, char **argv)
{
	const char *probe = argc > 1 ? argv[1] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 50, i, k, v, lost = 0;
	char cmd[1100], id[32];
	double *rs[NV], *cs[NV];
	struct rt_instance *hot[NV], *cold[NV];

	if (probe == NULL || n < 2) {
		fprintf(stderr, "usage: sandbox_bench PROBE [N]\n");
		return 2;
	}
	uv_loop_init(&loop);
	rt_sup_init(&sup, &loop, &events, NULL);
	uv_signal_init(&loop, &chld);
	uv_signal_start(&chld, on_chld, SIGCHLD);
	rt_cg_open_host(&sup.cg, "bench", "sandbox_bench");
	snprintf(cmd, sizeof(cmd), "%s wait", probe);
	for (v = 0; v < NV; v++) {
		rs[v] = calloc((size_t)n, sizeof(double));
		cs[v] = calloc((size_t)n, sizeof(double));
		snprintf(id, sizeof(id), "%d/b/hot/0", v);
		hot[v] = rt_instance_new(&sup, id);
		rt_instance_start(hot[v], spec(v, cmd, "hot"), 1);
		json_decref(hot[v]->spec); /* start took a reference */
		if (!wait_more(&outputs[0][v], 0)) {
			fprintf(stderr, "%s: the probe did not start\n",
				names[v]);
			return 1;
		}
		snprintf(id, sizeof(id), "%d/b/cold/0", v);
		cold[v] = rt_instance_new(&sup, id);
		snprintf(cmd, sizeof(cmd), "%s exit", probe);
		rt_instance_start(cold[v], spec(v, cmd, "cold"), 1);
		json_decref(cold[v]->spec);
		snprintf(cmd, sizeof(cmd), "%s wait", probe);
	}
	for (i = 0; i < n; i++) {
		for (k = 0; k < NV; k++) {
			const char *why = NULL;
			struct rt_run *r;
			long long old;
			char tag[16];
			double t0;
			int exits;

			v = (i + k) % NV; /* the order rotates */
			/* restart */
			old = outputs[0][v];
			t0 = now_us();
			rt_instance_restart(hot[v]);
			if (!wait_more(&outputs[0][v], old)) {
				fprintf(stderr, "%s: restart lost\n", names[v]);
				lost++;
			}
			rs[v][i] = now_us() - t0;
			/* cold call */
			old = outputs[1][v];
			exits = cold_exits;
			snprintf(tag, sizeof(tag), "c%d", i);
			t0 = now_us();
			r = rt_run_spawn(cold[v], 1, tag, &why);
			if (r == NULL) {
				fprintf(stderr, "%s: %s\n", names[v], why);
				return 1;
			}
			r->cold = 1;
			rt_run_close(r, &r->req);
			if (!wait_int(&cold_exits, exits + 1) ||
			    !wait_more(&outputs[1][v], old)) {
				fprintf(stderr, "%s: call lost\n", names[v]);
				lost++;
			}
			cs[v][i] = now_us() - t0;
			/* let the old ones' inits and groups go */
			uv_run(&loop, UV_RUN_NOWAIT);
			usleep(20000);
			uv_run(&loop, UV_RUN_NOWAIT);
		}
	}
	printf("%d rounds, cgroups: memory %s, pids %s (%s)\n\n", n,
	       rt_cg_has(&sup.cg, RT_CG_MEMORY) ? "yes" : "no",
	       rt_cg_has(&sup.cg, RT_CG_PIDS) ? "yes" : "no",
	       sup.cg.v2 ? "v2" : "v1");
	for (v = 0; v < NV; v++) {
		char what[64];
		double rm, cm;

		snprintf(what, sizeof(what), "restart %s", names[v]);
		report(what, rs[v], n);
		snprintf(what, sizeof(what), "cold call %s", names[v]);
		report(what, cs[v], n);
		rm = rs[v][n / 2] / rs[0][n / 2];
		cm = cs[v][n / 2] / cs[0][n / 2];
		printf("%-24s restart %.2fx, cold call %.2fx\n\n", "  / plain",
		       rm, cm);
	}
	for (v = 0; v < NV; v++) {
		rt_instance_stop(hot[v], 1);
		rt_instance_stop(cold[v], 1);
	}
	{
		double until = now_us() + 5e6;

		while (!(rt_sup_idle(&sup) && sup.open_runs == NULL) &&
		       now_us() < until)
			uv_run(&loop, UV_RUN_ONCE);
	}
	breakdown(probe, n);
	uv_close((uv_handle_t *)&chld, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	rt_sup_free(&sup, 2000);
	if (lost > 0)
		fprintf(stderr, "%d restarts or calls lost\n", lost);
	return lost > 0 ? 1 : 0;
}

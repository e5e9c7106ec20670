/*
 * test_sandbox.c - functions run as a user, in a sandbox, with limits:
 * the supervisor with specs carrying "uid", "gid", "isolation",
 * "network", "mounts", "pids" and "cpu", and real processes (as
 * `nobody`); and the cgroup layer against fake v1 and v2 trees. The
 * process tests need root (they say so and pass vacuously otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/worker/sandbox.h"
#include "../../runtime/worker/supervise.h"
#include "unit.h"

/* Paths here are built from a mkdtemp name and short suffixes; the
 * buffers are far larger than any of them. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define NOBODY 65534

static struct {
	int spawned, failed_spawns, exited;
	char why[128];
	struct rt_exit exits[16];
} rec;

static uv_loop_t loop;
static struct rt_sup sup;
static uv_signal_t chld;
static uv_timer_t limit;
static int timed_out;
static char dir[64]; /* logs, and the functions' cwd */

static void ev_spawned(struct rt_instance *in, const char *why)
{
	(void)in;
	if (why != NULL) {
		rec.failed_spawns++;
		snprintf(rec.why, sizeof(rec.why), "%s", why);
	} else {
		rec.spawned++;
	}
}

static void ev_exited(struct rt_instance *in, const struct rt_exit *e)
{
	(void)in;
	if (rec.exited < 16)
		rec.exits[rec.exited] = *e;
	rec.exited++;
}

static const struct rt_sup_events events = {
	.spawned = ev_spawned,
	.exited = ev_exited,
};

static void on_chld(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	rt_sup_reap(&sup);
}

static void on_limit(uv_timer_t *t)
{
	(void)t;
	timed_out = 1;
}

/* Whether the process tests can run: root, and namespaces allowed. */
static int can_sandbox(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "  # not root: sandbox unchecked\n");
		return 0;
	}
	return 1;
}

static void setup(void)
{
	char key[64];

	memset(&rec, 0, sizeof(rec));
	uv_loop_init(&loop);
	rt_sup_init(&sup, &loop, &events, NULL);
	uv_signal_init(&loop, &chld);
	uv_signal_start(&chld, on_chld, SIGCHLD);
	uv_timer_init(&loop, &limit);
	snprintf(dir, sizeof(dir), "/tmp/fnfs-sbx-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0777); /* the functions' cwd: nobody writes there */
	sup.log_dir = strdup(dir);
	snprintf(key, sizeof(key), "unit-sandbox-%d", (int)getpid());
	rt_cg_open_host(&sup.cg, "unit", key);
}

static int run_until(int (*done)(void), int ms)
{
	timed_out = 0;
	uv_timer_start(&limit, on_limit, (uint64_t)ms, 0);
	while (!done() && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&limit);
	return done();
}

static void run_for(int ms)
{
	timed_out = 0;
	uv_timer_start(&limit, on_limit, (uint64_t)ms, 0);
	while (!timed_out)
		uv_run(&loop, UV_RUN_ONCE);
}

static int idle(void)
{
	return rt_sup_idle(&sup) && sup.open_runs == NULL;
}

static void teardown(void)
{
	void **v;
	size_t i, n;

	v = rt_map_values(&sup.instances, &n);
	for (i = 0; v != NULL && i < n; i++)
		rt_instance_stop(v[i], 1);
	free(v);
	CHECK(run_until(idle, 8000));
	uv_close((uv_handle_t *)&chld, NULL);
	uv_close((uv_handle_t *)&limit, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	rt_sup_free(&sup, 2000);
	CHECK(system(NULL) != 0);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
}

static int want_exited, want_spawned;
static struct rt_instance *watched;

static int exited_enough(void)
{
	return rec.exited >= want_exited;
}

static int spawned_enough(void)
{
	return rec.spawned >= want_spawned;
}

static int stopped(void)
{
	return watched->state == RT_STOPPED && watched->run == NULL;
}

/* A sandboxed daemon spec as nobody, cwd the test's directory. */
static json_t *sb_spec(const char *cmd, const char *policy)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s}", "command", cmd,
			 "mode", "daemon", "restart_policy", policy, "cwd", dir,
			 "uid", NOBODY, "gid", NOBODY, "isolation", "sandbox");
}

static int start_answered(void)
{
	return watched->opening == NULL;
}

/* Starts `in`, and waits for its spawn: a sandbox's own sources (its
 * cwd, mounts) are opened off the loop first (rt_run_open). */
static struct rt_instance *start(const char *id, json_t *spec)
{
	struct rt_instance *in = rt_instance_new(&sup, id);

	if (in == NULL)
		exit(1);
	CHECK(rt_instance_start(in, spec, 1) == 0);
	json_decref(spec);
	watched = in;
	CHECK(run_until(start_answered, 8000));
	return in;
}

/* The instance's log, once it holds `want` (or after 3 s). */
static char *log_of(struct rt_instance *in, const char *want)
{
	struct rt_buf b = { 0 };
	int i;

	for (i = 0; i < 300; i++) {
		rt_buf_reset(&b);
		rt_instance_log_tail(in, 65536, &b);
		if (b.data != NULL && strstr(b.data, want) != NULL)
			break;
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
	if (b.data == NULL)
		rt_buf_puts(&b, "");
	return b.data;
}

/* Runs `cmd` sandboxed as nobody to its end; returns its log. */
static char *run_once(const char *cmd, json_t *extra)
{
	struct rt_instance *in;
	json_t *spec = sb_spec(cmd, "never");
	char *log;

	if (extra != NULL) {
		json_object_update(spec, extra);
		json_decref(extra);
	}
	in = start("t/n/f/0", spec);
	want_exited = 1;
	CHECK(run_until(exited_enough, 8000));
	log = log_of(in, "END");
	if (strstr(log, "END") == NULL)
		fprintf(stderr, "  log: %s\n", log);
	return log;
}

/* ------------------------------------------------------------------ */

TEST(sandbox_identity_caps_pidns)
{
	char *log, *p;
	int n = 0, bad = 0;

	if (!can_sandbox())
		return;
	setup();
	log = run_once(
		"id -u; id -g; grep -E "
		"'^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' "
		"/proc/self/status; echo PIDS $(ls /proc | grep -E "
		"'^[0-9]+$'); umask; echo INIT $(cat /proc/1/comm); echo END",
		NULL);
	CHECK(strstr(log, "65534\n65534\n") == log);
	CHECK(strstr(log, "CapEff:\t0000000000000000") != NULL);
	CHECK(strstr(log, "CapPrm:\t0000000000000000") != NULL);
	CHECK(strstr(log, "CapBnd:\t0000000000000000") != NULL);
	CHECK(strstr(log, "NoNewPrivs:\t1") != NULL);
	CHECK(strstr(log, "Seccomp:\t2") != NULL);
	CHECK(strstr(log, "\n0022\n") != NULL);
	CHECK(strstr(log, "INIT fnfs-init\n") != NULL);
	/* Only its own processes: the init (1), the shell (2) and what
	 * the shell started for this line. */
	p = strstr(log, "PIDS ");
	CHECK(p != NULL);
	if (p != NULL) {
		p += 5;
		while (*p && *p != '\n') {
			long pid = strtol(p, &p, 10);

			n++;
			bad += pid < 1 || pid > 10;
			while (*p == ' ')
				p++;
		}
	}
	CHECK(n >= 2 && n <= 6 && bad == 0);
	CHECK(strstr(log, "PIDS 1 2 ") != NULL);
	CHECK(rec.exits[0].code == 0 && rec.exits[0].signal == 0);
	free(log);
	teardown();
}

TEST(sandbox_files_tmp_userns)
{
	char *log, path[1024], marker[64];
	struct stat st;
	int fd;

	if (!can_sandbox())
		return;
	setup();
	snprintf(marker, sizeof(marker), "/tmp/fnfs-sbx-marker-%d",
		 (int)getpid());
	fd = open(marker, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path),
		 "echo hi > ok.txt && echo cwd-rw; "
		 "touch /etc/fnfs-sbx 2>/dev/null || echo etc-ro; "
		 "touch /var/tmp/fnfs-sbx 2>/dev/null || echo vartmp-ro; "
		 "test -e %s || echo tmp-private; "
		 "echo x > /tmp/inside && echo tmp-rw; "
		 "unshare -U true 2>/dev/null || echo userns-denied; "
		 "echo END",
		 marker);
	log = run_once(path, NULL);
	CHECK(strstr(log, "cwd-rw\n") != NULL);
	CHECK(strstr(log, "etc-ro\n") != NULL);
	CHECK(strstr(log, "vartmp-ro\n") != NULL);
	CHECK(strstr(log, "tmp-private\n") != NULL);
	CHECK(strstr(log, "tmp-rw\n") != NULL);
	CHECK(strstr(log, "userns-denied\n") != NULL);
	/* The cwd was the host's; the private /tmp was not. */
	snprintf(path, sizeof(path), "%s/ok.txt", dir);
	CHECK(stat(path, &st) == 0 && st.st_uid == NOBODY);
	CHECK(stat("/tmp/inside", &st) < 0);
	CHECK(stat("/etc/fnfs-sbx", &st) < 0);
	unlink(marker);
	free(log);
	teardown();
}

/* "mounts": a read-only one and a writable one, both under the host's
 * /tmp (hidden by the private /tmp unless bound). */
TEST(sandbox_mounts)
{
	char ro[96], rw[96], cmd[512], path[256];
	struct stat st;
	char *log;

	if (!can_sandbox())
		return;
	setup();
	snprintf(ro, sizeof(ro), "%s-ro", dir);
	snprintf(rw, sizeof(rw), "%s-rw", dir);
	CHECK(mkdir(ro, 0777) == 0 && mkdir(rw, 0777) == 0);
	chmod(ro, 0777);
	chmod(rw, 0777);
	snprintf(cmd, sizeof(cmd),
		 "test -d %s && echo ro-seen; touch %s/x 2>/dev/null || "
		 "echo ro-ro; touch %s/y && echo rw-rw; echo END",
		 ro, ro, rw);
	log = run_once(cmd,
		       json_pack("{s:[{s:s, s:b}, {s:s, s:b}]}", "mounts",
				 "path", ro, "rw", 0, "path", rw, "rw", 1));
	CHECK(strstr(log, "ro-seen\n") != NULL);
	CHECK(strstr(log, "ro-ro\n") != NULL);
	CHECK(strstr(log, "rw-rw\n") != NULL);
	snprintf(path, sizeof(path), "%s/y", rw);
	CHECK(stat(path, &st) == 0);
	free(log);
	snprintf(path, sizeof(path), "rm -rf %s %s", ro, rw);
	CHECK(system(path) == 0);
	teardown();
}

TEST(sandbox_network_none)
{
	char *log;

	if (!can_sandbox())
		return;
	setup();
	log = run_once("echo IFS $(tail -n +3 /proc/net/dev | cut -d: -f1); "
		       "echo END",
		       json_pack("{s:s}", "network", "none"));
	/* Only the loopback (brought up). */
	CHECK(strstr(log, "IFS lo\n") != NULL);
	free(log);
	teardown();
}

/* Exit statuses come through as the function's own. */
TEST(sandbox_exit_status)
{
	char *log;

	if (!can_sandbox())
		return;
	setup();
	log = run_once("echo END; exit 5", NULL);
	CHECK(rec.exits[0].code == 5 && rec.exits[0].signal == 0);
	free(log);
	teardown();
}

/* A stop's SIGTERM reaches the function (not only its init): a shell
 * trap runs and its status is reported. */
TEST(sandbox_stop_term)
{
	struct rt_instance *in;
	int64_t t0;
	char *log;

	if (!can_sandbox())
		return;
	setup();
	in = start("t/n/f/0", sb_spec("trap 'echo got-term; exit 3' TERM; "
				      "echo ready; "
				      "while :; do sleep 0.1; done",
				      "always"));
	log = log_of(in, "ready");
	free(log);
	t0 = rt_mono_ms();
	CHECK(rt_instance_stop(in, 0) == 0);
	want_exited = 1;
	CHECK(run_until(exited_enough, 4000));
	CHECK(rt_mono_ms() - t0 < 2000);
	CHECK(rec.exits[0].code == 3 && rec.exits[0].signal == 0);
	log = log_of(in, "got-term");
	CHECK(strstr(log, "got-term") != NULL);
	free(log);
	teardown();
}

/* The reported pid is the function's own process as the host sees it:
 * kill -9 of it is an exit by signal 9, then a restart; everything in
 * its namespace is gone with it. */
TEST(sandbox_kill9_restarts)
{
	struct rt_instance *in;
	char path[64], buf[2048], want[64], cmd[128], count[128];
	pid_t first, init;
	json_t *spec;
	ssize_t n;
	int fd;

	if (!can_sandbox())
		return;
	setup();
	/* A duration of this run's own (its pid): other processes of the
	 * host sleeping 300 s are not counted. */
	snprintf(cmd, sizeof(cmd),
		 "sleep 300.%d & sleep 300.%d & exec sleep 301.%d",
		 (int)getpid(), (int)getpid(), (int)getpid());
	spec = sb_spec(cmd, "always");
	json_object_set_new(spec, "pids", json_integer(64));
	in = start("t/n/f/0", spec);
	first = in->pid;
	CHECK(first > 0);
	run_for(300);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)first);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* Its host pid, and 2 in its namespace (1 is the init). */
	snprintf(want, sizeof(want), "NSpid:\t%d\t2\n", (int)first);
	CHECK(strstr(buf, want) != NULL);
	init = rt_instance_init(in);
	CHECK(init > 0);
	CHECK(first > 0 && kill(first, SIGKILL) == 0);
	want_spawned = 2;
	CHECK(run_until(spawned_enough, 3000));
	CHECK(rec.exited >= 1 && rec.exits[0].signal == SIGKILL);
	CHECK(in->pid > 0 && in->pid != first && in->state == RT_RUNNING);
	/* With a group to end what a run leaves behind, the restart forked
	 * into the same sandbox (same init); without, into a new one. What
	 * the first run left (two background sleeps) is gone either way:
	 * only the second run's two are there. */
	if (rt_cg_has(&sup.cg, RT_CG_PIDS))
		CHECK(rt_instance_init(in) == init);
	else
		CHECK(rt_instance_init(in) != init);
	run_for(300);
	snprintf(count, sizeof(count),
		 "[ \"$(pgrep -c -x -f 'sleep 300[.]%d')\" = 2 ]",
		 (int)getpid());
	CHECK(system(count) == 0);
	/* A stop ends the sandbox too. */
	watched = in;
	rt_instance_stop(in, 0);
	CHECK(run_until(stopped, 5000));
	run_for(200);
	CHECK(rt_instance_init(in) == 0);
	CHECK(kill(init, 0) < 0 && errno == ESRCH);
	teardown();
	/* No `sleep 300` of it is left anywhere. */
	snprintf(count, sizeof(count),
		 "! pgrep -x -f 'sleep 300[.]%d' >/dev/null", (int)getpid());
	CHECK(system(count) == 0);
}

static int calls_done;

static void ev_call_exited(struct rt_run *r)
{
	(void)r;
	calls_done++;
}

static int call_done(void)
{
	return calls_done > 0;
}

/* Cold calls fork a sandboxed process each; its init goes with it. */
TEST(sandbox_cold_call)
{
	static const struct rt_sup_events cold_events = {
		.spawned = ev_spawned,
		.exited = ev_exited,
		.call_exited = ev_call_exited,
	};
	struct rt_instance *in;
	struct rt_run *r;
	const char *why = NULL;
	char *log;
	pid_t init;

	if (!can_sandbox())
		return;
	setup();
	sup.ev = &cold_events;
	calls_done = 0;
	in = start(
		"t/n/c/0",
		json_pack(
			"{s:s, s:s, s:i, s:s}", "command",
			"echo cold $(id -u) $(ls /proc | grep -c '^[0-9]') END",
			"mode", "cold", "uid", NOBODY, "isolation", "sandbox"));
	r = rt_run_spawn(in, 1, "c1", &why);
	CHECK(r != NULL && rt_instance_init(in) > 0);
	if (r == NULL)
		return;
	r->cold = 1;
	init = rt_instance_init(in);
	rt_run_close(r, &r->req);
	CHECK(run_until(call_done, 5000));
	log = log_of(in, "END");
	CHECK(strstr(log, "cold 65534 ") != NULL);
	free(log);
	CHECK(run_until(idle, 0) || 1);
	teardown();
	CHECK(kill(init, 0) < 0 && errno == ESRCH);
}

/* The cold calls of one instance copy the view prepared with its
 * sandbox (rt_sandbox_template): a host mount that reaches it later (a
 * shared place, here) is still read-only there, and a kernel file
 * system mounted later is still taken away. */
TEST(sandbox_template_late_mounts)
{
	static const struct rt_sup_events cold_events = {
		.spawned = ev_spawned,
		.exited = ev_exited,
		.call_exited = ev_call_exited,
	};
	char base[64], cmd[1024], sh[512];
	struct rt_instance *in;
	struct rt_run *r;
	const char *why = NULL;
	char *log;
	pid_t init;

	if (!can_sandbox())
		return;
	setup();
	sup.ev = &cold_events;
	/* A shared place outside /tmp (the sandbox's own /tmp covers it). */
	snprintf(base, sizeof(base), "/var/tmp/fnfs-sbx-late-XXXXXX");
	CHECK(mkdtemp(base) != NULL);
	chmod(base, 0755);
	snprintf(sh, sizeof(sh),
		 "mount --bind %s %s && mount --make-shared %s && "
		 "mkdir %s/late %s/proc",
		 base, base, base, base, base);
	CHECK(system(sh) == 0);
	snprintf(cmd, sizeof(cmd),
		 "test -e %s/late/mark && echo late-seen; "
		 "touch %s/late/x 2>/dev/null && echo late-rw; "
		 "test -e %s/proc/self && echo proc-seen; echo END",
		 base, base, base);
	in = start("t/n/late/0",
		   json_pack("{s:s, s:s, s:i, s:s, s:i}", "command", cmd,
			     "mode", "cold", "uid", NOBODY, "isolation",
			     "sandbox", "pids", 64));
	calls_done = 0;
	r = rt_run_spawn(in, 1, "c1", &why);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	r->cold = 1;
	init = rt_instance_init(in);
	rt_run_close(r, &r->req);
	CHECK(run_until(call_done, 5000));
	/* Mounted after the instance's view was made. */
	snprintf(sh, sizeof(sh),
		 "mount -t tmpfs -o mode=0777 late %s/late && "
		 "touch %s/late/mark && mount -t proc proc %s/proc",
		 base, base, base);
	CHECK(system(sh) == 0);
	calls_done = 0;
	r = rt_run_spawn(in, 1, "c2", &why);
	CHECK(r != NULL);
	if (r != NULL) {
		r->cold = 1;
		rt_run_close(r, &r->req);
		CHECK(run_until(call_done, 5000));
	}
	/* Kept across the calls when a group ends what a call leaves. */
	if (rt_cg_has(&sup.cg, RT_CG_PIDS))
		CHECK(rt_instance_init(in) == init);
	log = log_of(in, "late-seen");
	CHECK(strstr(log, "late-seen\n") != NULL);
	CHECK(strstr(log, "late-rw") == NULL);
	CHECK(strstr(log, "proc-seen") == NULL);
	CHECK(strstr(log, "END\nlate-seen\nEND\n") != NULL);
	if (strstr(log, "END\nlate-seen\nEND\n") == NULL)
		fprintf(stderr, "  log: %s\n", log);
	free(log);
	teardown();
	snprintf(sh, sizeof(sh),
		 "umount -l %s/proc; umount -l %s/late; umount -l %s; "
		 "rm -rf %s",
		 base, base, base, base);
	CHECK(system(sh) == 0);
}

/* One cold call of `in`, run to its end. */
static int cold_call(struct rt_instance *in, const char *tag)
{
	const char *why = NULL;
	struct rt_run *r = rt_run_spawn(in, 1, tag, &why);

	if (r == NULL)
		return 0;
	r->cold = 1;
	calls_done = 0;
	rt_run_close(r, &r->req);
	return run_until(call_done, 5000);
}

/* The runs of one instance enter one view (rt_sandbox_view): what a
 * call leaves in /tmp is there for the next, whose /proc shows the
 * sandbox's processes alone (a view's /proc is mounted by its first
 * run); /tmp and /dev/shm hold at most the function's memory; a SysV
 * queue goes with its run (IPC is a run's); a new revision of the spec
 * gets a new view, with an empty /tmp. */
TEST(sandbox_view_kept_per_revision)
{
	static const struct rt_sup_events cold_events = {
		.spawned = ev_spawned,
		.exited = ev_exited,
		.call_exited = ev_call_exited,
	};
	const char *cmd =
		"test -e /tmp/mark && echo kept; touch /tmp/mark; "
		"echo procs $(ls /proc | grep -c '^[0-9]'); "
		"echo tmp $(df -k /tmp | awk 'NR==2 {print $2}') "
		"shm $(df -k /dev/shm | awk 'NR==2 {print $2}'); "
		"echo queues $(ipcs -q | grep -c '^0x'); ipcmk -Q >/dev/null; "
		"touch /usr/x 2>/dev/null && echo root-rw; echo END";
	struct rt_instance *in;
	json_t *next;
	char *log;

	if (!can_sandbox())
		return;
	setup();
	sup.ev = &cold_events;
	in = start("t/n/view/0",
		   json_pack("{s:s, s:s, s:i, s:s, s:i, s:i}", "command", cmd,
			     "mode", "cold", "uid", NOBODY, "isolation",
			     "sandbox", "pids", 64, "memory", 24));
	CHECK(cold_call(in, "c1"));
	CHECK(cold_call(in, "c2"));
	log = log_of(in, "kept");
	/* The first saw nothing, the second the first's mark. */
	CHECK(strstr(log, "END\nkept\n") != NULL);
	CHECK(strstr(log, "root-rw") == NULL);
	CHECK(strstr(log, "tmp 24576 shm 24576\n") != NULL);
	CHECK(strstr(log, "queues 0\n") != NULL &&
	      strstr(log, "queues 1") == NULL);
	{
		const char *p = log;
		int n = 0;

		/* Each run counts a handful of processes, not the host's. */
		while ((p = strstr(p, "procs ")) != NULL) {
			int k = atoi(p + 6);

			CHECK(k >= 1 && k <= 8);
			n++;
			p += 6;
		}
		CHECK(n == 2);
	}
	free(log);
	/* Another revision: a new view. */
	next = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:s}", "command", cmd,
			 "mode", "cold", "uid", NOBODY, "isolation", "sandbox",
			 "pids", 64, "memory", 24, "env_x", "2");
	CHECK(rt_instance_start(in, next, 2) >= 0);
	json_decref(next);
	CHECK(cold_call(in, "c3"));
	log = log_of(in, "END\nprocs");
	{
		/* The third run's output follows the second's END. */
		const char *last = strstr(log, "END\n");

		last = last != NULL ? strstr(last + 4, "END\n") : NULL;
		CHECK(last != NULL && strncmp(last + 4, "procs", 5) == 0);
	}
	free(log);
	teardown();
}

/* A cwd replaced on the host (a new directory moved into place, as a
 * deploy does) is what the next run binds, writable: the view is made
 * again when a source it bound is not the one a run opens (else the
 * run would find the new directory through the read-only view of the
 * host, and the old one bound where the rename took it). */
TEST(sandbox_view_follows_a_replaced_cwd)
{
	static const struct rt_sup_events cold_events = {
		.spawned = ev_spawned,
		.exited = ev_exited,
		.call_exited = ev_call_exited,
	};
	const char *cmd = "echo in $(ls | grep -v w); "
			  "touch w 2>/dev/null && echo wrote; echo END";
	char base[64], app[96], sh[512];
	struct rt_instance *in;
	char *log;
	pid_t init;

	if (!can_sandbox())
		return;
	setup();
	sup.ev = &cold_events;
	snprintf(base, sizeof(base), "/var/tmp/fnfs-sbx-cwd-XXXXXX");
	CHECK(mkdtemp(base) != NULL);
	chmod(base, 0755);
	snprintf(app, sizeof(app), "%s/app", base);
	snprintf(sh, sizeof(sh),
		 "mkdir -m 755 %s && touch %s/first && chown %d %s", app, app,
		 NOBODY, app);
	CHECK(system(sh) == 0);
	in = start("t/n/cwd/0",
		   json_pack("{s:s, s:s, s:i, s:s, s:s, s:i}", "command", cmd,
			     "mode", "cold", "uid", NOBODY, "isolation",
			     "sandbox", "cwd", app, "pids", 64));
	CHECK(cold_call(in, "c1"));
	init = rt_instance_init(in);
	snprintf(sh, sizeof(sh),
		 "mv %s %s.old && mkdir -m 755 %s && touch %s/second && "
		 "chown %d %s",
		 app, app, app, app, NOBODY, app);
	CHECK(system(sh) == 0);
	CHECK(cold_call(in, "c2"));
	/* The same sandbox (its init kept), a new view. */
	if (rt_cg_has(&sup.cg, RT_CG_PIDS))
		CHECK(rt_instance_init(in) == init);
	log = log_of(in, "in second");
	/* Bound, so writable: not the read-only view of the host. */
	CHECK(strstr(log, "in first\nwrote\nEND\n") != NULL);
	CHECK(strstr(log, "in second\nwrote\nEND\n") != NULL);
	if (strstr(log, "in second\nwrote\nEND\n") == NULL)
		fprintf(stderr, "  log: %s\n", log);
	free(log);
	teardown();
	snprintf(sh, sizeof(sh), "rm -rf %s", base);
	CHECK(system(sh) == 0);
}

/* A fork bomb stops at "pids"; the supervisor and another function
 * keep working; a stop ends it all. */
TEST(sandbox_pids_fork_bomb)
{
	struct rt_instance *bomb, *other;
	char *group, path[4200], buf[256], *log;
	long long cur = -1, max_events = -1;
	FILE *f;

	if (!can_sandbox())
		return;
	setup();
	if (!rt_cg_has(&sup.cg, RT_CG_PIDS)) {
		fprintf(stderr, "  # no pids cgroup: unchecked\n");
		teardown();
		return;
	}
	bomb = start("t/n/bomb/0",
		     json_pack("{s:s, s:s, s:s, s:i, s:s, s:i}", "command",
			       "f() { f | f & }; f; sleep 300", "mode",
			       "daemon", "restart_policy", "never", "uid",
			       NOBODY, "isolation", "sandbox", "pids", 20));
	run_for(1500);
	group = rt_cg_path(&sup.cg, RT_CG_PIDS, "t:n:bomb:0.1");
	snprintf(path, sizeof(path), "%s/pids.current", group);
	f = fopen(path, "r");
	if (f != NULL && fgets(buf, sizeof(buf), f) != NULL)
		cur = atoll(buf);
	if (f != NULL)
		fclose(f);
	snprintf(path, sizeof(path), "%s/pids.events", group);
	f = fopen(path, "r");
	if (f != NULL && fgets(buf, sizeof(buf), f) != NULL)
		sscanf(buf, "max %lld", &max_events);
	if (f != NULL)
		fclose(f);
	fprintf(stderr, "  # pids.current %lld, pids.events max %lld\n", cur,
		max_events);
	CHECK(cur > 0 && cur <= 20);
	CHECK(max_events > 0);
	/* Another function starts and runs meanwhile. */
	other = start("t/n/other/0", sb_spec("echo alive END", "never"));
	want_exited = 1;
	CHECK(run_until(exited_enough, 5000));
	log = log_of(other, "alive");
	CHECK(strstr(log, "alive END") != NULL);
	free(log);
	CHECK(bomb->state == RT_RUNNING);
	CHECK(rt_instance_stop(bomb, 0) == 0);
	want_exited = 2;
	CHECK(run_until(exited_enough, 4000));
	CHECK(run_until(idle, 0) || 1);
	teardown();
	/* Its group went with it: nothing was left in it. */
	{
		struct stat st;

		CHECK(stat(group, &st) < 0 && errno == ENOENT);
	}
	free(group);
}

/* Seconds of CPU `pid` has used. */
static double cpu_of(pid_t pid)
{
	double s = -1;
	long long rss;

	rt_proc_sample(pid, &s, &rss);
	return s;
}

/* 100 millicores keep a busy loop near 10% of a CPU. */
TEST(sandbox_cpu_limit)
{
	struct rt_instance *in;
	double c0, c1, share;
	int64_t t0, t1;
	char *group, path[4200], buf[256];
	long long throttled = -1;
	FILE *f;

	if (!can_sandbox())
		return;
	setup();
	if (!rt_cg_has(&sup.cg, RT_CG_CPU)) {
		fprintf(stderr, "  # no cpu cgroup: unchecked\n");
		teardown();
		return;
	}
	in = start("t/n/busy/0",
		   json_pack("{s:s, s:s, s:s, s:i, s:s, s:i}", "command",
			     "while :; do :; done", "mode", "daemon",
			     "restart_policy", "never", "uid", NOBODY,
			     "isolation", "sandbox", "cpu", 100));
	run_for(300);
	c0 = cpu_of(in->pid);
	t0 = rt_mono_ms();
	run_for(2000);
	c1 = cpu_of(in->pid);
	t1 = rt_mono_ms();
	share = (c1 - c0) / ((double)(t1 - t0) / 1000.0);
	group = rt_cg_path(&sup.cg, RT_CG_CPU, "t:n:busy:0.1");
	snprintf(path, sizeof(path), "%s/cpu.stat", group);
	f = fopen(path, "r");
	while (f != NULL && fgets(buf, sizeof(buf), f) != NULL)
		if (sscanf(buf, "nr_throttled %lld", &throttled) == 1)
			break;
	if (f != NULL)
		fclose(f);
	fprintf(stderr, "  # busy loop at %.1f%% of a CPU, throttled %lld\n",
		share * 100, throttled);
	CHECK(c0 >= 0 && share > 0.03 && share < 0.2);
	CHECK(throttled > 0);
	free(group);
	teardown();
}

/* Over its memory limit, a sandboxed function is recorded as oom. */
TEST(sandbox_oom)
{
	if (!can_sandbox())
		return;
	setup();
	if (!rt_cg_has(&sup.cg, RT_CG_MEMORY)) {
		fprintf(stderr, "  # no memory cgroup: unchecked\n");
		teardown();
		return;
	}
	start("t/n/hog/0",
	      json_pack("{s:s, s:s, s:s, s:i, s:s, s:i}", "command",
			"python3 -c 'b = b\"x\" * (200 << 20); print(len(b))'",
			"mode", "daemon", "restart_policy", "never", "uid",
			NOBODY, "isolation", "sandbox", "memory", 32));
	want_exited = 1;
	CHECK(run_until(exited_enough, 8000));
	fprintf(stderr, "  # exit code %d signal %d oom %d\n",
		rec.exits[0].code, rec.exits[0].signal, rec.exits[0].oom);
	/* (The shell ran python as its child: it reports 137.) */
	CHECK(rec.exits[0].oom);
	teardown();
}

/* A worker that is not root refuses what it cannot do, with a reason. */
TEST(sandbox_refused_unprivileged)
{
	int status;
	pid_t pid;

	if (!can_sandbox())
		return;
	pid = fork();
	if (pid == 0) {
		struct rt_sandbox sb;
		const char *why = NULL;
		json_t *a = json_pack("{s:s}", "isolation", "sandbox");
		json_t *b = json_pack("{s:i, s:s}", "uid", 0, "isolation",
				      "none");
		json_t *c = json_pack("{s:i, s:i, s:s}", "uid", NOBODY, "gid",
				      NOBODY, "isolation", "none");
		int ok = 1;

		if (setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(3);
		ok &= rt_sandbox_parse(a, &sb, &why) == -EPERM && why != NULL &&
		      strstr(why, "not root") != NULL;
		ok &= rt_sandbox_parse(b, &sb, &why) == -EPERM;
		/* Its own uid, without a sandbox, it can do. */
		ok &= rt_sandbox_parse(c, &sb, &why) == 0 && sb.set_id;
		rt_sandbox_free(&sb);
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The spawn of a refused spec is a failure with the reason. */
TEST(sandbox_bad_keys_fail_the_spawn)
{
	struct rt_instance *in;

	setup();
	in = start("t/n/f/0", json_pack("{s:s, s:s, s:s}", "command", "true",
					"mode", "daemon", "isolation", "jail"));
	CHECK(rec.failed_spawns == 1);
	CHECK(in->exits[0].code == 127); /* as other spawn failures */
	CHECK(strstr(rec.why, "isolation") != NULL);
	teardown();
}

/* ------------------------------------------------ cgroups, fake trees */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* The contents of `a/b` without the trailing newline, or "(none)". */
static const char *read_text(const char *a, const char *b)
{
	static char buf[256];
	char path[4800];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", a, b);
	f = fopen(path, "r");
	if (f == NULL)
		return "(none)";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int mkdirs(const char *path)
{
	char cmd[4400];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	return system(cmd);
}

TEST(cgroup_tagged_id)
{
	char id[64], name[128];

	CHECK(rt_cg_tagged_id(NULL, "local-1", id, sizeof(id)) == 0);
	CHECK_STR(id, "local-1");
	CHECK(rt_cg_tagged_id("", "local-1", id, sizeof(id)) == 0);
	CHECK_STR(id, "local-1");
	CHECK(rt_cg_tagged_id("r1a2b3", "local-1", id, sizeof(id)) == 1);
	CHECK_STR(id, "r1a2b3-local-1");
	rt_cg_root_name(id, "/k", name, sizeof(name));
	CHECK(strncmp(name, "fnfs-", 5) == 0);
	CHECK_STR(name + 13, "-r1a2b3-local-1");
	/* Never a path's separator, a dot or a space in a group's name. */
	CHECK(rt_cg_tagged_id("../x", "w", id, sizeof(id)) == -EINVAL);
	CHECK_STR(id, "w");
	CHECK(rt_cg_tagged_id("a b", "w", id, sizeof(id)) == -EINVAL);
	CHECK(rt_cg_tagged_id("0123456789abcdefg", "w", id, sizeof(id)) ==
	      -EINVAL);
	CHECK_STR(id, "w");
}

TEST(cgroup_fake_v1)
{
	char fake[] = "/tmp/fnfs-cgv1-XXXXXX", root[4600], p[4400], name[128];
	const char *self = "12:pids:/\n4:memory:/a/b\n2:cpu,cpuacct:/\n"
			   "1:name=systemd:/\n0::/\n";
	struct rt_cg_limits lim = { 64LL << 20, 50, 250 };
	struct rt_cg_plan plan;
	struct rt_cgroups cg;
	const char *failed = NULL;
	char *g;

	CHECK(mkdtemp(fake) != NULL);
	rt_cg_root_name("w1", "/k", name, sizeof(name));
	/* What the kernel would show: the hierarchies, and the limit files
	 * of a fresh group. */
	snprintf(root, sizeof(root), "%s/memory/a/b/%s", fake, name);
	CHECK(mkdirs(root) == 0);
	snprintf(p, sizeof(p), "%s/memory.limit_in_bytes", root);
	write_text(p, "9223372036854771712\n");
	snprintf(root, sizeof(root), "%s/pids/%s", fake, name);
	CHECK(mkdirs(root) == 0);
	snprintf(p, sizeof(p), "%s/pids.max", root);
	write_text(p, "max\n");
	snprintf(root, sizeof(root), "%s/cpu", fake);
	CHECK(mkdirs(root) == 0); /* no fnfs root: mkdir'ed, no probe */

	CHECK(rt_cg_open(&cg, fake, self, "w1", "/k") == 0);
	CHECK(!cg.v2);
	snprintf(p, sizeof(p), "%s/memory/a/b/%s", fake, name);
	CHECK_STR(cg.root[RT_CG_MEMORY], p);
	snprintf(p, sizeof(p), "%s/pids/%s", fake, name);
	CHECK_STR(cg.root[RT_CG_PIDS], p);
	/* The cpu root had no limit file: unusable, and removed. */
	CHECK(cg.root[RT_CG_CPU] == NULL);
	snprintf(p, sizeof(p), "%s/cpu/%s", fake, name);
	CHECK(access(p, F_OK) < 0);
	/* Now with a cpu root that can hold limits. */
	rt_cg_free(&cg);
	CHECK(mkdirs(p) == 0);
	snprintf(root, sizeof(root), "%s/cpu.cfs_quota_us", p);
	write_text(root, "-1\n");
	CHECK(rt_cg_open(&cg, fake, self, "w1", "/k") == 0);
	CHECK(cg.root[RT_CG_CPU] != NULL);

	CHECK(rt_cg_plan(&cg, "t:n:f:0.1", &lim, &plan) == 0);
	CHECK(plan.n > 0);
	CHECK(rt_cg_apply(&plan, &failed) == 0);
	rt_cg_plan_free(&plan);
	g = rt_cg_path(&cg, RT_CG_MEMORY, "t:n:f:0.1");
	CHECK_STR(read_text(g, "memory.limit_in_bytes"), "67108864");
	CHECK_STR(read_text(g, "memory.memsw.limit_in_bytes"), "67108864");
	CHECK_STR(read_text(g, "cgroup.procs"), "0");
	free(g);
	g = rt_cg_path(&cg, RT_CG_PIDS, "t:n:f:0.1");
	CHECK_STR(read_text(g, "pids.max"), "50");
	CHECK_STR(read_text(g, "cgroup.procs"), "0");
	free(g);
	g = rt_cg_path(&cg, RT_CG_CPU, "t:n:f:0.1");
	CHECK_STR(read_text(g, "cpu.cfs_period_us"), "100000");
	CHECK_STR(read_text(g, "cpu.cfs_quota_us"), "25000");
	CHECK_STR(read_text(g, "cgroup.procs"), "0");
	free(g);

	/* Only the limits asked for: no pids or cpu group. */
	lim.pids = 0;
	lim.cpu_millis = 0;
	CHECK(rt_cg_plan(&cg, "t:n:f:0.2", &lim, &plan) == 0);
	CHECK(rt_cg_apply(&plan, &failed) == 0);
	rt_cg_plan_free(&plan);
	g = rt_cg_path(&cg, RT_CG_PIDS, "t:n:f:0.2");
	CHECK(access(g, F_OK) < 0);
	free(g);
	/* No limit at all: nothing to join. */
	lim.memory_bytes = 0;
	CHECK(rt_cg_plan(&cg, "t:n:f:0.3", &lim, &plan) == 0 && plan.n == 0);
	rt_cg_free(&cg);
	snprintf(p, sizeof(p), "rm -rf %s", fake);
	CHECK(system(p) == 0);
}

TEST(cgroup_fake_v2)
{
	char fake[] = "/tmp/fnfs-cgv2-XXXXXX", own[4200], root[4400], p[4600],
	     name[128];
	const char *self = "0::/system.slice/fnfs.service\n";
	struct rt_cg_limits lim = { 64LL << 20, 50, 250 };
	struct rt_cg_plan plan;
	struct rt_cgroups cg;
	const char *failed = NULL;
	char *g;
	int i;

	CHECK(mkdtemp(fake) != NULL);
	rt_cg_root_name("w1", "/k", name, sizeof(name));
	snprintf(p, sizeof(p), "%s/cgroup.controllers", fake);
	write_text(p, "cpuset cpu io memory hugetlb pids rdma misc\n");
	snprintf(own, sizeof(own), "%s/system.slice/fnfs.service", fake);
	snprintf(root, sizeof(root), "%s/%s", own, name);
	CHECK(mkdirs(root) == 0);
	/* The kernel lists what the parent handed down. */
	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	write_text(p, "cpu memory pids\n");

	CHECK(rt_cg_open(&cg, fake, self, "w1", "/k") == 0);
	CHECK(cg.v2);
	for (i = 0; i < RT_CG_COUNT; i++)
		CHECK_STR(cg.root[i], root);
	CHECK_STR(read_text(own, "cgroup.subtree_control"),
		  "+memory +pids +cpu");
	CHECK_STR(read_text(root, "cgroup.subtree_control"),
		  "+memory +pids +cpu");

	CHECK(rt_cg_plan(&cg, "t:n:f:0.1", &lim, &plan) == 0);
	CHECK(rt_cg_apply(&plan, &failed) == 0);
	rt_cg_plan_free(&plan);
	g = rt_cg_path(&cg, RT_CG_CPU, "t:n:f:0.1");
	snprintf(p, sizeof(p), "%s/t:n:f:0.1", root);
	CHECK_STR(g, p);
	CHECK_STR(read_text(g, "memory.max"), "67108864");
	CHECK_STR(read_text(g, "memory.swap.max"), "0");
	CHECK_STR(read_text(g, "pids.max"), "50");
	CHECK_STR(read_text(g, "cpu.max"), "25000 100000");
	CHECK_STR(read_text(g, "cgroup.procs"), "0");
	free(g);
	/* One group, whatever the limits: one join. */
	{
		const char *roots[RT_CG_COUNT];

		CHECK(rt_cg_roots(&cg, roots) == 1);
	}
	rt_cg_free(&cg);

	/* A parent that hands down memory and pids only: no cpu. */
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", root);
	write_text(p, "");
	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	write_text(p, "memory pids\n");
	CHECK(rt_cg_open(&cg, fake, self, "w1", "/k") == 0);
	CHECK(cg.root[RT_CG_CPU] == NULL && cg.root[RT_CG_PIDS] != NULL);
	CHECK_STR(read_text(root, "cgroup.subtree_control"), "+memory +pids");
	CHECK(rt_cg_plan(&cg, "t:n:f:0.2", &lim, &plan) == 0);
	CHECK(rt_cg_apply(&plan, &failed) == 0);
	rt_cg_plan_free(&plan);
	g = rt_cg_path(&cg, RT_CG_PIDS, "t:n:f:0.2");
	CHECK_STR(read_text(g, "pids.max"), "50");
	CHECK_STR(read_text(g, "cpu.max"), "(none)");
	free(g);
	rt_cg_free(&cg);

	/* Nothing mounted there: no cgroups. */
	CHECK(rt_cg_paths(&cg, "/nonexistent", self, "w1", "/k") == -ENOENT);
	snprintf(p, sizeof(p), "rm -rf %s", fake);
	CHECK(system(p) == 0);
}

/* What rt_child_say writes through a pipe. */
static void said(int err, const char *a, const char *b, char *out, size_t n)
{
	int fd[2];
	ssize_t r;

	CHECK(pipe(fd) == 0);
	rt_child_say(fd[1], err, a, b, (char *)NULL);
	close(fd[1]);
	r = read(fd[0], out, n - 1);
	out[r > 0 ? r : 0] = '\0';
	close(fd[0]);
}

TEST(sandbox_child_say_is_one_line)
{
	char out[2048], big[1500];

	said(ENOENT, "cwd ", "/nowhere", out, sizeof(out));
	CHECK_STR(out, "fnfs: cwd /nowhere: No such file or directory\n");
	said(0, "cannot run ", "x", out, sizeof(out));
	CHECK_STR(out, "fnfs: cannot run x\n");
	/* Too long: cut, still one line. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	said(EACCES, "code ", big, out, sizeof(out));
	CHECK(strlen(out) == 1024 && out[1023] == '\n');
	CHECK(strncmp(out, "fnfs: code xxx", 14) == 0);
	CHECK(strchr(out, '\n') == out + 1023);
}

/* ------------------------------------ binds opened off the loop thread */

/* The hook in the open (binds.c): on a thread of the pool, as the
 * function's user, it waits (10 s at most) for the loop to say it kept
 * serving. Were the open on the loop thread, the loop could not say so. */
static int hold_rd = -1, hold_wr = -1, ticks, hook_calls;
static pid_t hook_tid, loop_tid;
static uid_t hook_fsuid, loop_fsuid = (uid_t)-1;
static int hook_released;

static void slow_open(const struct rt_sandbox *sb)
{
	struct pollfd p = { hold_rd, POLLIN, 0 };
	char c;

	(void)sb;
	hook_calls++;
	hook_tid = (pid_t)syscall(SYS_gettid);
	hook_fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
	if (poll(&p, 1, 10000) == 1 && read(hold_rd, &c, 1) == 1)
		hook_released = 1;
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
	/* The loop's own identity is the worker's meanwhile. */
	if (hook_calls > 0 && ++ticks == 3) {
		loop_fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
		if (write(hold_wr, "x", 1) < 0)
			return;
	}
}

static int hook_done(void)
{
	return hook_released;
}

static void hold_setup(uv_timer_t *tick)
{
	int fds[2];

	CHECK(pipe(fds) == 0);
	hold_rd = fds[0];
	hold_wr = fds[1];
	ticks = hook_calls = hook_released = 0;
	hook_tid = 0;
	loop_tid = (pid_t)syscall(SYS_gettid);
	rt_open_test_hook = slow_open;
	uv_timer_init(&loop, tick);
	uv_timer_start(tick, on_tick, 20, 20);
}

static void hold_teardown(uv_timer_t *tick)
{
	rt_open_test_hook = NULL;
	rt_open_timeout_ms = 5000;
	uv_close((uv_handle_t *)tick, NULL);
	close(hold_rd);
	close(hold_wr);
}

/* A slow open of a sandbox's cwd (held in the hook) runs on another
 * thread, as the function's user, while the loop goes on serving; the
 * instance then starts as usual. */
TEST(sandbox_open_off_the_loop)
{
	struct rt_instance *in;
	uv_timer_t tick;
	json_t *spec;
	char *log;

	if (!can_sandbox())
		return;
	setup();
	hold_setup(&tick);
	in = rt_instance_new(&sup, "t/n/f/0");
	CHECK(in != NULL);
	if (in == NULL)
		return;
	spec = sb_spec("echo started END", "never");
	CHECK(rt_instance_start(in, spec, 1) == 0);
	json_decref(spec);
	CHECK(in->opening != NULL && in->run == NULL);
	CHECK(run_until(hook_done, 8000));
	CHECK(ticks >= 3 && loop_fsuid == 0);
	CHECK(hook_tid != 0 && hook_tid != loop_tid);
	CHECK(hook_fsuid == NOBODY);
	want_exited = 1;
	CHECK(run_until(exited_enough, 8000));
	CHECK(rec.spawned == 1 && rec.failed_spawns == 0);
	log = log_of(in, "END");
	CHECK(strstr(log, "started END") != NULL);
	free(log);
	hold_teardown(&tick);
	teardown();
}

/* An open that takes longer than the limit fails the start with a
 * reason, at the limit; what it opens later is closed. */
TEST(sandbox_open_time_limit)
{
	struct rt_instance *in;
	uv_timer_t tick;

	if (!can_sandbox())
		return;
	setup();
	hold_setup(&tick);
	uv_timer_stop(&tick); /* nothing releases it before the limit */
	rt_open_timeout_ms = 100;
	in = start("t/n/f/0", sb_spec("echo started END", "never"));
	CHECK(rec.failed_spawns == 1 && rec.spawned == 0);
	CHECK(strstr(rec.why, "took over 100 ms") != NULL);
	CHECK(in->state == RT_FAILED && in->run == NULL);
	CHECK(strstr(in->reason, "took over 100 ms") != NULL);
	/* Let the thread go: its descriptors are closed once it ends
	 * (teardown's uv_loop_close checks nothing is left behind). */
	CHECK(write(hold_wr, "x", 1) == 1);
	CHECK(run_until(hook_done, 8000));
	run_for(100);
	hold_teardown(&tick);
	teardown();
}

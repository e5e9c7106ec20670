/*
 * test_forward.c - the controllers' link (sched/cluster/forward.c) over
 * loopback: a follower's requests reach a leader's --listen over TLS 1.3 with
 * certificates of the cluster CA and come back with their answers; a
 * worker's certificate is refused as a peer; a lost link and a change of
 * leader end what is in flight with EAGAIN; a log read comes back with
 * its content, or EFBIG when a reply cannot carry it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "../../runtime/base/ca.h"
#include "../../sched/workers/conn.h"
#include "../../sched/cluster/forward.h"
#include "../../sched/internal.h"
#include "../../sched/workers/listen.h"
#include "unit.h"

static uv_loop_t loop;
static char dirs[2][64];

static void dirs_remove(void)
{
	char cmd[160];
	int i;

	for (i = 0; i < 2; i++) {
		if (dirs[i][0] == '\0')
			continue;
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dirs[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "  could not remove %s\n", dirs[i]);
	}
}

/* What the leader's side saw, and how it answers. */
struct served {
	int writes, calls, reads;
	char path[256];
	char value[64];
	struct sched_caller who;
	uint32_t groups[4];
	int answer_err;		   /* the errno a write gets */
	struct sched_fwd_in *held; /* a call left unanswered */
	int hold;		   /* leave calls unanswered */
	struct sched *s;
};

static void keep(struct served *v, const char *path, const char *buf,
		 size_t len, const struct sched_caller *who)
{
	int i;

	snprintf(v->path, sizeof(v->path), "%s", path);
	snprintf(v->value, sizeof(v->value), "%.*s", (int)len, buf);
	v->who = *who;
	for (i = 0; i < who->ngroups && i < 4; i++)
		v->groups[i] = who->groups[i];
}

static void serve_write(void *arg, struct sched_fwd_in *in, const char *path,
			const char *buf, size_t len,
			const struct sched_caller *who)
{
	struct served *v = arg;

	v->writes++;
	keep(v, path, buf, len, who);
	sched_fwd_answer(v->s, in, v->answer_err,
			 v->answer_err ? "2026-01-01T00:00:00Z no way\n" : NULL,
			 NULL, 0);
}

static void serve_call(void *arg, struct sched_fwd_in *in, const char *path,
		       const char *body, size_t len,
		       const struct sched_caller *who, int async)
{
	struct served *v = arg;
	char out[128];
	int n;

	(void)async;
	v->calls++;
	keep(v, path, body, len, who);
	if (v->hold) {
		v->held = in;
		return;
	}
	n = snprintf(out, sizeof(out), "echo:%.*s", (int)len, body);
	sched_fwd_answer(v->s, in, 0, NULL, out, (size_t)n);
}

/* A read: the path's "log", or more than a reply carries for ".../big". */
static void serve_read(void *arg, struct sched_fwd_in *in, const char *path,
		       const struct sched_caller *who)
{
	struct served *v = arg;
	size_t n = strlen(path), big = RT_WIRE_BODY_MAX + 1;
	char out[300], *b;

	v->reads++;
	keep(v, path, "", 0, who);
	if (n > 4 && strcmp(path + n - 4, "/big") == 0) {
		b = malloc(big);
		CHECK(b != NULL);
		if (b == NULL)
			return;
		memset(b, 'x', big);
		sched_fwd_answer(v->s, in, 0, NULL, b, big);
		free(b);
		return;
	}
	n = (size_t)snprintf(out, sizeof(out), "log of %s\n", path);
	sched_fwd_answer(v->s, in, 0, NULL, out, n);
}

static const struct sched_fwd_serve_ops ops = { serve_write, serve_call,
						serve_read };

/* One answer on the follower. */
struct answer {
	int done;
	int err;
	char body[128];
};

static void on_answer(void *arg, int err, const char *body, size_t len)
{
	struct answer *a = arg;

	a->done = 1;
	a->err = err;
	snprintf(a->body, sizeof(a->body), "%.*s", (int)len, body ? body : "");
}

/* Runs the loop until `*flag` or `ms` pass. */
static void run_until(int *flag, int ms)
{
	int64_t end = rt_mono_ms() + ms;

	while (!*flag && rt_mono_ms() < end)
		uv_run(&loop, UV_RUN_NOWAIT), usleep(1000);
}

static void shut(void *arg)
{
	(*(int *)arg)++;
}

/* A leader `a` with --listen on a free port and the CA, and a follower
 * `b` with a copy of the CA that forwards to it. */
static void pair_start(struct sched **a, struct sched **b, struct served *v)
{
	struct sched_options opt = { 0 };
	struct rt_buf msg = { 0 };
	char cmd[256];
	int i;

	for (i = 0; i < 2; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "/tmp/fnfs-unit.XXXXXX");
		CHECK(mkdtemp(dirs[i]) != NULL);
	}
	atexit(dirs_remove);
	CHECK(rt_ca_init_dir(dirs[0], &msg) == 0);
	snprintf(cmd, sizeof(cmd), "cp -a '%s/ca' '%s/ca'", dirs[0], dirs[1]);
	CHECK(system(cmd) == 0);
	CHECK(uv_loop_init(&loop) == 0);
	CHECK(sched_open(a, dirs[0]) == 0);
	CHECK(sched_open(b, dirs[1]) == 0);
	opt.workers = 0;
	opt.self = "/bin/false";
	opt.listen = "127.0.0.1:0";
	CHECK(sched_start(*a, &loop, &opt) == 0);
	opt.listen = NULL;
	CHECK(sched_start(*b, &loop, &opt) == 0);
	CHECK(sched_fwd_setup(*a, "a", 0) == 0);
	CHECK(sched_fwd_setup(*b, "b", 0) == 0);
	memset(v, 0, sizeof(*v));
	v->s = *a;
	sched_fwd_serve(*a, &ops, v);
	sched__fwd_target(*b, "a", (*a)->links.listen->addr);
	rt_buf_free(&msg);
}

static void pair_stop(struct sched *a, struct sched *b)
{
	int done = 0;

	sched_fwd_close(b);
	sched_fwd_close(a);
	sched_shutdown(a, shut, &done);
	sched_shutdown(b, shut, &done);
	run_until(&done, 20000);
	done = done >= 2;
	uv_run(&loop, UV_RUN_NOWAIT);
	sched_close(a);
	sched_close(b);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
}

TEST(forward_write_and_call_over_tls)
{
	struct sched *a, *b;
	struct served v;
	struct answer w = { 0 }, c = { 0 }, r = { 0 };
	struct sched_fwd *f;
	uint32_t groups[2] = { 4242, 4343 };
	struct sched_caller who = { 1000, 1001, groups, 2 };

	pair_start(&a, &b, &v);
	CHECK(sched_fwd_active(b));
	CHECK(sched_fwd_write(b, "workers/pool_size", "3\n", 2, &who, on_answer,
			      &w, &f) == SCHED_LATER);
	CHECK(sched_fwd_call(b, "tenants/t/ns/fn/invoke", "hello", 5, &who,
			     on_answer, &c, &f) == SCHED_LATER);
	run_until(&c.done, 20000);
	run_until(&w.done, 5000);
	CHECK(w.done && w.err == 0);
	CHECK(c.done && c.err == 0);
	CHECK_STR(c.body, "echo:hello");
	CHECK(v.writes == 1 && v.calls == 1);
	CHECK_STR(v.path, "tenants/t/ns/fn/invoke");
	CHECK(v.who.uid == 1000 && v.who.gid == 1001 && v.who.ngroups == 2);
	CHECK(v.groups[0] == 4242 && v.groups[1] == 4343);

	/* A refusal comes back with its errno, on the link kept open. */
	v.answer_err = EACCES;
	CHECK(sched_fwd_write(b, "workers/w1/state", "drain", 5, &who,
			      on_answer, &r, &f) == SCHED_LATER);
	run_until(&r.done, 20000);
	CHECK(r.done && r.err == EACCES);
	CHECK_STR(v.value, "drain");
	CHECK_STR(sched__fwd_last_error(b), "");
	pair_stop(a, b);
}

TEST(forward_read_of_a_log)
{
	struct sched *a, *b;
	struct served v;
	struct answer r = { 0 }, big = { 0 };
	struct sched_fwd *f;
	struct sched_caller who = { 1000, 1001, NULL, 0 };

	pair_start(&a, &b, &v);
	CHECK(sched_fwd_read(b, "tenants/t/ns/fn/instances/0/log", &who,
			     on_answer, &r, &f) == SCHED_LATER);
	run_until(&r.done, 20000);
	CHECK(r.done && r.err == 0);
	CHECK_STR(r.body, "log of tenants/t/ns/fn/instances/0/log\n");
	CHECK(v.reads == 1 && v.who.uid == 1000 && v.who.gid == 1001);
	/* More than a frame carries: refused on the leader, EFBIG. */
	CHECK(sched_fwd_read(b, "tenants/t/ns/fn/big", &who, on_answer, &big,
			     &f) == SCHED_LATER);
	run_until(&big.done, 20000);
	CHECK(big.done && big.err == EFBIG && big.body[0] == '\0');
	pair_stop(a, b);
}

TEST(forward_worker_certificate_is_refused_as_a_peer)
{
	struct sched *a, *b;
	struct served v;
	struct answer w = { 0 };
	struct sched_fwd *f;
	struct sched_caller who = { 0, 0, NULL, 0 };

	pair_start(&a, &b, &v);
	sched__fwd_cert_role(b, RT_CA_ROLE_WORKER, "peer");
	CHECK(sched_fwd_write(b, "workers/pool_size", "3", 1, &who, on_answer,
			      &w, &f) == SCHED_LATER);
	run_until(&w.done, 20000);
	CHECK(w.done && w.err == EAGAIN);
	CHECK(v.writes == 0);
	CHECK(strstr(sched__fwd_last_error(b),
		     "a worker may not act as a peer controller") != NULL);
	pair_stop(a, b);
}

TEST(forward_controller_certificate_may_not_register_as_a_worker)
{
	struct sched *a, *b;
	struct served v;
	struct answer w = { 0 };
	struct sched_fwd *f;
	struct sched_caller who = { 0, 0, NULL, 0 };

	pair_start(&a, &b, &v);
	sched__fwd_cert_role(b, RT_CA_ROLE_CONTROLLER, "register");
	CHECK(sched_fwd_write(b, "workers/pool_size", "3", 1, &who, on_answer,
			      &w, &f) == SCHED_LATER);
	run_until(&w.done, 20000);
	CHECK(w.done && w.err == EAGAIN);
	CHECK(strstr(sched__fwd_last_error(b),
		     "a controller's certificate may not register as a "
		     "worker") != NULL);
	CHECK(a->pool.children.count == 0); /* no worker b */
	pair_stop(a, b);
}

TEST(forward_leader_change_and_lost_link_end_with_eagain)
{
	struct sched *a, *b;
	struct served v;
	struct answer c1 = { 0 }, c2 = { 0 }, c3 = { 0 };
	struct sched_fwd *f;
	struct sched_caller who = { 0, 0, NULL, 0 };
	int64_t t0;

	pair_start(&a, &b, &v);
	v.hold = 1;
	CHECK(sched_fwd_call(b, "tenants/t/ns/fn/invoke", "x", 1, &who,
			     on_answer, &c1, &f) == SCHED_LATER);
	run_until(&v.calls, 20000);
	CHECK(v.calls == 1 && !c1.done);
	/* Another leader: what was in flight ends at the next check. */
	t0 = rt_mono_ms();
	sched__fwd_target(b, "c", "127.0.0.1:1");
	run_until(&c1.done, 2000);
	CHECK(c1.done && c1.err == EAGAIN);
	CHECK(rt_mono_ms() - t0 < 1000);
	CHECK(strstr(sched__fwd_last_error(b), "the leader changed") != NULL);
	/* The leader answers into the void (and frees it). */
	sched_fwd_answer(a, v.held, 0, NULL, "late", 4);
	v.held = NULL;
	/* Nobody listens there: refused at once, EAGAIN too. */
	CHECK(sched_fwd_call(b, "tenants/t/ns/fn/invoke", "y", 1, &who,
			     on_answer, &c2, &f) == SCHED_LATER);
	run_until(&c2.done, 20000);
	CHECK(c2.done && c2.err == EAGAIN);
	/* Back to a: linked again; then the leader goes. */
	sched__fwd_target(b, "a", a->links.listen->addr);
	CHECK(sched_fwd_call(b, "tenants/t/ns/fn/invoke", "z", 1, &who,
			     on_answer, &c3, &f) == SCHED_LATER);
	run_until(&v.calls, 20000);
	while (v.calls < 2 && !c3.done)
		run_until(&c3.done, 100);
	CHECK(v.calls == 2 && !c3.done);
	/* The link is cut on the leader's side: EAGAIN, at once. */
	t0 = rt_mono_ms();
	sched__conn_close_all(a);
	run_until(&c3.done, 3000);
	CHECK(c3.done && c3.err == EAGAIN);
	CHECK(rt_mono_ms() - t0 < 1000);
	CHECK(strstr(sched__fwd_last_error(b), "closed") != NULL);
	sched_fwd_answer(a, v.held, 0, NULL, NULL, 0); /* into the void */
	v.held = NULL;
	pair_stop(a, b);
}

/*
 * test_etcd.c - the etcd client (sched/store/etcd/etcd.h) against a real etcd:
 * each test starts one member of Debian's etcd-server on free loopback ports
 * with its data in a new directory under /var/tmp, drives the client on a
 * libuv loop with every wait bounded, and kills the member by pid at the
 * end (it also dies with the test's process: PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../../runtime/base/code.h"
#include "../../sched/store/etcd/code_etcd.h"
#include "../../sched/store/etcd/etcd.h"
#include "../../sched/store/etcd/etcd_keys.h"
#include "unit.h"

/* ------------------------------------------------------------ a member */

struct live {
	pid_t pid;	 /* the etcd member */
	char dir[64];	 /* its data directory's parent, ours */
	char client[64]; /* http://127.0.0.1:PORT */
	char peer[64];	 /* its peer URL */
	int tls;	 /* https, client certificates required */
	char ca[96], cert[96], key[96]; /* the PEM files, when tls */
	uv_loop_t loop;
	struct etcd_client *c; /* a client of it */
};

/* A free TCP port on 127.0.0.1 (bound to 0, then let go). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Makes a CA, a certificate for the member (127.0.0.1) and one for the
 * client in l->dir, with openssl. Returns 0 or -EIO. */
static int make_certs(struct live *l)
{
	static const char script[] =
		"set -e; cd \"$1\"\n"
		"k='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'\n"
		"openssl req -x509 $k -keyout ca.key -out ca.pem -days 1 "
		"-subj /CN=fnfs-test-ca\n"
		"for n in server client; do\n"
		"  openssl req $k -keyout $n.key -out $n.csr -subj /CN=$n\n"
		"done\n"
		"printf 'subjectAltName=IP:127.0.0.1\\n"
		"extendedKeyUsage=serverAuth,clientAuth\\n' >server.ext\n"
		"printf 'extendedKeyUsage=clientAuth\\n' >client.ext\n"
		"for n in server client; do\n"
		"  openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key "
		"-CAcreateserial -out $n.pem -days 1 -extfile $n.ext\n"
		"done\n";
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execlp("sh", "sh", "-c", script, "sh", l->dir, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || status != 0)
		return -EIO;
	snprintf(l->ca, sizeof(l->ca), "%s/ca.pem", l->dir);
	snprintf(l->cert, sizeof(l->cert), "%s/client.pem", l->dir);
	snprintf(l->key, sizeof(l->key), "%s/client.key", l->dir);
	return 0;
}

/* Starts the member (again, on the same directory and ports when it ran
 * before). */
static int member_run(struct live *l)
{
	char data[96], peers[96], scert[96], skey[96];
	const char *argv[32];
	int n = 0;

	snprintf(data, sizeof(data), "%s/m", l->dir);
	snprintf(peers, sizeof(peers), "m=%s", l->peer);
	snprintf(scert, sizeof(scert), "%s/server.pem", l->dir);
	snprintf(skey, sizeof(skey), "%s/server.key", l->dir);
	argv[n++] = "etcd";
	argv[n++] = "--name";
	argv[n++] = "m";
	argv[n++] = "--data-dir";
	argv[n++] = data;
	argv[n++] = "--listen-client-urls";
	argv[n++] = l->client;
	argv[n++] = "--advertise-client-urls";
	argv[n++] = l->client;
	argv[n++] = "--listen-peer-urls";
	argv[n++] = l->peer;
	argv[n++] = "--initial-advertise-peer-urls";
	argv[n++] = l->peer;
	argv[n++] = "--initial-cluster";
	argv[n++] = peers;
	if (l->tls) {
		argv[n++] = "--cert-file";
		argv[n++] = scert;
		argv[n++] = "--key-file";
		argv[n++] = skey;
		argv[n++] = "--trusted-ca-file";
		argv[n++] = l->ca;
		argv[n++] = "--client-cert-auth";
	}
	argv[n] = NULL;
	l->pid = fork();
	if (l->pid < 0)
		return -errno;
	if (l->pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp("etcd", (char **)argv);
		_exit(127);
	}
	return 0;
}

/* The loop the test runs. Each callback that sets a flag stops it, so
 * that a UV_RUN_ONCE turn whose timers phase answered a call (curl may
 * send and read a whole exchange in one step) returns instead of
 * polling on until the next event. */
static uv_loop_t *test_loop;

static void wake(void)
{
	if (test_loop != NULL)
		uv_stop(test_loop);
}

/* Runs the loop until *flag is set or `ms` have passed. Returns 0 or
 * -ETIMEDOUT. */
static void on_bound(uv_timer_t *t)
{
	wake();
	*(int *)t->data = 1;
}

static void on_closed(uv_handle_t *h)
{
	*(int *)h->data = 1;
}

static int wait_for(struct live *l, const int *flag, int ms)
{
	uv_timer_t t;
	int expired = 0, closed = 0;

	uv_timer_init(&l->loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_bound, (uint64_t)ms, 0);
	while (!*flag && !expired)
		uv_run(&l->loop, UV_RUN_ONCE);
	t.data = &closed;
	uv_close((uv_handle_t *)&t, on_closed);
	while (!closed) /* a turn with the stop flag set runs nothing */
		uv_run(&l->loop, UV_RUN_NOWAIT);
	return *flag ? 0 : -ETIMEDOUT;
}

/* What a callback got, copied out of the answer. */
struct got {
	int done;
	int rc;
	char error[256];
	int succeeded;
	int64_t revision;
	size_t nkvs;
	char key[128], value[128]; /* the first kv's */
	int64_t mod_revision, create_revision;
	int64_t lease_id, ttl, deleted;
	struct etcd_kv leader; /* owned copy */
};

static void got_cb(void *arg, const struct etcd_answer *a)
{
	struct got *g = arg;

	wake();
	g->done = 1;
	g->rc = a->rc;
	snprintf(g->error, sizeof(g->error), "%s", a->error ? a->error : "");
	g->succeeded = a->succeeded;
	g->revision = a->header.revision;
	g->nkvs = a->nkvs;
	if (a->nkvs > 0) {
		snprintf(g->key, sizeof(g->key), "%s", a->kvs[0].key);
		snprintf(g->value, sizeof(g->value), "%s", a->kvs[0].value);
		g->mod_revision = a->kvs[0].mod_revision;
		g->create_revision = a->kvs[0].create_revision;
	}
	g->lease_id = a->lease_id;
	g->ttl = a->ttl;
	g->deleted = a->deleted;
	etcd_kv_clear(&g->leader);
	if (a->leader.key != NULL) {
		g->leader = a->leader;
		g->leader.key = malloc(a->leader.key_len + 1);
		memcpy(g->leader.key, a->leader.key, a->leader.key_len + 1);
		g->leader.value = strdup(a->leader.value ? a->leader.value
							 : "");
	}
}

/* Empties `g` for another call. */
static void got_reset(struct got *g)
{
	etcd_kv_clear(&g->leader);
	memset(g, 0, sizeof(*g));
}

/* Waits (at most 8 s) for the call that returned `rc` to answer. */
static int await(struct live *l, int rc, struct got *g)
{
	CHECK(rc == 0);
	if (rc < 0)
		return rc;
	CHECK(wait_for(l, &g->done, 8000) == 0);
	return g->rc;
}

/* Starts the member and a client, and waits (at most 15 s) until a
 * read through the client succeeds. */
static int dead_ms;	     /* the clients' dead_ms (0: the default) */
static struct live *running; /* the member to end if the test times out */

/* The runner's time limit (SIGALRM) ends the test: the member is killed
 * and its directory removed first (async-signal-safe calls only), then
 * the signal is raised again so that the runner reports the timeout. */
static void on_alarm(int sig)
{
	struct live *l = running;
	pid_t rm;

	if (l != NULL && l->pid > 0) {
		kill(l->pid, SIGKILL);
		waitpid(l->pid, NULL, 0);
	}
	if (l != NULL && l->dir[0] != '\0') {
		rm = fork();
		if (rm == 0) {
			char *argv[] = { "rm", "-rf", "--", l->dir, NULL };

			execve("/bin/rm", argv, (char *[]){ NULL });
			_exit(127);
		}
		if (rm > 0)
			waitpid(rm, NULL, 0);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int live_start_tls(struct live *l, int timeout_ms, int tls)
{
	struct etcd_config cfg = { 0 };
	int rc, i;

	memset(l, 0, sizeof(*l));
	uv_loop_init(&l->loop);
	test_loop = &l->loop;
	snprintf(l->dir, sizeof(l->dir), "/var/tmp/fnfs-unit-etcd.XXXXXX");
	if (mkdtemp(l->dir) == NULL) {
		l->dir[0] = '\0';
		return -errno;
	}
	running = l;
	signal(SIGALRM, on_alarm);
	l->tls = tls;
	if (tls && (rc = make_certs(l)) < 0)
		return rc;
	snprintf(l->client, sizeof(l->client), "%s://127.0.0.1:%d",
		 tls ? "https" : "http", free_port());
	snprintf(l->peer, sizeof(l->peer), "http://127.0.0.1:%d", free_port());
	rc = member_run(l);
	if (rc < 0)
		return rc;
	cfg.endpoints = l->client;
	cfg.timeout_ms = timeout_ms;
	cfg.dead_ms = dead_ms;
	if (tls) {
		cfg.ca = l->ca;
		cfg.cert = l->cert;
		cfg.key = l->key;
	}
	rc = etcd_client_new(&l->loop, &cfg, &l->c);
	if (rc < 0)
		return rc;
	for (i = 0; i < 150; i++) {
		struct got g = { 0 };

		rc = await(l, etcd_range(l->c, "/", NULL, 0, 1, got_cb, &g),
			   &g);
		if (rc == 0)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "  etcd did not answer at %s: %s\n", l->client,
		strerror(-rc));
	return rc;
}

static int live_start(struct live *l, int timeout_ms)
{
	return live_start_tls(l, timeout_ms, 0);
}

static void member_kill(struct live *l)
{
	if (l->pid > 0) {
		kill(l->pid, SIGKILL);
		waitpid(l->pid, NULL, 0);
		l->pid = 0;
	}
}

/* Ends the client, kills the member by pid, removes its directory. */
static void live_stop(struct live *l)
{
	pid_t rm;
	int i;

	etcd_client_free(l->c);
	l->c = NULL;
	for (i = 0; i < 100 && uv_run(&l->loop, UV_RUN_NOWAIT) != 0; i++)
		;
	CHECK(uv_loop_close(&l->loop) == 0);
	test_loop = NULL;
	member_kill(l);
	rm = fork();
	if (rm == 0) {
		execlp("rm", "rm", "-rf", "--", l->dir, (char *)NULL);
		_exit(127);
	}
	if (rm > 0)
		waitpid(rm, NULL, 0);
	running = NULL;
}

/* POSTs `body` to the member's `path` with a blocking curl (the test's
 * own side channel, not the client under test). */
static int raw_post(struct live *l, const char *path, const char *body)
{
	char url[128];
	CURL *e = curl_easy_init();
	CURLcode rc;
	FILE *null = fopen("/dev/null", "w");

	snprintf(url, sizeof(url), "%s%s", l->client, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, null);
	rc = curl_easy_perform(e);
	curl_easy_cleanup(e);
	fclose(null);
	return rc == CURLE_OK ? 0 : -EIO;
}

/* ------------------------------------------------------------- tests */

TEST(etcd_live_kv_and_cas)
{
	struct live l;
	struct got g = { 0 }, h = { 0 }, k = { 0 }, m = { 0 }, n = { 0 };
	char end[48];
	int64_t rev;

	if (live_start(&l, 3000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	CHECK(await(&l, etcd_put(l.c, "/fnfs/t/f", "v1", 2, 0, got_cb, &g),
		    &g) == 0);
	rev = g.revision;
	CHECK(rev > 1);
	CHECK(await(&l, etcd_put(l.c, "/fnfs/t/g", "w", 1, 0, got_cb, &h),
		    &h) == 0);
	got_reset(&g);
	etcd_prefix_end("/fnfs/t/", end);
	CHECK(await(&l, etcd_range(l.c, "/fnfs/t/", end, 0, 0, got_cb, &g),
		    &g) == 0);
	CHECK(g.nkvs == 2);
	CHECK_STR(g.key, "/fnfs/t/f");
	CHECK_STR(g.value, "v1");
	CHECK(g.mod_revision == rev && g.create_revision == rev);

	/* Compare-and-set on mod_revision: wins with the right revision. */
	{
		struct etcd_cmp cmp = { .key = "/fnfs/t/f",
					.target = ETCD_MOD,
					.number = rev };
		struct etcd_op put = { .kind = ETCD_OP_PUT,
				       .key = "/fnfs/t/f",
				       .value = "v2",
				       .value_len = 2 };
		struct etcd_op get = { .kind = ETCD_OP_RANGE,
				       .key = "/fnfs/t/f" };

		CHECK(await(&l,
			    etcd_txn(l.c, &cmp, 1, &put, 1, &get, 1, got_cb,
				     &k),
			    &k) == 0);
		CHECK(k.succeeded);
		CHECK(k.revision > rev);
		/* ...and loses, with no error, on the stale one; the
		 * failure branch reads the value that won. */
		CHECK(await(&l,
			    etcd_txn(l.c, &cmp, 1, &put, 1, &get, 1, got_cb,
				     &m),
			    &m) == 0);
		CHECK(!m.succeeded);
		CHECK(m.nkvs == 1);
		CHECK_STR(m.value, "v2");
		CHECK(m.mod_revision == k.revision);
	}
	/* Create-if-absent: create_revision == 0. */
	{
		struct etcd_cmp absent = { .key = "/fnfs/t/g",
					   .target = ETCD_CREATE };
		struct etcd_op put = { .kind = ETCD_OP_PUT,
				       .key = "/fnfs/t/g",
				       .value = "x",
				       .value_len = 1 };

		got_reset(&m);
		CHECK(await(&l,
			    etcd_txn(l.c, &absent, 1, &put, 1, NULL, 0, got_cb,
				     &m),
			    &m) == 0);
		CHECK(!m.succeeded);
	}
	CHECK(await(&l, etcd_delete(l.c, "/fnfs/t/", end, got_cb, &n), &n) ==
	      0);
	CHECK(n.deleted == 2);
	got_reset(&g);
	CHECK(await(&l, etcd_range(l.c, "/fnfs/t/", end, 0, 0, got_cb, &g),
		    &g) == 0);
	CHECK(g.nkvs == 0);
	/* An old revision is still readable, until compacted. */
	got_reset(&g);
	CHECK(await(&l, etcd_range(l.c, "/fnfs/t/f", NULL, rev, 0, got_cb, &g),
		    &g) == 0);
	CHECK_STR(g.value, "v1");
	snprintf(end, sizeof(end), "{\"revision\":\"%lld\"}",
		 (long long)rev + 1);
	CHECK(raw_post(&l, "/v3/kv/compaction", end) == 0);
	got_reset(&g);
	CHECK(await(&l, etcd_range(l.c, "/fnfs/t/f", NULL, rev, 0, got_cb, &g),
		    &g) == -ERANGE);
	CHECK(strstr(g.error, "compacted") != NULL);
	live_stop(&l);
}

/* A watch's messages, as a string. */
struct watched {
	char text[512];
	int created, ended, rc, after_end;
	int64_t compact_revision;
	int stop_after; /* events seen before it frees itself (0: never) */
	int events;
	struct etcd_watch *w;
};

static void on_watch(void *arg, const struct etcd_answer *a)
{
	struct watched *s = arg;
	size_t i, n = strlen(s->text);

	wake();
	if (s->ended)
		s->after_end++;
	if (a->rc < 0) {
		s->ended = 1;
		s->rc = a->rc;
		s->compact_revision = a->compact_revision;
		return;
	}
	s->created |= a->created;
	for (i = 0; i < a->nevents; i++, s->events++)
		n += (size_t)snprintf(s->text + n, sizeof(s->text) - n,
				      "%s%s=%s ", a->deletes[i] ? "-" : "+",
				      a->events[i].key, a->events[i].value);
	if (s->stop_after > 0 && s->events >= s->stop_after) {
		etcd_watch_free(s->w);
		s->w = NULL;
		s->ended = 1; /* nothing may follow */
	}
}

TEST(etcd_live_watch)
{
	struct live l;
	struct watched s = { .stop_after = 3 }, t = { 0 };
	struct got g = { 0 }, h = { 0 };
	int64_t from, revx = 0;
	char body[64];

	if (live_start(&l, 3000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	CHECK(await(&l, etcd_put(l.c, "/w/a", "0", 1, 0, got_cb, &g), &g) == 0);
	from = g.revision + 1;
	CHECK(etcd_watch(l.c, "/w/", "/w0", from, 0, on_watch, &s, &s.w) == 0);
	CHECK(wait_for(&l, &s.created, 5000) == 0);
	got_reset(&g);
	CHECK(await(&l, etcd_put(l.c, "/w/a", "1", 1, 0, got_cb, &g), &g) == 0);
	got_reset(&g);
	CHECK(await(&l, etcd_put(l.c, "/x", "no", 2, 0, got_cb, &g), &g) == 0);
	revx = g.revision;
	got_reset(&g);
	CHECK(await(&l, etcd_put(l.c, "/w/b", "2", 1, 0, got_cb, &g), &g) == 0);
	got_reset(&g);
	CHECK(await(&l, etcd_delete(l.c, "/w/a", NULL, got_cb, &g), &g) == 0);
	/* The third event frees the watch from inside its callback. */
	CHECK(wait_for(&l, &s.ended, 5000) == 0);
	CHECK_STR(s.text, "+/w/a=1 +/w/b=2 -/w/a= ");
	got_reset(&g);
	CHECK(await(&l, etcd_put(l.c, "/w/c", "3", 1, 0, got_cb, &g), &g) == 0);
	CHECK(s.after_end == 0);

	/* A watch from before a compaction ends with -ERANGE and the
	 * compact revision to read from again. */
	snprintf(body, sizeof(body), "{\"revision\":\"%lld\"}",
		 (long long)revx);
	CHECK(raw_post(&l, "/v3/kv/compaction", body) == 0);
	CHECK(etcd_watch(l.c, "/w/", "/w0", from, 0, on_watch, &t, &t.w) == 0);
	CHECK(wait_for(&l, &t.ended, 5000) == 0);
	CHECK(t.rc == -ERANGE);
	CHECK(t.compact_revision == revx);
	etcd_watch_free(t.w);

	/* A watch whose member dies ends with -EIO. */
	memset(&t, 0, sizeof(t));
	CHECK(etcd_watch(l.c, "/w/", "/w0", 0, 0, on_watch, &t, &t.w) == 0);
	CHECK(wait_for(&l, &t.created, 5000) == 0);
	member_kill(&l);
	CHECK(wait_for(&l, &t.ended, 5000) == 0);
	CHECK(t.rc == -EIO);
	etcd_watch_free(t.w);
	got_reset(&h);
	CHECK(await(&l, etcd_put(l.c, "/w/d", "4", 1, 0, got_cb, &h), &h) ==
	      -EIO);
	CHECK(strstr(h.error, l.client + 7) != NULL);
	live_stop(&l);
}

/* Keepalives every 500 ms while `on` is set. */
struct keeper {
	struct live *l;
	int64_t id;
	int on, sent, answered, lost;
	int64_t ttl;
	uv_timer_t t;
};

static void on_kept(void *arg, const struct etcd_answer *a)
{
	struct keeper *k = arg;

	wake();
	k->answered++;
	if (a->rc == -ENOENT)
		k->lost = 1;
	else if (a->rc == 0)
		k->ttl = a->ttl;
}

static void keep_tick(uv_timer_t *t)
{
	struct keeper *k = t->data;

	if (k->on && etcd_lease_keepalive(k->l->c, k->id, on_kept, k) == 0)
		k->sent++;
}

/* Runs the loop for `ms`. */
static void run_for(struct live *l, int ms)
{
	int never = 0;

	(void)wait_for(l, &never, ms);
}

TEST(etcd_live_lease)
{
	struct live l;
	struct got g = { 0 }, p = { 0 }, r = { 0 }, q = { 0 };
	struct keeper k = { 0 };
	int i;

	if (live_start(&l, 3000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	CHECK(await(&l, etcd_lease_grant(l.c, 2, got_cb, &g), &g) == 0);
	CHECK(g.lease_id != 0 && g.ttl == 2);
	CHECK(await(&l, etcd_put(l.c, "/l/k", "v", 1, g.lease_id, got_cb, &p),
		    &p) == 0);
	/* Kept alive for 3 s (longer than its TTL), it lives. */
	k.l = &l;
	k.id = g.lease_id;
	k.on = 1;
	uv_timer_init(&l.loop, &k.t);
	k.t.data = &k;
	uv_timer_start(&k.t, keep_tick, 0, 500);
	run_for(&l, 3000);
	CHECK(k.sent >= 5 && k.answered >= 5);
	CHECK(k.ttl == 2 && !k.lost);
	got_reset(&r);
	CHECK(await(&l, etcd_range(l.c, "/l/k", NULL, 0, 0, got_cb, &r), &r) ==
	      0);
	CHECK(r.nkvs == 1);
	/* Left alone, it expires with its key; a keepalive says so. */
	k.on = 0;
	for (i = 0; i < 60; i++) {
		got_reset(&r);
		CHECK(await(&l, etcd_range(l.c, "/l/k", NULL, 0, 0, got_cb, &r),
			    &r) == 0);
		if (r.nkvs == 0)
			break;
		run_for(&l, 100);
	}
	CHECK(r.nkvs == 0);
	CHECK(i > 5); /* not gone at once: it expired */
	k.on = 1;
	k.answered = 0;
	keep_tick(&k.t);
	k.on = 0;
	CHECK(wait_for(&l, &k.answered, 5000) == 0);
	CHECK(k.lost);
	uv_close((uv_handle_t *)&k.t, NULL);

	/* A revoked lease takes its keys at once; revoking again fails. */
	got_reset(&g);
	CHECK(await(&l, etcd_lease_grant(l.c, 60, got_cb, &g), &g) == 0);
	got_reset(&p);
	CHECK(await(&l, etcd_put(l.c, "/l/r", "v", 1, g.lease_id, got_cb, &p),
		    &p) == 0);
	got_reset(&q);
	CHECK(await(&l, etcd_lease_revoke(l.c, g.lease_id, got_cb, &q), &q) ==
	      0);
	got_reset(&r);
	CHECK(await(&l, etcd_range(l.c, "/l/r", NULL, 0, 0, got_cb, &r), &r) ==
	      0);
	CHECK(r.nkvs == 0);
	got_reset(&q);
	CHECK(await(&l, etcd_lease_revoke(l.c, g.lease_id, got_cb, &q), &q) ==
	      -ENOENT);
	live_stop(&l);
}

TEST(etcd_live_election)
{
	struct live l;
	struct got l1 = { 0 }, l2 = { 0 }, c1 = { 0 }, c2 = { 0 }, w = { 0 };
	struct got r = { 0 }, c3 = { 0 }, z = { 0 }, l3 = { 0 };
	int64_t start;

	if (live_start(&l, 3000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	CHECK(await(&l, etcd_lease_grant(l.c, 10, got_cb, &l1), &l1) == 0);
	CHECK(await(&l, etcd_lease_grant(l.c, 10, got_cb, &l2), &l2) == 0);
	CHECK(await(&l, etcd_lease_grant(l.c, 10, got_cb, &l3), &l3) == 0);
	CHECK(await(&l, etcd_leader(l.c, "/el", got_cb, &z), &z) == -ENOENT);
	CHECK(await(&l,
		    etcd_campaign(l.c, "/el", l1.lease_id, "ctl-1", 5, 0,
				  got_cb, &c1),
		    &c1) == 0);
	CHECK(c1.leader.key != NULL && strncmp(c1.leader.key, "/el/", 4) == 0);
	CHECK(c1.leader.lease == l1.lease_id && c1.leader.mod_revision > 0);
	CHECK(await(&l, etcd_leader(l.c, "/el", got_cb, &w), &w) == 0);
	CHECK_STR(w.leader.value, "ctl-1");
	CHECK_STR(w.leader.key, c1.leader.key);
	/* A second candidate waits while the first leads: bounded. */
	start = rt_mono_ms();
	CHECK(await(&l,
		    etcd_campaign(l.c, "/el", l2.lease_id, "ctl-2", 5, 800,
				  got_cb, &c2),
		    &c2) == -ETIMEDOUT);
	CHECK(rt_mono_ms() - start < 3000);
	/* The first resigns: nobody leads, and the second wins. It
	 * campaigns on a new lease: etcd withdraws a campaign that timed
	 * out by deleting its key (named after its lease) some time after,
	 * which would take a new campaign's key on the same lease with it. */
	CHECK(await(&l, etcd_resign(l.c, "/el", &c1.leader, got_cb, &r), &r) ==
	      0);
	got_reset(&z);
	CHECK(await(&l, etcd_leader(l.c, "/el", got_cb, &z), &z) == -ENOENT);
	CHECK(await(&l,
		    etcd_campaign(l.c, "/el", l3.lease_id, "ctl-2", 5, 0,
				  got_cb, &c3),
		    &c3) == 0);
	CHECK(c3.leader.mod_revision > c1.leader.mod_revision);
	got_reset(&w);
	CHECK(await(&l, etcd_leader(l.c, "/el", got_cb, &w), &w) == 0);
	CHECK_STR(w.leader.value, "ctl-2");
	/* A campaign under way when the client goes: -ECANCELED. */
	got_reset(&c2);
	CHECK(etcd_campaign(l.c, "/el", l1.lease_id, "ctl-1", 5, 0, got_cb,
			    &c2) == 0);
	run_for(&l, 200);
	CHECK(!c2.done);
	etcd_client_free(l.c);
	l.c = NULL;
	CHECK(c2.done && c2.rc == -ECANCELED);
	got_reset(&c1);
	got_reset(&c3);
	got_reset(&w);
	got_reset(&z);
	live_stop(&l);
}

TEST(etcd_live_endpoints_and_timeouts)
{
	struct live l;
	struct etcd_config cfg = { 0 };
	struct etcd_client *two = NULL, *dead = NULL;
	struct got g = { 0 }, h = { 0 }, s = { 0 };
	char eps[160], none[64];
	int64_t start;
	int rc;

	if (live_start(&l, 500) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	/* The first endpoint refuses: the request goes to the next. */
	snprintf(none, sizeof(none), "127.0.0.1:%d", free_port());
	snprintf(eps, sizeof(eps), "%.60s, %.60s", none, l.client + 7);
	cfg.endpoints = eps;
	CHECK(etcd_client_new(&l.loop, &cfg, &two) == 0);
	CHECK(strcmp(etcd_client_endpoint(two) + 7, none) == 0);
	CHECK(await(&l, etcd_put(two, "/e", "1", 1, 0, got_cb, &g), &g) == 0);
	CHECK(strcmp(etcd_client_endpoint(two), l.client) == 0);
	/* Nothing reachable: -EIO, saying where. */
	cfg.endpoints = none;
	CHECK(etcd_client_new(&l.loop, &cfg, &dead) == 0);
	CHECK(await(&l, etcd_put(dead, "/e", "1", 1, 0, got_cb, &h), &h) ==
	      -EIO);
	CHECK(strstr(h.error, none) != NULL);
	/* A member that stops answering: -ETIMEDOUT within the client's
	 * timeout (500 ms). */
	kill(l.pid, SIGSTOP);
	start = rt_mono_ms();
	rc = await(&l, etcd_put(l.c, "/e", "2", 1, 0, got_cb, &s), &s);
	if (rc != -ETIMEDOUT)
		fprintf(stderr,
			"  the put to a stopped member: %d (%s) after %lld "
			"ms\n",
			rc, s.error, (long long)(rt_mono_ms() - start));
	CHECK(rc == -ETIMEDOUT);
	CHECK(rt_mono_ms() - start < 1500);
	kill(l.pid, SIGCONT);
	got_reset(&s);
	CHECK(await(&l, etcd_range(l.c, "/e", NULL, 0, 0, got_cb, &s), &s) ==
	      0);
	/* A write that timed out may still have been applied (it was in
	 * the member's socket): only a compare-and-set tells. */
	CHECK(strcmp(s.value, "1") == 0 || strcmp(s.value, "2") == 0);
	etcd_client_free(two);
	etcd_client_free(dead);
	/* Bad configurations. */
	cfg.endpoints = " , ";
	CHECK(etcd_client_new(&l.loop, &cfg, &dead) == -EINVAL && !dead);
	cfg.endpoints = "127.0.0.1:1\"";
	CHECK(etcd_client_new(&l.loop, &cfg, &dead) == -EINVAL && !dead);
	live_stop(&l);
}

TEST(etcd_live_tls)
{
	struct live l;
	struct etcd_config cfg = { 0 };
	struct etcd_client *anon = NULL, *plain = NULL;
	struct watched s = { 0 };
	struct got g = { 0 }, h = { 0 }, k = { 0 };

	if (live_start_tls(&l, 3000, 1) < 0) {
		CHECK(!"etcd runs with TLS (openssl makes the certificates)");
		live_stop(&l);
		return;
	}
	CHECK(strncmp(etcd_client_endpoint(l.c), "https://", 8) == 0);
	CHECK(etcd_watch(l.c, "/t", NULL, 0, 0, on_watch, &s, &s.w) == 0);
	CHECK(wait_for(&l, &s.created, 5000) == 0);
	CHECK(await(&l, etcd_put(l.c, "/t", "secret", 6, 0, got_cb, &g), &g) ==
	      0);
	CHECK(await(&l, etcd_range(l.c, "/t", NULL, 0, 0, got_cb, &h), &h) ==
	      0);
	CHECK_STR(h.value, "secret");
	CHECK(wait_for(&l, &s.events, 5000) == 0);
	CHECK_STR(s.text, "+/t=secret ");
	etcd_watch_free(s.w);
	/* Without a client certificate, the member refuses the handshake. */
	cfg.endpoints = l.client;
	cfg.ca = l.ca;
	CHECK(etcd_client_new(&l.loop, &cfg, &anon) == 0);
	CHECK(await(&l, etcd_range(anon, "/t", NULL, 0, 0, got_cb, &k), &k) ==
	      -EIO);
	CHECK(k.error[0] != '\0');
	etcd_client_free(anon);
	/* An endpoint given as HOST:PORT with no CA is plain http, which
	 * an https member hangs up on. */
	got_reset(&k);
	cfg.endpoints = l.client + 8;
	cfg.ca = NULL;
	CHECK(etcd_client_new(&l.loop, &cfg, &plain) == 0);
	CHECK(strncmp(etcd_client_endpoint(plain), "http://", 7) == 0);
	CHECK(await(&l, etcd_range(plain, "/t", NULL, 0, 0, got_cb, &k), &k) ==
	      -EIO);
	CHECK(strstr(k.error, "Empty reply") != NULL);
	etcd_client_free(plain);
	live_stop(&l);
}

/* Runs `ip link set lo STATE` (in this process's network namespace). */
static int lo_set(const char *state)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		execlp("ip", "ip", "link", "set", "lo", state, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || status != 0)
		return -EIO;
	return 0;
}

/* A partition: the member's packets vanish (loopback down, in a network
 * namespace of this test's own), with no FIN or RST. An idle watch finds
 * its dead connection within dead_ms by TCP keepalive, a put times out,
 * and both work again once the network is back. */
TEST(etcd_live_watch_partition)
{
	struct live l;
	struct watched s = { 0 }, t = { 0 };
	struct got g = { 0 }, h = { 0 };
	int64_t start, took;

	CHECK(unshare(CLONE_NEWNET) == 0);
	CHECK(lo_set("up") == 0);
	dead_ms = 3000;
	if (live_start(&l, 1000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		return;
	}
	CHECK(etcd_watch(l.c, "/p", NULL, 0, 0, on_watch, &s, &s.w) == 0);
	CHECK(wait_for(&l, &s.created, 5000) == 0);
	CHECK(lo_set("down") == 0);
	start = rt_mono_ms();
	CHECK(await(&l, etcd_put(l.c, "/q", "1", 1, 0, got_cb, &g), &g) ==
	      -ETIMEDOUT);
	CHECK(rt_mono_ms() - start < 2500);
	CHECK(wait_for(&l, &s.ended, 8000) == 0);
	took = rt_mono_ms() - start;
	fprintf(stderr, "  the watch ended %lld ms into the partition: %s\n",
		(long long)took, strerror(-s.rc));
	CHECK(s.rc == -EIO || s.rc == -ETIMEDOUT);
	CHECK(took >= 1000 && took < 3000 + 2000);
	etcd_watch_free(s.w);
	/* Healed: a new watch and a put work. */
	CHECK(lo_set("up") == 0);
	CHECK(etcd_watch(l.c, "/p", NULL, 0, 0, on_watch, &t, &t.w) == 0);
	CHECK(wait_for(&l, &t.created, 5000) == 0);
	CHECK(await(&l, etcd_put(l.c, "/p", "2", 1, 0, got_cb, &h), &h) == 0);
	CHECK(wait_for(&l, &t.events, 5000) == 0);
	CHECK_STR(t.text, "+/p=2 ");
	etcd_watch_free(t.w);
	live_stop(&l);
}

/* ------------------------------------------------ code objects (issue 14) */

/* 62 hex digits: with a 2-digit prefix, an object name nobody wrote. */
#define SHA_ANY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"

struct xfer_got {
	int done;
	int err;
};

static void xfer_cb(void *arg, int err, const char *why)
{
	struct xfer_got *g = arg;

	(void)why;
	wake();
	g->done = 1;
	g->err = err;
}

/* A temporary file holding `n` bytes of `data` (or empty), open as *fd. */
static int temp_with(const char *data, size_t n, char *path, int *fd)
{
	snprintf(path, 64, "/var/tmp/fnfs-unit-obj.XXXXXX");
	*fd = mkstemp(path);
	if (*fd < 0)
		return -errno;
	return n == 0 || write(*fd, data, n) == (ssize_t)n ? 0 : -EIO;
}

TEST(etcd_live_code_objects)
{
	struct live l;
	struct xfer_got up = { 0 }, down = { 0 }, bad = { 0 }, none = { 0 };
	struct got g = { 0 };
	size_t n = 2621440 + 7, i; /* 3 chunks, the last one short */
	char *data = malloc(n), *back = malloc(n), h[65], om[128], oc[160];
	char src[64], dst[64], dst2[64], dst3[64];
	int sfd = -1, dfd = -1, d2 = -1, d3 = -1;

	if (live_start(&l, 3000) < 0) {
		CHECK(!"etcd runs (scripts/install-deps installs it)");
		live_stop(&l);
		free(data);
		free(back);
		return;
	}
	for (i = 0; i < n; i++)
		data[i] = (char)(i * 7919 >> 3);
	CHECK(rt_sha256_hex(data, n, h) == 0);
	CHECK(temp_with(data, n, src, &sfd) == 0);

	/* Up: three chunks, then P/om. */
	CHECK(code_etcd_upload(l.c, "u1", h, src, n, xfer_cb, &up) == 0);
	CHECK(wait_for(&l, &up.done, 8000) == 0);
	CHECK(up.err == 0);
	snprintf(om, sizeof(om), "/fnfs/u1/om/%s", h);
	CHECK(await(&l, etcd_range(l.c, om, NULL, 0, 0, got_cb, &g), &g) == 0);
	CHECK(g.nkvs == 1);
	CHECK_STR(g.value, "{\"size\":2621447,\"chunks\":3}");

	/* Down: the same bytes. */
	CHECK(temp_with(NULL, 0, dst, &dfd) == 0);
	CHECK(code_etcd_fetch(l.c, "u1", h, n, dfd, xfer_cb, &down) == 0);
	CHECK(wait_for(&l, &down.done, 8000) == 0);
	CHECK(down.err == 0);
	CHECK(pread(dfd, back, n, 0) == (ssize_t)n);
	CHECK(memcmp(back, data, n) == 0);

	/* A chunk changed in etcd: the fetch says the bytes are not the
	 * object's. */
	snprintf(oc, sizeof(oc), "/fnfs/u1/oc/%s/000001", h);
	data[ETCD_KEYS_CHUNK_BYTES + 5] ^= 1;
	got_reset(&g);
	CHECK(await(&l,
		    etcd_put(l.c, oc, data + ETCD_KEYS_CHUNK_BYTES,
			     ETCD_KEYS_CHUNK_BYTES, 0, got_cb, &g),
		    &g) == 0);
	CHECK(temp_with(NULL, 0, dst2, &d2) == 0);
	CHECK(code_etcd_fetch(l.c, "u1", h, n, d2, xfer_cb, &bad) == 0);
	CHECK(wait_for(&l, &bad.done, 8000) == 0);
	CHECK(bad.err == -EBADMSG);

	/* An object etcd does not have: its first chunk is missing. */
	CHECK(temp_with(NULL, 0, dst3, &d3) == 0);
	CHECK(code_etcd_fetch(l.c, "u1", "ab" SHA_ANY, 10, d3, xfer_cb,
			      &none) == 0);
	CHECK(wait_for(&l, &none.done, 8000) == 0);
	CHECK(none.err == -EBADMSG);
	/* Refused at once: a bad name, the empty object. */
	CHECK(code_etcd_fetch(l.c, "u1", "nope", 10, d3, xfer_cb, &none) ==
	      -EINVAL);
	CHECK(code_etcd_fetch(l.c, "u1", h, 0, d3, xfer_cb, &none) == -EINVAL);
	CHECK(code_etcd_upload(l.c, "u1", h, "/nonexistent/x", n, xfer_cb,
			       &none) == -EIO);

	close(sfd);
	close(dfd);
	close(d2);
	close(d3);
	unlink(src);
	unlink(dst);
	unlink(dst2);
	unlink(dst3);
	free(data);
	free(back);
	live_stop(&l);
}

/*
 * pool.c - the pool of local workers (Flink's designated pool: counted,
 * started, replaced when they exit or hang, at most starts_per_minute
 * starts a minute), workers/pool_size and workers/status.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common.h"
#include "pool.h"
#include "requests.h"

struct sched_local *sched__local_of(struct sched *s, const char *id)
{
	int i;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		if (strcmp(s->pool_state.locals[i].id, id) == 0)
			return &s->pool_state.locals[i];
	return NULL;
}

static void local_closed(uv_handle_t *h)
{
	struct sched_local *l = h->data;

	l->closing = 0; /* the handle may be used for the next spawn */
}

static void local_exited(uv_process_t *p, int64_t status, int sig)
{
	struct sched_local *l = p->data;
	struct sched *s = l->s;

	l->live = 0;
	l->closing = 1;
	if (!s->shutting_down && l->wanted)
		rt_log(RT_LOG_WARN,
		       "local worker %s exited (status %lld, "
		       "signal %d); replacing it",
		       l->id, (long long)status, sig);
	l->next_spawn_mono = rt_mono_ms() + SCHED_RESPAWN_MS;
	uv_close((uv_handle_t *)p, local_closed);
}

static void note_start(struct sched *s);

static void local_spawn(struct sched *s, struct sched_local *l)
{
	char mem[32];
	char *argv[] = { s->pool_state.self, "worker", "--connect",
			 s->links.sock_path, "--id",   l->id,
			 "--memory",	     mem,      NULL };
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];
	int rc, logfd = -1;

	snprintf(mem, sizeof(mem), "%d", s->pool_state.worker_memory);
	if (s->pool_state.log_path != NULL)
		logfd = open(s->pool_state.log_path,
			     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	memset(&opt, 0, sizeof(opt));
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_IGNORE;
	stdio[2].flags = UV_INHERIT_FD; /* its log lines join ours */
	stdio[2].data.fd = logfd >= 0 ? logfd : 2;
	opt.file = s->pool_state.self;
	opt.args = argv;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = local_exited;
	/* Its own session: a terminal's Ctrl-C, or a crash of the
	 * controller, does not take the instances down with it. */
	opt.flags = UV_PROCESS_DETACHED;
	l->proc.data = l;
	l->s = s;
	rc = uv_spawn(s->loop, &l->proc, &opt);
	if (logfd >= 0)
		close(logfd);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR, "cannot start local worker %s: %s", l->id,
		       uv_strerror(rc));
		l->closing = 1;
		uv_close((uv_handle_t *)&l->proc, local_closed);
		l->next_spawn_mono = rt_mono_ms() + SCHED_RESPAWN_MS;
		return;
	}
	l->live = 1;
	l->closing = 0;
	note_start(s);
}

/* Starts in the last minute (the ring keeps the latest ones). */
static int starts_last_minute(const struct sched *s)
{
	int i, n = 0;
	int64_t since = rt_mono_ms() - 60000;

	for (i = 0; i < s->pool_state.nstarts; i++)
		n += s->pool_state.starts[i] >= since;
	/* The ring holds at most its size, and the limit is checked
	 * against what it holds (start_allowed). */
	assert(s->pool_state.nstarts >= 0 && n <= s->pool_state.nstarts &&
	       (size_t)s->pool_state.nstarts <=
		       sizeof(s->pool_state.starts) /
			       sizeof(s->pool_state.starts[0]));
	return n;
}

/* Whether the pool may start a worker now: at most starts_per_minute a
 * minute; past that it pauses, and says so once. */
static int start_allowed(struct sched *s)
{
	int n = starts_last_minute(s);
	struct rt_buf kvs = { 0 };
	char v[32];

	/* The limit is positive: a pool that may never start is no pool. */
	assert(s->pool_state.starts_per_minute > 0);
	if (n < s->pool_state.starts_per_minute && n < 64) {
		if (s->pool_state.paused) {
			s->pool_state.paused = 0;
			sched_event(s, "pool.resumed", "workers", NULL);
		}
		return 1;
	}
	if (!s->pool_state.paused) {
		s->pool_state.paused = 1;
		snprintf(v, sizeof(v), "%d", s->pool_state.starts_per_minute);
		rt_buf_kv(&kvs, "starts_per_minute", v);
		rt_buf_kv(&kvs, "reason", "start limit reached; waiting");
		sched_event(s, "pool.paused", "workers", kvs.data);
		rt_buf_free(&kvs);
	}
	return 0;
}

static void note_start(struct sched *s)
{
	int i, oldest = 0;

	if (s->pool_state.nstarts < 64) {
		s->pool_state.starts[s->pool_state.nstarts++] = rt_mono_ms();
		return;
	}
	for (i = 1; i < 64; i++)
		if (s->pool_state.starts[i] < s->pool_state.starts[oldest])
			oldest = i;
	s->pool_state.starts[oldest] = rt_mono_ms();
}

static int count_wanted(struct sched *s)
{
	int i, n = 0;

	for (i = 0; i < SCHED_POOL_MAX; i++)
		n += s->pool_state.locals[i].wanted;
	return n;
}

struct sched_worker *sched__local_worker(struct sched *s,
					 const struct sched_local *l)
{
	return (struct sched_worker *)sched_child(&s->pool, l->id);
}

/* Grows or shrinks the wanted set, then starts what is missing and asks
 * the unwanted to leave. */
void sched__pool_check(struct sched *s)
{
	int i, n = count_wanted(s);

	if (s->loop == NULL || s->shutting_down)
		return;
	while (n < s->pool_state.size) {
		for (i = 0;
		     i < SCHED_POOL_MAX && s->pool_state.locals[i].wanted; i++)
			;
		if (i == SCHED_POOL_MAX)
			break;
		s->pool_state.locals[i].wanted = 1;
		s->pool_state.locals[i].next_spawn_mono = 0;
		n++;
	}
	while (n > s->pool_state.size) {
		/* Idle ones first, then the highest-numbered. */
		int pick = -1;
		size_t best = (size_t)-1;

		for (i = SCHED_POOL_MAX - 1; i >= 0; i--) {
			struct sched_worker *w;
			size_t load;

			if (!s->pool_state.locals[i].wanted)
				continue;
			w = sched__local_worker(s, &s->pool_state.locals[i]);
			load = w ? w->assignments.count : 0;
			if (load < best) {
				best = load;
				pick = i;
			}
		}
		if (pick < 0)
			break;
		s->pool_state.locals[pick].wanted = 0;
		n--;
	}
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_local *l = &s->pool_state.locals[i];
		struct sched_worker *w = sched__local_worker(s, l);

		if (l->wanted && !l->live && (w == NULL || !w->online) &&
		    rt_mono_ms() >= s->recovery_until &&
		    rt_mono_ms() >= l->next_spawn_mono && !l->closing &&
		    start_allowed(s))
			local_spawn(s, l);
		if (l->wanted && l->live && !l->closing && w != NULL &&
		    !w->online && rt_now_ms() - w->since_ms > SCHED_HUNG_MS) {
			/* Alive but silent for long: hung. Replace it. */
			rt_log(RT_LOG_WARN,
			       "local worker %s is hung; killing it", l->id);
			kill(-l->proc.pid, SIGKILL);
			kill(l->proc.pid, SIGKILL);
		}
		if (!l->wanted && w != NULL && w->online && !w->leaving) {
			w->leaving = 1;
			s->hooks.worker_lost(s, w, 0);
			sched__send(s, w,
				    json_pack("{s:s}", "type", "shutdown"));
		}
	}
}

int sched__pool_write(struct sched *s, const char *buf, size_t len)
{
	struct rt_buf kvs = { 0 };
	char v[32], old[32];
	long n;
	int rc;

	if (sched__parse_int(buf, len, 0, SCHED_POOL_MAX, &n) < 0) {
		snprintf(v, sizeof(v), "%d", SCHED_POOL_MAX);
		rt_buf_kv(&kvs, "file", "pool_size");
		rt_buf_kv(&kvs, "errno", "EINVAL");
		rt_buf_printf(&kvs,
			      " reason=\"pool_size must be an integer "
			      "from 0 to %d\"",
			      SCHED_POOL_MAX);
		sched_event(s, "pool.rejected", "workers", kvs.data);
		rt_buf_free(&kvs);
		return -EINVAL;
	}
	if (n == s->pool_state.size)
		return 0;
	snprintf(v, sizeof(v), "%ld", n);
	rc = store_setting_put(s->store, "pool_size", v);
	if (rc < 0)
		return rc;
	snprintf(old, sizeof(old), "%d", s->pool_state.size);
	s->pool_state.size = (int)n;
	rt_buf_kv(&kvs, "from", old);
	rt_buf_kv(&kvs, "to", v);
	sched_event(s, "pool.resized", "workers", kvs.data);
	rt_buf_free(&kvs);
	sched__pool_check(s);
	return 0;
}

/* workers/status: the pool as Flink counts it. */
int sched__pool_status(struct sched *s, struct rt_buf *out)
{
	int i, wanted = 0, started = 0, registered = 0, pending = 0;
	int manual = 0, offline = 0;
	size_t n, k;
	void **all = rt_map_values(&s->pool.children, &n);

	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_local *l = &s->pool_state.locals[i];
		struct sched_worker *w = sched__local_worker(s, l);

		if (!l->wanted)
			continue;
		wanted++;
		started += l->live;
		if (w != NULL && w->online)
			registered++;
		else if (l->live)
			pending++; /* started, still registering */
	}
	for (k = 0; all != NULL && k < n; k++) {
		struct sched_worker *w = all[k];

		manual += !w->local && w->online;
		offline += !w->online;
	}
	free(all);
	return rt_buf_printf(
		out,
		"pool_size %d\nwanted %d\nstarted %d\nregistered %d\n"
		"registering %d\nmissing %d\nmanual %d\noffline %d\n"
		"starts_last_minute %d\nstarts_per_minute %d\npaused %s\n"
		"strategy %s\nheartbeat_timeout_ms %d\n",
		s->pool_state.size, wanted, started, registered, pending,
		wanted - registered - pending, manual, offline,
		starts_last_minute(s), s->pool_state.starts_per_minute,
		s->pool_state.paused ? "yes" : "no",
		sched_strategy_name((enum sched_strategy)s->strategy),
		s->heartbeat_timeout);
}

int sched__workers_coming(struct sched *s)
{
	int i;

	if (s->recovery_until != 0 && rt_mono_ms() < s->recovery_until)
		return 1;
	for (i = 0; i < SCHED_POOL_MAX; i++) {
		struct sched_worker *w;

		/* A wanted one that is not running is due to be started
		 * again (after SCHED_RESPAWN_MS), unless the pool is paused
		 * by its start limit. */
		if (!s->pool_state.locals[i].live) {
			if (s->pool_state.locals[i].wanted &&
			    !s->pool_state.paused)
				return 1;
			continue;
		}
		w = sched__local_worker(s, &s->pool_state.locals[i]);
		if (w == NULL || !w->online)
			return 1;
	}
	return 0;
}

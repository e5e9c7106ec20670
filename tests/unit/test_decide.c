/*
 * test_decide.c - the assignment manager's one decision, from a table:
 * each row is an instance, its worker and its function's spec, and the
 * one action expected (with a word the reason must hold).
 */
#include <stdlib.h>

#include "../../sched/decide/decide.h"
#include "unit.h"

/* Worker offers (what `free` the instance sees leaves out its own). */
enum offer {
	NO_WORKER,
	PLAIN_1024,  /* healthy, untagged, 1024 MB, 128 of it used */
	PLAIN_FULL,  /* healthy, untagged, 1024 MB, 1000 used by others */
	GPU_1024,    /* healthy, tagged gpu */
	DRAINING,    /* draining (not usable) */
	OFFLINE,     /* gone away */
	DEDICATED,   /* serves other/ns only */
	SERVES_MINE, /* serves acme/prod only */
	PLAIN_SMALL  /* healthy, untagged, 512 MB, nothing else */
};

/* Function specs. */
enum fnspec {
	F128,	    /* memory 128, no tags */
	F4096,	    /* memory 4096 */
	F400,	    /* memory 400 */
	FGPU,	    /* strict tag gpu */
	FGPU_LOOSE, /* loose tag gpu */
	F1000	    /* memory 1000 */
};

struct row {
	const char *what;
	enum decide_cause cause;
	int desired_run;
	enum sched_instance_state state;
	uint64_t sent_revision;
	int sent_stop;
	int busy;
	enum offer offer;
	enum fnspec fn;
	uint64_t run_revision;
	int recovering;
	enum decide_action want;
	const char *reason; /* a part of the reason, or NULL */
	int fits;	    /* the instance may keep its worker */
};

#define C  DECIDE_CONVERGE
#define CS DECIDE_CMD_START
#define CT DECIDE_CMD_STOP
#define CR DECIDE_CMD_RESTART
#define RB DECIDE_REBALANCE

static const struct row rows[] = {
	/* Wanted, no worker. */
	{ "new instance is placed", C, 1, SCHED_PENDING, 0, 0, 0, NO_WORKER,
	  F128, 1, 0, DECIDE_START, NULL, 0 },
	{ "waits while known workers may return", C, 1, SCHED_LOST, 0, 0, 0,
	  NO_WORKER, F128, 1, 1, DECIDE_PENDING, "known workers", 0 },
	{ "restart of an unplaced one places it", CR, 1, SCHED_PENDING, 0, 0, 0,
	  NO_WORKER, F128, 1, 0, DECIDE_START, NULL, 0 },
	{ "start of an unplaced one places it", CS, 1, SCHED_STOPPED, 0, 0, 0,
	  NO_WORKER, F128, 1, 0, DECIDE_START, NULL, 0 },
	/* Not wanted. */
	{ "stopped and unplaced: nothing", C, 0, SCHED_STOPPED, 0, 0, 0,
	  NO_WORKER, F128, 1, 0, DECIDE_NONE, "stopped", 0 },
	{ "unwanted and running: stop", C, 0, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_1024, F128, 1, 0, DECIDE_STOP, "not wanted", 0 },
	{ "stop already sent: nothing", C, 0, SCHED_STOPPING, 1, 1, 0,
	  PLAIN_1024, F128, 1, 0, DECIDE_NONE, NULL, 0 },
	{ "stop command always sent", CT, 0, SCHED_STOPPED, 1, 0, 0, PLAIN_1024,
	  F128, 1, 0, DECIDE_STOP, "stop asked", 0 },
	{ "stop with worker away: nothing", CT, 0, SCHED_LOST, 1, 0, 0, OFFLINE,
	  F128, 1, 0, DECIDE_NONE, "away", 0 },
	{ "unwanted on a draining worker: stop, not move", C, 0, SCHED_RUNNING,
	  1, 0, 0, DRAINING, F128, 1, 0, DECIDE_STOP, NULL, 0 },
	/* Wanted, with a worker that fits. */
	{ "running, current: nothing", C, 1, SCHED_RUNNING, 1, 0, 0, PLAIN_1024,
	  F128, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "assigned, nothing sent: start", C, 1, SCHED_STARTING, 0, 0, 0,
	  PLAIN_1024, F128, 1, 0, DECIDE_START, NULL, 1 },
	{ "new revision: restart", C, 1, SCHED_RUNNING, 1, 0, 0, PLAIN_1024,
	  F128, 2, 0, DECIDE_RESTART, "revision", 1 },
	{ "new revision, busy: now (its worker lets the calls finish)", C, 1,
	  SCHED_RUNNING, 1, 0, 1, PLAIN_1024, F128, 2, 0, DECIDE_RESTART,
	  "revision", 1 },

	{ "new revision, busy but in backoff: restart", C, 1, SCHED_BACKOFF, 1,
	  0, 1, PLAIN_1024, F128, 2, 0, DECIDE_RESTART, NULL, 1 },
	{ "stopped but wanted: start", C, 1, SCHED_STOPPED, 1, 0, 0, PLAIN_1024,
	  F128, 1, 0, DECIDE_START, "stopped", 1 },
	{ "failed stays failed", C, 1, SCHED_FAILED, 1, 0, 0, PLAIN_1024, F128,
	  1, 0, DECIDE_NONE, NULL, 1 },
	{ "start command revives failed", CS, 1, SCHED_FAILED, 1, 0, 0,
	  PLAIN_1024, F128, 1, 0, DECIDE_START, "start", 1 },
	{ "start command during a stop", CS, 1, SCHED_RUNNING, 1, 1, 0,
	  PLAIN_1024, F128, 1, 0, DECIDE_START, NULL, 1 },
	{ "start command on a running one: nothing", CS, 1, SCHED_RUNNING, 1, 0,
	  0, PLAIN_1024, F128, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "restart command", CR, 1, SCHED_RUNNING, 1, 0, 0, PLAIN_1024, F128, 1,
	  0, DECIDE_RESTART, "restart", 1 },
	{ "restart command while busy: now", CR, 1, SCHED_RUNNING, 1, 0, 1,
	  PLAIN_1024, F128, 1, 0, DECIDE_RESTART, NULL, 1 },
	{ "memory grows but fits: restart in place", C, 1, SCHED_RUNNING, 1, 0,
	  0, PLAIN_1024, F400, 2, 0, DECIDE_RESTART, NULL, 1 },
	{ "strict tag present: stays", C, 1, SCHED_RUNNING, 1, 0, 0, GPU_1024,
	  FGPU, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "untagged function on a tagged worker: stays", C, 1, SCHED_RUNNING, 1,
	  0, 0, GPU_1024, F128, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "loose tag missing: stays outside rebalance", C, 1, SCHED_RUNNING, 1,
	  0, 0, PLAIN_1024, FGPU_LOOSE, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "loose tag missing: rebalance moves", RB, 1, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_1024, FGPU_LOOSE, 1, 0, DECIDE_MOVE, "tags", 1 },
	{ "loose tag present: rebalance leaves it", RB, 1, SCHED_RUNNING, 1, 0,
	  0, GPU_1024, FGPU_LOOSE, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "dedicated to my namespace: stays", C, 1, SCHED_RUNNING, 1, 0, 0,
	  SERVES_MINE, F128, 1, 0, DECIDE_NONE, NULL, 1 },
	{ "exactly the free memory: stays", C, 1, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_SMALL, F400, 1, 0, DECIDE_NONE, NULL, 1 },
	/* Wanted, with a worker that no longer fits: the bugs of issue 10. */
	{ "memory 4096 on a 1024 MB worker: move", C, 1, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_1024, F4096, 2, 0, DECIDE_MOVE, "4096 needed", 0 },
	{ "memory 400 where only 24 MB are free: move", C, 1, SCHED_RUNNING, 1,
	  0, 0, PLAIN_FULL, F400, 2, 0, DECIDE_MOVE, "MB free", 0 },
	{ "strict tag added, untagged worker: move", C, 1, SCHED_RUNNING, 1, 0,
	  0, PLAIN_1024, FGPU, 1, 0, DECIDE_MOVE, "lacks tag gpu", 0 },
	{ "worker dedicated to others: move", C, 1, SCHED_RUNNING, 1, 0, 0,
	  DEDICATED, F128, 1, 0, DECIDE_MOVE, "does not serve", 0 },
	{ "draining worker: move", C, 1, SCHED_RUNNING, 1, 0, 0, DRAINING, F128,
	  1, 0, DECIDE_MOVE, "takes no instances", 0 },
	{ "draining worker, busy: moves after the call", C, 1, SCHED_RUNNING, 1,
	  0, 1, DRAINING, F128, 1, 0, DECIDE_NONE, "call ends", 0 },
	{ "too big, busy: moves after the call", C, 1, SCHED_RUNNING, 1, 0, 1,
	  PLAIN_1024, F4096, 2, 0, DECIDE_NONE, "call ends", 0 },
	{ "restart command on a misfit: move", CR, 1, SCHED_RUNNING, 1, 0, 1,
	  PLAIN_1024, F4096, 2, 0, DECIDE_MOVE, NULL, 0 },
	{ "start command on a misfit: move", CS, 1, SCHED_FAILED, 1, 0, 0,
	  PLAIN_1024, FGPU, 1, 0, DECIDE_MOVE, NULL, 0 },
	{ "misfit beats a new revision: move", C, 1, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_SMALL, F1000, 2, 0, DECIDE_MOVE, NULL, 0 },
	/* Worker away. */
	{ "worker away: waits for it", C, 1, SCHED_LOST, 1, 0, 0, OFFLINE, F128,
	  1, 0, DECIDE_NONE, "worker", 0 },
	{ "worker away, new revision: waits", C, 1, SCHED_LOST, 1, 0, 0,
	  OFFLINE, F128, 2, 0, DECIDE_NONE, NULL, 0 },
	{ "worker away during recovery: waits", C, 1, SCHED_LOST, 1, 0, 0,
	  OFFLINE, F4096, 1, 1, DECIDE_NONE, NULL, 0 },
};

static void offer_of(enum offer o, struct place_worker *w, int *online)
{
	memset(w, 0, sizeof(*w));
	w->id = "w1";
	w->memory_mb = 1024;
	w->used_mb = 128;
	w->tags = "";
	w->namespaces = "";
	w->usable = 1;
	*online = 1;
	switch (o) {
	case PLAIN_FULL: w->used_mb = 1000; break;
	case GPU_1024: w->tags = "gpu"; break;
	case DRAINING: w->usable = 0; break;
	case OFFLINE:
		w->usable = 0;
		*online = 0;
		break;
	case DEDICATED: w->namespaces = "other/ns"; break;
	case SERVES_MINE: w->namespaces = "acme/prod"; break;
	case PLAIN_SMALL:
		w->memory_mb = 400;
		w->used_mb = 0;
		break;
	default: break;
	}
}

static char *gpu_tags[] = { "gpu" };

static void spec_of(enum fnspec f, struct place_request *r)
{
	memset(r, 0, sizeof(*r));
	r->memory_mb = 128;
	r->tenant = "acme";
	r->ns = "prod";
	switch (f) {
	case F4096: r->memory_mb = 4096; break;
	case F400: r->memory_mb = 400; break;
	case F1000: r->memory_mb = 1000; break;
	case FGPU_LOOSE: r->loose = 1; /* fall through */
	case FGPU:
		r->tags = gpu_tags;
		r->ntags = 1;
		break;
	default: break;
	}
}

/* Checks each of `n` rows, with `rolling` (another instance of the
 * function is taking the new revision). */
static void check_rows(const struct row *table, size_t n, int rolling)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct row *t = &table[i];
		struct decide_input d;
		struct decide_result res;
		struct place_worker w;
		struct place_request r;
		int online;
		enum decide_action got;

		memset(&d, 0, sizeof(d));
		d.cause = t->cause;
		d.in.desired_run = t->desired_run;
		d.in.state = t->state;
		d.in.sent_revision = t->sent_revision;
		d.in.sent_stop = t->sent_stop;
		d.in.busy = t->busy;
		offer_of(t->offer, &w, &online);
		spec_of(t->fn, &r);
		d.worker = t->offer == NO_WORKER ? NULL : &w;
		d.worker_online = t->offer == NO_WORKER ? 0 : online;
		d.fn = &r;
		d.run_revision = t->run_revision;
		d.recovering = t->recovering;
		d.rolling = rolling;
		got = sched_decide(&d, &res);
		if (got != t->want || res.action != got ||
		    (t->reason != NULL &&
		     strstr(res.reason, t->reason) == NULL) ||
		    res.fits != t->fits) {
			fprintf(stderr,
				"  row %zu \"%s\": got %s (%s, fits %d), want "
				"%s (%s, fits %d)\n",
				i, t->what, sched_decide_name(got), res.reason,
				res.fits, sched_decide_name(t->want),
				t->reason ? t->reason : "", t->fits);
			unit_fail(__FILE__, __LINE__, t->what);
		}
	}
}

TEST(decide_table)
{
	CHECK(sizeof(rows) / sizeof(rows[0]) >= 30);
	check_rows(rows, sizeof(rows) / sizeof(rows[0]), 0);
}

/* A rolling deploy: while another instance is taking the new revision, a
 * running one waits for its turn; one that serves nothing anyway, a
 * restart command and a first start do not wait. */
static const struct row rolling_rows[] = {
	{ "new revision while another takes it: waits its turn", C, 1,
	  SCHED_RUNNING, 1, 0, 0, PLAIN_1024, F128, 2, 0, DECIDE_NONE,
	  "rolling", 1 },
	{ "new revision while another takes it, busy: waits its turn", C, 1,
	  SCHED_RUNNING, 1, 0, 1, PLAIN_1024, F128, 2, 0, DECIDE_NONE,
	  "rolling", 1 },
	{ "new revision while another takes it, in backoff: restart", C, 1,
	  SCHED_BACKOFF, 1, 0, 0, PLAIN_1024, F128, 2, 0, DECIDE_RESTART, NULL,
	  1 },
	{ "new revision while another takes it, restart command: now", CR, 1,
	  SCHED_RUNNING, 1, 0, 0, PLAIN_1024, F128, 2, 0, DECIDE_RESTART, NULL,
	  1 },
	{ "never started while another takes it: start", C, 1, SCHED_STARTING,
	  0, 0, 0, PLAIN_1024, F128, 2, 0, DECIDE_START, NULL, 1 },
	{ "current while another takes it: nothing", C, 1, SCHED_RUNNING, 2, 0,
	  1, PLAIN_1024, F128, 2, 0, DECIDE_NONE, NULL, 1 },
	{ "unwanted while another takes it: stop", C, 0, SCHED_RUNNING, 1, 0, 0,
	  PLAIN_1024, F128, 2, 0, DECIDE_STOP, NULL, 0 },
};

TEST(decide_rolling)
{
	check_rows(rolling_rows, sizeof(rolling_rows) / sizeof(rolling_rows[0]),
		   1);
}

TEST(decide_fits_reasons)
{
	struct place_worker w;
	struct place_request r;
	struct rt_buf why = { 0 };
	int online;

	offer_of(PLAIN_1024, &w, &online);
	spec_of(F4096, &r);
	CHECK(!sched_place_fits(&w, &r, &why));
	CHECK_STR(why.data, "worker w1 has 896 MB free, 4096 needed");
	rt_buf_free(&why);
	spec_of(FGPU, &r);
	CHECK(!sched_place_fits(&w, &r, &why));
	CHECK_STR(why.data, "worker w1 lacks tag gpu");
	rt_buf_free(&why);
	r.loose = 1;
	CHECK(sched_place_fits(&w, &r, NULL));
	CHECK_STR(sched_decide_name(DECIDE_MOVE), "move");
}

/*
 * test_instance_state.c - the table of an instance's legal state changes
 * (sched/model/instance_state.c): what may follow each state, and which states
 * an instance may take with and without a worker.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../sched/model/instance_state.h"
#include "unit.h"

#define P  SCHED_PENDING
#define SG SCHED_STARTING
#define R  SCHED_RUNNING
#define B  SCHED_BACKOFF
#define SP SCHED_STOPPING
#define SD SCHED_STOPPED
#define F  SCHED_FAILED
#define L  SCHED_LOST

TEST(instance_transition_table)
{
	static const struct {
		enum sched_instance_state from, to;
		int ok;
	} cases[] = {
		/* A pending one has no worker: it is assigned (starting),
		 * stopped, or gets a new reason; lost only as restored. */
		{ P, P, 1 },
		{ P, SG, 1 },
		{ P, SD, 1 },
		{ P, L, 1 },
		{ P, R, 0 },
		{ P, B, 0 },
		{ P, SP, 0 },
		{ P, F, 0 },
		/* Its worker reports the process from any assigned state. */
		{ SG, R, 1 },
		{ SG, B, 1 },
		{ SG, F, 1 },
		{ R, B, 1 },
		{ R, SP, 1 },
		{ R, SG, 1 }, /* restarted */
		{ B, SG, 1 },
		{ SP, SD, 1 },
		{ SD, SG, 1 },
		{ SD, R, 1 }, /* adopted as it runs */
		{ F, SG, 1 }, /* restarted by hand */
		/* The controller moves, stops or loses any of them. */
		{ R, P, 1 },
		{ R, L, 1 },
		{ F, SD, 1 },
		{ F, P, 1 },
		/* A lost one: adopted as its worker reports, or placed. */
		{ L, R, 1 },
		{ L, F, 1 },
		{ L, SG, 1 },
		{ L, P, 1 },
		{ L, L, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (sched__instance_transition_ok(cases[i].from, cases[i].to) !=
		    cases[i].ok)
			fprintf(stderr, "  case %zu: %d -> %d\n", i,
				cases[i].from, cases[i].to);
		CHECK(sched__instance_transition_ok(
			      cases[i].from, cases[i].to) == cases[i].ok);
	}
	/* Every state may stay as it is (a repeated report, a new reason). */
	for (i = P; i <= L; i++)
		CHECK(sched__instance_transition_ok(i, i));
	/* No value outside the states. */
	CHECK(!sched__instance_transition_ok(L + 1, P));
	CHECK(!sched__instance_transition_ok(P, L + 1));
	CHECK(!sched__instance_transition_ok((enum sched_instance_state) - 1,
					     R));
}

TEST(instance_state_fits_assignment)
{
	/* to, fits without a worker, fits with one */
	static const int cases[][3] = {
		{ P, 1, 0 },  { SG, 0, 1 }, { R, 0, 1 }, { B, 0, 1 },
		{ SP, 0, 1 }, { SD, 1, 1 }, { F, 0, 1 }, { L, 1, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(sched__instance_state_fits(cases[i][0], 0) ==
		      cases[i][1]);
		CHECK(sched__instance_state_fits(cases[i][0], 1) ==
		      cases[i][2]);
	}
	CHECK(!sched__instance_state_fits(L + 1, 1));
}

/* An instance t/ns/fn/0 in state `st`, on a worker when `assigned`. */
struct fake {
	struct sched_obj t, ns;
	struct sched_function fn;
	struct sched_worker w;
	struct sched_instance in;
};

static void fake_init(struct fake *f, enum sched_instance_state st,
		      int assigned)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->t.name, sizeof(f->t.name), "t");
	snprintf(f->ns.name, sizeof(f->ns.name), "ns");
	snprintf(f->fn.obj.name, sizeof(f->fn.obj.name), "fn");
	f->ns.parent = &f->t;
	f->fn.obj.parent = &f->ns;
	f->in.obj.parent = &f->fn.obj;
	f->in.obj.type = SCHED_INSTANCE;
	f->in.state = st;
	f->in.worker = assigned ? &f->w : NULL;
}

/* Whether setting `to` on an instance in `from` (assigned or not) kills
 * the process with the assert (run in a child). */
static int aborts(enum sched_instance_state from, int assigned,
		  enum sched_instance_state to)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct fake f;

		/* The log line before the assert is expected: keep it out. */
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(3);
		fake_init(&f, from, assigned);
		sched__instance_set_state(&f.in, to, "test");
		_exit(f.in.state == to ? 0 : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

TEST(instance_set_state_asserts)
{
	struct fake f;

	/* Legal changes are made. */
	CHECK(aborts(P, 1, SG) == 0); /* just assigned */
	CHECK(aborts(SG, 1, R) == 0);
	CHECK(aborts(R, 0, P) == 0);
	CHECK(aborts(R, 1, L) == 0);
	/* A pending one cannot jump to running, nor be pending on a worker,
	 * nor run without one. */
	CHECK(aborts(P, 1, R) == 1);
	CHECK(aborts(L, 1, P) == 1);
	CHECK(aborts(L, 0, R) == 1);
	/* What a worker reports: its six words; anything else is lost. */
	fake_init(&f, SG, 1);
	CHECK(sched__instance_reported(&f.in, "running") == R);
	CHECK(f.in.state == R);
	CHECK(sched__instance_reported(&f.in, "pending") == L);
	CHECK(sched__instance_reported(&f.in, "backoff") == B);
	CHECK(sched__instance_reported(&f.in, NULL) == L);
	CHECK(sched__instance_reported(&f.in, "failed") == F);
	/* A record restored: any state, no transition checked. */
	fake_init(&f, P, 1);
	sched__instance_restore(&f.in, R);
	CHECK(f.in.state == R);
}

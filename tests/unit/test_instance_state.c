/*
 * test_instance_state.c - the table of an instance's legal state changes
 * (sched/instance_state.c): what may follow each state, and which states
 * an instance may take with and without a worker.
 */
#include "../../sched/instance_state.h"
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

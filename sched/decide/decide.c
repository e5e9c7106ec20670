/*
 * decide.c - the assignment manager's one decision (see decide.h).
 *
 * The rules, in order:
 *   1. An instance that should not run is stopped where it runs; without
 *      a worker, or with one that is gone, there is nothing to do.
 *   2. One that should run and has no worker is placed and started, or
 *      waits while known workers may still come back after a restart.
 *   3. One whose worker is gone waits for it (it is lost, and placed
 *      elsewhere when the worker is declared gone).
 *   4. One whose worker no longer fits it (drained or leaving, dedicated
 *      to other namespaces, missing a strict tag, too little memory for
 *      the function's current memory) moves; if it serves a call, it
 *      moves once the call has ended (a drain or a deploy fails no call),
 *      unless a restart is asked for.
 *   5. One that fits stays. A restart is done where it is; a new revision
 *      replaces the process, one instance of a function at a time (a
 *      rolling deploy: a running one waits while another is taking the
 *      new revision and is neither running it nor failed; its worker lets
 *      the calls in flight finish first); a stopped one starts again; a
 *      start command revives a failed or stopped one.
 *   6. Rebalance moves a loose function's instance off a worker without
 *      its tags (the caller moves it only to a worker that has them).
 */
#include <assert.h>
#include <stdio.h>

#include "decide.h"

static const char *const action_words[] = { "none",    "start", "stop",
					    "restart", "move",	"pending" };

const char *sched_decide_name(enum decide_action a)
{
	return a <= DECIDE_PENDING ? action_words[a] : "?";
}

static enum decide_action set(struct decide_result *out, enum decide_action a,
			      const char *reason)
{
	out->action = a;
	snprintf(out->reason, sizeof(out->reason), "%s", reason);
	return a;
}

/* Rule 1: an instance that should not run. */
static enum decide_action decide_stopped(const struct decide_input *d,
					 struct decide_result *out)
{
	const struct decide_instance *in = &d->in;

	if (d->worker == NULL)
		return set(out, DECIDE_NONE, "stopped");
	if (!d->worker_online)
		return set(out, DECIDE_NONE, "its worker is away");
	/* A stop command is always sent: the writer waits for its answer. */
	if (d->cause == DECIDE_CMD_STOP)
		return set(out, DECIDE_STOP, "stop asked for");
	if (in->state != SCHED_STOPPED && !in->sent_stop)
		return set(out, DECIDE_STOP, "not wanted");
	return set(out, DECIDE_NONE, "stopped");
}

static enum decide_action decide(const struct decide_input *d,
				 struct decide_result *out);

enum decide_action sched_decide(const struct decide_input *d,
				struct decide_result *out)
{
	enum decide_action a = decide(d, out);

	/* The rules' promises, which sched__act relies on. */
	assert(a == out->action && a <= DECIDE_PENDING);
	/* Only an instance on a worker that is there is stopped, restarted
	 * or moved; one on no worker is placed or waits. */
	assert((a != DECIDE_STOP && a != DECIDE_RESTART && a != DECIDE_MOVE) ||
	       (d->worker != NULL && d->worker_online));
	assert(a != DECIDE_PENDING || d->worker == NULL);
	/* Nothing is started that should not run, nor stopped that should. */
	assert((a != DECIDE_START && a != DECIDE_RESTART && a != DECIDE_MOVE &&
		a != DECIDE_PENDING) ||
	       d->in.desired_run);
	assert(a != DECIDE_STOP || !d->in.desired_run);
	/* It fits only where it is. */
	assert(!out->fits || (d->worker != NULL && d->in.desired_run));
	return a;
}

static enum decide_action decide(const struct decide_input *d,
				 struct decide_result *out)
{
	const struct decide_instance *in = &d->in;
	struct rt_buf why = { 0 };
	char line[200];
	int fits;

	out->reason[0] = '\0';
	out->fits = 0;
	if (!in->desired_run)
		return decide_stopped(d, out);

	/* Rule 2. */
	if (d->worker == NULL) {
		if (d->recovering)
			return set(out, DECIDE_PENDING,
				   "waiting for known workers to come back");
		return set(out, DECIDE_START, "");
	}
	/* Rule 3. */
	if (!d->worker_online)
		return set(out, DECIDE_NONE, "waiting for its worker");

	/* Rule 4. */
	fits = sched_place_fits(d->worker, d->fn, &why);
	snprintf(line, sizeof(line), "%s", why.data ? why.data : "");
	rt_buf_free(&why);
	if (!fits) {
		if (in->busy && d->cause != DECIDE_CMD_RESTART) {
			char wait[200];

			snprintf(wait, sizeof(wait),
				 "moves when its call ends: %.150s", line);
			return set(out, DECIDE_NONE, wait);
		}
		return set(out, DECIDE_MOVE, line);
	}
	out->fits = 1;

	/* Rule 5. */
	if (d->cause == DECIDE_CMD_RESTART)
		return set(out, DECIDE_RESTART, "restart asked for");
	if (d->cause == DECIDE_CMD_START &&
	    (in->state == SCHED_FAILED || in->state == SCHED_STOPPED ||
	     in->state == SCHED_STOPPING || in->sent_stop))
		return set(out, DECIDE_START, "start asked for");
	if (in->sent_revision != d->run_revision) {
		if (in->sent_revision == 0)
			return set(out, DECIDE_START, "");
		if (d->rolling && in->state == SCHED_RUNNING)
			return set(out, DECIDE_NONE,
				   "takes the new revision when its turn comes "
				   "(rolling deploy)");
		return set(out, DECIDE_RESTART, "new revision");
	}
	if (in->state == SCHED_STOPPED && !in->sent_stop)
		return set(out, DECIDE_START, "stopped but wanted");

	/* Rule 6. */
	if (d->cause == DECIDE_REBALANCE && d->fn->loose && d->fn->ntags > 0 &&
	    !sched_place_has_tags(d->worker, d->fn))
		return set(out, DECIDE_MOVE,
			   "a worker with its tags may have room");
	return set(out, DECIDE_NONE, "");
}

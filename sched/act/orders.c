/*
 * orders.c - what the controller sends a worker about an instance: the
 * spec it runs (with its FN_* environment, the identity it runs as and
 * its sandbox and limits), start, stop and restart.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "../calls/direct.h"
#include "orders.h"
#include "../workers/requests.h"

/* Builds the spec a worker runs an instance with. */
static json_t *run_spec(const struct sched *s, const struct sched_instance *in)
{
	const struct sched_function *fn = sched__fn_of(in);
	const struct sched_spec *sp = &fn->spec;
	static const char *const modes[] = { "daemon", "hot", "cold" };
	static const char *const policies[] = { "always", "on-failure",
						"never" };
	static const char *const isolations[] = { "sandbox", "none" };
	static const char *const networks[] = { "host", "none" };
	struct sched_owner owner;
	json_t *env = json_array(), *mounts = json_array();
	const char *t, *ns, *f;
	char v[300];
	int i;

	assert((unsigned)sp->mode < sizeof(modes) / sizeof(modes[0]));
	assert((unsigned)sp->restart_policy <
	       sizeof(policies) / sizeof(policies[0]));
	sched__parts(in, &t, &ns, &f);
	for (i = 0; i < sp->nenv; i++)
		json_array_append_new(env, json_string(sp->env[i]));
#define FN_ENV(fmt, ...)                                                       \
	do {                                                                   \
		snprintf(v, sizeof(v), fmt, __VA_ARGS__);                      \
		json_array_append_new(env, json_string(v));                    \
	} while (0)
	FN_ENV("FN_TENANT=%s", t);
	FN_ENV("FN_NAMESPACE=%s", ns);
	FN_ENV("FN_FUNCTION=%s", f);
	FN_ENV("FN_INSTANCE=%d", in->n);
	FN_ENV("FN_REVISION=%llu", (unsigned long long)fn->run_revision);
	FN_ENV("FN_MODE=%s", modes[sp->mode]);
	FN_ENV("FN_FORMAT=%s", sched_format_word(sp->format));
	FN_ENV("FN_MEMORY_MB=%d", sp->memory);
	FN_ENV("FN_WORKER=%s", in->worker ? in->worker->obj.name : "");
#undef FN_ENV
	for (i = 0; i < sp->nmounts; i++) {
		const char *m = sp->mounts[i];
		size_t n = strlen(m);
		int rw = n > 3 && strcmp(m + n - 3, " rw") == 0;

		json_array_append_new(mounts,
				      json_pack("{s:s%, s:b}", "path", m,
						rw ? n - 3 : n, "rw", rw));
	}
	/* A tenant owned by a user runs as that user; root's tenants run
	 * as the --run-as user. */
	sched_owner_of(&fn->obj, &owner);
	if (owner.uid == 0) {
		owner.uid = s->run_as_uid;
		owner.gid = s->run_as_gid;
	}
	return json_pack(
		"{s:s, s:o, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:s, "
		"s:s, s:o, s:i, s:i, s:s, s:i, s:i}",
		"command", sp->command ? sp->command : "", "env", env, "cwd",
		sp->cwd ? sp->cwd : "", "memory", sp->memory, "restart_policy",
		policies[sp->restart_policy], "mode", modes[sp->mode], "format",
		sched_format_word(sp->format), "uid", (json_int_t)owner.uid,
		"gid", (json_int_t)owner.gid, "isolation",
		isolations[sp->isolation], "network", networks[sp->network],
		"mounts", mounts, "pids", sp->pids, "cpu", sp->cpu, "ready",
		sched_spec_ready(sp), "ready_timeout", sp->ready_timeout,
		"concurrency", sched_spec_slots(sp));
}

int sched__send_start(struct sched *s, struct sched_instance *in,
		      struct sched_wait *wait)
{
	char *id = sched__instance_id(in);
	json_t *spec = run_spec(s, in);
	int rc;

	/* Only an instance assigned and wanted running is started. */
	assert(in->worker != NULL && in->desired_run);
	/* Its graceful replacement waits for the direct calls too. */
	sched__direct_tell(s, in);
	sched__code_add_spec(s, sched__fn_of(in), spec);
	in->sent_revision = sched__fn_of(in)->run_revision;
	in->sent_stop = 0;
	rc = sched__request(
		s, in->worker,
		json_pack("{s:s, s:s, s:I, s:I, s:o}", "type", "start",
			  "instance", id, "revision",
			  (json_int_t)sched__fn_of(in)->run_revision, "epoch",
			  (json_int_t)in->epoch, "spec", spec),
		wait, 0, in->obj.id);
	free(id);
	return rc;
}

int sched__send_simple(struct sched *s, struct sched_instance *in,
		       const char *type, int forget, struct sched_wait *wait)
{
	char *id = sched__instance_id(in);
	json_t *h = json_pack("{s:s, s:s}", "type", type, "instance", id);
	int rc;

	assert(in->worker != NULL); /* an order goes to its worker */
	/* Its graceful stop waits for the direct calls too. */
	sched__direct_tell(s, in);
	if (forget)
		json_object_set_new(h, "forget", json_true());
	/* A stop is about this assignment: a worker that holds a newer
	 * one of `in` ignores it. */
	if (in->epoch > 0)
		json_object_set_new(h, "epoch",
				    json_integer((json_int_t)in->epoch));
	rc = sched__request(s, in->worker, h, wait, 0, in->obj.id);
	free(id);
	return rc;
}

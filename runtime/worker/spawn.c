/*
 * spawn.c - a run's process: its command line (exec'ed directly, through
 * `exec` in a shell, or as shell code), its environment and user, its
 * cgroups and sandbox, its pipes; the pid namespace and view its
 * instance keeps; then the child (child.c). rt_run_spawn and
 * rt_run_open (supervise.h).
 */
#include <assert.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lambda.h"
#include "ready.h"
#include "../base/rt.h"
#include "supervise_int.h"
#include "../base/wire.h" /* rt_read_alloc */

/* Whether a command line is one simple command that `exec` can replace
 * the shell with, so that the instance's pid is the program's own. */
static int simple_command(const char *cmd)
{
	static const char *const words[] = { "if",   "for", "while", "until",
					     "case", "{",   "(",     "!",
					     "exec", NULL };
	size_t i, n;

	if (strpbrk(cmd, "|&;<>()`\n") != NULL || strstr(cmd, "$(") != NULL)
		return 0;
	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	for (i = 0; words[i] != NULL; i++) {
		n = strlen(words[i]);
		if (strncmp(cmd, words[i], n) == 0 &&
		    (cmd[n] == ' ' || cmd[n] == '\t' || cmd[n] == '\0'))
			return 0;
	}
	return *cmd != '\0';
}

/* The function's user as its environment and its start's errors name
 * it: "nobody", its home, and "nobody (uid 65534)". */
struct fn_user {
	char name[64];
	char home[256]; /* "" when it has no entry */
	char who[96];
};

static void fn_user(const struct rt_sandbox *sb, struct fn_user *u)
{
	uid_t uid = sb->set_id ? sb->uid : geteuid();
	struct passwd pw, *res = NULL;
	char buf[4096];

	memset(u, 0, sizeof(*u));
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res != NULL) {
		snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
		snprintf(u->home, sizeof(u->home), "%s", pw.pw_dir);
		snprintf(u->who, sizeof(u->who), "%s (uid %u)", pw.pw_name,
			 (unsigned)uid);
	} else {
		snprintf(u->who, sizeof(u->who), "uid %u", (unsigned)uid);
	}
}

/* Appends "NAME=value" to `out` at `*k`. */
static void env_add(char **out, size_t *k, const char *name, const char *val)
{
	out[*k] = malloc(strlen(name) + strlen(val) + 2);
	if (out[*k] != NULL)
		sprintf(out[(*k)++], "%s=%s", name, val);
}

/* Keeps the last of the entries of `env` that set one name (a function's
 * `env` overrides the defaults, the format's its `env`). */
static void env_dedup(char **env)
{
	size_t i, j, k = 0, n;

	for (i = 0; env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		int later = 0;

		n = eq != NULL ? (size_t)(eq - env[i]) + 1 : strlen(env[i]);
		for (j = i + 1; env[j] != NULL && !later; j++)
			later = strncmp(env[i], env[j], n) == 0;
		if (later)
			free(env[i]);
		else
			env[k++] = env[i];
	}
	env[k] = NULL;
}

/* Builds the environment, that of a login (environ(7)), not the worker's:
 * PATH (the default below), HOME, USER and LOGNAME of the function's user,
 * the worker's LANG and TZ, then the spec's (FN_* and the function's env,
 * which may set any of those), then the endpoint's (PORT, FN_LISTENER)
 * and the format's (lambda.h). Nothing else of the worker's reaches it. */
static char **build_env(struct rt_instance *in, const struct fn_user *u)
{
	static const char *const keep[] = { "LANG", "TZ", NULL };
	json_t *env = json_object_get(in->spec, "env"), *v;
	size_t n = json_array_size(env), i, k = 0;
	/* PATH, HOME, USER, LOGNAME, keep, env, the endpoint's two,
	 * FN_NOTIFY_FD, the format's, the NULL */
	char **out = calloc(4 + 2 + n + 2 + 1 + RT_LAMBDA_ENV_MAX + 1,
			    sizeof(char *));
	const char *val;

	if (out == NULL)
		return NULL;
	env_add(out, &k, "PATH", RT_DEFAULT_PATH);
	/* A user without a home (or an entry) gets "/", as login does. */
	env_add(out, &k, "HOME", u->home[0] != '\0' ? u->home : "/");
	if (u->name[0] != '\0') {
		env_add(out, &k, "USER", u->name);
		env_add(out, &k, "LOGNAME", u->name);
	}
	for (i = 0; keep[i] != NULL; i++)
		if ((val = getenv(keep[i])) != NULL)
			env_add(out, &k, keep[i], val);
	json_array_foreach (env, i, v) {
		if (json_is_string(v) && strchr(json_string_value(v), '=') &&
		    (out[k] = strdup(json_string_value(v))) != NULL)
			k++;
	}
	if (rt_endpoint_env(in, out, &k) < 0)
		rt_log(RT_LOG_WARN, "%s: out of memory for PORT", in->id);
	if (rt_lambda_env(in, out, &k) < 0)
		rt_log(RT_LOG_WARN, "%s: out of memory for the env", in->id);
	if (rt_ready_env(in, out, &k) < 0)
		rt_log(RT_LOG_WARN, "%s: out of memory for FN_NOTIFY_FD",
		       in->id);
	out[k] = NULL;
	env_dedup(out);
	return out;
}

static void free_strv(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* Whether `cmd` is plain words the worker can exec itself, without a
 * shell: no quotes, expansions, globs, redirections or assignments. */
static int plain_words(const char *cmd)
{
	return simple_command(cmd) && strpbrk(cmd, "'\"\\$*?[]~={}#%") == NULL;
}

/* Splits plain words on blanks into a NULL-terminated vector. */
static char **split_words(const char *cmd)
{
	size_t n = strlen(cmd) / 2 + 2, k = 0;
	char **v = calloc(n, sizeof(char *)), *copy = strdup(cmd), *tok,
	     *save = NULL;

	if (v == NULL || copy == NULL) {
		free(v);
		free(copy);
		return NULL;
	}
	for (tok = strtok_r(copy, " \t", &save); tok != NULL && k + 1 < n;
	     tok = strtok_r(NULL, " \t", &save))
		v[k++] = strdup(tok);
	free(copy);
	return v;
}

/* The places `name` may be along the PATH of `env` (the function's, not
 * the worker's), in order: a NULL-terminated vector, or NULL when `name`
 * has a slash (it is its own path) or for want of memory. The child tries
 * them as the function's user, since what the worker (root) may run, the
 * function may not: a PATH entry under a private home, say. */
static char **program_paths(const char *name, char **env)
{
	const char *path = RT_DEFAULT_PATH, *p, *e;
	size_t i, n = 2, k = 0;
	char **v;

	if (strchr(name, '/') != NULL)
		return NULL;
	for (i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			path = env[i] + 5;
	for (p = path; *p; p++)
		n += *p == ':';
	v = calloc(n, sizeof(char *));
	for (p = path; v != NULL && *p && k + 1 < n; p = *e ? e + 1 : e) {
		struct rt_buf b = { 0 };

		e = strchr(p, ':');
		if (e == NULL)
			e = p + strlen(p);
		rt_buf_printf(&b, "%.*s/%s", (int)(e - p), e > p ? p : ".",
			      name);
		if (b.data == NULL) {
			free_strv(v);
			return NULL;
		}
		v[k++] = b.data;
	}
	return v;
}

/* Opens `fd` (taken) as pipe `p` of run `r`. */
static void run_pipe(struct rt_run *r, uv_pipe_t *p, int fd)
{
	uv_pipe_init(r->sup->loop, p, 0);
	p->data = r;
	r->nopen++;
	uv_pipe_open(p, fd);
}

/* The limits of `spec`: "memory" MB, "pids", "cpu" millicores. */
static void spec_limits(json_t *spec, struct rt_cg_limits *lim)
{
	long long mb = json_integer_value(json_object_get(spec, "memory"));

	lim->memory_bytes = mb > 0 ? mb << 20 : 0;
	lim->pids = json_integer_value(json_object_get(spec, "pids"));
	lim->cpu_millis = json_integer_value(json_object_get(spec, "cpu"));
}

/* The name of a spawn's groups: "tenant:ns:fn:N.TAG". */
static char *group_name(const struct rt_instance *in, const char *tag)
{
	struct rt_buf d = { 0 };
	size_t i;

	if (rt_buf_printf(&d, "%s.%s", in->id, tag) < 0)
		return NULL;
	for (i = 0; i < d.len; i++)
		if (d.data[i] == '/')
			d.data[i] = ':';
	return d.data;
}

struct rt_run *rt_run_spawn_with(struct rt_instance *in, int calls,
				 const char *tag, struct rt_sandbox *pre,
				 const char **why)
{
	struct rt_sup *s = in->sup;
	const char *cmd = json_string_value(
		json_object_get(in->spec, "command"));
	const char *cwd = json_string_value(json_object_get(in->spec, "cwd"));
	const char *code_dir = json_string_value(
		json_object_get(in->spec, "code_dir"));
	struct rt_buf script = { 0 };
	char *shell[4] = { "/bin/sh", "-c", NULL, NULL };
	char **argv = shell, **words = NULL, **env = NULL, **paths = NULL;
	char *cgroup = NULL;
	struct rt_cg_limits lim;
	struct rt_cg_plan plan = { 0 };
	struct rt_sandbox sb;
	struct fn_user user;
	struct rt_child_args a;
	struct rt_run *r = NULL, *done = NULL;
	/* err: stderr (the log); in, out: a call's stdin and stdout */
	int err[2] = { -1, -1 }, ip[2] = { -1, -1 }, op[2] = { -1, -1 };
	int np[2] = { -1, -1 }; /* ready notify: FN_NOTIFY_FD */
	sigset_t all, old;
	pid_t pid, init = 0;
	void *stack = NULL;
	struct rt_sb_view nv; /* a new view, until the instance keeps it */
	int need_view = 0, rc;

	/* The user and the sandbox: what the child needs is read here, or
	 * was (rt_run_open). */
	if (pre != NULL) {
		sb = *pre;
		free(pre);
	} else if (rt_sandbox_parse(in->spec, &sb, why) < 0) {
		return NULL;
	}
	if (cmd == NULL || cmd[0] == '\0') {
		rt_sandbox_free(&sb);
		*why = "no command";
		return NULL;
	}
	/* Plain words are exec'ed directly; a simple command through
	 * `exec` in a shell; anything else as shell code. Either way the
	 * pid is the program's own when it can be. */
	fn_user(&sb, &user);
	env = build_env(in, &user);
	if (plain_words(cmd) && (words = split_words(cmd)) != NULL &&
	    words[0] != NULL &&
	    ((paths = program_paths(words[0], env)) != NULL ||
	     strchr(words[0], '/') != NULL)) {
		argv = words;
	} else {
		if (simple_command(cmd))
			rt_buf_printf(&script, "exec %s", cmd);
		else
			rt_buf_puts(&script, cmd);
		shell[2] = script.data;
	}
	r = calloc(1, sizeof(*r));
	if (r != NULL)
		r->notify_fd = -1;
	if (env == NULL || r == NULL || pipe2(err, O_CLOEXEC) < 0 ||
	    (calls && (pipe2(ip, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0)) ||
	    (!rt_instance_mode_is(in, "cold") && rt_ready_wants_notify(in) &&
	     pipe2(np, O_CLOEXEC) < 0)) {
		*why = "out of resources";
		goto out;
	}
	assert(!in->freeing);
	spec_limits(in->spec, &lim);
	if ((cgroup = group_name(in, tag)) == NULL ||
	    rt_cg_plan(&s->cg, cgroup, &lim, &plan) < 0) {
		*why = "out of memory";
		goto out;
	}
	if (plan.n == 0) {
		free(cgroup); /* no limit it can enforce with a group */
		cgroup = NULL;
	}
	a = (struct rt_child_args){ getpid(),
				    ip[0],
				    calls ? op[1] : err[1],
				    err[1],
				    np[1],
				    cwd != NULL && cwd[0] != '\0' ? cwd
				    : code_dir == NULL		  ? "/"
				    : sb.isolate ? RT_SB_CODE_AT
						 : code_dir,
				    (cwd == NULL || cwd[0] == '\0') &&
					    code_dir != NULL && !sb.isolate,
				    argv,
				    env,
				    paths,
				    &plan,
				    &sb,
				    NULL,
				    user.who,
				    user.name[0] != '\0' ? user.name
							 : user.who };
	/* A sandbox's view, made once for its init, the instance's revision
	 * and what it binds (a thread cannot be started once the pid namespace
	 * below is entered). */
	need_view = sb.isolate && (in->ns == NULL || in->ns->view.mnt < 0 ||
				   in->ns->view_rev != in->revision ||
				   !rt_sandbox_view_fits(&in->ns->view, &sb));
	if (need_view && (rc = rt_sandbox_view(&sb, &nv)) < 0)
		rt_log(RT_LOG_DEBUG, "%s: sandbox view: %s", in->id,
		       strerror(-rc)); /* this run makes its own */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* A sandbox: its pid namespace and init first (the instance's own,
	 * kept from its last run, or a new one), then the function's own
	 * process, forked into that namespace as our child. */
	if (sb.isolate && in->ns != NULL &&
	    rt_sandbox_enter_pidns(in->ns->pidfd) < 0)
		rt__ns_release(in); /* its init is gone: a new one */
	if (sb.isolate && in->ns == NULL) {
		struct rt_ns_init *ns = calloc(1, sizeof(*ns));

		init = ns != NULL ? rt_sandbox_start_init(&stack) : -ENOMEM;
		if (init < 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			free(ns);
			rt_log(RT_LOG_WARN, "%s: sandbox init: %s", in->id,
			       strerror((int)-init));
			*why = "cannot start the sandbox's init";
			goto out;
		}
		ns->pid = init;
		ns->stack = stack;
		rt_sandbox_view_none(&ns->view);
		ns->pidfd = rt_sandbox_pidfd(init);
		ns->in = in;
		if (ns->pidfd < 0 ||
		    rt_idmap_put(&s->inits, (uint64_t)init, ns) < 0) {
			/* Not kept (it could not be entered or reaped by
			 * SIGCHLD): it serves this run and goes. */
			rt_sandbox_leave_pidns();
			sigprocmask(SIG_SETMASK, &old, NULL);
			kill(init, SIGKILL);
			waitpid(init, NULL, 0);
			ns->in = NULL;
			rt__ns_reaped(ns);
			*why = "cannot keep the sandbox's init";
			goto out;
		}
		in->ns = ns;
	}
	if (need_view) {
		/* The new view, or none (an old one is another revision's). */
		rt_sandbox_view_close(&in->ns->view);
		in->ns->view = nv;
		in->ns->view_rev = in->revision;
		need_view = 0;
	}
	if (sb.isolate && in->ns->view.mnt >= 0) {
		a.view = &in->ns->view;
		rt_sandbox_view_check(a.view);
	}
	pid = rt__start_child(&a);
	if (sb.isolate && rt_sandbox_leave_pidns() < 0)
		rt_log(RT_LOG_ERROR,
		       "cannot leave a sandbox's pid namespace: %s",
		       strerror(errno));
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		*why = sb.isolate ? "cannot fork into the sandbox"
				  : "cannot fork";
		goto out;
	}
	if (rt_idmap_put(&s->runs, (uint64_t)pid, r) < 0) {
		/* It could not be reaped by SIGCHLD: end it here. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		rt_cgroup_finish(s, cgroup);
		cgroup = NULL;
		*why = "out of memory";
		goto out;
	}
	r->in = in;
	r->pid = pid;
	r->sup = s;
	r->notify_fd = np[0];
	np[0] = -1;
	r->calls = calls;
	r->cgroup = cgroup;
	cgroup = NULL;
	in->runs++;
	r->next = s->open_runs;
	if (r->next != NULL)
		r->next->prev = r;
	s->open_runs = r;
	run_pipe(r, &r->out, err[0]);
	err[0] = -1;
	uv_read_start((uv_stream_t *)&r->out, rt_read_alloc, rt__on_output);
	if (calls) {
		run_pipe(r, &r->req, ip[1]);
		run_pipe(r, &r->resp, op[0]);
		ip[1] = op[0] = -1;
		uv_read_start((uv_stream_t *)&r->resp, rt_read_alloc,
			      s->ev->call_output != NULL ? s->ev->call_output
							 : rt__on_output);
	}
	done = r;
	r = NULL;
out:
	if (err[0] >= 0)
		close(err[0]);
	if (err[1] >= 0)
		close(err[1]);
	if (ip[0] >= 0)
		close(ip[0]);
	if (ip[1] >= 0)
		close(ip[1]);
	if (op[0] >= 0)
		close(op[0]);
	if (op[1] >= 0)
		close(op[1]);
	if (np[0] >= 0)
		close(np[0]);
	if (np[1] >= 0)
		close(np[1]);
	if (need_view)
		rt_sandbox_view_close(&nv);
	free(r);
	free(cgroup);
	rt_cg_plan_free(&plan);
	rt_sandbox_free(&sb);
	free_strv(env);
	free_strv(words);
	free_strv(paths);
	rt_buf_free(&script);
	return done;
}

struct rt_run *rt_run_spawn(struct rt_instance *in, int calls, const char *tag,
			    const char **why)
{
	return rt_run_spawn_with(in, calls, tag, NULL, why);
}

int rt_run_open(struct rt_instance *in, rt_opened_fn done, void *arg,
		struct rt_opening **op, struct rt_sandbox **ready,
		const char **why)
{
	struct rt_sandbox sb;
	int rc;

	*op = NULL;
	*ready = NULL;
	rc = rt_sandbox_parse_only(in->spec, &sb, why);
	if (rc < 0)
		return rc;
	if (rt_sandbox_needs_thread(&sb)) {
		*op = rt_open_binds_async(in->sup->loop, &sb, done, arg, why);
		if (*op == NULL) {
			rt_sandbox_free(&sb);
			return -EAGAIN;
		}
		return 1;
	}
	/* Only the worker's own directories: opened here, at once. */
	if (sb.isolate && (rc = rt_sandbox_open_binds(&sb, why)) < 0) {
		rt_sandbox_free(&sb);
		return rc;
	}
	*ready = malloc(sizeof(**ready));
	if (*ready == NULL) {
		rt_sandbox_free(&sb);
		*why = "out of memory";
		return -ENOMEM;
	}
	**ready = sb;
	return 0;
}

/*
 * supervise.c - the runtime spawner: starts an instance's process, keeps
 * its output, restarts it per its restart policy with backoff and a start
 * limit, and stops it (SIGTERM to its process group, SIGKILL after a
 * grace period). It reports through struct rt_sup_events and knows
 * nothing of the controller or its protocol (see supervise.h).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lambda.h"
#include "ready.h"
#include "sandbox.h"
#include "supervise.h"
#include "wire.h" /* rt_read_alloc */

const char *rt_state_name(enum rt_state s)
{
	static const char *const names[] = { "starting", "running", "backoff",
					     "stopping", "stopped", "failed" };

	assert((unsigned)s < sizeof(names) / sizeof(names[0]));
	return names[s];
}

void rt_exit_words(const struct rt_exit *e, char *out, size_t n)
{
	if (e->oom)
		snprintf(out, n, "oom");
	else if (e->signal)
		snprintf(out, n, "signal %d", e->signal);
	else
		snprintf(out, n, "status %d", e->code);
}

static void ns_release(struct rt_instance *in);

static void set_state_v(struct rt_instance *in, enum rt_state s,
			const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void set_state_v(struct rt_instance *in, enum rt_state s,
			const char *fmt, va_list ap)
{
	assert((unsigned)s < RT_STATE_COUNT);
	assert(!in->freeing);
	in->state = s;
	/* Stopped or failed, it keeps nothing running: not its sandbox,
	 * nor a runtime API (lambda.c). */
	if (s == RT_STOPPED || s == RT_FAILED) {
		ns_release(in);
		rt_lambda_forget(in);
	}
	vsnprintf(in->reason, sizeof(in->reason), fmt, ap);
	if (in->sup->ev->state != NULL)
		in->sup->ev->state(in);
}

void rt_instance_set_state(struct rt_instance *in, enum rt_state s,
			   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_state_v(in, s, fmt, ap);
	va_end(ap);
}

#define set_state rt_instance_set_state

/* =============================================================== logs */

static void log_open(struct rt_instance *in)
{
	struct stat st;

	if (in->log_fd >= 0 || in->log_path == NULL)
		return;
	in->log_fd = open(in->log_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	in->log_size = in->log_fd >= 0 && fstat(in->log_fd, &st) == 0
			       ? (size_t)st.st_size
			       : 0;
}

/* Shifts log -> log.1 -> log.2 ... keeping RT_LOG_KEEP old files. */
static void log_rotate(struct rt_instance *in)
{
	char from[4200], to[4200];
	int i;

	if (in->log_fd >= 0)
		close(in->log_fd);
	in->log_fd = -1;
	for (i = RT_LOG_KEEP; i >= 1; i--) {
		snprintf(to, sizeof(to), "%s.%d", in->log_path, i);
		if (i == 1)
			snprintf(from, sizeof(from), "%s", in->log_path);
		else
			snprintf(from, sizeof(from), "%s.%d", in->log_path,
				 i - 1);
		rename(from, to);
	}
	log_open(in);
}

/* Appends process output to the log. The file is in the page cache; an
 * append does not wait for the disk. */
void rt_log_write(struct rt_instance *in, const char *p, size_t n)
{
	ssize_t w;

	log_open(in);
	if (in->log_fd < 0)
		return;
	if (in->log_size + n > RT_LOG_ROTATE_BYTES && in->log_size > 0)
		log_rotate(in);
	if (in->log_fd < 0)
		return;
	w = write(in->log_fd, p, n);
	if (w > 0)
		in->log_size += (size_t)w;
}

/* Appends the last `max` bytes of `path` (all of it if smaller) to `out`;
 * returns how many were appended. */
static size_t tail_file(const char *path, size_t max, struct rt_buf *out)
{
	struct stat st;
	size_t start, n;
	char *buf;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	n = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	start = (size_t)st.st_size - n;
	buf = malloc(n + 1);
	r = buf ? pread(fd, buf, n, (off_t)start) : -1;
	if (r > 0)
		rt_buf_append(out, buf, (size_t)r);
	free(buf);
	close(fd);
	return r > 0 ? (size_t)r : 0;
}

/* The tail of log file `path` and of its last rotated one. */
static int log_tail(const char *path, size_t max, struct rt_buf *out)
{
	struct rt_buf cur = { 0 }, older = { 0 };
	char old[4200];
	const char *p;
	size_t got;

	got = tail_file(path, max, &cur);
	if (got < max) {
		snprintf(old, sizeof(old), "%s.1", path);
		tail_file(old, max - got, &older);
	}
	rt_buf_append(out, older.data, older.len);
	rt_buf_append(out, cur.data, cur.len);
	rt_buf_free(&cur);
	rt_buf_free(&older);
	/* Start at a line boundary when the tail cut a line. */
	if (out->len > 0 && out->len >= max) {
		p = memchr(out->data, '\n', out->len);
		if (p != NULL && (size_t)(p - out->data) + 1 < out->len) {
			size_t cut = (size_t)(p - out->data) + 1;

			memmove(out->data, out->data + cut, out->len - cut);
			out->len -= cut;
			out->data[out->len] = '\0';
		}
	}
	return 0;
}

/* The log file of instance `id` in `dir`: DIR/tenant:ns:fn:N.log (one
 * name: its slashes become colons), or NULL for want of memory. */
static char *log_file(const char *dir, const char *id)
{
	struct rt_buf path = { 0 };
	size_t i;

	if (rt_buf_printf(&path, "%s/%s.log", dir, id) < 0)
		return NULL;
	for (i = strlen(dir) + 1; i < path.len; i++)
		if (path.data[i] == '/')
			path.data[i] = ':';
	return path.data;
}

int rt_instance_log_tail(struct rt_instance *in, size_t max, struct rt_buf *out)
{
	if (in->log_path == NULL)
		return 0;
	return log_tail(in->log_path, max, out);
}

int rt_sup_log_tail(struct rt_sup *s, const char *id, size_t max,
		    struct rt_buf *out)
{
	char *path;
	int rc = 0;

	if (s->log_dir == NULL || id == NULL || strchr(id, '/') == NULL)
		return -ENOENT;
	path = log_file(s->log_dir, id);
	if (path == NULL)
		return -ENOMEM;
	if (access(path, F_OK) < 0)
		rc = -ENOENT;
	else
		rc = log_tail(path, max, out);
	free(path);
	return rc;
}

/* ============================================================ spawning */

static void schedule(struct rt_instance *in, int ms, uv_timer_cb cb);
static void on_backoff_done(uv_timer_t *t);

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

static void free_if_unused(struct rt_instance *in);

/* A sandbox's pid namespace and its init (pid 1 there), kept by an
 * instance across its runs: a restart, or a cold slot's next call, forks
 * into it instead of making a new one. What a run leaves behind goes
 * with the run's process group and cgroups; the init, and with it the
 * namespace, goes when the instance stops, fails or is removed. The
 * record lives until the init is reaped. */
struct rt_ns_init {
	pid_t pid;		/* the init, until reaped */
	int pidfd;		/* to enter its namespace, or -1 */
	struct rt_sb_view view; /* its view (rt_sandbox_view), or all -1 */
	long long view_rev;	/* the instance's revision it was made for */
	void *stack;		/* its stack until reaped (sandbox.h) */
	struct rt_instance *in; /* whose, or NULL once let go */
};

/* Lets go of an instance's sandbox: its init is killed, and everything
 * in its namespace with it. */
static void ns_release(struct rt_instance *in)
{
	struct rt_ns_init *ns = in->ns;

	if (ns == NULL)
		return;
	in->ns = NULL;
	ns->in = NULL;
	if (ns->pidfd >= 0)
		close(ns->pidfd);
	ns->pidfd = -1;
	rt_sandbox_view_close(&ns->view);
	kill(ns->pid, SIGKILL); /* not reaped yet: still its pid */
}

pid_t rt_instance_init(const struct rt_instance *in)
{
	return in->ns != NULL ? in->ns->pid : 0;
}

/* Forgets a reaped init. */
static void ns_reaped(struct rt_ns_init *ns)
{
	if (ns->in != NULL) {
		ns->in->ns = NULL;
		ns->in = NULL;
	}
	if (ns->pidfd >= 0)
		close(ns->pidfd);
	rt_sandbox_view_close(&ns->view);
	rt_sandbox_free_stack(ns->stack);
	free(ns);
}

/* Frees a run once its process is reaped and its pipes closed; what is
 * left in its memory group goes with it. */
static void run_release(struct rt_run *r)
{
	struct rt_instance *in = r->in;

	if (!r->reaped || r->nopen > 0)
		return;
	assert(r->nopen == 0);
	assert(rt_idmap_get(&r->sup->runs, (uint64_t)r->pid) != r);
	rt_cgroup_finish(r->sup, r->cgroup);
	r->cgroup = NULL;
	if (r->notify_fd >= 0)
		close(r->notify_fd);
	if (in != NULL) {
		assert(in->runs > 0);
		in->runs--;
		free_if_unused(in);
	}
	rt_buf_free(&r->line);
	free(r);
}

static void run_handle_closed(uv_handle_t *h)
{
	struct rt_run *r = h->data;

	assert(r->nopen > 0);
	if (--r->nopen > 0)
		return;
	if (r->prev != NULL)
		r->prev->next = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	if (r->prev == NULL && r->sup->open_runs == r)
		r->sup->open_runs = r->next;
	r->next = r->prev = NULL;
	run_release(r);
}

/* Closes one of a run's pipes (if open). */
void rt_run_close(struct rt_run *r, uv_pipe_t *p)
{
	if (p->data == r && !uv_is_closing((uv_handle_t *)p))
		uv_close((uv_handle_t *)p, run_handle_closed);
}

void rt_sup_close(struct rt_sup *s)
{
	struct rt_run *r = s->open_runs, *next;

	for (; r != NULL; r = next) {
		next = r->next;
		rt_run_close(r, &r->out);
		rt_run_close(r, &r->req);
		rt_run_close(r, &r->resp);
	}
}

/* Follows a run's output for its last complete line (r->last): the end
 * of a line longer than the buffer, blanks and CRs trimmed, control
 * characters as blanks and other bytes than ASCII as '?'. */
static void last_line(struct rt_run *r, const char *p, size_t n)
{
	unsigned char c;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\n') {
			while (r->ncur > 0 && (r->cur[r->ncur - 1] == '\r' ||
					       r->cur[r->ncur - 1] == ' '))
				r->ncur--;
			if (r->ncur > 0) {
				memcpy(r->last, r->cur, r->ncur);
				r->last[r->ncur] = '\0';
			}
			r->ncur = 0;
			continue;
		}
		if (r->ncur == sizeof(r->cur) - 1) {
			/* Keep the end: the cause is usually last. */
			memmove(r->cur, r->cur + 1, r->ncur - 1);
			r->ncur--;
		}
		/* ASCII only: a reason travels in JSON, which a byte of a
		 * cut (or invalid) UTF-8 sequence would break. */
		c = (unsigned char)p[i];
		r->cur[r->ncur++] = c >= 0x80		   ? '?'
				    : c < ' ' || c == 0x7f ? ' '
							   : (char)c;
	}
}

/* What a run wrote on its log pipe: to the log, and followed for its last
 * line. */
static void run_output(struct rt_run *r, const char *p, size_t n)
{
	if (r->in == NULL)
		return;
	rt_log_write(r->in, p, n);
	last_line(r, p, n);
}

static void on_output(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_run *r = s->data;

	if (n > 0)
		run_output(r, buf->base, (size_t)n);
	if (n < 0)
		rt_run_close(r, (uv_pipe_t *)s);
}

/* At a run's exit: what it wrote and its pipe holds still, read now (the
 * pipe is non-blocking; at most 64 KiB), so that its last line is known
 * when its exit is reported. */
static void drain_output(struct rt_run *r)
{
	char buf[4096];
	int fd = -1, i;
	ssize_t n;

	if (r->out.data != r || uv_is_closing((uv_handle_t *)&r->out) ||
	    uv_fileno((uv_handle_t *)&r->out, &fd) != 0 || fd < 0)
		return;
	for (i = 0; i < 16 && (n = read(fd, buf, sizeof(buf))) > 0; i++)
		run_output(r, buf, (size_t)n);
}

/* Kills a run's process and its group (a no-op once reaped: the pid may
 * belong to another process then). */
static void run_kill(struct rt_run *r)
{
	if (r->reaped)
		return;
	kill(-r->pid, SIGKILL);
	kill(r->pid, SIGKILL);
}

static void after_exit(struct rt_instance *in, int64_t code, int sig);

void rt_sup_reap(struct rt_sup *s)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct rt_run *r = rt_idmap_get(&s->runs, (uint64_t)pid);
		struct rt_instance *in;

		if (r == NULL) {
			/* A sandbox's init: its namespace is empty now. */
			struct rt_ns_init *ns = rt_idmap_get(&s->inits,
							     (uint64_t)pid);

			if (ns != NULL) {
				rt_idmap_del(&s->inits, (uint64_t)pid);
				ns_reaped(ns);
			}
			continue;
		}
		assert(r->pid == pid && !r->reaped);
		rt_idmap_del(&s->runs, (uint64_t)pid);
		r->reaped = 1;
		r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
		r->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		/* Whatever is left of its process group goes with it (and
		 * of its cgroups when the run is released), and nothing
		 * more is written to it. Without cgroups, what left the
		 * group could stay in the sandbox: the sandbox goes too. */
		kill(-pid, SIGKILL);
		if (r->in != NULL && !r->in->freeing && r->cgroup == NULL &&
		    !(r->in->run == r && r->in->cgroup != NULL))
			ns_release(r->in);
		rt_run_close(r, &r->req);
		in = r->in;
		if (r->cold) {
			if (s->ev->call_exited != NULL)
				s->ev->call_exited(r);
		} else if (in != NULL && in->run == r) {
			drain_output(r);
			if (r->ncur > 0)
				last_line(r, "\n", 1);
			memcpy(in->last_words, r->last, sizeof(in->last_words));
			in->run = NULL;
			in->pid = 0;
			after_exit(in, r->code, r->sig);
		}
		run_release(r);
	}
}

void rt_sup_kill_runs(struct rt_sup *s)
{
	size_t i, n;
	void **v = rt_idmap_values(&s->runs, &n);

	for (i = 0; v != NULL && i < n; i++)
		run_kill(v[i]);
	free(v);
	v = rt_idmap_values(&s->inits, &n);
	for (i = 0; v != NULL && i < n; i++)
		kill(((struct rt_ns_init *)v[i])->pid, SIGKILL);
	free(v);
}

/* Kills every process of `in` that is not its live run: those of its
 * calls. */
static void kill_other_runs(struct rt_instance *in)
{
	size_t i, n;
	void **v;

	if (in->runs == (in->run != NULL ? 1 : 0))
		return; /* none */
	v = rt_idmap_values(&in->sup->runs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_run *r = v[i];

		if (r->in == in && r != in->run)
			run_kill(r);
	}
	free(v);
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

/* Records a spawn failure as an exit of status 127. */
static void spawn_failed(struct rt_instance *in, const char *why)
{
	snprintf(in->reason, sizeof(in->reason), "spawn failed: %s", why);
	/* The cause after_exit gives (else "exited (status 127)"). */
	snprintf(in->unready, sizeof(in->unready), "spawn failed: %s", why);
	snprintf(in->last_words, sizeof(in->last_words),
		 "fnfs: spawn failed: %.120s", why);
	rt_log(RT_LOG_WARN, "%s: spawn failed: %s", in->id, why);
	if (in->sup->ev->spawned != NULL)
		in->sup->ev->spawned(in, why);
	after_exit(in, 127, 0);
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

/* What the child of a spawn is given. */
struct child_args {
	pid_t worker;
	int in, out, err;
	int notify; /* FN_NOTIFY_FD's write end, or -1 */
	const char *cwd;
	int code_cwd; /* cwd is the code's tree: opened before the drop */
	char **argv, **env;
	char **paths; /* where argv[0] may be, in order, or NULL */
	const struct rt_cg_plan *cg;
	const struct rt_sandbox *sb;
	struct rt_sb_view *view; /* the instance's view, or NULL */
	const char *who;	 /* the user: "nobody (uid 65534)" */
	const char *name;	 /* its name ("nobody"), else `who` */
};

/* In the child: says why `what` (a program, or "cwd DIR") cannot be used
 * by the function's user, errno `err`: a path in the sandbox's private
 * /tmp is not the host's. */
static void child_cannot(const struct child_args *a, const char *verb,
			 const char *path, int err)
{
	if (err == ENOENT && a->sb->isolate && strncmp(path, "/tmp/", 5) == 0)
		rt_child_say(2, 0, "cannot ", verb, path,
			     ": /tmp is private to the sandbox: put the "
			     "program where ",
			     a->name, " can read it, or in code/",
			     (char *)NULL);
	else
		rt_child_say(2, err, "cannot ", verb, path, " as ", a->who,
			     (char *)NULL);
}

/* The child's side of a spawn: die with the worker, a session and
 * process group of its own, its cgroups, its sandbox, stdio, its user,
 * working directory, nothing else open, then the program. It runs on the
 * worker's memory (start_child): system calls only, no allocation, no
 * lock, nothing written but its own stack (and errno). */
static __attribute__((noreturn)) void child(const struct child_args *a)
{
	const char *failed = "?";
	sigset_t none;
	int null, sig, rc, code = -1;

	/* The worker's handlers (libuv's) must not run here: a signal meant
	 * for this process would reach the worker's own signal pipe. Signals
	 * are blocked across the fork; reset them all, then unblock. */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* In a sandbox's pid namespace getppid() is 0. */
	if (a->sb->isolate ? !rt_sandbox_worker_alive()
			   : getppid() != a->worker)
		_exit(127); /* the worker died already */
	setsid();
	/* Its groups first: everything it starts is in them too. */
	if (a->cg->n > 0 && (rc = rt_cg_apply(a->cg, &failed)) < 0) {
		rt_child_say(a->err, -rc, "cgroup ", failed, (char *)NULL);
		_exit(127);
	}
	if (rt_sandbox_enter(a->sb, a->view, a->err) < 0)
		_exit(127);
	null = a->in >= 0 ? a->in : open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(a->out, 1) < 0 ||
	    dup2(a->err, 2) < 0)
		_exit(127);
	/* The code's tree is under the worker's private directory: without
	 * a sandbox, the worker opens it, the function enters it by that
	 * descriptor; a sandbox has it at RT_SB_CODE_AT, a path the function
	 * may walk, for programs that open themselves by their absolute
	 * path (python3 app.py, node app.js). */
	if (a->code_cwd &&
	    (code = open(a->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rt_child_say(2, errno, "code ", a->cwd, (char *)NULL);
		_exit(127);
	}
	if (rt_sandbox_drop(a->sb, 2) < 0)
		_exit(127);
	/* As the function's user: its permissions apply. */
	if (code >= 0 ? fchdir(code) < 0 : chdir(a->cwd) < 0) {
		child_cannot(a, "enter its cwd ", a->cwd, errno);
		_exit(127);
	}
	/* ready notify: its pipe at the number FN_NOTIFY_FD names, kept
	 * open across the exec (dup2 clears close-on-exec). */
	if (a->notify >= 0 &&
	    (a->notify == RT_READY_NOTIFY_FD
		     ? fcntl(a->notify, F_SETFD, 0)
		     : dup2(a->notify, RT_READY_NOTIFY_FD)) < 0)
		_exit(127);
	rt_close_fds(a->notify >= 0 ? RT_READY_NOTIFY_FD : -1);
	if (a->paths == NULL) {
		execve(a->argv[0], a->argv, a->env);
	} else {
		/* The PATH search as execvp does it, as the function's user:
		 * a directory it may not enter is passed over. */
		int seen = ENOENT;
		size_t i;

		for (i = 0; a->paths[i] != NULL; i++) {
			execve(a->paths[i], a->argv, a->env);
			if (errno == EACCES)
				seen = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR)
				break;
		}
		if (a->paths[i] == NULL)
			errno = seen;
	}
	child_cannot(a, "run ", a->argv[0], errno);
	_exit(127);
}

/* Starts the child of a spawn with vfork: no copy of the worker's page
 * tables, no copy-on-write faults in the worker while its children have
 * not exec'ed yet, no TLB shootdowns (with 100 instances to start at
 * once, a fork each was most of the CPU a spawn cost). The worker waits
 * until the child has exec'ed or died; signals are blocked meanwhile. A
 * function of its own, so that the frame the child shares is this one. */
static __attribute__((noinline)) pid_t start_child(const struct child_args *a)
{
	pid_t pid = vfork();

	if (pid == 0)
		child(a);
	return pid;
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
	struct child_args a;
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
	a = (struct child_args){ getpid(),
				 ip[0],
				 calls ? op[1] : err[1],
				 err[1],
				 np[1],
				 cwd != NULL && cwd[0] != '\0' ? cwd
				 : code_dir == NULL	       ? "/"
				 : sb.isolate		       ? RT_SB_CODE_AT
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
				 user.name[0] != '\0' ? user.name : user.who };
	/* A sandbox's view, made once for its init and the instance's
	 * revision (a thread cannot be started once the pid namespace below
	 * is entered). */
	need_view = sb.isolate && (in->ns == NULL || in->ns->view.mnt < 0 ||
				   in->ns->view_rev != in->revision);
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
		ns_release(in); /* its init is gone: a new one */
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
			ns_reaped(ns);
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
	pid = start_child(&a);
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
	uv_read_start((uv_stream_t *)&r->out, rt_read_alloc, on_output);
	if (calls) {
		run_pipe(r, &r->req, ip[1]);
		run_pipe(r, &r->resp, op[0]);
		ip[1] = op[0] = -1;
		uv_read_start((uv_stream_t *)&r->resp, rt_read_alloc,
			      s->ev->call_output != NULL ? s->ev->call_output
							 : on_output);
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

/* Whether the instance runs in `mode` ("hot", "cold"). */
int rt_instance_mode_is(const struct rt_instance *in, const char *mode)
{
	const char *m = json_string_value(json_object_get(in->spec, "mode"));

	return m != NULL && strcmp(m, mode) == 0;
}

/* Whether `in` takes its calls on its process's stdin and stdout: a hot
 * instance of format line or json. Those of format http and lambda take
 * them over HTTP; their stdout goes to the log. */
static int stdio_calls(const struct rt_instance *in)
{
	const char *f = json_string_value(json_object_get(in->spec, "format"));

	return rt_instance_mode_is(in, "hot") &&
	       (f == NULL || strcmp(f, "line") == 0 || strcmp(f, "json") == 0);
}

static void spawned(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;

	if (s->ev->spawned != NULL)
		s->ev->spawned(in, NULL);
	if (!in->freeing && in->state == RT_RUNNING && s->ev->ready != NULL)
		s->ev->ready(in, NULL);
}

/* The rest of spawn, with the user and sandbox read (`sb`, taken). */
static void spawn_run(struct rt_instance *in, struct rt_sandbox *sb)
{
	struct rt_sup *s = in->sup;
	struct rt_run *r;
	const char *why = "?";
	char tag[16];

	snprintf(tag, sizeof(tag), "%d", in->spawned);
	r = rt_run_spawn_with(in, stdio_calls(in), tag, sb, &why);
	if (r == NULL) {
		spawn_failed(in, why);
		return;
	}
	in->run = r;
	in->pid = r->pid;
	rt_cgroup_finish(s, in->cgroup);
	in->cgroup = r->cgroup; /* read at its exit for an OOM kill */
	r->cgroup = NULL;
	/* Running once ready: now, or when its readiness says so. */
	if (rt_ready_watch(in) != 0)
		set_state(in, RT_RUNNING, "started");
	spawned(in);
}

/* rt_run_open's answer for a hot instance; ignored once it was stopped
 * (a new start opens again). */
static void spawn_opened(void *arg, struct rt_sandbox *sb, const char *why)
{
	struct rt_instance *in = arg;

	assert(!in->freeing && in->opening != NULL);
	in->opening = NULL;
	if (!in->desired_run || in->run != NULL) {
		if (sb != NULL) {
			rt_sandbox_free(sb);
			free(sb);
		}
		return;
	}
	if (sb == NULL)
		spawn_failed(in, why);
	else
		spawn_run(in, sb);
}

static void spawn(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;
	struct rt_sandbox *sb;
	const char *why = "?";
	int rc;

	assert(in->run == NULL && !in->freeing);
	/* A start while the last one's binds were being opened: this one's
	 * spec may be newer. */
	rt_open_binds_cancel(in->opening);
	in->opening = NULL;
	in->started_ms = rt_now_ms();
	in->started_mono = rt_mono_ms();
	if (in->spawned++ > 0)
		in->restarts++;
	in->oom_pending = 0;
	in->unready[0] = '\0';
	in->last_words[0] = '\0';
	in->draining = 0;
	if (s->simulate || rt_instance_mode_is(in, "cold")) {
		/* A cold instance is a slot: each call forks its own
		 * process. */
		in->pid = 0;
		set_state(in, RT_RUNNING,
			  s->simulate ? "simulated" : "ready for calls");
		spawned(in);
		return;
	}
	if (rt_endpoint_prepare(in, &why) < 0 ||
	    rt_lambda_prepare(in, &why) < 0) {
		spawn_failed(in, why);
		return;
	}
	rc = rt_run_open(in, spawn_opened, in, &in->opening, &sb, &why);
	if (rc < 0)
		spawn_failed(in, why);
	else if (rc == 0)
		spawn_run(in, sb);
}

/* ============================================================= exits */

/* Removes a group; one whose members are still dying is kept on a list
 * and retried (rt_sup_collect). Takes `dir`. */
void rt_cgroup_discard(struct rt_sup *s, char *dir)
{
	char **v;

	if (dir == NULL || rt_cgroup_remove(dir) == 0) {
		free(dir);
		return;
	}
	v = realloc(s->cg_garbage, (size_t)(s->ncg_garbage + 1) * sizeof(*v));
	if (v == NULL) {
		free(dir);
		return;
	}
	s->cg_garbage = v;
	v[s->ncg_garbage++] = dir;
}

int rt_cgroup_finish(struct rt_sup *s, char *name)
{
	const char *roots[RT_CG_COUNT];
	int i, n, oom;

	if (name == NULL)
		return 0;
	oom = rt_cg_oom_kills(&s->cg, name) > 0;
	n = rt_cg_roots(&s->cg, roots);
	for (i = 0; i < n; i++) {
		struct rt_buf dir = { 0 };

		if (rt_buf_printf(&dir, "%s/%s", roots[i], name) < 0)
			continue;
		rt_cgroup_kill(dir.data); /* even what left its group */
		rt_cgroup_discard(s, dir.data);
	}
	free(name);
	return oom;
}

void rt_sup_collect(struct rt_sup *s)
{
	int i, k = 0;

	for (i = 0; i < s->ncg_garbage; i++) {
		/* Only what is dying or escaped the kill at the exit (a
		 * fork racing it) is left in a discarded group. */
		rt_cgroup_kill(s->cg_garbage[i]);
		if (rt_cgroup_remove(s->cg_garbage[i]) == 0)
			free(s->cg_garbage[i]);
		else
			s->cg_garbage[k++] = s->cg_garbage[i];
	}
	s->ncg_garbage = k;
}

static void record_exit(struct rt_instance *in, int64_t code, int sig)
{
	struct rt_exit e = { rt_now_ms(), sig ? -1 : (int)code, sig, 0 };
	int64_t now = rt_mono_ms();
	int i;

	e.oom = rt_cgroup_finish(in->sup, in->cgroup);
	in->cgroup = NULL;
	if (in->oom_pending)
		e.oom = 1;
	memmove(&in->exits[1], &in->exits[0],
		(RT_EXITS_KEPT - 1) * sizeof(in->exits[0]));
	in->exits[0] = e;
	if (in->nexits < RT_EXITS_KEPT)
		in->nexits++;
	/* The start limit counts exits inside the window. */
	assert(in->nrecent >= 0 && in->nrecent <= RT_START_LIMIT + 1);
	if (in->nrecent == RT_START_LIMIT + 1) {
		memmove(&in->recent[0], &in->recent[1],
			RT_START_LIMIT * sizeof(in->recent[0]));
		in->nrecent--;
	}
	in->recent[in->nrecent++] = now;
	for (i = 0; i < in->nrecent;)
		if (in->recent[i] < now - RT_START_WINDOW_MS) {
			memmove(&in->recent[i], &in->recent[i + 1],
				(size_t)(in->nrecent - i - 1) *
					sizeof(in->recent[0]));
			in->nrecent--;
		} else {
			i++;
		}
}

static void after_exit(struct rt_instance *in, int64_t code, int sig)
{
	const char *policy = json_string_value(
		json_object_get(in->spec, "restart_policy"));
	char what[64], cause[sizeof(in->reason)];
	int failure, early = in->state == RT_STARTING;

	assert(!in->freeing && in->run == NULL);
	rt_ready_unwatch(in);
	in->draining = 0; /* what it waited for died with the process */
	record_exit(in, code, sig);
	if (in->sup->ev->exited != NULL)
		in->sup->ev->exited(in, &in->exits[0]);
	assert(!in->freeing);
	rt_exit_words(&in->exits[0], what, sizeof(what));
	/* Why it ended: stopped unready, or its own exit (before it was
	 * ready, maybe). */
	failure = in->exits[0].oom || sig != 0 || code != 0;
	if (in->unready[0] != '\0')
		snprintf(cause, sizeof(cause), "%s", in->unready);
	else if (failure && code == 127 &&
		 strncmp(in->last_words, "fnfs: ", 6) == 0)
		/* Its start failed: the child said why (child()). */
		snprintf(cause, sizeof(cause), "%s", in->last_words + 6);
	else if (failure && in->last_words[0] != '\0')
		/* Its own last words: "python3: can't open file ..." */
		snprintf(cause, sizeof(cause), "exited (%s)%s: %s", what,
			 early ? " before it was ready" : "", in->last_words);
	else
		snprintf(cause, sizeof(cause), "exited (%s)%s", what,
			 early ? " before it was ready" : "");
	uv_timer_stop(in->timer);

	if (!in->desired_run) {
		set_state(in, RT_STOPPED, "stopped");
		if (in->forget)
			rt_instance_remove(in);
		return;
	}
	if (in->fail_exit) {
		char why[sizeof(in->reason)];

		in->fail_exit = 0;
		memcpy(why, in->reason, sizeof(why));
		set_state(in, RT_FAILED, "%s", why);
		return;
	}
	if (in->restart_now) {
		in->restart_now = 0;
		spawn(in);
		return;
	}
	if (policy != NULL && strcmp(policy, "never") == 0) {
		set_state(in, RT_FAILED, "%s; restart_policy never restarts it",
			  cause);
		return;
	}
	if (policy != NULL && strcmp(policy, "on-failure") == 0 && !failure) {
		set_state(in, RT_FAILED,
			  "exited (status 0); restart_policy on-failure "
			  "restarts only failures");
		return;
	}
	if (in->nrecent > RT_START_LIMIT) {
		set_state(in, RT_FAILED,
			  "%s; more than %d exits within %d s: start limit "
			  "reached",
			  cause, RT_START_LIMIT, RT_START_WINDOW_MS / 1000);
		return;
	}
	if (rt_mono_ms() - in->started_mono >= RT_BACKOFF_RESET_MS)
		in->backoff_ms = RT_BACKOFF_FIRST_MS;
	assert(in->backoff_ms >= RT_BACKOFF_FIRST_MS &&
	       in->backoff_ms <= RT_BACKOFF_MAX_MS);
	set_state(in, RT_BACKOFF, "%s; restarting in %d ms", cause,
		  in->backoff_ms);
	schedule(in, in->backoff_ms, on_backoff_done);
	in->backoff_ms = in->backoff_ms * 2 > RT_BACKOFF_MAX_MS
				 ? RT_BACKOFF_MAX_MS
				 : in->backoff_ms * 2;
}

static void on_backoff_done(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (in->state == RT_BACKOFF && in->desired_run)
		spawn(in);
}

static void on_grace_over(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (in->run != NULL && in->pid > 0) {
		rt_log(RT_LOG_INFO, "%s: no exit after SIGTERM; SIGKILL",
		       in->id);
		run_kill(in->run);
	}
}

static void schedule(struct rt_instance *in, int ms, uv_timer_cb cb)
{
	uv_timer_stop(in->timer);
	uv_timer_start(in->timer, cb, (uint64_t)ms, 0);
}

/* Whether a stop of `in` waits for its calls first (a graceful stop):
 * then it is `stopping` until rt_instance_drained finds them ended. */
static int drain_first(struct rt_instance *in)
{
	if (in->draining)
		return 1;
	if (in->sup->ev->busy == NULL || !in->sup->ev->busy(in))
		return 0;
	in->draining = 1;
	set_state(in, RT_STOPPING, "stopping: %d calls in flight end first",
		  in->nsent + in->direct > 0 ? in->nsent + in->direct
					     : in->ncalls);
	return 1;
}

/* Sends SIGTERM to the group and arms the SIGKILL, once the calls in
 * flight have ended; `why` (NULL: "stopping") is its reason meanwhile. */
static void terminate(struct rt_instance *in, const char *why)
{
	int grace = (int)json_integer_value(
		json_object_get(in->spec, "grace_ms"));

	assert(in->run != NULL && in->pid > 0);
	/* Whatever its readiness says from now on changes nothing. */
	rt_ready_unwatch(in);
	if (drain_first(in))
		return;
	if (why != NULL)
		set_state(in, RT_STOPPING, "%s; stopping", why);
	else
		set_state(in, RT_STOPPING, "stopping");
	/* The group, and the leader itself in case it has not made its
	 * group yet (just forked). */
	kill(-in->pid, SIGTERM);
	kill(in->pid, SIGTERM);
	schedule(in, grace > 0 ? grace : RT_STOP_GRACE_MS, on_grace_over);
}

/* ========================================================== the set */

void rt_sup_init(struct rt_sup *s, uv_loop_t *loop,
		 const struct rt_sup_events *ev, void *arg)
{
	assert(ev != NULL);
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->ev = ev;
	s->arg = arg;
}

int rt_sup_idle(const struct rt_sup *s)
{
	return s->instances.count == 0 && s->runs.count == 0 &&
	       s->inits.count == 0;
}

void rt_sup_free(struct rt_sup *s, int wait_ms)
{
	int64_t until = rt_mono_ms() + wait_ms;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	size_t i, n;
	void **v;

	assert(s->instances.count == 0);
	/* Processes that could not be reaped in time: their records go. */
	v = rt_idmap_values(&s->runs, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_run *r = v[i];

		assert(r->nopen == 0); /* the loop has closed every pipe */
		run_kill(r);
		rt_idmap_del(&s->runs, (uint64_t)r->pid);
		r->reaped = 1;
		run_release(r);
	}
	free(v);
	/* Inits not reaped: killed (their namespace dies with them). */
	v = rt_idmap_values(&s->inits, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct rt_ns_init *ns = v[i];

		kill(ns->pid, SIGKILL);
		rt_idmap_del(&s->inits, (uint64_t)ns->pid);
		ns_reaped(ns);
	}
	free(v);
	/* The groups, once what is left in them has died. */
	for (;;) {
		rt_sup_collect(s);
		if (s->ncg_garbage == 0 || rt_mono_ms() >= until)
			break;
		nanosleep(&pause, NULL);
	}
	for (i = 0; i < (size_t)s->ncg_garbage; i++) {
		rt_log(RT_LOG_WARN, "cgroup %s is still busy; left",
		       s->cg_garbage[i]);
		free(s->cg_garbage[i]);
	}
	free(s->cg_garbage);
	s->cg_garbage = NULL;
	s->ncg_garbage = 0;
	{
		const char *roots[RT_CG_COUNT];
		int k, nr = rt_cg_roots(&s->cg, roots);

		for (k = 0; k < nr; k++)
			rt_cgroup_remove(roots[k]);
	}
	rt_cg_free(&s->cg);
	free(s->log_dir);
	s->log_dir = NULL;
	rt_map_free(&s->instances);
	rt_idmap_free(&s->runs);
	rt_idmap_free(&s->inits);
}

/* ========================================================== commands */

struct rt_instance *rt_instance_new(struct rt_sup *s, const char *id)
{
	struct rt_instance *in = calloc(1, sizeof(*in));

	assert(rt_map_get(&s->instances, id) == NULL);
	if (in == NULL)
		return NULL;
	in->sup = s;
	in->id = strdup(id);
	in->timer = malloc(sizeof(*in->timer));
	in->log_fd = -1;
	in->state = RT_STOPPED;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	snprintf(in->reason, sizeof(in->reason), "not started");
	if (s->log_dir != NULL)
		in->log_path = log_file(s->log_dir, id);
	if (in->id == NULL || in->timer == NULL ||
	    (s->log_dir != NULL && in->log_path == NULL) ||
	    rt_map_put(&s->instances, id, in) < 0) {
		free(in->log_path);
		free(in->id);
		free(in->timer);
		free(in);
		return NULL;
	}
	uv_timer_init(s->loop, in->timer);
	in->timer->data = in;
	return in;
}

int rt_instance_start(struct rt_instance *in, json_t *spec, long long revision)
{
	int same = in->spec != NULL && revision == in->revision;

	assert(!in->freeing);
	if (spec != NULL) {
		json_decref(in->spec);
		in->spec = json_incref(spec);
		in->revision = revision;
	}
	in->desired_run = 1;
	in->forget = 0;
	in->fail_exit = 0;
	if (in->run != NULL) {
		if (same && in->state != RT_STOPPING)
			return 1;
		/* Another revision, or it is being stopped: start it again
		 * once it has exited. */
		in->restart_now = 1;
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	in->nrecent = 0;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	set_state(in, RT_STARTING, "starting");
	spawn(in);
	return 0;
}

int rt_instance_stop(struct rt_instance *in, int forget)
{
	assert(!in->freeing);
	in->desired_run = 0;
	in->restart_now = 0;
	in->fail_exit = 0;
	in->forget = forget;
	if (drain_first(in))
		return 0;
	kill_other_runs(in); /* its calls' processes */
	if (in->run != NULL) {
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	if (in->state != RT_STOPPED)
		set_state(in, RT_STOPPED, "stopped");
	if (forget)
		rt_instance_remove(in);
	return 1;
}

void rt_instance_fail(struct rt_instance *in, const char *why)
{
	assert(!in->freeing);
	if (in->run != NULL) {
		set_state(in, in->state, "%s", why);
		return;
	}
	in->desired_run = 0;
	uv_timer_stop(in->timer);
	set_state(in, RT_FAILED, "%s", why);
}

void rt_instance_fail_run(struct rt_instance *in, const char *why)
{
	assert(!in->freeing);
	if (in->run == NULL) {
		rt_instance_fail(in, why);
		return;
	}
	in->fail_exit = 1;
	in->restart_now = 0;
	set_state(in, in->state, "%s", why);
	run_kill(in->run);
}

void rt_instance_unready(struct rt_instance *in, const char *why)
{
	if (in->freeing || in->run == NULL || in->state != RT_STARTING)
		return;
	snprintf(in->unready, sizeof(in->unready), "%s", why);
	rt_log(RT_LOG_WARN, "%s: %s", in->id, why);
	rt_ready_unwatch(in);
	if (in->sup->ev->ready != NULL)
		in->sup->ev->ready(in, in->unready);
	if (!in->freeing && in->run != NULL && in->state != RT_STOPPING)
		terminate(in, in->unready);
}

static void on_drained(uv_timer_t *t)
{
	struct rt_instance *in = t->data;

	if (!in->draining || in->freeing ||
	    (in->sup->ev->busy != NULL && in->sup->ev->busy(in)))
		return;
	in->draining = 0;
	/* Its state says `stopping` already: the stop goes on from here. */
	if (in->run != NULL)
		terminate(in,
			  NULL); /* then restart_now or desired_run applies */
	else if (!in->desired_run)
		rt_instance_stop(in, in->forget);
}

void rt_instance_drained(struct rt_instance *in)
{
	if (in->draining && !in->freeing)
		schedule(in, 0, on_drained);
}

int rt_instance_restart(struct rt_instance *in)
{
	assert(!in->freeing);
	if (in->spec == NULL)
		return -ENOENT;
	in->nrecent = 0;
	in->backoff_ms = RT_BACKOFF_FIRST_MS;
	in->desired_run = 1;
	in->forget = 0;
	in->fail_exit = 0;
	if (in->run != NULL) {
		in->restart_now = 1;
		if (in->state != RT_STOPPING)
			terminate(in, NULL);
		return 0;
	}
	uv_timer_stop(in->timer);
	set_state(in, RT_STARTING, "restarting");
	spawn(in);
	return 0;
}

static void free_if_unused(struct rt_instance *in)
{
	assert(in->runs >= 0);
	if (in->freeing && in->runs == 0 && in->timer == NULL) {
		free(in->id);
		free(in);
	}
}

static void timer_closed(uv_handle_t *h)
{
	struct rt_instance *in = h->data;

	free(h);
	in->timer = NULL;
	free_if_unused(in);
}

void rt_instance_remove(struct rt_instance *in)
{
	struct rt_sup *s = in->sup;

	if (in->freeing)
		return;
	in->freeing = 1;
	rt_map_del(&s->instances, in->id);
	/* Nothing of it keeps running: normally its process has exited
	 * already (removal follows the exit), but its calls' may not. */
	kill_other_runs(in);
	if (in->run != NULL) {
		run_kill(in->run);
		in->run->in = NULL;
		in->runs--;
		in->run = NULL;
		in->pid = 0;
	}
	rt_open_binds_cancel(in->opening);
	in->opening = NULL;
	ns_release(in);
	rt_ready_unwatch(in);
	rt_endpoint_forget(in);
	rt_lambda_forget(in);
	json_decref(in->spec);
	in->spec = NULL;
	rt_cgroup_finish(s, in->cgroup);
	in->cgroup = NULL;
	if (in->log_fd >= 0)
		close(in->log_fd);
	in->log_fd = -1;
	free(in->log_path);
	in->log_path = NULL;
	uv_timer_stop(in->timer);
	uv_close((uv_handle_t *)in->timer, timer_closed);
	if (s->ev->removed != NULL)
		s->ev->removed(in);
}

void rt_instance_sample(struct rt_instance *in)
{
	int limit = (int)json_integer_value(
		json_object_get(in->spec, "memory"));

	if (in->run != NULL && in->pid > 0 &&
	    rt_proc_sample(in->pid, &in->cpu_seconds, &in->rss_bytes) == 0 &&
	    (in->cgroup == NULL || !rt_cg_has(&in->sup->cg, RT_CG_MEMORY)) &&
	    limit > 0 && in->rss_bytes > (long long)limit * 1024 * 1024 &&
	    (in->state == RT_RUNNING || in->state == RT_STARTING)) {
		/* No cgroup to enforce the limit: RSS sampling does. */
		rt_log(RT_LOG_WARN, "%s: rss %lld bytes over %d MB; killing",
		       in->id, in->rss_bytes, limit);
		in->oom_pending = 1;
		kill(-in->pid, SIGKILL);
	}
}

/*
 * worker.c - `fnfs worker`: connects to the controller's socket, registers,
 * sends heartbeats with /proc samples, runs the instances it is told to
 * run, and keeps them running when the controller goes away: it reconnects
 * with backoff, and only after the orphan timeout stops them and exits.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"

#define RETRY_FIRST_MS		 100
#define RETRY_MAX_MS		 2000
#define ORPHAN_TIMEOUT_DEFAULT_S 60

static void conn_lost(struct rt_worker *w, const char *why);
static void try_connect(struct rt_worker *w);

/* ============================================================ sending */

void rt_worker_send(struct rt_worker *w, json_t *header, const void *body,
		    size_t len)
{
	const char *type = json_string_value(json_object_get(header, "type"));

	/* Before the controller has accepted us, only the registration
	 * goes out; what happened meanwhile is reported afterwards. */
	if (!w->connected &&
	    (!w->connecting || type == NULL || strcmp(type, "register") != 0)) {
		json_decref(header);
		return;
	}
	rt_wire_out_send(&w->out, header, body, len);
}

void rt_worker_report(struct rt_worker *w, struct rt_instance *in)
{
	json_t *o = rt_instance_describe(in);

	json_object_set_new(o, "type", json_string("instance"));
	rt_worker_send(w, o, NULL, 0);
}

void rt_worker_reply(struct rt_worker *w, long long seq, int err, json_t *extra)
{
	json_t *o = extra ? extra : json_object();

	if (seq <= 0) {
		json_decref(o);
		return;
	}
	json_object_set_new(o, "type", json_string("reply"));
	json_object_set_new(o, "seq", json_integer(seq));
	json_object_set_new(o, "err", json_integer(err));
	rt_worker_send(w, o, NULL, 0);
}

static int running_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;

	(void)key;
	/* Every instance it holds, with its state: a failed one stays
	 * failed under a new controller instead of being started again. */
	if (!in->freeing && in->spec != NULL)
		json_array_append_new(
			arg,
			json_pack("{s:s, s:I, s:i, s:s, s:I}", "instance",
				  in->id, "revision", (json_int_t)in->revision,
				  "pid", (int)in->pid, "state",
				  rt_state_name(in->state), "restarts",
				  (json_int_t)in->restarts));
	return 0;
}

static void send_register(struct rt_worker *w)
{
	json_t *running = json_array();

	rt_map_each(&w->instances, running_cb, running);
	rt_worker_send(w,
		       json_pack("{s:s, s:s, s:i, s:O, s:O, s:i, s:o, s:b}",
				 "type", "register", "id", w->id, "memory",
				 w->memory_mb, "tags", w->tags, "namespaces",
				 w->namespaces, "pid", (int)getpid(), "running",
				 running, "cgroups", w->cgroup_root != NULL),
		       NULL, 0);
}

/* ========================================================= shutting down */

static void closed_noop(uv_handle_t *h)
{
	(void)h;
}

/* Stops every instance, then exits (see rt_worker_maybe_exit). Stopping
 * may remove instances, so they are gathered before any is stopped. */
static void shutdown_all(struct rt_worker *w, const char *why)
{
	void **v;
	size_t i, n;

	if (w->shutting_down)
		return;
	rt_log(RT_LOG_INFO, "worker %s: shutting down: %s", w->id, why);
	if (w->connected)
		rt_worker_send(w, json_pack("{s:s}", "type", "leaving"), NULL,
			       0);
	w->shutting_down = 1;
	v = rt_map_values(&w->instances, &n);
	for (i = 0; v != NULL && i < n; i++)
		rt_instance_stop(v[i], 0, 1);
	free(v);
	rt_worker_maybe_exit(w);
}

void rt_worker_maybe_exit(struct rt_worker *w)
{
	int i;

	if (!w->shutting_down || w->instances.count > 0)
		return;
	rt_runs_close(w);
	uv_timer_stop(&w->tick);
	uv_timer_stop(&w->retry);
	if (!uv_is_closing((uv_handle_t *)&w->tick)) {
		uv_close((uv_handle_t *)&w->tick, closed_noop);
		uv_close((uv_handle_t *)&w->retry, closed_noop);
		for (i = 0; i < 3; i++)
			uv_close((uv_handle_t *)&w->sig[i], closed_noop);
		uv_close((uv_handle_t *)&w->sigchld, closed_noop);
		if (w->connected || w->connecting) {
			w->connected = w->connecting = 0;
			rt_wire_out_flush(&w->out);
			uv_close((uv_handle_t *)&w->conn, closed_noop);
		}
		rt_wire_flusher_stop(&w->flusher);
	}
}

/* =========================================================== receiving */

static int report_cb(const char *key, void *value, void *arg)
{
	(void)key;
	rt_worker_report(arg, value);
	return 0;
}

static void report_all(struct rt_worker *w)
{
	rt_map_each(&w->instances, report_cb, w);
}

static struct rt_instance *find(struct rt_worker *w, const struct rt_msg *m)
{
	const char *id = rt_msg_str(m, "instance");

	return id ? rt_map_get(&w->instances, id) : NULL;
}

static void handle(struct rt_worker *w, const struct rt_msg *m)
{
	long long seq = rt_msg_int(m, "seq", 0);
	const char *id = rt_msg_str(m, "instance");
	struct rt_instance *in = find(w, m);

	if (strcmp(m->type, "registered") == 0) {
		w->connected = 1;
		w->connecting = 0;
		w->retry_ms = RETRY_FIRST_MS;
		if (w->registered_once)
			rt_log(RT_LOG_INFO, "worker %s: reconnected", w->id);
		if (!w->registered_once && w->cgroup_root != NULL)
			/* Accepted: the groups under our name are ours to
			 * clean (a duplicate would have been refused). */
			rt_cgroup_sweep(w->cgroup_root);
		w->registered_once = 1;
		/* A controller that starts over learns everything it runs. */
		report_all(w);
		w->lost_mono = 0;
	} else if (strcmp(m->type, "refused") == 0) {
		const char *why = rt_msg_str(m, "reason");

		fprintf(stderr, "fnfs worker: the controller refused %s: %s\n",
			w->id, why ? why : "?");
		rt_log(RT_LOG_ERROR, "worker %s: refused: %s", w->id,
		       why ? why : "?");
		w->exit_code = 1;
		shutdown_all(w, "refused by the controller");
	} else if (strcmp(m->type, "start") == 0 && id != NULL) {
		json_t *spec = json_object_get(m->header, "spec");

		if (w->shutting_down || !json_is_object(spec)) {
			rt_worker_reply(w, seq, EINVAL, NULL);
			return;
		}
		if (in == NULL)
			in = rt_instance_new(w, id);
		if (in == NULL)
			rt_worker_reply(w, seq, ENOMEM, NULL);
		else
			rt_instance_start(in, spec,
					  rt_msg_int(m, "revision", 0), seq);
	} else if (strcmp(m->type, "stop") == 0) {
		if (in == NULL)
			rt_worker_reply(w, seq, 0, NULL);
		else
			rt_instance_stop(in, seq,
					 json_is_true(json_object_get(
						 m->header, "forget")));
	} else if (strcmp(m->type, "restart") == 0) {
		if (in == NULL || w->shutting_down)
			rt_worker_reply(w, seq, ENOENT, NULL);
		else
			rt_instance_restart(in, seq);
	} else if (strcmp(m->type, "log") == 0) {
		struct rt_buf tail = { 0 };
		long long max = rt_msg_int(m, "max", 65536);
		json_t *o;

		if (in != NULL)
			rt_instance_log_tail(in, (size_t)(max > 0 ? max : 0),
					     &tail);
		o = json_pack("{s:s, s:I, s:i}", "type", "reply", "seq",
			      (json_int_t)seq, "err", in ? 0 : ENOENT);
		rt_worker_send(w, o, tail.data ? tail.data : "", tail.len);
		rt_buf_free(&tail);
	} else if (strcmp(m->type, "call") == 0) {
		rt_call_start(w, in, m);
	} else if (strcmp(m->type, "shutdown") == 0) {
		shutdown_all(w, "asked by the controller");
	} else {
		rt_log(RT_LOG_WARN, "worker %s: unknown message %s", w->id,
		       m->type);
		rt_worker_reply(w, seq, EOPNOTSUPP, NULL);
	}
}

static int handle_cb(const struct rt_msg *m, void *arg)
{
	struct rt_worker *w = arg;

	handle(w, m);
	/* Stop when the connection ended while handling. */
	return !w->connected && !w->connecting;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_worker *w = s->data;
	struct rt_buf why = { 0 };
	int rc;

	if (n < 0) {
		conn_lost(w, n == UV_EOF ? "closed" : uv_strerror((int)n));
		return;
	}
	rc = rt_wire_feed(&w->in, buf->base, (size_t)n, handle_cb, w, &why);
	if (rc < 0) {
		rt_log(RT_LOG_ERROR,
		       "worker %s: bad message from the controller: %s", w->id,
		       why.data ? why.data : "?");
		conn_lost(w, "protocol error");
	}
	rt_buf_free(&why);
}

/* ========================================================= connection */

static void on_retry(uv_timer_t *t)
{
	try_connect(t->data);
}

static void conn_closed(uv_handle_t *h)
{
	struct rt_worker *w = h->data;

	if (w->shutting_down)
		return;
	if (rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms) {
		shutdown_all(w, "no controller within the orphan timeout");
		return;
	}
	uv_timer_start(&w->retry, on_retry, (uint64_t)w->retry_ms, 0);
	w->retry_ms = w->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS
						     : w->retry_ms * 2;
}

static void conn_lost(struct rt_worker *w, const char *why)
{
	if (!w->connected && !w->connecting)
		return;
	if (w->connected)
		rt_log(RT_LOG_WARN, "worker %s: lost the controller: %s", w->id,
		       why);
	if (w->lost_mono == 0)
		w->lost_mono = rt_mono_ms();
	w->connected = w->connecting = 0;
	rt_buf_reset(&w->in);
	rt_wire_out_flush(&w->out);
	uv_close((uv_handle_t *)&w->conn, conn_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct rt_worker *w = req->data;

	if (status == UV_ECANCELED)
		return; /* the handle is being closed already */
	if (status < 0) {
		w->connected = 0;
		w->connecting = 1; /* so conn_lost closes the handle */
		conn_lost(w, uv_strerror(status));
		return;
	}
	uv_read_start((uv_stream_t *)&w->conn, rt_read_alloc, on_read);
	send_register(w);
}

static void try_connect(struct rt_worker *w)
{
	if (w->shutting_down)
		return;
	uv_pipe_init(w->loop, &w->conn, 0);
	w->conn.data = w;
	w->connect_req.data = w;
	w->connecting = 1;
	uv_pipe_connect(&w->connect_req, &w->conn, w->sock_path, on_connect);
}

/* ============================================================== ticks */

static int sample_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;
	json_t *o;

	(void)key;
	if (in->run == NULL || in->pid <= 0)
		return 0; /* nothing to sample: no process */
	o = json_object();
	rt_instance_sample(in, o);
	json_array_append_new(arg, o);
	return 0;
}

static void on_tick(uv_timer_t *t)
{
	struct rt_worker *w = t->data;
	json_t *samples = json_array();

	rt_map_each(&w->instances, sample_cb, samples);
	rt_cgroups_collect(w);
	if (w->connected)
		rt_worker_send(w,
			       json_pack("{s:s, s:o}", "type", "heartbeat",
					 "samples", samples),
			       NULL, 0);
	else
		json_decref(samples);
	if (!w->connected && w->lost_mono &&
	    rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms)
		shutdown_all(w, "no controller within the orphan timeout");
}

static void on_sigchld(uv_signal_t *s, int signum)
{
	(void)signum;
	rt_instances_reap(s->data);
}

static void on_signal(uv_signal_t *s, int signum)
{
	shutdown_all(s->data, strsignal(signum));
}

/* ======================================================= command line */

static const char worker_usage[] =
	"usage: fnfs worker --connect SOCKET --id ID --memory MB\n"
	"                   [--tags a,b] [--namespaces tenant/ns,...]\n"
	"                   [--orphan-timeout S] [--simulate]\n";

/* Splits "a,b" into a JSON array, checking each item with `valid`. */
static json_t *split_list(const char *s, int ns)
{
	json_t *a = json_array();
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(tok, '/');
		int ok;

		if (ns) {
			ok = slash != NULL && strchr(slash + 1, '/') == NULL;
			if (ok) {
				*slash = '\0';
				ok = rt_name_valid(tok) &&
				     rt_name_valid(slash + 1);
				*slash = '/';
			}
		} else {
			ok = rt_name_valid(tok);
		}
		if (!ok) {
			fprintf(stderr, "fnfs worker: bad %s \"%s\"\n",
				ns ? "namespace (want tenant/ns)" : "tag", tok);
			json_decref(a);
			free(copy);
			return NULL;
		}
		json_array_append_new(a, json_string(tok));
	}
	free(copy);
	return a;
}

static int parse_int_arg(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int rt_worker_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "id", required_argument, NULL, 'i' },
		{ "memory", required_argument, NULL, 'm' },
		{ "tags", required_argument, NULL, 't' },
		{ "namespaces", required_argument, NULL, 'n' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "simulate", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct rt_worker w;
	uv_loop_t loop;
	struct rt_buf dir = { 0 };
	int c, i, rc, orphan_s = ORPHAN_TIMEOUT_DEFAULT_S;
	char *slash;

	memset(&w, 0, sizeof(w));
	w.tags = json_array();
	w.namespaces = json_array();
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': w.sock_path = optarg; break;
		case 'i': w.id = optarg; break;
		case 'm':
			if (parse_int_arg(optarg, 1, 1L << 30, &w.memory_mb) <
			    0) {
				fprintf(stderr,
					"fnfs worker: --memory wants MB, "
					"a positive integer\n");
				rc = 2;
				goto done;
			}
			break;
		case 't':
		case 'n':
			json_decref(c == 't' ? w.tags : w.namespaces);
			if (c == 't')
				w.tags = split_list(optarg, 0);
			else
				w.namespaces = split_list(optarg, 1);
			if ((c == 't' ? w.tags : w.namespaces) == NULL) {
				rc = 2;
				goto done;
			}
			break;
		case 'o':
			if (parse_int_arg(optarg, 1, 86400 * 7, &orphan_s) <
			    0) {
				fprintf(stderr, "fnfs worker: --orphan-timeout "
						"wants seconds\n");
				rc = 2;
				goto done;
			}
			break;
		case 's': w.simulate = 1; break;
		case 'h':
			fputs(worker_usage, stdout);
			rc = 0;
			goto done;
		default:
			fputs(worker_usage, stderr);
			rc = 2;
			goto done;
		}
	}
	if (w.sock_path == NULL || w.id == NULL || w.memory_mb == 0 ||
	    optind != argc) {
		fputs(worker_usage, stderr);
		rc = 2;
		goto done;
	}
	if (!rt_name_valid(w.id)) {
		fprintf(stderr,
			"fnfs worker: bad id \"%s\": 1 to 63 of "
			"[A-Za-z0-9._-], starting with a letter or digit\n",
			w.id);
		rc = 2;
		goto done;
	}
	w.orphan_timeout_ms = orphan_s * 1000;
	signal(SIGPIPE, SIG_IGN);
	rt_close_fds(-1);

	/* Logs of instances go next to the socket, in the data directory. */
	rt_buf_puts(&dir, w.sock_path);
	slash = strrchr(dir.data, '/');
	dir.len = slash ? (size_t)(slash - dir.data) : 0;
	dir.data[dir.len] = '\0';
	rt_buf_printf(&dir, "%slogs", dir.len ? "/" : "");
	mkdir(dir.data, 0755);
	rt_buf_printf(&dir, "/%s", w.id);
	mkdir(dir.data, 0755);
	w.log_dir = dir.data;
	if (!w.simulate)
		w.cgroup_root = rt_cgroup_root(w.id, w.sock_path);
	if (w.cgroup_root == NULL && !w.simulate)
		rt_log(RT_LOG_INFO,
		       "worker %s: no memory cgroup; RSS sampling "
		       "enforces memory limits",
		       w.id);

	uv_loop_init(&loop);
	w.loop = &loop;
	w.retry_ms = RETRY_FIRST_MS;
	rt_wire_flusher_start(&w.flusher, &loop);
	rt_wire_out_init(&w.out, &w.flusher, (uv_stream_t *)&w.conn);
	uv_timer_init(&loop, &w.tick);
	w.tick.data = &w;
	uv_timer_init(&loop, &w.retry);
	w.retry.data = &w;
	uv_timer_start(&w.tick, on_tick, RT_SAMPLE_MS, RT_SAMPLE_MS);
	for (i = 0; i < 3; i++) {
		uv_signal_init(&loop, &w.sig[i]);
		w.sig[i].data = &w;
		uv_signal_start(&w.sig[i], on_signal, signums[i]);
	}
	uv_signal_init(&loop, &w.sigchld);
	w.sigchld.data = &w;
	uv_signal_start(&w.sigchld, on_sigchld, SIGCHLD);
	w.lost_mono = rt_mono_ms(); /* counts until the first registration */
	try_connect(&w);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	rt_map_free(&w.instances);
	rt_idmap_free(&w.runs);
	rt_cgroups_collect(&w);
	for (i = 0; i < w.ncg_garbage; i++)
		free(w.cg_garbage[i]);
	free(w.cg_garbage);
	if (w.cgroup_root != NULL)
		rmdir(w.cgroup_root);
	free(w.cgroup_root);
	free(w.log_dir);
	rt_buf_free(&w.in);
	rt_buf_free(&w.out.pending);
	json_decref(w.tags);
	json_decref(w.namespaces);
	rt_log(RT_LOG_INFO, "worker %s: exited", w.id);
	return w.exit_code;
done:
	/* A usage error or --help: nothing was started. */
	json_decref(w.tags);
	json_decref(w.namespaces);
	return rc;
}

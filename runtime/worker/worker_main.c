/*
 * worker_main.c - `fnfs worker`'s main: its command line, the setup of its
 * loop, supervisor and transport, the tick (samples and heartbeats, the
 * controller's silence, the orphan timeout) and the signals it takes.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "sandbox.h"
#include "worker.h"
#include "worker_int.h"

#define ORPHAN_TIMEOUT_DEFAULT_S 60 /* --orphan-timeout's default */

/* ============================================================== ticks */

static int sample_cb(const char *key, void *value, void *arg)
{
	struct rt_instance *in = value;
	json_t *o;

	(void)key;
	if (in->run == NULL || in->pid <= 0)
		return 0; /* nothing to sample: no process */
	rt_instance_sample(in);
	o = json_pack("{s:s, s:i, s:I, s:I, s:I}", "instance", in->id, "pid",
		      (int)in->pid, "cpu_ms",
		      (json_int_t)(in->cpu_seconds * 1000), "rss",
		      (json_int_t)in->rss_bytes, "epoch",
		      (json_int_t)in->epoch);
	json_array_append_new(arg, o);
	return 0;
}

/* Sends a heartbeat with `samples` (the instances', taken over). */
void rt__worker_send_heartbeat(struct rt_worker *w, json_t *samples)
{
	w->beat_mono = rt_mono_ms();
	rt_worker_send(w,
		       json_pack("{s:s, s:o}", "type", "heartbeat", "samples",
				 samples),
		       NULL, 0);
}

/* The instances' samples, for a heartbeat. */
json_t *rt__worker_samples(struct rt_worker *w)
{
	json_t *samples = json_array();

	rt_map_each(&w->sup.instances, sample_cb, samples);
	return samples;
}

static void on_tick(uv_timer_t *t)
{
	struct rt_worker *w = t->data;
	json_t *samples = rt__worker_samples(w);

	rt_sup_collect(&w->sup);
	rt_code_tick(w);
	rt__worker_direct_expire(w, !w->connected);
	rt__worker_answer_late(w);
	if (w->connected)
		rt__worker_send_heartbeat(w, samples);
	else
		json_decref(samples);
	/* Only a registered connection's silence: an attempt (connect,
	 * handshake, registration) has its own bound, CONNECT_TIMEOUT_MS,
	 * on the retry timer. */
	if (rt_silence_lost(&w->silence, rt_mono_ms(), w->connected, 0)) {
		/* A partition, or a frozen controller: the connection looks
		 * open, and nothing comes. The orphan timeout counts from
		 * the last frame heard. */
		rt_log(RT_LOG_WARN,
		       "worker %s: nothing from the controller for %d ms",
		       w->id, rt_silence_timeout(&w->silence));
		if (w->connected && w->lost_mono == 0)
			w->lost_mono = w->silence.heard_mono;
		rt__worker_conn_lost(w, "the controller is silent");
	}
	if (!w->connected && w->lost_mono &&
	    rt_mono_ms() - w->lost_mono > w->orphan_timeout_ms)
		rt__worker_shutdown(w,
				    "no controller within the orphan timeout");
	if (w->reap_wait_mono != 0 &&
	    rt_mono_ms() - w->reap_wait_mono > RT_REAP_WAIT_MS)
		rt__worker_maybe_exit(w, 1);
}

static void on_sigchld(uv_signal_t *s, int signum)
{
	struct rt_worker *w = s->data;

	(void)signum;
	rt_sup_reap(&w->sup);
	rt__worker_maybe_exit(w, 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
	rt__worker_shutdown(s->data, strsignal(signum));
}

/* ======================================================= command line */

static const char worker_usage[] =
	"usage: fnfs worker --connect SOCKET[,SOCKET...] --id ID --memory MB\n"
	"                   [--tags a,b] [--namespaces tenant/ns,...]\n"
	"                   [--orphan-timeout S] [--heartbeat-timeout MS]\n"
	"                   [--data DIR] [--simulate]\n"
	"       fnfs worker --connect tls://IP:PORT[,IP:PORT...] --ca CA.pem\n"
	"                   --cert ID.pem --key ID.key --data DIR --id ID\n"
	"                   --memory MB ...\n"
	"       fnfs worker --connect tcp://IP:PORT[,IP:PORT...] --insecure\n"
	"                   --data DIR --id ID --memory MB ...\n"
	"A list names the controllers of a cluster: they are tried in turn,\n"
	"from a random one, and a follower's answer leads to the leader.\n";

/* What --connect says: a Unix socket's path, tls://IP:PORT or
 * tcp://IP:PORT, or a list of them (connect_list.h). Fills w->targets
 * and w->tcp; returns 0 (1 for tls://), or -1 having said why. */
static int parse_connect(struct rt_worker *w)
{
	char why[256];
	struct stat st;
	int rc;

	/* A socket whose path has a comma (its controller's --data) is
	 * one, not a list. */
	if (strchr(w->sock_path, ',') != NULL &&
	    strstr(w->sock_path, "://") == NULL &&
	    stat(w->sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
		rc = rt_connect_parse_path(w->sock_path, &w->targets, why,
					   sizeof(why));
	else
		rc = rt_connect_parse(w->sock_path, &w->targets, why,
				      sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "fnfs worker: --connect %s: %s\n", w->sock_path,
			why);
		return -1;
	}
	w->tcp = w->targets.scheme != RT_CONNECT_UNIX;
	return w->targets.scheme == RT_CONNECT_TLS;
}

/* Checks the transport options and makes the TLS context. Returns 0, or
 * 2 (usage) / 1 (files) having said why. */
static int setup_transport(struct rt_worker *w, const char *ca,
			   const char *cert, const char *key, int insecure,
			   const char *data_opt)
{
	struct rt_buf why = { 0 };
	int tls = parse_connect(w), rc = 0;

	if (tls < 0)
		return 2;
	if (tls && (ca == NULL || cert == NULL || key == NULL)) {
		fprintf(stderr, "fnfs worker: tls:// needs --ca, --cert and "
				"--key (fnfs ca issue makes them)\n");
		return 2;
	}
	if (!tls && (ca || cert || key)) {
		fprintf(stderr, "fnfs worker: --ca, --cert and --key go with "
				"--connect tls://\n");
		return 2;
	}
	if (w->tcp && !tls && !insecure) {
		fprintf(stderr,
			"fnfs worker: tcp:// is plain TCP, neither "
			"authenticated nor encrypted: add --insecure (tests "
			"and loopback only), or use tls://\n");
		return 2;
	}
	if (insecure && (!w->tcp || tls)) {
		fprintf(stderr, "fnfs worker: --insecure goes with "
				"--connect tcp://\n");
		return 2;
	}
	if (w->tcp && data_opt == NULL) {
		fprintf(stderr,
			"fnfs worker: --connect %s needs --data DIR "
			"(where instance logs go on this machine)\n",
			w->sock_path);
		return 2;
	}
	if (tls &&
	    rt_tls_ctx_files(&w->tls_ctx, 0, ca, cert, key, NULL, &why) < 0) {
		fprintf(stderr, "fnfs worker: %s\n",
			why.data ? why.data : "no TLS");
		rc = 1;
	}
	if (rc == 0 && insecure)
		fprintf(stderr,
			"fnfs worker: WARNING: --insecure: plain TCP to %s, "
			"neither authenticated nor encrypted (tests and "
			"loopback only)\n",
			w->sock_path);
	rt_buf_free(&why);
	return rc;
}

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
		{ "heartbeat-timeout", required_argument, NULL, 'T' },
		{ "simulate", no_argument, NULL, 's' },
		{ "data", required_argument, NULL, 'd' },
		{ "ca", required_argument, NULL, 'A' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct rt_worker w;
	uv_loop_t loop;
	struct rt_buf dir = { 0 }, data = { 0 };
	const char *data_opt = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	int c, i, rc, orphan_s = ORPHAN_TIMEOUT_DEFAULT_S, simulate = 0;
	int insecure = 0;
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
		case 'T':
			if (parse_int_arg(optarg, 1, 3600000,
					  &w.silence.own_ms) < 0) {
				fprintf(stderr,
					"fnfs worker: --heartbeat-timeout "
					"wants ms, from 1 to 3600000\n");
				rc = 2;
				goto done;
			}
			break;
		case 's': simulate = 1; break;
		case 'd': data_opt = optarg; break;
		case 'A': ca = optarg; break;
		case 'C': cert = optarg; break;
		case 'K': key = optarg; break;
		case 'I': insecure = 1; break;
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
	rc = setup_transport(&w, ca, cert, key, insecure, data_opt);
	if (rc != 0)
		goto done;
	/* Its files (logs of instances) go in --data, by default next to
	 * the socket, in the controller's data directory (over TCP it is
	 * required: the controller's is on another machine). */
	if (data_opt != NULL) {
		rt_buf_puts(&data, data_opt);
	} else {
		rt_buf_puts(&data, w.targets.list[0].text);
		slash = strrchr(data.data, '/');
		data.len = slash ? (size_t)(slash - data.data) : 0;
		data.data[data.len] = '\0';
		if (data.len == 0)
			rt_buf_puts(&data, ".");
	}
	if (mkdir(data.data, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "fnfs worker: cannot create %s: %s\n",
			data.data, strerror(errno));
		rt_buf_free(&data);
		rc = 1;
		goto done;
	}
	w.orphan_timeout_ms = orphan_s * 1000;
	signal(SIGPIPE, SIG_IGN);
	rt_close_fds(-1);
	uv_loop_init(&loop);
	w.loop = &loop;
	rt_sup_init(&w.sup, &loop, &rt__worker_events, &w);
	w.sup.simulate = simulate;

	w.data_dir = data.data;
	/* No function binds the worker's files (sandbox.h). */
	if (rt_sandbox_reserve(data.data) < 0)
		rt_log(RT_LOG_WARN, "out of memory");
	rt_buf_printf(&dir, "%s/logs", data.data);
	mkdir(dir.data, 0700);
	rt_buf_printf(&dir, "/%s", w.id);
	mkdir(dir.data, 0700);
	w.sup.log_dir = dir.data;
	if (!simulate)
		rt_cg_open_host(&w.sup.cg, w.id, w.sock_path);
	if (!rt_cg_has(&w.sup.cg, RT_CG_MEMORY) && !simulate)
		rt_log(RT_LOG_INFO,
		       "worker %s: no memory cgroup; RSS sampling "
		       "enforces memory limits",
		       w.id);
	if (!rt_cg_has(&w.sup.cg, RT_CG_PIDS) && !simulate)
		rt_log(RT_LOG_WARN,
		       "worker %s: no pids cgroup; pids limits are not "
		       "enforced",
		       w.id);
	if (!rt_cg_has(&w.sup.cg, RT_CG_CPU) && !simulate)
		rt_log(RT_LOG_WARN,
		       "worker %s: no cpu cgroup; cpu limits are not "
		       "enforced",
		       w.id);

	w.next_delay_ms = -1;
	w.rng = (uint64_t)rt_mono_ms() * 0x9E3779B97F4A7C15ull ^
		(uint64_t)getpid() << 32 ^ (uint64_t)rt_now_ms();
	rt_connect_begin(&w.targets, &w.rng);
	if (w.targets.n > 1)
		rt_log(RT_LOG_INFO, "worker %s: %d controllers to try, from %s",
		       w.id, w.targets.n, rt_connect_target(&w.targets)->text);
	rt_wire_flusher_start(&w.flusher, &loop);
	rt_wire_out_init(&w.out, &w.flusher, (uv_stream_t *)&w.conn);
	uv_timer_init(&loop, &w.tick);
	w.tick.data = &w;
	uv_timer_init(&loop, &w.retry);
	w.retry.data = &w;
	uv_idle_init(&loop, &w.resume);
	w.resume.data = &w;
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
	rt__worker_try_connect(&w);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&loop) != 0)
		rt_log(RT_LOG_WARN, "worker %s: loop closed with live handles",
		       w.id);
	/* Every instance is gone (rt__worker_maybe_exit waited for that); what
	 * is left is memory and the groups of processes that died late. */
	rt_sup_free(&w.sup, RT_CGROUP_WAIT_MS);
	assert(w.waits.count == 0);
	rt_map_free(&w.waits);
	rt_code_close(&w);
	rt_buf_free(&w.in);
	rt_buf_free(&w.out.pending);
	rt_tls_free(&w.tls);
	rt_buf_free(&w.plain);
	SSL_CTX_free(w.tls_ctx);
	json_decref(w.tags);
	json_decref(w.namespaces);
	rt_buf_free(&data);
	rt_log(RT_LOG_INFO, "worker %s: exited", w.id);
	return w.exit_code;
done:
	/* A usage error or --help: nothing was started. */
	SSL_CTX_free(w.tls_ctx);
	json_decref(w.tags);
	json_decref(w.namespaces);
	return rc;
}

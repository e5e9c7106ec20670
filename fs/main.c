/*
 * main.c - the `fnfs` command: parses the command line and starts one side.
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/ca.h"
#include "../runtime/net.h"
#include "../runtime/worker.h"
#include "../sched/cluster_status.h"
#include "../sched/dump.h"
#include "../sched/dump_etcd.h"
#include "../sched/etcd_keys.h"
#include "fs.h"

static const char usage_text[] =
	"usage:\n"
	"  fnfs mount [-f] [--data DIR] [--workers N] [--worker-memory MB]\n"
	"             [--heartbeat-timeout MS] [--worker-starts N]\n"
	"             [--run-as USER] [--allow-root-functions]\n"
	"             [--listen IP:PORT [--insecure]] [--no-direct-calls]\n"
	"             [--store etcd://HOST:PORT[,...] --cluster NAME\n"
	"              [--name ID] [--leader-ttl S]\n"
	"              [--etcd-ca CA --etcd-cert CERT --etcd-key KEY]] "
	"MOUNTPOINT\n"
	"  fnfs worker --connect SOCKET[,...]|tls://IP:PORT[,...]|"
	"tcp://IP:PORT[,...]\n"
	"              --id ID\n"
	"              --memory MB [--tags a,b] [--namespaces tenant/ns,...]\n"
	"              [--orphan-timeout S] [--heartbeat-timeout MS] [--data "
	"DIR]\n"
	"              [--ca CA.pem --cert ID.pem --key ID.key] [--insecure]\n"
	"  fnfs ca init [--data DIR]\n"
	"  fnfs ca issue [--data DIR] [--out DIR] [--days N] ID\n"
	"  fnfs store export [--data DIR] > dump.json\n"
	"  fnfs store import [--data DIR] < dump.json\n"
	"  fnfs store export|import --store etcd://HOST:PORT[,...] "
	"--cluster NAME\n"
	"             [--etcd-ca F --etcd-cert F --etcd-key F] [--force]\n"
	"  fnfs cluster status --store etcd://HOST:PORT[,...] --cluster NAME\n"
	"             [--etcd-ca F --etcd-cert F --etcd-key F] [--json]\n"
	"  fnfs invoke TENANT/NAMESPACE/FUNCTION [--mount MOUNTPOINT]\n"
	"              [--http] [-X METHOD] [-H 'Name: value']... "
	"[--path /P?Q]\n"
	"              [--include] < request\n"
	"  fnfs version\n"
	"  fnfs help\n";

static const char help_text[] =
	"fnfs - a serverless-function runtime manager you drive through files\n"
	"\n"
	"  fnfs mount [-f] [--data DIR] [--workers N] [--worker-memory MB]\n"
	"             [--heartbeat-timeout MS] [--worker-starts N]\n"
	"             [--run-as USER] [--allow-root-functions]\n"
	"             [--listen IP:PORT [--insecure]] [--no-direct-calls]\n"
	"             MOUNTPOINT\n"
	"      Mounts the control tree at MOUNTPOINT (created when missing)\n"
	"      and returns once it is ready; -f stays in the foreground, logs\n"
	"      to stderr and exits 0 on Ctrl-C. State lives in DIR/fnfs.db\n"
	"      (default: /var/lib/fnfs as root, else $XDG_DATA_HOME/fnfs or\n"
	"      ~/.local/share/fnfs), the daemon's log in DIR/fnfs.log, its\n"
	"      pid in DIR/fnfs.pid, and workers connect to DIR/ctl.sock.\n"
	"      It keeps N local workers (default 1, or as\n"
	"      last set in workers/pool_size) of MB memory each (default: the\n"
	"      machine's memory shared among them), starting at most N a\n"
	"      minute (--worker-starts, default 10). A worker silent for\n"
	"      --heartbeat-timeout ms (default 3000) is offline.\n"
	"      Functions run as their tenant's owner (chown on tenants/T),\n"
	"      in a sandbox; root's tenants run as --run-as USER (default\n"
	"      nobody). Running them as root (--run-as root) needs\n"
	"      --allow-root-functions.\n"
	"      --listen IP:PORT also accepts workers of other machines over\n"
	"      TCP with TLS 1.3 and certificates of the cluster CA (fnfs ca\n"
	"      init first). --insecure admits plain TCP too, with no\n"
	"      authentication: for tests and loopback only.\n"
	"      A hot http function's calls go from fnfs straight to its\n"
	"      server when its worker runs on this machine in fnfs's own\n"
	"      network and mount namespaces (one hop fewer);\n"
	"      --no-direct-calls sends every call through its worker.\n"
	"      --store etcd://HOST:PORT,... --cluster NAME: one of a cluster\n"
	"      of controllers whose tenants, namespaces and functions are in\n"
	"      that etcd (every mount shows and writes the same tree; a write\n"
	"      returns once etcd has it; without etcd's quorum writes fail\n"
	"      with EIO and reads go on). --etcd-ca/--etcd-cert/--etcd-key:\n"
	"      https. --name ID names this controller (default: the host's\n"
	"      name). One controller, elected on a lease of --leader-ttl S\n"
	"      (default 5), leads: it admits the workers (give them every\n"
	"      controller's --listen), places and recovers; the others show\n"
	"      its instances, send workers to it, and forward to it the\n"
	"      writes of state, restart and workers/ files and invoke\n"
	"      (EAGAIN while no leader is known). A new leader takes the\n"
	"      workers over with their instances running (same pids). No\n"
	"      --workers on a cluster. code/ is shared through etcd: a\n"
	"      write is answered once etcd has it (EIO while etcd cannot be\n"
	"      reached, the reason in the function's error).\n"
	"      SIGTERM, SIGINT or `fusermount3 -u MOUNTPOINT` unmount it and\n"
	"      stop every instance and local worker. A dead mount left by a\n"
	"      crash is cleaned up first; after a crash the workers, which\n"
	"      kept running, are taken back with their instances. Under\n"
	"      systemd (Type=notify, fnfs.service) it sends READY=1 to\n"
	"      $NOTIFY_SOCKET once mounted and STOPPING=1 when it stops.\n"
	"  fnfs worker --connect DIR/ctl.sock --id ID --memory MB\n"
	"              [--tags a,b] [--namespaces tenant/ns,...]\n"
	"              [--orphan-timeout S]\n"
	"              [--heartbeat-timeout MS]\n"
	"      Runs a worker by hand: it registers and runs the instances\n"
	"      placed on it. Without a controller for S seconds (default 60,\n"
	"      counted from the last message heard) it stops them and exits.\n"
	"      A controller silent for MS ms (default: the controller's)\n"
	"      is lost although the connection looks open: it reconnects.\n"
	"  fnfs worker --connect tls://IP:PORT --id ID --memory MB\n"
	"              --ca CA.pem --cert ID.pem --key ID.key --data DIR\n"
	"      The same on another machine, over TLS 1.3 to a controller's\n"
	"      --listen: ID.pem must name ID; the controller's certificate\n"
	"      must come from CA.pem. tcp://IP:PORT --insecure: plain TCP,\n"
	"      to a controller started with --insecure (tests only).\n"
	"  fnfs worker --connect tls://IP:PORT,IP:PORT,... --id ID ...\n"
	"      The controllers of a cluster (or socket paths, one scheme for\n"
	"      all): the worker tries them in turn from a random one, the\n"
	"      next after a failed or lost connection, backing off (full\n"
	"      jitter, at most 2 s) after each full round. A follower that\n"
	"      names the leader is followed at once (20-200 ms), also to an\n"
	"      address not in the list; after 3 such redirects without\n"
	"      registering, the list and the backoff again. Instances keep\n"
	"      running while it moves; refusals do not reset the orphan\n"
	"      timeout.\n"
	"  fnfs ca init [--data DIR]\n"
	"      Creates the cluster CA in DIR/ca (ca.key 0600) and the\n"
	"      controller's certificate for --listen.\n"
	"  fnfs ca issue [--data DIR] [--out DIR] [--days N] ID\n"
	"      Writes ID.key (0600) and ID.pem, worker ID's certificate for N\n"
	"      days (default 365; 0: already expired, for tests), in --out\n"
	"      (default .).\n"
	"  fnfs store export [--data DIR] > dump.json\n"
	"      Writes the whole state of DIR (tenants, namespaces, functions\n"
	"      and their code, instances, workers, settings) as JSON, read\n"
	"      in one transaction; the mount may be running.\n"
	"  fnfs store import [--data DIR] < dump.json\n"
	"      Makes DIR's state from such a dump: DIR must have no store\n"
	"      yet. Everything is checked before anything is written; a\n"
	"      refused dump leaves no store. Then mount DIR.\n"
	"  fnfs store export|import --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"             --cluster NAME [--etcd-ca CA.pem --etcd-cert C.pem\n"
	"             --etcd-key C.key] [--force]\n"
	"      The same with a cluster's keys in etcd (/fnfs/NAME/) instead\n"
	"      of DIR, to move fnfs into a cluster: import checks the dump\n"
	"      first, refuses a cluster that exists, and the keys an\n"
	"      unfinished import left unless --force (which deletes them\n"
	"      first); export reads the cluster at one revision. Each\n"
	"      request to etcd is bounded (5 s).\n"
	"  fnfs cluster status --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"             --cluster NAME [--etcd-ca CA.pem --etcd-cert C.pem\n"
	"             --etcd-key C.key] [--json]\n"
	"      Prints the cluster's leader, etcd's revision now, and one row\n"
	"      per controller (mount --name): its role, listen address, the\n"
	"      etcd revision its tree has seen, its lag behind etcd, whether\n"
	"      it is stale, and the age of its last update; then whether\n"
	"      each endpoint answers with a quorum. A controller's row goes\n"
	"      when it unmounts, or within --leader-ttl when it dies. Each\n"
	"      request is bounded (5 s; 2 s per endpoint); exit 1 when etcd\n"
	"      cannot be read. --json: the same as one JSON object.\n"
	"  fnfs invoke TENANT/NAMESPACE/FUNCTION [--mount MOUNTPOINT]\n"
	"              [--http] [-X METHOD] [-H 'Name: value']... "
	"[--path /P?Q]\n"
	"              [--include] < request\n"
	"      Calls a hot or cold function through the mount (default: the\n"
	"      only mounted fnfs of this user) and prints the response. On a\n"
	"      failure it prints why and exits with: 3 no such function or\n"
	"      mount, 4 not callable (a daemon), 5 a bad request (EINVAL,\n"
	"      EFBIG), 6 queue full (EAGAIN), 7 timed out, 8 the function\n"
	"      reported an error (EREMOTEIO), 9 its process died during\n"
	"      the call (ECONNRESET), 10 no worker can take an instance\n"
	"      (ENOSPC), 130 interrupted, 1 anything else;\n"
	"      2 is a usage error.\n"
	"      For a function of format http, -X, -H and --path write the\n"
	"      request as an HTTP message (METHOD /P?Q HTTP/1.1, the headers,\n"
	"      a blank line, stdin as the body; default POST /), and --http\n"
	"      says stdin is such a message already. Its answer is a\n"
	"      message too: only the body is printed, and the status line\n"
	"      and headers as well with --include. A plain request is\n"
	"      POST / with stdin as the body; a 5xx answer exits 8 with the\n"
	"      body in error, a connection refused or reset 9.\n"
	"  fnfs version    prints the version\n"
	"  fnfs help       prints this text\n"
	"\n"
	"The tree:\n"
	"  README version events          about fnfs; the event journal\n"
	"  status stats metrics           a table of functions; totals;\n"
	"                                 Prometheus text format\n"
	"  tenants/T/NS/FN/               mkdir -p makes a function\n"
	"    config                       the whole spec as JSON\n"
	"    command mode format parallelism max_instances memory timeout\n"
	"    idle_timeout env cwd tags tags_policy restart_policy\n"
	"    pids cpu network isolation mounts ready ready_timeout\n"
	"    concurrency\n"
	"                                 one attribute each, read and write\n"
	"    revision error               read-only: spec revision, last "
	"error\n"
	"    state                        running | degraded | pending |\n"
	"                                 stopped | failed; write start | "
	"stop\n"
	"    restart status log           write 1 to restart; details; output\n"
	"    stats                        call counters, latency, 1-min "
	"window\n"
	"    invoke                       hot, cold: write a request, read "
	"the\n"
	"                                 response (a transaction file)\n"
	"    code/                        the function's files (cp -r, tar "
	"-x):\n"
	"                                 its instances' read-only cwd\n"
	"    instances/N/                 state restart status stats pid log,\n"
	"                                 worker -> "
	"../../../../../../workers/W\n"
	"  workers/pool_size              local workers kept (read, write)\n"
	"  workers/strategy               spread | pack | random\n"
	"  workers/rebalance              write 1: even out the instances\n"
	"  workers/status                 the pool: started, registering, ...\n"
	"  workers/W/                     state (write drain | resume |\n"
	"                                 revoke), memory,\n"
	"                                 free, tags, namespaces, pid, "
	"status,\n"
	"                                 stats, assignments/\n"
	"\n"
	"Try:\n"
	"  mkdir -p MNT/tenants/acme/prod/hello\n"
	"  echo 'sleep 1000' > MNT/tenants/acme/prod/hello/command\n"
	"  echo 3 > MNT/tenants/acme/prod/hello/parallelism\n"
	"  cat MNT/tenants/acme/prod/hello/instances/*/pid\n"
	"  echo 1 > MNT/tenants/acme/prod/hello/instances/0/restart\n"
	"  ls -l MNT/workers/*/assignments\n"
	"  tail -f MNT/events\n"
	"\n"
	"Errors come back as errno: EINVAL for a bad value or name (the "
	"reason\n"
	"is in the function's error file and in events), EEXIST, ENOENT,\n"
	"ENOTEMPTY, EBUSY (draining the last worker), EINTR (Ctrl-C on a\n"
	"write that waits). A function that ends failed says why in its\n"
	"error file too. See man fnfs, and docs/reference.md for every "
	"file.\n";

/* The default data directory. Returns a malloc'd path. */
static char *default_datadir(void)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	struct rt_buf b = { 0 };

	if (geteuid() == 0)
		rt_buf_puts(&b, "/var/lib/fnfs");
	else if (xdg != NULL && xdg[0] == '/')
		rt_buf_printf(&b, "%s/fnfs", xdg);
	else
		rt_buf_printf(&b, "%s/.local/share/fnfs", home ? home : "/tmp");
	return b.data;
}

/* Makes the parent directories of a default data directory. */
static void make_parents(const char *path)
{
	char tmp[4096];
	size_t i;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (i = 1; tmp[i]; i++) {
		if (tmp[i] != '/')
			continue;
		tmp[i] = '\0';
		mkdir(tmp, 0755);
		tmp[i] = '/';
	}
}

/* Resolves `--run-as USER` (a name or a number) into `opt`. Running
 * functions as root needs `allow_root`. Returns 0, or -1 having said why. */
static int resolve_run_as(const char *user, int allow_root,
			  struct fs_options *opt)
{
	struct passwd *pw = getpwnam(user);
	char *end;
	long v;

	if (pw == NULL) {
		v = strtol(user, &end, 10);
		if (*user != '\0' && *end == '\0' && v >= 0 && v < 4294967295L)
			pw = getpwuid((uid_t)v);
	}
	if (pw == NULL) {
		fprintf(stderr, "fnfs mount: --run-as: no user \"%s\"\n", user);
		return -1;
	}
	if (pw->pw_uid == 0 && !allow_root) {
		fprintf(stderr,
			"fnfs mount: --run-as %s would run functions as root; "
			"add --allow-root-functions if that is what you "
			"want\n",
			user);
		return -1;
	}
	opt->run_as_uid = pw->pw_uid;
	opt->run_as_gid = pw->pw_gid;
	return 0;
}

/* --listen wants an address and the cluster CA; --insecure wants
 * --listen. Returns 0, or -1 having said why. */
static int check_listen(const struct fs_options *opt)
{
	struct sockaddr_storage ss;
	struct rt_buf why = { 0 };
	int rc = 0;

	if (opt->insecure && opt->listen == NULL) {
		fprintf(stderr, "fnfs mount: --insecure goes with --listen\n");
		return -1;
	}
	if (opt->listen == NULL)
		return 0;
	if (rt_addr_parse(opt->listen, 1, &ss) < 0) {
		fprintf(stderr,
			"fnfs mount: --listen wants IP:PORT or [IPv6]:PORT, "
			"not \"%s\"\n",
			opt->listen);
		return -1;
	}
	if (sched_listen_check(opt->datadir, &why) < 0) {
		fprintf(stderr, "fnfs mount: %s\n", why.data);
		rc = -1;
	}
	if (rc == 0 && opt->insecure)
		fprintf(stderr,
			"fnfs mount: WARNING: --insecure: plain TCP workers "
			"on %s are neither authenticated nor encrypted; any "
			"peer may register under any id. Use it for tests "
			"and loopback only.\n",
			opt->listen);
	rt_buf_free(&why);
	return rc;
}

/* --store is sqlite (the default) or etcd://HOST:PORT[,HOST:PORT...],
 * which wants --cluster; the --etcd-* files go with it, the certificate
 * and key together. Returns 0, or -1 having said why. */
static int check_store(const char *store, struct fs_options *opt)
{
	const char *why = NULL;

	if (store != NULL && strncmp(store, "etcd://", 7) == 0)
		opt->etcd = store + 7;
	else if (store != NULL && strcmp(store, "sqlite") != 0)
		why = "--store wants sqlite or etcd://HOST:PORT[,HOST:PORT...]";
	if (why == NULL && opt->etcd != NULL && *opt->etcd == '\0')
		why = "--store etcd:// wants at least one HOST:PORT";
	else if (why == NULL && opt->etcd != NULL && opt->cluster == NULL)
		why = "--store etcd://... wants --cluster NAME";
	else if (why == NULL && opt->etcd != NULL &&
		 !etcd_keys_cluster_valid(opt->cluster))
		why = "--cluster wants 1 to 63 of [A-Za-z0-9._-], starting "
		      "with a letter or digit";
	else if (why == NULL && opt->etcd == NULL &&
		 (opt->cluster || opt->etcd_ca || opt->etcd_cert ||
		  opt->etcd_key))
		why = "--cluster and --etcd-* go with --store etcd://...";
	else if (why == NULL && !opt->etcd_cert != !opt->etcd_key)
		why = "--etcd-cert and --etcd-key go together";
	else if (why == NULL && opt->etcd == NULL &&
		 (opt->name != NULL || opt->leader_ttl != 0))
		why = "--name and --leader-ttl go with --store etcd://...";
	else if (why == NULL && opt->name != NULL && !rt_name_valid(opt->name))
		why = "--name wants 1 to 63 of [A-Za-z0-9._-]";
	else if (why == NULL && opt->etcd != NULL && opt->workers > 0)
		why = "--workers does not go with --store etcd://: local "
		      "workers would die with their controller, and a "
		      "cluster's instances must outlive it; start workers "
		      "with fnfs worker --connect";
	if (why == NULL && opt->etcd != NULL)
		opt->workers = 0;
	if (why != NULL)
		fprintf(stderr, "fnfs mount: %s\n", why);
	return why ? -1 : 0;
}

static int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "workers", required_argument, NULL, 'w' },
		{ "worker-memory", required_argument, NULL, 'm' },
		{ "heartbeat-timeout", required_argument, NULL, 't' },
		{ "worker-starts", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "run-as", required_argument, NULL, 'u' },
		{ "allow-root-functions", no_argument, NULL, 'R' },
		{ "listen", required_argument, NULL, 'l' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "store", required_argument, NULL, 'S' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "etcd-ca", required_argument, NULL, 'A' },
		{ "etcd-cert", required_argument, NULL, 'E' },
		{ "etcd-key", required_argument, NULL, 'K' },
		{ "name", required_argument, NULL, 'N' },
		{ "leader-ttl", required_argument, NULL, 'T' },
		{ "no-direct-calls", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fs_options opt = { 0 };
	const char *store = NULL;
	const char *run_as = "nobody";
	char *owned = NULL, *end;
	int c, rc, allow_root = 0;
	long v;

	opt.workers = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+fhd:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': opt.foreground = 1; break;
		case 'd': opt.datadir = optarg; break;
		case 't':
		case 's':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 1 ||
			    v > (c == 't' ? 3600000 : 64)) {
				fprintf(stderr, "fnfs mount: --%s wants %s\n",
					c == 't' ? "heartbeat-timeout"
						 : "worker-starts",
					c == 't' ? "ms, from 1 to 3600000"
						 : "a count from 1 to 64");
				return 2;
			}
			if (c == 't')
				opt.heartbeat_timeout = (int)v;
			else
				opt.starts_per_minute = (int)v;
			break;
		case 'w':
		case 'm':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' ||
			    v < (c == 'w' ? 0 : 1) ||
			    v > (c == 'w' ? 256 : 1L << 30)) {
				fprintf(stderr, "fnfs mount: --%s wants %s\n",
					c == 'w' ? "workers" : "worker-memory",
					c == 'w' ? "a count from 0 to 256"
						 : "MB, a positive integer");
				return 2;
			}
			if (c == 'w')
				opt.workers = (int)v;
			else
				opt.worker_memory = (int)v;
			break;
		case 'u': run_as = optarg; break;
		case 'R': allow_root = 1; break;
		case 'l': opt.listen = optarg; break;
		case 'I': opt.insecure = 1; break;
		case 'S': store = optarg; break;
		case 'C': opt.cluster = optarg; break;
		case 'A': opt.etcd_ca = optarg; break;
		case 'E': opt.etcd_cert = optarg; break;
		case 'K': opt.etcd_key = optarg; break;
		case 'N': opt.name = optarg; break;
		case 'D': opt.no_direct_calls = 1; break;
		case 'T':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 2 ||
			    v > 300) {
				fprintf(stderr,
					"fnfs mount: --leader-ttl wants "
					"seconds, from 2 to 300\n");
				return 2;
			}
			opt.leader_ttl = (int)v;
			break;
		case 'h': fputs(help_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fnfs mount: expected one MOUNTPOINT\n%s",
			usage_text);
		return 2;
	}
	if (resolve_run_as(run_as, allow_root, &opt) < 0)
		return 2;
	opt.mountpoint = argv[optind];
	if (opt.datadir == NULL) {
		owned = default_datadir();
		make_parents(owned);
		opt.datadir = owned;
	}
	if (check_store(store, &opt) < 0 || check_listen(&opt) < 0) {
		free(owned);
		return 2;
	}
	rc = fs_mount_main(&opt);
	free(owned);
	return rc;
}

static const char store_usage[] =
	"usage: fnfs store export [--data DIR] > dump.json\n"
	"       fnfs store import [--data DIR] < dump.json\n"
	"       fnfs store export|import\n"
	"                  --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"                  --cluster NAME [--etcd-ca F --etcd-cert F "
	"--etcd-key F]\n"
	"                  [--force] (import: after one that did not "
	"finish)\n";

/* Reads the options of `fnfs store SUB`; 0 or -1 (a usage error). */
static int store_opts(int argc, char **argv, const char **data,
		      const char **store, struct sched_dump_etcd *t)
{
	int i;

	for (i = 2; i < argc; i++) {
		const char **v = NULL;

		if (strcmp(argv[i], "--force") == 0) {
			t->force = 1;
			continue;
		}
		if (strcmp(argv[i], "--data") == 0)
			v = data;
		else if (strcmp(argv[i], "--store") == 0)
			v = store;
		else if (strcmp(argv[i], "--cluster") == 0)
			v = &t->cluster;
		else if (strcmp(argv[i], "--etcd-ca") == 0)
			v = &t->etcd.ca;
		else if (strcmp(argv[i], "--etcd-cert") == 0)
			v = &t->etcd.cert;
		else if (strcmp(argv[i], "--etcd-key") == 0)
			v = &t->etcd.key;
		if (v == NULL || i + 1 >= argc)
			return -1;
		*v = argv[++i];
	}
	if (*store == NULL) { /* the etcd options go with --store */
		if (t->cluster != NULL || t->force || t->etcd.ca != NULL ||
		    t->etcd.cert != NULL || t->etcd.key != NULL)
			return -1;
		return 0;
	}
	if (*data != NULL || t->cluster == NULL ||
	    strncmp(*store, "etcd://", 7) != 0 || (*store)[7] == '\0' ||
	    (t->force && strcmp(argv[1], "import") != 0))
		return -1;
	t->etcd.endpoints = *store + 7;
	return 0;
}

/* fnfs store export|import [--data DIR]: dump.h; --store etcd://...:
 * dump_etcd.h. */
static int cmd_store(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	char *owned = NULL;
	const char *data = NULL, *store = NULL;
	struct sched_dump_etcd t = { { 0 }, NULL, 0 };
	struct rt_buf why = { 0 };
	int rc, imp = strcmp(sub, "import") == 0;

	if ((strcmp(sub, "export") != 0 && !imp) ||
	    store_opts(argc, argv, &data, &store, &t) < 0) {
		fputs(store_usage, stderr);
		return 2;
	}
	if (store != NULL) {
		rc = imp ? sched_dump_etcd_import(&t, stdin, &why)
			 : sched_dump_etcd_export(&t, stdout, &why);
	} else {
		if (data == NULL)
			data = owned = default_datadir();
		if (imp && owned != NULL)
			make_parents(owned);
		rc = imp ? sched_dump_import(data, stdin, &why)
			 : sched_dump_export(data, stdout, &why);
	}
	if (rc < 0)
		fprintf(stderr, "fnfs store %s: %s (%s)\n", sub,
			why.data ? why.data : strerror(-rc), strerror(-rc));
	else if (imp && store != NULL)
		fprintf(stderr,
			"fnfs store import: cluster %s is ready in etcd\n",
			t.cluster);
	else if (imp)
		fprintf(stderr,
			"fnfs store import: %s is ready: fnfs mount "
			"--data %s MOUNTPOINT\n",
			data, data);
	rt_buf_free(&why);
	free(owned);
	return rc < 0 ? 1 : 0;
}

static const char cluster_usage[] =
	"usage: fnfs cluster status --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"                           --cluster NAME [--etcd-ca F --etcd-cert F "
	"--etcd-key F]\n"
	"                           [--json]\n";

/* fnfs cluster status: cluster_status.h. */
static int cmd_cluster(int argc, char **argv)
{
	struct etcd_config cfg = { 0 };
	struct cluster_status st = { 0 };
	struct rt_buf why = { 0 }, out = { 0 };
	const char *store = NULL, *cluster = NULL;
	int i, rc, json = 0;

	if (argc < 2 || strcmp(argv[1], "status") != 0)
		goto usage;
	for (i = 2; i < argc; i++) {
		const char **v = NULL;

		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
			continue;
		}
		if (strcmp(argv[i], "--store") == 0)
			v = &store;
		else if (strcmp(argv[i], "--cluster") == 0)
			v = &cluster;
		else if (strcmp(argv[i], "--etcd-ca") == 0)
			v = &cfg.ca;
		else if (strcmp(argv[i], "--etcd-cert") == 0)
			v = &cfg.cert;
		else if (strcmp(argv[i], "--etcd-key") == 0)
			v = &cfg.key;
		if (v == NULL || i + 1 >= argc)
			goto usage;
		*v = argv[++i];
	}
	if (store == NULL || cluster == NULL ||
	    strncmp(store, "etcd://", 7) != 0 || store[7] == '\0' ||
	    !cfg.cert != !cfg.key)
		goto usage;
	cfg.endpoints = store + 7;
	rc = cluster_status_read(&cfg, cluster, 1, &st, &why);
	if (rc == 0)
		rc = cluster_status_render(&st, json, &out);
	if (rc == 0)
		fputs(out.data, stdout);
	else
		fprintf(stderr,
			"fnfs cluster status: cannot read cluster %s from "
			"etcd %s: %s (%s)\n",
			cluster, cfg.endpoints,
			why.data ? why.data : strerror(-rc), strerror(-rc));
	cluster_status_free(&st);
	rt_buf_free(&why);
	rt_buf_free(&out);
	return rc < 0 ? 1 : 0;
usage:
	fputs(cluster_usage, stderr);
	return 2;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc;

	if (strcmp(cmd, "mount") == 0)
		return cmd_mount(argc - 1, argv + 1);
	if (strcmp(cmd, "worker") == 0)
		return rt_worker_main(argc - 1, argv + 1);
	if (strcmp(cmd, "invoke") == 0)
		return fs_invoke_main(argc - 1, argv + 1);
	if (strcmp(cmd, "store") == 0)
		return cmd_store(argc - 1, argv + 1);
	if (strcmp(cmd, "cluster") == 0)
		return cmd_cluster(argc - 1, argv + 1);
	if (strcmp(cmd, "ca") == 0) {
		char *data = default_datadir();

		rc = rt_ca_main(argc - 1, argv + 1, data);
		free(data);
		return rc;
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("fnfs %s\n", FNFS_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "-h") == 0) {
		fputs(help_text, stdout);
		return 0;
	}
	if (cmd[0] != '\0')
		fprintf(stderr, "fnfs: unknown command \"%s\"\n", cmd);
	fputs(usage_text, stderr);
	return 2;
}

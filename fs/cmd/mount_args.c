/*
 * mount_args.c - the command line of `fnfs mount` (cmd.h): the options,
 * checked before anything starts, into struct fs_options.
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/net.h"
#include "../fs.h"
#include "cmd.h"

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

/* --store is sqlite (the default) or a shared store, which wants
 * --cluster; the TLS files go with it, the certificate and key together
 * (store_config_check). Returns 0, or -1 having said why. */
static int check_store(struct fs_options *opt)
{
	const char *why = NULL;
	int shared = store_config_check(&opt->store, &why);

	if (shared == 1 && !rt_name_valid(opt->store.cluster))
		why = "--cluster wants 1 to 63 of [A-Za-z0-9._-], starting "
		      "with a letter or digit";
	else if (shared == 0 && (opt->name != NULL || opt->leader_ttl != 0))
		why = "--name and --leader-ttl go with --store etcd://...";
	else if (why == NULL && opt->name != NULL && !rt_name_valid(opt->name))
		why = "--name wants 1 to 63 of [A-Za-z0-9._-]";
	else if (shared == 1 && opt->workers > 0)
		why = "--workers does not go with --store etcd://: local "
		      "workers would die with their controller, and a "
		      "cluster's instances must outlive it; start workers "
		      "with fnfs worker --connect";
	if (why == NULL && shared == 1)
		opt->workers = 0;
	if (why != NULL)
		fprintf(stderr, "fnfs mount: %s\n", why);
	return why ? -1 : 0;
}

int fs_cmd_mount(int argc, char **argv)
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
		case 'S': opt.store.url = optarg; break;
		case 'C': opt.store.cluster = optarg; break;
		case 'A': opt.store.ca = optarg; break;
		case 'E': opt.store.cert = optarg; break;
		case 'K': opt.store.key = optarg; break;
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
		case 'h': fputs(fs_cmd_help, stdout); return 0;
		default: fputs(fs_cmd_usage, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fnfs mount: expected one MOUNTPOINT\n%s",
			fs_cmd_usage);
		return 2;
	}
	if (resolve_run_as(run_as, allow_root, &opt) < 0)
		return 2;
	opt.mountpoint = argv[optind];
	if (opt.datadir == NULL) {
		owned = fs_cmd_default_datadir();
		fs_cmd_make_parents(owned);
		opt.datadir = owned;
	}
	if (check_store(&opt) < 0 || check_listen(&opt) < 0) {
		free(owned);
		return 2;
	}
	rc = fs_mount_main(&opt);
	free(owned);
	return rc;
}

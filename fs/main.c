/*
 * main.c - the `fnfs` command: parses the command line and starts one side.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/worker.h"
#include "fs.h"

static const char usage_text[] = "usage:\n"
				 "  fnfs mount [-f] [--data DIR] MOUNTPOINT\n"
				 "  fnfs version\n"
				 "  fnfs help\n";

static const char help_text[] =
	"fnfs - a serverless-function runtime manager you drive through files\n"
	"\n"
	"  fnfs mount [-f] [--data DIR] [--workers N] [--worker-memory MB] "
	"MOUNTPOINT\n"
	"      Mounts the control tree at MOUNTPOINT. Returns once the\n"
	"      filesystem is ready; -f stays in the foreground and logs to\n"
	"      stderr. State lives in DIR/fnfs.db (default: /var/lib/fnfs as\n"
	"      root, else $XDG_DATA_HOME/fnfs or ~/.local/share/fnfs), the\n"
	"      daemon's log in DIR/fnfs.log and its pid in DIR/fnfs.pid.\n"
	"      SIGTERM, SIGINT or `fusermount3 -u MOUNTPOINT` unmount it.\n"
	"      A dead mount left at MOUNTPOINT by a crash is cleaned up "
	"first.\n"
	"  fnfs version    prints the version\n"
	"  fnfs help       prints this text\n"
	"\n"
	"The tree:\n"
	"  README version events          about fnfs; the event journal\n"
	"  tenants/T/NS/FN/               mkdir -p makes a function\n"
	"    config                       the whole spec as JSON\n"
	"    command mode format parallelism max_instances memory timeout\n"
	"    idle_timeout env cwd tags tags_policy restart_policy\n"
	"                                 one attribute each, read and write\n"
	"    revision error               read-only: spec revision, last "
	"error\n"
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
	"ENOTEMPTY. See docs/reference.md for every file.\n";

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

static int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "workers", required_argument, NULL, 'w' },
		{ "worker-memory", required_argument, NULL, 'm' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fs_options opt = { 0 };
	char *owned = NULL, *end;
	long v;
	int c, rc;

	opt.workers = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+fhd:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': opt.foreground = 1; break;
		case 'd': opt.datadir = optarg; break;
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
		case 'h': fputs(help_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fnfs mount: expected one MOUNTPOINT\n%s",
			usage_text);
		return 2;
	}
	opt.mountpoint = argv[optind];
	if (opt.datadir == NULL) {
		owned = default_datadir();
		make_parents(owned);
		opt.datadir = owned;
	}
	rc = fs_mount_main(&opt);
	free(owned);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (strcmp(cmd, "mount") == 0)
		return cmd_mount(argc - 1, argv + 1);
	if (strcmp(cmd, "worker") == 0)
		return rt_worker_main(argc - 1, argv + 1);
	if (strcmp(cmd, "_instance") == 0)
		return rt_instance_shim_main(argc - 1, argv + 1);
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

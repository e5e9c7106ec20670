/*
 * main.c - the `fnfs` command: reads the subcommand and hands the rest
 * of the command line to it (cmd.h; one file each in fs/cmd/).
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/ca.h"
#include "../../runtime/worker/worker.h"
#include "../fs.h"
#include "cmd.h"

/* cmd.h */
char *fs_cmd_default_datadir(void)
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
void fs_cmd_make_parents(const char *path)
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

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc;

	if (strcmp(cmd, "mount") == 0)
		return fs_cmd_mount(argc - 1, argv + 1);
	if (strcmp(cmd, "worker") == 0)
		return rt_worker_main(argc - 1, argv + 1);
	if (strcmp(cmd, "invoke") == 0)
		return fs_invoke_main(argc - 1, argv + 1);
	if (strcmp(cmd, "store") == 0)
		return fs_cmd_store(argc - 1, argv + 1);
	if (strcmp(cmd, "cluster") == 0)
		return fs_cmd_cluster(argc - 1, argv + 1);
	if (strcmp(cmd, "ca") == 0) {
		char *data = fs_cmd_default_datadir();

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
		fputs(fs_cmd_help, stdout);
		return 0;
	}
	if (cmd[0] != '\0')
		fprintf(stderr, "fnfs: unknown command \"%s\"\n", cmd);
	fputs(fs_cmd_usage, stderr);
	return 2;
}

/*
 * cluster.c - `fnfs cluster status` (cmd.h): who leads a cluster, its
 * controllers and workers, read from its shared store (sched.h).
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sched/sched.h"
#include "../fs.h"
#include "cmd.h"

static const char cluster_usage[] =
	"usage: fnfs cluster status --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"                           --cluster NAME [--etcd-ca F --etcd-cert F "
	"--etcd-key F]\n"
	"                           [--json]\n";

/* fnfs cluster status: sched_cluster_status (sched.h). */
int fs_cmd_cluster(int argc, char **argv)
{
	struct store_config c = { 0 };
	struct rt_buf why = { 0 }, out = { 0 };
	const char *bad;
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
			v = &c.url;
		else if (strcmp(argv[i], "--cluster") == 0)
			v = &c.cluster;
		else if (strcmp(argv[i], "--etcd-ca") == 0)
			v = &c.ca;
		else if (strcmp(argv[i], "--etcd-cert") == 0)
			v = &c.cert;
		else if (strcmp(argv[i], "--etcd-key") == 0)
			v = &c.key;
		if (v == NULL || i + 1 >= argc)
			goto usage;
		*v = argv[++i];
	}
	/* Only a shared store has a cluster to show. */
	if (c.url == NULL || store_config_check(&c, &bad) != 1)
		goto usage;
	rc = sched_cluster_status(&c, json, &out, &why);
	if (rc == 0)
		fputs(out.data, stdout);
	else
		fprintf(stderr,
			"fnfs cluster status: cannot read cluster %s from "
			"%s: %s (%s)\n",
			c.cluster, c.url, why.data ? why.data : strerror(-rc),
			strerror(-rc));
	rt_buf_free(&why);
	rt_buf_free(&out);
	return rc < 0 ? 1 : 0;
usage:
	fputs(cluster_usage, stderr);
	return 2;
}

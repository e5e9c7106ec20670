/*
 * cluster.c - `fnfs cluster status` (cmd.h): who leads a cluster, its
 * controllers and workers, read from etcd (cluster_status.h).
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sched/cluster/etcd/cluster_status.h"
#include "../fs.h"
#include "cmd.h"

static const char cluster_usage[] =
	"usage: fnfs cluster status --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"                           --cluster NAME [--etcd-ca F --etcd-cert F "
	"--etcd-key F]\n"
	"                           [--json]\n";

/* fnfs cluster status: cluster_status.h. */
int fs_cmd_cluster(int argc, char **argv)
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

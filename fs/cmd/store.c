/*
 * store.c - `fnfs store export` and `fnfs store import` (cmd.h): a data
 * directory's store or a cluster's shared store, to and from a JSON dump
 * (dump.h: the store picks how).
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

static const char store_usage[] =
	"usage: fnfs store export [--data DIR] > dump.json\n"
	"       fnfs store import [--data DIR] < dump.json\n"
	"       fnfs store export|import\n"
	"                  --store etcd://HOST:PORT[,HOST:PORT...]\n"
	"                  --cluster NAME [--etcd-ca F --etcd-cert F "
	"--etcd-key F]\n"
	"                  [--force] (import: after one that did not "
	"finish)\n";

/* Reads the options of `fnfs store SUB` into `c`; 0 or -1 (a usage
 * error). */
static int store_opts(int argc, char **argv, struct store_config *c)
{
	int i;

	for (i = 2; i < argc; i++) {
		const char **v = NULL;

		if (strcmp(argv[i], "--force") == 0) {
			c->force = 1;
			continue;
		}
		if (strcmp(argv[i], "--data") == 0)
			v = &c->path;
		else if (strcmp(argv[i], "--store") == 0)
			v = &c->url;
		else if (strcmp(argv[i], "--cluster") == 0)
			v = &c->cluster;
		else if (strcmp(argv[i], "--etcd-ca") == 0)
			v = &c->ca;
		else if (strcmp(argv[i], "--etcd-cert") == 0)
			v = &c->cert;
		else if (strcmp(argv[i], "--etcd-key") == 0)
			v = &c->key;
		if (v == NULL || i + 1 >= argc)
			return -1;
		*v = argv[++i];
	}
	/* The cluster's options go with --store, --force with import. */
	if (!store_config_valid(c) ||
	    (c->force && strcmp(argv[1], "import") != 0))
		return -1;
	return 0;
}

/* fnfs store export|import [--data DIR | --store URL ...]: dump.h. */
int fs_cmd_store(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	char *owned = NULL;
	struct store_config c = { 0 };
	struct rt_buf why = { 0 };
	int rc, imp = strcmp(sub, "import") == 0;

	if ((strcmp(sub, "export") != 0 && !imp) ||
	    store_opts(argc, argv, &c) < 0) {
		fputs(store_usage, stderr);
		return 2;
	}
	if (c.url == NULL && c.path == NULL) {
		c.path = owned = fs_cmd_default_datadir();
		if (imp && owned != NULL)
			fs_cmd_make_parents(owned);
	}
	rc = imp ? sched_store_import(&c, stdin, &why)
		 : sched_store_export(&c, stdout, &why);
	if (rc < 0)
		fprintf(stderr, "fnfs store %s: %s (%s)\n", sub,
			why.data ? why.data : strerror(-rc), strerror(-rc));
	else if (imp && c.url != NULL)
		fprintf(stderr,
			"fnfs store import: cluster %s is ready in etcd\n",
			c.cluster);
	else if (imp)
		fprintf(stderr,
			"fnfs store import: %s is ready: fnfs mount "
			"--data %s MOUNTPOINT\n",
			c.path, c.path);
	rt_buf_free(&why);
	free(owned);
	return rc < 0 ? 1 : 0;
}

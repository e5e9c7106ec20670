/*
 * store.c - `fnfs store export` and `fnfs store import` (cmd.h): a data
 * directory's store (dump.h) or a cluster's keys in etcd (dump_etcd.h),
 * to and from a JSON dump.
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sched/store/dump.h"
#include "../../sched/store/etcd/dump_etcd.h"
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
int fs_cmd_store(int argc, char **argv)
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
			data = owned = fs_cmd_default_datadir();
		if (imp && owned != NULL)
			fs_cmd_make_parents(owned);
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

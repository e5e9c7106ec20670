/*
 * dump_etcd_internal.h - what the parts of fnfs store import|export
 * --store etcd://... (dump_etcd.h) share: dump_etcd.c has the temporary
 * directory and the rows as keys, dump_etcd_import.c writes them,
 * dump_etcd_export.c reads a cluster back.
 */
#ifndef FNFS_SCHED_STORE_DUMP_ETCD_INTERNAL_H
#define FNFS_SCHED_STORE_DUMP_ETCD_INTERNAL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include "../dump.h"
#include "dump_etcd.h"
#include "etcd_keys.h"
#include "etcd_sync.h"
#include "../sqlite.h"
#include "../store.h"

#define TXN_OPS 128 /* etcd 3.4's default --max-txn-ops */

#define TXN_BYTES                                                              \
	(ETCD_KEYS_CHUNK_BYTES + 8192) /* keys and values of one txn */

#define OP_BYTES 64 /* what etcd adds to each op (about) */

#define PAGE_KEYS 32 /* keys of one range page (chunks: <= 32 MiB of it) */

/* Keys and values to write, in order (owned). */
struct kvlist {
	struct rt_buf *k, *v;
	size_t n, cap;
};

/* Makes a temporary directory `tmp` ($TMPDIR or /tmp) and in it the data
 * directory `data`. */
int dump_etcd__make_tmp(struct rt_buf *tmp, struct rt_buf *data,
			struct rt_buf *why);

/* Removes the temporary directory `tmp` and everything in it. */
void dump_etcd__remove_tmp(struct rt_buf *tmp);

int dump_etcd__sql_fail(sqlite3 *db, struct rt_buf *why, const char *what);

void dump_etcd__kvlist_free(struct kvlist *l);

/* Encodes every row of the store `db` into `l`, in the order of
 * `tables`: all of them, before anything is written. */
int dump_etcd__encode_rows(sqlite3 *db, const char *cluster, struct kvlist *l,
			   struct rt_buf *why);

#endif

/*
 * dump_internal.h - what the halves of fnfs store export|import (dump.h)
 * share: dump.c exports, dump_import.c imports.
 */
#ifndef FNFS_SCHED_STORE_DUMP_INTERNAL_H
#define FNFS_SCHED_STORE_DUMP_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include "../../runtime/base/code.h"
#include "../../runtime/base/base64.h"
#include "dump.h"
#include "../sched.h"
#include "sqlite.h"
#include "store.h"

#define DUMP_FORMAT "fnfs-dump"

/* `out` := the bytes base64 `text` (`len` bytes) stands for. Returns 0,
 * -EINVAL or -ENOMEM. */
int dump__decode_into(const char *text, size_t len, struct rt_buf *out);

int dump__db_path(struct rt_buf *p, const char *datadir, const char *suffix);

void dump__object_path(struct rt_buf *p, const char *datadir, const char *h);

int dump__hex64(const char *h);

void dump__sha256_hex(const void *p, size_t n, char out[65]);

/* A table or column name as SQLite keeps it: plain letters, digits and
 * underscores (fnfs's own), so it can be quoted without escaping. */
int dump__plain_name(const char *s);

int dump__sql_fail(sqlite3 *db, struct rt_buf *why, const char *what);

/* The names of the tables of `db` in order (sqlite's own left out). */
int dump__table_names(sqlite3 *db, json_t **out, struct rt_buf *why);

/* Adds to `set` the objects manifest `text` names. */
int dump__add_manifest(json_t *set, const char *h, const char *text, size_t len,
		       struct rt_buf *why);

#endif

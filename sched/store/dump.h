/*
 * dump.h - `fnfs store export` and `fnfs store import`: the whole durable
 * state of a data directory as one JSON document, and back.
 *
 * The document:
 *
 *   {"format": "fnfs-dump", "version": 1, "schema": N, "exported_ms": MS,
 *    "tables": {"TABLE": [{"COLUMN": VALUE, ...}, ...], ...},
 *    "objects": {"SHA256": "BASE64", ...}}
 *
 * `tables` holds every row of every table of DATA/fnfs.db (tenants and
 * their owners, namespaces, function specs and revisions, instances'
 * desired state and assignments, workers, settings, revocations, code
 * trees and revisions); `objects` the code objects they reference, by the
 * SHA-256 of their bytes. `schema` is the store's schema version
 * (STORE_SCHEMA_VERSION): a dump is imported by an fnfs of that version.
 */
#ifndef FNFS_SCHED_DUMP_H
#define FNFS_SCHED_DUMP_H

#include <stdio.h>

#include "../../runtime/base/rt.h"
#include "store.h"

#define SCHED_DUMP_VERSION 1

/* Writes the dump of data directory `datadir` to `out`: one read
 * transaction of its fnfs.db (a running mount may keep writing), then the
 * objects. Returns 0 or -errno with the reason in `why`: -ENOENT (no
 * fnfs.db), -EPROTO (written by another schema version), -EIO. */
int sched_dump_export(const char *datadir, FILE *out, struct rt_buf *why);

/* Reads a dump from `in` into data directory `datadir`, which must hold no
 * fnfs.db yet (made when missing). Everything is checked before anything
 * is written (the document's form, its schema version, tables and columns
 * this fnfs knows, every function spec, every object against its hash);
 * the database is built aside and renamed into place last, so a refused
 * or failed import leaves no store behind. Returns 0 or -errno with the
 * reason in `why`: -EEXIST (a store is there), -EINVAL (a bad document),
 * -EPROTO (another schema version), -EIO, -ENOSPC. */
int sched_dump_import(const char *datadir, FILE *in, struct rt_buf *why);

#endif

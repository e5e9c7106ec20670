/*
 * fetch.h - the worker's side of a function's code (fetch.c): the code a
 * start waits for, downloaded once per hash from the controller,
 * unpacked per (hash, uid), and removed when no instance uses it. The
 * pure parts it is made of (hashes, manifests, the assembler) are
 * runtime/base/code.h. Private to runtime/worker/.
 */
#ifndef FNFS_RT_FETCH_H
#define FNFS_RT_FETCH_H

#include <jansson.h>

#include "../base/code.h"
#include "../base/wire.h"

struct rt_worker;
struct rt_instance;

/* Prepares the worker's code cache in DATA/cache/ID/code, once the
 * controller accepted this worker under its id (what a former run left
 * there is removed). Returns 0 or -errno (starts with code then fail). */
int rt_code_init(struct rt_worker *w);

/* Frees the cache's memory at exit (trees stay on disk until the next
 * start). */
void rt_code_close(struct rt_worker *w);

/* A `start` for `in` whose spec may name code: returns 0 when the start
 * may go on at once (no code, or its tree is ready: `*spec` is then a
 * new reference to the spec to start with, its "code_dir" set), or 1 when
 * it waits for the code (the reply to `seq` comes later, from
 * rt_worker_start or as a failure). */
int rt_code_start(struct rt_worker *w, struct rt_instance *in, json_t **spec,
		  long long revision, long long seq);

/* A stop or removal of instance `id`: a start waiting for code is
 * dropped (its request answered ECANCELED). */
void rt_code_cancel(struct rt_worker *w, const char *id);

/* Instance `id` is gone: the tree it used is released. */
void rt_code_release(struct rt_worker *w, const char *id);

/* The controller's code messages (code.chunk, code.error). */
void rt_code_on_message(struct rt_worker *w, const struct rt_msg *m);

/* The worker registered again: downloads under way start over. */
void rt_code_reconnected(struct rt_worker *w);

/* Once a second: downloads silent too long fail. */
void rt_code_tick(struct rt_worker *w);

/* Starts `in` with `spec` (a new reference taken) at `revision`,
 * answering `seq` (worker.c). */
void rt_worker_start(struct rt_worker *w, struct rt_instance *in, json_t *spec,
		     long long revision, long long seq);

/* Answers request `seq` with `err` (worker.c). */
void rt_worker_reply(struct rt_worker *w, long long seq, int err);

#endif

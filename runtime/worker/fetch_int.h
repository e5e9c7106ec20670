/*
 * fetch_int.h - what the files of the worker's code cache share: fetch.c
 * (the cache, its trees and the starts that wait for them),
 * fetch_download.c (a hash's download) and fetch_tree.c (unpacking and
 * removing trees in the thread pool). Private to them.
 */
#ifndef FNFS_RT_FETCH_INT_H
#define FNFS_RT_FETCH_INT_H

#include <jansson.h>
#include <stdint.h>

#include "fetch.h"
#include "worker.h"

#define GET_BATCH 1024	 /* objects per code.get */
#define FILES_MAX 100000 /* entries a manifest may have here */

/* A start waiting for its code. */
struct wait {
	char *id;     /* the instance, owned */
	json_t *spec; /* owned reference */
	long long revision, seq;
	struct wait *next;
};

enum tree_state { FETCHING, BUILDING, READY, FAILED };

/* The code of one hash: its download, then its unpacked tree. */
struct tree {
	char hash[65];
	enum tree_state state;
	char *dir;	      /* owned: trees/HASH */
	int users;	      /* instances that run with it */
	struct wait *waits;   /* starts waiting for it */
	uint64_t bytes;	      /* announced by the start */
	struct rt_buf man;    /* the manifest */
	int have_man;	      /* it arrived and was read */
	char (*objs)[65];     /* the file objects it references, owned */
	size_t nobjs;	      /* (each once), counted in refs */
	char (*need)[65];     /* those to download, in order */
	size_t nneed, got;    /* asked for; arrived */
	uint16_t *modes;      /* of each of objs: its first file's mode */
	uint16_t *need_modes; /* of each of need (in modes' block) */
	struct rt_code_asm a; /* the object being received */
	int receiving;	      /* a is begun */
	int fd;		      /* its temporary file, or -1 */
	char *part;	      /* its path, owned */
	int64_t last_mono;    /* of the last progress */
	int prefetched;	      /* asked for by code.prefetch, unused yet */
	int64_t kept_until;   /* then kept unused until this, once ready */
	char why[200];	      /* a failure's reason */
};

/* The worker's code cache. */
struct cache {
	char *root;	    /* DATA/cache/ID/code, owned */
	char *objects;	    /* root/objects */
	char *trees;	    /* root/trees */
	char *tmp;	    /* root/tmp */
	struct rt_map all;  /* hash -> struct tree * */
	struct rt_map refs; /* object -> trees referencing it (uintptr_t) */
	int refs_lost;	    /* a count failed (no memory): none is unlinked */
	struct rt_map uses; /* instance id -> hash (owned string) */
	uint64_t seq;	    /* names of temporary files */
	int works;	    /* jobs in the thread pool */
};

static inline struct cache *cache_of(struct rt_worker *w)
{
	return w->code;
}

static inline void path_of(struct rt_buf *b, const char *dir, const char *name)
{
	rt_buf_reset(b);
	rt_buf_printf(b, "%s/%s", dir, name);
}

/* Adds a reference of a tree to object `h` (fetch.c). */
void rt__fetch_ref_add(struct cache *c, const char *h);

/* Drops `t` when nothing uses or waits for it, it is not busy, and it
 * is not a prefetched tree still waiting for its first start (fetch.c). */
void rt__fetch_tree_tidy(struct rt_worker *w, struct tree *t);

/* Fails every start waiting for `t` with `err`, for `why` (fetch.c). */
void rt__fetch_tree_fail(struct rt_worker *w, struct tree *t, int err,
			 const char *why);

/* Starts what waits for ready tree `t` (fetch.c). */
void rt__fetch_tree_ready(struct rt_worker *w, struct tree *t);

/* rm -rf `dir`: its directories are 0555, made writable again first
 * (for a worker that is not root). Blocks: for the thread pool or exit
 * (fetch_tree.c). */
void rt__fetch_rm_tree(const char *dir);

/* Renames `dir` (taken) aside at once, and removes it in the thread pool
 * (fetch_tree.c). */
void rt__fetch_remove_later(struct rt_worker *w, char *dir);

/* The mode of a file in a tree: read-only, executable as asked
 * (fetch_tree.c). */
unsigned rt__fetch_file_mode(unsigned perm);

/* Unpacks tree `t` in the thread pool: DIR/trees/HASH/t, made aside and
 * renamed in; then rt__fetch_tree_ready or rt__fetch_tree_fail
 * (fetch_tree.c). */
void rt__fetch_tree_build(struct rt_worker *w, struct tree *t);

/* Asks the controller for `t`'s manifest (fetch_download.c). */
void rt__fetch_send_want(struct rt_worker *w, struct tree *t);

/* A code.chunk message for `t` (fetch_download.c). */
void rt__fetch_on_chunk(struct rt_worker *w, struct tree *t,
			const struct rt_msg *m);

#endif

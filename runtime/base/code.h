/*
 * code.h - a function's code as it travels: content-addressed objects
 * (SHA-256), the manifest that lists a revision of code (its own hash is
 * the revision's identity), the rules for names and paths, the assembler
 * of the chunks an object arrives in. Knows neither FUSE nor SQLite nor
 * the worker: the worker's side (the code a start waits for) is
 * runtime/worker/fetch.h.
 *
 * These pure parts (hashing, names, manifests, the assembler) serve the
 * controller (sched/code/code.c) and the worker (fetch.c).
 */
#ifndef FNFS_RT_CODE_H
#define FNFS_RT_CODE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "wire.h"

#define RT_CODE_HASH_LEN  64	       /* hex digits of a SHA-256 */
#define RT_CODE_NAME_MAX  255	       /* bytes of one name */
#define RT_CODE_PATH_MAX  1024	       /* bytes of a path below code/ */
#define RT_CODE_CHUNK_MAX (256u << 10) /* bytes of body per code.chunk */
/* The largest object a worker accepts: a file within the largest
 * function code, or a manifest of the most entries with the longest
 * paths. */
#define RT_CODE_OBJECT_MAX (64ull << 20)

/* The SHA-256 of `n` bytes at `p`, as 64 lowercase hex digits and a NUL.
 * Returns 0 or -ENOMEM. */
int rt_sha256_hex(const void *p, size_t n, char out[RT_CODE_HASH_LEN + 1]);

/* Whether `h` is 64 lowercase hex digits. Pure. */
int rt_code_hash_valid(const char *h);

/* Whether `name` (`len` bytes) may name a file or directory of code/:
 * 1 to 255 bytes, not "." or "..", no '/', no NUL, no control byte
 * (0x01-0x1f, 0x7f). Pure. */
int rt_code_name_valid(const char *name, size_t len);

/* Whether `path` is a relative path of valid names joined by single
 * slashes, at most RT_CODE_PATH_MAX bytes: no leading or trailing '/',
 * no empty component, no "." or "..". Pure. */
int rt_code_path_valid(const char *path);

/* One line of a manifest. */
struct rt_code_entry {
	int dir;       /* a directory; else a regular file */
	unsigned perm; /* permission bits, <= 0777 */
	uint64_t size; /* bytes of a file; 0 for a directory */
	char hash[RT_CODE_HASH_LEN + 1]; /* a file's object; "" for a dir */
	const char *path;		 /* relative, valid; borrowed */
};

/* Appends the line of `e` to manifest `out`: "f 755 SIZE HASH PATH\n" or
 * "d 755 0 - PATH\n" (perm in octal). A manifest is its entries sorted
 * by path (strcmp), each directory before what it holds. Returns 0 or
 * -ENOMEM. */
int rt_code_manifest_add(struct rt_buf *out, const struct rt_code_entry *e);

/* Reads manifest `text` (`len` bytes), calling `fn` for each entry (its
 * path points into a scratch copy valid during the call). Checks every
 * line, that paths are valid and strictly ascending, and that the parent
 * of each is a directory listed before it; at most `max_entries` entries.
 * Returns 0, fn's first non-zero, or -EPROTO with the reason in `why`.
 * Pure. */
int rt_code_manifest_parse(const char *text, size_t len, int max_entries,
			   int (*fn)(const struct rt_code_entry *e, void *arg),
			   void *arg, struct rt_buf *why);

/* An object being received in chunks. */
struct rt_code_asm {
	char object[RT_CODE_HASH_LEN + 1]; /* its hash */
	uint64_t size;			   /* announced total */
	uint64_t got;			   /* bytes received so far */
	void *ctx; /* the running SHA-256 (EVP_MD_CTX) */
	int fd;	   /* where the bytes go, or -1 */
};

/* Starts receiving `object` of `size` bytes (at most `max`) into `fd`
 * (-1: only checked). Returns 0, -EPROTO (bad hash or too big, reason in
 * `why`) or -ENOMEM. */
int rt_code_asm_begin(struct rt_code_asm *a, const char *object, uint64_t size,
		      uint64_t max, int fd, struct rt_buf *why);

/* Takes one chunk: `len` bytes at `off` of `object`, of announced total
 * `size`, `last` when it ends the object. Chunks come in order, each at
 * most RT_CODE_CHUNK_MAX bytes. Returns 0 (more to come), 1 (the object
 * is complete and its SHA-256 is `object`), -EPROTO (another object, a
 * gap, an overlap, an oversized chunk, a size that changed, a last chunk
 * that does not end it: the reason in `why`), -EBADMSG (the bytes do not
 * hash to `object`) or -EIO (the write to fd failed). */
int rt_code_asm_feed(struct rt_code_asm *a, const char *object, uint64_t off,
		     uint64_t size, const void *data, size_t len, int last,
		     struct rt_buf *why);

/* Frees what `a` holds (not its fd). */
void rt_code_asm_free(struct rt_code_asm *a);

#endif

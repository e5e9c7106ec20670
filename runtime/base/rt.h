/*
 * rt.h - the runtime layer's shared helpers: growable buffers, clocks,
 * logging, a string-keyed hash map and key=value quoting.
 *
 * This is the bottom layer of fnfs. It knows neither FUSE nor SQLite nor
 * the worker (no file of runtime/base/ includes one of runtime/worker/);
 * both the controller (fs/, sched/) and the worker (runtime/worker/) use
 * it.
 */
#ifndef FNFS_RT_H
#define FNFS_RT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FNFS_VERSION "0.1.0"

/* ---------------------------------------------------------------- buffers */

/* A growable byte buffer. `data` is always NUL-terminated when non-NULL, so
 * text can be used as a C string; `len` does not count the NUL. */
struct rt_buf {
	char *data; /* owned; NULL until the first append */
	size_t len; /* bytes in use */
	size_t cap; /* bytes allocated */
};

/* Makes room for `extra` more bytes (and the NUL after them) without
 * changing the content. Returns 0 or -ENOMEM. */
int rt_buf_reserve(struct rt_buf *b, size_t extra);

/* Appends `n` bytes. Returns 0 or -ENOMEM (the buffer is then unchanged). */
int rt_buf_append(struct rt_buf *b, const void *p, size_t n);

/* Appends a C string. Returns 0 or -ENOMEM. */
int rt_buf_puts(struct rt_buf *b, const char *s);

/* Appends printf-formatted text. Returns 0 or -ENOMEM. */
int rt_buf_printf(struct rt_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* As rt_buf_printf, with a va_list. */
int rt_buf_vprintf(struct rt_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Empties the buffer, keeping its memory. */
void rt_buf_reset(struct rt_buf *b);

/* Frees the memory; the buffer may be used again afterwards. */
void rt_buf_free(struct rt_buf *b);

/* Appends ` key=value`, quoting the value when it is empty or holds a space,
 * a quote, a backslash or a byte that is not printable ASCII; inside quotes,
 * `"` and `\` are escaped and other such bytes are written as \n, \t or
 * \xNN. The result is one line that `awk` can split on spaces. */
int rt_buf_kv(struct rt_buf *b, const char *key, const char *value);

/* ----------------------------------------------------------------- clocks */

/* Wall-clock time in milliseconds since the epoch. */
int64_t rt_now_ms(void);

/* Monotonic time in milliseconds, for durations. */
int64_t rt_mono_ms(void);

/* Writes `ms` as RFC 3339 UTC with milliseconds ("2026-11-21T17:00:00.123Z")
 * into `out`, which must hold at least 25 bytes. */
void rt_format_time(int64_t ms, char out[32]);

/* ---------------------------------------------------------------- logging */

enum rt_log_level { RT_LOG_DEBUG, RT_LOG_INFO, RT_LOG_WARN, RT_LOG_ERROR };

/* Logs one line, prefixed with the time and the level, to the log stream
 * (stderr until rt_log_open redirects it). Never fails. */
void rt_log(enum rt_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Sends the log to the file at `path` (appending). Returns 0 or -errno. */
int rt_log_open(const char *path);

/* Lines below `level` are dropped. The default is RT_LOG_INFO. */
void rt_log_set_level(enum rt_log_level level);

/* ------------------------------------------------------------ string map */

/* A hash map from NUL-terminated string keys (copied) to pointers, with
 * iteration in unspecified order. Insert, find and remove are O(1) on
 * average. */
struct rt_map_entry;
struct rt_map {
	struct rt_map_entry **slots; /* owned; chains of entries */
	size_t nslots;		     /* a power of two, or 0 */
	size_t count;		     /* entries stored */
};

/* Returns the value stored under `key`, or NULL. */
void *rt_map_get(const struct rt_map *m, const char *key);

/* A result that must be looked at: a put that fails for want of memory
 * leaves the map without the entry, and -Werror stops a caller that
 * would not know. */
#define RT_MUST __attribute__((warn_unused_result))

/* Stores `value` under `key`, which must not be present yet. Returns 0,
 * -EEXIST or -ENOMEM. */
RT_MUST int rt_map_put(struct rt_map *m, const char *key, void *value);

/* Replaces the value under `key`, which is present, in place (it never
 * allocates, so it cannot fail for want of memory). Returns 0 or
 * -ENOENT. */
int rt_map_update(struct rt_map *m, const char *key, void *value);

/* A map whose values are counts (uintptr_t): one more reference to
 * `key` (a first one stored, later ones in place). Returns 0, or -ENOMEM
 * for a first one that could not be stored. */
RT_MUST int rt_map_ref(struct rt_map *m, const char *key);

/* One reference to `key` fewer: the references left, 0 once the last is
 * gone (and the key with it; 0 for an absent key too). Never fails. */
uintptr_t rt_map_unref(struct rt_map *m, const char *key);

/* Removes `key` and returns its value, or NULL if it was absent. */
void *rt_map_del(struct rt_map *m, const char *key);

/* Calls `fn(key, value, arg)` for each entry until it returns non-zero,
 * which is then returned. `fn` must not change the map. */
int rt_map_each(const struct rt_map *m,
		int (*fn)(const char *key, void *value, void *arg), void *arg);

/* Frees the map's own memory (not the values). */
void rt_map_free(struct rt_map *m);

/* Returns a malloc'd array of the map's values (at least one slot, so
 * never NULL unless out of memory) and their number in `*n`. The array is
 * a snapshot: the map may change while it is walked. */
void **rt_map_values(const struct rt_map *m, size_t *n);

/* A hash map from 64-bit ids to pointers, same rules as rt_map. */
struct rt_idmap {
	uint64_t *keys; /* owned; 0 marks an empty slot, so 0 is not a key */
	void **values;	/* owned */
	size_t nslots;	/* a power of two, or 0 */
	size_t count;	/* live entries */
	size_t used;	/* live entries plus tombstones */
};

/* Returns the value stored under `id` (non-zero), or NULL. */
void *rt_idmap_get(const struct rt_idmap *m, uint64_t id);

/* Stores `value` (non-NULL) under `id` (non-zero, not present). Returns 0 or
 * -ENOMEM. */
RT_MUST int rt_idmap_put(struct rt_idmap *m, uint64_t id, void *value);

/* Removes `id`; a no-op when absent. */
void rt_idmap_del(struct rt_idmap *m, uint64_t id);

/* Frees the map's memory. */
void rt_idmap_free(struct rt_idmap *m);

/* A malloc'd snapshot of the values, as rt_map_values. */
void **rt_idmap_values(const struct rt_idmap *m, size_t *n);

/* ----------------------------------------------------------------- names */

/* Whether `s` is a valid tenant, namespace or function name: 1 to 63
 * characters of [A-Za-z0-9._-], starting with a letter or digit. */
int rt_name_valid(const char *s);

/* Closes every file descriptor from 3 up but `keep` (-1: none), so that
 * what a process was started with does not leak to its children. */
void rt_close_fds(int keep);

/* The length (1 to 4) of the UTF-8 character at `s` (`n` bytes there),
 * with its code point in `*cp` (may be NULL); 0 when the bytes are not one
 * (a stray continuation byte, a truncated sequence, an overlong form, a
 * surrogate, past U+10FFFF). Pure. */
size_t rt_utf8_char(const char *s, size_t n, unsigned *cp);

/* Returns the symbolic name of a positive errno value ("EINVAL"). */
const char *rt_errno_name(int err);

/* ---- sigpending.c */

/* From the text of /proc/TID/status: 1 if a signal other than SIGCHLD,
 * SIGWINCH, SIGURG and SIGCONT is pending (and not blocked), 0 if only
 * those are, -1 if none is or the masks are missing. Pure. */
int rt_status_interrupts(const char *status);

/* Whether a FUSE request of thread `tid` that the kernel interrupted
 * should end with EINTR: not when only signals a shell takes in passing
 * are pending for it (see sigpending.c); yes otherwise, and when that
 * cannot be told. Reads /proc. */
int rt_interrupt_wanted(pid_t tid);

#endif

/*
 * spec_internal.h - what the four files of a spec share (spec.c says how
 * it is cut): the attribute table, the words of the enum attributes, and
 * the validators that the parsers call. Private to sched/model/spec*.c; the
 * rest of fnfs uses the sched_spec_* functions of sched.h.
 */
#ifndef FNFS_SCHED_MODEL_SPEC_INTERNAL_H
#define FNFS_SCHED_MODEL_SPEC_INTERNAL_H

#include <stddef.h>

#include "../sched.h"

/* One attribute file of a function. */
struct spec__attr {
	const char *name; /* the file's name */
	int writable;	  /* whether a user may write it */
};

/* The attribute files, indexed by enum sched_attr (spec.c). */
extern const struct spec__attr spec__attrs[SCHED_ATTR_COUNT];

/* The words of the enum-valued attributes, indexed by value, NULL ended
 * (spec.c). */
extern const char *const spec__mode_words[];
extern const char *const spec__format_words[];
extern const char *const spec__tags_policy_words[];
extern const char *const spec__restart_words[];
extern const char *const spec__network_words[];
extern const char *const spec__isolation_words[];

/* The room `spec__shown_max` needs to show `max` bytes: each at worst 4. */
#define SHOWN_ROOM(max) ((max)*4 + 4)
/* How much of a value a reason quotes, and the room for it. */
#define SHOWN_MAX 48
#define SHOWN_CAP SHOWN_ROOM(SHOWN_MAX)

/* Frees the `n` strings of `v` and `v` (spec.c). */
void spec__strv_free(char **v, int n);

/* The validators (spec_check.c). Those that take `why` append the reason
 * of a refusal to it (when not NULL) and return -EINVAL; `strict` is 1 for
 * what a user writes, 0 for a spec loaded from the store. */

/* Appends the formatted reason to `why` (when not NULL); returns -EINVAL. */
int spec__bad(struct rt_buf *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets `*lo`..`*hi` to the range of integer attribute `a`; returns 1, or
 * 0 when `a` is not an integer. */
int spec__int_range(enum sched_attr a, long long *lo, long long *hi);
/* The field of integer attribute `a` in `s`, or NULL. */
int *spec__int_field(struct sched_spec *s, enum sched_attr a);
/* Checks and stores integer `v` of attribute `a`. */
int spec__set_int(struct sched_spec *s, enum sched_attr a, long long v,
		  struct rt_buf *why);
/* The words of enum attribute `a`, or NULL. */
const char *const *spec__enum_words(enum sched_attr a);
/* The value of enum attribute `a` in `s`. */
int spec__enum_get(const struct sched_spec *s, enum sched_attr a);
/* Checks and stores the `len` bytes of `word` as enum attribute `a`. */
int spec__set_enum(struct sched_spec *s, enum sched_attr a, const char *word,
		   size_t len, struct rt_buf *why);
/* The UTF-8 character at `p` (see rt_utf8_char). */
size_t spec__utf8_char(const unsigned char *p, size_t n, unsigned *cp);
/* Renders up to `max` bytes of user text `v` into `dst` (SHOWN_ROOM(max)
 * bytes) for a reason, clean UTF-8 whatever `v` holds. Returns `dst`. */
const char *spec__shown_max(char *dst, const char *v, size_t len, size_t max);
/* spec__shown_max of at most SHOWN_MAX bytes, into SHOWN_CAP bytes. */
const char *spec__shown(char *dst, const char *v, size_t len);
/* Checks text attribute `name`: at most `max` bytes of UTF-8 on one line,
 * no NUL, and (`strict`) no control character but tab. */
int spec__check_text(const char *name, const char *v, size_t len, size_t max,
		     int strict, struct rt_buf *why);
/* Check and store the command, the cwd, the ready probe. */
int spec__set_command(struct sched_spec *s, const char *v, size_t len,
		      int strict, struct rt_buf *why);
int spec__set_cwd(struct sched_spec *s, const char *v, size_t len, int strict,
		  struct rt_buf *why);
int spec__set_ready(struct sched_spec *s, const char *v, size_t len,
		    struct rt_buf *why);
/* Whether the `n` bytes of `k` are a valid environment variable name. */
int spec__env_key_valid(const char *k, size_t n);
/* Checks env entry `kv` ("KEY=value") against the `n` entries of `env`. */
int spec__check_env_entry(char *const *env, int n, const char *kv, size_t len,
			  int strict, struct rt_buf *why);
/* Appends a copy of the `len` bytes of `p` to the `*n` strings of `*v`;
 * returns 0 or -ENOMEM. */
int spec__strv_push(char ***v, int *n, const char *p, size_t len);
/* Checks tag `t` and adds it to the `*n` tags of `*tags`; a repeated tag
 * is dropped. */
int spec__add_tag(char ***tags, int *n, const char *t, size_t len,
		  struct rt_buf *why);
/* Checks one line of `mounts` ("PATH", "PATH ro" or "PATH rw") and adds
 * it to the `*n` mounts of `*mounts`. */
int spec__add_mount(char ***mounts, int *n, const char *v, size_t len,
		    int strict, struct rt_buf *why);

#endif

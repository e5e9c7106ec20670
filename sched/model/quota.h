/*
 * quota.h - per-tenant quotas (docs/reference.md, "Quotas"): what a
 * tenant may hold of memory, instances, functions, bytes of code/ and
 * bytes of requests held in open `invoke` files, set by root in the files
 * of tenants/T/quota/, and the daemon-wide bound of held request bytes.
 *
 * A tenant's use is kept in memory and moved by every change that makes
 * or frees something (no scan at a check): a write that would pass a
 * limit is refused with -EDQUOT and a reason, and changes nothing.
 *
 * What fs/ uses (enum sched_quota_res, sched_quota_render, _write, _hold,
 * _release, _keep) is declared in sched.h.
 */
#ifndef FNFS_SCHED_QUOTA_H
#define FNFS_SCHED_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "../sched.h"

#define SCHED_QUOTA_NONE  (-1LL)      /* a limit: unlimited */
#define SCHED_QUOTA_UNSET (-2LL)      /* no limit set: the default applies */
#define SCHED_QUOTA_MAX	  (1LL << 50) /* the largest limit one may set */

/* Bytes of requests held in open invoke files, all tenants together:
 * past it a write gets -EAGAIN. */
#define SCHED_REQUEST_BYTES_MAX (64LL << 20)

/* The defaults of a tenant that a user owns (root's tenants: none). */
#define SCHED_QUOTA_DEF_MEMORY	      4096 /* MB */
#define SCHED_QUOTA_DEF_INSTANCES     32
#define SCHED_QUOTA_DEF_FUNCTIONS     100
#define SCHED_QUOTA_DEF_CODE_BYTES    (256LL << 20)
#define SCHED_QUOTA_DEF_REQUEST_BYTES (16LL << 20)

/* A tenant's quotas and use (in struct sched_tenant). */
struct sched_quota {
	long long limit[SCHED_QUOTA_COUNT]; /* as set: >= 0, NONE or UNSET */
	long long used[SCHED_QUOTA_COUNT];  /* moved by each change */
	int loaded;			    /* `limit` read from the store */
};

/* ---- pure: names, values, arithmetic */

/* The file name of `r` ("code_bytes"), or NULL for a bad `r`. */
const char *sched_quota_name(enum sched_quota_res r);

/* The resource named `name`, or -1. */
int sched_quota_find(const char *name, size_t len);

/* The default limit of `r` for a tenant of root's (`root` 1: none) or of
 * a user's. */
long long sched_quota_default(enum sched_quota_res r, int root);

/* Parses what is written to a quota file: a decimal number of at most
 * SCHED_QUOTA_MAX, `none` (unlimited) or `default`, with an optional
 * single trailing newline. Returns 0 with `*out` (a limit, NONE or UNSET),
 * or -EINVAL with the reason in `why`. */
int sched_quota_parse(const char *buf, size_t len, long long *out,
		      struct rt_buf *why);

/* Appends the text a limit reads as: "4096\n" or "none\n". */
int sched_quota_format(long long limit, struct rt_buf *out);

/* Appends the stored form of the limits that are set ("memory=4096
 * instances=none"), "" when none is. Returns 0 or -ENOMEM. */
int sched_quota_encode(const long long limit[SCHED_QUOTA_COUNT],
		       struct rt_buf *out);

/* Reads the stored form into `limit` (UNSET for what it lacks). Returns 0
 * or -EINVAL for a text this code did not write (the known parts kept). */
int sched_quota_decode(const char *text, long long limit[SCHED_QUOTA_COUNT]);

/* Whether taking `asked` more with `used` taken passes `limit` (NONE:
 * never; a release, asked <= 0, never does). */
int sched_quota_over(long long limit, long long used, long long asked);

/* Appends the reason of a refusal: "tenant acme: over its quota of 4096
 * MB of memory (3072 used, 2048 asked)". */
int sched_quota_reason(const char *tenant, enum sched_quota_res r,
		       long long limit, long long used, long long asked,
		       struct rt_buf *why);

/* What a spec holds against its tenant's quotas: its instance ceiling
 * (the instances it may ever run: parallelism for a daemon, max_instances
 * for a hot or cold function) and that many times its memory. */
void sched_quota_claim(const struct sched_spec *s, long long *memory,
		       long long *instances);

/* ---- the model */

/* The request bytes held now, all tenants together. */
long long sched_quota_held(const struct sched *s);

/* ---- for sched/ only: the hooks of the changes that move a use */

struct sched_tenant;

/* Counts function `fn`'s claim (sched_quota_claim of its spec, and one
 * function) in its tenant's use, replacing what was counted before: after
 * it is made or loaded and after each new spec. */
void sched__quota_fn_update(struct sched_function *fn);

/* Takes function `fn`'s claim out of its tenant's use (it goes). */
void sched__quota_fn_drop(struct sched_function *fn);

/* Whether `fn` may go from its spec to `next`: -EDQUOT with the reason in
 * `why` when the growth of its claim passes a quota of its tenant. */
int sched__quota_spec(struct sched *s, struct sched_function *fn,
		      const struct sched_spec *next, struct rt_buf *why);

/* Whether a new function (at the defaults) may be made in namespace
 * `ns`: 0, or -EDQUOT with the reason in `why`. */
int sched__quota_create(struct sched *s, struct sched_obj *ns,
			struct rt_buf *why);

/* Whether `fn`'s code/ may grow by `grow` bytes: 0, or -EDQUOT with the
 * reason in `why`. */
int sched__quota_code(struct sched *s, struct sched_function *fn, uint64_t grow,
		      struct rt_buf *why);

/* Moves the code bytes of `fn`'s tenant by `delta`. */
void sched__quota_code_add(struct sched_function *fn, int64_t delta);

/* Deletes the stored quotas of tenant `name` (inside the transaction of
 * its removal). Returns 0 or -EIO. */
int sched__quota_unstore(struct sched *s, const char *name);

/* The leader of a cluster deletes the stored quotas of every tenant
 * that is gone: one removed on a follower (whose own delete reaches only
 * its copy), or while no controller led. A tenant made again under that
 * name starts from the defaults. Returns 0 or -EIO (logged). */
int sched__quota_sweep(struct sched *s);

/* A follower of a cluster was told that the stored setting `key` changed
 * (the leader wrote it to the shared store, and the store has it): when
 * it is a tenant's quotas, they are read from the store again at their
 * next use, so every controller checks the limits the leader set. */
void sched__quota_setting_changed(struct sched *s, const char *key);

/* ---- for the root's stats and metrics (report.c) */

/* Tenant `t`'s use of `r` in `*used` and the limit that applies to it
 * now in `*limit` (a number, or SCHED_QUOTA_NONE: unlimited). Returns 0,
 * or -ENOENT when `t` is not a tenant or `r` is bad. */
int sched_quota_get(struct sched *s, struct sched_obj *t,
		    enum sched_quota_res r, long long *used, long long *limit);

/* sched_quota_hold's check and take (calls_start.c journals a refusal):
 * 0, or -EDQUOT / -EAGAIN with the reason in `why`, or -ENOENT. */
int sched__quota_hold(struct sched *s, struct sched_function *fn, size_t n,
		      struct rt_buf *why);

#endif

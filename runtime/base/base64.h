/*
 * base64.h - standard base64 (RFC 4648, with '=' padding): the keys and
 * values of etcd's JSON gateway, and the bytes of a dump (dump.h). Pure.
 */
#ifndef FNFS_SCHED_BASE64_H
#define FNFS_SCHED_BASE64_H

#include <stddef.h>

#include "rt.h"

/* Appends the standard base64 (with '=' padding) of `n` bytes at `p` to
 * `out`. Returns 0 or -ENOMEM. */
int sched_b64_encode(const void *p, size_t n, struct rt_buf *out);

/* Appends the bytes that `n` characters of standard base64 at `s` stand
 * for to `out` (padding required when the length asks for it). Returns 0,
 * -EINVAL for anything that is not base64, or -ENOMEM. */
int sched_b64_decode(const char *s, size_t n, struct rt_buf *out);

#endif

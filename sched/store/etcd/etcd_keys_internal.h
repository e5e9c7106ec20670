/*
 * etcd_keys_internal.h - what the two halves of the key layout
 * (etcd_keys.h) share: etcd_keys.c checks names and encodes, and
 * etcd_keys_decode.c decodes.
 */
#ifndef FNFS_SCHED_STORE_ETCD_KEYS_INTERNAL_H
#define FNFS_SCHED_STORE_ETCD_KEYS_INTERNAL_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "etcd_keys.h"

extern const char *const etcd_keys__kind_name[ETCD_KEYS_KINDS];

/* A kind whose key is P/KIND itself, with nothing after it. */
int etcd_keys__single(int k);

int etcd_keys__name_ok(const char *s);

/* A setting's key: a name that may hold ':' too. */
int etcd_keys__setting_key_ok(const char *s);

int etcd_keys__hex64_ok(const char *h);

/* A byte a path keeps as it is in a key. */
int etcd_keys__path_plain(unsigned char c);

/* A code/ path: components that are not empty, "." or "..", no NUL. */
int etcd_keys__path_ok(const char *p, size_t n);

/* Whether `s` may be an instance's last exit: "", "oom", "status:N",
 * "signal:N" (sched/act/reports.c's words), at most 31 bytes. */
int etcd_keys__last_exit_ok(const char *s);

#endif

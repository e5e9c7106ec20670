/*
 * usercache.h - a user's supplementary groups and home, as initgroups
 * and getpwuid would give them, kept for a moment: every sandboxed
 * start (a restart, each cold call) asks, and the user database (NSS:
 * files, systemd) took a tenth of a cold call to answer. An answer is
 * used again while /etc/passwd and /etc/group are unchanged (inode,
 * size, times) and for at most rt_user_cache_ttl_ms, for sources NSS
 * has besides the files. Private to runtime/.
 */
#ifndef FNFS_RT_USERCACHE_H
#define FNFS_RT_USERCACHE_H
#include <sys/types.h>

/* The supplementary groups of `uid` with primary group `gid` (the list
 * initgroups would set: a uid without an entry has `gid` alone) and its
 * home (NULL without an entry), each a new allocation of the caller's.
 * Any thread. Returns 0 or -errno (-ENOMEM, -E2BIG). */
int rt_user_lookup(uid_t uid, gid_t gid, gid_t **groups, int *ngroups,
		   char **home);

/* How long an answer is used at most (default 5000 ms; 0: never). */
extern int rt_user_cache_ttl_ms;
/* The files whose change drops every answer (tests may point them
 * elsewhere): /etc/passwd and /etc/group. */
extern const char *rt_user_files[2];
/* How many lookups reached NSS (tests). */
extern unsigned long rt_user_nss_lookups;

#endif

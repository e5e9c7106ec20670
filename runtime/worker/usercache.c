/*
 * usercache.c - users' groups and homes, kept for a moment (usercache.h).
 * A small table of recent answers, replaced oldest first; each is
 * checked against the signature of the user files taken when it was
 * read.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/rt.h"
#include "usercache.h"

#define SLOTS 64 /* distinct users kept: a worker's tenants' owners */

int rt_user_cache_ttl_ms = 5000;
const char *rt_user_files[2] = { "/etc/passwd", "/etc/group" };
unsigned long rt_user_nss_lookups;

/* What identifies a version of the user files. */
struct files_sig {
	struct stat st[2]; /* zeroed where a file is missing */
};

struct answer {
	int used;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	char *home; /* or NULL */
	int64_t at; /* when read, rt_now_ms */
	struct files_sig sig;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct answer cache[SLOTS];

static void sig_take(struct files_sig *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < 2; i++)
		if (stat(rt_user_files[i], &s->st[i]) < 0)
			memset(&s->st[i], 0, sizeof(s->st[i]));
}

static int same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int sig_same(const struct files_sig *a, const struct files_sig *b)
{
	return same_stat(&a->st[0], &b->st[0]) &&
	       same_stat(&a->st[1], &b->st[1]);
}

/* Asks NSS, as initgroups would. */
static int ask(uid_t uid, gid_t gid, gid_t **groups, int *ngroups, char **home)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = 16, rc;

	*groups = NULL;
	*ngroups = 0;
	*home = NULL;
	rt_user_nss_lookups++;
	rc = getpwuid_r(uid, &pw, buf, sizeof(buf), &res);
	if (rc != 0 || res == NULL) {
		*groups = malloc(sizeof(gid_t));
		if (*groups == NULL)
			return -ENOMEM;
		(*groups)[0] = gid;
		*ngroups = 1;
		return 0;
	}
	if ((*home = strdup(pw.pw_dir)) == NULL)
		return -ENOMEM;
	for (;;) {
		gid_t *g = realloc(*groups, (size_t)n * sizeof(gid_t));
		int got = n;

		if (g == NULL)
			return -ENOMEM;
		*groups = g;
		if (getgrouplist(pw.pw_name, gid, g, &got) >= 0) {
			*ngroups = got;
			return 0;
		}
		if (got <= n) /* should not happen: stop growing */
			n *= 2;
		else
			n = got;
		if (n > 65536)
			return -E2BIG;
	}
}

static void answer_clear(struct answer *a)
{
	free(a->groups);
	free(a->home);
	memset(a, 0, sizeof(*a));
}

/* Copies of `a`'s groups and home into the caller's. */
static int copy_out(const struct answer *a, gid_t **groups, int *ngroups,
		    char **home)
{
	*groups = malloc((size_t)a->ngroups * sizeof(gid_t));
	*home = a->home != NULL ? strdup(a->home) : NULL;
	if (*groups == NULL || (a->home != NULL && *home == NULL)) {
		free(*groups);
		free(*home);
		*groups = NULL;
		*home = NULL;
		return -ENOMEM;
	}
	memcpy(*groups, a->groups, (size_t)a->ngroups * sizeof(gid_t));
	*ngroups = a->ngroups;
	return 0;
}

/* The slot for a new answer: a free one, else the oldest. */
static struct answer *slot_for_new(void)
{
	struct answer *old = &cache[0];
	int i;

	for (i = 0; i < SLOTS; i++) {
		if (!cache[i].used)
			return &cache[i];
		if (cache[i].at < old->at)
			old = &cache[i];
	}
	return old;
}

int rt_user_lookup(uid_t uid, gid_t gid, gid_t **groups, int *ngroups,
		   char **home)
{
	struct files_sig sig;
	struct answer *a;
	int64_t now = rt_now_ms();
	int i, rc;

	sig_take(&sig);
	pthread_mutex_lock(&lock);
	for (i = 0; i < SLOTS; i++) {
		a = &cache[i];
		if (!a->used || a->uid != uid || a->gid != gid)
			continue;
		if (now >= a->at && now - a->at < rt_user_cache_ttl_ms &&
		    sig_same(&a->sig, &sig)) {
			rc = copy_out(a, groups, ngroups, home);
			pthread_mutex_unlock(&lock);
			return rc;
		}
		answer_clear(a); /* stale: asked again below */
	}
	pthread_mutex_unlock(&lock);
	/* NSS outside the lock: a thread of the pool may ask meanwhile. */
	rc = ask(uid, gid, groups, ngroups, home);
	if (rc < 0 || rt_user_cache_ttl_ms <= 0)
		return rc;
	pthread_mutex_lock(&lock);
	a = slot_for_new();
	answer_clear(a);
	if (copy_out(&(struct answer){ .groups = *groups,
				       .ngroups = *ngroups,
				       .home = *home },
		     &a->groups, &a->ngroups, &a->home) == 0) {
		a->used = 1;
		a->uid = uid;
		a->gid = gid;
		a->at = now;
		a->sig = sig;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

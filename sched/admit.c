/*
 * admit.c - who may speak on the controller's socket (root or the
 * controller's own user, by SO_PEERCRED), and who may register under a
 * worker id: never while the worker of that id is connected; for a local
 * id, only the process the pool started for it (or the one that held it
 * before a restart of the controller); for any other id, only the process
 * that held it, until that process is gone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit.h"
#include "common.h"
#include "pool.h"

/* The settings key of the process registered as `id`. */
static void key_of(const char *id, char *key, size_t n)
{
	snprintf(key, n, "peer:%s", id);
}

/* Journals and logs a refusal of peer `p` (as `id`, or NULL before any
 * registration), and returns `err`. */
static int refuse(struct sched *s, const char *id, const struct sched_peer *p,
		  int err, const char *reason)
{
	struct rt_buf kvs = { 0 };
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)p->proc.pid);
	rt_buf_kv(&kvs, "pid", v);
	snprintf(v, sizeof(v), "%lld",
		 p->uid == (uid_t)-1 ? -1LL : (long long)p->uid);
	rt_buf_kv(&kvs, "uid", v);
	rt_buf_kv(&kvs, "reason", reason);
	sched_event(s, "worker.refused", id ? id : "workers", kvs.data);
	rt_log(RT_LOG_WARN,
	       "worker connection from pid %d uid %lld%s%s "
	       "refused: %s",
	       (int)p->proc.pid, p->uid == (uid_t)-1 ? -1LL : (long long)p->uid,
	       id ? " as " : "", id ? id : "", reason);
	rt_buf_free(&kvs);
	return -err;
}

int sched__admit_peer(struct sched *s, const struct sched_peer *p,
		      struct rt_buf *why)
{
	uid_t me = geteuid();

	if (p->uid == 0 || (p->uid == me && p->uid != (uid_t)-1))
		return 0;
	if (p->uid == (uid_t)-1)
		rt_buf_puts(why, "the peer's credentials are unknown");
	else
		rt_buf_printf(why,
			      "uid %lld may not register workers: only root "
			      "and the controller's user (uid %lld) may",
			      (long long)p->uid, (long long)me);
	return refuse(s, NULL, p, EPERM, why->data ? why->data : "refused");
}

/* The process recorded as `id`: 1 and `*rec` filled, 0 when none is, or
 * -EIO when the store cannot say. */
static int recorded(struct sched *s, const char *id, struct rt_proc_id *rec)
{
	char key[96], v[64];
	int rc;

	key_of(id, key, sizeof(key));
	rc = store_setting_get(s->store, key, v, sizeof(v));
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return -EIO;
	return rt_proc_id_parse(v, rec) == 0;
}

static int same_proc(const struct rt_proc_id *a, const struct rt_proc_id *b)
{
	return a->pid > 0 && a->pid == b->pid && a->start == b->start;
}

int sched__admit_id(struct sched *s, const char *id,
		    const struct sched_worker *w, const struct sched_peer *p,
		    struct rt_buf *why)
{
	struct sched_local *l = sched__local_of(s, id);
	struct rt_proc_id rec = { 0, 0 };
	int have;

	if (w != NULL && w->online) {
		rt_buf_printf(why, "a worker with id %s is already registered",
			      id);
		return refuse(s, id, p, EBUSY, why->data);
	}
	if (p->proc.pid <= 0) {
		rt_buf_puts(why, "the registering process is gone");
		return refuse(s, id, p, EPERM, why->data);
	}
	have = recorded(s, id, &rec);
	if (have < 0) {
		rt_buf_printf(why, "the store cannot say who held id %s", id);
		return refuse(s, id, p, EIO, why->data);
	}
	if (l != NULL) {
		/* The pool's own: its child, or the process that held it
		 * before the controller restarted (it outlived it). */
		if ((l->live && l->proc.pid == p->proc.pid) ||
		    (have && same_proc(&rec, &p->proc)))
			return 0;
		rt_buf_printf(why,
			      "%s is the id of a local worker: only the "
			      "process the controller started for it may "
			      "register as %s",
			      id, id);
		return refuse(s, id, p, EPERM, why->data);
	}
	if (have && !same_proc(&rec, &p->proc) && rt_proc_alive(&rec)) {
		/* Not gone: it may come back for what it runs. */
		rt_buf_printf(why,
			      "worker %s (pid %d) is not gone: only it may "
			      "register as %s until it exits",
			      id, (int)rec.pid, id);
		return refuse(s, id, p, EBUSY, why->data);
	}
	return 0;
}

int sched__admit_record(struct sched *s, const char *id,
			const struct sched_peer *p)
{
	char key[96], v[64];

	key_of(id, key, sizeof(key));
	rt_proc_id_format(&p->proc, v, sizeof(v));
	return store_setting_put(s->store, key, v);
}

void sched__admit_forget(struct sched *s, const char *id)
{
	char key[96];

	key_of(id, key, sizeof(key));
	store_setting_delete(s->store, key);
}

void sched__logs_private(struct sched *s, const char *id)
{
	struct rt_buf dir = { 0 };
	struct stat st;

	if (rt_buf_printf(&dir, "%s/logs/%s", s->datadir, id) == 0 &&
	    lstat(dir.data, &st) == 0 && S_ISDIR(st.st_mode) &&
	    rt_private_tree(dir.data) < 0)
		rt_log(RT_LOG_WARN, "cannot make %s private", dir.data);
	rt_buf_free(&dir);
}

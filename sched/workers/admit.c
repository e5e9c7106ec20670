/*
 * admit.c - who may speak on the controller's socket (root or the
 * controller's own user, by SO_PEERCRED), and who may register under a
 * worker id: never while the worker of that id is connected; for a local
 * id, only the process the pool started for it (or the one that held it
 * before a restart of the controller); for any other id, only the process
 * that held it, until that process is gone.
 *
 * Over --listen: a TLS peer speaks when its certificate is from the
 * cluster CA, valid, a worker's and not revoked, and registers only under
 * the id its certificate names (a new connection with that certificate
 * replaces an old one: the certificate, not the process, is who it is);
 * a plain TCP peer only with --insecure, under the id it gives. And
 * revocation (echo revoke > workers/ID/state).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit.h"
#include "../common.h"
#include "listen.h"
#include "pool.h"

/* A TLS worker's old connection silent this long (a heartbeat goes every
 * second) gives way to a new one with its certificate. */
#define ADMIT_REPLACE_SILENT_MS 2500

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

	/* On the Unix socket: pid and uid, as ever; over TCP, how and
	 * from where. */
	if (p->transport == SCHED_UNIX) {
		snprintf(v, sizeof(v), "%d", (int)p->proc.pid);
		rt_buf_kv(&kvs, "pid", v);
		snprintf(v, sizeof(v), "%lld",
			 p->uid == (uid_t)-1 ? -1LL : (long long)p->uid);
		rt_buf_kv(&kvs, "uid", v);
	} else {
		rt_buf_kv(&kvs, "transport",
			  sched_transport_name(p->transport));
		rt_buf_kv(&kvs, "address", p->addr);
	}
	if (p->cert.cn[0]) {
		rt_buf_kv(&kvs, "cn", p->cert.cn);
		rt_buf_kv(&kvs, "serial", p->cert.serial);
		/* Checked after a resumed handshake as after a full one. */
		rt_buf_kv(&kvs, "resumed", p->resumed ? "yes" : "no");
	}
	rt_buf_kv(&kvs, "reason", reason);
	sched_event(s, "worker.refused", id ? id : "workers", kvs.data);
	if (p->transport == SCHED_UNIX)
		rt_log(RT_LOG_WARN,
		       "worker connection from pid %d uid %lld%s%s "
		       "refused: %s",
		       (int)p->proc.pid,
		       p->uid == (uid_t)-1 ? -1LL : (long long)p->uid,
		       id ? " as " : "", id ? id : "", reason);
	else
		rt_log(RT_LOG_WARN,
		       "worker connection over %s from %s%s%s refused: %s",
		       sched_transport_name(p->transport), p->addr,
		       id ? " as " : "", id ? id : "", reason);
	rt_buf_free(&kvs);
	return -err;
}

/* The settings keys of the revocation of `id` (set while it is
 * revoked) and of the certificate it last registered with. */
static void revoked_key(const char *id, char *key, size_t n)
{
	snprintf(key, n, "revoked:%s", id);
}

static void cert_key(const char *id, char *key, size_t n)
{
	snprintf(key, n, "cert:%s", id);
}

/* A peer over --listen: TLS with a good certificate, or plain TCP with
 * --insecure. */
static int admit_tcp(struct sched *s, const struct sched_peer *p,
		     struct rt_buf *why)
{
	int r;

	if (p->transport == SCHED_TCP) {
		if (s->links.listen != NULL && s->links.listen->insecure)
			return 0;
		rt_buf_puts(why, "plain TCP is refused: connect with "
				 "tls:// (the controller was not started "
				 "with --insecure)");
		return refuse(s, NULL, p, EPERM, why->data);
	}
	if (p->tls_error[0]) {
		rt_buf_puts(why, p->tls_error);
		return refuse(s, rt_name_valid(p->cert.cn) ? p->cert.cn : NULL,
			      p, EPERM, why->data);
	}
	r = store_revoked(s->store, p->cert.cn, p->cert.serial,
			  p->cert.not_before);
	if (r != 0) {
		if (r > 0)
			rt_buf_printf(why,
				      "the certificate of %s (serial %s) is "
				      "revoked",
				      p->cert.cn, p->cert.serial);
		else
			rt_buf_puts(why, "the store cannot say whether the "
					 "certificate is revoked");
		return refuse(s, rt_name_valid(p->cert.cn) ? p->cert.cn : NULL,
			      p, r > 0 ? EPERM : EIO, why->data);
	}
	return 0;
}

void sched__admit_refused(struct sched *s, const struct sched_peer *p,
			  const char *reason)
{
	refuse(s, NULL, p, EPERM, reason);
}

int sched__admit_peer(struct sched *s, const struct sched_peer *p,
		      struct rt_buf *why)
{
	uid_t me = geteuid();

	if (p->transport != SCHED_UNIX)
		return admit_tcp(s, p, why);
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
	char key[96], v[64];
	int have;

	if (p->transport == SCHED_TLS && strcmp(p->cert.cn, id) != 0) {
		rt_buf_printf(why,
			      "the certificate is for %s: it may not "
			      "register as %s",
			      p->cert.cn, id);
		return refuse(s, id, p, EPERM, why->data);
	}
	if (p->transport != SCHED_UNIX && l != NULL) {
		rt_buf_printf(why,
			      "%s is the id of a local worker: only the "
			      "process the controller started for it may "
			      "register as %s",
			      id, id);
		return refuse(s, id, p, EPERM, why->data);
	}
	revoked_key(id, key, sizeof(key));
	if (p->transport != SCHED_TLS &&
	    store_setting_get(s->store, key, v, sizeof(v)) == 0) {
		rt_buf_printf(why,
			      "worker %s is revoked: it may come back with "
			      "a new certificate (fnfs ca issue), or "
			      "without one after echo resume > "
			      "workers/%s/state",
			      id, id);
		return refuse(s, id, p, EPERM, why->data);
	}
	if (w != NULL && w->online) {
		rt_buf_printf(why, "a worker with id %s is already registered",
			      id);
		return refuse(s, id, p, EBUSY, why->data);
	}
	if (p->transport != SCHED_UNIX)
		return 0; /* no process of this machine to check */
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
	int rc;

	if (p->transport != SCHED_UNIX) {
		/* No process of this machine: nothing to keep the id for. */
		key_of(id, key, sizeof(key));
		rc = store_setting_delete(s->store, key);
		if (rc < 0 && rc != -ENOENT)
			return rc;
	}
	if (p->transport == SCHED_TLS) {
		/* Its certificate is newer than any revocation. */
		cert_key(id, key, sizeof(key));
		rc = store_setting_put(s->store, key, p->cert.serial);
		revoked_key(id, key, sizeof(key));
		if (rc == 0)
			rc = store_setting_delete(s->store, key);
		return rc;
	}
	if (p->transport != SCHED_UNIX)
		return 0;
	key_of(id, key, sizeof(key));
	rt_proc_id_format(&p->proc, v, sizeof(v));
	return store_setting_put(s->store, key, v);
}

void sched__admit_replace(struct sched *s, const char *id,
			  const struct sched_peer *p)
{
	struct sched_worker *w = (struct sched_worker *)sched_child(&s->pool,
								    id);
	struct rt_buf why = { 0 };

	int64_t silent;

	if (p->transport != SCHED_TLS || strcmp(p->cert.cn, id) != 0 ||
	    w == NULL || !w->online || w->conn == NULL)
		return;
	/* A worker that still speaks on its connection is another copy
	 * with the same certificate: refused, as on the Unix socket, so two
	 * copies do not take the id from each other in turn. */
	silent = rt_mono_ms() - w->heartbeat_mono;
	if (silent < ADMIT_REPLACE_SILENT_MS)
		return;
	rt_buf_printf(&why,
		      "replaced by a new connection from %s (silent for "
		      "%lld ms)",
		      p->addr, (long long)silent);
	rt_log(RT_LOG_INFO, "worker %s: %s", id, why.data);
	sched__conn_close(w->conn, why.data);
	rt_buf_free(&why);
}

int sched__revoke(struct sched *s, struct sched_worker *w)
{
	struct rt_buf kvs = { 0 };
	char key[96], serial[64] = "", v[32];
	int64_t now = rt_now_ms();
	int rc;

	if (w->local) {
		rt_buf_kv(&kvs, "op", "revoke");
		rt_buf_kv(&kvs, "errno", "EINVAL");
		rt_buf_kv(&kvs, "reason",
			  "a local worker has no certificate: set "
			  "workers/pool_size instead");
		sched__event(s, &w->obj, "worker.rejected", kvs.data);
		rt_buf_free(&kvs);
		return -EINVAL;
	}
	cert_key(w->obj.name, key, sizeof(key));
	if (store_setting_get(s->store, key, serial, sizeof(serial)) < 0)
		serial[0] = '\0';
	rc = store_begin(s->store);
	if (rc < 0)
		goto out;
	rc = store_revoke(s->store, w->obj.name, serial, now);
	revoked_key(w->obj.name, key, sizeof(key));
	snprintf(v, sizeof(v), "%lld", (long long)now);
	if (rc == 0)
		rc = store_setting_put(s->store, key, v);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
	if (rc < 0)
		goto out;
	w->revoked = 1;
	if (serial[0])
		rt_buf_kv(&kvs, "serial", serial);
	rt_buf_kv(&kvs, "issued_before_ms", v);
	sched__event(s, &w->obj, "worker.revoked", kvs.data);
	rt_log(RT_LOG_WARN,
	       "worker %s revoked: its certificates issued until now are "
	       "refused",
	       w->obj.name);
	if (w->conn != NULL)
		sched__conn_close(w->conn, "revoked");
out:
	rt_buf_free(&kvs);
	return rc;
}

int sched__unrevoke(struct sched *s, struct sched_worker *w)
{
	char key[96];
	int rc;

	revoked_key(w->obj.name, key, sizeof(key));
	rc = store_setting_delete(s->store, key);
	if (rc == 0)
		w->revoked = 0;
	return rc;
}

int sched__revoked_of(struct sched *s, const char *id)
{
	char key[96], v[32];

	revoked_key(id, key, sizeof(key));
	return store_setting_get(s->store, key, v, sizeof(v)) == 0;
}

int sched__admit_forget(struct sched *s, const char *id)
{
	char key[96];
	int rc;

	key_of(id, key, sizeof(key));
	rc = store_setting_delete(s->store, key);
	return rc == -ENOENT ? 0 : rc;
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

/*
 * code_cluster_objects.c - code/ on a cluster: the objects, uploaded to
 * etcd before an entry names them and fetched from it when a read or a
 * worker needs one this controller lacks (sched_code_fetch). Part of the
 * code module's cluster backend (code_cluster.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../runtime/base/code.h"
#include "../../store/etcd/code_etcd.h"
#include "code_cluster.h"

/* ============================================================ objects */

struct obj_waiter {
	obj_fn fn;
	void *arg;
	struct obj_waiter *next;
};

/* A fetch or an upload of one object, with who waits for it. */
struct obj_xfer {
	struct sched *s; /* NULL once code/ is closed */
	int get;	 /* a fetch; else an upload */
	char hash[65];
	char *tmp; /* a fetch's temporary file, owned */
	int fd;
	struct obj_waiter *waiters;
};

/* Whether object `h` is in DATA/code/objects. */
static int obj_local(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };
	int ok;

	object_path(c, h, &p);
	ok = p.data != NULL && access(p.data, F_OK) == 0;
	rt_buf_free(&p);
	return ok;
}

/* Moves the finished temporary file `tmp` (open as `fd`) into place as
 * object `h`. */
static int object_install(struct sched_code_state *c, const char *h, int fd,
			  const char *tmp)
{
	struct rt_buf p = { 0 };
	char *slash;
	int rc = 0;

	object_path(c, h, &p);
	if (p.data == NULL)
		return -ENOMEM;
	slash = strrchr(p.data, '/');
	*slash = '\0';
	if (mkdir(p.data, 0700) < 0 && errno != EEXIST)
		rc = sched__code_errno_io();
	*slash = '/';
	if (rc == 0 && (fchmod(fd, 0400) < 0 || rename(tmp, p.data) < 0))
		rc = sched__code_errno_io();
	rt_buf_free(&p);
	return rc;
}

static int obj_wait(struct obj_xfer *x, obj_fn fn, void *arg)
{
	struct obj_waiter *w;

	if (fn == NULL)
		return 0;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->next = x->waiters;
	x->waiters = w;
	return 0;
}

static void on_xfer(void *arg, int err, const char *why)
{
	struct obj_xfer *x = arg;
	struct sched *s = x->s;
	struct obj_waiter *w, *next;

	if (s != NULL) {
		struct sched_code_state *c = st_of(s);

		rt_map_del(x->get ? &c->gets : &c->puts, x->hash);
		if (err == 0 && x->get)
			err = object_install(c, x->hash, x->fd, x->tmp);
		if (err < 0 && err != -ECANCELED)
			rt_log(RT_LOG_ERROR, "code: object %.12s %s etcd: %s",
			       x->hash, x->get ? "from" : "to",
			       why ? why : strerror(-err));
	}
	if (x->fd >= 0)
		close(x->fd);
	if (x->tmp != NULL && (err < 0 || s == NULL))
		unlink(x->tmp);
	for (w = x->waiters; w != NULL; w = next) {
		next = w->next;
		if (s != NULL)
			w->fn(w->arg, err, x->hash);
		free(w);
	}
	free(x->tmp);
	free(x);
}

static struct obj_xfer *xfer_new(struct sched *s, int get, const char *h)
{
	struct obj_xfer *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return NULL;
	x->s = s;
	x->get = get;
	x->fd = -1;
	memcpy(x->hash, h, 65);
	return x;
}

/* Makes object `h` (of this controller's objects) whole in etcd. Returns
 * 0 when it is, SCHED_CODE_LATER (then `fn`, unless NULL) or -errno. */
int sched__code_obj_upload(struct sched *s, const char *h, obj_fn fn, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct obj_xfer *x = rt_map_get(&c->puts, h);
	struct rt_buf p = { 0 };
	struct stat sb;
	uint64_t size;
	int rc;

	if (store_object_known(s->store, h, &size) == 1)
		return 0;
	if (x != NULL) {
		rc = obj_wait(x, fn, arg);
		return rc < 0 ? rc : SCHED_CODE_LATER;
	}
	object_path(c, h, &p);
	rc = p.data == NULL ? -ENOMEM : stat(p.data, &sb) < 0 ? -EIO : 0;
	x = rc == 0 ? xfer_new(s, 0, h) : NULL;
	if (rc == 0 && x == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = code_etcd_upload(store_client(s->store),
				      store_cluster(s->store), h, p.data,
				      (uint64_t)sb.st_size, on_xfer, x);
	if (rc == 0 &&
	    (rt_map_put(&c->puts, h, x) < 0 || obj_wait(x, fn, arg) < 0))
		rt_log(RT_LOG_ERROR, "code: out of memory uploading %.12s", h);
	rt_buf_free(&p);
	if (rc < 0) {
		free(x);
		rt_log(RT_LOG_ERROR, "code: object %.12s to etcd: %s", h,
		       strerror(-rc));
		return rc;
	}
	return SCHED_CODE_LATER;
}

/* Makes object `h` one of this controller's objects: there already, the
 * empty one made, or fetched from etcd. Returns 0 when it is,
 * SCHED_CODE_LATER (then `fn`, unless NULL) or -errno (-ENOENT: etcd has
 * no such object). */
int sched__code_obj_fetch(struct sched *s, const char *h, obj_fn fn, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct obj_xfer *x = rt_map_get(&c->gets, h);
	uint64_t size = 0;
	int rc;

	if (obj_local(c, h))
		return 0;
	if (strcmp(h, c->empty) == 0)
		return sched__code_object_put(c, h, -1, NULL, 0);
	if (x != NULL) {
		rc = obj_wait(x, fn, arg);
		return rc < 0 ? rc : SCHED_CODE_LATER;
	}
	if (store_object_known(s->store, h, &size) != 1) {
		rt_log(RT_LOG_ERROR, "code: object %.12s is not in etcd", h);
		return -ENOENT;
	}
	x = xfer_new(s, 1, h);
	if (x == NULL)
		return -ENOMEM;
	x->fd = sched__code_tmp_file(c, "fetch", &x->tmp);
	rc = x->fd < 0 ? x->fd
		       : code_etcd_fetch(store_client(s->store),
					 store_cluster(s->store), h, size,
					 x->fd, on_xfer, x);
	if (rc < 0) {
		if (x->fd >= 0)
			close(x->fd);
		if (x->tmp != NULL)
			unlink(x->tmp);
		free(x->tmp);
		free(x);
		return rc;
	}
	if (rt_map_put(&c->gets, h, x) < 0 || obj_wait(x, fn, arg) < 0)
		rt_log(RT_LOG_ERROR, "code: out of memory fetching %.12s", h);
	return SCHED_CODE_LATER;
}

/* A sched_code_fetch waiting for its object. */
struct fetch_wait {
	sched_code_done_fn done;
	void *arg;
};

static void on_fetched(void *arg, int err, const char *hash)
{
	struct fetch_wait *w = arg;

	(void)hash;
	w->done(w->arg, err);
	free(w);
}

/* The cluster backend's fetch (sched_code_fetch, code.h): the object of
 * file `n`, unless it is here or not needed (open writes, no content). */
int sched__code_cl_fetch(struct sched *s, struct sched_code_node *n,
			 sched_code_done_fn done, void *arg)
{
	struct fetch_wait *w;
	int rc;

	if (n->stage != NULL || !n->hash[0] || obj_local(st_of(s), n->hash))
		return 0;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->done = done;
	w->arg = arg;
	rc = sched__code_obj_fetch(s, n->hash, on_fetched, w);
	if (rc != SCHED_CODE_LATER)
		free(w);
	return rc == -ENOENT || rc == -EBADMSG ? -EIO : rc;
}

int sched__code_orphan_xfer(const char *key, void *value, void *arg)
{
	struct obj_xfer *x = value;

	(void)key;
	(void)arg;
	x->s = NULL; /* its end frees it */
	return 0;
}

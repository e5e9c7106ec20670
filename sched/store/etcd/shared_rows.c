/*
 * shared_rows.c - the shared store's operations on rows (shared.h):
 * code/ as etcd has it (its loads and compare-and-set), the derived
 * state written to the local tables and, by the leader, to etcd, and
 * what the local store keeps alone.
 */
#include <string.h>

#include "shared.h"
#include "store_etcd.h"

/* ====================================================== code/ from etcd */

int shared_code_submit(struct store *s, const struct store_row *fn,
		       const struct store_code_op *v, size_t n,
		       store_done_fn done, void *arg)
{
	struct store_change c;

	if (fn != NULL) {
		memset(&c, 0, sizeof(c));
		c.op = STORE_UPDATE;
		c.row = *fn;
		c.own = 1;
	}
	return store_etcd_submit_code(shared(s)->remote, fn ? &c : NULL,
				      fn ? 1 : 0, v, n, done, arg);
}

int shared_object_known(struct store *s, const char *hash, uint64_t *size)
{
	return store_etcd_object_known(shared(s)->remote, hash, size);
}

/* etcd's code/ as the load callbacks want it. */
struct code_load {
	int (*file)(const struct store_code_file *, void *);
	int (*rev)(const struct store_code_revision *, void *);
	void *arg;
};

static int code_file_cb(const struct etcd_keys_rec *r, void *arg)
{
	struct code_load *x = arg;

	return x->file(&r->file, x->arg);
}

static int code_revision_cb(const struct etcd_keys_rec *r, void *arg)
{
	struct code_load *x = arg;

	return x->rev(&r->code, x->arg);
}

int shared_code_file_load(struct store *s,
			  int (*fn)(const struct store_code_file *, void *),
			  void *arg)
{
	struct code_load x = { fn, NULL, arg };

	return store_etcd_code_each(shared(s)->remote, ETCD_KEYS_CODE_FILE,
				    code_file_cb, &x);
}

int shared_code_revision_load(struct store *s,
			      int (*fn)(const struct store_code_revision *,
					void *),
			      void *arg)
{
	struct code_load x = { NULL, fn, arg };

	return store_etcd_code_each(shared(s)->remote, ETCD_KEYS_CODE_REVISION,
				    code_revision_cb, &x);
}

/* ======================================== derived state: local, mirrored */

int shared_instance_put(struct store *s, const struct store_instance *r)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };
	int rc = store_instance_put(st->local, r);

	rec.instance = *r;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 0);
}

int shared_instance_publish(struct store *s, const struct store_instance *r)
{
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };

	rec.instance = *r;
	return store__shared_mirror_rec(shared(s), &rec, 0);
}

int shared_instance_delete(struct store *s, const char *tenant, const char *ns,
			   const char *fn, int n)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_INSTANCE };
	int rc = store_instance_delete(st->local, tenant, ns, fn, n);

	rec.instance.tenant = tenant;
	rec.instance.ns = ns;
	rec.instance.fn = fn;
	rec.instance.n = n;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 1);
}

int shared_worker_put(struct store *s, const struct store_worker *r)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_WORKER };
	int rc = store_worker_put(st->local, r);

	rec.worker = *r;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 0);
}

int shared_worker_publish(struct store *s, const struct store_worker *r)
{
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_WORKER };

	rec.worker = *r;
	return store__shared_mirror_rec(shared(s), &rec, 0);
}

int shared_worker_delete(struct store *s, const char *id)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_WORKER };
	int rc = store_worker_delete(st->local, id);

	rec.worker.id = id;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 1);
}

int shared_setting_put(struct store *s, const char *key, const char *value)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_SETTING };
	int rc = store_setting_put(st->local, key, value);

	rec.key = key;
	rec.value = value;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 0);
}

int shared_setting_delete(struct store *s, const char *key)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_SETTING };
	int rc = store_setting_delete(st->local, key);

	rec.key = key;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 1);
}

int shared_revoke(struct store *s, const char *worker, const char *serial,
		  int64_t revoked_ms)
{
	struct store_shared *st = shared(s);
	struct etcd_keys_rec rec = { .kind = ETCD_KEYS_REVOKED };
	int rc = store_revoke(st->local, worker, serial, revoked_ms);

	rec.revoked.worker = worker;
	rec.revoked.serial = serial ? serial : "";
	rec.revoked.revoked_ms = revoked_ms;
	return rc < 0 ? rc : store__shared_mirror_rec(st, &rec, 0);
}

/* ================================================== the local store alone */

int shared_instance_load(struct store *s,
			 int (*fn)(const struct store_instance *, void *),
			 void *arg)
{
	return store_instance_load(shared(s)->local, fn, arg);
}

int shared_worker_load(struct store *s,
		       int (*fn)(const struct store_worker *, void *),
		       void *arg)
{
	return store_worker_load(shared(s)->local, fn, arg);
}

int shared_setting_get(struct store *s, const char *key, char *out, size_t n)
{
	return store_setting_get(shared(s)->local, key, out, n);
}

int shared_setting_each(struct store *s, const char *prefix,
			int (*fn)(const char *key, void *arg), void *arg)
{
	return store_setting_each(shared(s)->local, prefix, fn, arg);
}

int shared_revoked(struct store *s, const char *cn, const char *serial,
		   int64_t not_before_s)
{
	return store_revoked(shared(s)->local, cn, serial, not_before_s);
}

int shared_code_file_put(struct store *s, const struct store_code_file *r)
{
	return store_code_file_put(shared(s)->local, r);
}

int shared_code_file_delete(struct store *s, const char *tenant, const char *ns,
			    const char *fn, const char *path)
{
	return store_code_file_delete(shared(s)->local, tenant, ns, fn, path);
}

int shared_code_file_rename(struct store *s, const char *tenant, const char *ns,
			    const char *fn, const char *from, const char *to)
{
	return store_code_file_rename(shared(s)->local, tenant, ns, fn, from,
				      to);
}

int shared_code_files_delete(struct store *s, const char *tenant,
			     const char *ns, const char *fn)
{
	return store_code_files_delete(shared(s)->local, tenant, ns, fn);
}

int shared_code_revision_put(struct store *s,
			     const struct store_code_revision *r)
{
	return store_code_revision_put(shared(s)->local, r);
}

int shared_code_revision_delete(struct store *s, const char *tenant,
				const char *ns, const char *fn)
{
	return store_code_revision_delete(shared(s)->local, tenant, ns, fn);
}

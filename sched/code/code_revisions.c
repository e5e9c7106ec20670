/*
 * code_revisions.c - revisions of a function's code (manifests, made a
 * quiet time after a burst of changes and committed durably), and the
 * timer that makes them and collects the objects nothing references any
 * more. Part of the code module (code.c says how it is cut).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"
#include "../common.h"
#include "../workers/requests.h"

#define GARBAGE_PER_TURN 256 /* objects unlinked per timer turn */

/* ============================================================ revisions */

/* One entry of a manifest being built. */
struct mf_ent {
	char *path; /* owned */
	const struct sched_code_node *n;
};

struct mf_list {
	struct mf_ent *v;
	size_t n, cap;
};

static int mf_collect(const struct sched_code_node *n, const char *prefix,
		      struct mf_list *l)
{
	struct rt_buf p = { 0 };
	void **v;
	size_t i, k;
	int rc = 0;

	if (n->parent != NULL) {
		rc = rt_buf_printf(&p, "%s%s%s", prefix, *prefix ? "/" : "",
				   n->name);
		if (rc == 0 && l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct mf_ent *e = realloc(l->v, cap * sizeof(*e));

			if (e == NULL)
				rc = -ENOMEM;
			else {
				l->v = e;
				l->cap = cap;
			}
		}
		if (rc < 0) {
			rt_buf_free(&p);
			return rc;
		}
		l->v[l->n].path = p.data;
		l->v[l->n++].n = n;
	}
	v = rt_map_values(&n->children, &k);
	for (i = 0; rc == 0 && v != NULL && i < k; i++)
		rc = mf_collect(v[i], p.data ? p.data : "", l);
	free(v);
	return rc;
}

static int mf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mf_ent *)a)->path,
		      ((const struct mf_ent *)b)->path);
}

static void mf_free(struct mf_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The manifest of `f`'s tree as closed now, its hash ("" for no code),
 * and what it references (the manifest first). */
int sched__code_manifest_of(struct code_fn *f, struct rt_buf *text,
			    char hash[65], char (**objs)[65], size_t *nobjs,
			    uint64_t *bytes, int *files)
{
	struct mf_list l = { 0 };
	size_t i;
	int rc = mf_collect(f->root, "", &l);

	*objs = NULL;
	*nobjs = 0;
	*bytes = 0;
	*files = (int)l.n;
	hash[0] = '\0';
	if (rc == 0 && l.n > 0)
		*objs = calloc(l.n + 1, sizeof(**objs));
	if (rc == 0 && l.n > 0 && *objs == NULL)
		rc = -ENOMEM;
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), mf_cmp);
	for (i = 0; rc == 0 && i < l.n; i++) {
		const struct sched_code_node *n = l.v[i].n;
		struct rt_code_entry e = { is_dir(n), n->mode & 0777,
					   is_dir(n) ? 0 : n->size, "",
					   l.v[i].path };

		if (!e.dir) {
			memcpy(e.hash, n->hash, 65);
			*bytes += n->size;
			memcpy((*objs)[++*nobjs], n->hash, 65);
		}
		rc = rt_code_manifest_add(text, &e);
	}
	if (rc == 0 && l.n > 0) {
		rc = rt_sha256_hex(text->data, text->len, hash);
		memcpy((*objs)[0], hash, 65);
		++*nobjs;
	}
	mf_free(&l);
	if (rc < 0) {
		free(*objs);
		*objs = NULL;
		*nobjs = 0;
	}
	return rc;
}

struct sync_ctx {
	struct sched_code_state *c;
	unsigned char dirs[256]; /* prefixes whose directory needs a sync */
	int rc;
};

static int sync_cb(const char *key, void *value, void *arg)
{
	struct sync_ctx *x = arg;
	struct rt_buf p = { 0 };
	int fd;

	(void)value;
	object_path(x->c, key, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && fsync(fd) < 0)
		x->rc = -EIO;
	if (fd >= 0)
		close(fd);
	x->dirs[strtoul((char[3]){ key[0], key[1], 0 }, NULL, 16) & 255] = 1;
	rt_buf_free(&p);
	return 0;
}

static void sync_dir(const char *path, int *rc)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && fsync(fd) < 0)
		*rc = -EIO;
	if (fd >= 0)
		close(fd);
}

/* fsyncs the objects written since the last revision, and their
 * directories. Returns 0 or -EIO. */
static int sync_objects(struct sched_code_state *c)
{
	struct sync_ctx x = { c, { 0 }, 0 };
	struct rt_buf p = { 0 };
	int i;

	if (c->unsynced.count == 0)
		return 0;
	rt_map_each(&c->unsynced, sync_cb, &x);
	for (i = 0; i < 256; i++)
		if (x.dirs[i]) {
			rt_buf_reset(&p);
			rt_buf_printf(&p, "%s/%02x", c->objects, i);
			if (p.data != NULL)
				sync_dir(p.data, &x.rc);
		}
	sync_dir(c->objects, &x.rc);
	rt_buf_free(&p);
	if (x.rc == 0) {
		rt_map_free(&c->unsynced);
		memset(&c->unsynced, 0, sizeof(c->unsynced));
	}
	return x.rc;
}

/* Stores revision `hash` of `fn`'s code and the function's new revision
 * in one durable transaction. */
static int store_revision(struct sched *s, struct code_fn *f, const char *hash,
			  uint64_t bytes, int files)
{
	struct sched_function *fn = f->fn;
	const struct sched_obj *ns = fn->obj.parent, *t = ns->parent;
	struct rt_buf dump = { 0 };
	struct store_row r;
	struct store_code_revision cr;
	int rc = sched_spec_dump(&fn->spec, &dump);

	memset(&r, 0, sizeof(r));
	r.kind = STORE_FUNCTION;
	r.tenant = t->name;
	r.ns = ns->name;
	r.name = fn->obj.name;
	r.created_ms = fn->obj.created_ms;
	r.updated_ms = rt_now_ms();
	r.spec = dump.data;
	r.revision = fn->revision + 1;
	r.run_revision = r.revision;
	if (rc == 0)
		rc = store_begin(s->store);
	if (rc < 0)
		goto out;
	cr.tenant = r.tenant;
	cr.ns = r.ns;
	cr.fn = r.name;
	cr.hash = hash;
	cr.bytes = bytes;
	cr.files = files;
	rc = hash[0] ? store_code_revision_put(s->store, &cr)
		     : store_code_revision_delete(s->store, r.tenant, r.ns,
						  r.name);
	if (rc == 0)
		rc = store_function_code(s->store, &r);
	if (rc == 0)
		rc = store_commit(s->store);
	else
		store_rollback(s->store);
out:
	rt_buf_free(&dump);
	return rc;
}

/* Tells every online worker with an instance of `fn` to download
 * revision `hash` of its code now (code.prefetch), before the instance is
 * replaced: a rolling deploy replaces the instances one at a time, and
 * without it each worker's download would wait for the replacements
 * before it. The downloads then go side by side, and each replacement
 * finds its code unpacked. Best effort: a start fetches what a prefetch
 * did not. */
void sched__code_prefetch(struct sched *s, struct sched_function *fn,
			  const char *hash, uint64_t bytes)
{
	struct sched_collect col = sched__instances_of(fn);
	struct sched_worker **sent = calloc((size_t)col.n + 1, sizeof(*sent));
	int i, j, nsent = 0;

	for (i = 0; sent != NULL && i < col.n; i++) {
		struct sched_worker *w = col.v[i]->worker;

		if (w == NULL || !w->online || !col.v[i]->desired_run)
			continue;
		for (j = 0; j < nsent && sent[j] != w; j++)
			;
		if (j < nsent)
			continue;
		sent[nsent++] = w;
		sched__send(s, w,
			    json_pack("{s:s, s:s, s:I}", "type",
				      "code.prefetch", "hash", hash, "bytes",
				      (json_int_t)bytes));
	}
	free(sent);
	free(col.v);
}

/* Makes the tree of `f` as closed now its revision of code, unless it
 * is that already. Returns 0 or -errno (it is tried again later). */
static int make_revision(struct sched *s, struct code_fn *f)
{
	struct rt_buf text = { 0 };
	char hash[65], (*objs)[65] = NULL;
	size_t nobjs = 0;
	uint64_t bytes = 0;
	int files = 0, rc;

	f->dirty = 0;
	rc = sched__code_manifest_of(f, &text, hash, &objs, &nobjs, &bytes,
				     &files);
	if (rc == 0 && strcmp(hash, f->pub) != 0)
		rc = be_of(s)->publish(s, f, hash, &text, &objs, nobjs, bytes,
				       files);
	if (rc < 0) {
		f->dirty = 1; /* again at the next turn */
		f->last_mono = rt_mono_ms();
		rt_log(RT_LOG_ERROR, "code: %s: no new revision: %s",
		       f->fn->obj.name, strerror(-rc));
	}
	free(objs);
	rt_buf_free(&text);
	return rc;
}

/* The local backend's publish: the manifest and the objects synced, then
 * the revision in one durable transaction, the model, the journal, the
 * workers' prefetch and reconciling. */
int sched__code_local_publish(struct sched *s, struct code_fn *f,
			      const char *hash, const struct rt_buf *text,
			      char (**objs)[65], size_t nobjs, uint64_t bytes,
			      int files)
{
	struct sched_code_state *c = st_of(s);
	struct sched_function *fn = f->fn;
	struct rt_buf kvs = { 0 };
	char rev[32];
	size_t i;
	int rc = 0;

	if (hash[0])
		rc = sched__code_object_put(c, hash, -1, text->data, text->len);
	if (rc == 0 && hash[0]) /* what an empty file's download reads */
		rc = sched__code_object_put(c, c->empty, -1, NULL, 0);
	if (rc == 0)
		rc = sync_objects(c);
	if (rc == 0)
		rc = store_revision(s, f, hash, bytes, files);
	if (rc < 0)
		return rc;
	for (i = 0; i < nobjs; i++)
		sched__code_ref_add(c, (*objs)[i]);
	for (i = 0; i < f->npub; i++)
		sched__code_ref_drop(c, f->pub_objs[i]);
	free(f->pub_objs);
	f->pub_objs = *objs;
	f->npub = nobjs;
	*objs = NULL;
	memcpy(f->pub, hash, 65);
	f->pub_bytes = bytes;
	f->pub_files = files;
	fn->revision++;
	fn->run_revision = fn->revision;
	fn->obj.updated_ms = rt_now_ms();
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)fn->revision);
	rt_buf_kv(&kvs, "revision", rev);
	rt_buf_kv(&kvs, "changed", "code");
	rt_buf_kv(&kvs, "code", hash[0] ? hash : "none");
	snprintf(rev, sizeof(rev), "%d", files);
	rt_buf_kv(&kvs, "files", rev);
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)bytes);
	rt_buf_kv(&kvs, "bytes", rev);
	sched__event(s, &fn->obj, "function.updated", kvs.data);
	if (hash[0])
		sched__code_prefetch(s, fn, hash, bytes);
	s->hooks.reconcile(s, fn);
	rt_buf_free(&kvs);
	return 0;
}

/* ============================================================== timers */

static int any_dirty(struct sched_code_state *c)
{
	void **v;
	size_t i, n;
	int dirty = 0;

	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n && !dirty; i++)
		dirty = ((struct code_fn *)v[i])->dirty;
	free(v);
	return dirty;
}

/* Unlinks object `h` if nothing references it. */
static void collect(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };

	if (refs_of(c, h) > 0)
		return;
	object_path(c, h, &p);
	if (p.data != NULL && unlink(p.data) < 0 && errno != ENOENT)
		rt_log(RT_LOG_WARN, "code: unlink %s: %s", p.data,
		       strerror(errno));
	rt_map_del(&c->unsynced, h);
	rt_buf_free(&p);
}

/* One directory of objects/ at a time: what nothing references (left by
 * a crash between a write and its record) goes. */
static void sweep_step(struct sched_code_state *c)
{
	struct rt_buf p = { 0 };
	struct dirent *e;
	char h[65];
	DIR *d;

	rt_buf_printf(&p, "%s/%02x", c->objects, c->sweep++);
	d = p.data ? opendir(p.data) : NULL;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strlen(e->d_name) != RT_CODE_HASH_LEN - 2)
			continue;
		snprintf(h, sizeof(h), "%02x%s", c->sweep - 1, e->d_name);
		if (rt_code_hash_valid(h))
			collect(c, h);
	}
	if (d != NULL)
		closedir(d);
	rt_buf_free(&p);
}

void sched__code_on_timer(uv_timer_t *t)
{
	struct sched *s = t->data;
	struct sched_code_state *c = st_of(s);
	int64_t now = rt_mono_ms(), next = -1, due;
	void **v;
	size_t i, n;

	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++) {
		struct code_fn *f = v[i];

		if (!f->dirty)
			continue;
		due = f->last_mono + SCHED_CODE_QUIET_MS;
		/* Files still open: their close is the change to wait for,
		 * within bounds. */
		if (now >= due && f->writers > 0 &&
		    now < f->first_mono + SCHED_CODE_QUIET_MAX_MS)
			due = now + SCHED_CODE_QUIET_MS;
		if (now >= due)
			make_revision(s, f);
		if (f->dirty && (next < 0 || due - now < next))
			next = due > now ? due - now : SCHED_CODE_QUIET_MS;
	}
	free(v);
	/* Objects go only once every change is in a durable revision, and
	 * only while every reference is counted. */
	if (c->refs_lost) {
		c->ngarbage = 0;
	} else if (!any_dirty(c)) {
		for (i = 0; i < GARBAGE_PER_TURN && c->ngarbage > 0; i++)
			collect(c, c->garbage[--c->ngarbage]);
		if (c->ngarbage > 0)
			next = next < 0 || next > 10 ? 10 : next;
		if (c->sweep < 256) {
			sweep_step(c);
			next = next < 0 || next > 20 ? 20 : next;
		}
	} else if (c->ngarbage > 0 || c->sweep < 256) {
		next = next < 0 || next > SCHED_CODE_QUIET_MS
			       ? SCHED_CODE_QUIET_MS
			       : next;
	}
	if (next >= 0)
		uv_timer_start(&c->timer, sched__code_on_timer, (uint64_t)next,
			       0);
}

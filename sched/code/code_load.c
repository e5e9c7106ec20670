/*
 * code_load.c - the life of the code module (code.h's sched__ part):
 * loading the trees and revisions from the store at open, start, stop,
 * close, and a function's code dropped or added to its spec. Part of the
 * code module (code.c says how it is cut).
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"
#include "../model/quota.h"

/* ============================================================= loading */

/* The node at `path` of `f`'s tree, or NULL. */
struct sched_code_node *sched__code_node_at(struct code_fn *f, const char *path)
{
	struct sched_code_node *n = f->root;
	char *copy = strdup(path), *tok, *save = NULL;

	for (tok = copy ? strtok_r(copy, "/", &save) : NULL;
	     tok != NULL && n != NULL; tok = strtok_r(NULL, "/", &save))
		n = sched_code_child(n, tok);
	free(copy);
	return copy != NULL ? n : NULL;
}

/* The function tenant/ns/name, or NULL. */
struct sched_function *sched__code_fn_named(struct sched *s, const char *t,
					    const char *ns, const char *name)
{
	struct sched_obj *o = sched_child(&s->root, t);

	o = o ? sched_child(o, ns) : NULL;
	o = o ? sched_child(o, name) : NULL;
	return o != NULL && o->type == SCHED_FUNCTION
		       ? (struct sched_function *)o
		       : NULL;
}

/* One entry of a function's code/. */
int sched__code_load_file(const struct store_code_file *r, void *arg)
{
	struct sched *s = arg;
	struct sched_function *fn = sched__code_fn_named(s, r->tenant, r->ns,
							 r->fn);
	const char *path = r->path, *slash = strrchr(path, '/');
	uint32_t mode = r->mode;
	struct sched_code_node *dir, *n;
	struct code_fn *f;
	char *up;

	if (fn == NULL || !rt_code_path_valid(path) ||
	    (!S_ISDIR(mode) && !S_ISREG(mode)) ||
	    (S_ISREG(mode) && !rt_code_hash_valid(r->hash))) {
		rt_log(RT_LOG_WARN, "code: %s/%s/%s: bad row %s; skipped",
		       r->tenant, r->ns, r->fn, path);
		return 0;
	}
	f = sched__code_cfn_make(s, fn);
	if (f == NULL)
		return -ENOMEM;
	up = slash ? strndup(path, (size_t)(slash - path)) : strdup("");
	if (up == NULL)
		return -ENOMEM;
	dir = *up ? sched__code_node_at(f, up) : f->root;
	free(up);
	if (dir == NULL || !is_dir(dir)) {
		rt_log(RT_LOG_WARN, "code: %s: no directory for %s; skipped",
		       fn->obj.name, path);
		return 0;
	}
	n = sched__code_node_new(s, fn, dir, slash ? slash + 1 : path, mode);
	if (n == NULL)
		return -ENOMEM;
	n->size = r->size;
	n->stored_size = r->size;
	n->mtime_ms = r->mtime_ms;
	if (!is_dir(n)) {
		snprintf(n->hash, sizeof(n->hash), "%s", r->hash);
		sched__code_ref_add(st_of(s), n->hash);
		f->bytes += n->size;
		sched__code_bytes_sync(f);
	}
	f->entries++;
	return 0;
}

int sched__code_pub_obj_cb(const struct rt_code_entry *e, void *arg)
{
	struct code_fn *f = arg;

	if (!e->dir)
		memcpy(f->pub_objs[f->npub++], e->hash, 65);
	return 0;
}

/* A function's revision of code, and what it references. */
static int load_revision(const struct store_code_revision *r, void *arg)
{
	struct sched *s = arg;
	struct sched_function *fn = sched__code_fn_named(s, r->tenant, r->ns,
							 r->fn);
	struct code_fn *f;

	if (fn == NULL || !rt_code_hash_valid(r->hash) || r->files < 0)
		return 0;
	f = sched__code_cfn_make(s, fn);
	if (f == NULL)
		return -ENOMEM;
	snprintf(f->pub, sizeof(f->pub), "%s", r->hash);
	f->pub_bytes = r->bytes;
	f->pub_files = r->files;
	f->pub_objs = calloc((size_t)f->pub_files + 1, sizeof(*f->pub_objs));
	if (f->pub_objs == NULL)
		return -ENOMEM;
	memcpy(f->pub_objs[f->npub++], f->pub, 65);
	be_of(s)->revision_loaded(s, f);
	return 0;
}

/* Whether the tree of `f` differs from its revision: a change whose
 * revision a crash prevented. */
static void check_dirty(struct code_fn *f)
{
	struct rt_buf text = { 0 };
	char hash[65], (*objs)[65] = NULL;
	size_t nobjs;
	uint64_t bytes;
	int files;

	if (sched__code_manifest_of(f, &text, hash, &objs, &nobjs, &bytes,
				    &files) < 0 ||
	    strcmp(hash, f->pub) != 0) {
		f->dirty = 1;
		f->first_mono = f->last_mono = rt_mono_ms();
	}
	free(objs);
	rt_buf_free(&text);
}

/* Empties DATA/code/tmp: staging of a former run. */
static void clear_tmp(const char *dir)
{
	struct rt_buf p = { 0 };
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		rt_buf_reset(&p);
		rt_buf_printf(&p, "%s/%s", dir, e->d_name);
		if (p.data != NULL)
			unlink(p.data);
	}
	if (d != NULL)
		closedir(d);
	rt_buf_free(&p);
}

/* Every operation of backend `be` is set (struct sched_code_backend). */
static const struct sched_code_backend *
backend_complete(const struct sched_code_backend *be)
{
	assert(be->open != NULL && be->close != NULL &&
	       be->revision_loaded != NULL);
	assert(be->create != NULL && be->remove != NULL && be->rename != NULL &&
	       be->put != NULL && be->commit != NULL && be->unstored != NULL &&
	       be->publish != NULL);
	assert(be->fetch != NULL && be->obj_ready != NULL &&
	       be->obj_known != NULL && be->pub_objects != NULL);
	return be;
}

int sched__code_open(struct sched *s, const struct sched_code_backend *be)
{
	struct sched_code_state *c = calloc(1, sizeof(*c));
	struct rt_buf p = { 0 };
	void **v;
	size_t i, n;
	int rc = -ENOMEM;

	if (c == NULL)
		return -ENOMEM;
	s->code = c;
	rt_buf_printf(&p, "%s/code", s->datadir);
	c->root = p.data ? strdup(p.data) : NULL;
	rt_buf_printf(&p, "/objects");
	c->objects = p.data ? strdup(p.data) : NULL;
	p.len -= strlen("/objects");
	rt_buf_printf(&p, "/tmp");
	c->tmp = p.data ? strdup(p.data) : NULL;
	rt_buf_free(&p);
	if (c->root == NULL || c->objects == NULL || c->tmp == NULL)
		return -ENOMEM;
	c->be = backend_complete(be);
	clear_tmp(c->tmp);
	rc = rt_sha256_hex("", 0, c->empty);
	if (rc < 0)
		return rc;
	sched__code_ref_add(c, c->empty); /* kept: every empty file's */
	rc = store_code_file_load(s->store, sched__code_load_file, s);
	if (rc == 0)
		rc = store_code_revision_load(s->store, load_revision, s);
	if (rc < 0)
		return rc;
	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++)
		check_dirty(v[i]);
	free(v);
	c->be->open(s);
	return 0;
}

void sched__code_start(struct sched *s)
{
	struct sched_code_state *c = st_of(s);

	uv_timer_init(s->loop, &c->timer);
	c->timer.data = s;
	uv_timer_init(s->loop, &c->pump);
	c->pump.data = s;
	c->started = 1;
	uv_timer_start(&c->timer, sched__code_on_timer, 0, 0);
}

void sched__code_stop(struct sched *s)
{
	struct sched_code_state *c = st_of(s);

	if (c == NULL || !c->started)
		return;
	c->started = 0;
	uv_timer_stop(&c->timer);
	uv_timer_stop(&c->pump);
	uv_close((uv_handle_t *)&c->timer, NULL);
	uv_close((uv_handle_t *)&c->pump, NULL);
}

void sched__code_out_free(struct code_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o->items);
	free(o);
}

static void cfn_free(struct sched *s, struct code_fn *f)
{
	size_t i;

	sched__code_node_free(s, f->root);
	for (i = 0; i < f->npub; i++)
		sched__code_ref_drop(st_of(s), f->pub_objs[i]);
	free(f->pub_objs);
	free(f);
}

void sched__code_close(struct sched *s)
{
	struct sched_code_state *c = st_of(s);
	void **v;
	size_t i, n;

	if (c == NULL)
		return;
	if (c->be != NULL)
		c->be->close(s);
	v = rt_idmap_values(&c->fns, &n);
	for (i = 0; v != NULL && i < n; i++)
		cfn_free(s, v[i]);
	free(v);
	v = rt_idmap_values(&c->outs, &n);
	for (i = 0; v != NULL && i < n; i++)
		sched__code_out_free(v[i]);
	free(v);
	rt_idmap_free(&c->fns);
	rt_idmap_free(&c->nodes);
	rt_idmap_free(&c->outs);
	rt_map_free(&c->refs);
	rt_map_free(&c->unsynced);
	free(c->garbage);
	free(c->root);
	free(c->objects);
	free(c->tmp);
	free(c);
	s->code = NULL;
}

int sched__code_unstore(struct sched *s, struct sched_function *fn)
{
	const char *k[3];
	int rc;

	fn_key(fn, k);
	rc = store_code_files_delete(s->store, k[0], k[1], k[2]);
	if (rc == 0)
		rc = store_code_revision_delete(s->store, k[0], k[1], k[2]);
	return rc;
}

void sched__code_drop(struct sched *s, struct sched_function *fn)
{
	struct code_fn *f = cfn_get(s, fn);

	if (f == NULL)
		return;
	rt_idmap_del(&st_of(s)->fns, fn->obj.id);
	sched__quota_code_add(fn, -(int64_t)f->counted);
	cfn_free(s, f);
	if (st_of(s)->started)
		uv_timer_start(&st_of(s)->timer, sched__code_on_timer, 0, 0);
}

void sched__code_add_spec(struct sched *s, const struct sched_function *fn,
			  json_t *spec)
{
	struct code_fn *f = cfn_get(s, fn);

	if (f == NULL || f->pub[0] == '\0' || spec == NULL)
		return;
	json_object_set_new(spec, "code",
			    json_pack("{s:s, s:I, s:i}", "hash", f->pub,
				      "bytes", (json_int_t)f->pub_bytes,
				      "files", f->pub_files));
}

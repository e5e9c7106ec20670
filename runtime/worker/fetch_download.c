/*
 * fetch_download.c - the download of one hash's code (fetch.c): code.want
 * for the manifest, code.get for the objects this worker lacks, and the
 * code.chunk messages that bring them, checked and assembled in order
 * into a temporary file and verified against their SHA-256 before they
 * join the cache's objects.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch_int.h"
#include "worker.h"

/* ============================================================= download */

void rt__fetch_send_want(struct rt_worker *w, struct tree *t)
{
	t->last_mono = rt_mono_ms();
	rt_worker_send(
		w,
		json_pack("{s:s, s:s}", "type", "code.want", "hash", t->hash),
		NULL, 0);
}

/* Collects the distinct file objects of a manifest. */
struct need_ctx {
	struct tree *t;
	struct rt_map seen;
};

static int need_cb(const struct rt_code_entry *e, void *arg)
{
	struct need_ctx *x = arg;
	struct tree *t = x->t;

	if (e->dir || rt_map_get(&x->seen, e->hash) != NULL)
		return 0;
	if (rt_map_put(&x->seen, e->hash, (void *)1) < 0)
		return -ENOMEM;
	t->modes[t->nobjs] = (uint16_t)rt__fetch_file_mode(e->perm);
	memcpy(t->objs[t->nobjs++], e->hash, 65);
	return 0;
}

static int count_cb(const struct rt_code_entry *e, void *arg)
{
	(void)e;
	++*(size_t *)arg;
	return 0;
}

/* The manifest arrived: what it references is counted, what is missing
 * asked for. */
static int got_manifest(struct rt_worker *w, struct tree *t)
{
	struct cache *c = cache_of(w);
	struct rt_buf why = { 0 }, p = { 0 };
	size_t n = 0, i, k;
	json_t *batch = NULL;
	int rc;

	rc = rt_code_manifest_parse(t->man.data ? t->man.data : "", t->man.len,
				    FILES_MAX, count_cb, &n, &why);
	if (rc == 0 &&
	    ((t->objs = calloc(n + 1, sizeof(*t->objs))) == NULL ||
	     (t->need = calloc(n + 1, sizeof(*t->need))) == NULL ||
	     (t->modes = calloc(2 * (n + 1), sizeof(*t->modes))) == NULL))
		rc = -ENOMEM;
	if (rc == 0) {
		struct need_ctx x = { t, { 0 } };

		rc = rt_code_manifest_parse(t->man.data, t->man.len, FILES_MAX,
					    need_cb, &x, &why);
		rt_map_free(&x.seen);
	}
	if (rc < 0) {
		snprintf(t->why, sizeof(t->why), "code: bad manifest: %s",
			 why.data ? why.data : strerror(-rc));
		rt_buf_free(&why);
		return rc;
	}
	t->have_man = 1;
	t->need_modes = t->modes + n + 1;
	for (i = 0; i < t->nobjs; i++) {
		path_of(&p, c->objects, t->objs[i]);
		if (p.data == NULL || access(p.data, F_OK) < 0) {
			t->need_modes[t->nneed] = t->modes[i];
			memcpy(t->need[t->nneed++], t->objs[i], 65);
		}
		rt__fetch_ref_add(c, t->objs[i]);
	}
	rt_buf_free(&p);
	for (i = 0; i < t->nneed; i += GET_BATCH) {
		batch = json_array();
		for (k = i; k < t->nneed && k < i + GET_BATCH; k++)
			json_array_append_new(batch, json_string(t->need[k]));
		rt_worker_send(w,
			       json_pack("{s:s, s:s, s:o}", "type", "code.get",
					 "hash", t->hash, "objects", batch),
			       NULL, 0);
	}
	return 0;
}

/* Everything `t` needs is here: it is unpacked. */
static void fetched(struct rt_worker *w, struct tree *t)
{
	assert(t->state == FETCHING && t->got == t->nneed && !t->receiving);
	if (t->waits == NULL && t->users == 0 && !t->prefetched) {
		t->state = FAILED; /* nobody wants it any more */
		rt__fetch_tree_tidy(w, t);
		return;
	}
	rt__fetch_tree_build(w, t);
}

/* Begins receiving an object in `t`: the manifest into memory, another
 * into a temporary file. */
static int begin_object(struct rt_worker *w, struct tree *t, const char *object,
			uint64_t size, struct rt_buf *why)
{
	struct cache *c = cache_of(w);
	int manifest = !t->have_man;
	struct rt_buf p = { 0 };
	int rc;

	if (manifest ? strcmp(object, t->hash) != 0
		     : t->got >= t->nneed ||
			       strcmp(object, t->need[t->got]) != 0) {
		rt_buf_printf(why, "code: object %.12s was not asked for now",
			      object);
		return -EPROTO;
	}
	t->fd = -1;
	if (!manifest) {
		rt_buf_printf(&p, "%s/part-%" PRIu64, c->tmp, ++c->seq);
		t->fd = p.data ? open(p.data,
				      O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
				      0600)
			       : -1;
		if (t->fd < 0) {
			rt_buf_printf(why, "code: cannot write %s: %s", c->tmp,
				      strerror(errno));
			rt_buf_free(&p);
			return -EIO;
		}
		free(t->part);
		t->part = p.data;
	}
	rc = rt_code_asm_begin(&t->a, object, size,
			       manifest ? RT_CODE_OBJECT_MAX
					: (t->bytes < RT_CODE_OBJECT_MAX
						   ? t->bytes
						   : RT_CODE_OBJECT_MAX),
			       t->fd, why);
	if (rc == 0)
		t->receiving = 1;
	return rc;
}

/* An object of `t` arrived whole and verified. */
static int end_object(struct rt_worker *w, struct tree *t, struct rt_buf *why)
{
	struct cache *c = cache_of(w);
	struct rt_buf p = { 0 };
	int rc = 0;

	rt_code_asm_free(&t->a);
	t->receiving = 0;
	if (!t->have_man) {
		rc = got_manifest(w, t);
		if (rc < 0)
			rt_buf_puts(why, t->why);
		return rc;
	}
	/* The objects arrive in the order they were asked for, one at a
	 * time: this one is need[got], and its file is open. */
	assert(t->got < t->nneed && t->fd >= 0 && t->part != NULL);
	path_of(&p, c->objects, t->need[t->got]);
	/* The mode a tree gives its file: linked into the tree as it is. */
	if (p.data == NULL || fchmod(t->fd, t->need_modes[t->got]) < 0 ||
	    rename(t->part, p.data) < 0) {
		rt_buf_printf(why, "code: cannot keep object %.12s: %s",
			      t->need[t->got], strerror(errno));
		rc = -EIO;
	}
	close(t->fd);
	t->fd = -1;
	free(t->part);
	t->part = NULL;
	rt_buf_free(&p);
	t->got++;
	return rc;
}

/* A code.chunk message. */
void rt__fetch_on_chunk(struct rt_worker *w, struct tree *t,
			const struct rt_msg *m)
{
	const char *object = rt_msg_str(m, "object");
	long long off = rt_msg_int(m, "offset", -1),
		  size = rt_msg_int(m, "size", -1);
	int last = json_is_true(json_object_get(m->header, "last"));
	struct rt_buf why = { 0 };
	int rc = 0;

	t->last_mono = rt_mono_ms();
	if (object == NULL || off < 0 || size < 0) {
		rt_buf_puts(&why, "code: a malformed chunk");
		rc = -EPROTO;
	}
	if (rc == 0 && !t->receiving)
		rc = begin_object(w, t, object, (uint64_t)size, &why);
	if (rc == 0)
		rc = rt_code_asm_feed(&t->a, object, (uint64_t)off,
				      (uint64_t)size, m->body ? m->body : "",
				      m->body_len, last, &why);
	if (rc >= 0 && !t->have_man &&
	    rt_buf_append(&t->man, m->body ? m->body : "", m->body_len) < 0)
		rc = -ENOMEM;
	if (rc == 1)
		rc = end_object(w, t, &why);
	if (rc < 0)
		rt__fetch_tree_fail(w, t, -rc == EBADMSG ? EIO : -rc,
				    why.data ? why.data
					     : "code: download failed");
	else if (t->have_man && t->got == t->nneed && !t->receiving &&
		 t->state == FETCHING)
		fetched(w, t);
	rt_buf_free(&why);
}

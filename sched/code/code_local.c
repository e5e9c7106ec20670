/*
 * code_local.c - the code module's backend on a controller alone
 * (struct sched_code_backend, code_internal.h): its tree's rows are in
 * the store's SQLite, every object it names is in DATA/code/objects, and
 * every change ends at once. Its changes of the tree are in
 * code_nodes.c, its commit in code_contents.c, its revisions in
 * code_revisions.c; what is left of its differences is here. A cluster's
 * backend is sched/cluster/code/. Part of the code module (code.c says
 * how it is cut).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"

/* Nothing to follow: the tree changes only here. */
static void local_open(struct sched *s)
{
	assert(be_of(s) == &sched_code_local);
}

static void local_close(struct sched *s)
{
	(void)s;
}

/* Every object of the revision is here: the manifest names them. */
static void local_revision_loaded(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	struct rt_buf p = { 0 }, text = { 0 }, why = { 0 };
	char buf[65536];
	ssize_t got;
	size_t i;
	int fd;

	object_path(c, f->pub, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		rt_buf_append(&text, buf, (size_t)got);
	if (fd < 0 ||
	    rt_code_manifest_parse(text.data ? text.data : "", text.len,
				   f->pub_files, sched__code_pub_obj_cb, f,
				   &why) < 0) {
		rt_log(RT_LOG_ERROR, "code: %s: revision %.12s unreadable: %s",
		       f->fn->obj.name, f->pub,
		       why.data ? why.data : "missing");
		f->npub = 1;
	}
	for (i = 0; i < f->npub; i++)
		sched__code_ref_add(c, f->pub_objs[i]);
	if (fd >= 0)
		close(fd);
	rt_buf_free(&p);
	rt_buf_free(&text);
	rt_buf_free(&why);
}

/* Not stored: the size is the stored object's again. */
static void local_unstored(struct sched *s, struct code_fn *f,
			   struct sched_code_node *n)
{
	struct stat sb;
	int fd = sched__code_object_open(st_of(s), n->hash);

	if (fd >= 0 && fstat(fd, &sb) == 0 && f != NULL) {
		f->bytes = f->bytes - n->size + (uint64_t)sb.st_size;
		sched__code_bytes_sync(f);
		n->size = (uint64_t)sb.st_size;
	}
	if (fd >= 0)
		close(fd);
}

/* Every file's object is here. */
static int local_fetch(struct sched *s, struct sched_code_node *n,
		       sched_code_done_fn done, void *arg)
{
	(void)s;
	(void)n;
	(void)done;
	(void)arg;
	return 0;
}

/* An object nothing references any more may be collected at any time. */
static int local_obj_ready(struct sched *s, const char *h, obj_fn fn, void *arg,
			   const char **why)
{
	(void)fn;
	(void)arg;
	if (refs_of(st_of(s), h) > 0)
		return 0;
	*why = "the object is gone (the code changed since)";
	return -ENOENT;
}

/* What nothing references is gone, or about to be. */
static int local_obj_known(struct sched *s, const char *h)
{
	(void)s;
	(void)h;
	return 0;
}

/* pub_objs names them all since the revision was made or loaded. */
static void local_pub_objects(struct sched *s, struct code_fn *f)
{
	(void)s;
	(void)f;
}

const struct sched_code_backend sched_code_local = {
	.name = "local",
	.open = local_open,
	.close = local_close,
	.revision_loaded = local_revision_loaded,
	.create = sched__code_local_create,
	.remove = sched__code_local_remove,
	.rename = sched__code_local_rename,
	.put = sched__code_local_put,
	.commit = sched__code_local_commit,
	.unstored = local_unstored,
	.publish = sched__code_local_publish,
	.fetch = local_fetch,
	.obj_ready = local_obj_ready,
	.obj_known = local_obj_known,
	.pub_objects = local_pub_objects,
};

/*
 * code_cluster.c - the code module's backend on a cluster's controller
 * (struct sched_code_backend, sched/code/code_internal.h): the tree and
 * the objects are the shared store's (etcd), a change is sent there and
 * comes back through the watch, and objects this controller lacks are
 * fetched when a read or a worker needs them. Its changes of the tree
 * are in code_cluster_tree.c (sent by code_cluster_submit.c), its
 * objects in code_cluster_objects.c; its table and what is left of its
 * differences are here. The local backend is sched/code/code_local.c.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../runtime/base/code.h"
#include "code_cluster.h"

/* The tree follows the store's changes of code/ from here on. */
static void cluster_open(struct sched *s)
{
	assert(be_of(s) == &sched_code_cluster);
	store_code_listen(s->store, sched__code_on_remote, s);
}

/* No more changes; transfers under way end alone. */
static void cluster_close(struct sched *s)
{
	struct sched_code_state *c = st_of(s);

	store_code_listen(s->store, NULL, NULL);
	rt_map_each(&c->gets, sched__code_orphan_xfer, NULL);
	rt_map_each(&c->puts, sched__code_orphan_xfer, NULL);
	rt_map_free(&c->gets);
	rt_map_free(&c->puts);
}

/* Its objects are fetched as workers ask for them: only the manifest is
 * referenced. */
static void cluster_revision_loaded(struct sched *s, struct code_fn *f)
{
	sched__code_ref_add(st_of(s), f->pub);
}

/* Not stored: the size is the stored entry's again. */
static void cluster_unstored(struct sched *s, struct code_fn *f,
			     struct sched_code_node *n)
{
	(void)s;
	f->bytes = f->bytes - n->size + n->stored_size;
	sched__code_bytes_sync(f);
	n->size = n->stored_size;
}

/* What this controller lacks comes from etcd first. */
static int cluster_obj_ready(struct sched *s, const char *h, obj_fn fn,
			     void *arg, const char **why)
{
	int rc = sched__code_obj_fetch(s, h, fn, arg);

	if (rc < 0)
		*why = "the object is not in etcd";
	return rc;
}

/* Whole in etcd: it can be fetched. */
static int cluster_obj_known(struct sched *s, const char *h)
{
	uint64_t size;

	return store_object_known(s->store, h, &size) == 1;
}

/* A cluster keeps only the manifest in pub_objs: the objects it names
 * are read from it here (it is local once a worker downloaded it). */
static void cluster_pub_objects(struct sched *s, struct code_fn *f)
{
	struct sched_code_state *c = st_of(s);
	struct rt_buf p = { 0 }, text = { 0 }, why = { 0 };
	char(*objs)[65];
	char buf[65536];
	ssize_t got;
	int fd;

	if (f->npub > 1 || f->pub_files <= 0 || f->pub_objs == NULL)
		return;
	objs = realloc(f->pub_objs, ((size_t)f->pub_files + 1) * 65);
	if (objs == NULL)
		return;
	f->pub_objs = objs;
	object_path(c, f->pub, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		rt_buf_append(&text, buf, (size_t)got);
	if (fd >= 0 &&
	    rt_code_manifest_parse(text.data ? text.data : "", text.len,
				   f->pub_files, sched__code_pub_obj_cb, f,
				   &why) < 0)
		f->npub = 1;
	if (fd >= 0)
		close(fd);
	rt_buf_free(&p);
	rt_buf_free(&text);
	rt_buf_free(&why);
}

const struct sched_code_backend sched_code_cluster = {
	.name = "cluster",
	.open = cluster_open,
	.close = cluster_close,
	.revision_loaded = cluster_revision_loaded,
	.create = sched__code_cl_create,
	.remove = sched__code_cl_remove,
	.rename = sched__code_cl_rename,
	.put = sched__code_cl_put,
	.commit = sched__code_cl_commit,
	.unstored = cluster_unstored,
	.publish = sched__code_cl_publish,
	.fetch = sched__code_cl_fetch,
	.obj_ready = cluster_obj_ready,
	.obj_known = cluster_obj_known,
	.pub_objects = cluster_pub_objects,
};

/*
 * nodes.c - what the tree holds: the kinds of nodes, their names, modes,
 * times and content, resolved from the model on every request.
 */
#include <errno.h>
#include <string.h>

#include "fs.h"

/* The fixed entries of the tree: name, the directory kind they live in,
 * and their mode. Object directories (tenants, namespaces, functions) are
 * not here; they come from the model. */
static const struct {
	const char *name;
	enum fs_kind parent;
	mode_t mode;
} fixed[FS_KIND_COUNT] = {
	[FS_ROOT_DIR] = { "", FS_NONE, S_IFDIR | 0755 },
	[FS_README] = { "README", FS_ROOT_DIR, S_IFREG | 0444 },
	[FS_VERSION] = { "version", FS_ROOT_DIR, S_IFREG | 0444 },
	[FS_EVENTS] = { "events", FS_ROOT_DIR, S_IFREG | 0444 },
	[FS_TENANTS_DIR] = { "tenants", FS_ROOT_DIR, S_IFDIR | 0755 },
	[FS_TENANT_DIR] = { NULL, FS_TENANTS_DIR, S_IFDIR | 0755 },
	[FS_NS_DIR] = { NULL, FS_TENANT_DIR, S_IFDIR | 0755 },
	[FS_FN_DIR] = { NULL, FS_NS_DIR, S_IFDIR | 0755 },
};

static enum fs_kind kind_of_obj(const struct sched_obj *o)
{
	switch (o->type) {
	case SCHED_TENANT: return FS_TENANT_DIR;
	case SCHED_NAMESPACE: return FS_NS_DIR;
	case SCHED_FUNCTION: return FS_FN_DIR;
	default: return FS_ROOT_DIR;
	}
}

static const char *kind_name(enum fs_kind k)
{
	if (k >= FS_FN_ATTR)
		return sched_attr_name((enum sched_attr)(k - FS_FN_ATTR));
	return fixed[k].name;
}

static enum fs_kind kind_parent(enum fs_kind k)
{
	return k >= FS_FN_ATTR ? FS_FN_DIR : fixed[k].parent;
}

static mode_t kind_mode(enum fs_kind k)
{
	if (k >= FS_FN_ATTR)
		return S_IFREG |
		       (sched_attr_writable((enum sched_attr)(k - FS_FN_ATTR))
				? 0644
				: 0444);
	return fixed[k].mode;
}

fuse_ino_t fs_ino(uint64_t id, enum fs_kind kind)
{
	if (kind == FS_ROOT_DIR)
		return FUSE_ROOT_ID;
	return (fuse_ino_t)(id << 8 | (uint64_t)kind);
}

/* Whether `kind` belongs to an object of `type`. */
static int kind_fits(enum fs_kind kind, enum sched_obj_type type)
{
	switch (kind) {
	case FS_TENANT_DIR: return type == SCHED_TENANT;
	case FS_NS_DIR: return type == SCHED_NAMESPACE;
	case FS_NONE: return 0;
	default:
		if (kind == FS_FN_DIR || kind >= FS_FN_ATTR)
			return type == SCHED_FUNCTION;
		return type == SCHED_ROOT;
	}
}

int fs_resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *out)
{
	enum fs_kind kind = ino == FUSE_ROOT_ID ? FS_ROOT_DIR
						: (enum fs_kind)(ino & 0xff);
	uint64_t id = ino == FUSE_ROOT_ID ? SCHED_ROOT_ID : ino >> 8;
	struct sched_obj *o;

	if (kind >= FS_KIND_COUNT)
		return -ENOENT;
	o = sched_find(fs->sched, id);
	if (o == NULL || !kind_fits(kind, o->type))
		return -ENOENT;
	out->kind = kind;
	out->obj = o;
	return 0;
}

/* The object whose model children appear in directory `dir`, or NULL. */
static struct sched_obj *dir_objects(const struct fs_node *dir)
{
	switch (dir->kind) {
	case FS_TENANTS_DIR:
	case FS_TENANT_DIR:
	case FS_NS_DIR: return dir->obj;
	default: return NULL;
	}
}

int fs_child(struct fs *fs, const struct fs_node *dir, const char *name,
	     struct fs_node *out)
{
	struct sched_obj *parent, *o;
	int k;

	(void)fs;
	if (!S_ISDIR(kind_mode(dir->kind)))
		return -ENOTDIR;
	for (k = FS_README; k < FS_KIND_COUNT; k++) {
		const char *kn = kind_name((enum fs_kind)k);

		if (kind_parent((enum fs_kind)k) == dir->kind && kn &&
		    strcmp(kn, name) == 0) {
			out->kind = (enum fs_kind)k;
			out->obj = dir->obj;
			return 0;
		}
	}
	parent = dir_objects(dir);
	o = parent ? sched_child(parent, name) : NULL;
	if (o == NULL)
		return -ENOENT;
	out->kind = kind_of_obj(o);
	out->obj = o;
	return 0;
}

struct each_ctx {
	int (*fn)(const char *name, const struct fs_node *n, void *arg);
	void *arg;
};

static int each_obj(const char *key, void *value, void *arg)
{
	struct each_ctx *c = arg;
	struct sched_obj *o = value;
	struct fs_node n = { kind_of_obj(o), o };

	return c->fn(key, &n, c->arg);
}

int fs_children(struct fs *fs, const struct fs_node *dir,
		int (*fn)(const char *name, const struct fs_node *n, void *arg),
		void *arg)
{
	struct each_ctx c = { fn, arg };
	struct sched_obj *parent;
	int k, rc;

	(void)fs;
	for (k = FS_README; k < FS_KIND_COUNT; k++) {
		struct fs_node n = { (enum fs_kind)k, dir->obj };

		if (kind_parent((enum fs_kind)k) != dir->kind ||
		    kind_name((enum fs_kind)k) == NULL)
			continue;
		rc = fn(kind_name((enum fs_kind)k), &n, arg);
		if (rc != 0)
			return rc;
	}
	parent = dir_objects(dir);
	return parent ? rt_map_each(&parent->children, each_obj, &c) : 0;
}

mode_t fs_node_mode(const struct fs_node *n)
{
	return kind_mode(n->kind);
}

int fs_node_dynamic(const struct fs_node *n)
{
	return n->kind != FS_README && n->kind != FS_VERSION;
}

/* Subdirectories of a directory, for its link count. */
static unsigned subdirs(const struct fs_node *n)
{
	switch (n->kind) {
	case FS_ROOT_DIR: return 1; /* tenants */
	case FS_TENANTS_DIR:
	case FS_TENANT_DIR:
	case FS_NS_DIR: return (unsigned)n->obj->children.count;
	default: return 0;
	}
}

void fs_stat(struct fs *fs, const struct fs_node *n, struct stat *st)
{
	int64_t ms;
	struct rt_buf b = { 0 };

	memset(st, 0, sizeof(*st));
	st->st_ino = fs_ino(n->obj->id, n->kind);
	st->st_mode = kind_mode(n->kind);
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	if (S_ISDIR(st->st_mode)) {
		st->st_nlink = 2 + subdirs(n);
	} else {
		st->st_nlink = 1;
		if (n->kind == FS_EVENTS)
			st->st_size = (off_t)sched_events_end(fs->sched);
		else if (fs_render(fs, n, &b) == 0)
			st->st_size = (off_t)b.len;
	}
	if (n->kind == FS_EVENTS)
		ms = sched_events_mtime(fs->sched);
	else if (n->obj->type == SCHED_ROOT && n->kind != FS_TENANTS_DIR)
		ms = fs->mount_ms;
	else
		ms = n->obj->updated_ms;
	st->st_mtim.tv_sec = ms / 1000;
	st->st_mtim.tv_nsec = ms % 1000 * 1000000;
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	st->st_blocks = (st->st_size + 511) / 512;
	rt_buf_free(&b);
}

int fs_render(struct fs *fs, const struct fs_node *n, struct rt_buf *out)
{
	(void)fs;
	switch (n->kind) {
	case FS_README: return rt_buf_puts(out, fs_readme);
	case FS_VERSION: return rt_buf_puts(out, "fnfs " FNFS_VERSION "\n");
	default:
		if (n->kind >= FS_FN_ATTR)
			return sched_function_render(
				(struct sched_function *)n->obj,
				(enum sched_attr)(n->kind - FS_FN_ATTR), out);
		return -EISDIR;
	}
}

int fs_write(struct fs *fs, const struct fs_node *n, const char *buf,
	     size_t len)
{
	if (n->kind >= FS_FN_ATTR)
		return sched_function_write(
			fs->sched, (struct sched_function *)n->obj,
			(enum sched_attr)(n->kind - FS_FN_ATTR), buf, len);
	return -EACCES;
}

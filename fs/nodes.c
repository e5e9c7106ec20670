/*
 * nodes.c - what the tree holds: the kinds of nodes, their names, modes,
 * times and content, resolved from the model on every request.
 *
 * Over 600 lines because of the table of kinds (about 120 lines), which
 * every function here reads: one concern, not cut from the code that
 * interprets it.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs.h"

/* Flags of a kind. */
#define NODE_NOSIZE 1 /* content comes from workers: size shown as 0 */
#define NODE_STATIC 2 /* constant content the page cache may keep */
#define NODE_NOSTAT 4 /* costly to render: size shown as 0 */

/* The fixed entries of the tree: name, the directory kind they live in,
 * their mode, the type of object they belong to, and the sched file they
 * show. Object directories have no name here: they come from the model. */
static const struct {
	const char *name;
	enum fs_kind parent;
	mode_t mode;
	enum sched_obj_type type;
	int file; /* enum sched_file, or -1 */
	int flags;
} kinds[FS_FN_ATTR] = {
	[FS_ROOT_DIR] = { "", FS_NONE, S_IFDIR | 0755, SCHED_ROOT, -1, 0 },
	[FS_README] = { "README", FS_ROOT_DIR, S_IFREG | 0444, SCHED_ROOT, -1,
			NODE_STATIC },
	[FS_VERSION] = { "version", FS_ROOT_DIR, S_IFREG | 0444, SCHED_ROOT, -1,
			 NODE_STATIC },
	[FS_EVENTS] = { "events", FS_ROOT_DIR, S_IFREG | 0600, SCHED_ROOT, -1,
			0 },
	[FS_TENANTS_DIR] = { "tenants", FS_ROOT_DIR, S_IFDIR | 0755, SCHED_ROOT,
			     -1, 0 },
	[FS_TENANT_DIR] = { NULL, FS_TENANTS_DIR, S_IFDIR | 0755, SCHED_TENANT,
			    -1, 0 },
	[FS_NS_DIR] = { NULL, FS_TENANT_DIR, S_IFDIR | 0755, SCHED_NAMESPACE,
			-1, 0 },
	[FS_FN_DIR] = { NULL, FS_NS_DIR, S_IFDIR | 0755, SCHED_FUNCTION, -1,
			0 },
	[FS_FN_STATE] = { "state", FS_FN_DIR, S_IFREG | 0644, SCHED_FUNCTION,
			  SCHED_FN_STATE, 0 },
	[FS_FN_RESTART] = { "restart", FS_FN_DIR, S_IFREG | 0200,
			    SCHED_FUNCTION, SCHED_FN_RESTART, 0 },
	[FS_FN_STATUS] = { "status", FS_FN_DIR, S_IFREG | 0444, SCHED_FUNCTION,
			   SCHED_FN_STATUS, 0 },
	[FS_FN_LOG] = { "log", FS_FN_DIR, S_IFREG | 0444, SCHED_FUNCTION,
			SCHED_FN_LOG, NODE_NOSIZE },
	[FS_INSTANCES_DIR] = { "instances", FS_FN_DIR, S_IFDIR | 0755,
			       SCHED_FUNCTION, -1, 0 },
	[FS_INST_DIR] = { NULL, FS_INSTANCES_DIR, S_IFDIR | 0755,
			  SCHED_INSTANCE, -1, 0 },
	[FS_INST_STATE] = { "state", FS_INST_DIR, S_IFREG | 0644,
			    SCHED_INSTANCE, SCHED_INST_STATE, 0 },
	[FS_INST_RESTART] = { "restart", FS_INST_DIR, S_IFREG | 0200,
			      SCHED_INSTANCE, SCHED_INST_RESTART, 0 },
	[FS_INST_STATUS] = { "status", FS_INST_DIR, S_IFREG | 0444,
			     SCHED_INSTANCE, SCHED_INST_STATUS, 0 },
	[FS_INST_STATS] = { "stats", FS_INST_DIR, S_IFREG | 0444,
			    SCHED_INSTANCE, SCHED_INST_STATS, 0 },
	[FS_INST_PID] = { "pid", FS_INST_DIR, S_IFREG | 0444, SCHED_INSTANCE,
			  SCHED_INST_PID, 0 },
	[FS_INST_LOG] = { "log", FS_INST_DIR, S_IFREG | 0444, SCHED_INSTANCE,
			  SCHED_INST_LOG, NODE_NOSIZE },
	[FS_INST_WORKER] = { "worker", FS_INST_DIR, S_IFLNK | 0777,
			     SCHED_INSTANCE, -1, 0 },
	[FS_WORKERS_DIR] = { "workers", FS_ROOT_DIR, S_IFDIR | 0755, SCHED_POOL,
			     -1, 0 },
	[FS_POOL_SIZE] = { "pool_size", FS_WORKERS_DIR, S_IFREG | 0644,
			   SCHED_POOL, SCHED_POOL_SIZE, 0 },
	[FS_POOL_STRATEGY] = { "strategy", FS_WORKERS_DIR, S_IFREG | 0644,
			       SCHED_POOL, SCHED_POOL_STRATEGY, 0 },
	[FS_POOL_REBALANCE] = { "rebalance", FS_WORKERS_DIR, S_IFREG | 0200,
				SCHED_POOL, SCHED_POOL_REBALANCE, 0 },
	[FS_POOL_STATUS] = { "status", FS_WORKERS_DIR, S_IFREG | 0444,
			     SCHED_POOL, SCHED_POOL_STATUS, 0 },
	[FS_WORKER_DIR] = { NULL, FS_WORKERS_DIR, S_IFDIR | 0755, SCHED_WORKER,
			    -1, 0 },
	[FS_WORKER_STATE] = { "state", FS_WORKER_DIR, S_IFREG | 0644,
			      SCHED_WORKER, SCHED_WORKER_STATE, 0 },
	[FS_WORKER_MEMORY] = { "memory", FS_WORKER_DIR, S_IFREG | 0444,
			       SCHED_WORKER, SCHED_WORKER_MEMORY, 0 },
	[FS_WORKER_FREE] = { "free", FS_WORKER_DIR, S_IFREG | 0444,
			     SCHED_WORKER, SCHED_WORKER_FREE, 0 },
	[FS_WORKER_TAGS] = { "tags", FS_WORKER_DIR, S_IFREG | 0444,
			     SCHED_WORKER, SCHED_WORKER_TAGS, 0 },
	[FS_WORKER_NAMESPACES] = { "namespaces", FS_WORKER_DIR, S_IFREG | 0444,
				   SCHED_WORKER, SCHED_WORKER_NAMESPACES, 0 },
	[FS_WORKER_PID] = { "pid", FS_WORKER_DIR, S_IFREG | 0444, SCHED_WORKER,
			    SCHED_WORKER_PID, 0 },
	[FS_WORKER_STATUS] = { "status", FS_WORKER_DIR, S_IFREG | 0444,
			       SCHED_WORKER, SCHED_WORKER_STATUS, 0 },
	[FS_WORKER_STATS] = { "stats", FS_WORKER_DIR, S_IFREG | 0444,
			      SCHED_WORKER, SCHED_WORKER_STATS, 0 },
	[FS_ASSIGN_DIR] = { "assignments", FS_WORKER_DIR, S_IFDIR | 0755,
			    SCHED_WORKER, -1, 0 },
	[FS_ASSIGN_LINK] = { NULL, FS_ASSIGN_DIR, S_IFLNK | 0777,
			     SCHED_INSTANCE, -1, 0 },
	[FS_STATUS] = { "status", FS_ROOT_DIR, S_IFREG | 0444, SCHED_ROOT,
			SCHED_ROOT_STATUS, 0 },
	[FS_STATS] = { "stats", FS_ROOT_DIR, S_IFREG | 0444, SCHED_ROOT,
		       SCHED_ROOT_STATS, 0 },
	[FS_METRICS] = { "metrics", FS_ROOT_DIR, S_IFREG | 0444, SCHED_ROOT,
			 SCHED_ROOT_METRICS, NODE_NOSTAT },
	[FS_FN_STATS] = { "stats", FS_FN_DIR, S_IFREG | 0444, SCHED_FUNCTION,
			  SCHED_FN_STATS, 0 },
	[FS_FN_INVOKE] = { "invoke", FS_FN_DIR, S_IFREG | 0666, SCHED_FUNCTION,
			   -1, NODE_NOSIZE },
	[FS_TENANT_EVENTS] = { "events", FS_TENANT_DIR, S_IFREG | 0444,
			       SCHED_TENANT, -1, 0 },
	[FS_CODE_DIR] = { "code", FS_FN_DIR, S_IFDIR | 0755, SCHED_FUNCTION, -1,
			  0 },
	[FS_CODE_NODE] = { NULL, FS_CODE_DIR, S_IFREG | 0644, SCHED_FUNCTION,
			   -1, 0 },
	[FS_QUOTA_DIR] = { "quota", FS_TENANT_DIR, S_IFDIR | 0755, SCHED_TENANT,
			   -1, 0 },
	[FS_QUOTA_FILE + SCHED_QUOTA_MEMORY] = { "memory", FS_QUOTA_DIR,
						 S_IFREG | 0644, SCHED_TENANT,
						 -1, 0 },
	[FS_QUOTA_FILE + SCHED_QUOTA_INSTANCES] = { "instances", FS_QUOTA_DIR,
						    S_IFREG | 0644,
						    SCHED_TENANT, -1, 0 },
	[FS_QUOTA_FILE + SCHED_QUOTA_FUNCTIONS] = { "functions", FS_QUOTA_DIR,
						    S_IFREG | 0644,
						    SCHED_TENANT, -1, 0 },
	[FS_QUOTA_FILE + SCHED_QUOTA_CODE_BYTES] = { "code_bytes", FS_QUOTA_DIR,
						     S_IFREG | 0644,
						     SCHED_TENANT, -1, 0 },
	[FS_QUOTA_FILE + SCHED_QUOTA_REQUEST_BYTES] = { "request_bytes",
							FS_QUOTA_DIR,
							S_IFREG | 0644,
							SCHED_TENANT, -1, 0 },
	[FS_QUOTA_USAGE] = { "usage", FS_QUOTA_DIR, S_IFREG | 0444,
			     SCHED_TENANT, -1, 0 },
};

/* Whether `k` is a file of a tenant's quota/, which root alone writes. */
static int is_quota(enum fs_kind k)
{
	return k >= FS_QUOTA_FILE && k <= FS_QUOTA_USAGE;
}

static int is_attr(enum fs_kind k)
{
	return k >= FS_FN_ATTR && k < FS_KIND_COUNT;
}

static const char *kind_name(enum fs_kind k)
{
	if (is_attr(k))
		return sched_attr_name((enum sched_attr)(k - FS_FN_ATTR));
	return kinds[k].name;
}

const char *fs_kind_name(enum fs_kind k)
{
	return k > FS_NONE && k < FS_KIND_COUNT ? kind_name(k) : NULL;
}

static enum fs_kind kind_parent(enum fs_kind k)
{
	return is_attr(k) ? FS_FN_DIR : kinds[k].parent;
}

static mode_t kind_mode(enum fs_kind k)
{
	if (is_attr(k))
		return S_IFREG |
		       (sched_attr_writable((enum sched_attr)(k - FS_FN_ATTR))
				? 0644
				: 0444);
	return kinds[k].mode;
}

static enum sched_obj_type kind_type(enum fs_kind k)
{
	return is_attr(k) ? SCHED_FUNCTION : kinds[k].type;
}

int fs_attr_owner_is_root(enum fs_kind kind)
{
	return is_attr(kind) &&
	       sched_attr_root_only((enum sched_attr)(kind - FS_FN_ATTR));
}

/* Files only their owner may read or write, whatever the tenant's mode:
 * env and config, which hold secrets. */
static int kind_secret(enum fs_kind k)
{
	return k == FS_FN_ATTR + SCHED_ATTR_ENV ||
	       k == FS_FN_ATTR + SCHED_ATTR_CONFIG;
}

/* The permission bits a file of kind `k` shows in a tenant of mode `m`:
 * each class (owner, group, others) may read it if the kind is readable
 * and the tenant grants that class read, and write it if the kind is
 * writable and the tenant grants that class write. A secret is the
 * owner's only; invoke (a read starts a call) wants write for either. */
static mode_t file_bits(enum fs_kind k, mode_t m)
{
	mode_t base = kind_mode(k), bits = 0;
	int shift;

	for (shift = 6; shift >= 0; shift -= 3) {
		mode_t cls = (m >> shift) & 7, b = 0;

		if (kind_secret(k) && shift != 6)
			continue;
		if ((base & S_IRUSR) && (cls & 4))
			b |= 4;
		if ((base & S_IWUSR) && (cls & 2))
			b |= 2;
		if (k == FS_FN_INVOKE && b != 6)
			b = 0;
		bits |= b << shift;
	}
	return bits;
}

void fs_node_owner(struct fs *fs, const struct fs_node *n, uid_t *uid,
		   gid_t *gid, mode_t *mode)
{
	struct sched_owner w;
	mode_t base = kind_mode(n->kind);

	if (n->kind == FS_CODE_NODE) {
		fs_code_owner(fs, n, uid, gid, mode);
		return;
	}
	*uid = fs->uid;
	*gid = fs->gid;
	*mode = base;
	if (sched_tenant_of(n->obj) == NULL)
		return;
	sched_owner_of(n->obj, &w);
	*gid = w.gid;
	if (fs_attr_owner_is_root(n->kind) || is_quota(n->kind)) {
		*mode = is_quota(n->kind) ? base : S_IFREG | 0644;
		*uid = 0; /* root writes it; whoever reaches it reads it */
		return;
	}
	*uid = w.uid;
	if (S_ISDIR(base))
		*mode = S_IFDIR | (w.mode & SCHED_TENANT_MODE_MASK);
	else if (S_ISREG(base))
		*mode = S_IFREG | file_bits(n->kind, w.mode);
}

_Static_assert(FS_KIND_COUNT <= 0x100, "a kind fits in an inode's low byte");

fuse_ino_t fs_ino(uint64_t id, enum fs_kind kind)
{
	assert(kind < FS_KIND_COUNT);
	assert(id >> 56 == 0); /* the id fits above the kind */
	if (kind == FS_ROOT_DIR)
		return FUSE_ROOT_ID;
	return (fuse_ino_t)(id << 8 | (uint64_t)kind);
}

/* An instance's nodes are numbered by its function and its number, not
 * by the object, which a restart, a move or a change of parallelism may
 * replace: `instances/N` keeps its inode for the function's life, so the
 * entry the kernel cached (ENTRY_TIMEOUT) never names a gone object and
 * `echo stop > instances/N/state` never fails with a false ENOENT. The
 * low INST_BITS of the id are the number (below SCHED_MAX_INSTANCES_MAX
 * and any surge), the rest the function's object id. */
#define INST_BITS 20
#define INST_MASK ((1u << INST_BITS) - 1)

fuse_ino_t fs_obj_ino(const struct sched_obj *o, enum fs_kind kind)
{
	const struct sched_instance *in = (const struct sched_instance *)o;

	if (o->type != SCHED_INSTANCE || kind_type(kind) != SCHED_INSTANCE ||
	    o->parent == NULL)
		return fs_ino(o->id, kind);
	return fs_ino(o->parent->id << INST_BITS |
			      ((unsigned)in->n & INST_MASK),
		      kind);
}

/* The instance of inode id `id` (fs_obj_ino), or NULL. */
static struct sched_obj *inst_of(struct fs *fs, uint64_t id)
{
	struct sched_obj *fn = sched_find(fs->sched, id >> INST_BITS);
	char name[16];

	if (fn == NULL || fn->type != SCHED_FUNCTION)
		return NULL;
	snprintf(name, sizeof(name), "%u", (unsigned)(id & INST_MASK));
	return sched_child(fn, name);
}

int fs_resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *out)
{
	enum fs_kind kind = ino == FUSE_ROOT_ID ? FS_ROOT_DIR
						: (enum fs_kind)(ino & 0xff);
	uint64_t id = ino == FUSE_ROOT_ID ? SCHED_ROOT_ID : ino >> 8;
	struct sched_obj *o;

	if (kind == FS_NONE || kind >= FS_KIND_COUNT)
		return -ENOENT;
	out->code = NULL;
	if (kind == FS_CODE_NODE)
		return fs_code_resolve(fs, id, out);
	o = kind_type(kind) == SCHED_INSTANCE ? inst_of(fs, id)
					      : sched_find(fs->sched, id);
	if (o == NULL || o->type != kind_type(kind))
		return -ENOENT;
	/* An instance's link to its worker exists while it has one. */
	if (kind == FS_INST_WORKER &&
	    ((struct sched_instance *)o)->worker == NULL)
		return -ENOENT;
	out->kind = kind;
	out->obj = o;
	return 0;
}

/* The map of model objects listed in directory `dir`, and the kind of
 * node they appear as; NULL when it lists none. */
static struct rt_map *dir_map(struct fs *fs, const struct fs_node *dir,
			      enum fs_kind *kind)
{
	switch (dir->kind) {
	case FS_TENANTS_DIR: *kind = FS_TENANT_DIR; break;
	case FS_TENANT_DIR: *kind = FS_NS_DIR; break;
	case FS_NS_DIR: *kind = FS_FN_DIR; break;
	case FS_INSTANCES_DIR: *kind = FS_INST_DIR; break;
	case FS_WORKERS_DIR: *kind = FS_WORKER_DIR; break;
	case FS_ASSIGN_DIR:
		*kind = FS_ASSIGN_LINK;
		return &((struct sched_worker *)dir->obj)->assignments;
	default: return NULL;
	}
	(void)fs;
	return &dir->obj->children;
}

/* The object a fixed child of `dir` belongs to. */
static struct sched_obj *fixed_obj(struct fs *fs, const struct fs_node *dir,
				   enum fs_kind k)
{
	if (kind_type(k) == SCHED_POOL && dir->obj->type == SCHED_ROOT)
		return sched_pool(fs->sched);
	return dir->obj;
}

/* Whether fixed child `k` exists for its object now. */
static int fixed_present(const struct fs_node *n)
{
	if (n->kind == FS_INST_WORKER)
		return ((struct sched_instance *)n->obj)->worker != NULL;
	return 1;
}

int fs_child(struct fs *fs, const struct fs_node *dir, const char *name,
	     struct fs_node *out)
{
	struct rt_map *map;
	struct sched_obj *o;
	enum fs_kind ck = FS_NONE;
	int k;

	if (!S_ISDIR(kind_mode(dir->kind)))
		return -ENOTDIR;
	for (k = FS_README; k < FS_KIND_COUNT; k++) {
		const char *kn = kind_name((enum fs_kind)k);

		if (kind_parent((enum fs_kind)k) == dir->kind && kn &&
		    strcmp(kn, name) == 0) {
			out->kind = (enum fs_kind)k;
			out->obj = fixed_obj(fs, dir, (enum fs_kind)k);
			out->code = NULL;
			return fixed_present(out) ? 0 : -ENOENT;
		}
	}
	map = dir_map(fs, dir, &ck);
	o = map ? rt_map_get(map, name) : NULL;
	if (o == NULL)
		return -ENOENT;
	out->kind = ck;
	out->obj = o;
	out->code = NULL;
	return 0;
}

struct each_ctx {
	int (*fn)(const char *name, const struct fs_node *n, void *arg);
	void *arg;
	enum fs_kind kind;
};

static int each_obj(const char *key, void *value, void *arg)
{
	struct each_ctx *c = arg;
	struct fs_node n = { c->kind, value, NULL };

	return c->fn(key, &n, c->arg);
}

int fs_children(struct fs *fs, const struct fs_node *dir,
		int (*fn)(const char *name, const struct fs_node *n, void *arg),
		void *arg)
{
	struct each_ctx c = { fn, arg, FS_NONE };
	struct rt_map *map;
	int k, rc;

	for (k = FS_README; k < FS_KIND_COUNT; k++) {
		struct fs_node n = { FS_NONE, NULL, NULL };

		if (kind_parent((enum fs_kind)k) != dir->kind ||
		    kind_name((enum fs_kind)k) == NULL)
			continue;
		n.kind = (enum fs_kind)k;
		n.obj = fixed_obj(fs, dir, n.kind);
		if (!fixed_present(&n))
			continue;
		rc = fn(kind_name((enum fs_kind)k), &n, arg);
		if (rc != 0)
			return rc;
	}
	map = dir_map(fs, dir, &c.kind);
	return map ? rt_map_each(map, each_obj, &c) : 0;
}

int fs_node_transaction(const struct fs_node *n)
{
	return n->kind == FS_FN_INVOKE;
}

int fs_node_multiline(const struct fs_node *n)
{
	return n->kind == FS_FN_ATTR + SCHED_ATTR_ENV ||
	       n->kind == FS_FN_ATTR + SCHED_ATTR_MOUNTS ||
	       n->kind == FS_FN_ATTR + SCHED_ATTR_CONFIG;
}

struct fs_node fs_parent(struct fs *fs, const struct fs_node *n)
{
	struct fs_node up = { kind_parent(n->kind), n->obj, NULL };

	switch (n->kind) {
	case FS_ROOT_DIR: up = *n; break;
	case FS_WORKERS_DIR:
		up.obj = sched_find(fs->sched, SCHED_ROOT_ID);
		break;
	case FS_TENANT_DIR:
	case FS_NS_DIR:
	case FS_FN_DIR:
	case FS_INST_DIR:
	case FS_WORKER_DIR: up.obj = n->obj->parent; break;
	default: break;
	}
	return up;
}

mode_t fs_node_mode(const struct fs_node *n)
{
	return kind_mode(n->kind);
}

int fs_node_dynamic(const struct fs_node *n)
{
	return is_attr(n->kind) || !(kinds[n->kind].flags & NODE_STATIC);
}

/* Subdirectories of a directory, for its link count. */
static unsigned subdirs(struct fs *fs, const struct fs_node *n)
{
	enum fs_kind ck;
	struct rt_map *map;
	unsigned fixed = 0;
	int k;

	for (k = FS_README; k < FS_FN_ATTR; k++)
		if (kinds[k].parent == n->kind && kinds[k].name != NULL &&
		    S_ISDIR(kinds[k].mode))
			fixed++;
	map = dir_map(fs, n, &ck);
	if (map != NULL && S_ISDIR(kind_mode(ck)))
		fixed += (unsigned)map->count;
	return fixed;
}

int fs_readlink(struct fs *fs, const struct fs_node *n, struct rt_buf *out)
{
	(void)fs;
	if (n->kind != FS_INST_WORKER && n->kind != FS_ASSIGN_LINK)
		return -EINVAL;
	return sched_link_target((struct sched_instance *)n->obj,
				 n->kind == FS_INST_WORKER, out);
}

int fs_node_per_caller(const struct fs_node *n)
{
	return n->kind == FS_STATUS || n->kind == FS_STATS ||
	       n->kind == FS_METRICS;
}

void fs_stat(struct fs *fs, const struct fs_node *n,
	     const struct sched_caller *who, struct stat *st)
{
	int64_t ms;
	size_t sz;
	struct rt_buf b = { 0 };
	struct sched_wait *w = NULL;

	if (n->kind == FS_CODE_DIR || n->kind == FS_CODE_NODE) {
		fs_code_stat(fs, n, st);
		return;
	}
	memset(st, 0, sizeof(*st));
	st->st_ino = fs_obj_ino(n->obj, n->kind);
	fs_node_owner(fs, n, &st->st_uid, &st->st_gid, &st->st_mode);
	st->st_blksize = 4096;
	if (S_ISDIR(st->st_mode)) {
		st->st_nlink = 2 + subdirs(fs, n);
	} else if (S_ISLNK(st->st_mode)) {
		st->st_nlink = 1;
		if (fs_readlink(fs, n, &b) == 0)
			st->st_size = (off_t)b.len;
	} else {
		st->st_nlink = 1;
		if (n->kind == FS_EVENTS)
			st->st_size = (off_t)sched_events_end(fs->sched);
		else if (n->kind == FS_TENANT_EVENTS)
			st->st_size = (off_t)sched_tenant_events_end(n->obj);
		else if (!is_attr(n->kind) && ((kinds[n->kind].flags &
						(NODE_NOSIZE | NODE_NOSTAT)) ||
					       !(kind_mode(n->kind) & 0444)))
			st->st_size = 0;
		else if (fs_node_streamed(n)) /* counted, never held whole */
			st->st_size = fs_stream_size(fs, n, who, &sz) == 0
					      ? (off_t)sz
					      : 0;
		else if (fs_render(fs, n, &b, NULL, NULL, &w) == 0)
			st->st_size = (off_t)b.len;
	}
	if (n->kind == FS_EVENTS)
		ms = sched_events_mtime(fs->sched);
	else if (n->kind == FS_TENANT_EVENTS)
		ms = sched_tenant_events_mtime(n->obj);
	else if ((n->obj->type == SCHED_ROOT && n->kind != FS_TENANTS_DIR) ||
		 n->obj->type == SCHED_POOL)
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

int fs_render(struct fs *fs, const struct fs_node *n, struct rt_buf *out,
	      sched_done_fn done, void *arg, struct sched_wait **wait)
{
	*wait = NULL;
	if (is_attr(n->kind))
		return sched_function_render(
			(struct sched_function *)n->obj,
			(enum sched_attr)(n->kind - FS_FN_ATTR), out);
	if (is_quota(n->kind))
		return sched_quota_render(fs->sched, n->obj,
					  (int)(n->kind - FS_QUOTA_FILE), out);
	switch (n->kind) {
	case FS_README: return rt_buf_puts(out, fs_readme);
	case FS_VERSION: return rt_buf_puts(out, "fnfs " FNFS_VERSION "\n");
	default: break;
	}
	if (kinds[n->kind].file < 0 || !(kinds[n->kind].mode & 0444))
		return -EISDIR;
	if (done == NULL && (kinds[n->kind].flags & NODE_NOSIZE))
		return -EAGAIN; /* needs the workers; never synchronously */
	return sched_file_read(fs->sched, n->obj,
			       (enum sched_file)kinds[n->kind].file, out, done,
			       arg, wait);
}

int fs_write(struct fs *fs, const struct fs_node *n, const char *buf,
	     size_t len, const struct sched_caller *who, sched_done_fn done,
	     void *arg, struct sched_wait **wait)
{
	*wait = NULL;
	if (is_attr(n->kind)) {
		struct sched_op op = { .kind = SCHED_OP_ATTR,
				       .id = n->obj->id,
				       .who = who,
				       .attr = (enum sched_attr)(n->kind -
								 FS_FN_ATTR),
				       .value = buf,
				       .len = len };

		return sched_op_run(fs->sched, &op, done, arg);
	}
	if (is_quota(n->kind) && n->kind != FS_QUOTA_USAGE)
		return sched_quota_write(
			fs->sched, n->obj,
			(enum sched_quota_res)(n->kind - FS_QUOTA_FILE), buf,
			len, who);
	if (kinds[n->kind].file < 0 || !(kinds[n->kind].mode & 0200))
		return -EACCES;
	return sched_file_write(fs->sched, n->obj,
				(enum sched_file)kinds[n->kind].file, buf, len,
				done, arg, wait);
}

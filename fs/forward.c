/*
 * forward.c - forwarding in the tree: which writes and reads a follower
 * forwards to the leader, the paths they name, and, on the leader,
 * running what followers forward as the same local write, call or read
 * (of a log), with the caller's credentials and the same permission
 * checks as fs_op_open, fs_op_read, fs_op_write and the invoke file
 * (ops_file.c, ops_invoke.c). The link itself is
 * sched/cluster/forward.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* As ops_file.c's WRITE_MAX: a command is a word. */
#define FWD_WRITE_MAX (256u << 10)

int fs_node_forwarded(const struct fs_node *n)
{
	switch (n->kind) {
	case FS_FN_STATE:
	case FS_FN_RESTART:
	case FS_INST_STATE:
	case FS_INST_RESTART:
	case FS_WORKER_STATE:
	case FS_POOL_SIZE:
	case FS_POOL_STRATEGY:
	case FS_POOL_REBALANCE:
	case FS_FN_INVOKE: return 1;
	default:
		/* A tenant's limits: the leader writes them to the shared
		 * store, and every controller reads them from there. */
		return n->kind >= FS_QUOTA_FILE && n->kind < FS_QUOTA_USAGE;
	}
}

int fs_node_read_forwarded(const struct fs_node *n)
{
	return n->kind == FS_FN_LOG || n->kind == FS_INST_LOG;
}

/* Appends the path of object `o`'s directory. */
static int obj_path(const struct sched_obj *o, struct rt_buf *out)
{
	switch (o->type) {
	case SCHED_ROOT: return 0;
	case SCHED_POOL: return rt_buf_puts(out, "workers");
	case SCHED_WORKER: return rt_buf_printf(out, "workers/%s", o->name);
	case SCHED_INSTANCE:
		return obj_path(o->parent, out) ||
		       rt_buf_printf(out, "/instances/%s", o->name);
	default: return rt_buf_puts(out, "tenants/") || sched_obj_path(o, out);
	}
}

int fs_node_path(const struct fs_node *n, struct rt_buf *out)
{
	const char *name = fs_kind_name(n->kind);

	if (obj_path(n->obj, out) != 0)
		return -ENOMEM;
	if (name == NULL)
		return 0;
	if (n->kind >= FS_QUOTA_FILE && n->kind < FS_QUOTA_USAGE &&
	    rt_buf_puts(out, "/quota") < 0)
		return -ENOMEM;
	return rt_buf_printf(out, "%s%s", out->len > 0 ? "/" : "", name) < 0
		       ? -ENOMEM
		       : 0;
}

/* Resolves `path` from the root, as lookups would. Returns 0 or
 * -ENOENT. */
static int resolve_path(struct fs *fs, const char *path, struct fs_node *n)
{
	char part[NAME_MAX + 1];
	const char *p = path, *e;
	size_t len;
	int rc = fs_resolve(fs, FUSE_ROOT_ID, n);

	while (rc == 0 && *p) {
		e = strchr(p, '/');
		len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0 || len >= sizeof(part))
			return -ENOENT;
		memcpy(part, p, len);
		part[len] = '\0';
		rc = fs_child(fs, n, part, n);
		p += len + (e != NULL);
	}
	return rc < 0 ? -ENOENT : 0;
}

/* The function of node `n` (its own, or its instance's), or NULL. */
static struct sched_function *function_of(const struct fs_node *n)
{
	const struct sched_obj *o = n->obj;

	if (o->type == SCHED_INSTANCE)
		o = o->parent;
	return o->type == SCHED_FUNCTION ? (struct sched_function *)o : NULL;
}

/* A forwarded request run here, until it ends. */
struct served {
	struct fs *fs;
	struct sched_fwd_in *in;
	uint64_t fn_id;	    /* the function it is about, or 0 */
	struct rt_buf read; /* a read: the content rendered */
};

/* Answers `sv` with `err`, the function's error line when it failed. */
static void served_answer(struct served *sv, int err, const char *body,
			  size_t len)
{
	struct sched_obj *o = sv->fn_id ? sched_find(sv->fs->sched, sv->fn_id)
					: NULL;
	const char *error = NULL;

	if (err != 0 && o != NULL && o->type == SCHED_FUNCTION)
		error = ((struct sched_function *)o)->error;
	sched_fwd_answer(sv->fs->sched, sv->in, err, error, body, len);
	rt_buf_free(&sv->read);
	free(sv);
}

static struct served *served_new(struct fs *fs, struct sched_fwd_in *in)
{
	struct served *sv = calloc(1, sizeof(*sv));

	if (sv == NULL) {
		sched_fwd_answer(fs->sched, in, ENOMEM, NULL, NULL, 0);
		return NULL;
	}
	sv->fs = fs;
	sv->in = in;
	return sv;
}

/* Whether `who` may open `n` for `mask`, as op_open decides (the kind's
 * own bits, then the tenant's owner, group and mode). */
static int may(struct fs *fs, const struct fs_node *n,
	       const struct sched_caller *who, int mask)
{
	struct fs_caller c;
	mode_t mode = fs_node_mode(n);

	if (((mask & SCHED_MAY_WRITE) && !(mode & S_IWUSR)) ||
	    ((mask & SCHED_MAY_READ) && !(mode & S_IRUSR)))
		return 0;
	memset(&c, 0, sizeof(c));
	c.who = *who;
	c.have_groups = 1; /* they came with the request */
	return fs_may(fs, &c, n, mask);
}

static void on_write_done(void *arg, int err)
{
	served_answer(arg, err, NULL, 0);
}

static void serve_write(void *arg, struct sched_fwd_in *in, const char *path,
			const char *buf, size_t len,
			const struct sched_caller *who)
{
	struct fs *fs = arg;
	struct sched_function *fn;
	struct sched_wait *w;
	struct served *sv = served_new(fs, in);
	struct fs_node n;
	int rc;

	if (sv == NULL)
		return;
	rc = resolve_path(fs, path, &n);
	if (rc < 0)
		goto out;
	fn = function_of(&n);
	sv->fn_id = fn != NULL ? fn->obj.id : 0;
	if (S_ISDIR(fs_node_mode(&n)))
		rc = -EISDIR;
	else if (!may(fs, &n, who, SCHED_MAY_WRITE))
		rc = -EACCES;
	else if (len > FWD_WRITE_MAX)
		rc = -EINVAL;
	else
		rc = fs_write(fs, &n, buf, len, who, on_write_done, sv, &w);
	if (rc == SCHED_LATER)
		return; /* on_write_done answers */
out:
	served_answer(sv, -rc, NULL, 0);
}

static void on_call_done(void *arg, int err, const char *body, size_t len)
{
	served_answer(arg, err, body, len);
}

static void serve_call(void *arg, struct sched_fwd_in *in, const char *path,
		       const char *body, size_t len,
		       const struct sched_caller *who, int async)
{
	struct fs *fs = arg;
	struct sched_function *fn = NULL;
	struct sched_call *call;
	struct served *sv = served_new(fs, in);
	struct fs_node n;
	int rc;

	if (sv == NULL)
		return;
	rc = resolve_path(fs, path, &n);
	if (rc == 0 && n.kind != FS_FN_INVOKE)
		rc = -EINVAL;
	if (rc < 0)
		goto out;
	fn = function_of(&n);
	sv->fn_id = fn->obj.id;
	/* As the open of invoke: written, and read unless nobody waits. */
	if (!may(fs, &n, who, SCHED_MAY_WRITE | (async ? 0 : SCHED_MAY_READ))) {
		rc = -EACCES;
		goto out;
	}
	rc = sched_call_check(fs->sched, fn, body, len, 0);
	if (rc < 0)
		goto out;
	if (async) {
		rc = sched_call_start(fs->sched, fn, body, len, NULL, NULL,
				      &call);
		goto out;
	}
	rc = sched_call_start(fs->sched, fn, body, len, on_call_done, sv,
			      &call);
	if (rc == 0)
		return; /* on_call_done answers */
out:
	served_answer(sv, -rc, NULL, 0);
}

static void on_read_done(void *arg, int err)
{
	struct served *sv = arg;

	served_answer(sv, err, sv->read.data, sv->read.len);
}

static void serve_read(void *arg, struct sched_fwd_in *in, const char *path,
		       const struct sched_caller *who)
{
	struct fs *fs = arg;
	struct sched_function *fn;
	struct sched_wait *w;
	struct served *sv = served_new(fs, in);
	struct fs_node n;
	int rc;

	if (sv == NULL)
		return;
	rc = resolve_path(fs, path, &n);
	if (rc == 0 && !fs_node_read_forwarded(&n))
		rc = -EINVAL; /* only logs are read through the leader */
	if (rc < 0)
		goto out;
	fn = function_of(&n);
	sv->fn_id = fn != NULL ? fn->obj.id : 0;
	if (!may(fs, &n, who, SCHED_MAY_READ))
		rc = -EACCES;
	else
		rc = fs_render(fs, &n, &sv->read, on_read_done, sv, &w);
	if (rc == SCHED_LATER)
		return; /* on_read_done answers */
out:
	served_answer(sv, rc < 0 ? -rc : 0, sv->read.data, sv->read.len);
}

void fs_forward_serve(struct fs *fs)
{
	static const struct sched_fwd_serve_ops ops = {
		.write = serve_write,
		.call = serve_call,
		.read = serve_read,
	};

	sched_fwd_serve(fs->sched, &ops, fs);
}

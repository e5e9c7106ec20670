/*
 * store.h - durable state. The interface is small so that another backend
 * (etcd, for several controllers) can stand behind it; SQLite is the
 * embedded default. The backend is chosen once, at open (store_ops.h);
 * nothing here names either one's types. What a cluster's own code asks
 * of a shared store beyond this is in etcd/store_cluster.h.
 */
#ifndef FNFS_SCHED_STORE_H
#define FNFS_SCHED_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store_config.h"

/* The schema version this code writes, kept in PRAGMA user_version. */
#define STORE_SCHEMA_VERSION 7

/* A write's result must be looked at (issue 24): a caller that drops it
 * changes the model without the store, so the compiler warns, and
 * -Werror stops the build. */
#define STORE_MUST __attribute__((warn_unused_result))

enum store_kind { STORE_TENANT, STORE_NAMESPACE, STORE_FUNCTION };

/* One stored object. Strings are borrowed for the duration of a call. */
struct store_row {
	enum store_kind kind;
	const char *tenant;    /* always set */
	const char *ns;	       /* namespace; NULL for a tenant */
	const char *name;      /* function; NULL otherwise */
	const char *spec;      /* function spec as compact JSON */
	uint64_t revision;     /* function revision */
	uint64_t run_revision; /* function run revision (0: = revision) */
	int64_t created_ms;
	int64_t updated_ms;
	uint32_t uid, gid, mode; /* tenant owner, group and mode */
};

struct store;

/* What a write transaction does to a tenant, namespace or function. */
enum store_op {
	STORE_INSERT, /* store_insert */
	STORE_UPDATE, /* store_update */
	STORE_DELETE, /* store_delete */
	STORE_OWNER   /* store_tenant_owner */
};

/* One such change, as committed. */
struct store_change {
	enum store_op op;
	struct store_row row;
	int own; /* shared store: this controller's own write (it journals
		    it); 0 with SQLite */
};

/* Called once per change of a tenant, namespace or function after the
 * store committed it, in the transaction's order: with SQLite from inside
 * store_commit (before it returns), with a shared store when this
 * controller learns of it (its own writes and every other controller's).
 * The listener applies it to the model. No store transaction is open
 * during the call. */
typedef void (*store_listen_fn)(void *arg, const struct store_change *c);

/* Sets the listener of `st` (one; NULL: none). */
void store_listen(struct store *st, store_listen_fn fn, void *arg);

/* Whether `st` is shared with other controllers: its changes of tenants,
 * namespaces and functions commit later (store_commit_then), and come to
 * the listener from the shared store. */
int store_shared(const struct store *st);

/* Called once when a change submitted by store_commit_then has been
 * applied (err 0) or has failed (-errno). */
typedef void (*store_done_fn)(void *arg, int err);

/* Returned by store_commit_then when `done` will be called. */
#define STORE_LATER 1

/* Commits the open write transaction like store_commit. With SQLite it
 * returns 0 (the listener has applied the changes) or the -errno, and
 * never calls `done`. With a shared store it returns STORE_LATER once
 * the changes of tenants, namespaces and functions are sent: `done` is
 * called after this controller's listener has applied them, or with
 * -EAGAIN when another controller changed one of them first, -EEXIST /
 * -ENOENT for a row that appeared or went, -EIO when the store cannot be
 * reached (the reason is logged). */
STORE_MUST int store_commit_then(struct store *st, store_done_fn done,
				 void *arg);

/* Opens (creating or migrating) the database at `path`. Returns 0 or
 * -errno (-EIO for SQLite errors, logged). */
int store_open(struct store **out, const char *path);

struct uv_loop_s;

/* Opens the store `c` describes: store_open for SQLite; for a shared
 * store the database at c->path for what this controller keeps alone and
 * the cluster's tenants, namespaces and functions, read before this
 * returns (running `loop`), then followed on `loop`. Returns 0 or -errno
 * (-EINVAL for an unknown url, a bad cluster name or endpoint,
 * -EIO/-ETIMEDOUT when the shared store cannot be read). */
int store_open_config(struct store **out, const struct store_config *c,
		      struct uv_loop_s *loop);

/* What a shared store knows of etcd: the newest revision its rows have,
 * whether it is following etcd now and since when it is not (epoch ms),
 * the endpoint it asks and its last failure (NULL: none; strings owned
 * by the store). Returns 0, or -ENOENT when `st` is not shared. */
int store_shared_state(const struct store *st, int64_t *revision, int *watching,
		       int64_t *stale_since, const char **endpoint,
		       const char **error);

/* Ends that, dropping what was not sent. */
void store_mirror_stop(struct store *st);

/* The leader's writes not yet acknowledged by etcd (0 with SQLite). */
size_t store_mirror_pending(const struct store *st);

/* A cluster's leader: calls `done` (0) once etcd acknowledged every
 * write of the leader queued before this call (so that a follower that
 * reads etcd next sees them); -ETIMEDOUT past 2 s, -ECANCELED when it
 * stops leading. Returns STORE_LATER (`done` will be called), 0 (nothing
 * waits, SQLite: `done` is not called) or -ENOMEM. */
STORE_MUST int store_mirror_flush(struct store *st, store_done_fn done,
				  void *arg);

/* Calls `done` once this controller's model has what the shared store
 * had committed when asked. Returns 0, -ENOENT with SQLite, or
 * -errno (then `done` is not called). */
STORE_MUST int store_barrier(struct store *st, store_done_fn done, void *arg);

/* The cluster's name of a shared store, or NULL. */
const char *store_cluster(const struct store *st);

/* Ends what a shared store does on the loop (its watch, its requests:
 * what waits fails with -ECANCELED), so that the loop can end; a no-op
 * for SQLite. Later shared changes fail. */
void store_stop(struct store *st);

/* Closes the database. */
void store_close(struct store *st);

/* Calls `fn` for every row: all tenants, then all namespaces, then all
 * functions, so parents come first. Stops at and returns fn's first
 * non-zero result. */
int store_load(struct store *st, int (*fn)(const struct store_row *, void *),
	       void *arg);

/* Opens a write transaction. Returns 0 or -EIO. */
STORE_MUST int store_begin(struct store *st);

/* Opens a write transaction for derived state (instances made from a
 * spec, assignments): its commit does not wait for the disk. It survives
 * a crash of the process, and the next durable commit syncs it too; a
 * power cut may lose it, and the controller rebuilds it from the specs
 * and the workers' reports. Nested inside a durable transaction, it is
 * durable. Returns 0 or -EIO. */
STORE_MUST int store_begin_derived(struct store *st);

/* Commits it durably before returning. Returns 0 or -EIO, -ENOSPC for a full
 * disk (rolled back). */
STORE_MUST int store_commit(struct store *st);

/* Abandons it. */
void store_rollback(struct store *st);

/* Inserts a row. Returns 0, -EEXIST or -EIO. */
STORE_MUST int store_insert(struct store *st, const struct store_row *r);

/* Rewrites a row's updated_ms (and, for a function, spec and revision).
 * Returns 0, -ENOENT or -EIO. */
STORE_MUST int store_update(struct store *st, const struct store_row *r);

/* Deletes a row. Returns 0, -ENOENT or -EIO. */
STORE_MUST int store_delete(struct store *st, const struct store_row *r);

/* Rewrites a function's row for a new revision of its code (r's spec,
 * revision, run_revision and updated_ms), which its caller applies to
 * the model itself: the listener does not hear of it. Returns 0, -ENOENT
 * or -EIO/-ENOSPC. */
STORE_MUST int store_function_code(struct store *st, const struct store_row *r);

/* Rewrites a tenant's owner, group and mode (r->tenant, r->uid, r->gid,
 * r->mode). Returns 0, -ENOENT or -EIO/-ENOSPC. */
STORE_MUST int store_tenant_owner(struct store *st, const struct store_row *r);

/* One stored instance: its desired state and its assignment. */
struct store_instance {
	const char *tenant, *ns, *fn;
	int n;
	int desired_run;    /* 1: start, 0: stop */
	const char *worker; /* assigned worker id, or NULL (pending) */
	uint64_t epoch;	    /* of its current or last assignment */
	/* A cluster's leader also tells the others what it knows of it
	 * (not kept in SQLite): its state word (NULL: not told) and pid,
	 * and with them the revision it runs, when it started (epoch ms),
	 * its restarts and its last exit ("status:1", "signal:9", "oom";
	 * NULL or "": none), all 0 when not told. */
	const char *state;
	int pid;
	uint64_t revision;
	int64_t started_ms;
	long long restarts;
	const char *last_exit;
	/* The leader's term that wrote it: the creation revision of its
	 * election key, whose existence fenced the write (elect_fence);
	 * 0 when not told (a value of an older leader, an import). Set by
	 * the store on the leader's writes, not by its callers. */
	int64_t term;
};

/* One known worker. */
struct store_worker {
	const char *id;
	int memory_mb;
	const char *tags;	/* JSON array */
	const char *namespaces; /* JSON array */
	int local;		/* started by the pool */
	int drained;		/* told to drain, not yet resumed */
	/* A cluster's leader also tells the others what it sees of it (not
	 * kept in SQLite): its state word (NULL: not told), the pid of its
	 * process and since when (epoch ms) it is in that state. */
	const char *state;
	int pid;
	int64_t since_ms;
};

/* Writes (insert or replace) an instance row. Returns 0 or -EIO. */
STORE_MUST int store_instance_put(struct store *st,
				  const struct store_instance *r);

/* A cluster's leader: tells the others `r` (with its state and pid),
 * in etcd only (store_mirror_start); a no-op otherwise. Returns 0 or
 * -ENOMEM. */
STORE_MUST int store_instance_publish(struct store *st,
				      const struct store_instance *r);

/* A cluster's leader: tells the others `r` (with its state, pid and
 * since_ms), in etcd only; a no-op otherwise. Returns 0 or -ENOMEM. */
STORE_MUST int store_worker_publish(struct store *st,
				    const struct store_worker *r);

/* Deletes an instance row. Returns 0 or -EIO. */
STORE_MUST int store_instance_delete(struct store *st, const char *tenant,
				     const char *ns, const char *fn, int n);

/* Calls `fn` for every stored instance. */
int store_instance_load(struct store *st,
			int (*fn)(const struct store_instance *, void *),
			void *arg);

/* Writes (insert or replace) a worker row. Returns 0 or -EIO. */
STORE_MUST int store_worker_put(struct store *st, const struct store_worker *r);

/* Deletes a worker row. Returns 0 or -EIO. */
STORE_MUST int store_worker_delete(struct store *st, const char *id);

/* Calls `fn` for every known worker. */
int store_worker_load(struct store *st,
		      int (*fn)(const struct store_worker *, void *),
		      void *arg);

/* Sets a setting. Returns 0 or -EIO. */
STORE_MUST int store_setting_put(struct store *st, const char *key,
				 const char *value);

/* Deletes a setting. Returns 0 or -EIO. */
STORE_MUST int store_setting_delete(struct store *st, const char *key);

/* One entry of a function's code/: a file (hash set) or a directory. */
struct store_code_file {
	const char *tenant, *ns, *fn;
	const char *path; /* below code/, "a/b" */
	uint32_t mode;	  /* st_mode: S_IFREG or S_IFDIR and permissions */
	uint64_t size;
	const char *hash; /* a file's object, "" for a directory */
	int64_t mtime_ms;
};

/* A function's revision of code: the hash of its manifest. */
struct store_code_revision {
	const char *tenant, *ns, *fn;
	const char *hash;
	uint64_t bytes;
	int files;
};

/* Writes (insert or replace) an entry of code/. Returns 0 or -EIO/-ENOSPC. */
STORE_MUST int store_code_file_put(struct store *st,
				   const struct store_code_file *r);

/* Deletes the entry at `path` of a function's code/. Returns 0 or -EIO. */
STORE_MUST int store_code_file_delete(struct store *st, const char *tenant,
				      const char *ns, const char *fn,
				      const char *path);

/* Renames the entry at `from` and everything below it to `to`. Returns 0
 * or -EIO/-ENOSPC. */
STORE_MUST int store_code_file_rename(struct store *st, const char *tenant,
				      const char *ns, const char *fn,
				      const char *from, const char *to);

/* Deletes every entry of a function's code/. Returns 0 or -EIO. */
STORE_MUST int store_code_files_delete(struct store *st, const char *tenant,
				       const char *ns, const char *fn);

/* Calls `fn` for every entry of every function's code/, in order of
 * tenant, namespace, function and path (a directory before what it
 * holds); a shared store's entries are etcd's, as this controller knows
 * them now. Stops at and returns fn's first non-zero result. */
int store_code_file_load(struct store *st,
			 int (*fn)(const struct store_code_file *, void *),
			 void *arg);

/* Writes (insert or replace) a function's revision of code. Returns 0 or
 * -EIO/-ENOSPC. */
STORE_MUST int store_code_revision_put(struct store *st,
				       const struct store_code_revision *r);

/* Deletes a function's revision of code. Returns 0 or -EIO. */
STORE_MUST int store_code_revision_delete(struct store *st, const char *tenant,
					  const char *ns, const char *fn);

/* Calls `fn` for every function's revision of code (a shared store:
 * etcd's). */
int store_code_revision_load(struct store *st,
			     int (*fn)(const struct store_code_revision *,
				       void *),
			     void *arg);

/* One change of code/ in a shared store (store_code_submit). */
enum store_code_op_kind {
	STORE_CODE_PUT,	    /* entry `file` as it is */
	STORE_CODE_DEL,	    /* entry at file.path */
	STORE_CODE_REV_PUT, /* revision `rev` */
	STORE_CODE_REV_DEL  /* the function of `rev` has no code */
};

struct store_code_op {
	enum store_code_op_kind op;
	struct store_code_file file;	/* PUT, DEL (its key's fields) */
	struct store_code_revision rev; /* REV_PUT, REV_DEL */
	int parent_in_txn; /* PUT: its directory is put by the same call,
			    * so it is not required to exist before */
	int empty_dir;	   /* DEL: a directory, deleted only when nothing
			    * is below it */
};

/* A shared store: sends the `n` changes of `v`, and with `fn` (or NULL)
 * an update of that function's row, as one compare-and-set: an entry is
 * put over the version this controller has seen (or where there is
 * none), under a directory and a function that exist, deleted at the
 * version seen. Returns STORE_LATER (`done` as store_commit_then says:
 * 0 once this controller's code listener has the changes, -EAGAIN when
 * another controller changed one first, -EIO) or -errno; -ENOTSUP with
 * SQLite. */
STORE_MUST int store_code_submit(struct store *st, const struct store_row *fn,
				 const struct store_code_op *v, size_t n,
				 store_done_fn done, void *arg);

/* A shared store: whether object `hash` is whole in etcd (its P/om seen
 * by this controller), with its size in `*size`. Returns 1, 0, or
 * -ENOTSUP with SQLite. */
int store_object_known(struct store *st, const char *hash, uint64_t *size);

/* For tests: the write statement after the next `after` ones (commits
 * included) fails with `err` (a negative errno), once; -1 turns it off. */
void store_inject_failure(struct store *st, int after, int err);

/* Reads a setting into `out` (n bytes). Returns 0, -ENOENT or -EIO. */
int store_setting_get(struct store *st, const char *key, char *out, size_t n);

/* Calls `fn` with the key of every setting that begins with `prefix`,
 * in key order, until it returns nonzero (which is returned). Returns 0,
 * that, or -EIO. `fn` must not write to the store. */
int store_setting_each(struct store *st, const char *prefix,
		       int (*fn)(const char *key, void *arg), void *arg);

/* Revokes worker `worker`'s certificates: the one with `serial` (NULL or
 * "": none known) and every one issued at or before `revoked_ms`.
 * Returns 0 or -EIO/-ENOSPC. */
STORE_MUST int store_revoke(struct store *st, const char *worker,
			    const char *serial, int64_t revoked_ms);

/* Whether the certificate of `cn` with `serial`, issued at `not_before_s`
 * (epoch seconds), is revoked. Returns 1, 0 or -EIO. */
int store_revoked(struct store *st, const char *cn, const char *serial,
		  int64_t not_before_s);

#endif

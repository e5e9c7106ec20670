/*
 * sched.h - the controller's public API: the model of tenants, namespaces
 * and functions, their specs, the store behind them and the event journal.
 *
 * fs/ calls only what is declared here. Nothing here knows FUSE. Every call
 * runs on the loop thread; none blocks beyond a short SQLite transaction.
 */
#ifndef FNFS_SCHED_H
#define FNFS_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/base/rt.h"
#include "store/store_config.h"

/* ================================================================= specs */

enum sched_mode { SCHED_MODE_DAEMON, SCHED_MODE_HOT, SCHED_MODE_COLD };
enum sched_format {
	SCHED_FORMAT_LINE,
	SCHED_FORMAT_JSON,
	SCHED_FORMAT_HTTP,  /* an HTTP/1.1 server on PORT or FN_LISTENER */
	SCHED_FORMAT_LAMBDA /* polls the AWS Lambda runtime API */
};
enum sched_tags_policy { SCHED_TAGS_STRICT, SCHED_TAGS_LOOSE };
enum sched_restart_policy {
	SCHED_RESTART_ALWAYS,
	SCHED_RESTART_ON_FAILURE,
	SCHED_RESTART_NEVER
};
enum sched_network { SCHED_NETWORK_HOST, SCHED_NETWORK_NONE };
enum sched_isolation { SCHED_ISOLATION_SANDBOX, SCHED_ISOLATION_NONE };

/* Limits of the numeric attributes (inclusive). */
#define SCHED_PARALLELISM_MAX	1000
#define SCHED_MAX_INSTANCES_MAX 1000
#define SCHED_MEMORY_MAX	1048576 /* MB */
#define SCHED_TIMEOUT_MAX	3600000 /* ms */
#define SCHED_IDLE_TIMEOUT_MAX	86400	/* s */
#define SCHED_COMMAND_MAX	4096	/* bytes */
#define SCHED_PATH_MAX		4096	/* bytes of cwd */
#define SCHED_ENV_MAX		256	/* variables */
#define SCHED_ENV_VALUE_MAX	4096	/* bytes per value */
#define SCHED_TAGS_MAX		32	/* tags */
#define SCHED_TAGS_TEXT_MAX	4096	/* bytes written to `tags` */
#define SCHED_ENV_TOTAL_MAX	65536	/* bytes of env in all */
#define SCHED_VALUE_MAX		262144	/* bytes written to one attribute */
#define SCHED_PIDS_DEFAULT	256	/* processes per instance */
#define SCHED_PIDS_MAX		4194304 /* the kernel's pid_max limit */
#define SCHED_CPU_MIN		10	/* millicores: 1 ms per 100 ms */
#define SCHED_CPU_MAX		1024000 /* millicores: 1024 CPUs */
#define SCHED_MOUNTS_MAX	32	/* paths bound into the sandbox */
#define SCHED_READY_TIMEOUT_MAX 3600	/* s */
#define SCHED_CONCURRENCY_MAX	1000	/* calls at once per instance */
#define SCHED_READY_PATH_MAX	256	/* bytes of http:/PATH */

/* A function's spec: everything `config` carries. */
struct sched_spec {
	char *command; /* owned; "" when unset */
	enum sched_mode mode;
	enum sched_format format;
	int parallelism;   /* instances kept running */
	int max_instances; /* 0: follow parallelism (min 1) */
	int memory;	   /* MB per instance */
	int timeout;	   /* ms per call */
	int idle_timeout;  /* s */
	char **env;	   /* owned array of owned "KEY=VALUE" */
	int nenv;
	char *cwd;   /* owned; "" means the worker's default */
	char **tags; /* owned array of owned tags, no duplicates */
	int ntags;
	enum sched_tags_policy tags_policy;
	enum sched_restart_policy restart_policy;
	int pids; /* processes per instance; 0: no limit */
	int cpu;  /* millicores per instance; 0: no limit */
	enum sched_network network;
	enum sched_isolation isolation; /* only root may change it */
	char **mounts; /* owned lines "PATH" (read-only) or "PATH rw" */
	int nmounts;
	char *ready;	   /* owned; "" or NULL: the format's default (see
			    * sched_spec_ready) */
	int ready_timeout; /* s an instance may take to be ready */
	int concurrency;   /* calls one instance serves at once */
};

/* The files of a function directory that map to its spec and record. */
enum sched_attr {
	SCHED_ATTR_CONFIG,
	SCHED_ATTR_COMMAND,
	SCHED_ATTR_MODE,
	SCHED_ATTR_FORMAT,
	SCHED_ATTR_PARALLELISM,
	SCHED_ATTR_MAX_INSTANCES,
	SCHED_ATTR_MEMORY,
	SCHED_ATTR_TIMEOUT,
	SCHED_ATTR_IDLE_TIMEOUT,
	SCHED_ATTR_ENV,
	SCHED_ATTR_CWD,
	SCHED_ATTR_TAGS,
	SCHED_ATTR_TAGS_POLICY,
	SCHED_ATTR_RESTART_POLICY,
	SCHED_ATTR_PIDS,
	SCHED_ATTR_CPU,
	SCHED_ATTR_NETWORK,
	SCHED_ATTR_ISOLATION,
	SCHED_ATTR_MOUNTS,
	SCHED_ATTR_READY,
	SCHED_ATTR_READY_TIMEOUT,
	SCHED_ATTR_CONCURRENCY,
	SCHED_ATTR_REVISION,
	SCHED_ATTR_ERROR,
	SCHED_ATTR_COUNT
};

/* Returns the file name of an attribute ("max_instances"). */
const char *sched_attr_name(enum sched_attr a);

/* Whether an attribute file can be written. */
int sched_attr_writable(enum sched_attr a);

/* The last attribute of a spec (the ones from SCHED_ATTR_COMMAND to it
 * are what `config` holds). */
#define SCHED_ATTR_LAST_SPEC SCHED_ATTR_CONCURRENCY

/* Whether only root may change attribute `a` (`isolation`). */
int sched_attr_root_only(enum sched_attr a);

/* The first attribute only root may change whose value differs between
 * `a` and `b`, or -1 when none does. */
int sched_spec_root_only_changed(const struct sched_spec *a,
				 const struct sched_spec *b);

/* Sets `s` to the defaults: daemon, line, parallelism 1, memory 128, ... */
void sched_spec_init(struct sched_spec *s);

/* Frees what `s` owns and leaves it at the defaults. */
void sched_spec_free(struct sched_spec *s);

/* Makes `dst` (uninitialised) a deep copy of `src`. Returns 0 or -ENOMEM. */
int sched_spec_copy(struct sched_spec *dst, const struct sched_spec *src);

/* Whether two specs are the same. */
int sched_spec_equal(const struct sched_spec *a, const struct sched_spec *b);

/* The effective instance ceiling: max_instances, or parallelism (min 1)
 * while it follows parallelism. */
int sched_spec_max_instances(const struct sched_spec *s);

/* The effective readiness of an instance: `ready` when set, else the
 * format's default: "http:/" for a hot http function, "lambda" for a hot
 * lambda one, "started" otherwise. A static or spec-owned string. */
const char *sched_spec_ready(const struct sched_spec *s);

/* The calls one instance serves at once: `concurrency` for a hot http or
 * json function, 1 for every other. */
int sched_spec_slots(const struct sched_spec *s);

/* The word of a format ("http"). */
const char *sched_format_word(enum sched_format f);

/* Parses the text written to the file of attribute `a` (one value, an
 * optional single trailing newline) into `s`. Pure. Returns 0, or -EINVAL
 * with the reason in `why` and `s` unchanged. SCHED_ATTR_CONFIG takes JSON
 * and replaces the whole spec. Text (command, cwd, env values) must be
 * UTF-8 on one line, without NUL or a control character other than tab.
 * A reason quotes what was written as clean UTF-8 (other bytes as \xNN). */
int sched_spec_parse(struct sched_spec *s, enum sched_attr a, const char *buf,
		     size_t len, struct rt_buf *why);

/* Names fnfs's data directory and mountpoint (absolute, resolved), which
 * a `mounts` write refuses (EINVAL), with /proc, /sys and /dev, and
 * anything under them. Once, before the mount serves. Returns 0 or
 * -ENOMEM. */
int sched_spec_reserve(const char *datadir, const char *mountpoint);

/* Parses a whole spec from a JSON object into `s` (uninitialised): missing
 * keys take defaults, unknown keys or bad values are -EINVAL with the reason
 * in `why`, and `s` is then left at the defaults. Pure. This is the reading
 * of a stored spec: control characters in text, which an older fnfs
 * accepted, are kept (a `config` write refuses them). */
int sched_spec_from_json(struct sched_spec *s, const char *buf, size_t len,
			 struct rt_buf *why);

/* Parses a decimal integer of at most 18 plain digits that is the whole
 * of `v` (`len` bytes). Returns 0 or -EINVAL. Pure. */
int sched_parse_digits(const char *v, size_t len, long long *out);

/* Checks rules that span attributes. Returns 0 or -EINVAL with `why`. */
int sched_spec_check(const struct sched_spec *s, struct rt_buf *why);

/* Appends the file text of attribute `a` (not revision or error) to `out`:
 * one value and a newline, env as KEY=VALUE lines, config as pretty JSON.
 * Returns 0 or -ENOMEM. */
int sched_spec_render(const struct sched_spec *s, enum sched_attr a,
		      struct rt_buf *out);

/* Appends the compact JSON form used by the store, which keeps whether
 * max_instances follows parallelism. Returns 0, -ENOMEM, or -EINVAL when
 * a text of `s` is not UTF-8 (validation keeps that out). */
int sched_spec_dump(const struct sched_spec *s, struct rt_buf *out);

/* sched_spec_dump, after checking that the text reads back (with
 * sched_spec_from_json) as a spec equal to `s`: what is stored is exactly
 * what was accepted. Returns 0, -ENOMEM, or -EIO with the reason in `why`
 * (a spec that validation let through and JSON cannot carry: a bug), and
 * then appends nothing. */
int sched_spec_dump_checked(const struct sched_spec *s, struct rt_buf *out,
			    struct rt_buf *why);

/* Whether going from spec `a` to `b` changes what an instance's process
 * is (command, mode, format, memory, env, cwd, restart_policy), so that
 * running instances must restart. Scaling and call settings do not. */
int sched_spec_needs_restart(const struct sched_spec *a,
			     const struct sched_spec *b);

/* Appends to `out` the comma-separated names of the attributes that differ
 * between `a` and `b` ("memory,tags"). Returns 0 or -ENOMEM. */
int sched_spec_diff(const struct sched_spec *a, const struct sched_spec *b,
		    struct rt_buf *out);

/* ================================================================= model */

enum sched_obj_type {
	SCHED_ROOT,
	SCHED_TENANT,
	SCHED_NAMESPACE,
	SCHED_FUNCTION,
	SCHED_INSTANCE, /* below a function */
	SCHED_POOL,	/* the workers/ directory */
	SCHED_WORKER	/* below the pool */
};

/* A node of the tenant tree. fs/ reads these fields and never writes them;
 * they stay valid until the object is removed, so fs/ keeps ids, not
 * pointers, across requests. */
struct sched_obj {
	uint64_t id; /* unique in this process, never reused */
	enum sched_obj_type type;
	char name[64];		  /* "" for the root */
	struct sched_obj *parent; /* NULL for the root */
	struct rt_map children;	  /* name -> struct sched_obj * */
	int64_t created_ms;	  /* epoch ms */
	int64_t updated_ms;	  /* last change of it or its children */
};

struct sched;

/* Who owns a node of the tree: its tenant's Unix owner, group and mode
 * (directory mode bits), or root's for anything outside a tenant. */
struct sched_owner {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode; /* permission bits of the tenant directory (0750) */
};

/* Fills `out` with the owner of `o` (walking up to its tenant). */
void sched_owner_of(const struct sched_obj *o, struct sched_owner *out);

/* Who asks: the credentials of a request (a FUSE request's uid, gid and
 * supplementary groups). A NULL caller is fnfs itself, with root's
 * rights. */
struct sched_caller {
	uint32_t uid;
	uint32_t gid;
	const uint32_t *groups; /* supplementary groups, not owned */
	int ngroups;
};

/* Bits of a permission check, as access(2)'s R_OK, W_OK and X_OK. */
#define SCHED_MAY_READ	4
#define SCHED_MAY_WRITE 2
#define SCHED_MAY_EXEC	1

/* Whether `who` may do `mask` on a node owned by `uid`:`gid` with
 * permission bits `mode`, as the kernel decides it: root may do
 * anything; otherwise the owner's bits apply to the owner, the group's
 * to a member of the group (primary or supplementary), the others' to
 * everyone else. Pure. */
int sched_caller_may(const struct sched_caller *who, uint32_t uid, uint32_t gid,
		     uint32_t mode, int mask);

/* Whether `who` is root (or NULL: fnfs itself). */
int sched_caller_is_root(const struct sched_caller *who);

/* The mode bits a tenant may have: permission bits only. */
#define SCHED_TENANT_MODE_MASK 0777
/* A new tenant's mode. */
#define SCHED_TENANT_MODE 0750

/* Changes the owner, group or mode of tenant `t` as `who` asks: `uid`,
 * `gid` or `mode` < 0 keeps that one. Changing the owner or group takes
 * root (-EPERM otherwise); the mode, root or the owner (-EPERM). A mode
 * outside SCHED_TENANT_MODE_MASK is -EINVAL. Stored, then applied and
 * journalled (tenant.owner). Returns 0, -EPERM, -EINVAL, or -EIO/-ENOSPC
 * (the store failed; nothing changed). */
int sched_tenant_chown(struct sched *s, struct sched_obj *t,
		       const struct sched_caller *who, int64_t uid, int64_t gid,
		       int64_t mode);

/* The tenant object `o` belongs to (itself for a tenant), or NULL for
 * the root, the pool and workers. */
const struct sched_obj *sched_tenant_of(const struct sched_obj *o);

struct sched_fn_calls;
struct sched_call;
struct sched_stats;

/* A function: a tree node with a spec. */
struct sched_function {
	struct sched_obj obj;	/* first, so a pointer converts both ways */
	struct sched_spec spec; /* the accepted spec */
	uint64_t revision;	/* bumped by every accepted change */
	uint64_t run_revision;	/* of the last change that needs running
				 * instances restarted */
	char *error;		/* owned: last error line, NULL if none */
	struct sched_fn_calls *calls; /* owned: calls, stats; or NULL */
	long long restarts_gone;      /* restarts of instances since removed */
	/* quota.c: the memory (MB) and instances counted in its tenant's
	 * use, when quota_counted */
	long long quota_claim[2];
	int quota_counted;
};

/* The id of the root object, and of the pool of workers. */
#define SCHED_ROOT_ID 1
#define SCHED_POOL_ID 2

/* States of an instance (spec 4). */
enum sched_instance_state {
	SCHED_PENDING,
	SCHED_STARTING,
	SCHED_RUNNING,
	SCHED_BACKOFF,
	SCHED_STOPPING,
	SCHED_STOPPED,
	SCHED_FAILED,
	SCHED_LOST
};

struct sched_worker;

/* An instance of a function: what is wanted (desired_run, persisted with
 * its assignment) and what its worker last reported. */
struct sched_instance {
	struct sched_obj obj; /* name "N"; parent: the function */
	int n;
	int desired_run;	     /* 1: start, 0: stop (persisted) */
	struct sched_worker *worker; /* assignment, or NULL (persisted) */
	char *log_worker; /* the worker it last ran on, which keeps its log
			   * once it is unassigned (stopped), owned, or NULL */
	int reserved_mb;  /* memory taken from the worker */
	enum sched_instance_state state;
	int pid;		/* 0: none */
	uint64_t revision;	/* the revision it runs or last ran */
	uint64_t sent_revision; /* revision of the last start sent */
	int sent_stop;		/* a stop was sent and not yet done */
	int64_t started_ms;
	long long restarts_total;  /* restarts seen by its workers */
	long long worker_restarts; /* the worker's count at its last report */
	char last_exit[32];	   /* "status:1", "signal:9", "oom", "" */
	char reason[256];	   /* why it is in its state */
	char *exits;		   /* owned: status lines of recent exits */
	double cpu_seconds;
	long long rss_bytes;
	struct sched_call *calls;  /* the calls it serves (a list), or NULL */
	int busy;		   /* how many: its busy slots (slots.h) */
	int retiring;		   /* removed once its calls have ended */
	int64_t idle_mono;	   /* monotonic ms it became idle */
	int on_demand;		   /* launched for waiting calls */
	struct sched_stats *stats; /* owned: its calls, or NULL */
	uint64_t epoch; /* of its current or last assignment (persisted) */
	/* direct.c: the endpoint its worker reported and the connections
	 * of the calls the controller sends it itself, owned, or NULL */
	struct sched_direct *direct;
	long long direct_calls; /* calls sent to it directly, in all */
};

/* A worker, local (started by the pool) or started by hand. */
struct sched_worker {
	struct sched_obj obj; /* name: the worker id; parent: the pool */
	int memory_mb;
	char *tags;	  /* owned: space separated */
	char *namespaces; /* owned: space separated tenant/ns */
	int local;	  /* started by the pool */
	int pid;
	int online;		   /* registered and connected */
	int leaving;		   /* told to shut down */
	int draining;		   /* echo drain > state (persisted) */
	int revoked;		   /* echo revoke > state (persisted) */
	int place_index;	   /* scratch of placement */
	int cgroups;		   /* enforces memory with cgroups */
	int64_t since_ms;	   /* of its current state */
	int64_t heartbeat_mono;	   /* last heartbeat, monotonic ms */
	int used_mb;		   /* memory of the instances assigned */
	struct rt_map assignments; /* "t:ns:fn:N" -> struct sched_instance */
	void *conn;		   /* private to the controller */
	double rtt_ms;		   /* smoothed ping round trip; < 0: none */
	long long fenced;	   /* reports the epoch fence dropped */
	int fencing;   /* stopping stale copies: takes no new work (fence.c) */
	void *fence;   /* the wait for those stops (fence.c), or NULL */
	int pongs;     /* it answers `ping` (said so in `register`) */
	int direct_ok; /* on this machine, in our network and mount
			* namespaces: the controller may call its http
			* instances itself (direct.c) */
	/* A cluster's follower: the leader's word for it, as told in etcd
	 * ("": none told, or not a follower), its pid and since when. */
	char view[16];
	int view_pid;
	int64_t view_since_ms;
	/* A cluster's leader: the word and pid it last told the others. */
	char told[16];
	int told_pid;
};

/* Opens the controller state in `datadir` (created if missing): the store
 * `fnfs.db`, loaded into memory. Returns 0 or -errno, with a message in
 * the log. */
int sched_open(struct sched **out, const char *datadir);

struct uv_loop_s;

/* sched_open with the store `c` describes (store_config_check; its path
 * is ignored): alone, the data directory's; shared, the tenants,
 * namespaces and functions of its cluster, read now (running `loop`) and
 * followed on `loop`, while what the controller keeps alone stays in
 * `datadir`. Returns 0 or -errno as store_open_config. */
int sched_open_config(struct sched **out, const char *datadir,
		      struct uv_loop_s *loop, const struct store_config *c);

/* A cluster's controller (sched_open_config): the newest etcd revision
 * its tree has seen, and whether that tree may be behind etcd (the watch
 * is down or the quorum probe fails). Returns 0, or -ENOENT on SQLite
 * alone. (sched/cluster/cluster.c) */
int sched_cluster_state(struct sched *s, int64_t *revision, int *stale);

struct presence_callbacks;

/* Sets the role and state callbacks of `cb` (sched/cluster/etcd/presence.h) to
 * report `s` (sched_role, sched_cluster_state), with `s` as their arg;
 * the rest of `cb` is left alone. (sched/cluster/cluster.c) */
void sched_presence_callbacks(struct sched *s, struct presence_callbacks *cb);

/* Frees everything. Committed state is already on disk. */
void sched_close(struct sched *s);

/* ---- a cluster (sched/cluster/): what the daemon and `fnfs cluster`
 * call. Alone (a store that is not shared), each does nothing. */

struct sched_options;

/* After sched_start: a cluster's controller joins it (its key, which
 * `fnfs cluster status` lists; running `loop` until the store answered)
 * and sets up forwarding to the leader, with the --name, --listen, lease
 * and --insecure of `opt`. Returns 0, or -errno having logged why
 * (-EEXIST: the name is taken). (join.c) */
int sched_cluster_join(struct sched *s, struct uv_loop_s *loop,
		       const struct store_config *c,
		       const struct sched_options *opt);

/* At a stop: leaves the cluster (its key goes at once, on later turns)
 * and fails what is forwarded. (join.c) */
void sched_cluster_leave(struct sched *s);

/* After a start that failed: drops the cluster's key at once, without
 * telling the store (NULL-safe). (join.c) */
void sched_cluster_forget(struct sched *s);

/* `fnfs cluster status`: reads who leads the cluster of shared store `c`,
 * its controllers and workers, and renders them into `out` (as text, or
 * JSON with `json`). Returns 0, -EINVAL (`c` is not a shared store), or
 * -errno with the reason in `why`. (etcd/cluster_status.c) */
int sched_cluster_status(const struct store_config *c, int json,
			 struct rt_buf *out, struct rt_buf *why);

/* Returns the pool object, whose children are the workers. */
struct sched_obj *sched_pool(struct sched *s);

/* Returns the object with `id`, or NULL if there is none (any more). */
struct sched_obj *sched_find(struct sched *s, uint64_t id);

/* Returns the child `name` of `parent`, or NULL. */
struct sched_obj *sched_child(struct sched_obj *parent, const char *name);

/* Appends the path of `o` below tenants/ ("acme/prod/fn") to `out`. */
int sched_obj_path(const struct sched_obj *o, struct rt_buf *out);

/* Creates the child `name` of `parent` (a tenant below the root, a
 * namespace below a tenant, a function below a namespace), stores it and
 * journals it. Returns 0 and the object in `*out`, or -EINVAL (bad name),
 * -EEXIST, -EPERM (a function has no children of this kind) or -EIO. A
 * rejection is journalled with its reason. `who` asks (NULL: fnfs); the
 * permission to ask was checked by fs/. A new tenant belongs to root:root
 * (mode SCHED_TENANT_MODE) when root (or NULL) creates it, else to its
 * creator's uid and gid (a mount by a user other than root). */
int sched_create(struct sched *s, struct sched_obj *parent, const char *name,
		 const struct sched_caller *who, struct sched_obj **out);

/* Removes the child `name` of `parent`. A tenant or namespace must be
 * empty. Returns 0, -ENOENT, -ENOTEMPTY or -EIO. */
int sched_remove(struct sched *s, struct sched_obj *parent, const char *name,
		 const struct sched_caller *who);

/* Checks the value `buf` (`len` bytes) for attribute `a` of `fn` as
 * sched_function_write would, and applies nothing. Returns 0 or
 * -EINVAL/-EACCES; a refusal is recorded in `error` and the journal.
 * `who` writes (NULL: fnfs itself, root's rights): fs/ checked the file's
 * mode; an attribute only root may write is refused here to others. */
int sched_function_check(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who);

/* Applies the value `buf` (`len` bytes) to attribute `a` of `fn`: parse,
 * check, store, bump the revision, journal. A write that changes nothing
 * succeeds without a new revision. A value over SCHED_VALUE_MAX bytes is
 * -EINVAL. Returns 0 or -EINVAL/-EACCES, or -EIO/-ENOSPC (the store
 * failed, or the stored form would not read back as the spec); on
 * error nothing changes but `fn->error` and the journal, which say why.
 * `who` as for sched_function_check. */
int sched_function_write(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who);

/* Appends the file text of attribute `a` of `fn` to `out`. */
int sched_function_render(const struct sched_function *fn, enum sched_attr a,
			  struct rt_buf *out);

/* ================================================== files of objects */

/* Files of functions, instances, workers and the pool beyond the spec
 * attributes. */
enum sched_file {
	SCHED_FN_STATE,
	SCHED_FN_RESTART,
	SCHED_FN_STATUS,
	SCHED_FN_LOG,
	SCHED_INST_STATE,
	SCHED_INST_RESTART,
	SCHED_INST_STATUS,
	SCHED_INST_STATS,
	SCHED_INST_PID,
	SCHED_INST_LOG,
	SCHED_WORKER_STATE,
	SCHED_WORKER_MEMORY,
	SCHED_WORKER_FREE,
	SCHED_WORKER_TAGS,
	SCHED_WORKER_NAMESPACES,
	SCHED_WORKER_PID,
	SCHED_WORKER_STATUS,
	SCHED_WORKER_STATS,
	SCHED_POOL_SIZE,
	SCHED_POOL_STRATEGY,
	SCHED_POOL_REBALANCE,
	SCHED_POOL_STATUS,
	SCHED_FN_STATS,
	SCHED_ROOT_STATUS,
	SCHED_ROOT_STATS,
	SCHED_ROOT_METRICS,
	SCHED_FILE_COUNT
};

/* A write or read that completes later; owned by sched. */
struct sched_wait;

/* Called once when a waiting write or read completes: `err` is 0 or a
 * positive errno. Not called after sched_wait_cancel. */
typedef void (*sched_done_fn)(void *arg, int err);

/* sched_file_write and sched_file_read return this when `done` will be
 * called later. */
#define SCHED_LATER 1

/* Applies a write to file `f` of `o`. Returns 0 when done, SCHED_LATER
 * when the change waits for processes (a restart returns once the new
 * process is spawned, a stop once it has exited; bounded) and `done` will
 * be called, or -EINVAL/-EIO/... with the reason journalled. `*wait` is
 * set for sched_wait_cancel. */
int sched_file_write(struct sched *s, struct sched_obj *o, enum sched_file f,
		     const char *buf, size_t len, sched_done_fn done, void *arg,
		     struct sched_wait **wait);

/* Renders file `f` of `o` into `out`. Returns 0 when `out` is complete, or
 * SCHED_LATER when the content comes from workers: `done` is called once
 * `out` is complete (it must stay valid until then or the cancel). */
int sched_file_read(struct sched *s, struct sched_obj *o, enum sched_file f,
		    struct rt_buf *out, sched_done_fn done, void *arg,
		    struct sched_wait **wait);

/* Gives up waiting: `done` will not be called. */
void sched_wait_cancel(struct sched *s, struct sched_wait *w);

/* A rendering of a large file under way. The root's status and metrics
 * grow with the functions (metrics of 100,000 functions is 145 MB), so
 * they are rendered as they are read: a cursor walks the functions in
 * order of path, and each step renders whole lines of the next one as
 * it is at that moment. Its memory is the list of functions taken at
 * the open, 8 bytes a function. */
struct sched_cursor;

/* Starts a rendering of file `f` (SCHED_ROOT_STATUS, SCHED_ROOT_STATS
 * or SCHED_ROOT_METRICS) at its beginning, for caller `who` (NULL: root):
 * the functions that exist now, in the tenants `who` may read now
 * (sched_caller_may with SCHED_MAY_READ on the tenant), are the ones it
 * will show; root sees every tenant, and its stats count every call.
 * `who` is not kept. Returns 0 with `*out` set, -EINVAL for another
 * file, or -ENOMEM. */
int sched_cursor_open(struct sched *s, enum sched_file f,
		      const struct sched_caller *who,
		      struct sched_cursor **out);

/* Appends the next whole lines of the rendering to `out`: at least one
 * line, then more until `want` bytes were added; nothing once at the
 * end. A function removed since the open is skipped; one created since
 * is not shown. Returns 0, or -ENOMEM (`out` then holds no part of the
 * failed step). */
int sched_cursor_next(struct sched *s, struct sched_cursor *c,
		      struct rt_buf *out, size_t want);

/* Frees a cursor (NULL is fine). */
void sched_cursor_close(struct sched_cursor *c);

/* The size of file `f` (as sched_cursor_open, for `who`) rendered now,
 * never held whole: status is measured in one pass over its cells,
 * metrics rendered a piece at a time. Returns 0 or -EINVAL/-ENOMEM. */
int sched_cursor_size(struct sched *s, enum sched_file f,
		      const struct sched_caller *who, size_t *size);

/* Appends the target of the symlink that instance `in` has in its worker's
 * assignments/ ("../../../tenants/t/ns/fn/instances/N"), or of its own
 * `worker` link when `from_instance` is set. Returns -ENOENT without a
 * worker. */
int sched_link_target(const struct sched_instance *in, int from_instance,
		      struct rt_buf *out);

/* The name of an instance in assignments/: "tenant:ns:fn:N". */
int sched_assignment_name(const struct sched_instance *in, struct rt_buf *out);

/* ============================================================ the cluster */

/* Options of the controller's cluster side. */
struct sched_options {
	int workers;	   /* local pool size; -1: the stored or default one */
	int worker_memory; /* MB per local worker; 0: a fair share */
	const char *self;  /* the fnfs binary, for local workers */
	const char *log;   /* where local workers log; NULL: our stderr */
	int heartbeat_timeout; /* ms of silence that make a worker offline */
	int starts_per_minute; /* local worker starts allowed per minute */
	uint32_t run_as_uid;   /* root-owned tenants' functions run as */
	uint32_t run_as_gid;   /* (--run-as; 0 only with
				* --allow-root-functions) */
	const char *listen;    /* --listen IP:PORT for workers over TCP, or
				  NULL (then only DATA/ctl.sock) */
	int insecure;	       /* --insecure: plain TCP admitted on it too */
	const char *name;      /* a cluster's controller: its --name, or
				  NULL (the host's name) */
	int leader_ttl;	       /* a cluster's leader lease, s (0: 5) */
	int no_direct_calls;   /* --no-direct-calls: every call goes
				  through its worker (direct.h) */
};

/* This controller's role: "single" (no shared store), "leader",
 * "follower", "campaigning" (no leader known, or catching up before it
 * leads), "lost" (etcd cannot be reached) or "stopped". */
const char *sched_role(const struct sched *s);

/* The leader of a cluster as this controller knows it: its --name and
 * its --listen IP:PORT (NULL when it has none), valid until the next
 * loop turn. Returns 0, or -ENOENT when no leader is known. */
int sched_leader(const struct sched *s, const char **name, const char **listen);

/* Whether DATA/ca holds what --listen needs (`fnfs ca init`). Returns 0,
 * or -ENOENT with what is missing in `why`. */
int sched_listen_check(const char *datadir, struct rt_buf *why);

struct uv_loop_s;

/* Starts serving workers on DATA/ctl.sock, keeps the local pool and
 * reconciles. Returns 0 or -errno. */
int sched_start(struct sched *s, struct uv_loop_s *loop,
		const struct sched_options *opt);

/* Stops every instance and local worker, then calls `done` (bounded: after
 * the stop grace period it calls it anyway). */
void sched_shutdown(struct sched *s, void (*done)(void *arg), void *arg);

/* ================================================================= calls */

/* The largest request a call may carry, bytes. */
#define SCHED_CALL_MAX (1u << 20)
/* Calls a function's queue holds; one more gets EAGAIN. */
#define SCHED_QUEUE_MAX 1000

/* Called once when a call ends: `err` is 0 with the response in `body`,
 * or a positive errno (ETIMEDOUT, EREMOTEIO, ECONNRESET, EAGAIN, EIO,
 * ENOENT). Not called after sched_call_detach. */
typedef void (*sched_call_fn)(void *arg, int err, const char *body, size_t len);

/* Checks a request being written to the invoke file of `fn` (a prefix of
 * it when `partial`). Returns 0, -EOPNOTSUPP (a daemon, or no command),
 * -EINVAL (line: a newline inside; json: not UTF-8) or -EFBIG; a refusal
 * is recorded in `error` and the journal. */
int sched_call_check(struct sched *s, struct sched_function *fn,
		     const char *body, size_t len, int partial);

/* Starts a call of `fn` with the request `body`: it goes to an idle
 * instance, or waits in the function's queue (instances are launched as
 * spec 7 says). Returns 0 with `*out` set, `done` being called later
 * (with `done` NULL the call is asynchronous: counted, not returned), or
 * -errno when it cannot start (EOPNOTSUPP, EINVAL, EFBIG, or EAGAIN: the
 * queue is full, counted as a system error). */
int sched_call_start(struct sched *s, struct sched_function *fn,
		     const char *body, size_t len, sched_call_fn done,
		     void *arg, struct sched_call **out);

/* The caller no longer waits: `done` will not be called; the call goes on
 * and is counted. */
void sched_call_detach(struct sched *s, struct sched_call *c);

/* ================================================================ events */

/* The size of the journal so far: the absolute offset one past its end. */
uint64_t sched_events_end(const struct sched *s);

/* Points `*p` at journal bytes starting at absolute offset `off` and
 * returns how many are there (0 at the end). Bytes before the oldest kept
 * event are gone; `*first` is set to the offset of the oldest kept byte so
 * a reader that asked for less can skip ahead. */
size_t sched_events_at(const struct sched *s, uint64_t off, const char **p,
		       uint64_t *first);

/* Time of the last event, epoch ms (the file's mtime). */
int64_t sched_events_mtime(const struct sched *s);

/* The same for the journal of tenant `t`: its own lines (those about it
 * and what it holds), byte for byte as in the whole journal, at offsets
 * of its own that never change. `sched_tenant_events_at` copies up to
 * `size` bytes at `off` into `buf` and returns how many (0 at the end);
 * `*first` as above. `t` must be a tenant. */
uint64_t sched_tenant_events_end(const struct sched_obj *t);
size_t sched_tenant_events_at(const struct sched *s, const struct sched_obj *t,
			      uint64_t off, char *buf, size_t size,
			      uint64_t *first);
int64_t sched_tenant_events_mtime(const struct sched_obj *t);

/* Appends one event: `kind` ("function.created"), `object` (its path) and
 * preformatted " key=value" pairs `kvs` (may be NULL). */
void sched_event(struct sched *s, const char *kind, const char *object,
		 const char *kvs);

/* ---- a user's writes to the tree (sched/face/write.c): mkdir, rmdir,
 * chown/chmod of a tenant, an attribute's value, whichever store stands
 * behind them */

enum sched_op_kind {
	SCHED_OP_CREATE, /* mkdir: child `name` of object `id` */
	SCHED_OP_REMOVE, /* rmdir: child `name` of object `id` */
	SCHED_OP_CHOWN,	 /* tenant `id`: uid, gid, mode (< 0: kept) */
	SCHED_OP_ATTR	 /* function `id`: attribute `attr` := value */
};

struct sched_op {
	enum sched_op_kind kind;
	uint64_t id; /* sched_obj id: the parent, tenant or function */
	const char *name;
	const struct sched_caller *who; /* NULL: fnfs itself */
	int64_t uid, gid, mode;
	enum sched_attr attr;
	const char *value;
	size_t len;
};

/* Applies `op` (copied: nothing of it need outlive the call). Returns 0
 * once applied (a create's object is then the child `name` of `id`), a
 * -errno as sched_create, sched_remove, sched_tenant_chown and
 * sched_function_write give (-ENOENT when object `id` is gone), or
 * SCHED_LATER: `done` is called once, with 0 when the change is applied
 * on this controller, or with the positive errno; -EAGAIN when it lost
 * SCHED_OP_TRIES (write.h) races in a row or was still losing them (or the
 * store still busy) after SCHED_OP_DEADLINE_MS, -EIO when the store cannot be
 * reached
 * (`done` may be NULL: nobody waits). */
int sched_op_run(struct sched *s, const struct sched_op *op, sched_done_fn done,
		 void *arg);

/* ---- a value that the writes of one open of an attribute file have only
 * begun (sched/model/partial.c): what fs/ asks before it refuses a
 * write(2), so that a value split across several writes is judged whole */

/* Whether `v` (`len` bytes), what one open of attribute `a` has written
 * so far, may be the start of a longer value rather than all of it: it
 * does not end in a newline, or, for config, its JSON is not closed yet
 * (nothing but blanks, a string or an open brace or bracket at the end).
 * Pure. */
int sched_value_unfinished(enum sched_attr a, const char *v, size_t len);

/* Whether `v` would be a good value of attribute `a` of `fn` as it is
 * now: parsed and checked as sched_function_check does, but without the
 * caller's rights or the quotas, and recording nothing. Returns 0 or
 * -EINVAL/-ENOMEM. */
int sched_value_probe(const struct sched_function *fn, enum sched_attr a,
		      const char *v, size_t len);

/* ---- per-tenant quotas (sched/model/quota.h has the rest) */

/* What a quota limits. */
enum sched_quota_res {
	SCHED_QUOTA_MEMORY,	   /* MB: memory x instance ceiling, summed */
	SCHED_QUOTA_INSTANCES,	   /* instance ceilings, summed */
	SCHED_QUOTA_FUNCTIONS,	   /* functions */
	SCHED_QUOTA_CODE_BYTES,	   /* bytes of every function's code/ */
	SCHED_QUOTA_REQUEST_BYTES, /* bytes of requests held in open invoke
				    * files */
	SCHED_QUOTA_COUNT
};

/* Appends the text of tenant `t`'s quota file `r` (its limit now, the
 * default when none is set), or with r == SCHED_QUOTA_COUNT its `usage`:
 * one line per resource, "NAME USED LIMIT". Returns 0 or -ENOMEM. */
int sched_quota_render(struct sched *s, struct sched_obj *t, int r,
		       struct rt_buf *out);

/* Sets tenant `t`'s limit `r` to what `buf` says, as `who` asks: root
 * only (-EPERM), a bad value -EINVAL (logged with the reason). Stored
 * durably, then journalled (tenant.quota). A limit below the use is
 * taken: what holds more keeps it, and may only shrink. Returns 0,
 * -EPERM, -EINVAL or -EIO. */
int sched_quota_write(struct sched *s, struct sched_obj *t,
		      enum sched_quota_res r, const char *buf, size_t len,
		      const struct sched_caller *who);

/* Takes `n` more bytes of a request held in an open invoke file of `fn`:
 * -EDQUOT past its tenant's request_bytes, -EAGAIN past
 * SCHED_REQUEST_BYTES_MAX (the refusal in `fn`'s error, journalled as a
 * refused call), and then nothing is taken. Returns 0 or that. */
int sched_quota_hold(struct sched *s, struct sched_function *fn, size_t n);

/* Gives back `n` bytes taken by sched_quota_hold for a function of the
 * tenant with id `tenant_id` (gone: only the daemon's count moves). */
void sched_quota_release(struct sched *s, uint64_t tenant_id, size_t n);

/* A follower of a cluster had its write of `buf` to tenant `t`'s limit
 * `r` applied by the leader: keeps that limit until the shared store
 * brings the leader's record, so that this mount reads, and checks, what
 * it wrote at once. A value the leader took always parses here too.
 * Returns 0, -ENOENT or -EINVAL. */
int sched_quota_keep(struct sched *s, struct sched_obj *t,
		     enum sched_quota_res r, const char *buf, size_t len);

/* ---- forwarding to the leader of a cluster (sched/cluster/forward.h
 * has the rest): what a follower forwards, and how the leader serves it */

/* A forwarded request under way on a follower; owned by sched. */
struct sched_fwd;

/* Called once when a forwarded request ends: `err` 0 or a positive
 * errno, the response in `body` (a call's). Not called after
 * sched_fwd_cancel. */
typedef void (*sched_fwd_fn)(void *arg, int err, const char *body, size_t len);

/* Whether `s` forwards what only the leader does: it is a controller of
 * a cluster and not its leader. */
int sched_fwd_active(const struct sched *s);

/* Forwards a write of `len` bytes of `buf` to the file at `path` (from
 * the mount's root: "tenants/t/ns/fn/restart") as `who`. Returns
 * SCHED_LATER with `*out` set and `done` called later, or -EAGAIN (no
 * leader known, or it cannot be reached; the reason is in the function's
 * `error` and the log) or -ENOMEM. A lost link or a change of leader
 * ends it with EAGAIN, and it is bounded by the leader's own bound plus
 * a margin (then ETIMEDOUT). On failure the function the path is in gets
 * the leader's `error` line. */
int sched_fwd_write(struct sched *s, const char *path, const char *buf,
		    size_t len, const struct sched_caller *who,
		    sched_fwd_fn done, void *arg, struct sched_fwd **out);

/* Forwards a call of the function whose invoke file is at `path` with
 * request `body` as `who`, as sched_fwd_write. With `done` NULL the call
 * is asynchronous: the leader answers once it is started, and nobody
 * waits (`*out` may then be NULL). Bounded by twice the function's
 * timeout plus a margin. */
int sched_fwd_call(struct sched *s, const char *path, const char *body,
		   size_t len, const struct sched_caller *who,
		   sched_fwd_fn done, void *arg, struct sched_fwd **out);

/* Forwards a read of the file at `path`, a function's or an instance's
 * `log` (what the leader asks of the workers it holds), as `who`, as
 * sched_fwd_write: `done` gets the content in `body`. Bounded by the
 * leader's wait for its workers plus a margin. */
int sched_fwd_read(struct sched *s, const char *path,
		   const struct sched_caller *who, sched_fwd_fn done, void *arg,
		   struct sched_fwd **out);

/* The caller no longer waits: `done` will not be called. */
void sched_fwd_cancel(struct sched *s, struct sched_fwd *f);

/* A request from a follower, until answered; owned by sched. */
struct sched_fwd_in;

/* What the leader does with forwarded requests (fs/ runs them as local
 * ones): each must end in exactly one sched_fwd_answer. */
struct sched_fwd_serve_ops {
	void (*write)(void *arg, struct sched_fwd_in *in, const char *path,
		      const char *buf, size_t len,
		      const struct sched_caller *who);
	/* `async`: answer once started; nobody waits for the result. */
	void (*call)(void *arg, struct sched_fwd_in *in, const char *path,
		     const char *body, size_t len,
		     const struct sched_caller *who, int async);
	/* A read (sched_fwd_read): answered with the content. */
	void (*read)(void *arg, struct sched_fwd_in *in, const char *path,
		     const struct sched_caller *who);
};

/* Serves followers' requests with `ops` (`arg` is theirs); without,
 * a peer controller is refused. */
void sched_fwd_serve(struct sched *s, const struct sched_fwd_serve_ops *ops,
		     void *arg);

/* Answers `in` (then freed): `err` 0 or a positive errno, `error` the
 * function's error line (or NULL), `body` the response. Dropped when the
 * follower is gone. */
void sched_fwd_answer(struct sched *s, struct sched_fwd_in *in, int err,
		      const char *error, const char *body, size_t len);

/* code/ of functions: code.h. */
#include "code/code.h"

#endif

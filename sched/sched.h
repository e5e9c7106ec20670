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

#include "../runtime/rt.h"

/* ================================================================= specs */

enum sched_mode { SCHED_MODE_DAEMON, SCHED_MODE_HOT, SCHED_MODE_COLD };
enum sched_format { SCHED_FORMAT_LINE, SCHED_FORMAT_JSON };
enum sched_tags_policy { SCHED_TAGS_STRICT, SCHED_TAGS_LOOSE };
enum sched_restart_policy {
	SCHED_RESTART_ALWAYS,
	SCHED_RESTART_ON_FAILURE,
	SCHED_RESTART_NEVER
};

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
	SCHED_ATTR_REVISION,
	SCHED_ATTR_ERROR,
	SCHED_ATTR_COUNT
};

/* Returns the file name of an attribute ("max_instances"). */
const char *sched_attr_name(enum sched_attr a);

/* Whether an attribute file can be written. */
int sched_attr_writable(enum sched_attr a);

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

/* Parses the text written to the file of attribute `a` (one value, an
 * optional single trailing newline) into `s`. Pure. Returns 0, or -EINVAL
 * with the reason in `why` and `s` unchanged. SCHED_ATTR_CONFIG takes JSON
 * and replaces the whole spec. */
int sched_spec_parse(struct sched_spec *s, enum sched_attr a, const char *buf,
		     size_t len, struct rt_buf *why);

/* Parses a whole spec from a JSON object into `s` (uninitialised): missing
 * keys take defaults, unknown keys or bad values are -EINVAL with the reason
 * in `why`, and `s` is then left at the defaults. Pure. */
int sched_spec_from_json(struct sched_spec *s, const char *buf, size_t len,
			 struct rt_buf *why);

/* Checks rules that span attributes. Returns 0 or -EINVAL with `why`. */
int sched_spec_check(const struct sched_spec *s, struct rt_buf *why);

/* Appends the file text of attribute `a` (not revision or error) to `out`:
 * one value and a newline, env as KEY=VALUE lines, config as pretty JSON.
 * Returns 0 or -ENOMEM. */
int sched_spec_render(const struct sched_spec *s, enum sched_attr a,
		      struct rt_buf *out);

/* Appends the compact JSON form used by the store, which keeps whether
 * max_instances follows parallelism. Returns 0 or -ENOMEM. */
int sched_spec_dump(const struct sched_spec *s, struct rt_buf *out);

/* Appends to `out` the comma-separated names of the attributes that differ
 * between `a` and `b` ("memory,tags"). Returns 0 or -ENOMEM. */
int sched_spec_diff(const struct sched_spec *a, const struct sched_spec *b,
		    struct rt_buf *out);

/* ================================================================= model */

enum sched_obj_type {
	SCHED_ROOT,
	SCHED_TENANT,
	SCHED_NAMESPACE,
	SCHED_FUNCTION
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

/* A function: a tree node with a spec. */
struct sched_function {
	struct sched_obj obj;	/* first, so a pointer converts both ways */
	struct sched_spec spec; /* the accepted spec */
	uint64_t revision;	/* bumped by every accepted change */
	char *error;		/* owned: last error line, NULL if none */
};

/* The id of the root object. */
#define SCHED_ROOT_ID 1

struct sched;

/* Opens the controller state in `datadir` (created if missing): the store
 * `fnfs.db`, loaded into memory. Returns 0 or -errno, with a message in
 * the log. */
int sched_open(struct sched **out, const char *datadir);

/* Frees everything. Committed state is already on disk. */
void sched_close(struct sched *s);

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
 * rejection is journalled with its reason. */
int sched_create(struct sched *s, struct sched_obj *parent, const char *name,
		 struct sched_obj **out);

/* Removes the child `name` of `parent`. A tenant or namespace must be
 * empty. Returns 0, -ENOENT, -ENOTEMPTY or -EIO. */
int sched_remove(struct sched *s, struct sched_obj *parent, const char *name);

/* Applies the value `buf` (`len` bytes) to attribute `a` of `fn`: parse,
 * check, store, bump the revision, journal. A write that changes nothing
 * succeeds without a new revision. Returns 0 or -EINVAL/-EACCES/-EIO; on
 * error nothing changes but `fn->error` and the journal, which say why. */
int sched_function_write(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len);

/* Appends the file text of attribute `a` of `fn` to `out`. */
int sched_function_render(const struct sched_function *fn, enum sched_attr a,
			  struct rt_buf *out);

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

/* Appends one event: `kind` ("function.created"), `object` (its path) and
 * preformatted " key=value" pairs `kvs` (may be NULL). */
void sched_event(struct sched *s, const char *kind, const char *object,
		 const char *kvs);

#endif

/*
 * code/code.h - what the files of the FUSE side of code/ share (code.c,
 * change.c, file.c, dir.c): the per-open state of a file, the wait of a
 * request for sched on a cluster, and the helpers one calls in another.
 * Private to fs/code/. The handlers fs/ops*.c call are in ../fs.h.
 */
#ifndef FNFS_FS_CODE_H
#define FNFS_FS_CODE_H

#include "../fs.h"

#define CODE_TIMEOUT 1.0 /* s the kernel may cache names and attributes */

/* Per-open state of a file of code/. */
struct code_handle {
	uint64_t id; /* the node's, to notice it is gone */
	int write;   /* opened for writing: paired with close_write */
	int append;  /* O_APPEND: writes go to the end */
};

/* What a request that waits for sched (a cluster) answers. */
enum wait_kind {
	WAIT_ENTRY,   /* mkdir, mknod: the entry of `name` in `dir_id` */
	WAIT_CREATE,  /* create: that entry, opened for writing */
	WAIT_ERR,     /* unlink, rmdir, rename, flush: the error alone */
	WAIT_READ,    /* read: `size` bytes at `off` of node `id` */
	WAIT_OPEN,    /* open of node `id` with `fi`, its content here */
	WAIT_SETATTR, /* setattr of `ino`: the steps left in `to_set` */
};

struct code_wait {
	fuse_req_t req;
	enum wait_kind kind;
	uint64_t dir_id;	  /* ENTRY, CREATE */
	char *name;		  /* ENTRY, CREATE; owned */
	uint64_t id;		  /* READ, OPEN */
	size_t size;		  /* READ */
	off_t off;		  /* READ */
	struct fuse_file_info fi; /* CREATE, OPEN */
	fuse_ino_t ino;		  /* SETATTR */
	struct stat attr;	  /* SETATTR */
	int to_set;		  /* SETATTR: what is left to do */
	int fh_write; /* SETATTR: through a descriptor that writes */
	int fetched;  /* SETATTR: the content is here */
};

static inline struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* ---- code.c */

/* A wait of `kind` for `req` (calloc'd), or NULL. */
struct code_wait *code_wait_new(fuse_req_t req, enum wait_kind kind);

/* Frees `w` and its name; NULL is fine. */
void code_wait_free(struct code_wait *w);

/* The callback of sched for a struct code_wait `arg`: answers its
 * request, once, and frees it (a setattr may wait again instead). */
void code_on_wait(void *arg, int err);

/* The code node of `n` (code/ itself for FS_CODE_DIR), or NULL. */
struct sched_code_node *code_of(struct fs *fs, const struct fs_node *n);

/* Resolves `ino` to `*n` and its code node `*c`. Returns 0 or
 * -ENOENT/-ENOMEM. */
int code_resolve(struct fs *fs, fuse_ino_t ino, struct fs_node *n,
		 struct sched_code_node **c);

/* The inode number of code node `c`. */
fuse_ino_t code_node_ino(const struct sched_code_node *c);

/* Fills the entry `e` of code node `c`. */
void code_entry_of(struct fs *fs, struct sched_code_node *c,
		   struct fuse_entry_param *e);

/* Replies to `req` with the entry of code node `c`. */
void code_reply_entry(fuse_req_t req, struct sched_code_node *c);

/* Whether the sender of `req` may change the code of the function `n`
 * belongs to. */
int code_may_change(fuse_req_t req, const struct fs_node *n);

/* ---- change.c */

/* Carries out the steps of setattr `w` still to do. Returns 0,
 * SCHED_CODE_LATER or -errno. */
int code_setattr_steps(struct fs *fs, struct code_wait *w);

/* Answers setattr `w` with the node's attributes now, or `rc`. */
void code_setattr_reply(struct fs *fs, struct code_wait *w, int rc);

/* ---- file.c */

/* Opens new file `c` for writing and answers create `req`. */
void code_create_open(fuse_req_t req, struct sched_code_node *c,
		      struct fuse_file_info *fi);

/* Opens file `c` and answers open `req`. */
void code_open_now(fuse_req_t req, struct sched_code_node *c,
		   struct fuse_file_info *fi);

/* Reads `size` bytes at `off` of node `id` and answers `req`. */
void code_read_now(fuse_req_t req, uint64_t id, size_t size, off_t off);

#endif

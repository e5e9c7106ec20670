/*
 * minfs.c - the smallest FUSE server that serves files the way fnfs does,
 * as the reference of the benchmarks: scripts/bench/fs-latency compares
 * fnfs's attribute files with its plain file, scripts/bench/calls the
 * FUSE part of a call with its transaction file.
 *
 * Same model as fnfs: the low-level API, one libuv loop thread polling the
 * session fd (non-blocking, no splice), the same mount options and the
 * same entry and attribute timeouts, and files opened with direct_io and a
 * per-open handle on the heap. It serves one file, at the depth of:
 *
 *   minfs MOUNTPOINT          a function attribute in fnfs:
 *                             tenants/t/ns/fn/memory, which reads "128\n"
 *                             (rendered into the handle at the first read)
 *   minfs --echo MOUNTPOINT   a function's invoke file in fnfs:
 *                             tenants/acme/prod/upper/invoke, nonseekable,
 *                             which works as fnfs's does, minus the
 *                             function: writes add up to a request; the
 *                             first read after them answers with the
 *                             request with a-z upper-cased, done in place at
 *                             once; later reads return the rest of it, then
 *                             end of file; a write after that begins a new
 *                             request.
 *
 * Either serves until unmounted or SIGTERM/SIGINT/SIGHUP.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <uv.h>

#define ENTRY_TIMEOUT	    1.0
#define ATTR_TIMEOUT	    1.0
#define REQUESTS_PER_WAKEUP 64
#define REQUEST_MAX	    (1u << 20)

static const char content[] = "128\n";

/* A tree: inode i (1-based) is nodes[i - 1]; each directory has exactly
 * one child, the next node. */
struct node {
	const char *name;
	fuse_ino_t parent;
	mode_t mode;
};

#define NODE_COUNT 6

static const struct node attr_nodes[NODE_COUNT] = {
	{ "", 0, S_IFDIR | 0755 },	  /* 1: the root */
	{ "tenants", 1, S_IFDIR | 0755 }, /* 2 */
	{ "t", 2, S_IFDIR | 0755 },	  /* 3 */
	{ "ns", 3, S_IFDIR | 0755 },	  /* 4 */
	{ "fn", 4, S_IFDIR | 0755 },	  /* 5 */
	{ "memory", 5, S_IFREG | 0644 },  /* 6 */
};

static const struct node echo_nodes[NODE_COUNT] = {
	{ "", 0, S_IFDIR | 0755 },	  /* 1: the root */
	{ "tenants", 1, S_IFDIR | 0755 }, /* 2 */
	{ "acme", 2, S_IFDIR | 0755 },	  /* 3 */
	{ "prod", 3, S_IFDIR | 0755 },	  /* 4 */
	{ "upper", 4, S_IFDIR | 0755 },	  /* 5 */
	{ "invoke", 5, S_IFREG | 0666 },  /* 6 */
};

/* The tree served, and whether its file is the transaction file. */
static const struct node *nodes = attr_nodes;
static int echo;

struct server {
	struct fuse_session *se;
	struct fuse_buf fbuf;
	uv_poll_t poll;
	uv_signal_t sig[3];
	uid_t uid;
	gid_t gid;
	time_t mounted;
	int stopping;
};

/* Per-open state of the file: its content rendered at the first read,
 * or (--echo) one transaction at a time. */
struct handle {
	char *buf;   /* the content; or the request, then the response */
	size_t len;  /* bytes in buf */
	size_t cap;  /* bytes allocated (--echo) */
	size_t pos;  /* bytes of the response read so far (--echo) */
	int replied; /* whether the response is being read (--echo) */
};

static struct server *req_server(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const struct node *node_of(fuse_ino_t ino)
{
	return ino >= 1 && ino <= NODE_COUNT ? &nodes[ino - 1] : NULL;
}

static void fill_stat(const struct server *s, fuse_ino_t ino, struct stat *st)
{
	const struct node *n = node_of(ino);

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_blksize = 4096;
	if (S_ISDIR(n->mode)) {
		st->st_nlink = ino < NODE_COUNT - 1 ? 3 : 2;
	} else {
		st->st_nlink = 1;
		if (!echo) {
			st->st_size = (off_t)(sizeof(content) - 1);
			st->st_blocks = 1;
		}
	}
	st->st_mtim.tv_sec = s->mounted;
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t i;

	for (i = 1; i <= NODE_COUNT; i++) {
		if (nodes[i - 1].parent == parent &&
		    strcmp(nodes[i - 1].name, name) == 0)
			break;
	}
	if (i > NODE_COUNT) {
		fuse_reply_err(req, node_of(parent) ? ENOENT : ENOTDIR);
		return;
	}
	memset(&e, 0, sizeof(e));
	fill_stat(req_server(req), i, &e.attr);
	e.ino = i;
	e.attr_timeout = ATTR_TIMEOUT;
	e.entry_timeout = ENTRY_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (node_of(ino) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(req_server(req), ino, &st);
	fuse_reply_attr(req, &st, ATTR_TIMEOUT);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct node *n = node_of(ino);
	struct handle *h;

	if (n == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (S_ISDIR(n->mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	fi->nonseekable = echo;
	if (fuse_reply_open(req, fi) != 0)
		free(h);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	(void)ino;
	(void)off; /* a stream: writes add up whatever the offset */
	if (!echo) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (h->replied) {
		h->len = h->pos = 0;
		h->replied = 0;
	}
	if (h->len + size > REQUEST_MAX) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	if (h->len + size > h->cap) {
		size_t cap = h->cap ? h->cap : 256;
		char *p;

		while (cap < h->len + size)
			cap *= 2;
		p = realloc(h->buf, cap);
		if (p == NULL) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		h->buf = p;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, buf, size);
	h->len += size;
	fuse_reply_write(req, size);
}

/* --echo: the first read answers the request, upper-cased in place. */
static void echo_read(fuse_req_t req, struct handle *h, size_t size)
{
	size_t i, n;

	if (!h->replied) {
		for (i = 0; i < h->len; i++)
			if (h->buf[i] >= 'a' && h->buf[i] <= 'z')
				h->buf[i] = (char)(h->buf[i] - 'a' + 'A');
		h->replied = 1;
		h->pos = 0;
	}
	n = h->len - h->pos;
	if (n > size)
		n = size;
	fuse_reply_buf(req, n ? h->buf + h->pos : NULL, n);
	h->pos += n;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	size_t left;

	(void)ino;
	if (echo) {
		echo_read(req, h, size);
		return;
	}
	if (h->buf == NULL || off == 0) {
		free(h->buf);
		h->len = sizeof(content) - 1;
		h->buf = malloc(h->len);
		if (h->buf == NULL) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		memcpy(h->buf, content, h->len);
	}
	if ((size_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	left = h->len - (size_t)off;
	fuse_reply_buf(req, h->buf + off, left < size ? left : size);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	(void)ino;
	free(h->buf);
	free(h);
	fuse_reply_err(req, 0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	const struct node *n = node_of(ino);
	const char *names[3];
	fuse_ino_t inos[3];
	char *buf;
	size_t used = 0, len;
	struct stat st;
	int count = 2, i;

	(void)fi;
	if (n == NULL || !S_ISDIR(n->mode)) {
		fuse_reply_err(req, n == NULL ? ENOENT : ENOTDIR);
		return;
	}
	names[0] = ".";
	inos[0] = ino;
	names[1] = "..";
	inos[1] = n->parent ? n->parent : ino;
	if (ino < NODE_COUNT) {
		names[2] = nodes[ino].name;
		inos[2] = ino + 1;
		count = 3;
	}
	buf = malloc(size);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = (int)off; i < count; i++) {
		memset(&st, 0, sizeof(st));
		st.st_ino = inos[i];
		st.st_mode = node_of(inos[i])->mode;
		len = fuse_add_direntry(req, buf + used, size - used, names[i],
					&st, (off_t)i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.release = op_release,
	.readdir = op_readdir,
};

static void stop(struct server *s)
{
	int i;

	if (s->stopping)
		return;
	s->stopping = 1;
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, NULL);
	for (i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&s->sig[i], NULL);
}

static void on_fuse(uv_poll_t *p, int status, int events)
{
	struct server *s = p->data;
	int i, res;

	(void)events;
	/* libuv reports the device's POLLERR after an unmount as an error. */
	if (status < 0) {
		stop(s);
		return;
	}
	for (i = 0; i < REQUESTS_PER_WAKEUP && !s->stopping; i++) {
		res = fuse_session_receive_buf(s->se, &s->fbuf);
		if (res == -EINTR || res == -EAGAIN)
			return;
		if (res <= 0 || fuse_session_exited(s->se)) {
			if (res < 0 && res != -ENODEV)
				fprintf(stderr,
					"minfs: reading /dev/fuse: %s\n",
					strerror(-res));
			stop(s);
			return;
		}
		fuse_session_process_buf(s->se, &s->fbuf);
	}
}

static void on_signal(uv_signal_t *sig, int signum)
{
	(void)signum;
	stop(sig->data);
}

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-o",
			  "fsname=minfs,subtype=minfs,default_permissions",
			  NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct server s;
	uv_loop_t loop;
	int i, fd, rc;

	if (argc == 3 && strcmp(argv[1], "--echo") == 0) {
		echo = 1;
		nodes = echo_nodes;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: minfs [--echo] MOUNTPOINT\n");
		return 2;
	}
	memset(&s, 0, sizeof(s));
	s.uid = getuid();
	s.gid = getgid();
	s.mounted = time(NULL);
	rc = uv_loop_init(&loop);
	if (rc < 0) {
		fprintf(stderr, "minfs: loop: %s\n", uv_strerror(rc));
		return 1;
	}
	s.se = fuse_session_new(&args, &ops, sizeof(ops), &s);
	fuse_opt_free_args(&args);
	if (s.se == NULL)
		return 1;
	if (fuse_session_mount(s.se, argv[1]) != 0) {
		fprintf(stderr, "minfs: cannot mount at %s\n", argv[1]);
		fuse_session_destroy(s.se);
		return 1;
	}
	fd = fuse_session_fd(s.se);
	rc = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ? -errno
								     : 0;
	if (rc == 0)
		rc = uv_poll_init(&loop, &s.poll, fd);
	if (rc == 0) {
		s.poll.data = &s;
		rc = uv_poll_start(&s.poll, UV_READABLE, on_fuse);
	}
	for (i = 0; i < 3 && rc == 0; i++) {
		uv_signal_init(&loop, &s.sig[i]);
		s.sig[i].data = &s;
		rc = uv_signal_start(&s.sig[i], on_signal, signums[i]);
	}
	if (rc == 0)
		rc = uv_run(&loop, UV_RUN_DEFAULT);
	else
		fprintf(stderr, "minfs: loop setup: %s\n", uv_strerror(rc));
	fuse_session_unmount(s.se);
	fuse_session_destroy(s.se);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	free(s.fbuf.mem);
	return rc < 0 ? 1 : 0;
}

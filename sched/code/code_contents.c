/*
 * code_contents.c - the contents of code/ files (code.h): objects in
 * DATA/code/objects, writes staged in DATA/code/tmp until a commit or a
 * close, reads. Part of the code module (code.c says how it is cut).
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/base/code.h"
#include "code_internal.h"

/* Makes DATA/code, its objects/ and tmp/ (0700) unless they are there:
 * a data directory whose functions never had code has none. */
int sched__code_make_dirs(struct sched_code_state *c)
{
	const char *const v[3] = { c->root, c->objects, c->tmp };
	int i;

	if (c->made)
		return 0;
	for (i = 0; i < 3; i++)
		if (mkdir(v[i], 0700) < 0 && errno != EEXIST) {
			rt_log(RT_LOG_ERROR, "code: cannot make %s: %s", v[i],
			       strerror(errno));
			return sched__code_errno_io();
		}
	c->made = 1;
	return 0;
}

/* ============================================================ contents */

/* Opens object `h` for reading. Returns an fd or -errno. */
int sched__code_object_open(struct sched_code_state *c, const char *h)
{
	struct rt_buf p = { 0 };
	int fd;

	object_path(c, h, &p);
	fd = p.data ? open(p.data, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 && p.data != NULL)
		rt_log(RT_LOG_ERROR, "code: object %s: %s", p.data,
		       strerror(errno));
	rt_buf_free(&p);
	return fd < 0 ? -EIO : fd;
}

int sched__code_errno_io(void)
{
	return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -EIO;
}

/* Copies all of `from` into `to` (both at offset 0). */
static int copy_fd(int from, int to)
{
	char buf[65536];
	off_t off = 0;

	for (;;) {
		ssize_t r = pread(from, buf, sizeof(buf), off), w = 0, k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -EIO;
		if (r == 0)
			return 0;
		while (w < r) {
			k = pwrite(to, buf + w, (size_t)(r - w), off + w);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return sched__code_errno_io();
			w += k;
		}
		off += r;
	}
}

/* A new temporary file in DATA/code/tmp. Returns an fd or -errno. */
int sched__code_tmp_file(struct sched_code_state *c, const char *what,
			 char **path)
{
	struct rt_buf p = { 0 };
	int fd = sched__code_make_dirs(c);

	if (fd < 0)
		return fd;
	rt_buf_printf(&p, "%s/%s-%llu", c->tmp, what,
		      (unsigned long long)++c->seq);
	if (p.data == NULL)
		return -ENOMEM;
	fd = open(p.data, O_RDWR | O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		int rc = sched__code_errno_io();

		rt_log(RT_LOG_ERROR, "code: %s: %s", p.data, strerror(errno));
		rt_buf_free(&p);
		return rc;
	}
	*path = p.data;
	return fd;
}

int sched_code_open_write(struct sched *s, struct sched_code_node *n, int trunc)
{
	struct sched_code_state *c = st_of(s);
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	int from, rc = 0;

	if (f == NULL || is_dir(n))
		return -EISDIR;
	if (g == NULL) {
		g = calloc(1, sizeof(*g));
		if (g == NULL)
			return -ENOMEM;
		g->fd = sched__code_tmp_file(c, "stage", &g->path);
		if (g->fd < 0) {
			rc = g->fd;
			free(g);
			return rc;
		}
		/* What it holds now, unless it is truncated anyway. */
		if (!trunc && n->size > 0) {
			from = sched__code_object_open(c, n->hash);
			rc = from < 0 ? from : copy_fd(from, g->fd);
			if (from >= 0)
				close(from);
		}
		if (rc == 0 && (trunc || n->size == 0)) {
			g->seq = EVP_MD_CTX_new();
			if (g->seq == NULL ||
			    EVP_DigestInit_ex(g->seq, EVP_sha256(), NULL) != 1)
				rc = -ENOMEM;
		}
		if (rc < 0) {
			sched__code_stage_free(g);
			return rc;
		}
		n->stage = g;
	}
	g->writers++;
	f->writers++;
	if (trunc && n->size > 0)
		rc = sched_code_truncate(s, n, 0);
	return rc;
}

long sched_code_read(struct sched *s, struct sched_code_node *n, char *buf,
		     size_t size, uint64_t off)
{
	int fd = n->stage ? n->stage->fd : -1, own = 0;
	ssize_t r;

	if (is_dir(n))
		return -EISDIR;
	if (off >= n->size)
		return 0;
	if (size > n->size - off)
		size = (size_t)(n->size - off);
	if (fd < 0) {
		fd = sched__code_object_open(st_of(s), n->hash);
		if (fd < 0)
			return fd;
		own = 1;
	}
	do
		r = pread(fd, buf, size, (off_t)off);
	while (r < 0 && errno == EINTR);
	if (own)
		close(fd);
	return r < 0 ? -EIO : (long)r;
}

int sched_code_write(struct sched *s, struct sched_code_node *n,
		     const char *buf, size_t size, uint64_t off)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	uint64_t end = off + size;
	size_t done = 0;
	int rc;

	if (g == NULL || f == NULL)
		return -EBADF;
	if (end < off || end > RT_CODE_OBJECT_MAX)
		return sched__code_over_bytes(s, n, f, UINT64_MAX);
	rc = sched__code_over_bytes(s, n, f, end);
	if (rc < 0)
		return rc;
	while (done < size) {
		ssize_t w = pwrite(g->fd, buf + done, size - done,
				   (off_t)(off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return sched__code_errno_io();
		done += (size_t)w;
	}
	/* cp and tar write in order from 0: the hash follows along. */
	if (g->seq != NULL && off == g->seq_off &&
	    EVP_DigestUpdate(g->seq, buf, size) == 1) {
		g->seq_off += size;
	} else if (g->seq != NULL) {
		EVP_MD_CTX_free(g->seq);
		g->seq = NULL;
	}
	if (end > n->size) {
		f->bytes += end - n->size;
		sched__code_bytes_sync(f);
		n->size = end;
	}
	g->dirty = 1;
	g->gen++;
	return 0;
}

int sched_code_truncate(struct sched *s, struct sched_code_node *n,
			uint64_t size)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;
	int rc;

	if (g == NULL || f == NULL)
		return -EBADF;
	if (size > RT_CODE_OBJECT_MAX)
		return sched__code_over_bytes(s, n, f, UINT64_MAX);
	rc = sched__code_over_bytes(s, n, f, size);
	if (rc < 0)
		return rc;
	if (ftruncate(g->fd, (off_t)size) < 0)
		return sched__code_errno_io();
	if (g->seq != NULL && size != g->seq_off) {
		EVP_MD_CTX_free(g->seq);
		g->seq = NULL;
	}
	f->bytes = f->bytes - n->size + size;
	sched__code_bytes_sync(f);
	n->size = size;
	g->dirty = 1;
	g->gen++;
	return 0;
}

/* The SHA-256 of what stage `g` holds (`size` bytes). */
int sched__code_stage_hash(struct sched_code_stage *g, uint64_t size,
			   char out[65])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char d[EVP_MAX_MD_SIZE], *buf = NULL;
	unsigned len = 0, i;
	uint64_t off = 0;
	int rc = -ENOMEM;

	if (ctx == NULL)
		goto out;
	if (g->seq != NULL && g->seq_off == size) {
		if (EVP_MD_CTX_copy_ex(ctx, g->seq) != 1)
			goto out;
	} else {
		buf = malloc(65536);
		if (buf == NULL ||
		    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
			goto out;
		while (off < size) {
			ssize_t r = pread(g->fd, buf, 65536, (off_t)off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = -EIO;
				goto out;
			}
			EVP_DigestUpdate(ctx, buf, (size_t)r);
			off += (uint64_t)r;
		}
	}
	if (EVP_DigestFinal_ex(ctx, d, &len) != 1 || len != 32)
		goto out;
	for (i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	rc = 0;
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Makes object `h` hold what `fd` holds, or (fd -1) the `len` bytes at
 * `buf`, unless it exists: a temporary copy renamed into place. */
int sched__code_object_put(struct sched_code_state *c, const char *h, int fd,
			   const char *buf, size_t len)
{
	struct rt_buf p = { 0 };
	char *tmp = NULL;
	int out = -1, rc = 0;

	object_path(c, h, &p);
	if (p.data == NULL)
		return -ENOMEM;
	if (access(p.data, F_OK) == 0)
		goto done;
	out = sched__code_tmp_file(c, "object", &tmp);
	if (out < 0) {
		rc = out;
		goto done;
	}
	if (fd >= 0)
		rc = copy_fd(fd, out);
	else if (len > 0 && write(out, buf, len) != (ssize_t)len)
		rc = sched__code_errno_io();
	if (rc == 0) {
		/* The directory of its first two digits. */
		char *slash = strrchr(p.data, '/');

		*slash = '\0';
		if (mkdir(p.data, 0700) < 0 && errno != EEXIST)
			rc = sched__code_errno_io();
		*slash = '/';
	}
	if (rc == 0 && (fchmod(out, 0400) < 0 || rename(tmp, p.data) < 0))
		rc = sched__code_errno_io();
	/* Synced with the next revision; with no room to remember it, now. */
	if (rc == 0 && rt_map_put(&c->unsynced, h, (void *)1) < 0 &&
	    fsync(out) < 0)
		rc = sched__code_errno_io();
done:
	if (out >= 0)
		close(out);
	if (tmp != NULL && rc < 0)
		unlink(tmp);
	if (rc < 0)
		rt_log(RT_LOG_ERROR, "code: cannot store object %s: %s", p.data,
		       strerror(-rc));
	free(tmp);
	rt_buf_free(&p);
	return rc;
}

int sched_code_commit(struct sched *s, struct sched_code_node *n,
		      sched_code_done_fn done, void *arg)
{
	struct sched_code_stage *g = n->stage;
	struct code_fn *f = cfn_get(s, n->fn);

	if (g == NULL || !g->dirty || f == NULL)
		return 0;
	return be_of(s)->commit(s, n, done, arg);
}

/* The local backend's commit: the stage's bytes become an object, and
 * the node's row names it. */
int sched__code_local_commit(struct sched *s, struct sched_code_node *n,
			     sched_code_done_fn done, void *arg)
{
	struct sched_code_state *c = st_of(s);
	struct sched_code_stage *g = n->stage;
	struct code_fn *f = cfn_get(s, n->fn);
	char h[65], was[65];
	int64_t mtime = n->mtime_ms;
	int rc;

	(void)done;
	(void)arg;
	rc = sched__code_stage_hash(g, n->size, h);
	if (rc == 0 && strcmp(h, n->hash) == 0) {
		g->dirty = 0; /* the same bytes again */
		return 0;
	}
	if (rc == 0)
		rc = sched__code_object_put(c, h, g->fd, NULL, 0);
	if (rc < 0)
		return rc;
	sched__code_ref_add(c, h); /* before anything drops it */
	memcpy(was, n->hash, 65);
	memcpy(n->hash, h, 65);
	n->stored_size = n->size;
	n->mtime_ms = rt_now_ms();
	rc = sched__code_store_node(s, n);
	if (rc < 0) {
		memcpy(n->hash, was, 65);
		n->mtime_ms = mtime;
		sched__code_ref_drop(c, h);
		return rc;
	}
	if (was[0])
		sched__code_ref_drop(c, was);
	g->dirty = 0;
	sched__code_changed(s, f);
	return 0;
}

void sched_code_close_write(struct sched *s, struct sched_code_node *n)
{
	struct code_fn *f = cfn_get(s, n->fn);
	struct sched_code_stage *g = n->stage;

	int rc = 0;

	if (g == NULL)
		return;
	if (g->dirty)
		rc = sched_code_commit(s, n, NULL, NULL);
	if (rc < 0) {
		/* The content reverts to what was last closed. */
		rt_log(RT_LOG_WARN, "code: a write of %s was lost", n->name);
	}
	if (f != NULL && f->writers > 0)
		f->writers--;
	if (--g->writers > 0)
		return;
	/* SCHED_CODE_LATER: the commit under way holds its own copy. */
	if (rc != SCHED_CODE_LATER && g->dirty)
		be_of(s)->unstored(s, f, n);
	sched__code_stage_free(g);
	n->stage = NULL;
}

int sched_code_fetch(struct sched *s, struct sched_code_node *n,
		     sched_code_done_fn done, void *arg)
{
	if (is_dir(n))
		return -EISDIR;
	return be_of(s)->fetch(s, n, done, arg);
}

/*
 * code_etcd.c - objects of code/ between a controller's DATA/code/objects
 * and etcd (code_etcd.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../runtime/base/code.h"
#include "../../../runtime/base/rt.h"
#include "code_etcd.h"
#include "etcd.h"
#include "etcd_keys.h"

/* One object going up or coming down. */
struct xfer {
	struct etcd_client *c;
	char *cluster; /* owned */
	char hash[65];
	uint64_t size;
	uint32_t chunks; /* etcd_keys_chunks(size) */
	uint32_t next;	 /* the chunk under way */
	int fd;		 /* the local file */
	int own_fd;	 /* an upload's: closed at the end */
	EVP_MD_CTX *md;	 /* a fetch's running hash */
	char *buf;	 /* an upload's chunk, ETCD_KEYS_CHUNK_BYTES */
	code_etcd_fn done;
	void *arg;
};

static void xfer_end(struct xfer *x, int err, const char *why)
{
	x->done(x->arg, err, err ? why : NULL);
	/* `fd` of a fetch is the caller's. */
	if (x->own_fd && x->fd >= 0)
		close(x->fd);
	if (x->md != NULL)
		EVP_MD_CTX_free(x->md);
	free(x->buf);
	free(x->cluster);
	free(x);
}

static struct xfer *xfer_new(struct etcd_client *c, const char *cluster,
			     const char *hash, uint64_t size, code_etcd_fn done,
			     void *arg)
{
	struct xfer *x;

	if (!rt_code_hash_valid(hash) || size > RT_CODE_OBJECT_MAX)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->cluster = strdup(cluster);
	if (x->cluster == NULL) {
		free(x);
		return NULL;
	}
	x->c = c;
	snprintf(x->hash, sizeof(x->hash), "%s", hash);
	x->size = size;
	x->chunks = etcd_keys_chunks(size);
	x->fd = -1;
	x->done = done;
	x->arg = arg;
	return x;
}

/* The bytes of chunk `i` of an object of `size` bytes. */
static size_t chunk_len(uint64_t size, uint32_t i)
{
	uint64_t off = (uint64_t)i * ETCD_KEYS_CHUNK_BYTES;

	return size - off < ETCD_KEYS_CHUNK_BYTES ? (size_t)(size - off)
						  : ETCD_KEYS_CHUNK_BYTES;
}

/* ============================================================ upload */

static int up_next(struct xfer *x, const char **why);

static void on_put(void *arg, const struct etcd_answer *a)
{
	struct xfer *x = arg;
	const char *why = NULL;
	int rc;

	if (a->rc < 0) {
		xfer_end(x, a->rc == -ECANCELED ? -ECANCELED : -EIO,
			 a->error ? a->error : "etcd cannot be reached");
		return;
	}
	if (x->next > x->chunks) { /* P/om went last */
		xfer_end(x, 0, NULL);
		return;
	}
	rc = up_next(x, &why);
	if (rc < 0)
		xfer_end(x, rc, why);
}

/* Puts the next chunk, or P/om after the last one. Returns 0 or -EIO
 * (`why` set); -ENOMEM. */
static int up_next(struct xfer *x, const char **whyp)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_CHUNK, .hash = x->hash };
	struct rt_buf k = { 0 }, v = { 0 };
	const char *why = "out of memory";
	int rc = 0;

	if (x->next < x->chunks) {
		size_t len = chunk_len(x->size, x->next), got = 0;
		off_t off = (off_t)x->next * ETCD_KEYS_CHUNK_BYTES;

		while (rc == 0 && got < len) {
			ssize_t n = pread(x->fd, x->buf + got, len - got,
					  off + (off_t)got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				rc = -EIO;
				why = "the local object cannot be read";
			}
			got += n > 0 ? (size_t)n : 0;
		}
		r.index = x->next;
		r.data = x->buf;
		r.len = len;
	} else {
		r.kind = ETCD_KEYS_OBJECT;
		r.size = x->size;
		r.chunks = x->chunks;
	}
	if (rc == 0)
		rc = etcd_keys_encode(x->cluster, &r, &k, &v);
	x->next++;
	if (rc == 0) {
		rc = etcd_put(x->c, k.data, v.data ? v.data : "", v.len, 0,
			      on_put, x);
		if (rc < 0)
			why = "etcd cannot be reached";
	}
	rt_buf_free(&k);
	rt_buf_free(&v);
	*whyp = why;
	return rc == -ENOMEM ? rc : rc < 0 ? -EIO : 0;
}

int code_etcd_upload(struct etcd_client *c, const char *cluster,
		     const char *hash, const char *path, uint64_t size,
		     code_etcd_fn done, void *arg)
{
	struct xfer *x = xfer_new(c, cluster, hash, size, done, arg);
	const char *why = NULL;
	int rc;

	if (x == NULL)
		return rt_code_hash_valid(hash) ? -ENOMEM : -EINVAL;
	x->own_fd = 1;
	x->fd = open(path, O_RDONLY | O_CLOEXEC);
	x->buf = malloc(ETCD_KEYS_CHUNK_BYTES);
	if (x->fd < 0 || x->buf == NULL) {
		rc = x->fd < 0 ? -EIO : -ENOMEM;
		if (x->fd >= 0)
			close(x->fd);
		free(x->buf);
		free(x->cluster);
		free(x);
		return rc;
	}
	rc = up_next(x, &why);
	if (rc < 0) {
		close(x->fd);
		free(x->buf);
		free(x->cluster);
		free(x);
	}
	return rc;
}

/* ============================================================= fetch */

static int down_next(struct xfer *x);

/* Whether the bytes read hash to the object's name. */
static int hash_matches(struct xfer *x)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned len = 0, i;
	char hex[65];

	if (EVP_DigestFinal_ex(x->md, d, &len) != 1 || len != 32)
		return 0;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return strcmp(hex, x->hash) == 0;
}

static void on_range(void *arg, const struct etcd_answer *a)
{
	struct xfer *x = arg;
	size_t len = chunk_len(x->size, x->next), done = 0;
	off_t off = (off_t)x->next * ETCD_KEYS_CHUNK_BYTES;

	if (a->rc < 0) {
		xfer_end(x, a->rc == -ECANCELED ? -ECANCELED : -EIO,
			 a->error ? a->error : "etcd cannot be reached");
		return;
	}
	if (a->nkvs != 1 || a->kvs[0].value_len != len) {
		xfer_end(x, -EBADMSG,
			 a->nkvs == 0 ? "a chunk of the object is missing"
				      : "a chunk of the object has the wrong "
					"size");
		return;
	}
	while (done < len) {
		ssize_t n = pwrite(x->fd, a->kvs[0].value + done, len - done,
				   off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			xfer_end(x, -EIO, "the local copy cannot be written");
			return;
		}
		done += (size_t)n;
	}
	EVP_DigestUpdate(x->md, a->kvs[0].value, len);
	x->next++;
	if (x->next < x->chunks) {
		if (down_next(x) < 0)
			xfer_end(x, -EIO, "etcd cannot be reached");
	} else if (hash_matches(x))
		xfer_end(x, 0, NULL);
	else
		xfer_end(x, -EBADMSG,
			 "the chunks do not hash to the object's name");
}

/* Asks for the next chunk. Returns 0 or -errno. */
static int down_next(struct xfer *x)
{
	struct etcd_keys_rec r = { .kind = ETCD_KEYS_CHUNK, .hash = x->hash };
	struct rt_buf k = { 0 };
	int rc;

	r.index = x->next;
	rc = etcd_keys_encode(x->cluster, &r, &k, NULL);
	if (rc == 0)
		rc = etcd_range(x->c, k.data, NULL, 0, 0, on_range, x);
	rt_buf_free(&k);
	return rc;
}

int code_etcd_fetch(struct etcd_client *c, const char *cluster,
		    const char *hash, uint64_t size, int fd, code_etcd_fn done,
		    void *arg)
{
	struct xfer *x = xfer_new(c, cluster, hash, size, done, arg);
	int rc;

	if (x == NULL)
		return rt_code_hash_valid(hash) ? -ENOMEM : -EINVAL;
	if (x->chunks == 0) { /* only the empty object: made, not fetched */
		free(x->cluster);
		free(x);
		return -EINVAL;
	}
	x->fd = fd;
	x->md = EVP_MD_CTX_new();
	if (x->md == NULL ||
	    EVP_DigestInit_ex(x->md, EVP_sha256(), NULL) != 1) {
		if (x->md != NULL)
			EVP_MD_CTX_free(x->md);
		free(x->cluster);
		free(x);
		return -ENOMEM;
	}
	rc = down_next(x);
	if (rc < 0) {
		EVP_MD_CTX_free(x->md);
		free(x->cluster);
		free(x);
	}
	return rc;
}

/*
 * code.c - the pure parts of code that travels (code.h): SHA-256 in hex,
 * names and paths, manifests, and the assembler of chunks.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "code.h"

static void hex(const unsigned char *d, unsigned n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	unsigned i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

int rt_sha256_hex(const void *p, size_t n, char out[RT_CODE_HASH_LEN + 1])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	if (EVP_Digest(p, n, d, &len, EVP_sha256(), NULL) != 1 || len != 32)
		return -ENOMEM;
	hex(d, len, out);
	return 0;
}

int rt_code_hash_valid(const char *h)
{
	size_t i;

	if (h == NULL)
		return 0;
	for (i = 0; i < RT_CODE_HASH_LEN; i++)
		if (!((h[i] >= '0' && h[i] <= '9') ||
		      (h[i] >= 'a' && h[i] <= 'f')))
			return 0;
	return h[RT_CODE_HASH_LEN] == '\0';
}

int rt_code_name_valid(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > RT_CODE_NAME_MAX)
		return 0;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '/' || c < 0x20 || c == 0x7f)
			return 0;
	}
	return 1;
}

int rt_code_path_valid(const char *path)
{
	const char *p = path, *slash;
	size_t n = path ? strlen(path) : 0;

	if (n == 0 || n > RT_CODE_PATH_MAX)
		return 0;
	for (;;) {
		slash = strchr(p, '/');
		if (!rt_code_name_valid(p, slash ? (size_t)(slash - p)
						 : strlen(p)))
			return 0;
		if (slash == NULL)
			return 1;
		p = slash + 1;
	}
}

int rt_code_manifest_add(struct rt_buf *out, const struct rt_code_entry *e)
{
	if (e->dir)
		return rt_buf_printf(out, "d %o 0 - %s\n", e->perm & 0777,
				     e->path);
	return rt_buf_printf(out, "f %o %" PRIu64 " %s %s\n", e->perm & 0777,
			     e->size, e->hash, e->path);
}

/* Reads an unsigned number of `base` from `*p` up to a space. */
static int read_num(const char **p, const char *end, int base, uint64_t max,
		    uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s >= end || *s == ' ')
		return -1;
	for (; s < end && *s != ' '; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (d >= (unsigned)base || v > (max - d) / (unsigned)base)
			return -1;
		v = v * (unsigned)base + d;
	}
	if (s >= end)
		return -1;
	*out = v;
	*p = s + 1;
	return 0;
}

int rt_code_manifest_parse(const char *text, size_t len, int max_entries,
			   int (*fn)(const struct rt_code_entry *e, void *arg),
			   void *arg, struct rt_buf *why)
{
	struct rt_map dirs = { 0 };
	char *prev = NULL, *path = NULL;
	const char *p = text, *end = text + len;
	int n = 0, rc = 0, line = 0;

	while (rc == 0 && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct rt_code_entry e;
		uint64_t perm = 0;
		char *slash;

		line++;
		memset(&e, 0, sizeof(e));
		if (nl == NULL || nl - p < 4 || (p[0] != 'f' && p[0] != 'd') ||
		    p[1] != ' ') {
			rt_buf_printf(why, "manifest line %d: malformed", line);
			rc = -EPROTO;
			break;
		}
		if (++n > max_entries) {
			rt_buf_printf(why, "manifest: more than %d entries",
				      max_entries);
			rc = -EPROTO;
			break;
		}
		e.dir = p[0] == 'd';
		p += 2;
		if (read_num(&p, nl, 8, 0777, &perm) < 0 ||
		    read_num(&p, nl, 10, RT_CODE_OBJECT_MAX, &e.size) < 0 ||
		    (e.dir && e.size != 0)) {
			rt_buf_printf(why, "manifest line %d: bad mode or size",
				      line);
			rc = -EPROTO;
			break;
		}
		e.perm = (unsigned)perm;
		if (e.dir && nl - p >= 2 && p[0] == '-' && p[1] == ' ') {
			p += 2;
			e.hash[0] = '\0';
		} else if (!e.dir && nl - p > RT_CODE_HASH_LEN &&
			   p[RT_CODE_HASH_LEN] == ' ') {
			memcpy(e.hash, p, RT_CODE_HASH_LEN);
			e.hash[RT_CODE_HASH_LEN] = '\0';
			p += RT_CODE_HASH_LEN + 1;
		} else {
			e.hash[0] = 'x'; /* neither: refused below */
		}
		if ((e.dir && e.hash[0] != '\0') ||
		    (!e.dir && !rt_code_hash_valid(e.hash))) {
			rt_buf_printf(why, "manifest line %d: bad hash", line);
			rc = -EPROTO;
			break;
		}
		free(path);
		path = strndup(p, (size_t)(nl - p));
		if (path == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (strlen(path) != (size_t)(nl - p) ||
		    !rt_code_path_valid(path)) {
			rt_buf_printf(why, "manifest line %d: bad path", line);
			rc = -EPROTO;
			break;
		}
		if (prev != NULL && strcmp(prev, path) >= 0) {
			rt_buf_printf(why, "manifest line %d: not sorted",
				      line);
			rc = -EPROTO;
			break;
		}
		slash = strrchr(path, '/');
		if (slash != NULL) {
			*slash = '\0';
			if (rt_map_get(&dirs, path) == NULL) {
				rt_buf_printf(why,
					      "manifest line %d: its directory "
					      "is not listed before it",
					      line);
				rc = -EPROTO;
				break;
			}
			*slash = '/';
		}
		if (e.dir && rt_map_put(&dirs, path, (void *)1) < 0) {
			rc = -ENOMEM;
			break;
		}
		e.path = path;
		rc = fn(&e, arg);
		free(prev);
		prev = path;
		path = NULL;
		p = nl + 1;
	}
	free(prev);
	free(path);
	rt_map_free(&dirs);
	return rc;
}

int rt_code_asm_begin(struct rt_code_asm *a, const char *object, uint64_t size,
		      uint64_t max, int fd, struct rt_buf *why)
{
	memset(a, 0, sizeof(*a));
	a->fd = fd;
	if (!rt_code_hash_valid(object)) {
		rt_buf_puts(why, "code: a chunk names no valid object");
		return -EPROTO;
	}
	if (size > max) {
		rt_buf_printf(why,
			      "code: object %.12s is %" PRIu64
			      " bytes, more than %" PRIu64,
			      object, size, max);
		return -EPROTO;
	}
	memcpy(a->object, object, RT_CODE_HASH_LEN + 1);
	a->size = size;
	a->ctx = EVP_MD_CTX_new();
	if (a->ctx == NULL ||
	    EVP_DigestInit_ex(a->ctx, EVP_sha256(), NULL) != 1) {
		rt_code_asm_free(a);
		return -ENOMEM;
	}
	return 0;
}

int rt_code_asm_feed(struct rt_code_asm *a, const char *object, uint64_t off,
		     uint64_t size, const void *data, size_t len, int last,
		     struct rt_buf *why)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	char got[RT_CODE_HASH_LEN + 1];
	unsigned dlen = 0;
	size_t done = 0;

	if (a->ctx == NULL || object == NULL ||
	    strcmp(object, a->object) != 0) {
		rt_buf_puts(why, "code: a chunk of another object");
		return -EPROTO;
	}
	if (size != a->size || off != a->got || len > RT_CODE_CHUNK_MAX ||
	    len > a->size - a->got) {
		rt_buf_printf(why,
			      "code: chunk of %.12s at %" PRIu64 " (%zu bytes)"
			      " out of order or oversized",
			      a->object, off, len);
		return -EPROTO;
	}
	if (last != (a->got + len == a->size)) {
		rt_buf_printf(why, "code: object %.12s ends at the wrong place",
			      a->object);
		return -EPROTO;
	}
	while (a->fd >= 0 && done < len) {
		ssize_t w = pwrite(a->fd, (const char *)data + done, len - done,
				   (off_t)(off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rt_buf_printf(why, "code: cannot write %.12s: %s",
				      a->object, strerror(w < 0 ? errno : EIO));
			return -EIO;
		}
		done += (size_t)w;
	}
	if (len > 0 && EVP_DigestUpdate(a->ctx, data, len) != 1)
		return -ENOMEM;
	a->got += len;
	if (!last)
		return 0;
	if (EVP_DigestFinal_ex(a->ctx, d, &dlen) != 1 || dlen != 32)
		return -ENOMEM;
	hex(d, dlen, got);
	EVP_MD_CTX_free(a->ctx);
	a->ctx = NULL;
	if (strcmp(got, a->object) != 0) {
		rt_buf_printf(why,
			      "code: object %.12s arrived with hash %.12s "
			      "(corrupted)",
			      a->object, got);
		return -EBADMSG;
	}
	return 1;
}

void rt_code_asm_free(struct rt_code_asm *a)
{
	if (a->ctx != NULL)
		EVP_MD_CTX_free(a->ctx);
	a->ctx = NULL;
}

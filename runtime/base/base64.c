/*
 * base64.c - standard base64 (RFC 4648, with padding) (base64.h).
 */
#include <errno.h>

#include "base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sched_b64_encode(const void *p, size_t n, struct rt_buf *out)
{
	const unsigned char *s = p;
	size_t i;
	char *d;
	int rc;

	rc = rt_buf_reserve(out, (n + 2) / 3 * 4);
	if (rc < 0)
		goto out;
	d = out->data + out->len;
	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 |
			     s[i + 2];

		*d++ = alphabet[v >> 18];
		*d++ = alphabet[(v >> 12) & 63];
		*d++ = alphabet[(v >> 6) & 63];
		*d++ = alphabet[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)s[i] << 16;

		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		*d++ = alphabet[v >> 18];
		*d++ = alphabet[(v >> 12) & 63];
		*d++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		*d++ = '=';
	}
	out->len = (size_t)(d - out->data);
	out->data[out->len] = '\0';
out:
	return rc;
}

/* The 6 bits character `c` stands for, or -1. */
static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int sched_b64_decode(const char *s, size_t n, struct rt_buf *out)
{
	size_t i, start = out->len;
	int rc;

	if (n % 4 != 0) {
		rc = -EINVAL;
		goto out;
	}
	rc = rt_buf_reserve(out, n / 4 * 3);
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i += 4) {
		int a = sextet((unsigned char)s[i]);
		int b = sextet((unsigned char)s[i + 1]);
		int c = sextet((unsigned char)s[i + 2]);
		int d = sextet((unsigned char)s[i + 3]);
		int last = i + 4 == n;
		unsigned v;

		if (a < 0 || b < 0) {
			rc = -EINVAL;
			goto out;
		}
		if (last && s[i + 2] == '=' && s[i + 3] == '=') {
			if (b & 15) { /* bits that no byte holds */
				rc = -EINVAL;
				goto out;
			}
			out->data[out->len++] = (char)(a << 2 | b >> 4);
			continue;
		}
		if (c < 0) {
			rc = -EINVAL;
			goto out;
		}
		if (last && s[i + 3] == '=') {
			if (c & 3) {
				rc = -EINVAL;
				goto out;
			}
			v = (unsigned)a << 18 | (unsigned)b << 12 |
			    (unsigned)c << 6;
			out->data[out->len++] = (char)(v >> 16);
			out->data[out->len++] = (char)(v >> 8 & 0xff);
			continue;
		}
		if (d < 0) {
			rc = -EINVAL;
			goto out;
		}
		v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 |
		    (unsigned)d;
		out->data[out->len++] = (char)(v >> 16);
		out->data[out->len++] = (char)(v >> 8 & 0xff);
		out->data[out->len++] = (char)(v & 0xff);
	}
out:
	if (rc < 0 && out->data != NULL)
		out->len = start;
	if (out->data != NULL)
		out->data[out->len] = '\0';
	return rc;
}

/*
 * buf.c - growable byte buffers and key=value quoting.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

int rt_buf_reserve(struct rt_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap;
	char *p;

	/* A buffer is empty, or holds len bytes and a NUL within cap. */
	assert(b->cap == 0 ? b->len == 0 : b->len < b->cap);
	if (extra > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int rt_buf_append(struct rt_buf *b, const void *p, size_t n)
{
	int rc = rt_buf_reserve(b, n);

	if (rc < 0)
		return rc;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	assert(b->len < b->cap);
	b->data[b->len] = '\0';
	return 0;
}

int rt_buf_puts(struct rt_buf *b, const char *s)
{
	return rt_buf_append(b, s, strlen(s));
}

int rt_buf_vprintf(struct rt_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	rc = rt_buf_reserve(b, (size_t)n);
	if (rc < 0)
		return rc;
	/* The same arguments print the same length again. */
	rc = vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	assert(rc == n);
	b->len += (size_t)n;
	assert(b->len < b->cap && b->data[b->len] == '\0');
	return 0;
}

int rt_buf_printf(struct rt_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = rt_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void rt_buf_reset(struct rt_buf *b)
{
	assert(b->data != NULL || b->cap == 0);
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void rt_buf_free(struct rt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

static int needs_quotes(const char *v)
{
	const unsigned char *p;

	if (*v == '\0')
		return 1;
	for (p = (const unsigned char *)v; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '\\')
			return 1;
	return 0;
}

int rt_buf_kv(struct rt_buf *b, const char *key, const char *value)
{
	const unsigned char *p;
	size_t left, k;
	int rc;

	rc = rt_buf_printf(b, " %s=", key);
	if (rc < 0 || !needs_quotes(value))
		return rc < 0 ? rc : rt_buf_puts(b, value);
	rc = rt_buf_puts(b, "\"");
	left = strlen(value);
	for (p = (const unsigned char *)value; *p && rc == 0; p++) {
		if (*p == '"' || *p == '\\')
			rc = rt_buf_printf(b, "\\%c", *p);
		else if (*p == '\n')
			rc = rt_buf_puts(b, "\\n");
		else if (*p == '\t')
			rc = rt_buf_puts(b, "\\t");
		else if (*p < ' ' || *p == 0x7f)
			rc = rt_buf_printf(b, "\\x%02x", *p);
		else if (*p < 0x80)
			rc = rt_buf_append(b, p, 1);
		else if ((k = rt_utf8_char((const char *)p, left, NULL)) == 0)
			/* Not UTF-8: the journal stays text. */
			rc = rt_buf_printf(b, "\\x%02x", *p);
		else {
			rc = rt_buf_append(b, p, k);
			p += k - 1;
			left -= k - 1;
		}
		left--;
	}
	return rc < 0 ? rc : rt_buf_puts(b, "\"");
}

/*
 * httpmsg.c - the HTTP message form of calls (httpmsg.h): detection,
 * parsing with http-parser, and the response written back in the same
 * form.
 */
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpmsg.h"
#include "wire.h"

int rt_httpmsg_is_request(const char *data, size_t len)
{
	const char *end = memchr(data, '\n', len), *sp1, *sp2;
	size_t i, n;

	n = end != NULL ? (size_t)(end - data) : len;
	if (n > 0 && data[n - 1] == '\r')
		n--;
	sp1 = memchr(data, ' ', n);
	if (sp1 == NULL || sp1 == data)
		return 0;
	for (i = 0; data + i < sp1; i++)
		if (data[i] < 'A' || data[i] > 'Z')
			return 0;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - data));
	if (sp2 == NULL || sp2 == sp1 + 1)
		return 0;
	/* The third word is the rest: "HTTP/..." without another space. */
	if ((size_t)(data + n - (sp2 + 1)) < 5 || memcmp(sp2 + 1, "HTTP/", 5))
		return 0;
	return memchr(sp2 + 1, ' ', (size_t)(data + n - (sp2 + 1))) == NULL;
}

/* The parse under way: http-parser's callbacks fill `m`. */
struct parse {
	http_parser p;
	struct rt_httpmsg *m;
	const char *err; /* the first refusal, a static string */
	int last;	 /* what the last piece was: 1 url, 2 name, 3 value */
	const char *end; /* where the last piece ended in the head */
	int complete;	 /* the head ended */
	char *cur;	 /* the string being written, in m->store */
};

/* Appends a piece of kind `kind` (1 url, 2 name, 3 value) of the head:
 * the head is fed in one buffer, so a string comes in one callback, but
 * one that continues the last piece (same kind, contiguous) extends it.
 * Returns 1 when it starts a new string, 0 when it extends one, -1 on a
 * refusal. The store was reserved in full beforehand, so pointers into
 * it stay valid. */
static int piece(struct parse *ps, int kind, const char *at, size_t n)
{
	struct rt_buf *b = &ps->m->store;
	int start = !(ps->last == kind && at == ps->end);

	if (start) {
		if (ps->cur != NULL)
			b->len++; /* past the last string's NUL */
		ps->cur = b->data + b->len;
	}
	if (b->len + n + 1 >= b->cap) {
		ps->err = "out of memory";
		return -1;
	}
	memcpy(b->data + b->len, at, n);
	b->len += n;
	b->data[b->len] = '\0';
	ps->last = kind;
	ps->end = at + n;
	return start;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct parse *ps = p->data;

	if (piece(ps, 1, at, n) < 0)
		return 1;
	ps->m->target = ps->cur;
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct parse *ps = p->data;
	struct rt_httpmsg *m = ps->m;
	int start = !(ps->last == 2 && at == ps->end);

	if (start && m->nheaders == RT_HTTPMSG_HEADERS_MAX) {
		ps->err = "too many headers";
		return 1;
	}
	if (piece(ps, 2, at, n) < 0)
		return 1;
	if (start) {
		m->name[m->nheaders] = ps->cur;
		m->value[m->nheaders] = "";
		m->nheaders++;
	}
	return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct parse *ps = p->data;
	struct rt_httpmsg *m = ps->m;
	int rc = piece(ps, 3, at, n);

	if (rc < 0 || m->nheaders == 0)
		return 1;
	if (rc == 1)
		m->value[m->nheaders - 1] = ps->cur;
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	(void)p;
	return 1; /* no body: the body is what follows the blank line */
}

static int on_message_complete(http_parser *p)
{
	struct parse *ps = p->data;

	ps->complete = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_headers_complete,
	.on_message_complete = on_message_complete,
};

/* Copies the head `data` (`len` bytes, up to the blank line or the end)
 * to `out` with every line ending in CRLF, then the blank line. A line
 * that starts with a space or a tab (a folded header) is refused. */
static int normalise(const char *data, size_t len, struct rt_buf *out,
		     const char **err)
{
	size_t i = 0, n;
	const char *nl;

	while (i < len) {
		nl = memchr(data + i, '\n', len - i);
		n = nl != NULL ? (size_t)(nl - (data + i)) : len - i;
		if (n > 0 && data[i + n - 1] == '\r')
			n--;
		if (n == 0)
			break; /* the blank line */
		if (i > 0 && (data[i] == ' ' || data[i] == '\t')) {
			*err = "folded header lines are not accepted";
			return -EINVAL;
		}
		if (rt_buf_append(out, data + i, n) < 0 ||
		    rt_buf_append(out, "\r\n", 2) < 0)
			return -ENOMEM;
		i = nl != NULL ? (size_t)(nl - data) + 1 : len;
	}
	return rt_buf_append(out, "\r\n", 2);
}

/* Where the body starts: after the first blank line, or `len`. */
static size_t body_offset(const char *data, size_t len)
{
	size_t i = 0;
	const char *nl;

	while (i < len) {
		nl = memchr(data + i, '\n', len - i);
		if (nl == NULL)
			return len;
		if (nl == data + i || (nl == data + i + 1 && data[i] == '\r'))
			return (size_t)(nl - data) + 1;
		i = (size_t)(nl - data) + 1;
	}
	return len;
}

/* Trims the spaces and tabs around a header value in place. */
static const char *trim(const char *v)
{
	char *s = (char *)v, *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* Whether `s` is an HTTP token (RFC 9110 5.6.2): a header's name. */
static int token(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') ||
		      (*s != '\0' && strchr("!#$%&'*+-.^_`|~", *s) != NULL)))
			return 0;
	return 1;
}

/* Whether `s` may be a header's value: no control character but a tab. */
static int field_value(const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return 0;
	return 1;
}

int rt_httpmsg_parse(const char *data, size_t len, struct rt_httpmsg *m,
		     struct rt_buf *why)
{
	struct rt_buf head = { 0 };
	struct parse ps = { .m = m };
	size_t off, done;
	int i, rc = 0;
	enum http_errno e;

	rt_httpmsg_free(m);
	off = body_offset(data, len);
	if (off > RT_HTTPMSG_HEAD_MAX) {
		ps.err = "the head (request line and headers) is over 65536 "
			 "bytes";
		rc = -EINVAL;
		goto out;
	}
	rc = normalise(data, off, &head, &ps.err);
	if (rc < 0)
		goto out;
	/* Every string is a piece of the head, each with its NUL. */
	rc = rt_buf_reserve(&m->store, head.len * 2 + 16);
	if (rc < 0)
		goto out;
	m->store.data[0] = '\0';
	http_parser_init(&ps.p, HTTP_REQUEST);
	ps.p.data = &ps;
	done = http_parser_execute(&ps.p, &settings, head.data, head.len);
	e = HTTP_PARSER_ERRNO(&ps.p);
	if (ps.err != NULL || !ps.complete || done != head.len ||
	    (e != HPE_OK && e != HPE_PAUSED)) {
		if (ps.err == NULL)
			ps.err = e != HPE_OK && e != HPE_PAUSED
					 ? http_errno_description(e)
					 : "an incomplete head";
		rc = -EINVAL;
		goto out;
	}
	snprintf(m->method, sizeof(m->method), "%s",
		 http_method_str((enum http_method)ps.p.method));
	m->minor = ps.p.http_minor;
	if (ps.p.http_major != 1 || ps.p.http_minor > 1) {
		ps.err = "only HTTP/1.0 and HTTP/1.1 requests are accepted";
		rc = -EINVAL;
	} else if (m->target == NULL || m->target[0] != '/' ||
		   strchr(m->target, '#') != NULL) {
		ps.err = "the target must be a path (\"/...\", a query "
			 "allowed, no fragment)";
		rc = -EINVAL;
	} else if (ps.p.upgrade || (ps.p.flags & F_CHUNKED)) {
		ps.err = ps.p.upgrade ? "a request cannot upgrade the "
					"connection"
				      : "Transfer-Encoding is not accepted: "
					"the body is what follows the blank "
					"line";
		rc = -EINVAL;
	}
	if (rc < 0)
		goto out;
	m->body = data + off;
	m->body_len = len - off;
	for (i = 0; i < m->nheaders; i++) {
		m->value[i] = trim(m->value[i]);
		if (!token(m->name[i]) || !field_value(m->value[i])) {
			ps.err = !token(m->name[i])
					 ? "a header name is not a token"
					 : "a header value holds a control "
					   "character";
			rc = -EINVAL;
			goto out;
		}
		if (strcasecmp(m->name[i], "Transfer-Encoding") == 0) {
			ps.err = "Transfer-Encoding is not accepted: the body "
				 "is what follows the blank line";
			rc = -EINVAL;
			goto out;
		}
	}
	if ((ps.p.flags & F_CONTENTLENGTH) &&
	    ps.p.content_length != (uint64_t)m->body_len) {
		ps.err = "Content-Length is not the length of the body "
			 "after the blank line";
		rc = -EINVAL;
	}
out:
	if (rc == -EINVAL && why != NULL)
		rt_buf_printf(why, "a malformed HTTP request message: %s",
			      ps.err ? ps.err : "?");
	rt_buf_free(&head);
	return rc;
}

void rt_httpmsg_free(struct rt_httpmsg *m)
{
	rt_buf_free(&m->store);
	memset(m, 0, sizeof(*m));
}

int rt_httpmsg_check(const char *data, size_t len, struct rt_buf *why)
{
	struct rt_httpmsg m = { 0 };
	int rc;

	if (!rt_httpmsg_is_request(data, len))
		return 0;
	rc = rt_httpmsg_parse(data, len, &m, why);
	rt_httpmsg_free(&m);
	return rc;
}

int rt_httpmsg_hop_by_hop(const char *name)
{
	static const char *const names[] = { "Content-Length",
					     "Transfer-Encoding", "Fn-Call-Id",
					     "Fn-Deadline", NULL };
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcasecmp(name, names[i]) == 0)
			return 1;
	return 0;
}

const char *rt_httpmsg_status_word(long code)
{
	return code >= 500 && code <= 599 ? "error" : "ok";
}

/* Whether the header line `p` (`n` bytes) is named `name`. */
static int named(const char *p, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n > k && p[k] == ':' && strncasecmp(p, name, k) == 0;
}

int rt_httpmsg_response(const char *head, size_t head_len, const char *body,
			size_t body_len, int head_request, struct rt_buf *out)
{
	size_t i = 0, n, start = 0;
	const char *nl;
	int rc = 0, status = 0, drop = 0;

	/* The last status line starts the final response. */
	while (i < head_len) {
		nl = memchr(head + i, '\n', head_len - i);
		n = nl != NULL ? (size_t)(nl - (head + i)) : head_len - i;
		if (n >= 5 && memcmp(head + i, "HTTP/", 5) == 0) {
			start = i;
			status = 1;
		}
		i += n + (nl != NULL);
	}
	if (!status)
		return -EINVAL;
	for (i = start; i < head_len && rc == 0;) {
		nl = memchr(head + i, '\n', head_len - i);
		n = nl != NULL ? (size_t)(nl - (head + i)) : head_len - i;
		const char *p = head + i;

		i += n + (nl != NULL);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == 0)
			break; /* the blank line */
		if (p[0] == ' ' || p[0] == '\t') {
			if (!drop) /* continues a kept header */
				rc = rt_buf_append(out, p, n) < 0 ||
						     rt_buf_append(out, "\r\n",
								   2) < 0
					     ? -ENOMEM
					     : 0;
			continue;
		}
		drop = named(p, n, "Transfer-Encoding") ||
		       named(p, n, "Connection") || named(p, n, "Keep-Alive") ||
		       (!head_request && named(p, n, "Content-Length"));
		if (!drop)
			rc = rt_buf_append(out, p, n) < 0 ||
					     rt_buf_append(out, "\r\n", 2) < 0
				     ? -ENOMEM
				     : 0;
	}
	if (rc == 0 && !head_request)
		rc = rt_buf_printf(out, "Content-Length: %zu\r\n", body_len);
	if (rc == 0)
		rc = rt_buf_append(out, "\r\n", 2);
	if (rc == 0 && body_len > 0)
		rc = rt_buf_append(out, body, body_len);
	return rc;
}

/* The words after the version in the status line of `head`: "503 Busy". */
static void status_text(const char *head, size_t len, char *out, size_t size)
{
	const char *sp = head ? memchr(head, ' ', len) : NULL;
	size_t n = 0;

	out[0] = '\0';
	if (sp == NULL)
		return;
	sp++;
	while (sp + n < head + len && sp[n] != '\r' && sp[n] != '\n')
		n++;
	snprintf(out, size, "%.*s", (int)n, sp);
}

void rt_httpmsg_result(struct rt_httpmsg_result *r, long code, const char *head,
		       size_t head_len, char *body, size_t body_len,
		       int message, int head_request)
{
	memset(r, 0, sizeof(*r));
	r->status = rt_httpmsg_status_word(code);
	if (strcmp(r->status, "error") == 0) {
		/* A 5xx: its body is the function's message (one line, its
		 * last newline dropped). */
		status_text(head, head_len, r->words, sizeof(r->words));
		r->reason = r->words;
		while (body_len > 0 && (body[body_len - 1] == '\n' ||
					body[body_len - 1] == '\r'))
			body_len--;
		if (body_len > 0) {
			r->body = body;
			r->len = body_len;
		} else {
			r->body = r->words;
			r->len = strlen(r->words);
		}
	} else if (!message) {
		r->body = body;
		r->len = body_len;
	} else if (rt_httpmsg_response(head ? head : "", head_len, body,
				       body_len, head_request, &r->out) < 0) {
		r->status = "error";
		r->reason = "malformed response";
	} else if (r->out.len > RT_WIRE_BODY_MAX) {
		r->status = "failed";
		r->reason = "the response is too large";
	} else {
		r->body = r->out.data;
		r->len = r->out.len;
	}
}

void rt_httpmsg_result_free(struct rt_httpmsg_result *r)
{
	rt_buf_free(&r->out);
}

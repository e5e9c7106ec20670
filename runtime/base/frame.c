/*
 * frame.c - the line and json formats of hot calls.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* Whether `p` is valid UTF-8 (no overlongs, surrogates or values past
 * U+10FFFF), which is what jansson accepts in a string. */
static int utf8_valid(const unsigned char *p, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i];
		size_t n, k;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (k = 1; k <= n; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

int rt_frame_check(int json, const char *body, size_t len, struct rt_buf *why)
{
	if (!json && memchr(body, '\n', len) != NULL) {
		if (why)
			rt_buf_puts(why, "a line call's payload cannot hold a "
					 "newline");
		return -EINVAL;
	}
	if (json && !utf8_valid((const unsigned char *)body, len)) {
		if (why)
			rt_buf_puts(why, "a json call's payload must be UTF-8 "
					 "text");
		return -EINVAL;
	}
	return 0;
}

int rt_frame_request(int json, const char *id, const char *body, size_t len,
		     int64_t deadline_ms, struct rt_buf *out)
{
	json_t *o;
	char *text;
	int rc;

	rc = rt_frame_check(json, body, len, NULL);
	if (rc < 0)
		return rc;
	if (!json) {
		rc = rt_buf_append(out, body, len);
		return rc < 0 ? rc : rt_buf_append(out, "\n", 1);
	}
	o = json_pack("{s:s, s:s%, s:I}", "id", id, "body", body, len,
		      "deadline_ms", (json_int_t)deadline_ms);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (text == NULL)
		return -ENOMEM;
	rc = rt_buf_printf(out, "%s\n", text);
	free(text);
	return rc;
}

int rt_frame_response(int json, const char *id, const char *line, size_t len,
		      int *user_error, struct rt_buf *out)
{
	json_error_t err;
	json_t *o, *v;
	int rc = 0;

	*user_error = 0;
	if (!json) {
		rc = rt_buf_append(out, line, len);
		return rc < 0 ? rc : rt_buf_append(out, "\n", 1);
	}
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
		       &err);
	if (!json_is_object(o)) {
		rt_buf_printf(out, "the response is not a JSON object: %s",
			      o ? "another JSON value" : err.text);
		rc = -EPROTO;
		goto out;
	}
	v = json_object_get(o, "id");
	if (v != NULL &&
	    (!json_is_string(v) || strcmp(json_string_value(v), id) != 0)) {
		rc = 1;
		goto out;
	}
	if ((v = json_object_get(o, "error")) != NULL) {
		*user_error = 1;
		if (json_is_string(v))
			rt_buf_append(out, json_string_value(v),
				      json_string_length(v));
		else
			rt_buf_puts(out, "error");
	} else if (json_is_string(v = json_object_get(o, "body"))) {
		rt_buf_append(out, json_string_value(v), json_string_length(v));
	} else {
		rt_buf_puts(out, "the response has neither a string \"body\" "
				 "nor an \"error\"");
		rc = -EPROTO;
	}
out:
	json_decref(o);
	return rc;
}

int rt_frame_response_id(const char *line, size_t len, char *id, size_t n)
{
	json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	json_t *v = json_object_get(o, "id");
	int rc = 0;

	if (json_is_string(v)) {
		if (json_string_length(v) < n &&
		    strlen(json_string_value(v)) == json_string_length(v)) {
			memcpy(id, json_string_value(v),
			       json_string_length(v) + 1);
			rc = 1;
		} else {
			rc = -ERANGE;
		}
	}
	json_decref(o);
	return rc;
}

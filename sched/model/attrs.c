/*
 * attrs.c - a function's attribute files: a write validated, committed
 * to the store and applied (face/tree.c's order), a refused one recorded in
 * the function's error file and the journal, and the files rendered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "owners.h"
#include "quota.h"
#include "../act/reconcile.h"

/* ============================================================== attributes */

void sched__set_error(struct sched_function *fn, const char *reason)
{
	struct rt_buf line = { 0 };
	char when[32];
	size_t i;

	rt_format_time(rt_now_ms(), when);
	rt_buf_printf(&line, "%s %s\n", when, reason);
	/* One line of UTF-8 text, and nothing a terminal would act on:
	 * control bytes and bytes that are not UTF-8, quoted back in the
	 * reason (a user's value, a function's output), become '?'. */
	for (i = 0; line.data != NULL && i + 1 < line.len; i++) {
		size_t k = rt_utf8_char(line.data + i, line.len - 1 - i, NULL);

		if (k > 1)
			i += k - 1;
		else if (k == 0 || (unsigned char)line.data[i] < ' ' ||
			 line.data[i] == 0x7f)
			line.data[i] = '?';
	}
	if (line.data != NULL) {
		free(fn->error);
		fn->error = line.data; /* takes ownership */
	}
}

void sched__reject(struct sched *s, struct sched_function *fn, const char *file,
		   int err, const char *reason)
{
	struct rt_buf kvs = { 0 };

	sched__set_error(fn, reason);
	rt_buf_kv(&kvs, "file", file);
	rt_buf_kv(&kvs, "errno", rt_errno_name(err));
	rt_buf_kv(&kvs, "reason", reason);
	sched__event(s, &fn->obj, "function.rejected", kvs.data);
	rt_buf_free(&kvs);
}

/* Makes `next` (uninitialised) the spec `fn` would have with `buf` as the
 * value of attribute `a`. Returns 0, or -EINVAL/-EACCES/-ENOMEM with the
 * refusal journalled and `next` at the defaults. */
static int prepare(struct sched *s, struct sched_function *fn,
		   enum sched_attr a, const char *buf, size_t len,
		   const struct sched_caller *who, struct sched_spec *next)
{
	struct rt_buf why = { 0 };
	int rc = 0, err = EINVAL, i;

	sched_spec_init(next);
	if (!sched_attr_writable(a)) {
		rt_buf_puts(&why, "the file is read-only");
		rc = -EACCES;
		err = EACCES;
	} else if (len > SCHED_VALUE_MAX) {
		rt_buf_printf(&why, "a value holds at most %u bytes",
			      SCHED_VALUE_MAX);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = sched_spec_copy(next, &fn->spec);
	if (rc == 0)
		rc = sched_spec_parse(next, a, buf, len, &why);
	if (rc == 0)
		rc = sched_spec_check(next, &why);
	/* Leaving the sandbox is root's to allow, through any file. */
	if (rc == 0 && !sched_caller_is_root(who) &&
	    (i = sched_spec_root_only_changed(&fn->spec, next)) >= 0) {
		rt_buf_printf(&why, "only root may change %s",
			      sched_attr_name((enum sched_attr)i));
		rc = -EPERM;
		err = EPERM;
	}
	if (rc == 0 && (rc = sched__quota_spec(s, fn, next, &why)) < 0)
		err = EDQUOT;
	if (rc == -err)
		sched__reject(s, fn, sched_attr_name(a), err,
			      why.data ? why.data : "invalid value");
	if (rc < 0)
		sched_spec_free(next);
	rt_buf_free(&why);
	return rc;
}

int sched_function_check(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who)
{
	struct sched_spec next;
	int rc = prepare(s, fn, a, buf, len, who, &next);

	sched_spec_free(&next);
	return rc;
}

int sched__function_write(struct sched *s, struct sched_function *fn,
			  enum sched_attr a, const char *buf, size_t len,
			  const struct sched_caller *who, store_done_fn done,
			  void *arg)
{
	struct rt_buf dump = { 0 }, kvs = { 0 }, why = { 0 };
	struct sched_spec next;
	struct store_row r;
	int64_t now = rt_now_ms();
	int rc = prepare(s, fn, a, buf, len, who, &next);

	if (rc < 0)
		goto out;
	if (sched_spec_equal(&next, &fn->spec))
		goto out; /* nothing to change, no new revision */

	/* What is stored must read back as what is acknowledged. */
	rc = sched_spec_dump_checked(&next, &dump, &why);
	if (rc == -EIO) {
		sched_obj_path(&fn->obj, &kvs);
		rt_log(RT_LOG_ERROR, "%s/%s: %s", kvs.data ? kvs.data : "?",
		       sched_attr_name(a), why.data);
		sched__reject(s, fn, sched_attr_name(a), EIO, why.data);
		goto out;
	}
	if (rc < 0)
		goto out;
	sched__obj_row(&fn->obj, &r);
	r.spec = dump.data;
	r.revision = fn->revision + 1;
	r.run_revision = sched_spec_needs_restart(&fn->spec, &next)
				 ? r.revision
				 : fn->run_revision;
	r.updated_ms = now;
	rc = store_begin(s->store);
	if (rc == 0)
		rc = store_update(s->store, &r);
	if (rc == 0)
		rc = store_commit_then(s->store, done, arg); /* apply_spec */
	else
		store_rollback(s->store);
	if (rc < 0)
		sched__reject(s, fn, sched_attr_name(a), -rc,
			      "the store could not be written");
out:
	sched_spec_free(&next);
	rt_buf_free(&dump);
	rt_buf_free(&kvs);
	rt_buf_free(&why);
	return rc;
}

int sched_function_write(struct sched *s, struct sched_function *fn,
			 enum sched_attr a, const char *buf, size_t len,
			 const struct sched_caller *who)
{
	return sched__function_write(s, fn, a, buf, len, who, NULL, NULL);
}

int sched_function_render(const struct sched_function *fn, enum sched_attr a,
			  struct rt_buf *out)
{
	switch (a) {
	case SCHED_ATTR_REVISION:
		return rt_buf_printf(out, "%llu\n",
				     (unsigned long long)fn->revision);
	case SCHED_ATTR_ERROR:
		return fn->error ? rt_buf_puts(out, fn->error) : 0;
	default: return sched_spec_render(&fn->spec, a, out);
	}
}

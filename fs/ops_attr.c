/*
 * ops_attr.c - attribute files. The writes of one open of an attribute file
 * make one value, applied once, at close (FUSE flush): one revision, one
 * restart. The writes add up, whatever the file: a write at the offset where
 * the previous ended adds to the value, one at offset 0 (or anywhere else)
 * starts it over (bash writes `printf '/a\n/b rw\n' > mounts` one line per
 * write(2)). Each write is checked at once as if the value written so far were
 * all of it, so its errno comes from the write(2) that caused it (spec 6), and
 * a refused write spoils the open: its later writes fail with the same errno
 * and its close applies nothing. A value that is only begun (it does not end in
 * a newline; config: its JSON is not closed) and not good yet is not refused:
 * the next write or the close judges it whole (sched_value_unfinished). After a
 * close that applied it, the next write goes on with the value of env, mounts
 * or config
 * (`exec 3>env`) and starts a one-value file over. With O_APPEND, what an open
 * adds to env, mounts or config goes after the value the function has when it
 * is checked and applied.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* Points `*v` at the value the open would apply now: its writes, after
 * the current value when it appends to env or config (`tmp` holds it). */
static int attr_value(struct handle *h, struct rt_buf *tmp, const char **v,
		      size_t *len)
{
	struct sched_wait *w;
	int rc = 0;

	if (h->multi && h->append) {
		rc = fs_render(h->fs, &h->node, tmp, NULL, NULL, &w);
		if (rc == 0)
			rc = rt_buf_append(tmp, h->value.data, h->value.len);
		*v = tmp->data;
		*len = tmp->len;
	} else {
		*v = h->value.data;
		*len = h->value.len;
	}
	if (*v == NULL)
		*v = "";
	return rc;
}

/* Whether `owner` wrote what the open holds: only its close applies it,
 * not one of a child that inherited the descriptor and never wrote (a
 * command substitution inside `{ ...; } > env`). */
int fs_attr_owner_wrote(const struct handle *h, uint64_t owner)
{
	int i;

	if (h->nowners > ATTR_OWNERS)
		return 1; /* too many writers to tell: any close applies */
	for (i = 0; i < h->nowners; i++)
		if (h->owners[i] == owner)
			return 1;
	return 0;
}

static void attr_note_owner(struct handle *h, uint64_t owner)
{
	if (fs_attr_owner_wrote(h, owner))
		return;
	if (h->nowners < ATTR_OWNERS)
		h->owners[h->nowners] = owner;
	h->nowners++;
}

/* Checks the value `v` the open holds after a write: a refusal is
 * recorded, unless the value is only begun and may still become good
 * (then its close, or a later write, judges it). Returns 0 or -errno. */
static int attr_check(struct handle *h, struct sched_function *fn,
		      const char *v, size_t len)
{
	enum sched_attr a = (enum sched_attr)(h->node.kind - FS_FN_ATTR);

	assert(h->node.kind >= FS_FN_ATTR && h->node.kind < FS_KIND_COUNT);

	if (len <= SCHED_VALUE_MAX && sched_value_unfinished(a, v, len) &&
	    sched_value_probe(fn, a, v, len) < 0)
		return 0;
	return sched_function_check(h->fs->sched, fn, a, v, len, &h->who.who);
}

/* Takes one write: checked, not applied. Returns 0 or -errno. */
int fs_attr_write(struct handle *h, const char *buf, size_t size, off_t off,
		  uint64_t owner)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	struct rt_buf tmp = { 0 };
	const char *v;
	size_t len;
	int rc;

	assert(h->attr);
	if (h->spoiled)
		return -h->spoiled;
	if ((h->applied && !h->multi) ||
	    (!h->append && (off == 0 || (uint64_t)off != h->value.len)))
		rt_buf_reset(&h->value);
	h->applied = 0;
	rc = rt_buf_append(&h->value, buf, size);
	if (rc == 0)
		rc = attr_value(h, &tmp, &v, &len);
	if (rc == 0)
		rc = attr_check(h, fn, v, len);
	if (rc < 0) {
		h->spoiled = -rc;
		h->held = 0;
		rt_buf_free(&h->value);
	} else {
		if (!h->held)
			h->nowners = 0;
		h->held = 1;
		attr_note_owner(h, owner);
	}
	/* A spoiled open holds nothing to apply. */
	assert(!h->spoiled || !h->held);
	rt_buf_free(&tmp);
	return rc;
}

/* Applies the value held by `h`. With `req` (a close), returns 0 or
 * -errno when done, or SCHED_LATER when fs_op_done will reply to `req`;
 * without (a release), nobody waits for it. */
int fs_attr_apply(struct handle *h, fuse_req_t req)
{
	struct rt_buf tmp = { 0 };
	struct sched_wait *w;
	struct op_wait *ow = NULL;
	const char *v;
	size_t len;
	int rc;

	assert(h->attr);
	if (h->spoiled)
		return -h->spoiled;
	if (!h->held)
		return 0;
	h->held = 0;
	if (req != NULL) {
		ow = calloc(1, sizeof(*ow));
		if (ow == NULL)
			return -ENOMEM;
		ow->req = req;
		ow->fs = h->fs;
		ow->kind = SCHED_OP_ATTR;
		ow->h = h;
	}
	rc = attr_value(h, &tmp, &v, &len);
	if (rc == 0)
		rc = fs_write(h->fs, &h->node, v, len, &h->who.who,
			      ow ? fs_op_done : NULL, ow, &w);
	if (h->append)
		rt_buf_reset(&h->value); /* part of the current value now */
	h->applied = 1;
	if (rc < 0)
		h->spoiled = -rc;
	if (rc != SCHED_LATER)
		free(ow);
	rt_buf_free(&tmp);
	return rc;
}

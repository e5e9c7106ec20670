/*
 * stream.c - files rendered as they are read: the root's status and
 * metrics, whose size grows with the functions. A reader's handle keeps
 * a cursor of sched/ and a window of the rendering, the bytes from the
 * offset it has reached to as far as was rendered; a read renders whole
 * lines of the next functions until it can be answered, and drops what
 * lies before its offset. The memory of a reader is its window (about
 * one read) and the cursor's list of functions, whatever the file's size.
 * They are rendered for their reader: the credentials taken at the open
 * choose the tenants shown, for every rendering of that open.
 */
#include <errno.h>
#include <string.h>

#include "fs.h"

/* The most a step of rendering adds while a reader skips ahead. */
#define SKIP_PIECE (64u << 10)

/* The sched file of a node rendered as it is read, or -1. */
static int stream_file(const struct fs_node *n)
{
	switch (n->kind) {
	case FS_STATUS: return SCHED_ROOT_STATUS;
	case FS_STATS: return SCHED_ROOT_STATS;
	case FS_METRICS: return SCHED_ROOT_METRICS;
	default: return -1;
	}
}

int fs_node_streamed(const struct fs_node *n)
{
	return stream_file(n) >= 0;
}

/* Drops the bytes of the window before offset `o` (all of them when `o`
 * lies beyond it). */
static void drop_before(struct fs_stream *st, uint64_t o)
{
	size_t k;

	if (o <= st->off)
		return;
	k = o - st->off < st->win.len ? (size_t)(o - st->off) : st->win.len;
	if (k == 0)
		return;
	memmove(st->win.data, st->win.data + k, st->win.len - k + 1);
	st->win.len -= k;
	st->off += k;
}

int fs_stream_read(struct fs *fs, const struct fs_node *n, struct fs_stream *st,
		   size_t size, off_t off, const char **p, size_t *len)
{
	uint64_t o = (uint64_t)off;
	int f = stream_file(n), rc = 0;

	*p = NULL;
	*len = 0;
	if (f < 0 || off < 0) {
		rc = -EINVAL;
		goto out;
	}
	/* A read from 0 starts a fresh rendering, as it did when files were
	 * rendered whole; so does one before the window (a seek back), from
	 * the start, skipping to its offset, as Linux's seq_file does. */
	if (st->cur == NULL || o == 0 || o < st->off) {
		sched_cursor_close(st->cur);
		st->cur = NULL;
		rt_buf_reset(&st->win);
		st->off = 0;
		st->end = 0;
		rc = sched_cursor_open(fs->sched, (enum sched_file)f,
				       &st->who.who, &st->cur);
		if (rc < 0)
			goto out;
	}
	drop_before(st, o);
	while (!st->end && st->off + st->win.len < o + size) {
		size_t before = st->win.len;
		uint64_t want = o + size - (st->off + st->win.len);

		if (st->off < o && want > SKIP_PIECE)
			want = SKIP_PIECE; /* skipping: a piece at a time */
		rc = sched_cursor_next(fs->sched, st->cur, &st->win,
				       (size_t)want);
		if (rc < 0)
			goto out;
		if (st->win.len == before)
			st->end = 1;
		drop_before(st, o);
	}
	if (st->off == o && st->win.len > 0) {
		*p = st->win.data;
		*len = st->win.len < size ? st->win.len : size;
	}
out:
	return rc;
}

void fs_stream_free(struct fs_stream *st)
{
	fs_caller_done(&st->who);
	sched_cursor_close(st->cur);
	st->cur = NULL;
	rt_buf_free(&st->win);
	st->off = 0;
	st->end = 0;
}

int fs_stream_size(struct fs *fs, const struct fs_node *n,
		   const struct sched_caller *who, size_t *size)
{
	int f = stream_file(n);

	*size = 0;
	if (f < 0)
		return -EINVAL;
	return sched_cursor_size(fs->sched, (enum sched_file)f, who, size);
}

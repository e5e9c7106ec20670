/*
 * ops_events.c - the reads of files that grow or are rendered as they
 * are read: the journal (events), a tenant's part of it, and the root's
 * status, stats and metrics (stream.c).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* Reads the journal at absolute offsets, live. A reader that started
 * before the oldest kept event is moved forward to it once. */
void fs_events_read(fuse_req_t req, struct handle *h, size_t size, off_t off)
{
	struct fs *fs = req_fs(req);
	uint64_t pos = (uint64_t)off + h->skew, first;
	const char *p;
	size_t n = sched_events_at(fs->sched, pos, &p, &first);

	if (n == 0 && pos < first) {
		h->skew += first - pos;
		n = sched_events_at(fs->sched, first, &p, &first);
	}
	fuse_reply_buf(req, p, n < size ? n : size);
}

/* A tenant's part of the journal, as fs_events_read. Its lines are not
 * contiguous in the journal: they are copied. */
void fs_tenant_events_read(fuse_req_t req, struct handle *h, size_t size,
			   off_t off)
{
	struct fs *fs = req_fs(req);
	uint64_t pos = (uint64_t)off + h->skew, first;
	char *buf = malloc(size ? size : 1);
	size_t n;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = sched_tenant_events_at(fs->sched, h->node.obj, pos, buf, size,
				   &first);
	if (n == 0 && pos < first) {
		h->skew += first - pos;
		n = sched_tenant_events_at(fs->sched, h->node.obj, first, buf,
					   size, &first);
	}
	assert(n <= size); /* copied into `buf` */
	fuse_reply_buf(req, buf, n);
	free(buf);
}

/* The root's status and metrics: rendered as far as the read reaches,
 * from the offset it starts at (stream.c). */
void fs_streamed_read(fuse_req_t req, struct handle *h, size_t size, off_t off)
{
	const char *p;
	size_t n;
	int rc = fs_stream_read(h->fs, &h->node, &h->stream, size, off, &p, &n);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, p, n);
}

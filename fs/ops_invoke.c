/*
 * ops_invoke.c - invoke, a transaction file (spec 7): writes add up to a
 * request, the first read starts the call and waits for its end, the reads then
 * return the response and end of file. A write after that begins a new call, so
 * one open file serves call after call. A request written and never read is
 * started at the last close, as an asynchronous call.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* Replies to a read from the finished call's response. */
static void reply_response(fuse_req_t req, struct handle *h, size_t size)
{
	size_t n;

	assert(h->resp_pos <= h->resp.len);
	n = h->resp.len - h->resp_pos;
	if (h->call_err != 0) {
		fuse_reply_err(req, h->call_err);
		return;
	}
	if (n > size)
		n = size;
	fuse_reply_buf(req, n ? h->resp.data + h->resp_pos : NULL, n);
	h->resp_pos += n;
}

static void on_call_done(void *arg, int err, const char *body, size_t len)
{
	struct handle *h = arg;
	fuse_req_t r = h->reader;

	h->call = NULL;
	h->fwd = NULL;
	h->call_state = CALL_DONE;
	h->call_err = err;
	rt_buf_reset(&h->resp);
	h->resp_pos = 0;
	if (err == 0 && len > 0 && rt_buf_append(&h->resp, body, len) < 0)
		h->call_err = ENOMEM;
	if (r != NULL) {
		h->reader = NULL;
		reply_response(r, h, h->reader_size);
	}
}

/* Ctrl-C on a reader: its wait ends with EINTR; the call goes on, is
 * counted, and a later read of the same open file still gets its end. */
static void on_call_interrupt(fuse_req_t req, void *arg)
{
	struct handle *h = arg;

	if (h->reader != req || !rt_interrupt_wanted(fuse_req_ctx(req)->pid))
		return;
	h->reader = NULL;
	fuse_reply_err(req, EINTR);
}

/* Gives the bytes of the request `h` holds back to the quotas: before
 * its call starts, which takes them for its queue. */
static void req_unhold(struct handle *h)
{
	if (h->req_held > 0)
		sched_quota_release(h->fs->sched, h->req_tenant, h->req_held);
	h->req_held = 0;
}

/* Frees the request `h` holds, and gives its bytes back. */
void fs_invoke_drop(struct handle *h)
{
	req_unhold(h);
	rt_buf_free(&h->req);
}

/* Leaves the transaction under way, done or spoiled, to start a new one. */
static void call_reset(struct handle *h)
{
	if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	h->call = NULL;
	h->fwd = NULL;
	h->call_state = CALL_NONE;
	h->call_err = 0;
	h->spoiled = 0;
	rt_buf_reset(&h->resp);
	h->resp_pos = 0;
	fs_invoke_drop(h);
}

static void on_fwd_call_done(void *arg, int err, const char *body, size_t len)
{
	on_call_done(arg, err, body, len);
}

/* Starts the call of the request `h` holds: here, or on a follower of a
 * cluster at the leader, as the opener of `h`. `done`
 * NULL: an asynchronous call. Returns 0 or -errno (its `done` is then
 * not called). */
static int call_start(struct handle *h, struct sched_function *fn,
		      sched_call_fn done)
{
	struct rt_buf path = { 0 };
	int rc;

	if (!sched_fwd_active(h->fs->sched))
		return sched_call_start(h->fs->sched, fn,
					h->req.data ? h->req.data : "",
					h->req.len, done, h, &h->call);
	rc = fs_node_path(&h->node, &path);
	if (rc == 0)
		rc = sched_fwd_call(h->fs->sched, path.data,
				    h->req.data ? h->req.data : "", h->req.len,
				    &h->who.who, done ? on_fwd_call_done : NULL,
				    h, &h->fwd);
	rt_buf_free(&path);
	return rc == SCHED_LATER ? 0 : rc;
}

/* A piece of the request. A refused one (EFBIG, EINVAL, EOPNOTSUPP) is
 * taken in no part and spoils the transaction: its later writes and its
 * read fail with the same errno, and its close starts nothing. */
void fs_invoke_write(fuse_req_t req, struct handle *h, const char *buf,
		     size_t size)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	int rc;

	assert(!h->attr && fs_node_transaction(&h->node));
	if (h->call_state != CALL_NONE)
		call_reset(h);
	assert(h->call_state == CALL_NONE);
	if (h->spoiled) {
		rc = -h->spoiled;
		goto out;
	}
	if (size > SCHED_CALL_MAX - h->req.len)
		rc = sched_call_check(h->fs->sched, fn, NULL,
				      (size_t)SCHED_CALL_MAX + 1, 1);
	else
		rc = sched_quota_hold(h->fs->sched, fn, size);
	if (rc == 0 && size > 0) {
		h->req_tenant = sched_tenant_of(&fn->obj)->id;
		h->req_held += size;
		rc = rt_buf_append(&h->req, buf, size);
	}
	if (rc == 0)
		rc = sched_call_check(h->fs->sched, fn, h->req.data, h->req.len,
				      1);
	if (rc < 0) {
		h->spoiled = -rc;
		fs_invoke_drop(h);
	}
out:
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

void fs_invoke_read(fuse_req_t req, struct handle *h, size_t size)
{
	struct sched_function *fn = (struct sched_function *)h->node.obj;
	int rc;

	if (h->call_state == CALL_NONE && h->spoiled) {
		/* The refused request ends like a call that failed. */
		h->call_state = CALL_DONE;
		h->call_err = h->spoiled;
		h->spoiled = 0;
	} else if (h->call_state == CALL_NONE) {
		req_unhold(h);
		rc = call_start(h, fn, on_call_done);
		fs_invoke_drop(h); /* the call has its copy */
		if (rc < 0) {
			h->call_state = CALL_DONE;
			h->call_err = -rc;
		} else {
			h->call_state = CALL_UNDER_WAY;
		}
	}
	if (h->call_state == CALL_DONE) {
		reply_response(req, h, size);
		return;
	}
	if (h->reader != NULL) {
		fuse_reply_err(req, EBUSY); /* one reader waits at a time */
		return;
	}
	/* Neither none (started above) nor done (answered above). */
	assert(h->call_state == CALL_UNDER_WAY);
	h->reader = req;
	h->reader_size = size;
	fuse_req_interrupt_func(req, on_call_interrupt, h);
}

/* The last close: a request never read, and not spoiled, is started as an
 * async call. */
void fs_invoke_release(struct handle *h)
{
	req_unhold(h);
	if (h->call_state == CALL_NONE && !h->spoiled && h->req.len > 0)
		call_start(h, (struct sched_function *)h->node.obj, NULL);
	else if (h->call != NULL)
		sched_call_detach(h->fs->sched, h->call);
	if (h->fwd != NULL)
		sched_fwd_cancel(h->fs->sched, h->fwd);
	h->call = NULL;
	h->fwd = NULL;
	fs_invoke_drop(h);
	rt_buf_free(&h->resp);
}

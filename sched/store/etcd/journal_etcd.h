/*
 * journal_etcd.h - the journal of a cluster of controllers, kept in etcd
 * (issue 14): every line a controller journals is sent to etcd under
 * P/ev/ (P = /fnfs/NAME), and every controller, the writer too, appends
 * to its `struct events` only the lines its own watch of P/ev/ brings
 * back, in key order. A line's key is its absolute offset in the
 * cluster's journal, so every mount shows the same bytes at the same
 * offsets.
 *
 * Keys:
 *   P/evh                      the next line's offset (decimal text)
 *   P/ev/NNNNNNNNNNNNNNNNNNNN  a line at offset N (%020llu): the value is
 *                              "TENANT MS WRITER LINE", TENANT the
 *                              tenant whose journal has the line too
 *                              ("-": none), MS its time (epoch ms),
 *                              WRITER the sending controller's random id
 *                              (16 hex digits), LINE the line and its
 *                              '\n'
 *
 * Lines are sent in batches, one txn each: the puts of the lines and of
 * P/evh, if P/evh still holds the offset the batch was numbered from (a
 * compare-and-set; a lost race numbers the batch again from the winner's
 * P/evh). The txn that takes P/evh past `keep` bytes after the oldest
 * kept line deletes the lines older than the last 3/4 of `keep` in the
 * same txn. While etcd cannot be reached the lines wait in a bounded
 * queue (the oldest go first, counted in a journal.dropped line).
 *
 * Everything runs on the loop; no call blocks but journal_etcd_open,
 * which runs the loop for its first read (bounded by the client's
 * timeout).
 */
#ifndef FNFS_SCHED_JOURNAL_ETCD_H
#define FNFS_SCHED_JOURNAL_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../../../runtime/base/rt.h"
#include "etcd.h"
#include "../../model/events.h"

#define JOURNAL_ETCD_KEEP (4u << 20) /* bytes kept in etcd */
/* Waiting to be sent, at most: bytes and lines. A burst of 100,000
 * instances starting journals 100,000 lines (about 15 MiB), which the
 * one batch in flight sends at a few thousand lines a second. */
#define JOURNAL_ETCD_QUEUE	 (32u << 20)
#define JOURNAL_ETCD_QUEUE_LINES 262144
#define JOURNAL_ETCD_BATCH	 100	      /* lines in one txn at most */
#define JOURNAL_ETCD_BATCH_MAX	 (512u << 10) /* bytes in one txn at most */

struct journal_etcd;

/* Called after the line at absolute offset `at` was appended to the
 * journal (it is its last line), with the tenant it belongs to (NULL:
 * none). */
typedef void (*journal_etcd_line_fn)(void *arg, const char *tenant,
				     uint64_t at);

/* What a controller knows of the cluster's journal. */
struct journal_etcd_state {
	uint64_t head;	  /* P/evh as last seen: the journal's end in etcd */
	uint64_t oldest;  /* the oldest line etcd may still keep (about) */
	size_t queued;	  /* lines waiting to be sent */
	uint64_t dropped; /* lines dropped from a full queue, in all */
	int watching;	  /* the watch is up */
};

/* Opens the journal of cluster `cluster` on the etcd of `cfg` (a client
 * of its own), keeping about `keep` bytes in etcd (0: JOURNAL_ETCD_KEEP).
 * Reads the kept lines into `ev` (its lines are dropped first, and
 * ev->first becomes the first kept line's offset), running `loop` for
 * that read alone, then watches from the revision read. When that read
 * fails the journal starts empty and the read is tried again every
 * 500 ms. `fn` (may be NULL) hears of each line appended. Returns 0,
 * -EINVAL for a bad cluster name or configuration, or -ENOMEM. */
int journal_etcd_open(struct journal_etcd **out, uv_loop_t *loop,
		      const struct etcd_config *cfg, const char *cluster,
		      size_t keep, struct events *ev, journal_etcd_line_fn fn,
		      void *arg);

/* Queues `n` bytes of `line` (one line, ending in '\n') made at time
 * `ms`, of tenant `tenant` (NULL: none), for the cluster's journal: it
 * is sent on a later loop turn and reaches `ev` when the watch brings it
 * back. May be called from anywhere on the loop thread, inside any
 * callback. A line longer than a batch is cut (and ends in '\n'). */
void journal_etcd_send(struct journal_etcd *j, int64_t ms, const char *tenant,
		       const char *line, size_t n);

/* Sends what is queued at once from now on, without waiting for more
 * lines (the controller is going). NULL: a no-op. */
void journal_etcd_flush(struct journal_etcd *j);

/* Whether nothing queued is left to wait for: the queue is empty, or its
 * lines cannot be sent now (the first read has not ended, or the last
 * txn failed). 1 for NULL. */
int journal_etcd_flushed(const struct journal_etcd *j);

/* Makes no etcd call any more and closes its handles (the loop must run
 * once more to free them); lines still queued are lost. NULL: a no-op.
 * Not from inside one of its own client's callbacks. */
void journal_etcd_stop(struct journal_etcd *j);

/* Stops (journal_etcd_stop) and frees `j` (NULL: a no-op). */
void journal_etcd_close(struct journal_etcd *j);

/* Fills `out` with what `j` knows now. */
void journal_etcd_state(const struct journal_etcd *j,
			struct journal_etcd_state *out);

/* `out` := the etcd value of a line (see above): `tenant` (NULL: "-"),
 * `ms`, `writer` (16 hex digits) and `n` bytes of `line`. Returns 0,
 * -EINVAL for a tenant that is not rt_name_valid or a bad writer, or
 * -ENOMEM. */
int journal_etcd_value(struct rt_buf *out, const char *tenant, int64_t ms,
		       const char *writer, const char *line, size_t n);

/* A value read back: where its parts are in the value. */
struct journal_etcd_entry {
	char tenant[64];  /* "" for none */
	int64_t ms;	  /* the line's time */
	char writer[17];  /* the writer's id */
	const char *line; /* in the value */
	size_t len;	  /* bytes of line, its '\n' included */
};

/* Reads `n` bytes of `value` into `e` (its line points into `value`).
 * Returns 0, or -EINVAL for what is not such a value (a bad tenant, a
 * line that is empty or does not end in '\n'). */
int journal_etcd_parse(const char *value, size_t n,
		       struct journal_etcd_entry *e);

/* The offset of P/ev/ key `key` (`n` bytes) of prefix `pre`
 * ("/fnfs/NAME/ev/") in `*off`. Returns 0 or -EINVAL. */
int journal_etcd_key_offset(const char *pre, const char *key, size_t n,
			    uint64_t *off);

#endif

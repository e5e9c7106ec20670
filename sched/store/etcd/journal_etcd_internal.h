/*
 * journal_etcd_internal.h - what the halves of the cluster's journal
 * (journal_etcd.h) share: journal_etcd.c reads and follows it,
 * journal_etcd_send.c sends this controller's lines.
 */
#ifndef FNFS_SCHED_STORE_JOURNAL_ETCD_INTERNAL_H
#define FNFS_SCHED_STORE_JOURNAL_ETCD_INTERNAL_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "etcd_keys.h"
#include "journal_etcd.h"

/* How often the timer looks: the watch when it is down, the first read
 * when it failed, a batch that failed to be sent. */
#define TICK_MS 500

/* How long a line waits for others to share its txn, when fewer than a
 * batch wait: a txn is a Raft proposal and an fsync on every member, and
 * one per journal line doubled etcd's work for a write of an attribute
 * (docs/performance.md, "Writes on a cluster"). */
#define LINGER_MS 20

/* One line waiting to be sent: its etcd value, and where its line is. */
struct qline {
	char *value; /* owned: "TENANT MS WRITER LINE" */
	size_t len;  /* bytes of value */
	size_t line; /* bytes of its line (the value's tail) */
};

struct journal_etcd {
	uv_loop_t *loop;
	struct etcd_client *c; /* owned; NULL once stopped */
	char *pre;	       /* "P/ev/", owned */
	char *pre_end;	       /* its range end ("P/ev0"), owned */
	char *head_key;	       /* "P/evh", owned */
	char *lo, *hi;	       /* the watched range: "P/ev" to "P/ew", owned */
	char writer[17];       /* this controller's id in its values */
	size_t keep;	       /* bytes etcd keeps (about) */
	struct events *ev;     /* borrowed: where lines go */
	journal_etcd_line_fn fn;
	void *arg;

	/* what etcd has */
	uint64_t head;	  /* P/evh: the next line's offset */
	int64_t head_rev; /* the revision `head` was read at */
	uint64_t oldest;  /* no line kept before it (a trim's lower end) */
	int64_t rev;	  /* the newest revision applied */
	int synced;	  /* a first read ended */
	int syncing;	  /* a read is under way */
	int resync;	  /* read again (the watch's revision was compacted) */
	int64_t sync_rev; /* the revision the read is at */
	uint64_t sync_from; /* the next page starts at this offset */
	struct etcd_watch *watch;
	int watching;

	/* what waits to be sent: q[0..inflight) is the batch */
	struct qline *q;
	size_t nq, capq, qbytes;
	uint64_t dropped, dropped_all; /* not reported yet; in all */
	uint64_t linger_end; /* rt_mono_ms() before which a short batch waits */
	size_t inflight;     /* lines of the batch */
	uint64_t base;	     /* the batch's first offset */
	int base_known;	     /* P/evh was there when numbered */
	uint64_t trim_to;    /* the batch deletes lines before it */
	int busy;	     /* its txn is under way */
	int64_t retry_at;    /* rt_mono_ms: not sent again before */
	int failing;	     /* the last txn failed (logged once) */

	uv_timer_t *tick; /* every TICK_MS */
	uv_timer_t *kick; /* the next loop turn: send */
	int flushing;	  /* the controller is going: no linger */
	int stopped;
};

/* Reads P/evh, then every kept line, at one revision. */
void journal_etcd__read_all(struct journal_etcd *j);

void journal_etcd__start_watch(struct journal_etcd *j);

void journal_etcd__qline_free(struct qline *l);

/* Takes the first `n` lines off the queue. */
void journal_etcd__pop(struct journal_etcd *j, size_t n);

/* Puts a line at index `at` of the queue (it takes `v`). */
int journal_etcd__insert(struct journal_etcd *j, size_t at, char *v, size_t len,
			 size_t line);

void journal_etcd__on_kick(uv_timer_t *t);

void journal_etcd__on_tick(uv_timer_t *t);

#endif

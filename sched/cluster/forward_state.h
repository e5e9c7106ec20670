/*
 * forward_state.h - the state of forwarding (forward.c, the follower's
 * side; forward_serve.c, the leader's), private to sched/cluster/.
 */
#ifndef FNFS_SCHED_FORWARD_STATE_H
#define FNFS_SCHED_FORWARD_STATE_H

#include <openssl/ssl.h>
#include <uv.h>

#include "../../runtime/base/net.h"
#include "../../runtime/base/tls.h"
#include "../internal.h"
#include "forward.h"

/* Connect, handshake and `peered` must end within this. */
#define FWD_LINK_MS 3000
/* How often the leader is checked while requests are in flight. */
#define FWD_WATCH_MS 200
/* Beyond the leader's own bound of a request: the link's time. */
#define FWD_MARGIN_MS 2000
/* The most groups a forwarded caller carries. */
#define FWD_GROUPS_MAX 1024

enum { LINK_CONNECTING, LINK_PEERING, LINK_READY, LINK_DEAD };

/* The follower's connection to the leader. */
struct fwd_link {
	struct sched_fwd_state *st; /* NULL once the state forgot it */
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t timer;	/* bounds the time to `peered` */
	struct rt_tls tls;	/* TLS, unless plain */
	int plain;		/* plain TCP (--insecure, no CA) */
	struct rt_wire_out out; /* frames not yet written */
	struct rt_buf in;	/* bytes not yet decoded */
	struct rt_buf dec;	/* TLS: decrypted, not yet decoded */
	char leader[128];	/* the leader's name */
	char addr[RT_NET_ADDR_MAX];
	int state;
	int handles; /* open handles: freed at 0 */
};

/* A forwarded request on the follower. */
struct sched_fwd {
	uint64_t seq;
	struct sched_fwd_state *st;
	sched_fwd_fn done; /* NULL: nobody waits */
	void *arg;
	uv_timer_t timer; /* the bound */
	int bound_ms;	  /* its length */
	char *path;	  /* owned */
	json_t *header;	  /* owned until sent */
	char *body;	  /* owned until sent */
	size_t len;
	int sent;
	int write;		/* op "write" */
	int ok;			/* the leader answered it: done */
	int catching;		/* waiting for this model to see it */
	int closed;		/* its timer closed: freed by that wait */
	struct sched_fwd *next; /* in st->queue while not sent */
};

/* A request of a follower on the leader. */
struct sched_fwd_in {
	struct sched_fwd_state *st;
	struct conn *c; /* NULL once the follower is gone */
	uint64_t seq;
	struct sched_fwd_in *next, **pprev; /* in st->ins */
	int write;    /* op "write": answered once etcd has what it did */
	int flushed;  /* that wait is over (or was not needed) */
	int flushing; /* waiting for it (store_mirror_flush) */
	int orphan;   /* forwarding closed meanwhile: freed by the wait */
};

struct sched_fwd_state {
	struct sched *s;
	char *name;	       /* this controller's --name, owned */
	int insecure;	       /* plain TCP when there is no CA */
	SSL_CTX *ctx;	       /* the link's client context, or NULL */
	int ctx_tried;	       /* ctx was made, or could not be */
	char ctx_error[256];   /* why there is no ctx */
	struct fwd_link *link; /* the link, or NULL */
	struct rt_idmap out;   /* seq -> struct sched_fwd, in flight */
	struct sched_fwd *queue, **qtail; /* waiting for the link */
	uint64_t next_seq;
	uv_timer_t watch; /* checks the leader while requests are out */
	int watching;
	char *fixed_name, *fixed_addr;	       /* sched__fwd_target */
	char cert_role[32];		       /* of the minted certificate */
	char hello[16];			       /* the first message's type */
	char last_error[512];		       /* why the link last failed */
	const struct sched_fwd_serve_ops *ops; /* the leader's side */
	void *ops_arg;
	struct sched_fwd_in *ins; /* followers' requests not answered */
};

/* Takes `in` out of the leader's list of requests not answered. */
void sched__fwd_in_unlink(struct sched_fwd_in *in);

/* The leader to forward to: its name and address (forward_target.c).
 * Returns 0, or -EAGAIN with the reason in `why`. */
int sched__fwd_leader_target(struct sched_fwd_state *st, const char **name,
			     const char **addr, struct rt_buf *why);

/* Sets the `error` of the function `path` is in to `line`, as it is (a
 * line of the leader, with its time), or to `reason` with the time now. */
void sched__fwd_set_error(struct sched *s, const char *path, const char *line,
			  const char *reason);

#endif

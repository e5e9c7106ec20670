/*
 * join.c - how the daemon's controller becomes part of its cluster (see
 * cluster.h): its store opened in etcd, its key in etcd (etcd/presence.h)
 * that `fnfs cluster status` lists, forwarding to the leader set up, and
 * leaving at the stop. Alone, each step does nothing.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../internal.h"
#include "../store/etcd/etcd.h"
#include "../store/etcd/store_cluster.h"
#include "cluster_state.h"
#include "etcd/presence.h"
#include "forward.h"

/* What a join (presence_start) ended with. */
struct join {
	int done, rc;
	struct rt_buf why;
};

static void on_joined(void *arg, int rc, const char *why)
{
	struct join *j = arg;

	j->done = 1;
	j->rc = rc;
	if (why != NULL)
		rt_buf_puts(&j->why, why);
}

/* Its key /fnfs/CLUSTER/ctl/NAME: runs `loop` until etcd answered
 * (bounded by the presence's own bounds). Returns 0, or -errno having
 * logged why. */
static int join_presence(struct sched *s, uv_loop_t *loop,
			 const struct store_config *cc,
			 const struct sched_options *opt)
{
	struct etcd_config ec;
	struct presence_callbacks cb = { 0 };
	struct join j = { 0 };
	char host[256] = "";
	const char *name = opt->name;
	int rc;

	assert(s->cluster->presence == NULL);
	store_etcd_config(cc, &ec);
	if (name == NULL) {
		if (gethostname(host, sizeof(host) - 1) < 0)
			host[0] = '\0';
		name = host;
	}
	sched_presence_callbacks(s, &cb);
	cb.joined = on_joined;
	cb.joined_arg = &j;
	rc = presence_start(loop, &ec, cc->cluster, name, opt->listen,
			    opt->leader_ttl > 0 ? opt->leader_ttl : 5, &cb,
			    &s->cluster->presence);
	if (rc == -EINVAL && opt->name == NULL)
		rt_log(RT_LOG_ERROR,
		       "cannot join cluster %s: the host's name \"%s\" is no "
		       "controller name (1 to 63 of [A-Za-z0-9._-]): give "
		       "--name",
		       cc->cluster, name);
	else if (rc < 0)
		rt_log(RT_LOG_ERROR, "cannot join cluster %s: %s", cc->cluster,
		       strerror(-rc));
	while (rc == 0 && !j.done)
		uv_run(loop, UV_RUN_ONCE);
	if (rc == 0 && j.rc < 0) {
		rc = j.rc;
		rt_log(RT_LOG_ERROR, "cannot join cluster %s as %s: %s",
		       cc->cluster, name,
		       j.why.data ? j.why.data : strerror(-rc));
	} else if (rc == 0) {
		rt_log(RT_LOG_INFO, "joined cluster %s as %s", cc->cluster,
		       name);
	}
	rt_buf_free(&j.why);
	return rc;
}

int sched_cluster_join(struct sched *s, struct uv_loop_s *loop,
		       const struct store_config *cc,
		       const struct sched_options *opt)
{
	char host[256] = "controller";
	const char *why;
	int rc;

	if (!sched_cluster_shared(s))
		return 0;
	assert(store_config_check(cc, &why) == 1);
	rc = join_presence(s, loop, cc, opt);
	if (rc < 0)
		return rc;
	/* Followers forward to the leader, which serves them. */
	if (opt->name == NULL && gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "controller");
	host[sizeof(host) - 1] = '\0';
	return sched_fwd_setup(s, opt->name ? opt->name : host, opt->insecure);
}

static void on_presence_down(void *arg)
{
	struct sched *s = arg;

	presence_free(s->cluster->presence);
	s->cluster->presence = NULL;
	rt_log(RT_LOG_INFO, "left the cluster");
}

void sched_cluster_leave(struct sched *s)
{
	if (s->cluster->presence != NULL &&
	    presence_stop(s->cluster->presence, on_presence_down, s) < 0) {
		presence_free(s->cluster->presence);
		s->cluster->presence = NULL;
	}
	sched_fwd_close(s);
}

void sched_cluster_forget(struct sched *s)
{
	if (s == NULL || s->cluster == NULL)
		return;
	presence_free(s->cluster->presence);
	s->cluster->presence = NULL;
}

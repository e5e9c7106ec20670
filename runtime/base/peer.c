/*
 * peer.c - the owner of a loopback TCP connection's other end (peer.h):
 * sock_diag's exact lookup, and the socket inodes of an instance's
 * processes read from /proc.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peer.h"
#include "rt.h"

void rt_peer_owner_set(struct rt_peer_owner *o, pid_t pid, pid_t init)
{
	if (o->root[0] == pid && o->root[1] == init)
		return;
	memset(o, 0, sizeof(*o));
	o->root[0] = pid;
	o->root[1] = init;
}

int rt_peer_lookup(const struct sockaddr_in *local,
		   const struct sockaddr_in *remote, struct rt_peer_sock *out)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr h;
		char b[1024];
	} ans;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h = &ans.h;
	struct inet_diag_msg *m;
	ssize_t got;
	int fd, rc = 0;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = AF_INET;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* The exact lookup: "src" is the socket's own end. */
	req.r.id.idiag_sport = local->sin_port;
	req.r.id.idiag_src[0] = local->sin_addr.s_addr;
	req.r.id.idiag_dport = remote->sin_port;
	req.r.id.idiag_dst[0] = remote->sin_addr.s_addr;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) < 0) {
		rc = -errno;
		goto out;
	}
	/* The kernel answered while sending: nothing to wait for. */
	got = recv(fd, &ans, sizeof(ans), MSG_DONTWAIT);
	if (got < 0) {
		rc = -errno;
		goto out;
	}
	if (!NLMSG_OK(h, (size_t)got)) {
		rc = -EPROTO;
		goto out;
	}
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		rc = e->error < 0 ? e->error : -EPROTO;
		goto out;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m))) {
		rc = -EPROTO;
		goto out;
	}
	m = NLMSG_DATA(h);
	out->uid = m->idiag_uid;
	out->ino = m->idiag_inode;
	out->state = m->idiag_state;
out:
	close(fd);
	return rc;
}

unsigned long rt_peer_socket_ino(const char *link)
{
	unsigned long v = 0;
	const char *p;

	if (strncmp(link, "socket:[", 8) != 0)
		return 0;
	for (p = link + 8; *p >= '0' && *p <= '9'; p++) {
		if (v > (~0ul - 9) / 10)
			return 0;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	return p[0] == ']' && p[1] == '\0' && p != link + 8 ? v : 0;
}

/* Whether process `pid` holds socket inode `ino` (1), or not (0). */
static int holds(pid_t pid, unsigned long ino)
{
	char path[64], link[64];
	struct dirent *e;
	DIR *d;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (d == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = rt_peer_socket_ino(link) == ino;
	}
	closedir(d);
	return found;
}

/* Appends the children of `pid` (of each of its threads) to `p`, which
 * holds `*n` pids and room for RT_PEER_PROCS_MAX. */
static void children(pid_t pid, pid_t *p, int *n)
{
	char path[320], buf[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (d == NULL)
		return;
	while (*n < RT_PEER_PROCS_MAX && (e = readdir(d)) != NULL) {
		char *s, *end;
		ssize_t got;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children",
			 (int)pid, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (got <= 0)
			continue;
		buf[got] = '\0';
		for (s = buf; *n < RT_PEER_PROCS_MAX; s = end) {
			long c = strtol(s, &end, 10);

			if (end == s)
				break;
			if (c > 0)
				p[(*n)++] = (pid_t)c;
		}
	}
	closedir(d);
}

int rt_peer_owned(struct rt_peer_owner *o, unsigned long ino)
{
	pid_t *p;
	int i, n = 0, found = 0;

	if (ino == 0)
		return 0;
	for (i = 0; i < o->nseen; i++)
		if (o->seen[i] == ino)
			return 1;
	p = malloc(RT_PEER_PROCS_MAX * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	for (i = 0; i < RT_PEER_ROOTS; i++)
		if (o->root[i] > 0 && n < RT_PEER_PROCS_MAX)
			p[n++] = o->root[i];
	/* Breadth first: p grows as the children of each are read. */
	for (i = 0; i < n && !found; i++) {
		found = holds(p[i], ino);
		if (!found)
			children(p[i], p, &n);
	}
	free(p);
	if (found) {
		/* The oldest goes first once full. */
		if (o->nseen == RT_PEER_SEEN)
			memmove(o->seen, o->seen + 1,
				(RT_PEER_SEEN - 1) * sizeof(o->seen[0]));
		else
			o->nseen++;
		o->seen[o->nseen - 1] = ino;
	}
	return found;
}

int rt_peer_check_server(struct rt_peer_owner *o, long uid,
			 const struct sockaddr_in *local,
			 const struct sockaddr_in *server, char *why, size_t n)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct rt_peer_sock conn = { 0 }, lis = { 0 };
	char where[32];
	int rc, have_conn, owned;

	snprintf(where, sizeof(where), "127.0.0.1:%u", ntohs(server->sin_port));
	/* The server's end of this connection: once accepted it has an
	 * inode, which says outright whose it is. */
	rc = rt_peer_lookup(server, local, &conn);
	have_conn = rc == 0;
	if (rc < 0 && rc != -ENOENT) {
		snprintf(why, n, "cannot tell who listens on %s: %s", where,
			 strerror(-rc));
		return rc;
	}
	if (have_conn && conn.ino != 0) {
		owned = rt_peer_owned(o, conn.ino);
		if (owned == 1)
			return 0;
		snprintf(why, n,
			 "%s is held by another process (uid %u), not by the "
			 "instance's server",
			 where, conn.uid);
		return -EREMOTEIO;
	}
	rc = rt_peer_lookup(server, &any, &lis);
	if (rc == -ENOENT) {
		snprintf(why, n, "nobody listens on %s any more", where);
		return -ECONNREFUSED;
	}
	if (rc < 0) {
		snprintf(why, n, "cannot tell who listens on %s: %s", where,
			 strerror(-rc));
		return rc;
	}
	owned = rt_peer_owned(o, lis.ino);
	if (owned != 1 || (uid >= 0 && lis.uid != (unsigned)uid) ||
	    (have_conn && conn.state == TCP_ESTABLISHED &&
	     conn.uid != lis.uid)) {
		snprintf(why, n,
			 "%s is held by another process (uid %u), not by the "
			 "instance's server",
			 where, owned == 1 && have_conn ? conn.uid : lis.uid);
		return -EREMOTEIO;
	}
	return 0;
}

int rt_peer_check_client(struct rt_peer_owner *o,
			 const struct sockaddr_in *local,
			 const struct sockaddr_in *client, char *why, size_t n)
{
	struct rt_peer_sock peer = { 0 };
	int rc = rt_peer_lookup(client, local, &peer);

	if (rc < 0) {
		snprintf(why, n, "cannot tell who connected from port %u: %s",
			 ntohs(client->sin_port), strerror(-rc));
		return rc;
	}
	if (rt_peer_owned(o, peer.ino) != 1) {
		snprintf(why, n,
			 "a connection from a process of uid %u that is not "
			 "the instance's",
			 peer.uid);
		return -EACCES;
	}
	return 0;
}

int rt_peer_netns_socket(pid_t pid, int nonblock)
{
	char path[64];
	struct stat theirs, ours;
	int target = -1, self = -1, fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (pid <= 0 || stat(path, &theirs) < 0 ||
	    stat("/proc/thread-self/ns/net", &ours) < 0 ||
	    (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev))
		return -2;
	target = open(path, O_RDONLY | O_CLOEXEC);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (target >= 0 && self >= 0 && setns(target, CLONE_NEWNET) == 0) {
		fd = socket(AF_INET,
			    SOCK_STREAM | SOCK_CLOEXEC |
				    (nonblock ? SOCK_NONBLOCK : 0),
			    0);
		if (setns(self, CLONE_NEWNET) < 0) {
			/* Cannot happen with our own namespace's descriptor;
			 * were it to, our connections would go astray: say
			 * so loudly. */
			rt_log(RT_LOG_ERROR,
			       "cannot go back to our own network namespace: "
			       "%s",
			       strerror(errno));
		}
	}
	if (target >= 0)
		close(target);
	if (self >= 0)
		close(self);
	return fd;
}

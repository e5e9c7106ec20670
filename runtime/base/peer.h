/*
 * peer.h - who is at the other end of a loopback TCP connection, so that
 * a call is sent only to its instance's own server and the Lambda Runtime
 * API answers only its instance's processes (issue 23, item 4).
 *
 * The kernel says who owns a TCP socket (sock_diag: NETLINK_SOCK_DIAG,
 * inet_diag's exact lookup): its owner's uid and its inode. A socket
 * belongs to an instance when its inode is among the descriptors of the
 * instance's processes: its process and the processes under it (and
 * under its sandbox's init). Another user's socket on that port, a
 * squatter, is refused before a byte is sent or answered.
 *
 * The queries are made in the calling thread's network namespace: a
 * socket made in an instance's own namespace (rt_peer_netns_socket)
 * needs no check, nobody else can listen there. Used by the worker
 * (runtime/worker/http.c, ready.c, lambda.c) and by the controller's direct
 * calls (sched/calls/direct.c). Nothing here blocks: the kernel answers a
 * sock_diag query at once and /proc is read as it is.
 */
#ifndef FNFS_RT_PEER_H
#define FNFS_RT_PEER_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/types.h>

#define RT_PEER_ROOTS	  2   /* process trees an instance has */
#define RT_PEER_PROCS_MAX 512 /* processes looked at in its trees */
#define RT_PEER_SEEN	  8   /* socket inodes an instance is known to own */

/* One TCP socket as the kernel reports it. */
struct rt_peer_sock {
	unsigned uid;	   /* its owner */
	unsigned long ino; /* its inode; 0 for a connection not accepted yet */
	int state;	   /* TCP_LISTEN, TCP_ESTABLISHED, ... */
};

/* What is known of an instance's processes: the roots of its trees (its
 * process, its sandbox's init; 0: none) and the socket inodes found held
 * by them (reset when the roots change). */
struct rt_peer_owner {
	pid_t root[RT_PEER_ROOTS];
	unsigned long seen[RT_PEER_SEEN];
	int nseen;
};

/* Sets `o` to the instance whose trees start at `pid` and `init` (0 for
 * none); what was seen of other roots is forgotten. */
void rt_peer_owner_set(struct rt_peer_owner *o, pid_t pid, pid_t init);

/* The socket whose local end is `local` and remote end `remote` (the
 * remote 0.0.0.0:0: the listener a connection to `local` would reach),
 * in the caller's network namespace. Returns 0, -ENOENT when there is
 * none, or -errno. */
int rt_peer_lookup(const struct sockaddr_in *local,
		   const struct sockaddr_in *remote, struct rt_peer_sock *out);

/* Whether socket inode `ino` is held by a process of `o` (1), not (0),
 * or -errno when /proc cannot say. */
int rt_peer_owned(struct rt_peer_owner *o, unsigned long ino);

/* The connection from `local` (our end) to a server at `server` (on
 * loopback) reaches a server of `o`'s processes: the server's end of it,
 * once accepted, is theirs, and the listener on `server` is theirs (and
 * of `uid`, unless it is -1), and a connection not yet accepted is of
 * the listener's owner. Returns 0, or -EREMOTEIO (another's: `why` says
 * whose uid), -ECONNREFUSED (nobody listens there now) or -errno, with
 * `why`. */
int rt_peer_check_server(struct rt_peer_owner *o, long uid,
			 const struct sockaddr_in *local,
			 const struct sockaddr_in *server, char *why, size_t n);

/* The connection a server of ours accepted, from `client` to our
 * `local`, is from a process of `o`. Returns 0, or -EACCES (another's:
 * `why` says whose uid) or -errno, with `why`. */
int rt_peer_check_client(struct rt_peer_owner *o,
			 const struct sockaddr_in *local,
			 const struct sockaddr_in *client, char *why, size_t n);

/* A TCP socket made in the network namespace of process `pid` when it
 * has one of its own (a sandbox with `network none`): its 127.0.0.1 is
 * not ours. Returns the socket (close-on-exec; non-blocking when
 * `nonblock`), -2 when the process shares the caller's namespace (a
 * socket of our own does, checked with rt_peer_check_server), or -1.
 * The calling thread enters that namespace only to make the socket and
 * comes back at once. */
int rt_peer_netns_socket(pid_t pid, int nonblock);

/* The inode of a descriptor's link text "socket:[INODE]", or 0. Pure. */
unsigned long rt_peer_socket_ino(const char *link);

#endif

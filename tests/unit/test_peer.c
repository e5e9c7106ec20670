/*
 * test_peer.c - who holds the other end of a loopback connection
 * (runtime/base/peer.c): the link text of a socket descriptor, and the checks
 * against real sockets of this process (ours) and of another process
 * (a child's: not ours).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/base/peer.h"
#include "unit.h"

TEST(peer_socket_ino)
{
	CHECK(rt_peer_socket_ino("socket:[12345]") == 12345);
	CHECK(rt_peer_socket_ino("socket:[0]") == 0);
	CHECK(rt_peer_socket_ino("socket:[]") == 0);
	CHECK(rt_peer_socket_ino("socket:[12a]") == 0);
	CHECK(rt_peer_socket_ino("socket:[12]x") == 0);
	CHECK(rt_peer_socket_ino("pipe:[12]") == 0);
	CHECK(rt_peer_socket_ino("/dev/null") == 0);
	CHECK(rt_peer_socket_ino("socket:[99999999999999999999999]") == 0);
}

/* A listener on 127.0.0.1 (any port) into `fd` and `a`. */
static int listener(int *fd, struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)a, sizeof(*a)) < 0 ||
	    listen(*fd, 4) < 0 ||
	    getsockname(*fd, (struct sockaddr *)a, &len) < 0)
		return -1;
	return 0;
}

/* A connection to `a` into `fd`, its own end in `local`. */
static int dial(const struct sockaddr_in *a, int *fd, struct sockaddr_in *local)
{
	socklen_t len = sizeof(*local);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || connect(*fd, (const struct sockaddr *)a, sizeof(*a)) < 0)
		return -1;
	return getsockname(*fd, (struct sockaddr *)local, &len);
}

TEST(peer_server_is_ours)
{
	struct rt_peer_owner o = { 0 };
	struct sockaddr_in srv, local;
	int l, c, acc;
	char why[200];

	CHECK(listener(&l, &srv) == 0);
	CHECK(dial(&srv, &c, &local) == 0);
	rt_peer_owner_set(&o, getpid(), 0);
	/* Not accepted yet: the listener's inode is ours. */
	CHECK(rt_peer_check_server(&o, (long)geteuid(), &local, &srv, why,
				   sizeof(why)) == 0);
	/* Accepted: its end's inode is ours too. */
	acc = accept(l, NULL, NULL);
	CHECK(acc >= 0);
	CHECK(rt_peer_check_server(&o, -1, &local, &srv, why, sizeof(why)) ==
	      0);
	/* Another uid expected: not its server. */
	close(acc);
	close(c);
	CHECK(dial(&srv, &c, &local) == 0);
	CHECK(rt_peer_check_server(&o, (long)geteuid() + 1, &local, &srv, why,
				   sizeof(why)) == -EREMOTEIO);
	CHECK(strstr(why, "held by another process") != NULL);
	close(c);
	close(l);
}

TEST(peer_server_of_another)
{
	struct rt_peer_owner o = { 0 };
	struct sockaddr_in srv, local;
	int l, c, p[2];
	char why[200], b;
	pid_t child;

	/* The child listens; we look for it among our own processes (a
	 * tree that does not hold it: pid 1's would, as its ancestor). */
	CHECK(pipe(p) == 0);
	CHECK(listener(&l, &srv) == 0);
	child = fork();
	if (child == 0) {
		close(p[0]);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(p[0], &b, 1) == 1);
	close(l); /* only the child holds it now */
	CHECK(dial(&srv, &c, &local) == 0);
	rt_peer_owner_set(&o, getpid(), 0);
	/* Our tree includes the child: ours. */
	CHECK(rt_peer_check_server(&o, -1, &local, &srv, why, sizeof(why)) ==
	      0);
	/* Another process's tree without it (a fresh sibling). */
	{
		pid_t other = fork();

		if (other == 0) {
			pause();
			_exit(0);
		}
		rt_peer_owner_set(&o, other, 0);
		CHECK(rt_peer_check_server(&o, -1, &local, &srv, why,
					   sizeof(why)) == -EREMOTEIO);
		kill(other, SIGKILL);
		waitpid(other, NULL, 0);
	}
	close(c);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* Nobody listens any more. */
	CHECK(dial(&srv, &c, &local) < 0);
	close(c);
}

TEST(peer_client)
{
	struct rt_peer_owner o = { 0 };
	struct sockaddr_in srv, local, client;
	socklen_t len = sizeof(client);
	int l, c, acc;
	char why[200];
	pid_t other;

	CHECK(listener(&l, &srv) == 0);
	CHECK(dial(&srv, &c, &local) == 0);
	acc = accept(l, (struct sockaddr *)&client, &len);
	CHECK(acc >= 0);
	rt_peer_owner_set(&o, getpid(), 0);
	CHECK(rt_peer_check_client(&o, &srv, &client, why, sizeof(why)) == 0);
	other = fork();
	if (other == 0) {
		pause();
		_exit(0);
	}
	/* An instance whose process is gone holds nothing. */
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	rt_peer_owner_set(&o, other, 0);
	CHECK(rt_peer_check_client(&o, &srv, &client, why, sizeof(why)) ==
	      -EACCES);
	close(acc);
	close(c);
	close(l);
}

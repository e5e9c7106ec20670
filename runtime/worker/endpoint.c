/*
 * endpoint.c - where an instance's server listens: a free loopback port
 * (PORT) and a Unix socket path (FN_LISTENER=unix:PATH), chosen by the
 * worker before each spawn of an instance that serves HTTP (format http)
 * or is probed for readiness on them (ready tcp or http:/PATH).
 *
 * The socket lives in a directory of its own per instance, owned by the
 * function's user and bound writable into its sandbox at the same path.
 * A root worker keeps these directories under /run/fnfs (traversable by
 * the functions' users, whatever the data directory's mode); any other
 * worker under its data directory, since its functions run as itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/un.h>
#include <unistd.h>

#include "supervise.h"

#define SOCKET_NAME	  "http.sock"
#define OWN_FIRST	  10000 /* the first port given in a network of its own */
#define RT_ENDPOINT_TRIES 4096 /* ports tried for one PORT at most */

/* FNV-1a, to make short directory names out of long ids. */
static uint32_t fnv(const char *s, uint32_t h)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

int rt_endpoint_wanted(const struct rt_instance *in)
{
	const char *mode = json_string_value(json_object_get(in->spec, "mode"));
	const char *fmt = json_string_value(
		json_object_get(in->spec, "format"));
	const char *ready = json_string_value(
		json_object_get(in->spec, "ready"));

	if (mode == NULL || strcmp(mode, "cold") == 0)
		return 0;
	if (strcmp(mode, "hot") == 0 && fmt != NULL && strcmp(fmt, "http") == 0)
		return 1;
	return ready != NULL &&
	       (strcmp(ready, "tcp") == 0 || strncmp(ready, "http:/", 6) == 0);
}

/* The ports handed to the instances of this process, live or stopped
 * (a bit each): no two of them ever share one, whatever the kernel's
 * choice. */
static unsigned char given[65536 / 8];
static int own_cursor = OWN_FIRST;

static int is_given(int port)
{
	return (given[port / 8] >> (port % 8)) & 1;
}

static void set_given(int port, int on)
{
	if (on)
		given[port / 8] |= (unsigned char)(1u << (port % 8));
	else
		given[port / 8] &= (unsigned char)~(1u << (port % 8));
}

/* The kernel's ephemeral range (net.ipv4.ip_local_port_range), or
 * Linux's default. */
static void ephemeral_range(int *lo, int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	*lo = 32768;
	*hi = 60999;
	if (f != NULL) {
		if (fscanf(f, "%d %d", lo, hi) != 2 || *lo < 1024 ||
		    *hi > 65535 || *hi < *lo) {
			*lo = 32768;
			*hi = 60999;
		}
		fclose(f);
	}
}

int rt_endpoint_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	static unsigned cursor;
	unsigned start;
	int fd, rc = -EADDRINUSE, lo, hi, n, i, port;

	/* A port of the ephemeral range, from a random start, that no
	 * instance of ours has (free until it listens) and that binds now.
	 * Someone else may still take it before the instance listens: the
	 * calls find out (peer.h) and are not sent. Bounded: the loop
	 * thread tries at most RT_ENDPOINT_TRIES ports. */
	ephemeral_range(&lo, &hi);
	n = hi - lo + 1;
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(start))
		start = (unsigned)getpid() * 7919u + cursor++ * 104729u;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < n && i < RT_ENDPOINT_TRIES; i++) {
		port = lo + (int)((start + (unsigned)i) % (unsigned)n);
		if (is_given(port))
			continue;
		a.sin_port = htons((uint16_t)port);
		/* A failed bind leaves the socket unbound: it tries the
		 * next. */
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			rc = port;
			break;
		}
		if (errno != EADDRINUSE) {
			rc = -errno;
			break;
		}
	}
	close(fd);
	return rc;
}

/* A port for an instance with a network of its own, or -errno. */
static int own_port(void)
{
	int i, p;

	/* The instance's network is its own: any port is free there, so
	 * the host's are not looked at. Ours differ only so that the
	 * worker's connections to each are told apart. */
	for (i = 0; i < 65536 - OWN_FIRST; i++) {
		p = own_cursor++;
		if (own_cursor > 65535)
			own_cursor = OWN_FIRST;
		if (!is_given(p))
			return p;
	}
	return -EADDRINUSE;
}

/* Whether `in`'s process gets a network namespace of its own. */
static int own_network(const struct rt_instance *in)
{
	const char *iso = json_string_value(
			   json_object_get(in->spec, "isolation")),
		   *net = json_string_value(
			   json_object_get(in->spec, "network"));

	return iso != NULL && strcmp(iso, "sandbox") == 0 && net != NULL &&
	       strcmp(net, "none") == 0;
}

/* The directory of the instance's socket, created for `uid`/`gid`. */
static int make_dir(struct rt_instance *in, uid_t uid, gid_t gid,
		    struct rt_buf *dir)
{
	struct rt_sup *s = in->sup;
	int rc = 0;

	/* Modes are set outright: the worker's umask may be 077. */
	if (geteuid() == 0) {
		mkdir("/run/fnfs", 0711);
		chmod("/run/fnfs", 0711);
		rt_buf_printf(dir, "/run/fnfs/%08x",
			      fnv(s->log_dir ? s->log_dir : "", 2166136261u));
	} else {
		rt_buf_printf(dir, "%s/../../run",
			      s->log_dir ? s->log_dir : ".");
	}
	if (dir->data == NULL)
		return -ENOMEM;
	if (mkdir(dir->data, 0711) < 0 && errno != EEXIST)
		return -errno;
	if (chmod(dir->data, 0711) < 0)
		return -errno;
	rc = rt_buf_printf(dir, "/%08x", fnv(in->id, 2166136261u));
	if (rc < 0)
		return rc;
	if (mkdir(dir->data, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (geteuid() == 0 && chown(dir->data, uid, gid) < 0)
		return -errno;
	return 0;
}

int rt_endpoint_prepare(struct rt_instance *in, const char **why)
{
	json_t *juid = json_object_get(in->spec, "uid"),
	       *jgid = json_object_get(in->spec, "gid");
	uid_t uid = juid ? (uid_t)json_integer_value(juid) : geteuid();
	gid_t gid = jgid ? (gid_t)json_integer_value(jgid) : getegid();
	struct rt_buf dir = { 0 }, sock = { 0 };
	int port, rc = 0;

	/* What the last run had goes: its spec may have wanted one and the
	 * new one not. */
	rt_endpoint_forget(in);
	if (!rt_endpoint_wanted(in))
		goto out;
	port = own_network(in) ? own_port() : rt_endpoint_free_port();
	if (port < 0) {
		*why = "no free loopback port";
		rc = port;
		goto out;
	}
	rc = make_dir(in, uid, gid, &dir);
	if (rc < 0) {
		*why = "cannot make the directory of its socket";
		goto out;
	}
	rc = rt_buf_printf(&sock, "%s/%s", dir.data, SOCKET_NAME);
	if (rc < 0) {
		*why = "out of memory";
		goto out;
	}
	/* A socket left by the last run would make the next bind fail. */
	unlink(sock.data);
	if (sock.len >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		/* Too long for a socket address: PORT alone. */
		rt_log(RT_LOG_WARN,
		       "%s: %s is too long for a socket; no "
		       "FN_LISTENER",
		       in->id, sock.data);
	} else {
		in->listener = sock.data;
		sock.data = NULL;
	}
	in->port = port;
	set_given(port, 1);
	in->listen_dir = strdup(dir.data);
	if (in->listen_dir == NULL) {
		*why = "out of memory";
		rc = -ENOMEM;
		goto out;
	}
	/* The sandbox binds it writable at the same place. */
	rc = json_object_set_new(in->spec, "listen_dir",
				 json_string(dir.data)) < 0
		     ? -ENOMEM
		     : 0;
	if (rc < 0)
		*why = "out of memory";
out:
	rt_buf_free(&dir);
	rt_buf_free(&sock);
	return rc;
}

int rt_endpoint_env(const struct rt_instance *in, char **env, size_t *n)
{
	char v[160];

	if (in->port > 0) {
		snprintf(v, sizeof(v), "PORT=%d", in->port);
		if ((env[(*n)++] = strdup(v)) == NULL)
			return -ENOMEM;
	}
	if (in->listener != NULL) {
		if ((env[*n] = malloc(strlen(in->listener) + 18)) == NULL)
			return -ENOMEM;
		sprintf(env[(*n)++], "FN_LISTENER=unix:%s", in->listener);
	}
	return 0;
}

int rt_endpoint_unix_ready(const struct rt_instance *in)
{
	struct stat st;

	return in->listener != NULL && stat(in->listener, &st) == 0 &&
	       S_ISSOCK(st.st_mode);
}

void rt_endpoint_forget(struct rt_instance *in)
{
	const char *dir = in->listen_dir;

	if (in->listener != NULL)
		unlink(in->listener);
	if (dir != NULL && rmdir(dir) == 0 &&
	    strncmp(dir, "/run/fnfs/", 10) == 0) {
		/* The worker's directory and /run/fnfs go once empty. */
		char *up = strdup(dir), *slash;

		while (up != NULL && (slash = strrchr(up, '/')) != NULL &&
		       slash != up) {
			*slash = '\0';
			if (strcmp(up, "/run") == 0 || rmdir(up) < 0)
				break;
		}
		free(up);
	}
	free(in->listen_dir);
	in->listen_dir = NULL;
	free(in->listener);
	in->listener = NULL;
	if (in->port > 0 && in->port < 65536)
		set_given(in->port, 0);
	in->port = 0;
}

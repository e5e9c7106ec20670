/*
 * etcd_cluster.c - a real etcd cluster for unit tests (etcd_cluster.h).
 * Blocking on purpose: the test's own side, never the code under test.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../../runtime/base/rt.h"
#include "etcd_cluster.h"

/* The cluster to end if the runner's time limit strikes. */
static struct etcd_cluster *running;

/* Removes `dir` (rm -rf, a child waited for). Async-signal-safe. */
static void remove_dir(const char *dir)
{
	pid_t rm;

	if (dir[0] == '\0')
		return;
	rm = fork();
	if (rm == 0) {
		char *argv[] = { "rm", "-rf", "--", (char *)dir, NULL };

		execve("/bin/rm", argv, (char *[]){ NULL });
		_exit(127);
	}
	if (rm > 0)
		waitpid(rm, NULL, 0);
}

/* The runner's SIGALRM: the members are killed and the directory removed
 * (async-signal-safe calls only), then the signal is raised again so
 * that the runner reports the timeout. */
static void on_alarm(int sig)
{
	struct etcd_cluster *k = running;
	int i;

	for (i = 0; k != NULL && i < k->n; i++)
		if (k->pid[i] > 0) {
			kill(k->pid[i], SIGKILL);
			waitpid(k->pid[i], NULL, 0);
		}
	if (k != NULL)
		remove_dir(k->dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* `n` distinct free TCP ports on 127.0.0.1 (all bound together while
 * they are chosen). Returns 0 or -errno. */
static int free_ports(int *ports, int n)
{
	int fds[2 * ETCD_CLUSTER_MAX], i, rc = 0;

	for (i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t len = sizeof(a);

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 ||
		    bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len) < 0) {
			rc = -errno;
			n = i + 1;
			break;
		}
		ports[i] = ntohs(a.sin_port);
	}
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* Starts member `i`, its output to its log file. */
static int member_run(struct etcd_cluster *k, int i, const char *initial)
{
	char name[16], data[96], log[96], token[32];
	pid_t pid;

	snprintf(name, sizeof(name), "m%d", i);
	snprintf(data, sizeof(data), "%s/%s", k->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", k->dir, name);
	snprintf(token, sizeof(token), "fnfs-unit-%d", (int)getpid());
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("etcd", "etcd", "--name", name, "--data-dir", data,
		       "--listen-client-urls", k->client[i],
		       "--advertise-client-urls", k->client[i],
		       "--listen-peer-urls", k->peer[i],
		       "--initial-advertise-peer-urls", k->peer[i],
		       "--initial-cluster", initial, "--initial-cluster-state",
		       "new", "--initial-cluster-token", token, (char *)NULL);
		_exit(127);
	}
	k->pid[i] = pid;
	return 0;
}

/* CURLOPT_WRITEFUNCTION into the struct rt_buf `arg`. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	(void)size;
	return rt_buf_append(arg, p, n) < 0 ? 0 : n;
}

/* Whether member `i` answers /health with "true". */
static int member_healthy(const struct etcd_cluster *k, int i)
{
	static const char healthy[] = "\"health\":\"true\"";
	char url[64];
	struct rt_buf b = { 0 };
	CURL *e = curl_easy_init();
	int ok;

	snprintf(url, sizeof(url), "%s/health", k->client[i]);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	ok = curl_easy_perform(e) == CURLE_OK && b.data != NULL &&
	     memmem(b.data, b.len, healthy, strlen(healthy)) != NULL;
	curl_easy_cleanup(e);
	rt_buf_free(&b);
	return ok;
}

int etcd_cluster_start(struct etcd_cluster *k, int n, int wait_ms)
{
	char initial[ETCD_CLUSTER_MAX * 48];
	int ports[2 * ETCD_CLUSTER_MAX], i, up = 0, rc;
	int64_t until = rt_mono_ms() + wait_ms;

	memset(k, 0, sizeof(*k));
	if (n < 1 || n > ETCD_CLUSTER_MAX)
		return -EINVAL;
	snprintf(k->dir, sizeof(k->dir), "/var/tmp/fnfs-unit-elect.XXXXXX");
	if (mkdtemp(k->dir) == NULL) {
		k->dir[0] = '\0';
		return -errno;
	}
	k->n = n;
	running = k;
	signal(SIGALRM, on_alarm);
	rc = free_ports(ports, 2 * n);
	if (rc < 0)
		return rc;
	initial[0] = '\0';
	for (i = 0; i < n; i++) {
		size_t len = strlen(initial);

		snprintf(k->client[i], sizeof(k->client[i]),
			 "http://127.0.0.1:%d", ports[2 * i]);
		snprintf(k->peer[i], sizeof(k->peer[i]), "http://127.0.0.1:%d",
			 ports[2 * i + 1]);
		snprintf(initial + len, sizeof(initial) - len, "%sm%d=%s",
			 i ? "," : "", i, k->peer[i]);
		len = strlen(k->endpoints);
		snprintf(k->endpoints + len, sizeof(k->endpoints) - len, "%s%s",
			 i ? "," : "", k->client[i]);
	}
	for (i = 0; i < n; i++)
		if ((rc = member_run(k, i, initial)) < 0)
			return rc;
	while (up < n && rt_mono_ms() < until) {
		for (i = 0, up = 0; i < n; i++)
			up += member_healthy(k, i);
		if (up < n)
			usleep(100 * 1000);
	}
	if (up < n) {
		fprintf(stderr, "  etcd: %d of %d members healthy (logs: %s)\n",
			up, n, k->dir);
		return -ETIMEDOUT;
	}
	return 0;
}

void etcd_cluster_stop(struct etcd_cluster *k)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (k->pid[i] > 0) {
			kill(k->pid[i], SIGKILL);
			waitpid(k->pid[i], NULL, 0);
			k->pid[i] = 0;
		}
	remove_dir(k->dir);
	k->dir[0] = '\0';
	running = NULL;
}

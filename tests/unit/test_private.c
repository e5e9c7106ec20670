/*
 * test_private.c - the data directory made private (modes on a whole
 * tree, links left alone) and a process's identity (the /proc/PID/stat
 * parser, its text form, a reused pid told apart).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/base/private.h"
#include "unit.h"

TEST(proc_stat_parses_past_odd_names)
{
	/* A command name with spaces and a ')' of its own. */
	const char *t = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 "
			"0 20 0 1 0 123456 1000 10 18446744073709551615\n";
	unsigned long long start = 0;
	char state = 0;

	CHECK(rt_parse_proc_stat(t, strlen(t), &state, &start) == 0);
	CHECK(state == 'S');
	CHECK(start == 123456ULL);
	CHECK(rt_parse_proc_stat("42 (x) Z 1", 10, &state, &start) == -EINVAL);
	CHECK(rt_parse_proc_stat("no paren", 8, &state, &start) == -EINVAL);
	CHECK(rt_parse_proc_stat("", 0, &state, &start) == -EINVAL);
}

TEST(proc_id_text_round_trips)
{
	struct rt_proc_id a = { 1234, 987654321ULL }, b = { 0, 0 };
	char v[64];

	rt_proc_id_format(&a, v, sizeof(v));
	CHECK_STR(v, "1234 987654321");
	CHECK(rt_proc_id_parse(v, &b) == 0);
	CHECK(b.pid == 1234 && b.start == 987654321ULL);
	CHECK(rt_proc_id_parse("0 5", &b) == -EINVAL);
	CHECK(rt_proc_id_parse("12", &b) == -EINVAL);
	CHECK(rt_proc_id_parse("12 5 x", &b) == -EINVAL);
}

TEST(proc_alive_tells_a_dead_or_other_process)
{
	struct rt_proc_id me, other;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(rt_proc_id_of(getpid(), &me) == 0);
	CHECK(rt_proc_alive(&me));
	other = me;
	other.start++; /* the same pid, another process */
	CHECK(!rt_proc_alive(&other));
	CHECK(rt_proc_id_of(child, &other) == 0);
	kill(child, SIGKILL);
	/* A zombie runs nothing: it is gone already. */
	for (int i = 0; i < 500 && rt_proc_alive(&other); i++)
		usleep(10000);
	CHECK(!rt_proc_alive(&other));
	waitpid(child, NULL, 0);
	CHECK(rt_proc_id_of(child, &other) == -ESRCH);
}

static mode_t mode_of(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

TEST(private_tree_fixes_every_mode_and_no_link)
{
	char top[] = "/tmp/fnfs-private.XXXXXX", p[512], outside[256];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, sk;

	CHECK(mkdtemp(top) != NULL);
	chmod(top, 0755);
	snprintf(p, sizeof(p), "%s/logs", top);
	CHECK(mkdir(p, 0777) == 0);
	chmod(p, 0777);
	snprintf(p, sizeof(p), "%s/logs/w1", top);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/logs/w1/f.log", top);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	chmod(p, 0666);
	snprintf(p, sizeof(p), "%s/fnfs.db", top);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	close(fd);
	chmod(p, 0644);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", top);
	sk = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(sk, (struct sockaddr *)&a, sizeof(a)) == 0);
	chmod(a.sun_path, 0777);
	/* A link to a file outside: neither followed nor changed. */
	snprintf(outside, sizeof(outside), "%s.outside", top);
	fd = open(outside, O_CREAT | O_WRONLY, 0644);
	close(fd);
	chmod(outside, 0644);
	snprintf(p, sizeof(p), "%s/link", top);
	CHECK(symlink(outside, p) == 0);

	CHECK(rt_private_tree(top) == 0);
	CHECK(mode_of(top) == 0700);
	snprintf(p, sizeof(p), "%s/logs", top);
	CHECK(mode_of(p) == 0700);
	snprintf(p, sizeof(p), "%s/logs/w1", top);
	CHECK(mode_of(p) == 0700);
	snprintf(p, sizeof(p), "%s/logs/w1/f.log", top);
	CHECK(mode_of(p) == 0600);
	snprintf(p, sizeof(p), "%s/fnfs.db", top);
	CHECK(mode_of(p) == 0600);
	CHECK(mode_of(a.sun_path) == 0600);
	CHECK(mode_of(outside) == 0644);
	close(sk);
	snprintf(p, sizeof(p), "rm -rf '%s' '%s'", top, outside);
	CHECK(system(p) == 0);
}

/*
 * main.c - the unit-test runner: runs every registered test in a child
 * process with a time limit and prints one TAP-like line per test.
 *
 *   unit-tests [--part K/N] [NAME-SUBSTRING]
 *
 * --part K/N runs every Nth test of the list from the Kth on (1 <= K <=
 * N): N runners, one per part, run each test once between them (tests/run
 * runs the parts side by side).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

/* Each test's time limit; a sanitized build runs several times slower,
 * and more so beside the integration tests of `make SANITIZE=1 test`. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_TIMEOUT_S 100
#else
#define TEST_TIMEOUT_S 20
#endif

static struct unit_test *tests;
static int failures;

void unit_register(struct unit_test *t)
{
	struct unit_test **pp = &tests;

	/* Keep the order of definition within a file. */
	while (*pp != NULL)
		pp = &(*pp)->next;
	*pp = t;
}

void unit_fail(const char *file, int line, const char *expr)
{
	fprintf(stderr, "  %s:%d: check failed: %s\n", file, line, expr);
	failures++;
}

int main(int argc, char **argv)
{
	struct unit_test *t;
	int n = 0, i = 0, failed = 0, status, part = 1, parts = 1;
	const char *filter = NULL;

	if (argc > 2 && strcmp(argv[1], "--part") == 0) {
		if (sscanf(argv[2], "%d/%d", &part, &parts) != 2 || parts < 1 ||
		    part < 1 || part > parts) {
			fprintf(stderr, "unit: --part K/N, 1 <= K <= N\n");
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc > 1)
		filter = argv[1];
	for (t = tests; t != NULL; t = t->next, i++) {
		pid_t pid;

		if (i % parts != part - 1)
			continue;
		if (filter != NULL && strstr(t->name, filter) == NULL)
			continue;
		n++;
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			alarm(TEST_TIMEOUT_S);
			t->fn();
			exit(failures ? 1 : 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			perror("unit: fork/wait");
			return 2;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %d - unit %s\n", n, t->name);
		} else {
			failed++;
			if (WIFSIGNALED(status))
				fprintf(stderr, "  killed by signal %d%s\n",
					WTERMSIG(status),
					WTERMSIG(status) == SIGALRM
						? " (timeout)"
						: "");
			printf("not ok %d - unit %s\n", n, t->name);
		}
	}
	return failed ? 1 : 0;
}

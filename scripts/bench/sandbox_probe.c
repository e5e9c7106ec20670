/*
 * sandbox_probe.c - the function scripts/bench/sandbox times: it writes
 * one byte on its stdout once it runs, then waits for a signal ("wait",
 * a hot instance) or exits ("exit", a cold call).
 */
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (write(1, "r", 1) != 1)
		return 1;
	if (argc > 1 && strcmp(argv[1], "wait") == 0)
		for (;;)
			pause();
	return 0;
}

/*
 * tiny.c - the program that scripts/bench/restart has each supervisor
 * restart: it waits for a signal and does nothing else, so that a restart
 * costs only what the supervisor and the kernel do. SIGTERM, left at its
 * default action, ends it.
 */
#include <unistd.h>

int main(void)
{
	for (;;)
		pause();
}

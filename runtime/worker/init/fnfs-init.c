/*
 * fnfs-init.c - pid 1 of a function's sandbox: a program of its own,
 * linked statically and carried inside fnfs (see runtime/worker/sandbox.c), so
 * that starting it costs an exec of a small binary, not of fnfs with its
 * libraries. What it does is in loop.c.
 */
#include "loop.h"

int main(void)
{
	rt_init_loop();
}

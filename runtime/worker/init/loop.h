/*
 * loop.h - what pid 1 of a function's sandbox does, shared by the static
 * init program (fnfs-init.c) and fnfs's own fallback
 * (runtime/worker/sandbox.c).
 */
#ifndef FNFS_INIT_LOOP_H
#define FNFS_INIT_LOOP_H

/* Reaps what is orphaned in the namespace, forever. fd 3, when open, is
 * the worker's pidfd: a worker already gone means nothing to wait for
 * (exit 1). Signals from the host other than SIGKILL do not reach a
 * namespace's init without a handler; the worker kills it (and with it
 * the whole namespace) once the function's process has exited. */
void rt_init_loop(void) __attribute__((noreturn));

#endif

/*
 * bare.c - pid 1 of a function's sandbox without a C library (x86-64):
 * the loop of loop.c in raw system calls, entered at _start. A static
 * glibc program spends most of its short life starting itself (CPU
 * feature probes, IRELATIVE relocations, TLS setup: each cpuid a trap to
 * the hypervisor on a VM), and a sandbox starts one init per instance:
 * with 100 instances to start at once (a failover) that was a fifth of
 * the machine's CPU. This one is a few hundred bytes of code.
 *
 * Built with -nostdlib -ffreestanding (see the Makefile); other
 * architectures build fnfs-init.c with loop.c instead.
 */
#include <linux/prctl.h>
#include <linux/wait.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>

static long sys4(long n, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

/* The kernel's sigset: 64 bits. */
#define SIGBIT(s) (1UL << ((s)-1))

__attribute__((noreturn, force_align_arg_pointer, used)) void _start(void)
{
	struct pollfd p = { 3, POLLIN, 0 };
	unsigned long all = ~0UL, chld = SIGBIT(SIGCHLD);

	sys4(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
	/* fd 3: the worker's pidfd; readable once the worker is gone. */
	if (sys4(SYS_poll, (long)&p, 1, 0, 0) != 0 &&
	    (p.revents & (POLLIN | POLLHUP)))
		sys4(SYS_exit_group, 1, 0, 0, 0);
	sys4(SYS_close, 3, 0, 0, 0);
	sys4(SYS_prctl, PR_SET_NAME, (long)"fnfs-init", 0, 0);
	sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all));
	for (;;) {
		while (sys4(SYS_wait4, -1, 0, WNOHANG, 0) > 0)
			;
		sys4(SYS_rt_sigtimedwait, (long)&chld, 0, 0, sizeof(chld));
	}
}

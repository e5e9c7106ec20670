/*
 * sigpending.c - whether an interrupted FUSE request should end with
 * EINTR, from the signals its thread has pending (/proc/TID/status).
 *
 * The kernel sends FUSE an INTERRUPT for any signal that reaches a thread
 * blocked in a request, also for the ones a shell takes in passing: the
 * SIGCHLD of a background job that ended, SIGWINCH of a resized terminal.
 * A wait that ended with EINTR for those would fail `echo 1 > restart` in
 * a script for no reason, so only other signals (Ctrl-C's SIGINT, SIGTERM,
 * SIGALRM of a timeout, ...) end a wait.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* Reads the hexadecimal mask after "`key`:" in `status`, or returns -1. */
static int mask_of(const char *status, const char *key, unsigned long long *out)
{
	size_t n = strlen(key);
	const char *p = status;
	char *end;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, n) == 0 && p[n] == ':') {
			*out = strtoull(p + n + 1, &end, 16);
			return end == p + n + 1 ? -1 : 0;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

static unsigned long long bit(int sig)
{
	return 1ULL << (sig - 1);
}

int rt_status_interrupts(const char *status)
{
	unsigned long long pnd, shd, blk, pending,
		benign = bit(SIGCHLD) | bit(SIGWINCH) | bit(SIGURG) |
			 bit(SIGCONT);

	if (mask_of(status, "SigPnd", &pnd) < 0 ||
	    mask_of(status, "ShdPnd", &shd) < 0 ||
	    mask_of(status, "SigBlk", &blk) < 0)
		return -1;
	pending = (pnd | shd) & ~blk;
	if (pending == 0)
		return -1; /* nothing to tell by */
	return (pending & ~benign) != 0;
}

int rt_interrupt_wanted(pid_t tid)
{
	char path[64], buf[4096];
	FILE *f;
	size_t n;
	int rc;

	if (tid <= 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (f == NULL)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rc = rt_status_interrupts(buf);
	return rc != 0; /* unknown (-1): as asked */
}

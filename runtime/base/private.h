/*
 * private.h - what keeps the data directory private and tells who a
 * process is: modes fixed on a whole tree (0700 directories, 0600 files),
 * and a process's identity (its pid and start time, which a reused pid
 * does not share). Knows neither FUSE nor SQLite.
 */
#ifndef FNFS_RT_PRIVATE_H
#define FNFS_RT_PRIVATE_H

#include <stddef.h>
#include <sys/types.h>

#define RT_PRIVATE_DIR_MODE  0700 /* every directory fnfs makes */
#define RT_PRIVATE_FILE_MODE 0600 /* every file and socket fnfs makes */

/* Makes `dir` 0700 and, below it, every directory 0700 and every other
 * file (regular file, socket, fifo) 0600, whatever they were. Symbolic
 * links are neither followed nor changed, nor are other filesystems.
 * Returns 0, or the -errno of the first change that failed (the walk goes
 * on past it). */
int rt_private_tree(const char *dir);

/* A process's identity: its pid and its start time in clock ticks after
 * boot (field 22 of /proc/PID/stat). */
struct rt_proc_id {
	pid_t pid;
	unsigned long long start;
};

/* Parses the text of /proc/PID/stat (`len` bytes): the state letter
 * into `*state` and the start time into `*start`. The command name may
 * hold spaces and parentheses: fields are counted after its last ')'.
 * Returns 0 or -EINVAL. Pure. */
int rt_parse_proc_stat(const char *text, size_t len, char *state,
		       unsigned long long *start);

/* Fills `id` for live process `pid`. Returns 0, -ESRCH (no such process,
 * or a zombie: it runs nothing) or -errno. */
int rt_proc_id_of(pid_t pid, struct rt_proc_id *id);

/* Whether process `id` still exists, as the same process (not a reused
 * pid) and not a zombie. */
int rt_proc_alive(const struct rt_proc_id *id);

/* Formats `id` as "PID START" into `out` (n bytes), and parses it back.
 * rt_proc_id_parse returns 0 or -EINVAL. Pure. */
void rt_proc_id_format(const struct rt_proc_id *id, char *out, size_t n);
int rt_proc_id_parse(const char *s, struct rt_proc_id *id);

#endif

/*
 * mount_dirs.h - what `fnfs mount` does to its mountpoint and data
 * directory before it serves (mount_dirs.c).
 */
#ifndef FNFS_FS_CMD_MOUNT_DIRS_H
#define FNFS_FS_CMD_MOUNT_DIRS_H

#include <limits.h>

/* Whether `path` (absolute, canonical) is a mount point of type `type`
 * according to /proc/self/mounts. */
int fs_mount_mounted_as(const char *path, const char *type);

/* Makes `mp` usable: creates it when missing, cleans up a mount left by a
 * crashed fnfs, refuses a live one, and resolves it to a canonical path
 * in `out`. */
int fs_mount_prepare_mountpoint(const char *mp, char out[PATH_MAX]);

/* Creates the data directory if needed and resolves it into `out`. It
 * must not lie inside the mountpoint: the daemon would then reach its own
 * filesystem and deadlock. The path is checked as written before anything
 * touches it, and again once symlinks are resolved. */
int fs_mount_prepare_datadir(const char *dir, const char *mp,
			     char out[PATH_MAX]);

/* Takes the data directory's lock, so that two controllers never share
 * one store. Returns the lock's fd or -errno. */
int fs_mount_lock_datadir(const char *dir);

/* Makes the data directory private, whatever its mode was and whatever
 * the umask: 0700 for it, for logs/ and every directory in it, 0600 for
 * each of fnfs's files (the store, its WAL and SHM, the pid file, the
 * lock, the log, the socket) and every log of instances. Only fnfs's own
 * files are changed: a --data pointing at a directory with other things
 * in it leaves those alone. DIR/logs is made here, so that workers,
 * which make it when missing, find it private. Returns 0 or -errno. */
int fs_mount_make_private(const char *dir);

/* Writes this process's pid to DIR/fnfs.pid (private). Returns 0 or
 * -errno. */
int fs_mount_write_pidfile(const char *dir);

#endif

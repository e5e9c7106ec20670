/*
 * cmd.h - the subcommands of `fnfs` (fs/cmd/): main.c reads the first
 * word and hands the rest of the command line to one of them. Each
 * returns the process's exit status: 0, 1 (it failed, having said why)
 * or 2 (a usage error).
 */
#ifndef FNFS_FS_CMD_H
#define FNFS_FS_CMD_H

/* `fnfs help`'s text, and the usage of every subcommand. */
extern const char fs_cmd_help[];
extern const char fs_cmd_usage[];

/* The default data directory: /var/lib/fnfs as root, else
 * $XDG_DATA_HOME/fnfs or ~/.local/share/fnfs. Returns a malloc'd path,
 * or NULL when out of memory. */
char *fs_cmd_default_datadir(void);

/* Makes the parent directories of a default data directory (mode 0755),
 * ignoring what exists. */
void fs_cmd_make_parents(const char *path);

/* fnfs mount ARGS (mount_args.c): reads the options, then runs the mount
 * (fs_mount_main). */
int fs_cmd_mount(int argc, char **argv);

/* fnfs store export|import ARGS (store.c). */
int fs_cmd_store(int argc, char **argv);

/* fnfs cluster status ARGS (cluster.c). */
int fs_cmd_cluster(int argc, char **argv);

#endif

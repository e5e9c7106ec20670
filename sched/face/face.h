/*
 * face.h - what the files of sched/face/ share. The face is the top of
 * sched/: sched.h's functions that fs/ calls (open, start and stop, the
 * tree's changes, the files' reads and writes, a worker's messages),
 * and the one layer that may call every other.
 */
#ifndef FNFS_SCHED_FACE_H
#define FNFS_SCHED_FACE_H

struct store_change;

/* The store's listener (tree.c): applies a committed change of a
 * tenant, namespace or function, this controller's or (a cluster)
 * another's, to the model. */
void sched__apply_change(void *arg, const struct store_change *c);

#endif

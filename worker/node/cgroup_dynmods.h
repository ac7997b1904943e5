/* cgroup_dynmods.h: put the kernel's cgroup migration lock in its "favordynmods" mode.
 *
 * Every process that joins a cgroup (a write to cgroup.procs) takes the kernel's
 * cgroup_threadgroup_rwsem for writing. In its default mode that lock is per-CPU, cheap for
 * fork and exit, and a writer first waits for an RCU grace period: measured here (kernel 6.18,
 * cgroup v1) 13 ms for the first of a job's joins, two thirds of the time from the launch
 * message to the job's first instruction. With favordynmods (Linux 6.0 and later; a mount
 * option of cgroup2 and of v1 hierarchies, and kernel-wide in effect as soon as any mounted
 * hierarchy has it) a join takes microseconds and forks and exits pay a little more.
 *
 * On cgroup2 the agent remounts /sys/fs/cgroup with the option added (its other options kept);
 * on v1, where a hierarchy's options cannot change, it mounts an empty named hierarchy
 * (name=gpool-dynmods, no controller) with it. Nothing is done when any cgroup mount already
 * has it.
 */
#ifndef GPOOL_WORKER_CGROUP_DYNMODS_H
#define GPOOL_WORKER_CGROUP_DYNMODS_H

#include <stddef.h>

#include "common/error.h"

enum gp_dynmods_how {
	GP_DYNMODS_NONE,       /* no cgroup file system mounted: nothing to do */
	GP_DYNMODS_ALREADY,    /* some cgroup mount has favordynmods */
	GP_DYNMODS_REMOUNT_V2, /* remount the cgroup2 mount at root with it */
	GP_DYNMODS_MOUNT_V1,   /* mount the named v1 hierarchy with it */
};

struct gp_dynmods_plan {
	enum gp_dynmods_how how;
	char target[256];    /* REMOUNT_V2: the mount point */
	unsigned long flags; /* REMOUNT_V2: its per-mount flags (MS_NOSUID, ...), kept */
	char data[512];	     /* REMOUNT_V2: its super options without rw/ro, plus favordynmods */
};

/* What to do, from the text of a /proc/PID/mountinfo and the cgroup root (/sys/fs/cgroup).
 * 0, or -1 with errno EINVAL when a cgroup line cannot be read or does not fit. */
int gp_dynmods_plan(const char *mountinfo, const char *root, struct gp_dynmods_plan *p);

/* Carry a plan out (root only); v1_dir: where MOUNT_V1 mounts the hierarchy (made if
 * missing). 0, or -1 with err. */
int gp_dynmods_apply(const struct gp_dynmods_plan *p, const char *v1_dir, gp_error_t *err);

/* Plan from /proc/self/mountinfo for /sys/fs/cgroup and apply (v1: /run/gpool/cgroup-dynmods).
 * 1: turned on now, 0: already on or no cgroups, -1 with err. what: the words for the log. */
int gp_cgroup_favor_dynmods(char *what, size_t len, gp_error_t *err);

#endif

/* cgroup_freeze.h: freeze and thaw a job's cgroup from outside its supervisor (the agent,
 * when the PC's owner comes back: docs/owner.md). v2 writes cgroup.freeze and waits for
 * cgroup.events to say "frozen 1"; v1 writes freezer.state and waits for FROZEN. */
#ifndef GPOOL_WORKER_CGROUP_FREEZE_H
#define GPOOL_WORKER_CGROUP_FREEZE_H

#include <stdbool.h>

/* Freeze (frozen) or thaw the existing group name ("job<id>.<attempt>.<node>", as
 * gp_cgroup_create was given it), waiting up to wait_ms for every process to be frozen.
 * 0 / -1 with errno (ENOENT: no such group or no freezer, as with cgroups off; ETIMEDOUT: not
 * frozen in time, the freeze stays asked). */
int gp_cgroup_freeze_name(const char *name, bool frozen, int wait_ms);

#endif

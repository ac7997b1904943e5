/* launch.h: the Launch orders of a job's attempt, built from its stored spec and its placement
 * (one per node, carrying that node's tasks). Part of the shell: the core orders a launch
 * (orders.h, ORDER_LAUNCH) and effects.c calls this after the event.
 */
#ifndef GPOOL_SCHED_LAUNCH_H
#define GPOOL_SCHED_LAUNCH_H

#include "scheduler/core/gschedd.h"

/* Queue the Launch of j's current attempt to each of its nodes (held for the commit).
 * 0 / -1 with errno (ENOENT: its spec is missing from the store; ENOMEM), then nothing was
 * queued. */
int launch_send(struct gsched *s, struct job *j);

#endif

/* steps.h: allocations and their job steps (docs/interactive.md, "Allocations and steps").
 *
 * An allocation (JobSpec.alloc, gsub --alloc) is a job like any other: placed by plan.c, its
 * tasks hold its cpus, memory and cards on its nodes for as long as it runs; a batch job may
 * start steps in its own resources the same way. A job step
 * (JobSpec.step_of, grun) is a job of its own too, with its own id, output, exit code and
 * accounting, but it is never placed by plan.c and takes nothing from the nodes: it runs on its
 * allocation's resources. Rank r of a step runs where task r % n of its allocation's n tasks
 * runs, with that task's cpus and cards and the allocation's memory limit (its own cgroup with
 * those limits). Only the allocation's owner may start one, only while it runs; a step is
 * never requeued; when the allocation ends, its steps end with it (CANCELLED). An exclusive
 * step (grun --exclusive, JobSpec.exclusive) runs on allocation tasks no other running
 * exclusive step holds, and waits (PEND_RESOURCES) while too few are free, as srun
 * --exclusive does inside salloc.
 */
#ifndef GPOOL_SCHED_STEPS_H
#define GPOOL_SCHED_STEPS_H

#include <stddef.h>
#include <sys/types.h>

#include "scheduler/core/admit.h"
#include "scheduler/core/gschedd.h"

/* May uid start a step of spec->step_of now? 0, or -1 with why and errno (EPERM: not the
 * allocation's owner; ENOENT: no such job; EINVAL: a step or a service, not running, or the
 * step is an allocation, service or array itself). */
int steps_check(struct gsched *s, const Gpool__JobSpec *spec, uid_t uid, char *why, size_t len);
/* steps_check as a link of the admission chain (admit.h), for a step's spec: PERMISSION,
 * NOT_FOUND or STATE. */
int steps_admit(struct gsched *s, struct admission *a);
/* Start every durable pending step whose allocation runs (plan_run calls it first); a step
 * whose allocation is gone ends CANCELLED. */
void steps_run(struct gsched *s);
/* A job that may hold steps ended (its final state is set): end its steps. */
void steps_alloc_ended(struct gsched *s, struct job *alloc);
/* Follow the lifecycle's SEV_ALLOC_ENDED (steps_alloc_ended). 0 / -1. */
int steps_subscribe(struct gsched *s);

#endif

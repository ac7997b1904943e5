/* plan.h: placement. Jobs are considered in priority order (then submit order); each gets
 * all its CPUs and memory at once or nothing. The first job that cannot start gets a
 * reservation: the earliest time the running jobs' time limits free enough for it (EASY
 * backfill). A later job may start now only if it fits now and either ends before that
 * reservation or leaves the reserved resources untouched.
 */
#ifndef GPOOL_PLAN_H
#define GPOOL_PLAN_H

#include "scheduler/core/gschedd.h"

/* One placement pass; starts what can start. */
void plan_run(struct gsched *s);

/* Whether j can never run here, as sbatch refuses "Requested node configuration is not
 * available": more nodes, CPUs, memory or cards than the whole cluster has, nodes that are
 * down or drained counted. Only once every node that ever registered has registered with this
 * process (nodes_capacity_known): before that, a node still to come back might hold it. Sets
 * why when true. */
bool plan_refuse(struct gsched *s, struct job *j, char *why, size_t len);

#endif

/* owner.h: the PCs' owners as gschedd sees them (docs/owner.md). Each agent reports its
 * owner's state (OwnerState in NodeRegister and Heartbeat): a node whose owner is active takes
 * no new job; the seconds of activity of every hour that ended feed a histogram of the
 * owner's activity by hour of the week, decayed week by week and kept in the store, from
 * which placement prefers the PC most likely to stay free for a job's time limit. The held
 * tasks' frozen time moves a job's deadline (frozen time does not count against its limit). */
#ifndef GPOOL_SCHED_OWNER_H
#define GPOOL_SCHED_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"
#include "scheduler/core/node_owner.h"

struct gsched;
struct node;
struct job;

/* Apply an agent's report (NULL: an agent that does not watch its owner). */
void owner_node_report(struct gsched *s, int node, const Gpool__OwnerState *os);
/* A held task's frozen state (Heartbeat, NodeRegister): the job's frozen time and deadline. */
void owner_task_held(struct gsched *s, struct job *j, const Gpool__HeldTask *h);
/* A vacate ended an attempt of j (its vacates counted): kept in the store. */
void owner_job_vacated(struct gsched *s, struct job *j);
/* Follow the core's events (events.h): a node's owner reported (SEV_NODE_OWNER), a held
 * task's frozen time (SEV_TASK_HELD), a vacate (SEV_JOB_VACATED). 0 / -1. */
int owner_subscribe(struct gsched *s);

#endif

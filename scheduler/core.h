/* core.h: gschedd's state core, made and unmade in one place. The core is the job table and
 * queue (jobs.c), the nodes (nodes.c), the running set (running.c), placement (plan.c) and the
 * lifecycle (lifecycle.c); it does no I/O of its own: it appends orders (orders.h) that the
 * shell carries out (effects.c), and publishes job and node events (events.h) to the features
 * that watch them. A core made with sched_core_init alone, without a store, an output store or
 * a socket, is what scheduler/test/test_core.c drives.
 */
#ifndef GPOOL_SCHED_CORE_H
#define GPOOL_SCHED_CORE_H

#include <stdint.h>

#include "scheduler/gschedd.h"

/* Make s's job table (its first new id next_id), nodes, running set, orders and event
 * subscribers. 0 / -1 (ENOMEM; then what was made is released). */
int sched_core_init(struct gsched *s, uint64_t next_id);
/* Release what sched_core_init made (and every job and node). */
void sched_core_release(struct gsched *s);

/* Forget j from memory (it stays in the store): its watchers drop their state first
 * (SEV_JOB_FORGOTTEN). */
void sched_forget(struct gsched *s, struct job *j);

/* Plug s's features in: the checks of the admission chain (admit.h), then the features that
 * watch jobs and nodes, those present: fair share first, the rendezvous (a stopping attempt's
 * ranks fail before anything restarts it), then services, the metrics' counters and the
 * output's long polls. 0 / -1. */
int sched_core_subscribe(struct gsched *s);

#endif

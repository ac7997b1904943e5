/* lifecycle.h: every change of a job's state goes through these functions, so each job
 * reaches exactly one final state and at most one attempt runs at a time. */
#ifndef GPOOL_LIFECYCLE_H
#define GPOOL_LIFECYCLE_H

#include "scheduler/gschedd.h"

/* Placement chosen by plan: node index and first CPU for each task. */
struct alloc {
	int *node;
	uint32_t *cpu_first;
	uint64_t *cards; /* a bit per card of the node */
};

/* j's row changed: order it saved (orders.h); dependencies on it may have changed (the next
 * placement pass looks again). */
void job_save(struct gsched *s, struct job *j);
/* Start the next attempt of a pending job on the given placement: mark it RUNNING, order its
 * launch (the shell builds the Launch messages, launch.c). 0 / -1 (then nothing changed). */
int job_start(struct gsched *s, struct job *j, const struct alloc *a);
/* The shell could not launch j's current attempt (its spec is missing from the store): it
 * ends FAILED with why. */
void job_launch_failed(struct gsched *s, struct job *j, const char *why);
/* A task event from the agent of `node`. */
void job_task_event(struct gsched *s, int node, const Gpool__TaskEvent *ev);
/* Begin ending a running job: send Kill to every node with a live task; the job ends in
 * `reason` when all tasks have reported (or at once when none runs). */
void job_kill(struct gsched *s, struct job *j, Gpool__JobState reason, int signal, const char *why);
/* A stopping job's task that `node` still holds: its Kill again (SIGTERM and the grace), for
 * the agent may have missed it (away when it was sent, or the kill sent by another leader). */
void job_kill_again(struct gsched *s, struct job *j, int node);
/* End a pending job at once (cancel of a pending job). */
void job_end_pending(struct gsched *s, struct job *j, Gpool__JobState state, const char *why);
/* A node went DOWN: its tasks are lost; their jobs end NODE_FAIL (other ranks killed). */
void job_node_failed(struct gsched *s, int node);
/* A task its node no longer holds: it is gone; the job is requeued or ends NODE_FAIL. */
void job_task_lost(struct gsched *s, struct job *j, uint32_t rank, const char *why);
/* A node registers with this scheduler process for the first time: account for the running
 * tasks the store says it holds. */
void job_readopt_node(struct gsched *s, int node);
/* At start-up: rebuild a running job's tasks from the stored placement. 0 / -1. */
int job_restore(struct gsched *s, struct job *j);
/* A heartbeat's card readings: add the energy of the node's busy cards to the jobs that hold
 * them (deltas of each card's counter, or of the agent's integral of its power samples; power
 * limit × time for a card with neither, an upper bound), and mark in job->energy_sources
 * which of these it was. */
void energy_account(struct gsched *s, int node, Gpool__CardPower **p, size_t np);
/* Back to the queue for another attempt (every task of this one is gone). */
void job_requeue(struct gsched *s, struct job *j);
/* Time limits and kill escalation; called periodically. */
void jobs_tick(struct gsched *s);

#endif

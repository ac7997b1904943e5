/* priority.h: the order placement considers pending jobs in, and the per-user limits, from the
 * users' fair share (fairshare.h, docs/fairshare.md). The order: gsub --priority (high first),
 * then the user's fair-share factor (high first: the user who used least of their share), then
 * the queue's own order (submission: the oldest first, which is the age factor). Each attempt
 * that ends charges its user (SEV_JOB_ATTEMPT_ENDED): elapsed time less frozen time, times its
 * CPUs (a whole node's with --exclusive) and its cards. Running jobs count as used so far in
 * every pass, so one user's long jobs weigh before they end.
 */
#ifndef GPOOL_SCHED_PRIORITY_H
#define GPOOL_SCHED_PRIORITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gsched;
struct job;

/* Watch attempts end (charge their users). 0 / -1. */
int priority_subscribe(struct gsched *s);

/* A placement pass's view of the users: their factors and what their running jobs hold. */
struct prio_pass;

/* Start a pass at unix time now: the running jobs' use and holdings counted. NULL: out of
 * memory (the pass then orders by priority and submission only, with no limits). */
struct prio_pass *priority_pass_create(struct gsched *s, double now);
void priority_pass_destroy(struct prio_pass **pp);

/* The pending queue in placement order: *n jobs in a malloc'd array. NULL on ENOMEM. */
struct job **priority_order(struct gsched *s, struct prio_pass *pp, size_t *n);

/* Whether j may start under its user's limits with these CPUs and cards; when not, why says
 * which (for the pending reason's detail). */
bool priority_within_limits(struct prio_pass *pp, const struct job *j, uint32_t cpus,
			    uint32_t cards, char *why, size_t len);
/* j started in this pass, holding cpus and cards. */
void priority_pass_started(struct prio_pass *pp, const struct job *j, uint32_t cpus,
			   uint32_t cards);

/* Preemption (gpool.conf preempt): whether running job r may be stopped for pending job b:
 * preempt on, b blocked for preempt_grace, r requeueable (not a service, allocation, step or
 * screening job), running for preempt_grace, no higher --priority than b, and its user's
 * factor lower than b's user's. */
bool priority_may_preempt(struct gsched *s, struct prio_pass *pp, const struct job *b,
			  const struct job *r);
/* Whether some job's preemption is under way (then no more are started). */
bool priority_preempting(struct gsched *s);
/* Preempt r for b: its --signal now and a stop after its SECONDS (else SIGTERM now, then
 * kill_grace); it goes back to the queue as a vacate does (not counted against
 * max_attempts). */
void priority_preempt(struct gsched *s, struct job *r, const struct job *b);
/* Stop the preempted jobs whose checkpoint time is over (the loop's tick). */
void priority_tick(struct gsched *s);

/* The CPUs and cards a running job holds (a whole node's CPUs with --exclusive). */
void priority_job_holds(struct gsched *s, const struct job *j, uint32_t *cpus, uint32_t *cards);

#endif

/* events.h: the core's job and node events, and the features that watch them. The core
 * (lifecycle.c, agent.c) publishes what happened to a job or a node; features that follow jobs
 * (services, the metrics' counters, long polls on output, the rendezvous) subscribe once at
 * start-up instead of being called by name from the lifecycle, and keep their own state. A
 * later feature (fair share, owner policies) subscribes the same way.
 */
#ifndef GPOOL_SCHED_EVENTS_H
#define GPOOL_SCHED_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

struct gsched;
struct job;

enum sched_event_kind {
	SEV_JOB_STARTED,       /* job: an attempt started (RUNNING, its tasks placed) */
	SEV_JOB_STOPPING,      /* job: its attempt is being killed or is over (its ranks go) */
	SEV_JOB_ATTEMPT_ENDED, /* job: every task of the attempt has ended, before the core decides
				* requeue or a final state: a subscriber may take the job over
				* (a service restarts its replica) by returning 1 */
	SEV_JOB_CHANGED,       /* job: its state changed (killing, requeued, final) */
	SEV_JOB_ENDED,	       /* job: it reached a final state */
	SEV_JOB_FORGOTTEN,     /* job: gone from memory (it stays in the store): drop its state */
	SEV_JOB_VACATED,     /* job: its PC's owner took it back; queued again (vacates counted) */
	SEV_ALLOC_ENDED,     /* job: one that may hold steps (an allocation, or a job steps ran
			      * on) ended: its steps end (steps.c) */
	SEV_JOB_OUTPUT,	     /* job: a chunk of its current attempt's output came (output) */
	SEV_TASK_HELD,	     /* job: a node's agent still holds one of its current tasks (its
			      * registration or heartbeat); held: the agent's word on it */
	SEV_NODE_REGISTERED, /* node: its agent registered (first time, or back from DOWN) */
	SEV_NODE_DOWN,	     /* node: declared DOWN (its tasks are lost) */
	SEV_NODE_DRAINED,    /* node: drained (gpool drain, or drained before a restart) */
	SEV_NODE_OWNER,	     /* node: its agent's word on its owner (registration, heartbeat);
			      * owner: NULL from an agent that does not watch its owner */
	SEV_NKINDS,
};

struct sched_event {
	enum sched_event_kind kind;
	struct job *job;   /* SEV_JOB_*: the job */
	int node;	   /* SEV_NODE_*: the node's index */
	int32_t exit_code; /* SEV_JOB_ATTEMPT_ENDED: the highest of its tasks' exit codes */
	const Gpool__HeldTask *held;	/* SEV_TASK_HELD */
	const Gpool__OwnerState *owner; /* SEV_NODE_OWNER */
	const Gpool__Output *output;	/* SEV_JOB_OUTPUT */
};

/* A subscriber: 0, or 1 where it takes the event over (SEV_JOB_ATTEMPT_ENDED only). */
typedef int (*sched_observer_f)(struct gsched *s, const struct sched_event *ev, void *arg);

struct sched_events;
struct sched_events *sched_events_create(void);
void sched_events_destroy(struct sched_events **e);

/* Call cb for every event of the kinds in mask (a bit 1 << kind each), in the order of
 * subscription. 0 / -1 (ENOMEM). */
int sched_events_subscribe(struct sched_events *e, uint32_t mask, sched_observer_f cb, void *arg);

/* Publish ev to s's subscribers (none: s->events NULL). Returns 1 when one took it over (then
 * the later ones are not called), else 0. */
int sched_publish(struct gsched *s, const struct sched_event *ev);
/* The same for a job or a node event. */
int sched_publish_job(struct gsched *s, enum sched_event_kind kind, struct job *j);
void sched_publish_node(struct gsched *s, enum sched_event_kind kind, int node);

#endif

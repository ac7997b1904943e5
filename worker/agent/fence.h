/* fence.h: whether an agent whose lease ran out stops its requeueable jobs (docs/reliability.md,
 * "Scheduler outages").
 *
 * The pool's members are the nodes the scheduler last sent (this one among them). An agent
 * that has not heard the scheduler for its lease asks the other members over their peer ports
 * whether they hear it. It keeps its jobs running only when it reached more than half of the
 * members (itself included) and none of those it reached heard the scheduler later than it did:
 * then the scheduler is the one that is away, and gschedd, which requeues a silent node's jobs
 * only while it hears at least half of the same members (scheduler/quorum.h), cannot be
 * requeueing them. Otherwise it stops them, as it always did.
 *
 * gschedd requeues only once it has heard a majority for node_timeout without a break, and
 * says how long that is from now in every reply to an agent. A peer that hears a gschedd which
 * cannot requeue for longer than this node's next question takes (a gschedd that has just come
 * back and hears the agents one by one) does not make this node stop: it waits to hear gschedd
 * itself, asking again every heartbeat, and stops once the peers say a requeue may be near. */
#ifndef GPOOL_WORKER_FENCE_H
#define GPOOL_WORKER_FENCE_H

#include <stdbool.h>
#include <stdint.h>

enum fence_verdict {
	FENCE_KEEP,	   /* the scheduler is away: the jobs run on */
	FENCE_NO_MEMBERS,  /* never told the pool's members: stop, as without peers */
	FENCE_MINORITY,	   /* too few members reached: this node may be the one cut off */
	FENCE_SCHED_ALIVE, /* a peer hears the scheduler: this node is cut off from it */
	FENCE_WAIT,	   /* a peer hears a scheduler that cannot requeue yet: run on, ask again */
};

struct fence_view {
	int members;	 /* the pool's members as last sent (this node among them); 0: none known */
	int reached;	 /* members that answered, this node included */
	int fresh;	 /* of those, how many hear the scheduler, which may requeue soon */
	int waiting;	 /* how many hear it, but it said it cannot requeue for a while */
	int64_t wait_ms; /* the least of what those said: how long it cannot requeue */
};

enum fence_verdict fence_decide(const struct fence_view *v);
/* "the scheduler is away" and so on, for the log */
const char *fence_verdict_text(enum fence_verdict v);

#endif

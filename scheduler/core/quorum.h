/* quorum.h: the pool's majority as gschedd counts it (docs/reliability.md, "Scheduler
 * outages").
 *
 * The members are every node that is not DOWN, and the nodes that were members when an
 * earlier gschedd stopped and have not registered with this one yet. gschedd requeues a silent
 * node's jobs only while it hears a majority of the members, and has heard one for
 * node_timeout without a break: an agent whose lease ran out asks its peers (the members it
 * was last sent) whether they still hear the scheduler, and keeps its jobs running only when
 * more than half of the members (itself among them) answer and none of them does. gschedd
 * needs half of them at least: ties go to gschedd, so the two sets always share a member,
 * which is neither the silent agent (gschedd does not hear it) nor missing from the agent's
 * count: an agent that hears gschedd. A requeue and a job left running are never both
 * decided. gschedd tells agents how long it has left before it may requeue (requeue_in_ms in
 * its replies), so that an agent whose peer hears a gschedd just come back waits to hear it
 * itself (worker/agent/fence.h). */
#ifndef GPOOL_SCHED_QUORUM_H
#define GPOOL_SCHED_QUORUM_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

struct nodes;

struct quorum {
	int heard;   /* members heard within the timeout */
	int members; /* the members: with gschedd, the voters a majority is counted of */
};

/* Count the members, and those heard within timeout_ms of now (monotonic ms). */
void quorum_count(struct nodes *ns, int64_t now, int64_t timeout_ms, struct quorum *q);
/* gschedd hears at least half of the members (a tie is gschedd's: a pool that lost one PC of
 * two still requeues its jobs; an agent needs more than half, worker/agent/fence.h) */
bool quorum_held(const struct quorum *q);

/* The members as agents are sent them: out's arrays are malloc'd (quorum_members_free), the
 * strings point into ns and live until it changes. 0 / -1 (ENOMEM). */
int quorum_members(struct nodes *ns, Gpool__PoolMembers *out);
void quorum_members_free(Gpool__PoolMembers *out);
/* The version of the members now (a hash of their names and endpoints, never 0). */
uint64_t quorum_members_version(struct nodes *ns);

#endif

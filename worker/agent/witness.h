/* witness.h: asks the pool's other members whether they hear the scheduler (fence.h), from a
 * thread of its own so that the agent's loop goes on serving its supervisors meanwhile.
 *
 * A round sends every other member that serves a peer port one PeerStatus, sealed with this
 * agent's MUNGE credential, and takes for WITNESS_ROUND_MS the answers signed by the agents'
 * account (or root); a member that does not answer in time counts as not reached. */
#ifndef GPOOL_WORKER_WITNESS_H
#define GPOOL_WORKER_WITNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/agent/fence.h"
#include "proto/gpool.pb-c.h"

#define WITNESS_ROUND_MS 1000

struct witness;

/* NULL with errno when the thread, MUNGE's context or memory cannot be had */
struct witness *witness_create(void *zctx);
void witness_destroy(struct witness **w);
/* What a round asks: this node last heard the scheduler self_ago_ms ago; a peer that heard it
 * more than margin_ms later than that hears it. Such a peer counts as fresh when the scheduler
 * told it that it may requeue within guard_ms (or told it nothing of it), else as waiting. */
struct witness_ask {
	int64_t self_ago_ms, margin_ms, guard_ms;
};

/* Start a round over m's members but self. 0 / -1 (EBUSY: a round runs; ENOMEM). */
int witness_start(struct witness *w, const Gpool__PoolMembers *m, const char *self,
		  const struct witness_ask *ask);
/* A finished round: its view, and the name of a fresh peer ("" when none) in fresh_peer.
 * true when one was ready (it is taken), false while a round runs or none was started. */
bool witness_take(struct witness *w, struct fence_view *v, char *fresh_peer, size_t len);

#endif

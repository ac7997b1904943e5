/* fence.c: the rule of fence.h. */
#include "worker/agent/fence.h"

enum fence_verdict fence_decide(const struct fence_view *v)
{
	if (v->members <= 0)
		return FENCE_NO_MEMBERS;
	if (v->fresh > 0)
		return FENCE_SCHED_ALIVE;
	/* more than half of the members; half is the scheduler's (scheduler/quorum.h) */
	if (2 * v->reached <= v->members)
		return FENCE_MINORITY;
	return v->waiting > 0 ? FENCE_WAIT : FENCE_KEEP;
}

const char *fence_verdict_text(enum fence_verdict v)
{
	static const char *const text[] = {
	    [FENCE_KEEP] = "the scheduler is away: most of the pool reached, none hears it",
	    [FENCE_NO_MEMBERS] = "the pool's members are not known",
	    [FENCE_MINORITY] = "no majority of the pool reached: this node may be the one cut off",
	    [FENCE_SCHED_ALIVE] = "a peer hears the scheduler: this node is cut off from it",
	    [FENCE_WAIT] =
		"a peer hears the scheduler, which cannot requeue yet: waiting to hear it",
	};
	return (unsigned)v < sizeof(text) / sizeof(text[0]) ? text[v] : "?";
}

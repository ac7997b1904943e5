/* core.c: making and unmaking gschedd's state core (core.h). */
#include "scheduler/core/core.h"

#include "common/u64map.h"
#include "scheduler/core/admit.h"
#include "scheduler/core/card_memory.h"
#include "scheduler/core/events.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/orders.h"

int sched_core_init(struct gsched *s, uint64_t next_id)
{
	if (!(s->jobs = jobs_create(next_id)) || !(s->nodes = nodes_create()) ||
	    !(s->running = gp_u64map_create()) || !(s->orders = orders_create()) ||
	    !(s->events = sched_events_create()) || !(s->admit = admit_chain_create()) ||
	    !(s->card_mem = card_mem_create())) {
		sched_core_release(s);
		return -1;
	}
	nodes_use_clock(s->nodes, &s->clock); /* s->clock: given later, by the shell or a test */
	return 0;
}

void sched_core_release(struct gsched *s)
{
	jobs_destroy(&s->jobs);
	nodes_destroy(&s->nodes);
	gp_u64map_destroy(&s->running);
	orders_destroy(&s->orders);
	sched_events_destroy(&s->events);
	admit_chain_destroy(&s->admit);
	card_mem_destroy(&s->card_mem);
}

void sched_forget(struct gsched *s, struct job *j)
{
	sched_publish_job(s, SEV_JOB_FORGOTTEN, j);
	jobs_forget(s->jobs, j);
}

/* core.c: making and unmaking gschedd's state core (core.h). */
#include "scheduler/core.h"

#include "common/u64map.h"
#include "scheduler/admit.h"
#include "scheduler/client.h"
#include "scheduler/files.h"
#include "scheduler/card_memory.h"
#include "scheduler/events.h"
#include "scheduler/fairshare.h"
#include "scheduler/jobs.h"
#include "scheduler/metrics.h"
#include "scheduler/nodes.h"
#include "scheduler/orders.h"
#include "scheduler/output.h"
#include "scheduler/priority.h"
#include "scheduler/rdv.h"
#include "scheduler/service.h"
#include "scheduler/steps.h"

int sched_core_init(struct gsched *s, uint64_t next_id)
{
	if (!(s->jobs = jobs_create(next_id)) || !(s->nodes = nodes_create()) ||
	    !(s->running = gp_u64map_create()) || !(s->orders = orders_create()) ||
	    !(s->events = sched_events_create()) || !(s->admit = admit_chain_create()) ||
	    !(s->card_mem = card_mem_create())) {
		sched_core_release(s);
		return -1;
	}
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
	services_destroy(&s->services);
	fairshare_destroy(&s->fairshare);
	card_mem_destroy(&s->card_mem);
}

void sched_forget(struct gsched *s, struct job *j)
{
	sched_publish_job(s, SEV_JOB_FORGOTTEN, j);
	jobs_forget(s->jobs, j);
}

/* The admission chain (admit.h), in the order a submission meets it: whether the sender had the
 * staged bytes is asked before whether the store holds them (client_check_spec), so the answer
 * is the same for a chunk the store lacks. */
static const struct {
	const char *name;
	admit_check_f check;
} admission[] = {
    {"staged files", files_admit},	 {"spec", client_admit_spec},
    {"service", service_admit},		 {"step", steps_admit},
    {"shape", client_admit_shape},	 {"screening", client_admit_screen},
    {"owner", client_admit_owner},	 {"room", client_admit_room},
    {"storable", client_admit_storable},
};

int sched_core_subscribe(struct gsched *s)
{
	for (size_t i = 0; s->admit && i < sizeof(admission) / sizeof(admission[0]); i++)
		if (admit_chain_add(s->admit, admission[i].name, admission[i].check) < 0)
			return -1;
	/* first: a service that takes an attempt over still used the time */
	if (s->fairshare && priority_subscribe(s) < 0)
		return -1;
	if (s->rdv && rdv_subscribe(s) < 0)
		return -1;
	if (service_subscribe(s) < 0)
		return -1;
	if (s->metrics && metrics_subscribe(s) < 0)
		return -1;
	if (s->output && output_subscribe(s) < 0)
		return -1;
	return 0;
}

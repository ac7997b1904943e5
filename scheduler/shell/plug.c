/* plug.c: gschedd's features plugged into its core (plug.h): their admission checks and event
 * subscriptions, and the release of their state. */
#include "scheduler/shell/plug.h"

#include "common/util.h"
#include "scheduler/core/admit.h"
#include "scheduler/core/steps.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/features/files.h"
#include "scheduler/features/metrics.h"
#include "scheduler/features/output.h"
#include "scheduler/features/owner.h"
#include "scheduler/core/priority.h"
#include "scheduler/features/rdv.h"
#include "scheduler/features/service.h"
#include "scheduler/shell/client.h"

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
	if (!s->clock.now) /* the system's clocks, unless a test gave its own */
		s->clock = (struct sched_clock){gp_now, gp_mono_ms};
	for (size_t i = 0; s->admit && i < sizeof(admission) / sizeof(admission[0]); i++)
		if (admit_chain_add(s->admit, admission[i].name, admission[i].check) < 0)
			return -1;
	/* the owners first: a held task's frozen time moves its deadline before the others look */
	if (owner_subscribe(s) < 0)
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
	if (steps_subscribe(s) < 0) /* an allocation's end ends its steps */
		return -1;
	return 0;
}

void sched_features_release(struct gsched *s)
{
	services_destroy(&s->services);
	fairshare_destroy(&s->fairshare);
}

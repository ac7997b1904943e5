/* owner.c: the PCs' owners in gschedd (see owner.h and docs/owner.md). */
#include "scheduler/features/owner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/core/events.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_owner.h"

static void load_hist(struct gsched *s, struct node *n)
{
	if (n->owner.hist_loaded)
		return;
	n->owner.hist_loaded = true;
	int rc = store_owner_hist_load(store_db(s->store), n->name, &n->owner);
	if (rc < 0)
		gp_warn("node %s: cannot read its owner's history from the store", n->name);
	for (int h = 0; rc == 0 && h < OWNER_HOURS; h++)
		n->owner.hist_any |= n->owner.weeks[h] > 0;
}

void owner_node_report(struct gsched *s, int node, const Gpool__OwnerState *os)
{
	struct node *n = nodes_get(s->nodes, node);
	if (!n)
		return;
	struct node_owner *o = &n->owner;
	if (!os) {
		if (o->active)
			s->plan_dirty = true;
		o->known = o->active = false;
		return;
	}
	load_hist(s, n);
	if (os->active != o->active || !o->known) {
		gp_info("node %s: owner %s%s%s (policy %d)", n->name,
			os->active ? "active" : "idle", os->source && *os->source ? ": " : "",
			os->source ? os->source : "", os->policy);
		s->plan_dirty = true;
	}
	o->known = true;
	o->active = os->active;
	o->since = os->since;
	o->policy = os->policy;
	snprintf(o->source, sizeof(o->source), "%s", os->source ? os->source : "");
	gpool__owner_state__init(&o->msg);
	o->msg.active = o->active;
	o->msg.since = o->since;
	o->msg.source = o->source;
	o->msg.policy = o->policy;
	bool changed = false;
	for (size_t i = 0; i < os->n_hours; i++) {
		const Gpool__OwnerHour *h = os->hours[i];
		if (h->end <= o->last_end || h->hour_of_week >= OWNER_HOURS)
			continue; /* counted already (a resent report) */
		owner_hist_add(o, (int)h->hour_of_week, h->active_sec / 3600.0);
		o->last_end = h->end;
		changed = true;
	}
	if (changed && store_owner_hist_save(store_db(s->store), n->name, o) < 0)
		gp_warn("node %s: cannot keep its owner's history in the store", n->name);
}

void owner_task_held(struct gsched *s, struct job *j, const Gpool__HeldTask *h)
{
	if (h->exited)
		return;
	if (h->frozen != j->frozen) {
		j->frozen = h->frozen;
		gp_info("job %llu %s", (unsigned long long)j->id,
			h->frozen ? "frozen: its PC's owner is back" : "thawed");
	}
	if (h->frozen_ms <= j->frozen_attempt_ms)
		return;
	uint64_t more = h->frozen_ms - j->frozen_attempt_ms;
	j->frozen_attempt_ms = h->frozen_ms;
	j->frozen_ms += more;
	/* frozen time does not count against the limit */
	if (j->deadline_ms)
		j->deadline_ms += (int64_t)more;
	if (store_owner_job_save(store_db(s->store), j->id, j->frozen_ms, j->vacates) < 0)
		gp_warn("job %llu: cannot keep its frozen time in the store",
			(unsigned long long)j->id);
}

void owner_job_vacated(struct gsched *s, struct job *j)
{
	gp_info("job %llu vacated (%u so far): queued again, not counted against max_attempts",
		(unsigned long long)j->id, j->vacates);
	if (store_owner_job_save(store_db(s->store), j->id, j->frozen_ms, j->vacates) < 0)
		gp_warn("job %llu: cannot keep its vacates in the store",
			(unsigned long long)j->id);
}

static int on_event(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	switch (ev->kind) {
	case SEV_NODE_OWNER:
		owner_node_report(s, ev->node, ev->owner);
		break;
	case SEV_TASK_HELD:
		owner_task_held(s, ev->job, ev->held);
		break;
	case SEV_JOB_VACATED:
		owner_job_vacated(s, ev->job);
		break;
	default:
		break;
	}
	return 0;
}

int owner_subscribe(struct gsched *s)
{
	return sched_events_subscribe(
	    s->events, 1u << SEV_NODE_OWNER | 1u << SEV_TASK_HELD | 1u << SEV_JOB_VACATED, on_event,
	    NULL);
}

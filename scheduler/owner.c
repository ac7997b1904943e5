/* owner.c: the PCs' owners in gschedd (see owner.h and docs/owner.md). */
#include "scheduler/owner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/gschedd.h"
#include "scheduler/jobs.h"
#include "scheduler/nodes.h"
#include "scheduler/store.h"
#include "scheduler/store_owner.h"

#define MAX_WEEKS 1000

struct node_owner *owner_of(struct gsched *s, int node)
{
	struct node *n = nodes_get(s->nodes, node);
	return n ? &n->owner : NULL;
}

int owner_hour_of_week(double t)
{
	time_t tt = (time_t)t;
	struct tm lt;
	localtime_r(&tt, &lt);
	return ((lt.tm_wday + 6) % 7) * 24 + lt.tm_hour;
}

void owner_hist_add(struct node_owner *o, int how, double fraction)
{
	if (how < 0 || how >= OWNER_HOURS)
		return;
	if (fraction < 0)
		fraction = 0;
	if (fraction > 1)
		fraction = 1;
	/* the first weeks count as an average, then each new week weighs OWNER_DECAY_NEW */
	double w = o->weeks[how] < 1 ? 1.0 : 1.0 / (o->weeks[how] + 1);
	if (w < OWNER_DECAY_NEW)
		w = OWNER_DECAY_NEW;
	o->hist[how] = o->hist[how] * (1 - w) + fraction * w;
	o->hist_any = true;
	if (o->weeks[how] < MAX_WEEKS)
		o->weeks[how]++;
}

double owner_free_chance(const struct node_owner *o, double start, uint32_t secs)
{
	if (!o->hist_any)
		return 1.0; /* no history: every PC alike, and no clock read per comparison */
	if (!secs)
		secs = 3600;
	if (secs > 7 * 24 * 3600)
		secs = 7 * 24 * 3600; /* a week covers every hour once */
	double chance = 1.0, t = start, end = start + secs;
	int how = owner_hour_of_week(t); /* then one hour after another */
	while (t < end) {
		double hour_end = floor(t / 3600) * 3600 + 3600;
		double part = ((hour_end < end ? hour_end : end) - t) / 3600.0;
		if (o->weeks[how])
			chance *= pow(1.0 - o->hist[how], part);
		t = hour_end;
		how = (how + 1) % OWNER_HOURS;
	}
	return chance;
}

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

void owner_signal_job(struct gsched *s, struct job *j, int sig)
{
	int nn = nodes_count(s->nodes);
	for (int n = 0; n < nn; n++) {
		bool on = false;
		for (uint32_t i = 0; i < j->ntasks && !on; i++)
			on = j->tasks[i].node == n && j->tasks[i].state != 2;
		if (!on)
			continue;
		Gpool__Kill k = GPOOL__KILL__INIT;
		k.job_id = j->id;
		k.attempt = j->attempt;
		k.signal = sig;
		k.grace_ms = 0; /* a signal only: no SIGKILL after it */
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_KILL;
		m.kill = &k;
		orders_send(s->orders, n, &m);
	}
	gp_info("job %llu: signal %d sent %u s before its time limit (--signal)",
		(unsigned long long)j->id, sig, j->ckpt_sec);
}

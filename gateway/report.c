/* report.c: ggated's word on the replicas for gschedd (ServiceQuery.reports; gstat shows it).
 * The loop builds a report at each health tick and leaves it in one pointer; the discovery
 * thread takes it with its next poll. The pointer is swapped atomically: nothing else is
 * shared, as for the snapshots going the other way. */
#include <stdlib.h>

#include "gateway/gateway.h"
#include "gateway/pool.h"
#include "gateway/report.h"

struct gw_report {
	size_t n;
	Gpool__ReplicaReport *r;
	Gpool__ReplicaReport **pv;
};

void gw_report_free(struct gw_report *rep)
{
	if (!rep)
		return;
	free(rep->r);
	free(rep->pv);
	free(rep);
}

/* Removed replica r is also in the set again (its drain was called off): the live entry is
 * the one gschedd hears of. */
static bool known_again(const struct gw_service *s, const struct gw_replica *r)
{
	for (const struct gw_replica *o = s->reps; o; o = o->next)
		if (!o->removed && o->job_id == r->job_id && o->restarts == r->restarts)
			return true;
	return false;
}

void gw_report_publish(struct gw_ctx *c)
{
	size_t n = 0;
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			n++;
	struct gw_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return;
	rep->r = calloc(n ? n : 1, sizeof(*rep->r));
	rep->pv = calloc(n ? n : 1, sizeof(*rep->pv));
	if (!rep->r || !rep->pv) {
		gw_report_free(rep);
		return;
	}
	int64_t now = gw_now_ms();
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next) {
			if (r->removed && known_again(s, r))
				continue;
			Gpool__ReplicaReport *x = &rep->r[rep->n];
			gpool__replica_report__init(x);
			x->job_id = r->job_id;
			x->restarts = r->restarts;
			x->healthy = r->healthy && now >= r->eject_until_ms;
			x->requests = r->st.requests;
			x->errors = r->st.errors;
			x->outstanding = r->outstanding;
			x->draining = r->removed;
			rep->pv[rep->n++] = x;
		}
	gw_report_free(__atomic_exchange_n(&c->report, rep, __ATOMIC_ACQ_REL));
}

struct gw_report *gw_report_take(struct gw_ctx *c, Gpool__ServiceQuery *q)
{
	struct gw_report *rep = __atomic_exchange_n(&c->report, NULL, __ATOMIC_ACQ_REL);
	q->gateway = c->gateway_name;
	if (rep) {
		q->reports = rep->pv;
		q->n_reports = rep->n;
	}
	return rep;
}

/* snap.c: gschedd's answer to a ServiceQuery as the event loop's snapshot (see gateway.h).
 * Every replica the scheduler lists is kept, ready or not: a replica that is not ready is not
 * sent requests, but it is not news that it ended either (right after gschedd restarts, every
 * replica is listed as running with its port and node not known yet); gw_pool_apply tells the
 * two apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/snap.h"

void gw_snap_free(struct gw_snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nsvcs; i++)
		free(s->svcs[i].reps);
	free(s->svcs);
	free(s);
}

struct gw_snap *gw_snap_of(const Gpool__ServiceQueryReply *rep, gw_resolve_f resolve)
{
	struct gw_snap *s = calloc(1, sizeof(*s));
	if (!s || !(s->svcs = calloc(rep->n_services ? rep->n_services : 1, sizeof(*s->svcs)))) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < rep->n_services; i++) {
		const Gpool__ServiceInfo *si = rep->services[i];
		struct gw_snap_svc *v = &s->svcs[s->nsvcs];
		v->id = si->id;
		snprintf(v->name, sizeof(v->name), "%s", si->name ? si->name : "");
		snprintf(v->user, sizeof(v->user), "%s", si->user ? si->user : "");
		snprintf(v->health_path, sizeof(v->health_path), "%s",
			 si->health_path ? si->health_path : "");
		snprintf(v->route_hash, sizeof(v->route_hash), "%s",
			 si->route_token_sha256 ? si->route_token_sha256 : "");
		v->keep_prefix = si->route_keep_prefix;
		v->reps = calloc(si->n_replicas ? si->n_replicas : 1, sizeof(*v->reps));
		if (!v->reps) {
			/* a service whose replicas cannot be listed would lose them all */
			gw_snap_free(s);
			return NULL;
		}
		for (size_t k = 0; k < si->n_replicas; k++) {
			const Gpool__ReplicaInfo *ri = si->replicas[k];
			struct gw_snap_rep *r = &v->reps[v->nreps++];
			r->job_id = ri->job_id;
			r->index = ri->index;
			r->restarts = ri->restarts;
			/* a draining replica is leaving: to ggated its attempt has ended (it is
			 * removed gracefully: no new requests, its own ones finish) */
			r->running = ri->state == GPOOL__JOB_STATE__RUNNING && !ri->draining;
			/* a squatter listens on its port: as good as ended (what ggated would
			 * send there reaches the squatter) */
			if (ri->port_state == GPOOL__PORT_STATE__PORT_FOREIGN)
				r->running = false;
			if (ri->port && ri->port <= 65535)
				r->port = (uint16_t)ri->port;
			/* resolved only when it may take requests; an address ggated cannot
			 * reach is one it cannot send requests to */
			if (ri->ready && r->running && r->port && ri->addr && *ri->addr &&
			    resolve(ri->addr, r->addr, sizeof(r->addr)) == 0)
				r->ready = true;
			else
				r->addr[0] = '\0';
		}
		s->nsvcs++;
	}
	return s;
}

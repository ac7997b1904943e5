/* svcreport.h: what the gateways say of the replicas (ServiceQuery.reports): kept in memory
 * per (replica, gateway) for a while, summed up for gstat (ReplicaInfo.health, requests).
 * Nothing of it is stored: after a gschedd restart the next polls bring it back. */
#ifndef GPOOL_SCHED_SVCREPORT_H
#define GPOOL_SCHED_SVCREPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

#define SVCREP_FRESH_MS 10000 /* a report older than this is forgotten */

typedef struct svcrep svcrep_t;

svcrep_t *svcrep_create(void);
void svcrep_destroy(svcrep_t **t);
/* gateway's report of one replica at now_ms (the gateway's earlier one replaced). 0 / -1
 * ENOMEM. */
int svcrep_put(svcrep_t *t, const char *gateway, const Gpool__ReplicaReport *r, int64_t now_ms);
/* The replica job_id at attempt restarts as the gateways reported it in the last
 * SVCREP_FRESH_MS: health OK when every one of them sends it requests, FAILING when one
 * does not, UNKNOWN when none reported it; requests summed over them. Returns how many
 * gateways reported it. */
uint32_t svcrep_get(svcrep_t *t, uint64_t job_id, uint32_t restarts, int64_t now_ms,
		    Gpool__ReplicaHealth *health, uint64_t *requests);

/* Whether replica job_id at attempt restarts has drained by the gateways' word: every gateway
 * that reported it in the last SVCREP_FRESH_MS has reported since since_ms (the drain's start)
 * that it sends it nothing new and has no request in flight there. True when none reported
 * it. */
bool svcrep_drained(svcrep_t *t, uint64_t job_id, uint32_t restarts, int64_t since_ms,
		    int64_t now_ms);

#endif

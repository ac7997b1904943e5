/* svcreport.c: the gateways' word on the replicas (see svcreport.h). One entry per (replica
 * job, gateway); stale ones are dropped as new reports come. A cluster has tens of replicas
 * and a few gateways: a flat array. */
#include "scheduler/features/svcreport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GATEWAY_NAME_MAX 128
#define ENTRIES_MAX	 65536 /* bounds what senders can make gschedd hold */

struct entry {
	uint64_t job_id;
	uint32_t restarts;
	char gateway[GATEWAY_NAME_MAX];
	bool healthy;
	bool draining;
	uint32_t outstanding;
	uint64_t requests;
	int64_t at_ms;
};

struct svcrep {
	struct entry *e;
	size_t n, cap;
};

svcrep_t *svcrep_create(void)
{
	return calloc(1, sizeof(struct svcrep));
}

void svcrep_destroy(svcrep_t **t)
{
	if (!*t)
		return;
	free((*t)->e);
	free(*t);
	*t = NULL;
}

static void prune(svcrep_t *t, int64_t now_ms)
{
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (now_ms - t->e[i].at_ms <= SVCREP_FRESH_MS)
			t->e[k++] = t->e[i];
	t->n = k;
}

int svcrep_put(svcrep_t *t, const char *gateway, const Gpool__ReplicaReport *r, int64_t now_ms)
{
	char name[GATEWAY_NAME_MAX];
	snprintf(name, sizeof(name), "%s", gateway ? gateway : "");
	struct entry *e = NULL;
	for (size_t i = 0; i < t->n && !e; i++)
		if (t->e[i].job_id == r->job_id && strcmp(t->e[i].gateway, name) == 0)
			e = &t->e[i];
	if (!e) {
		if (t->n == t->cap)
			prune(t, now_ms);
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 64;
			struct entry *ne =
			    cap <= ENTRIES_MAX ? realloc(t->e, cap * sizeof(*ne)) : NULL;
			if (!ne) {
				errno = ENOMEM;
				return -1;
			}
			t->e = ne;
			t->cap = cap;
		}
		e = &t->e[t->n++];
		e->job_id = r->job_id;
		memcpy(e->gateway, name, sizeof(name));
	}
	e->restarts = r->restarts;
	e->healthy = r->healthy;
	e->draining = r->draining;
	e->outstanding = r->outstanding;
	e->requests = r->requests;
	e->at_ms = now_ms;
	return 0;
}

bool svcrep_drained(svcrep_t *t, uint64_t job_id, uint32_t restarts, int64_t since_ms,
		    int64_t now_ms)
{
	for (size_t i = 0; t && i < t->n; i++) {
		const struct entry *e = &t->e[i];
		if (e->job_id != job_id || e->restarts != restarts ||
		    now_ms - e->at_ms > SVCREP_FRESH_MS)
			continue;
		if (e->at_ms < since_ms || !e->draining || e->outstanding)
			return false;
	}
	return true;
}

uint32_t svcrep_get(svcrep_t *t, uint64_t job_id, uint32_t restarts, int64_t now_ms,
		    Gpool__ReplicaHealth *health, uint64_t *requests)
{
	uint32_t n = 0;
	bool failing = false;
	*requests = 0;
	for (size_t i = 0; t && i < t->n; i++) {
		const struct entry *e = &t->e[i];
		if (e->job_id != job_id || e->restarts != restarts ||
		    now_ms - e->at_ms > SVCREP_FRESH_MS)
			continue;
		n++;
		failing |= !e->healthy;
		*requests += e->requests;
	}
	*health = !n	    ? GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_UNKNOWN
		  : failing ? GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_FAILING
			    : GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_OK;
	return n;
}

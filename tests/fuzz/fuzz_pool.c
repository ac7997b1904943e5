/* fuzz_pool: ggated's replica set (gateway/snap.c, gateway/pool.c) fed any two answers of
 * gschedd in a row (the input cut in two at a point its first byte picks; each half decoded
 * as a ServiceQueryReply). Properties: every replica that may take requests has a port and
 * an address; no two live replicas of a service are the same attempt at the same address;
 * a replica the second answer lists as running at the same attempt and place is the same
 * object as after the first (nothing is dropped and re-added); an answer without a service
 * leaves none of its replicas usable. Health paths are cleared and names resolve only when
 * numeric loopback: nothing is ever sent. */
#include <event2/event.h>

#include "tests/fuzz/fuzz.h"
#include "gateway/gateway.h"
#include "gateway/proxy.h"
#include "gateway/snap.h"
#include "gateway/pool.h"

static int resolve(const char *addr, char *out, size_t n)
{
	if (strncmp(addr, "127.", 4) != 0 || strlen(addr) >= n)
		return -1;
	snprintf(out, n, "%s", addr);
	return 0;
}

static struct gw_snap *snap_of(const uint8_t *data, size_t size)
{
	Gpool__ServiceQueryReply *rep = gpool__service_query_reply__unpack(NULL, size, data);
	if (!rep)
		return NULL;
	struct gw_snap *s = gw_snap_of(rep, resolve);
	gpool__service_query_reply__free_unpacked(rep, NULL);
	for (size_t i = 0; s && i < s->nsvcs; i++) {
		s->svcs[i].health_path[0] = '\0';
		for (size_t k = 0; k < s->svcs[i].nreps; k++)
			FUZZ_CHECK(!s->svcs[i].reps[k].ready ||
				   (s->svcs[i].reps[k].port && s->svcs[i].reps[k].addr[0]));
	}
	return s;
}

static bool same(const struct gw_replica *a, const struct gw_replica *b)
{
	return a->job_id == b->job_id && a->restarts == b->restarts && a->port == b->port &&
	       strcmp(a->addr, b->addr) == 0;
}

static void check(struct gw_ctx *c)
{
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next) {
			FUZZ_CHECK(r->svc == s);
			if (r->removed)
				continue;
			FUZZ_CHECK(r->port && r->addr[0]);
			for (struct gw_replica *o = r->next; o; o = o->next)
				FUZZ_CHECK(o->removed || !same(r, o));
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gw_ctx c;
	if (!c.base) {
		c.base = event_base_new();
		c.timeout_ms = c.connect_timeout_ms = c.eject_ms = 1000;
		c.max_conns = 4;
		c.tries = GW_MAX_TRIES;
		FUZZ_CHECK(c.base);
	}
	if (size < 1)
		return 0;
	size_t cut = 1 + (size_t)data[0] * (size - 1) / 256;
	struct gw_snap *a = snap_of(data + 1, cut - 1), *b = snap_of(data + cut, size - cut);
	if (a) {
		gw_pool_apply(&c, a);
		check(&c);
	}
	/* the replicas known now, to find them again after b */
	struct gw_replica *before[64];
	size_t nbefore = 0;
	for (struct gw_service *s = c.svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r && nbefore < 64; r = r->next)
			if (!r->removed)
				before[nbefore++] = r;
	if (b) {
		/* what b says about each replica known, read before b is applied (and freed) */
		bool keep[64] = {false};
		bool unique = true; /* a service listed twice: each listing applies in turn */
		for (size_t j = 0; j < b->nsvcs; j++)
			for (size_t k = j + 1; k < b->nsvcs; k++)
				unique = unique && b->svcs[j].id != b->svcs[k].id;
		for (size_t i = 0; unique && i < nbefore; i++) {
			for (size_t j = 0; j < b->nsvcs; j++) {
				const struct gw_snap_svc *ss = &b->svcs[j];
				if (ss->id != before[i]->svc->id)
					continue;
				for (size_t k = 0; k < ss->nreps; k++)
					if (ss->reps[k].job_id == before[i]->job_id) {
						const struct gw_snap_rep *sr = &ss->reps[k];
						keep[i] =
						    sr->running &&
						    sr->restarts == before[i]->restarts &&
						    (!sr->port || sr->port == before[i]->port) &&
						    (!sr->ready ||
						     strcmp(sr->addr, before[i]->addr) == 0);
						break; /* the first listing of a job is the one read
							*/
					}
				break;
			}
		}
		gw_pool_apply(&c, b);
		check(&c);
		/* a replica b does not end is still there, the same object (the others may have
		 * been freed: only pointers are compared) */
		for (size_t i = 0; i < nbefore; i++) {
			bool found = !keep[i];
			for (struct gw_service *s = c.svcs; s && !found; s = s->next)
				for (struct gw_replica *r = s->reps; r && !found; r = r->next)
					found = r == before[i] && !r->removed;
			FUZZ_CHECK(found);
		}
	}
	/* the end of every input: no service, every replica removed, idle (no connection left),
	 * and freed once its linger (GW_LINGER_MS in the reports for gschedd) is over */
	struct gw_snap *none = calloc(1, sizeof(*none));
	FUZZ_CHECK(none);
	gw_pool_apply(&c, none);
	for (struct gw_service *s = c.svcs, *nx; s; s = nx) {
		nx = s->next;
		for (struct gw_replica *r = s->reps, *rn; r; r = rn) {
			rn = r->next;
			FUZZ_CHECK(r->removed && r->nconns == 0);
			r->removed_ms -= GW_LINGER_MS;
			gw_replica_maybe_free(r);
		}
		FUZZ_CHECK(s->reps == NULL);
		free(s);
	}
	c.svcs = NULL;
	return 0;
}

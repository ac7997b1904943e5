/* pool.h: services and their replicas: the set learnt from gschedd, choice of a replica
 * (power of two choices on outstanding requests), active health checks (http/client_conn.h),
 * passive ejection, graceful removal (pool.c). */
#ifndef GPOOL_GATEWAY_POOL_H
#define GPOOL_GATEWAY_POOL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/metrics.h"
#include "gateway/snap.h"
#include "http/client_conn.h"

/* a removed replica is reported to gschedd (draining, outstanding 0) this long after its last
 * request ended, so that gschedd learns its drain is over (svcreport.h's freshness is 10 s) */
#define GW_LINGER_MS 12000

struct gw_ctx;
struct gw_conn;
struct gw_fwd;

struct gw_replica {
	struct gw_replica *next;
	struct gw_service *svc;
	uint64_t job_id;
	uint32_t index;
	uint32_t restarts; /* which attempt of the replica job this is */
	char addr[64];
	uint16_t port;
	char label[96];	    /* "addr:port" */
	bool healthy;	    /* takes new requests */
	bool removed;	    /* gone from the scheduler's set: no new requests, freed when idle */
	int64_t removed_ms; /* when it was removed (gw_now_ms) */
	uint32_t outstanding;
	uint32_t fails; /* in a row, passive or active */
	int64_t eject_until_ms;
	struct gw_conn **conns; /* each allocated alone: a request keeps a pointer to its own */
	uint32_t nconns, capconns;
	/* active health check */
	gh_client_t *hc;
	struct gh_buf hc_req; /* the check's request */
	int hc_code;	      /* its answer's status so far */
	bool hc_busy;
	struct gw_stats st;
};

/* A connection to a replica: a replica's list of them is the pool's, upstream.c makes them
 * and drives their events. */
struct gw_conn {
	struct gw_replica *r;
	gh_client_t *cl;
	struct gw_fwd *fwd; /* the request in flight on it, NULL: idle */
};

struct gw_service {
	struct gw_service *next;
	struct gw_ctx *ctx;
	uint64_t id;
	char name[257];
	char user[64]; /* its owner: a name is routed to one owner's services */
	char health_path[1025];
	char route_hash[65]; /* "": open to all; else the SHA-256 (hex) of its owner's token */
	bool keep_prefix; /* /svc/NAME/... reaches the replica whole (gsub --route-prefix keep) */
	bool seen;
	struct gw_replica *reps;
	struct gw_stats st;
};

/* The scheduler's latest word (takes snap). A replica ggated knows is removed only when the
 * scheduler says that its attempt ended: its job is no longer one of the service's replicas,
 * has another attempt, is not running, runs elsewhere, or its service is gone. A replica
 * listed as running with its port or node not known (yet), as right after gschedd restarts,
 * keeps being served while its health allows. New replicas are added once ready. */
void gw_pool_apply(struct gw_ctx *c, struct gw_snap *snap);
/* The service a request names: all digits, a job id (never a name); else a name, which
 * belongs to the owner of the oldest service of that name gschedd lists (gschedd refuses a
 * second owner's, but holds on to services of before that rule), and among that owner's the
 * newest. Services gschedd no longer lists come after those it lists. NULL: none. */
struct gw_service *gw_service_find(struct gw_ctx *c, const char *name, size_t len);
struct gw_service *gw_service_by_id(struct gw_ctx *c, uint64_t id);
/* Choose a replica of svc for a request: healthy, not in avoid[0..navoid), power of two
 * choices on outstanding requests. NULL: none. */
struct gw_replica *gw_pick(struct gw_service *svc, struct gw_replica *const *avoid, int navoid);
/* A request to r failed without an answer: eject it (a health check re-admits it). */
void gw_replica_failed(struct gw_replica *r, const char *why);
void gw_replica_ok(struct gw_replica *r);
/* r removed and idle: its connections closed; freed GW_LINGER_MS after its removal (the
 * health tick sweeps). */
void gw_replica_maybe_free(struct gw_replica *r);
/* Close conn and drop it from its replica (its request, if any, is the caller's). */
void gw_conn_close(struct gw_conn *conn);
/* The health timer (arg: the gw_ctx): active health checks, passive ejection served, removed
 * replicas freed once their linger is over. ggated.c publishes the report to gschedd first. */
void gw_health_tick(evutil_socket_t fd, short what, void *arg);
int64_t gw_now_ms(void);

#endif

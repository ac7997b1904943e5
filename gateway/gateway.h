/* gateway.h: ggated's context. One event loop (libevent) serves every service:
 *   pool.c       services and their replicas: the set learnt from gschedd, choice of a
 *                replica (power of two choices on outstanding requests), active health
 *                checks, passive ejection, graceful removal
 *   proxy.c      one client request: forwarded (evhttp client, keep-alive connections per
 *                replica), retried on another replica when it never reached one or is
 *                idempotent, answered 502/503/504 otherwise
 *   discovery.c  a thread that polls gschedd (ServiceQuery, MUNGE-authenticated) and hands
 *                each answer to the loop (names resolved there: no DNS on the loop); a
 *                failed poll keeps the set the loop knows
 *   snap.c       an answer as the loop's snapshot: every replica listed, ready or not
 *   metrics.c    counters and latency histograms, served as Prometheus text at /metrics
 *   ggated.c     options, listeners, the loop
 */
#ifndef GPOOL_GATEWAY_H
#define GPOOL_GATEWAY_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

#define GW_BUCKETS   14 /* latency histogram buckets (metrics.c) */
#define GW_MAX_TRIES 3

struct gw_stats {
	uint64_t requests, errors, retries, count;
	uint64_t bucket[GW_BUCKETS]; /* cumulative counts are computed when printed */
	double sum_sec;
};

struct gw_conn {
	struct evhttp_connection *evcon;
	struct gw_fwd *fwd; /* the request in flight on it, NULL: idle */
	bool up;	    /* connected, has answered once, TCP_NODELAY set; false from close */
};

struct gw_replica {
	struct gw_replica *next;
	struct gw_service *svc;
	uint64_t job_id;
	uint32_t index;
	uint32_t restarts; /* which attempt of the replica job this is */
	char addr[64];
	uint16_t port;
	char label[96]; /* "addr:port" */
	bool healthy;	/* takes new requests */
	bool removed;	/* gone from the scheduler's set: no new requests, freed when idle */
	uint32_t outstanding;
	uint32_t fails; /* in a row, passive or active */
	int64_t eject_until_ms;
	struct gw_conn **conns; /* each allocated alone: a request keeps a pointer to its own */
	uint32_t nconns, capconns;
	/* active health check */
	struct evhttp_connection *hc;
	bool hc_busy;
	struct gw_stats st;
};

struct gw_service {
	struct gw_service *next;
	struct gw_ctx *ctx;
	uint64_t id;
	char name[257];
	char health_path[1025];
	bool seen;
	struct gw_replica *reps;
	struct gw_stats st;
};

/* One service's replicas as gschedd sent them (discovery thread -> loop): all of them, ready
 * or not. */
struct gw_snap_rep {
	uint64_t job_id;
	uint32_t index;
	uint32_t restarts;
	bool running;  /* state RUNNING: this attempt has not ended (its port may be unknown) */
	bool ready;    /* running, port known, node up, addr resolved: may take requests */
	char addr[64]; /* numeric; "" unless ready */
	uint16_t port; /* 0: not known (yet) */
};
struct gw_snap_svc {
	uint64_t id;
	char name[257];
	char health_path[1025];
	struct gw_snap_rep *reps;
	size_t nreps;
};
struct gw_snap {
	struct gw_snap_svc *svcs;
	size_t nsvcs;
};
/* addr (a name or a numeric address) as a numeric address into out; 0 / -1 */
typedef int (*gw_resolve_f)(const char *addr, char *out, size_t n);
/* snap.c: the snapshot of a reply (NULL: out of memory); names resolved with resolve */
struct gw_snap *gw_snap_of(const Gpool__ServiceQueryReply *rep, gw_resolve_f resolve);
void gw_snap_free(struct gw_snap *s);

/* A port given to one service: requests to it go to that service, whole path kept. */
struct gw_portmap {
	char name[257];
	uint16_t port;
};

struct gw_ctx {
	struct event_base *base;
	struct evhttp *http;
	struct gw_service *svcs;
	/* settings */
	int timeout_ms;		/* per request, to the replica */
	int connect_timeout_ms; /* health checks too */
	int health_ms;		/* health check period */
	int poll_ms;		/* discovery period */
	int eject_ms;		/* passive ejection without a health path */
	uint32_t max_conns;	/* per replica */
	size_t max_body, max_headers;
	int tries;
	/* discovery -> loop: each snapshot's pointer is written to a pipe, read by the loop.
	 * Nothing else is shared: libevent runs without locks (no evthread_use_pthreads), so
	 * the discovery thread can never hold a lock the loop waits for (see pool.c). */
	int snap_pipe[2];
	struct event *ev_snap;
	uint64_t polls_ok, polls_failed; /* __atomic: written by the discovery thread */
	struct event *ev_health;
	struct gw_stats total;
	uint64_t bad_requests; /* refused before any service was chosen */
};

/* pool.c */
/* The scheduler's latest word (takes snap). A replica ggated knows is removed only when the
 * scheduler says that its attempt ended: its job is no longer one of the service's replicas,
 * has another attempt, is not running, runs elsewhere, or its service is gone. A replica
 * listed as running with its port or node not known (yet), as right after gschedd restarts,
 * keeps being served while its health allows. New replicas are added once ready. */
void gw_pool_apply(struct gw_ctx *c, struct gw_snap *snap);
struct gw_service *gw_service_find(struct gw_ctx *c, const char *name, size_t len);
/* Choose a replica of svc for a request: healthy, not in avoid[0..navoid), power of two
 * choices on outstanding requests. NULL: none. */
struct gw_replica *gw_pick(struct gw_service *svc, struct gw_replica *const *avoid, int navoid);
/* An idle connection to r (made when none is idle and fewer than max_conns exist; else the
 * least busy); NULL on failure. */
struct gw_conn *gw_conn_get(struct gw_replica *r);
/* A request to r failed without an answer: eject it (a health check re-admits it). */
void gw_replica_failed(struct gw_replica *r, const char *why);
void gw_replica_ok(struct gw_replica *r);
/* Write what evhttp has queued on evcon now, in this pass of the loop, instead of in the next
 * one after epoll reports the socket writable (see pool.c). Only for connected sockets. */
void gw_write_now(struct evhttp_connection *evcon);
/* Free r when removed and idle. */
void gw_replica_maybe_free(struct gw_replica *r);
void gw_health_tick(evutil_socket_t fd, short what, void *arg);
int64_t gw_now_ms(void);

/* proxy.c */
/* uri: what the replica is sent; it lives as long as req does (inside req's target) or is
 * owned (malloc'd, freed with the request's state; NULL: none). */
void gw_proxy(struct gw_ctx *c, struct gw_service *svc, struct evhttp_request *req, const char *uri,
	      char *owned);
/* The in-flight request on conn of r is abandoned (r ejected): retry or fail it. */
void gw_fwd_abandon(struct gw_fwd *f);

/* metrics.c */
void gw_stats_observe(struct gw_stats *s, double sec);
void gw_metrics_serve(struct gw_ctx *c, struct evhttp_request *req);

/* discovery.c */
int gw_discovery_start(struct gw_ctx *c, const char *config, gp_error_t *err);
/* The loop's side of the hand-off: applies every snapshot waiting in the pipe (the newest
 * wins). */
void gw_discovery_read(evutil_socket_t fd, short what, void *arg);

#endif

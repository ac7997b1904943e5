/* gateway.h: ggated's context. One event loop (libevent) serves every service. Each socket
 * of the data path is ggated's own: its read interest is registered once for the socket's
 * life, write interest only while a write has to wait, and each message costs one read(2)
 * and one write(2) a side (docs/commands/ggated.md); HTTP is parsed by http-parser
 * (http/msg.c), client connections are http/server.c's.
 *   front.c      what a client's request means: a service's (proxy.c), /metrics, /-/health
 *   upstream.c   keep-alive connections to a replica: connect, send, read the answer
 *   proxy.c      one client request: sent to a replica as it arrives (body streamed, kept
 *                for a retry), the answer streamed back; retried on another replica when it
 *                never reached one or is idempotent and no answer came, else 502/503/504
 *   pool.c       services and their replicas: the set learnt from gschedd, choice of a
 *                replica (power of two choices on outstanding requests), active health
 *                checks (evhttp's client), passive ejection, graceful removal
 *   discovery.c  a thread that polls gschedd (ServiceQuery, MUNGE-authenticated) and hands
 *                each answer to the loop (names resolved there: no DNS on the loop); a
 *                failed poll keeps the set the loop knows
 *   snap.c       an answer as the loop's snapshot: every replica listed, ready or not
 *   metrics.c    counters and latency histograms, served as Prometheus text at /metrics
 *   report.c     the replicas' health and request counts, sent to gschedd with each poll
 *   ggated.c     options, listeners, the loop
 */
#ifndef GPOOL_GATEWAY_H
#define GPOOL_GATEWAY_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "gateway/forwarded.h"
#include "http/buf.h"
#include "http/msg.h"
#include "http/server.h"
#include "proto/gpool.pb-c.h"

#define GW_BUCKETS   14 /* latency histogram buckets (metrics.c) */
#define GW_MAX_TRIES 3
/* a removed replica is reported to gschedd (draining, outstanding 0) this long after its last
 * request ended, so that gschedd learns its drain is over (svcreport.h's freshness is 10 s) */
#define GW_LINGER_MS 12000

struct gw_stats {
	uint64_t requests, errors, retries, count;
	uint64_t bucket[GW_BUCKETS]; /* cumulative counts are computed when printed */
	double sum_sec;
};

/* A connection to a replica (upstream.c). */
struct gw_conn {
	struct gw_replica *r;
	int fd;
	bool connecting;
	bool writing; /* ev_write is added */
	bool paused;  /* ev_read is off: the client's side holds too much */
	bool interim; /* reading a 1xx answer, which is not relayed */
	struct event *ev_read, *ev_write, *ev_timer;
	struct gh_buf in;
	struct gh_msg resp;
	struct gw_fwd *fwd; /* the request in flight on it, NULL: idle */
	size_t sent;	    /* bytes of fwd->out written */
};

/* One request on its way through (proxy.c). */
struct gw_fwd {
	struct gw_ctx *c;
	gh_conn_t *client; /* NULL: it left; the answer is read and dropped */
	uint64_t svc_id;
	struct gh_buf out; /* the request as a replica is sent it: head and body so far */
	bool req_done;	   /* out holds all of it */
	bool idempotent;
	bool head;		/* a HEAD request: its answer has no body */
	bool answered;		/* the answer's head went to the client: no retry */
	bool client_keep;	/* the client asked to keep its connection */
	int client_minor;	/* the client's HTTP/1.x */
	struct gw_replica *rep; /* where it is now */
	struct gw_conn *conn;
	struct gw_replica *tried[GW_MAX_TRIES + 1];
	int ntried;
	struct timespec start;
};

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
	struct evhttp_connection *hc;
	bool hc_busy;
	struct gw_stats st;
};

struct gw_service {
	struct gw_service *next;
	struct gw_ctx *ctx;
	uint64_t id;
	char name[257];
	char user[64]; /* its owner: a name is routed to one owner's services */
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
	char user[64]; /* its owner */
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
	gh_server_t *http; /* the client side of every listener */
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
	int client_timeout_ms;	     /* a client's head, body progress, idle keep-alive */
	size_t max_clients;	     /* client connections open at most (0: no cap) */
	size_t max_clients_per_addr; /* from one address at most (0: no cap) */
	gh_tls_t *tls;		     /* NULL: plain HTTP to the clients */
	struct gw_trust trust;	     /* front proxies whose X-Forwarded-For is kept (forwarded.h) */
	/* discovery -> loop: each snapshot's pointer is written to a pipe, read by the loop.
	 * Nothing else is shared: libevent runs without locks (no evthread_use_pthreads), so
	 * the discovery thread can never hold a lock the loop waits for (see pool.c). */
	int snap_pipe[2];
	struct event *ev_snap;
	uint64_t polls_ok, polls_failed; /* __atomic: written by the discovery thread */
	struct event *ev_health;
	struct gw_stats total;
	uint64_t bad_requests; /* refused before any service was chosen */
	/* loop -> discovery: the latest report on the replicas (report.c), swapped atomically */
	struct gw_report *report;
	char gateway_name[128]; /* "host:port": who reports */
};

/* pool.c */
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
void gw_health_tick(evutil_socket_t fd, short what, void *arg);
int64_t gw_now_ms(void);

/* upstream.c */
/* An idle connection to r (a new one when none is idle and fewer than max_conns exist);
 * NULL: none to be had. */
struct gw_conn *gw_conn_get(struct gw_replica *r);
/* f is sent on conn (from its start). */
void gw_conn_attach(struct gw_conn *conn, struct gw_fwd *f);
/* Write what f->out holds beyond what conn has sent. */
void gw_conn_flush(struct gw_conn *conn);
/* Close conn and drop it from its replica (its request, if any, is the caller's). */
void gw_conn_close(struct gw_conn *conn);
/* The client side has room again: read the answer on. */
void gw_conn_resume(struct gw_conn *conn);

/* proxy.c */
/* The head of the client's request is whole: forward it to svc. target: what the replica
 * is sent (NUL-terminated). 0 / -1 (out of memory: the caller answers 503). */
int gw_proxy_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target);
/* More of the request's body is in f->out; done: all of it. */
void gw_proxy_more(struct gw_fwd *f, bool done);
/* The answer's head is in conn->resp (state GH_MSG_BODY): its head to the client. */
void gw_proxy_head(struct gw_fwd *f);
/* The answer is whole (its connection is free again, or closed after). */
void gw_proxy_done(struct gw_fwd *f);
/* The request failed at its replica before an answer. reached: the replica may have seen it
 * (only an idempotent request is sent again); timeout: it did not answer in time. */
void gw_proxy_failed(struct gw_fwd *f, bool reached, bool timeout, const char *why);
/* The client left. */
void gw_proxy_client_gone(struct gw_fwd *f);
/* The client has taken all of the answer so far: read on. */
void gw_proxy_drained(struct gw_fwd *f);

/* front.c */
/* Serve clients on addr:port; service: a --service-port's (NULL: the main address). 0 / -1
 * (logged). */
int gw_front_listen(struct gw_ctx *c, const char *addr, uint16_t port, const char *service);
/* An answer of ggated's own: "ggated: WHY" as text. */
void gw_answer_error(gh_conn_t *cl, int status, const char *why);

/* metrics.c */
void gw_stats_observe(struct gw_stats *s, double sec);
/* The metrics as Prometheus text (NULL: out of memory); the caller frees it. */
char *gw_metrics_text(struct gw_ctx *c, size_t *len);

/* report.c */
struct gw_report;
/* The loop's side: a report of every replica known, left for the next poll. */
void gw_report_publish(struct gw_ctx *c);
/* The discovery thread's side: the latest report (NULL: none new) put into q; free it with
 * gw_report_free after the call. */
struct gw_report *gw_report_take(struct gw_ctx *c, Gpool__ServiceQuery *q);
void gw_report_free(struct gw_report *rep);

/* discovery.c */
int gw_discovery_start(struct gw_ctx *c, const char *config, gp_error_t *err);
/* The loop's side of the hand-off: applies every snapshot waiting in the pipe (the newest
 * wins). */
void gw_discovery_read(evutil_socket_t fd, short what, void *arg);

#endif

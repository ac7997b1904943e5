/* gateway.h: ggated's context (struct gw_ctx), shared by its files, each of which has a
 * header of its own for what it offers. One event loop (libevent) serves every service. Each socket
 * of the data path is ggated's own: its read interest is registered once for the socket's
 * life, write interest only while a write has to wait, and each message costs one read(2)
 * and one write(2) a side (docs/commands/ggated.md); HTTP is parsed by http-parser
 * (http/msg.c), client connections are http/server.c's, replica connections http/client_conn.c's.
 *   front.c      what a client's request means: a service's (proxy.c), /metrics, /-/health
 *   upstream.c   each replica's pool of keep-alive connections (http/client_conn.c) and what their
 *                events mean to the proxy and the pool
 *   upgrade.c    a WebSocket handshake: checked, sent on, its 101 relayed (no socket)
 *   tunnel.c     one WebSocket: the handshake to a replica on a connection of its own, then
 *                bytes both ways with back-pressure and an idle timeout
 *   auth.c       a route that requires its owner's token (X-Gpool-Token, Authorization:
 *                Bearer, a cookie, or a one-time ?gpool_token= that sets the cookie): 401
 *                without, 403 when wrong
 *   sse.c        an answer that is an event stream: keep-alive comments while the replica is
 *                silent, an error event when it breaks
 *   proxy.c      one client request: sent to a replica as it arrives (body streamed, kept
 *                for a retry), the answer streamed back; retried on another replica when it
 *                never reached one or is idempotent and no answer came, else 502/503/504
 *   pool.c       services and their replicas: the set learnt from gschedd, choice of a
 *                replica (power of two choices on outstanding requests), active health
 *                checks (http/client_conn.c), passive ejection, graceful removal
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
#include <stdbool.h>
#include <stdint.h>

#include "gateway/forwarded.h"
#include "gateway/metrics.h"
#include "http/server.h"

struct gw_service;
struct gw_report;

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
	int ws_idle_ms;		     /* a WebSocket with no bytes either way (tunnel.c) */
	int stream_timeout_ms;	     /* an event stream's silence limit at the replica (sse.c) */
	int keepalive_ms;	     /* an event stream's comment after this silence (0: none) */
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
	/* WebSockets (tunnel.c): open now, handshakes carried, switched (101), idle-closed */
	uint64_t ws_open, ws_total, ws_upgraded, ws_idle_closed;
	uint64_t auth_refused; /* requests refused for a route's token (auth.c) */
	/* answers: event streams, keep-alive comments sent, error events sent, any body cut */
	uint64_t sse_streams, sse_keepalives, sse_errors, streams_cut;
	/* loop -> discovery: the latest report on the replicas (report.c), swapped atomically */
	struct gw_report *report;
	char gateway_name[128]; /* "host:port": who reports */
};

/* An answer of ggated's own: "ggated: WHY" as text (front.c's refusals, proxy.c's 502, 503
 * and 504). */
static inline void gw_answer_error(gh_conn_t *cl, int status, const char *why)
{
	gh_conn_answer_text(cl, status, "ggated: %s", why);
}

#endif

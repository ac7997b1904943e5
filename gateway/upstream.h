/* upstream.h: a replica's pool of keep-alive connections (http/client_conn.h), each carrying one
 * proxied request at a time, and what their events mean to proxy.c and pool.c (upstream.c). */
#ifndef GPOOL_GATEWAY_UPSTREAM_H
#define GPOOL_GATEWAY_UPSTREAM_H

#include "http/client_conn.h"

struct gw_replica;
struct gw_fwd;

/* A connection to a replica. */
struct gw_conn {
	struct gw_replica *r;
	gh_client_t *cl;
	struct gw_fwd *fwd; /* the request in flight on it, NULL: idle */
};

/* An idle connection to r (a new one when none is idle and fewer than max_conns exist);
 * NULL: none to be had. */
struct gw_conn *gw_conn_get(struct gw_replica *r);
/* f is sent on conn (from its start); f may be gone when this returns (a write that failed
 * at once: gw_proxy_failed). */
void gw_conn_attach(struct gw_conn *conn, struct gw_fwd *f);
/* Write what f->out holds beyond what conn has sent (f->req_done: all of it is there). */
void gw_conn_flush(struct gw_conn *conn);
/* Close conn and drop it from its replica (its request, if any, is the caller's). */
void gw_conn_close(struct gw_conn *conn);
/* The client side has room again: read the answer on. */
void gw_conn_resume(struct gw_conn *conn);

#endif

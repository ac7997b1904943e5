/* upstream.h: a replica's pool of keep-alive connections (http/client_conn.h), each carrying one
 * proxied request at a time, and what their events mean to the request (its ops, request.h) and
 * to the pool (upstream.c). A connection is closed with gw_conn_close (pool.h). */
#ifndef GPOOL_GATEWAY_UPSTREAM_H
#define GPOOL_GATEWAY_UPSTREAM_H

#include "gateway/pool.h"
#include "http/client_conn.h"

struct gw_replica;
struct gw_fwd;

/* An idle connection to r (a new one when none is idle and fewer than max_conns exist);
 * NULL: none to be had. */
struct gw_conn *gw_conn_get(struct gw_replica *r);
/* f is sent on conn (from its start); f may be gone when this returns (a write that failed
 * at once: f->ops->failed). */
void gw_conn_attach(struct gw_conn *conn, struct gw_fwd *f);
/* Write what f->out holds beyond what conn has sent (f->req_done: all of it is there). */
void gw_conn_flush(struct gw_conn *conn);
/* The client side has room again: read the answer on. */
void gw_conn_resume(struct gw_conn *conn);

#endif

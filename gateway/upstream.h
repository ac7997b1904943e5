/* upstream.h: keep-alive connections to a replica: connect, send, read the answer
 * (upstream.c). */
#ifndef GPOOL_GATEWAY_UPSTREAM_H
#define GPOOL_GATEWAY_UPSTREAM_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/buf.h"
#include "http/msg.h"

struct gw_replica;
struct gw_fwd;

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

#endif

/* request.h: one client request on its way through ggated, as the files that carry it share
 * it: proxy.c makes and answers it, upstream.c sends it on a replica's connection, pool.c
 * fails it when its replica becomes unreachable. What its connection's events mean is proxy.c's
 * (the ops it sets), so the connections and the pool below it call no function of proxy.c. */
#ifndef GPOOL_GATEWAY_REQUEST_H
#define GPOOL_GATEWAY_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "http/buf.h"
#include "http/msg.h"
#include "http/server.h"

struct event;

#define GW_MAX_TRIES 3

struct gw_ctx;
struct gw_service;
struct gw_replica;
struct gw_conn;
struct gw_fwd;

/* What the events of a request's replica connection mean to it. */
struct gw_fwd_ops {
	/* The answer's head is whole (gh_client_answer of f->conn->cl): its head to the
	 * client, its body after it. */
	void (*head)(struct gw_fwd *f);
	/* The replica sent more of the answer m (gone on to the client): an event stream's
	 * silence starts again, and where it is kept. Also called before its connection goes. */
	void (*flushed)(struct gw_fwd *f, const struct gh_msg *m);
	/* The answer is whole (its connection is free again, or closed after). */
	void (*done)(struct gw_fwd *f);
	/* The request failed at its replica before an answer. reached: the replica may have
	 * seen it (only an idempotent request is sent again); timeout: it did not answer in
	 * time. */
	void (*failed)(struct gw_fwd *f, bool reached, bool timeout, const char *why);
};

/* One request on its way through (proxy.c). */
struct gw_fwd {
	const struct gw_fwd_ops *ops;
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
	bool sse;		/* the answer is an event stream (sse.c) */
	enum gh_frame frame;	/* how the answer's body is framed to the client */
	struct event *ev_keep;	/* an event stream's keep-alive timer (NULL: none) */
	char tail[4];		/* an event stream's last bytes so far (gh_msg.body_tail) */
	uint8_t ntail;		/* how many of them there are (at most 4) */
	struct gw_replica *rep; /* where it is now */
	struct gw_conn *conn;
	struct gw_replica *tried[GW_MAX_TRIES + 1];
	int ntried;
	struct timespec start;
};

#endif

/* proxy.h: one client request: sent to a replica as it arrives (body streamed, kept for a
 * retry), the answer streamed back; retried on another replica when it never reached one or is
 * idempotent and no answer came, else 502/503/504 (proxy.c). */
#ifndef GPOOL_GATEWAY_PROXY_H
#define GPOOL_GATEWAY_PROXY_H

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

/* The head of the client's request is whole: forward it to svc. target: what the replica
 * is sent (NUL-terminated). 0 / -1 (out of memory: the caller answers 503). */
int gw_proxy_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target);
/* More of the request's body is in f->out; done: all of it. */
void gw_proxy_more(struct gw_fwd *f, bool done);
/* The answer's head is whole (gh_client_answer of f->conn->cl): its head to the client, its
 * body after it. */
void gw_proxy_head(struct gw_fwd *f);
/* The answer is whole (its connection is free again, or closed after). */
void gw_proxy_done(struct gw_fwd *f);
/* The request failed at its replica before an answer. reached: the replica may have seen it
 * (only an idempotent request is sent again); timeout: it did not answer in time. */
void gw_proxy_failed(struct gw_fwd *f, bool reached, bool timeout, const char *why);
/* The client left. */
void gw_proxy_client_gone(struct gw_fwd *f);
/* The replica sent more of the answer m (gone on to the client): an event stream's silence
 * starts again, and where it is kept. Also called before its connection goes. */
void gw_proxy_flushed(struct gw_fwd *f, const struct gh_msg *m);
/* The client has taken all of the answer so far: read on. */
void gw_proxy_drained(struct gw_fwd *f);

#endif

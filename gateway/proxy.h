/* proxy.h: one client request: sent to a replica as it arrives (body streamed, kept for a
 * retry), the answer streamed back; retried on another replica when it never reached one or is
 * idempotent and no answer came, else 502/503/504 (proxy.c). */
#ifndef GPOOL_GATEWAY_PROXY_H
#define GPOOL_GATEWAY_PROXY_H

#include <stdbool.h>

#include "gateway/request.h"
#include "http/server.h"

/* The head of the client's request is whole: forward it to svc. target: what the replica
 * is sent (NUL-terminated). 0 / -1 (out of memory: the caller answers 503). */
int gw_proxy_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target);
/* More of the request's body is in f->out; done: all of it. */
void gw_proxy_more(struct gw_fwd *f, bool done);
/* The client left. */
void gw_proxy_client_gone(struct gw_fwd *f);
/* The client has taken all of the answer so far: read on. */
void gw_proxy_drained(struct gw_fwd *f);

#endif

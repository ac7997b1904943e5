/* tunnel.h: one WebSocket connection through ggated (tunnel.c): the client's handshake
 * (upgrade.h) sent to a replica on a connection of its own (never one of the pool's keep-alive
 * ones: it is never given back), the replica's 101 relayed, then bytes both ways until either
 * side closes or nothing moves for the idle timeout. A replica that cannot be reached is
 * passed over for another as a request's would be; one that answers other than 101 has its
 * answer relayed and the connection closes after it. */
#ifndef GPOOL_GATEWAY_TUNNEL_H
#define GPOOL_GATEWAY_TUNNEL_H

#include "http/server.h"

struct gw_ctx;
struct gw_service;

/* The head of cl's request is a well-formed handshake (gw_ws_check: GW_WS_OK) for svc:
 * carry it. target: what the replica is sent (NUL-terminated). Takes cl over (raw mode) on
 * success. 0 / -1 (out of memory: the caller answers 503). */
int gw_tunnel_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target);

#endif

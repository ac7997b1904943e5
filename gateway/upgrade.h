/* upgrade.h: a WebSocket opening handshake (RFC 6455 4) as ggated passes it on: whether a
 * client's request is one, the request its replica is sent, and the replica's answer as its
 * client gets it (upgrade.c). No socket here: tunnel.c uses it, the fuzzer too. */
#ifndef GPOOL_GATEWAY_UPGRADE_H
#define GPOOL_GATEWAY_UPGRADE_H

#include <stdbool.h>

#include "http/buf.h"
#include "http/msg.h"

enum gw_ws_kind {
	GW_WS_NONE = 0, /* no WebSocket upgrade asked: an HTTP request (any other Upgrade is
			 * ignored, as RFC 9110 7.8 lets a server do) */
	GW_WS_OK,	/* a well-formed handshake: carried to a replica */
	GW_WS_BAD	/* asked for, malformed: *status and *why say what to answer */
};

/* What a request whose head is whole (m) asks. GW_WS_BAD: 400, or 426 for a version other
 * than 13 (the answer then carries "Sec-WebSocket-Version: 13"). */
enum gw_ws_kind gw_ws_check(const struct gh_msg *m, int *status, const char **why);
/* The end of the request a replica is sent for a GW_WS_OK one, after its request line and
 * its end-to-end headers (forwarded.h): Connection and Upgrade again (hop-by-hop: msg.c
 * dropped them) and the blank line. 0 / -1 (out of memory). */
int gw_ws_request_end(struct gh_buf *out);
/* The replica's answer (a head, resp) as the client gets it: 101 passed on with its
 * end-to-end headers (Sec-WebSocket-Accept, -Protocol, -Extensions) and Connection/Upgrade
 * again; true then. Any other status: false, nothing written (the caller relays it as an
 * HTTP answer and closes). */
bool gw_ws_switched(const struct gh_msg *resp);
int gw_ws_answer_101(const struct gh_msg *resp, struct gh_buf *out);

#endif

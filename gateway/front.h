/* front.h: what a client's request means: a service's (proxy.h), /metrics, /-/health;
 * the listeners (front.c). */
#ifndef GPOOL_GATEWAY_FRONT_H
#define GPOOL_GATEWAY_FRONT_H

#include <stdint.h>

#include "http/server.h"

/* A port given to one service: requests to it go to that service, whole path kept. */
struct gw_portmap {
	char name[257];
	uint16_t port;
};

struct gw_ctx;

/* Serve clients on addr:port; service: a --service-port's (NULL: the main address). 0 / -1
 * (logged). */
int gw_front_listen(struct gw_ctx *c, const char *addr, uint16_t port, const char *service);

#endif

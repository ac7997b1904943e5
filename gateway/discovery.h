/* discovery.h: a thread that polls gschedd (ServiceQuery, MUNGE-authenticated) and hands each
 * answer to the loop (names resolved there: no DNS on the loop); a failed poll keeps the set
 * the loop knows (discovery.c). */
#ifndef GPOOL_GATEWAY_DISCOVERY_H
#define GPOOL_GATEWAY_DISCOVERY_H

#include <event2/event.h>

#include "common/error.h"

struct gw_ctx;

int gw_discovery_start(struct gw_ctx *c, const char *config, gp_error_t *err);
/* The loop's side of the hand-off: applies every snapshot waiting in the pipe (the newest
 * wins). */
void gw_discovery_read(evutil_socket_t fd, short what, void *arg);

#endif

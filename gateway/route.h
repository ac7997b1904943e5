/* route.h: what a request target on ggated's main address means: /metrics, /-/health, or
 * /svc/<name or id>/<rest> — a service and the target its replica is sent (/<rest>, the query
 * kept). */
#ifndef GPOOL_GATEWAY_ROUTE_H
#define GPOOL_GATEWAY_ROUTE_H

#include <stddef.h>

enum gw_route_kind { GW_ROUTE_BAD = 0, GW_ROUTE_SERVICE, GW_ROUTE_METRICS, GW_ROUTE_HEALTH };

struct gw_route {
	enum gw_route_kind kind;
	const char *name; /* a service's name or id, inside the target (not terminated) */
	size_t name_len;
	const char *target; /* what the replica is sent: inside the request target, or owned */
	char *owned;	    /* NULL, or the malloc'd copy target is (a query with no path) */
	const char *why;    /* GW_ROUTE_BAD: why */
};

/* Parse a request target. Returns the kind (GW_ROUTE_BAD with why set). r->target points into
 * uri (no allocation: the usual /svc/NAME/... case) or, for /svc/NAME?QUERY, at "/?QUERY" in
 * r->owned; free that with gw_route_release (or take it over). A service name is 1..256 bytes
 * of [A-Za-z0-9._-]. */
enum gw_route_kind gw_route_parse(const char *uri, struct gw_route *r);
void gw_route_release(struct gw_route *r);

#endif

/* route.c: request targets on ggated's main address (see route.h). */
#include "gateway/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static enum gw_route_kind bad(struct gw_route *r, const char *why)
{
	r->kind = GW_ROUTE_BAD;
	r->why = why;
	return GW_ROUTE_BAD;
}

enum gw_route_kind gw_route_parse(const char *uri, struct gw_route *r)
{
	memset(r, 0, sizeof(*r));
	if (!uri || uri[0] != '/')
		return bad(r, "bad request target");
	if (strcmp(uri, "/metrics") == 0)
		return r->kind = GW_ROUTE_METRICS;
	if (strcmp(uri, "/-/health") == 0)
		return r->kind = GW_ROUTE_HEALTH;
	if (strncmp(uri, "/svc/", 5) != 0)
		return bad(r, "no such path (services are under /svc/NAME/)");
	const char *name = uri + 5;
	size_t len = strcspn(name, "/?");
	if (!len)
		return bad(r, "no service named");
	if (len > 256)
		return bad(r, "service name too long");
	for (size_t i = 0; i < len; i++)
		if (!name_char(name[i]))
			return bad(r, "invalid service name");
	const char *rest = name + len;
	/* /svc/web and /svc/web?q: the replica sees / and /?q */
	if (*rest == '/') {
		r->target = rest;
	} else if (!*rest) {
		r->target = "/";
	} else {
		size_t n = strlen(rest) + 2;
		if (!(r->owned = malloc(n)))
			return bad(r, "out of memory");
		snprintf(r->owned, n, "/%s", rest);
		r->target = r->owned;
	}
	r->name = name;
	r->name_len = len;
	return r->kind = GW_ROUTE_SERVICE;
}

void gw_route_release(struct gw_route *r)
{
	free(r->owned);
	r->owned = NULL;
	r->target = NULL;
}

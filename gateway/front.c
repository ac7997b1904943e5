/* front.c: ggated's side toward clients (http/server.h does the connections): what a request
 * head on one of its addresses means. /svc/NAME/... and a --service-port's requests go to a
 * replica (proxy.c), a WebSocket handshake through a tunnel of its own (tunnel.c), both after
 * the route's token when it requires one (auth.c); /metrics and /-/health are answered here,
 * and so is anything else (404). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "gateway/metrics.h"
#include "gateway/proxy.h"
#include "gateway/pool.h"
#include "gateway/front.h"
#include "gateway/route.h"
#include "gateway/auth.h"
#include "gateway/tunnel.h"
#include "gateway/upgrade.h"
#include "common/log.h"

struct front {
	struct gw_ctx *c;
	char name[257]; /* a --service-port's service, "" for the main address */
};

static void refuse(struct gw_ctx *c, gh_conn_t *cl, int status, const char *why)
{
	c->bad_requests++;
	gw_answer_error(cl, status, why);
}

/* The route's token, when it requires one. true: let through; false: answered (401, 403, or
 * the redirect that sets the cookie). uri: the target as the client sent it. */
static bool admitted(struct front *fr, gh_conn_t *cl, struct gw_service *s, const char *uri,
		     const struct gw_route *rt)
{
	struct gw_ctx *c = fr->c;
	char *loc = NULL;
	switch (gw_auth_check(s->route_hash, gh_conn_request(cl), uri, &loc)) {
	case GW_AUTH_OK:
		return true;
	case GW_AUTH_MISSING:
		c->auth_refused++;
		gh_conn_answer_hdrs(cl, 401, "text/plain; charset=utf-8",
				    "WWW-Authenticate: Bearer realm=\"gpool\"\r\n",
				    "ggated: this route needs its owner's token\n", 43);
		return false;
	case GW_AUTH_WRONG:
		c->auth_refused++;
		gw_answer_error(cl, 403, "not this route's token");
		return false;
	case GW_AUTH_SET_COOKIE:
		break;
	}
	/* the token was right (so it is the owner's hex digits: nothing to escape) */
	char tok[129], hdrs[2048];
	gw_auth_query_token(uri, tok, sizeof(tok));
	int n = fr->name[0]
		    ? snprintf(hdrs, sizeof(hdrs),
			       "Location: %s\r\nSet-Cookie: gpool_token=%s; Path=/; "
			       "HttpOnly; SameSite=Strict\r\n",
			       loc, tok)
		    : snprintf(hdrs, sizeof(hdrs),
			       "Location: %s\r\nSet-Cookie: gpool_token=%s; Path=/svc/%.*s/; "
			       "HttpOnly; SameSite=Strict\r\n",
			       loc, tok, (int)rt->name_len, rt->name);
	free(loc);
	if (n < 0 || (size_t)n >= sizeof(hdrs)) {
		gw_answer_error(cl, 414, "request target too long");
		return false;
	}
	gh_conn_answer_hdrs(cl, 302, "text/plain; charset=utf-8", hdrs, "", 0);
	return false;
}

static void on_head(gh_conn_t *cl, void *arg)
{
	struct front *fr = arg;
	struct gw_ctx *c = fr->c;
	struct gh_msg *m = gh_conn_request(cl);
	if (!gh_msg_allowed(m)) {
		refuse(c, cl, 405, "method not allowed");
		return;
	}
	if (gh_buf_add(&m->target, "", 1) < 0) {
		gw_answer_error(cl, 503, "out of memory");
		return;
	}
	m->target.len--; /* NUL-terminated, not counted */
	const char *target = gh_buf_data(&m->target);
	if (target[0] != '/') {
		refuse(c, cl, 404, "bad request target");
		return;
	}
	struct gw_service *s = NULL;
	struct gw_route rt = {0};
	if (fr->name[0]) {
		if (!(s = gw_service_find(c, fr->name, strlen(fr->name)))) {
			gw_answer_error(cl, 503, "service not known (yet)");
			return;
		}
	} else {
		switch (gw_route_parse(target, &rt)) {
		case GW_ROUTE_METRICS: {
			size_t n;
			char *t = gw_metrics_text(c, &n);
			if (t)
				gh_conn_answer(cl, 200, "text/plain; version=0.0.4; charset=utf-8",
					       t, n);
			else
				gw_answer_error(cl, 503, "out of memory");
			free(t);
			return;
		}
		case GW_ROUTE_HEALTH:
			gh_conn_answer(cl, 200, NULL, "", 0);
			return;
		case GW_ROUTE_SERVICE:
			if ((s = gw_service_find(c, rt.name, rt.name_len)))
				break;
			gw_route_release(&rt);
			refuse(c, cl, 404, "no such service");
			return;
		default:
			refuse(c, cl, 404, rt.why);
			return;
		}
		/* a service told its base URL sees /svc/NAME/... whole */
		target = s->keep_prefix ? gh_buf_data(&m->target) : rt.target;
	}
	if (!admitted(fr, cl, s, gh_buf_data(&m->target), &rt)) {
		gw_route_release(&rt);
		return;
	}
	int status = 0;
	const char *why = NULL;
	switch (gw_ws_check(m, &status, &why)) {
	case GW_WS_BAD:
		c->bad_requests++;
		if (status == 426)
			gh_conn_answer_hdrs(cl, 426, "text/plain; charset=utf-8",
					    "Sec-WebSocket-Version: 13\r\n", "", 0);
		else
			gw_answer_error(cl, status, why);
		break;
	case GW_WS_OK:
		if (gw_tunnel_start(c, cl, s, target) < 0)
			gw_answer_error(cl, 503, "out of memory");
		break;
	case GW_WS_NONE:
		if (gw_proxy_start(c, cl, s, target) < 0)
			gw_answer_error(cl, 503, "out of memory");
		break;
	}
	gw_route_release(&rt);
}

static void on_body(void *task, bool done)
{
	gw_proxy_more(task, done);
}

static void on_gone(void *task)
{
	gw_proxy_client_gone(task);
}

static void on_drained(void *task)
{
	gw_proxy_drained(task);
}

int gw_front_listen(struct gw_ctx *c, const char *addr, uint16_t port, const char *service)
{
	if (!c->http) {
		static const struct gh_handler h = {
		    .head = on_head, .body = on_body, .gone = on_gone, .drained = on_drained};
		struct gh_limits lim = {.max_head = c->max_headers,
					.max_body = c->max_body,
					.client_timeout_ms = c->client_timeout_ms,
					.max_conns = c->max_clients,
					.max_conns_per_addr = c->max_clients_per_addr};
		if (!(c->http = gh_server_create(c->base, &h, &lim)))
			return -1;
		if (c->tls)
			gh_server_set_tls(c->http, c->tls);
	}
	struct front *fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -1;
	fr->c = c;
	snprintf(fr->name, sizeof(fr->name), "%s", service ? service : "");
	if (gh_server_listen(c->http, addr, port, fr) < 0) {
		free(fr);
		return -1;
	}
	gp_info("listening on %s:%u%s%s%s", addr, port, c->tls ? " (https)" : "",
		service ? " for service " : "", service ? service : "");
	return 0;
}

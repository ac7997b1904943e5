/* standby_http.c: a standby's answers on http_listen (see standby_http.h). */
#include "scheduler/http/standby_http.h"

#include <sched.h> /* before libevent's headers: they leave its cpu_set_t out */
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "http/server.h"
#include "scheduler/http/http.h"

/* what a standby reads of a request: its head only (a body is dropped), within this long */
#define MAX_HEAD	  16384
#define CLIENT_TIMEOUT_MS 10000
#define MAX_CONNS	  256

struct standby_http {
	struct event_base *base;
	gh_server_t *srv;
	gh_tls_t *tls;
	char scheme[8];	    /* http or https */
	char port[8];	    /* http_listen's */
	char url[300];	    /* the leader's HTTP address, "" while none is known */
	char endpoint[256]; /* the leader's client endpoint it was made from */
	uint64_t answered;
};

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

static bool visible(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static void on_head(gh_conn_t *c, void *arg)
{
	struct standby_http *h = arg;
	struct gh_msg *m = gh_conn_request(c);
	const char *t = gh_buf_data(&m->target);
	size_t tn = gh_buf_size(&m->target);
	bool get = !strcmp(gh_msg_method(m), "GET") || !strcmp(gh_msg_method(m), "HEAD");
	bool api = starts(t, tn, "/api/") || starts(t, tn, "/metrics");
	h->answered++;
	char hdrs[700] = "Retry-After: 1\r\nCache-Control: no-store\r\n";
	if (*h->url)
		snprintf(hdrs + strlen(hdrs), sizeof(hdrs) - strlen(hdrs), "Gpool-Leader: %s\r\n",
			 h->url);
	/* a browser asking for the dashboard is sent on; the target goes into a header line:
	 * only a path of visible ASCII (as a browser sends it, escaped) */
	if (get && !api && *h->url && tn < 256 && tn && t[0] == '/' && visible(t, tn)) {
		snprintf(hdrs + strlen(hdrs), sizeof(hdrs) - strlen(hdrs), "Location: %s%.*s\r\n",
			 h->url, (int)tn, t);
		const char body[] = "this scheduler is a standby: see the leader\n";
		gh_conn_answer_hdrs(c, 307, "text/plain; charset=utf-8", hdrs, body,
				    sizeof(body) - 1);
		return;
	}
	char text[400];
	snprintf(text, sizeof(text), "this scheduler is a standby: %s%s",
		 *h->url ? "the leader is " : "no leader is known now (no quorum or an election)",
		 h->url);
	json_t *j = json_pack("{s:{s:s, s:s}, s:s}", "error", "code", "ERROR_NOT_LEADER", "message",
			      text, "leader", h->url);
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!body) {
		gh_conn_answer_text(c, 503, "%s", text);
		return;
	}
	gh_conn_answer_hdrs(c, 503, "application/json", hdrs, body, strlen(body));
	free(body);
}

/* A server for scheme (http/https) answering with port as the leader's HTTP port, not yet
 * listening. NULL when out of memory or libevent fails. */
static struct standby_http *make(const char *scheme, const char *port)
{
	struct standby_http *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	snprintf(h->scheme, sizeof(h->scheme), "%s", scheme);
	snprintf(h->port, sizeof(h->port), "%s", port);
	static const struct gh_handler handler = {.head = on_head};
	struct gh_limits lim = {.max_head = MAX_HEAD,
				.max_body = 0,
				.client_timeout_ms = CLIENT_TIMEOUT_MS,
				.max_conns = MAX_CONNS,
				.max_conns_per_addr = MAX_CONNS / 8};
	if (!(h->base = event_base_new()) || !(h->srv = gh_server_create(h->base, &handler, &lim)))
		standby_http_destroy(&h);
	return h;
}

struct standby_http *standby_http_create_on(const char *port)
{
	return make("http", port);
}

int standby_http_adopt(struct standby_http *h, int fd)
{
	return gh_server_adopt(h->srv, fd, h);
}

uint64_t standby_http_answered(const struct standby_http *h)
{
	return h->answered;
}

struct standby_http *standby_http_create(const gp_config_t *cfg, gp_error_t *err)
{
	const char *listen = gp_config_str(cfg, "http_listen");
	err->text[0] = '\0';
	if (!listen || !*listen)
		return NULL;
	char host[256], port[8];
	uint16_t pn;
	if (http_split_listen(listen, host, sizeof(host), &pn) < 0) {
		gp_errprintf(err, "invalid http_listen '%s' (address:port)", listen);
		return NULL;
	}
	snprintf(port, sizeof(port), "%u", (unsigned)pn);
	const char *cert = gp_config_str(cfg, "http_tls_cert");
	const char *key = gp_config_str(cfg, "http_tls_key");
	struct standby_http *h = make(*cert && *key ? "https" : "http", port);
	if (!h) {
		gp_errprintf(err, "http: cannot start libevent");
		return NULL;
	}
	if (*cert && *key) {
		if (!(h->tls = gh_tls_create(cert, key, err)))
			goto fail;
		gh_server_set_tls(h->srv, h->tls);
	}
	if (gh_server_listen(h->srv, host, pn, h) < 0) {
		gp_errprintf(err, "http: cannot listen on '%s'", listen);
		goto fail;
	}
	return h;
fail:
	standby_http_destroy(&h);
	return NULL;
}

void standby_http_set_leader(struct standby_http *h, const char *leader)
{
	if (!h || !strcmp(leader, h->endpoint))
		return;
	snprintf(h->endpoint, sizeof(h->endpoint), "%s", leader);
	h->url[0] = '\0';
	/* tcp://HOST:PORT -> SCHEME://HOST:HTTP_PORT */
	if (strncmp(leader, "tcp://", 6) != 0)
		return;
	const char *host = leader + 6, *colon = strrchr(host, ':');
	if (!colon || colon == host)
		return;
	snprintf(h->url, sizeof(h->url), "%s://%.*s:%s", h->scheme, (int)(colon - host), host,
		 h->port);
}

void standby_http_poll(struct standby_http *h)
{
	if (h)
		event_base_loop(h->base, EVLOOP_NONBLOCK);
}

void standby_http_destroy(struct standby_http **p)
{
	struct standby_http *h = p ? *p : NULL;
	if (!h)
		return;
	if (h->answered)
		gp_info("standby: %llu HTTP requests answered with the leader's address",
			(unsigned long long)h->answered);
	gh_server_destroy(&h->srv);
	if (h->base) {
		event_base_loop(h->base, EVLOOP_NONBLOCK); /* the connections' deferred frees */
		event_base_free(h->base);
	}
	gh_tls_destroy(&h->tls);
	free(h);
	*p = NULL;
}

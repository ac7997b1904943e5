/* tls.h: HTTPS for gschedd's HTTP server (the REST API, /metrics, the dashboard).
 *
 * With http_tls_cert and http_tls_key in gpool.conf (deploy/gpool-ca makes a pool's CA and
 * certificates), every connection to http_listen is TLS (1.2 at least): an OpenSSL context
 * holds the certificate chain and key, and evhttp makes each connection's bufferevent through
 * http_tls_bev. Without them the server speaks plain HTTP, as before. docs/api.md.
 */
#ifndef GPOOL_SCHED_HTTP_TLS_H
#define GPOOL_SCHED_HTTP_TLS_H

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/error.h"

typedef struct ssl_ctx_st http_tls_ctx_t;

/* A server context from a PEM certificate chain and its key: NULL with err filled (a file
 * that cannot be read, a key that does not match the certificate). */
http_tls_ctx_t *http_tls_create(const char *cert, const char *key, gp_error_t *err);
void http_tls_destroy(http_tls_ctx_t **ctx);

/* evhttp_set_bevcb's callback: a TLS bufferevent accepting on the connection (arg: the
 * context). NULL when out of memory: evhttp then makes a plain one, on which a TLS client's
 * hello is a malformed request (400, closed); nothing is served in the clear. */
struct bufferevent *http_tls_bev(struct event_base *base, void *arg);

#endif

/* http.h: gschedd's HTTP server (REST API, /metrics, the dashboard's files), off unless
 * http_listen is set.
 *
 * http/'s server (http/server.h) runs in its own thread, on an event loop of its own. It
 * authenticates each API request (a MUNGE credential in `Authorization: MUNGE <cred>` whose payload
 * binds the method, the target and the body's SHA-256, munged refusing a replay; or `Authorization:
 * Bearer <token>` of a token issued to such a request), turns it into the same Gpool__Msg the CLI
 * sends, and hands it to the event loop over an inproc ZeroMQ pair: the loop handles it like a
 * command's message (same handlers, same authorization), so the scheduler's state keeps one owner.
 * Replies come back on the pair (net.c routes the HTTP peers' routing ids there) and leave as JSON.
 *
 * The thread runs at nice HTTP_NICE: what it does per request (a listing's JSON for thousands
 * of jobs) yields to the loop, the agents and the jobs on a busy PC instead of slowing
 * scheduling; an idle PC serves it at full speed.
 */
#ifndef GPOOL_SCHED_HTTP_H
#define GPOOL_SCHED_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "common/wire.h"

struct http;

/* The routing ids of HTTP requests start with these bytes (ZeroMQ's own start with 0 too,
 * but are 5 bytes long; ours are HTTP_RID_LEN). */
#define HTTP_RID_PREFIX	    "\0rest"
#define HTTP_RID_PREFIX_LEN 5
#define HTTP_RID_LEN	    13
#define HTTP_NICE	    10
bool http_is_rid(const uint8_t *rid, size_t len);

struct http_opts {
	/* "127.0.0.1:7821", "[::1]:7821", ":7821"; NULL: no listener and no thread (tests and
	 * fuzzing run http_base's loop themselves and hand it sockets with http_adopt) */
	const char *listen;
	const char *web_dir;
	int64_t token_ttl_ms;
	size_t max_body;
	const char *tls_cert, *tls_key; /* both set: HTTPS only (http/tls.h); else plain HTTP */
	size_t max_conns;		/* http_max_conns (0: no cap) */
	size_t max_conns_per_addr;	/* http_max_conns_per_addr (0: no cap) */
};

/* Bind (errors come back here) and start the server thread. zctx: the loop's ZeroMQ context. */
struct http *http_create(const struct http_opts *o, void *zctx, gp_error_t *err);
/* http_listen's "host:port", "[v6]:port", ":port": HOST (0.0.0.0 when empty) and PORT
 * (1-65535). 0 / -1. */
int http_split_listen(const char *s, char *host, size_t hlen, uint16_t *port);
/* Stop the thread, close everything. */
void http_destroy(struct http **h);

/* Without a listener (listen NULL): the loop to run, and a connected socket to serve as if
 * accepted (0 / -1, fd closed). */
struct event_base *http_base(struct http *h);
int http_adopt(struct http *h, int fd);

/* The loop's end of the pair: poll it, receive requests, send replies on it. */
void *http_socket(struct http *h);

struct http_msg {
	uint8_t rid[HTTP_RID_LEN];
	struct gp_sender from;
	Gpool__Batch *batch;
};
/* One request without blocking. 1: *m filled (free its batch), 0: none. */
int http_recv(struct http *h, struct http_msg *m);

/* The token lifetime (SIGHUP). Taken by the thread at its next request. */
void http_set_token_ttl(struct http *h, int64_t ms);

#endif

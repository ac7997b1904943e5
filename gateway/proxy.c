/* proxy.c: forwarding one request to a replica (see gateway.h). The request body is kept
 * until the answer comes, so that a request that never reached a replica (connect refused or
 * timed out), or an idempotent one that failed without an answer, is sent to another one. */
#include <sys/queue.h> /* TAILQ_*: evhttp's header lists (event2/keyvalq_struct.h) */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/gateway.h"
#include "common/log.h"

struct gw_fwd {
	struct gw_ctx *c;
	uint64_t svc_id;
	struct evhttp_request *req; /* the client's */
	const char *uri;	    /* inside req's target, or owned */
	char *owned;
	enum evhttp_cmd_type method;
	bool idempotent;
	struct evbuffer *body;	/* NULL: none */
	struct gw_replica *rep; /* where it is now */
	struct gw_conn *conn;
	struct gw_replica *tried[GW_MAX_TRIES + 1];
	int ntried;
	bool have_err;
	enum evhttp_request_error err;
	struct timespec start;
};

/* hop-by-hop headers (RFC 9110 7.6.1) are the proxy's own, never forwarded */
static const char *const hop[] = {"Connection",
				  "Keep-Alive",
				  "Proxy-Connection",
				  "Proxy-Authenticate",
				  "Proxy-Authorization",
				  "TE",
				  "Trailer",
				  "Transfer-Encoding",
				  "Upgrade",
				  "Content-Length"};

static bool is_hop(const char *name)
{
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strcasecmp(name, hop[i]) == 0)
			return true;
	return false;
}

/* The client's headers, copied: kept for a retry on another replica. */
static void copy_headers(struct evkeyvalq *to, struct evkeyvalq *from)
{
	for (struct evkeyval *h = from->tqh_first; h; h = h->next.tqe_next)
		if (!is_hop(h->key))
			evhttp_add_header(to, h->key, h->value);
}

/* The replica's headers, moved to the answer (evhttp parsed and checked them; both lists own
 * their entries and free them alike): no allocation or copy per header. The hop-by-hop ones
 * stay where they are, for evhttp to read and free with the replica's answer. */
static void move_headers(struct evkeyvalq *to, struct evkeyvalq *from)
{
	struct evkeyval *h, *nx;
	for (h = TAILQ_FIRST(from); h; h = nx) {
		nx = TAILQ_NEXT(h, next);
		if (is_hop(h->key))
			continue;
		TAILQ_REMOVE(from, h, next);
		TAILQ_INSERT_TAIL(to, h, next);
	}
}

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static struct gw_service *svc_of(struct gw_fwd *f)
{
	for (struct gw_service *s = f->c->svcs; s; s = s->next)
		if (s->id == f->svc_id)
			return s;
	return NULL;
}

static void fwd_free(struct gw_fwd *f)
{
	if (f->body)
		evbuffer_free(f->body);
	free(f->owned);
	free(f);
}

static void finish_error(struct gw_fwd *f, int code, const char *why)
{
	struct gw_service *s = svc_of(f);
	double dt = since(&f->start);
	f->c->total.errors++;
	gw_stats_observe(&f->c->total, dt);
	if (s) {
		s->st.errors++;
		gw_stats_observe(&s->st, dt);
	}
	struct evbuffer *b = evbuffer_new();
	if (b)
		evbuffer_add_printf(b, "ggated: %s\n", why);
	evhttp_add_header(evhttp_request_get_output_headers(f->req), "Content-Type",
			  "text/plain; charset=utf-8");
	struct evhttp_connection *client = evhttp_request_get_connection(f->req);
	evhttp_send_reply(f->req, code, NULL, b);
	gw_write_now(client);
	if (b)
		evbuffer_free(b);
	fwd_free(f);
}

static void up_done(struct evhttp_request *up, void *arg);

static void up_error(enum evhttp_request_error e, void *arg)
{
	struct gw_fwd *f = arg;
	f->have_err = true;
	f->err = e;
}

static void try_next(struct gw_fwd *f)
{
	struct gw_service *s = svc_of(f);
	while (s && f->ntried < f->c->tries) {
		struct gw_replica *r = gw_pick(s, f->tried, f->ntried);
		if (!r)
			break;
		f->tried[f->ntried++] = r;
		struct gw_conn *conn = gw_conn_get(r);
		if (!conn)
			continue; /* all its connections busy: another replica */
		struct evhttp_request *up = evhttp_request_new(up_done, f);
		if (!up)
			break;
		evhttp_request_set_error_cb(up, up_error);
		struct evkeyvalq *oh = evhttp_request_get_output_headers(up);
		copy_headers(oh, evhttp_request_get_input_headers(f->req));
		char *peer;
		ev_uint16_t pport;
		evhttp_connection_get_peer(evhttp_request_get_connection(f->req), &peer, &pport);
		if (peer)
			evhttp_add_header(oh, "X-Forwarded-For", peer);
		if (f->body) {
			/* shared, not copied: the body stays whole in f->body for a retry */
			struct evbuffer *ob = evhttp_request_get_output_buffer(up);
			if (evbuffer_add_buffer_reference(ob, f->body) < 0)
				evbuffer_add(ob, evbuffer_pullup(f->body, -1),
					     evbuffer_get_length(f->body));
		}
		f->have_err = false;
		if (evhttp_make_request(conn->evcon, up, f->method, f->uri) < 0) {
			gw_replica_failed(r, "cannot send a request");
			continue;
		}
		conn->fwd = f;
		f->conn = conn;
		f->rep = r;
		r->outstanding++;
		if (conn->up)
			gw_write_now(conn->evcon);
		return;
	}
	finish_error(f, 503, s ? "no healthy replica" : "service gone");
}

/* A failure without an answer: another replica when it is safe, else an error. */
static void retry_or_fail(struct gw_fwd *f, bool reached, int code, const char *why)
{
	if ((!reached || f->idempotent) && f->ntried < f->c->tries) {
		struct gw_service *s = svc_of(f);
		f->c->total.retries++;
		if (s)
			s->st.retries++;
		try_next(f);
		return;
	}
	finish_error(f, code, why);
}

static void up_done(struct evhttp_request *up, void *arg)
{
	struct gw_fwd *f = arg;
	struct gw_replica *r = f->rep;
	struct gw_conn *gc = f->conn;
	f->conn->fwd = NULL;
	f->conn = NULL;
	f->rep = NULL;
	r->outstanding--;
	int code = up ? evhttp_request_get_response_code(up) : 0;
	if (code == 0) {
		/* a request with no error reported never got a connection: it never reached
		 * the replica */
		bool reached = f->have_err;
		bool timeout = f->have_err && f->err == EVREQ_HTTP_TIMEOUT;
		r->st.errors++;
		gw_replica_failed(r, !reached  ? "connect failed"
				     : timeout ? "timed out"
					       : "no answer");
		gw_replica_maybe_free(r);
		retry_or_fail(f, reached, timeout ? 504 : 502,
			      timeout ? "the replica did not answer in time"
				      : "the replica failed");
		return;
	}
	gw_replica_ok(r);
	if (!gc->up) {
		/* evhttp leaves Nagle on: a small request would wait for the previous answer's
		 * ACK. Once per socket (conn_closed in pool.c clears up). */
		struct bufferevent *bev = evhttp_connection_get_bufferevent(gc->evcon);
		evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
		int one = 1;
		if (fd >= 0 && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0)
			gc->up = true;
	}
	double dt = since(&f->start);
	gw_stats_observe(&r->st, dt);
	r->st.requests++;
	struct gw_service *s = svc_of(f);
	if (s)
		gw_stats_observe(&s->st, dt);
	gw_stats_observe(&f->c->total, dt);
	move_headers(evhttp_request_get_output_headers(f->req),
		     evhttp_request_get_input_headers(up));
	struct evhttp_connection *client = evhttp_request_get_connection(f->req);
	evhttp_send_reply(f->req, code, evhttp_request_get_response_code_line(up),
			  evhttp_request_get_input_buffer(up));
	gw_write_now(client);
	fwd_free(f);
	gw_replica_maybe_free(r);
}

void gw_fwd_abandon(struct gw_fwd *f)
{
	struct gw_replica *r = f->rep;
	f->rep = NULL;
	f->conn = NULL;
	if (r) {
		r->outstanding--;
		r->st.errors++;
	}
	retry_or_fail(f, true, 502, "the replica became unreachable");
}

void gw_proxy(struct gw_ctx *c, struct gw_service *svc, struct evhttp_request *req, const char *uri,
	      char *owned)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct gw_fwd *f = calloc(1, sizeof(*f));
	if (!f || (evbuffer_get_length(in) && !(f->body = evbuffer_new()))) {
		free(f);
		free(owned);
		evhttp_send_error(req, 503, "out of memory");
		return;
	}
	f->uri = uri;
	f->owned = owned;
	clock_gettime(CLOCK_MONOTONIC, &f->start);
	f->c = c;
	f->svc_id = svc->id;
	f->req = req;
	f->method = evhttp_request_get_command(req);
	f->idempotent = f->method == EVHTTP_REQ_GET || f->method == EVHTTP_REQ_HEAD ||
			f->method == EVHTTP_REQ_PUT || f->method == EVHTTP_REQ_DELETE ||
			f->method == EVHTTP_REQ_OPTIONS || f->method == EVHTTP_REQ_TRACE;
	if (f->body)
		evbuffer_add_buffer(f->body, in);
	c->total.requests++;
	svc->st.requests++;
	try_next(f);
}

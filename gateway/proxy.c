/* proxy.c: one request on its way through ggated (see gateway.h). The request goes to a
 * replica as it arrives; all of it is kept until the answer starts, so that a request that
 * never reached a replica (connect refused or timed out), or an idempotent one that failed
 * before any answer, is sent whole to another one. The answer is streamed to the client as
 * it comes, its body framed again for the client's connection. An event stream (sse.c) is
 * kept open while the replica is silent (a comment every keepalive_ms, and stream_timeout_ms
 * instead of timeout_ms before the replica counts as gone), and ends with an error event when
 * it breaks; any other body cut short ends the client's connection without its last chunk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/gateway.h"
#include "gateway/metrics.h"
#include "gateway/upstream.h"
#include "gateway/proxy.h"
#include "gateway/pool.h"
#include "gateway/sse.h"
#include "common/log.h"

#include <event2/event.h>

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void fwd_free(struct gw_fwd *f)
{
	if (f->ev_keep)
		event_free(f->ev_keep);
	gh_buf_free(&f->out);
	free(f);
}

static void finish_error(struct gw_fwd *f, int code, const char *why)
{
	struct gw_service *s = gw_service_by_id(f->c, f->svc_id);
	double dt = since(&f->start);
	f->c->total.errors++;
	gw_stats_observe(&f->c->total, dt);
	if (s) {
		s->st.errors++;
		gw_stats_observe(&s->st, dt);
	}
	gh_conn_t *cl = f->client;
	fwd_free(f);
	if (cl) {
		gw_answer_error(cl, code, why);
		gh_conn_next(cl, true);
	}
}

static void fwd_head(struct gw_fwd *f);
static void fwd_flushed(struct gw_fwd *f, const struct gh_msg *m);
static void fwd_done(struct gw_fwd *f);
static void fwd_failed(struct gw_fwd *f, bool reached, bool timeout, const char *why);

/* what the events of the request's replica connection mean (request.h) */
static const struct gw_fwd_ops fwd_ops = {
    .head = fwd_head,
    .flushed = fwd_flushed,
    .done = fwd_done,
    .failed = fwd_failed,
};

static void try_next(struct gw_fwd *f)
{
	struct gw_service *s = gw_service_by_id(f->c, f->svc_id);
	while (s && f->ntried < f->c->tries) {
		struct gw_replica *r = gw_pick(s, f->tried, f->ntried);
		if (!r)
			break;
		f->tried[f->ntried++] = r;
		struct gw_conn *conn = gw_conn_get(r);
		if (!conn) {
			if (r->nconns < f->c->max_conns)
				gw_replica_failed(r, "cannot connect");
			continue; /* else all its connections are busy: another replica */
		}
		f->rep = r;
		f->conn = conn;
		r->outstanding++;
		gw_conn_attach(conn, f); /* f may be gone when it returns */
		return;
	}
	finish_error(f, 503, s ? "no healthy replica" : "service gone");
}

int gw_proxy_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target)
{
	struct gh_msg *m = gh_conn_request(cl);
	struct gw_fwd *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->ops = &fwd_ops;
	f->c = c;
	f->client = cl;
	f->svc_id = svc->id;
	clock_gettime(CLOCK_MONOTONIC, &f->start);
	f->idempotent = gh_msg_idempotent(m);
	f->head = m->p.method == HTTP_HEAD;
	f->client_keep = gh_msg_keep_alive(m);
	f->client_minor = gh_conn_minor(cl);
	m->out_frame = m->in == GH_FRAME_CHUNKED  ? GH_FRAME_CHUNKED
		       : m->in == GH_FRAME_LENGTH ? GH_FRAME_LENGTH
						  : GH_FRAME_NONE;
	size_t hint = gh_buf_size(&m->hdrs) + strlen(target) + 128 +
		      (m->in == GH_FRAME_LENGTH && m->length < (1u << 20) ? m->length : 0);
	if (gh_buf_reserve(&f->out, hint) < 0 ||
	    gh_buf_printf(&f->out, "%s %s HTTP/1.1\r\n", gh_msg_method(m), target) < 0 ||
	    gw_forwarded_headers(gh_buf_data(&m->hdrs), gh_buf_size(&m->hdrs), gh_conn_peer(cl),
				 gw_trust_has(&c->trust, gh_conn_peer(cl)), &f->out) < 0 ||
	    gh_msg_frame_header(m, &f->out) < 0 || gh_buf_add(&f->out, "\r\n", 2) < 0) {
		fwd_free(f);
		return -1;
	}
	m->out = &f->out;
	/* the client waits for a go before it sends its body: ggated gives it, as it takes
	 * the body whatever the replica */
	if (m->expect_continue && m->in != GH_FRAME_NONE)
		gh_buf_add(gh_conn_out(cl), "HTTP/1.1 100 Continue\r\n\r\n", 25);
	gh_conn_take(cl, f);
	f->c->total.requests++;
	svc->st.requests++;
	try_next(f);
	return 0;
}

void gw_proxy_more(struct gw_fwd *f, bool done)
{
	if (done)
		f->req_done = true;
	if (f->conn)
		gw_conn_flush(f->conn);
}

void gw_proxy_drained(struct gw_fwd *f)
{
	if (f->conn && f->answered)
		gw_conn_resume(f->conn);
}

static void keep_arm(struct gw_fwd *f)
{
	struct timeval tv = {f->c->keepalive_ms / 1000, (f->c->keepalive_ms % 1000) * 1000};
	if (f->ev_keep)
		event_add(f->ev_keep, &tv);
}

/* The replica has been silent keepalive_ms: a comment to the client, between two events and
 * when all before it is written (else the client's connection is not idle anyway). */
static void on_keep(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_fwd *f = arg;
	if (f->client && !gh_buf_size(gh_conn_out(f->client)) &&
	    gw_sse_at_boundary(f->tail, f->ntail) &&
	    gw_sse_keepalive(gh_conn_out(f->client), f->frame) == 0) {
		f->c->sse_keepalives++;
		gh_conn_flush(f->client);
	}
	keep_arm(f);
}

/* The answer is an event stream going to the client framed as f->frame: its silence limit and
 * keep-alives (none where bytes cannot be added: a body of a given length). */
static void sse_start(struct gw_fwd *f)
{
	f->sse = true;
	f->c->sse_streams++;
	gh_client_answer_timeout(f->conn->cl, f->c->stream_timeout_ms);
	if (f->c->keepalive_ms <= 0 || (f->frame != GH_FRAME_CHUNKED && f->frame != GH_FRAME_EOF))
		return;
	f->ev_keep = event_new(f->c->base, -1, 0, on_keep, f);
	keep_arm(f);
}

static void fwd_flushed(struct gw_fwd *f, const struct gh_msg *m)
{
	if (!f->sse)
		return;
	f->ntail = m->body_bytes < sizeof(f->tail) ? (uint8_t)m->body_bytes : sizeof(f->tail);
	memcpy(f->tail, m->body_tail + sizeof(f->tail) - f->ntail, f->ntail);
	if (f->ev_keep)
		keep_arm(f);
}

static void fwd_head(struct gw_fwd *f)
{
	gh_client_t *up = f->conn->cl;
	const struct gh_msg *m = gh_client_answer(up);
	gh_conn_t *cl = f->client;
	f->answered = true;
	if (!cl) {
		gh_client_body_to(up, NULL, GH_FRAME_NONE);
		return;
	}
	int code = m->p.status_code;
	bool bodiless = f->head || code == 204 || code == 304 || (code >= 100 && code < 200);
	bool keep = f->client_keep;
	enum gh_frame frame;
	if (bodiless)
		frame = f->head && m->has_length ? GH_FRAME_LENGTH : GH_FRAME_NONE;
	else if (m->in == GH_FRAME_LENGTH)
		frame = GH_FRAME_LENGTH;
	else if (f->client_minor >= 1)
		frame = GH_FRAME_CHUNKED; /* a chunked or to-the-close body, chunked */
	else {
		frame = GH_FRAME_EOF; /* an HTTP/1.0 client: to the close */
		keep = false;
	}
	f->client_keep = keep;
	f->frame = frame;
	if (!bodiless && gw_sse_is(m))
		sse_start(f);
	gh_conn_started(cl);
	struct gh_buf *o = gh_conn_out(cl);
	gh_client_body_to(up, o, frame); /* the body follows the head written here */
	const char *reason = gh_buf_size(&m->target) ? gh_buf_data(&m->target) : gh_reason(code);
	int rlen = gh_buf_size(&m->target) ? (int)gh_buf_size(&m->target) : (int)strlen(reason);
	if (gh_buf_printf(o, "HTTP/1.1 %d %.*s\r\n", code, rlen, reason) < 0 ||
	    gh_buf_add(o, gh_buf_data(&m->hdrs), gh_buf_size(&m->hdrs)) < 0 ||
	    gh_msg_frame_header(m, o) < 0 ||
	    gh_buf_add(o,
		       !keep		      ? "Connection: close\r\n\r\n"
		       : f->client_minor == 0 ? "Connection: keep-alive\r\n\r\n"
					      : "\r\n",
		       !keep		      ? 21
		       : f->client_minor == 0 ? 26
					      : 2) < 0) {
		f->client = NULL;
		gh_conn_abort(cl);
		gh_client_body_to(up, NULL, GH_FRAME_NONE);
		return;
	}
}

static void fwd_done(struct gw_fwd *f)
{
	struct gw_replica *r = f->rep;
	r->outstanding--;
	gw_replica_ok(r);
	double dt = since(&f->start);
	gw_stats_observe(&r->st, dt);
	r->st.requests++;
	struct gw_service *s = gw_service_by_id(f->c, f->svc_id);
	if (s)
		gw_stats_observe(&s->st, dt);
	gw_stats_observe(&f->c->total, dt);
	gh_conn_t *cl = f->client;
	bool client_keep = f->client_keep && f->req_done;
	fwd_free(f);
	if (cl)
		gh_conn_next(cl, client_keep);
	gw_replica_maybe_free(r);
}

/* The answer was cut short after its head went to the client: what came is written, an
 * event stream's error event after it, and the connection closes without the body's end (no
 * last chunk, fewer bytes than its length), so the client cannot take it for whole. */
static void cut_short(struct gw_fwd *f, struct gw_replica *r, const char *why)
{
	gh_conn_t *cl = f->client;
	if (!cl) {
		fwd_free(f);
		return;
	}
	if (f->sse) {
		char who[160];
		snprintf(who, sizeof(who), "replica %s (%s)", r ? r->label : "?", why ? why : "?");
		if (gw_sse_error(gh_conn_out(cl), f->frame, f->tail, f->ntail, who) == 0)
			f->c->sse_errors++;
	}
	f->c->streams_cut++;
	fwd_free(f);
	gh_conn_next(cl, false); /* written, then closed; its task (f) is forgotten there */
}

static void fwd_failed(struct gw_fwd *f, bool reached, bool timeout, const char *why)
{
	struct gw_replica *r = f->rep;
	f->rep = NULL;
	f->conn = NULL;
	if (r) {
		r->outstanding--;
		r->st.errors++;
		gw_replica_failed(r, why);
		gw_replica_maybe_free(r);
	}
	if (f->answered || !f->client) {
		cut_short(f, r, why);
		return;
	}
	if ((!reached || f->idempotent) && f->ntried < f->c->tries) {
		struct gw_service *s = gw_service_by_id(f->c, f->svc_id);
		f->c->total.retries++;
		if (s)
			s->st.retries++;
		try_next(f);
		return;
	}
	finish_error(f, timeout ? 504 : 502,
		     timeout ? "the replica did not answer in time" : "the replica failed");
}

void gw_proxy_client_gone(struct gw_fwd *f)
{
	f->client = NULL;
	if (f->answered) {
		if (f->conn)
			gh_client_body_to(f->conn->cl, NULL, GH_FRAME_NONE);
		return; /* the answer is read to its end and dropped */
	}
	if (f->req_done)
		return;
	/* the request will never be whole: its replica connection goes with it */
	struct gw_replica *r = f->rep;
	if (f->conn) {
		f->conn->fwd = NULL;
		gw_conn_close(f->conn);
	}
	if (r) {
		r->outstanding--;
		gw_replica_maybe_free(r);
	}
	fwd_free(f);
}

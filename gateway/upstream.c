/* upstream.c: keep-alive connections to a replica (see gateway.h). A connection's read
 * interest is registered once, when it is made, and stays for its life (an idle one that
 * the replica closes is noticed at once, not when the next request finds it closed); write
 * interest is added only while connecting or while a write has to wait. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/upstream.h"
#include "gateway/proxy.h"
#include "gateway/pool.h"
#include "common/log.h"

#define READ_SIZE	16384
#define ANSWER_HEAD_MAX (64u << 10)
#define CLIENT_BACKLOG	(4u << 20) /* an answer's bytes a slow client may have waiting */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);

static void arm(struct gw_conn *conn, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(conn->ev_timer, &tv);
}

static void want_write(struct gw_conn *conn, bool on)
{
	if (on == conn->writing)
		return;
	conn->writing = on;
	if (on)
		event_add(conn->ev_write, NULL);
	else
		event_del(conn->ev_write);
}

static void conn_free(struct gw_conn *conn)
{
	if (conn->ev_read)
		event_free(conn->ev_read);
	if (conn->ev_write)
		event_free(conn->ev_write);
	if (conn->ev_timer)
		event_free(conn->ev_timer);
	if (conn->fd >= 0)
		close(conn->fd);
	gh_buf_free(&conn->in);
	gh_msg_free(&conn->resp);
	free(conn);
}

void gw_conn_close(struct gw_conn *conn)
{
	struct gw_replica *r = conn->r;
	for (uint32_t i = 0; i < r->nconns; i++)
		if (r->conns[i] == conn) {
			r->conns[i] = r->conns[--r->nconns];
			break;
		}
	conn_free(conn);
}

static struct gw_conn *conn_new(struct gw_replica *r)
{
	struct gw_ctx *c = r->svc->ctx;
	struct gw_conn *conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->r = r;
	conn->fd = -1;
	gh_msg_init(&conn->resp, HTTP_RESPONSE, ANSWER_HEAD_MAX, 0);
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, r->addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(r->port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, r->addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(r->port);
		sl = sizeof(*s6);
	} else {
		errno = EINVAL;
		goto fail;
	}
	conn->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (conn->fd < 0)
		goto fail;
	int one = 1;
	setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(conn->fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS)
		goto fail;
	conn->connecting = true;
	conn->ev_read = event_new(c->base, conn->fd, EV_READ | EV_PERSIST, on_read, conn);
	conn->ev_write = event_new(c->base, conn->fd, EV_WRITE | EV_PERSIST, on_write, conn);
	conn->ev_timer = event_new(c->base, -1, 0, on_timer, conn);
	if (!conn->ev_read || !conn->ev_write || !conn->ev_timer ||
	    event_add(conn->ev_read, NULL) < 0)
		goto fail;
	want_write(conn, true);
	arm(conn, c->connect_timeout_ms);
	return conn;
fail:
	gp_debug("replica %s: cannot connect: %s", r->label, strerror(errno));
	conn_free(conn);
	return NULL;
}

struct gw_conn *gw_conn_get(struct gw_replica *r)
{
	struct gw_ctx *c = r->svc->ctx;
	for (uint32_t i = 0; i < r->nconns; i++)
		if (!r->conns[i]->fwd)
			return r->conns[i];
	if (r->nconns >= c->max_conns)
		return NULL;
	if (r->nconns == r->capconns) {
		uint32_t nc = r->capconns ? r->capconns * 2 : 8;
		struct gw_conn **n = realloc(r->conns, nc * sizeof(*n));
		if (!n)
			return NULL;
		r->conns = n;
		r->capconns = nc;
	}
	struct gw_conn *conn = conn_new(r);
	if (conn)
		r->conns[r->nconns++] = conn;
	return conn;
}

void gw_conn_attach(struct gw_conn *conn, struct gw_fwd *f)
{
	conn->fwd = f;
	conn->sent = 0;
	conn->interim = false;
	gh_msg_next(&conn->resp);
	conn->resp.skip_body = f->head;
	if (!conn->connecting)
		arm(conn, conn->r->svc->ctx->timeout_ms);
	gw_conn_flush(conn);
}

/* The request in flight failed; conn is closed. */
static void fail(struct gw_conn *conn, bool reached, bool timeout, const char *why)
{
	struct gw_fwd *f = conn->fwd;
	struct gw_replica *r = conn->r;
	gw_conn_close(conn);
	if (f)
		gw_proxy_failed(f, reached, timeout, why);
	else
		gw_replica_maybe_free(r);
}

void gw_conn_flush(struct gw_conn *conn)
{
	struct gw_fwd *f = conn->fwd;
	if (conn->connecting || !f)
		return;
	size_t n = gh_buf_size(&f->out) - conn->sent;
	if (!n) {
		want_write(conn, false);
		return;
	}
	ssize_t w = write(conn->fd, gh_buf_data(&f->out) + conn->sent, n);
	if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
		want_write(conn, true);
		return;
	}
	if (w < 0) {
		/* nothing of it written: the replica never saw it (a keep-alive connection it
		 * had closed) */
		fail(conn, conn->sent > 0, false, "cannot send");
		return;
	}
	conn->sent += (size_t)w;
	want_write(conn, conn->sent < gh_buf_size(&f->out));
}

static void connected(struct gw_conn *conn)
{
	int err = 0;
	socklen_t el = sizeof(err);
	if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err) {
		errno = err;
		fail(conn, false, false, "connect failed");
		return;
	}
	conn->connecting = false;
	want_write(conn, false);
	if (conn->fwd)
		arm(conn, conn->r->svc->ctx->timeout_ms);
	else
		event_del(conn->ev_timer);
	gw_conn_flush(conn);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_conn *conn = arg;
	if (conn->connecting)
		connected(conn);
	else
		gw_conn_flush(conn);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_conn *conn = arg;
	if (conn->connecting)
		fail(conn, false, false, "connect timed out");
	else if (conn->fwd)
		fail(conn, true, true, "timed out");
}

void gw_conn_resume(struct gw_conn *conn)
{
	if (conn->paused) {
		conn->paused = false;
		event_add(conn->ev_read, NULL);
		event_active(conn->ev_read, EV_READ, 1); /* what was read and held is parsed */
	}
}

/* Parse what conn->in holds: the answer's head to the client, its body after it. */
static void parse(struct gw_conn *conn, bool eof)
{
	struct gh_msg *m = &conn->resp;
	while (conn->fwd) {
		struct gw_fwd *f = conn->fwd;
		size_t have = gh_buf_size(&conn->in);
		if (!have && !eof)
			return;
		enum gh_msg_state before = m->state;
		size_t used = gh_msg_feed(m, gh_buf_data(&conn->in), have);
		gh_buf_consume(&conn->in, used);
		if (m->state == GH_MSG_ERROR) {
			gp_debug("replica %s: bad answer: %s", conn->r->label, m->why);
			fail(conn, true, false, "bad answer");
			return;
		}
		if (m->state == GH_MSG_BODY && before != GH_MSG_BODY) { /* the head is whole */
			if (m->p.status_code >= 100 && m->p.status_code < 200 &&
			    m->p.status_code != 101) {
				conn->interim = true; /* an interim answer (103): not relayed */
				m->out = NULL;
				continue;
			}
			gw_proxy_head(f);
			continue;
		}
		if (m->state == GH_MSG_DONE && conn->interim) {
			conn->interim = false;
			gh_msg_next(m);
			m->skip_body = f->head;
			continue;
		}
		if (m->state == GH_MSG_DONE) {
			/* a connection whose request was answered before it was all sent is
			 * not used again */
			bool keep =
			    gh_msg_keep_alive(m) && !gh_buf_size(&conn->in) && !eof && f->req_done;
			event_del(conn->ev_timer);
			conn->fwd = NULL;
			if (!keep)
				gw_conn_close(conn);
			gw_proxy_done(f); /* may free the replica, and conn with it */
			return;
		}
		if (eof) {
			fail(conn, true, false, f->answered ? "answer cut short" : "no answer");
			return;
		}
		if (!used)
			return;
		if (f->client && gh_buf_size(gh_conn_out(f->client)) > CLIENT_BACKLOG) {
			gh_conn_flush(f->client);
			if (f->client && gh_buf_size(gh_conn_out(f->client)) > CLIENT_BACKLOG) {
				conn->paused = true;
				event_del(conn->ev_read);
				return;
			}
		}
	}
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct gw_conn *conn = arg;
	if (conn->connecting) {
		connected(conn);
		return;
	}
	if (!conn->fwd) {
		/* idle: the replica closed it (or sent what nobody asked for) */
		struct gw_replica *r = conn->r;
		gw_conn_close(conn);
		gw_replica_maybe_free(r);
		return;
	}
	ssize_t n = gh_buf_read(&conn->in, fd, READ_SIZE);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		fail(conn, conn->sent > 0, false, "connection reset");
		return;
	}
	if (n < 0 && !gh_buf_size(&conn->in))
		return;
	/* else: the bytes held while the client's side was full (gw_conn_resume) */
	if (n > 0)
		arm(conn, conn->r->svc->ctx->timeout_ms);
	gh_conn_t *cl = conn->fwd->client;
	parse(conn, n == 0);
	if (cl)
		gh_conn_flush(cl); /* nothing if it was closed meanwhile (freed on the next pass) */
}

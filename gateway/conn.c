/* conn.c: a client's connection to ggated (see gateway.h). Requests are read and parsed as
 * they come and answered in order: a pipelining client's next request is parsed once the
 * one before is answered. The head must arrive within --client-timeout of the connection's
 * start or of the last answer, a body must keep coming (each read restarts that time), and a
 * connection idle that long is closed. A connection closed by ggated with bytes of the
 * client's still unread is shut for writing first and drained a while (a close with unread
 * bytes would reset it, and the client could lose the answer). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/route.h"
#include "common/log.h"

#define READ_SIZE 16384
#define LINGER_MS 2000
#define PIPELINE_MAX (64u << 10) /* bytes read ahead of the request being answered */

struct gw_listener {
	struct gw_ctx *c;
	struct evconnlistener *lev;
	struct event *ev_retry;
	char name[257]; /* a --service-port's service, "" for the main address */
};

static const struct {
	int status;
	const char *reason;
} reasons[] = {
    {100, "Continue"},
    {200, "OK"},
    {400, "Bad Request"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {413, "Content Too Large"},
    {431, "Request Header Fields Too Large"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *gw_reason(int status)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].reason;
	return "Unknown";
}

static void arm(struct gw_client *cl, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(cl->ev_timer, &tv);
}

static void want_write(struct gw_client *cl, bool on)
{
	if (on == cl->writing)
		return;
	cl->writing = on;
	if (on)
		event_add(cl->ev_write, NULL);
	else
		event_del(cl->ev_write);
}

static void client_free(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_client *cl = arg;
	gw_buf_free(&cl->in);
	gw_buf_free(&cl->out);
	gw_msg_free(&cl->req);
	free(cl);
}

void gw_client_abort(struct gw_client *cl)
{
	if (cl->closed)
		return;
	cl->closed = true;
	struct gw_fwd *f = cl->fwd;
	cl->fwd = NULL;
	cl->req.out = NULL;
	if (f)
		gw_proxy_client_gone(f);
	event_free(cl->ev_read);
	event_free(cl->ev_write);
	event_free(cl->ev_timer);
	close(cl->fd);
	cl->fd = -1;
	/* freed on the next pass: callers up the stack may still look at cl->closed */
	struct timeval zero = {0, 0};
	if (event_base_once(cl->c->base, -1, EV_TIMEOUT, client_free, cl, &zero) < 0)
		gp_warn("cannot free a client connection: leaked");
}

/* Everything is written and the connection ends: drained a while if the client may still be
 * sending, else closed. */
static void finish(struct gw_client *cl)
{
	if (cl->req.state == GW_MSG_BODY || cl->req.state == GW_MSG_HEAD ||
	    gw_buf_size(&cl->in)) {
		if (shutdown(cl->fd, SHUT_WR) == 0) {
			cl->lingering = true;
			gw_buf_clear(&cl->in);
			arm(cl, LINGER_MS);
			return;
		}
	}
	gw_client_abort(cl);
}

void gw_client_flush(struct gw_client *cl)
{
	if (cl->closed || cl->lingering)
		return;
	if (gw_buf_size(&cl->out)) {
		ssize_t w = gw_buf_write(&cl->out, cl->fd);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			gw_client_abort(cl);
			return;
		}
	}
	if (gw_buf_size(&cl->out)) {
		want_write(cl, true);
		return;
	}
	want_write(cl, false);
	if (cl->close_after) {
		finish(cl);
		return;
	}
	if (cl->fwd && cl->fwd->conn && cl->fwd->answered)
		gw_conn_resume(cl->fwd->conn);
}

void gw_client_answer(struct gw_client *cl, int status, const char *why, const char *ctype,
		      const char *body, size_t len)
{
	struct gw_msg *m = &cl->req;
	char text[256];
	if (why) {
		len = (size_t)snprintf(text, sizeof(text), "ggated: %s\n", why);
		if (len >= sizeof(text))
			len = sizeof(text) - 1;
		body = text;
		ctype = "text/plain; charset=utf-8";
	}
	/* a body still on its way: the connection ends after the answer */
	bool body_pending = m->state == GW_MSG_ERROR || m->state == GW_MSG_HEAD ||
			    (m->state == GW_MSG_BODY && m->in != GW_FRAME_NONE);
	bool keep = !cl->close_after && !body_pending && gw_msg_keep_alive(m);
	int minor = m->p.http_major >= 1 ? m->p.http_minor : 0;
	if (!keep)
		cl->close_after = true;
	int rc = gw_buf_printf(&cl->out,
			       "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
			       status, gw_reason(status), ctype ? ctype : "text/plain", len,
			       !keep ? "Connection: close\r\n"
			       : minor == 0 ? "Connection: keep-alive\r\n"
					    : "");
	if (rc == 0 && m->p.method != HTTP_HEAD)
		rc = gw_buf_add(&cl->out, body, len);
	if (rc < 0)
		gw_client_abort(cl);
}

static void process(struct gw_client *cl);

void gw_client_next(struct gw_client *cl, bool keep)
{
	cl->fwd = NULL;
	cl->req.out = NULL;
	if (cl->closed)
		return;
	if (!keep)
		cl->close_after = true;
	gw_client_flush(cl);
	if (cl->closed || cl->lingering || cl->in_process)
		return;
	if (!cl->close_after)
		arm(cl, cl->c->client_timeout_ms);
	if (cl->read_paused) {
		cl->read_paused = false;
		event_add(cl->ev_read, NULL);
	}
	if (gw_buf_size(&cl->in)) {
		process(cl);
		gw_client_flush(cl);
	}
}

/* The head of a request is whole: answered here (/metrics, /-/health, errors) or
 * forwarded. */
static void dispatch(struct gw_client *cl)
{
	struct gw_ctx *c = cl->c;
	struct gw_msg *m = &cl->req;
	if (!gw_msg_allowed(m)) {
		c->bad_requests++;
		gw_client_answer(cl, 405, "method not allowed", NULL, NULL, 0);
		return;
	}
	if (gw_buf_add(&m->target, "", 1) < 0) {
		gw_client_answer(cl, 503, "out of memory", NULL, NULL, 0);
		return;
	}
	m->target.len--; /* NUL-terminated, not counted */
	const char *target = gw_buf_data(&m->target);
	if (target[0] != '/') {
		c->bad_requests++;
		gw_client_answer(cl, 404, "bad request target", NULL, NULL, 0);
		return;
	}
	struct gw_service *s = NULL;
	struct gw_route rt = {0};
	if (cl->service) {
		if (!(s = gw_service_find(c, cl->service, strlen(cl->service)))) {
			gw_client_answer(cl, 503, "service not known (yet)", NULL, NULL, 0);
			return;
		}
	} else {
		switch (gw_route_parse(target, &rt)) {
		case GW_ROUTE_METRICS: {
			size_t n;
			char *t = gw_metrics_text(c, &n);
			if (t)
				gw_client_answer(cl, 200, NULL, "text/plain; version=0.0.4; charset=utf-8",
						 t, n);
			else
				gw_client_answer(cl, 503, "out of memory", NULL, NULL, 0);
			free(t);
			return;
		}
		case GW_ROUTE_HEALTH:
			gw_client_answer(cl, 200, NULL, NULL, "", 0);
			return;
		case GW_ROUTE_SERVICE:
			if ((s = gw_service_find(c, rt.name, rt.name_len)))
				break;
			c->bad_requests++;
			gw_route_release(&rt);
			gw_client_answer(cl, 404, "no such service", NULL, NULL, 0);
			return;
		default:
			c->bad_requests++;
			gw_client_answer(cl, 404, rt.why, NULL, NULL, 0);
			return;
		}
		target = rt.target;
	}
	if (gw_proxy_start(cl, s, target) < 0)
		gw_client_answer(cl, 503, "out of memory", NULL, NULL, 0);
	gw_route_release(&rt);
}

static void process(struct gw_client *cl)
{
	struct gw_msg *m = &cl->req;
	cl->in_process = true;
	while (!cl->closed && !cl->close_after) {
		if (m->state == GW_MSG_DONE) {
			if (cl->fwd)
				break; /* the next request waits for this one's answer */
			gw_msg_next(m);
			cl->dispatched = false;
		}
		size_t have = gw_buf_size(&cl->in);
		if (!have)
			break;
		enum gw_msg_state before = m->state;
		size_t used = gw_msg_feed(m, gw_buf_data(&cl->in), have);
		gw_buf_consume(&cl->in, used);
		if (m->state == GW_MSG_ERROR) {
			cl->c->bad_requests++;
			gw_client_answer(cl, m->status, m->why, NULL, NULL, 0);
			break;
		}
		if (m->state == GW_MSG_BODY && !cl->dispatched) {
			cl->dispatched = true;
			dispatch(cl);
			continue;
		}
		if (m->state == GW_MSG_BODY && used)
			arm(cl, cl->c->client_timeout_ms); /* the body keeps coming */
		if (m->state == GW_MSG_DONE && before != GW_MSG_DONE) {
			if (cl->fwd) {
				cl->fwd->req_done = true;
				event_del(cl->ev_timer); /* the replica's time now */
			} else {
				arm(cl, cl->c->client_timeout_ms); /* answered here: idle again */
			}
		}
		if (cl->fwd && used)
			gw_proxy_more(cl->fwd);
		if (!used)
			break;
	}
	cl->in_process = false;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct gw_client *cl = arg;
	if (cl->closed)
		return;
	if (cl->lingering) {
		char junk[READ_SIZE];
		ssize_t n = read(fd, junk, sizeof(junk));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			gw_client_abort(cl);
		return;
	}
	ssize_t n = gw_buf_read(&cl->in, fd, READ_SIZE);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* the client left (or shut its side: nothing more can come) */
		gw_client_abort(cl);
		return;
	}
	if (n < 0)
		return;
	process(cl);
	if (cl->closed)
		return;
	if (cl->fwd && cl->req.state == GW_MSG_DONE && gw_buf_size(&cl->in) > PIPELINE_MAX) {
		cl->read_paused = true; /* read on once this one is answered */
		event_del(cl->ev_read);
	}
	gw_client_flush(cl);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gw_client_flush(arg);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_client *cl = arg;
	if (cl->closed)
		return;
	if (cl->fwd && cl->fwd->req_done && !cl->lingering)
		return; /* its replica's timeout runs */
	gw_client_abort(cl); /* silent too long, or drained long enough */
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	(void)lev;
	(void)salen;
	struct gw_listener *l = arg;
	struct gw_ctx *c = l->c;
	struct gw_client *cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->c = c;
	cl->service = l->name[0] ? l->name : NULL;
	cl->fd = fd;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, cl->peer,
			  sizeof(cl->peer));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, cl->peer,
			  sizeof(cl->peer));
	gw_msg_init(&cl->req, HTTP_REQUEST, c->max_headers, c->max_body);
	cl->ev_read = event_new(c->base, fd, EV_READ | EV_PERSIST, on_read, cl);
	cl->ev_write = event_new(c->base, fd, EV_WRITE | EV_PERSIST, on_write, cl);
	cl->ev_timer = event_new(c->base, -1, 0, on_timer, cl);
	if (!cl->ev_read || !cl->ev_write || !cl->ev_timer || event_add(cl->ev_read, NULL) < 0) {
		if (cl->ev_read)
			event_free(cl->ev_read);
		if (cl->ev_write)
			event_free(cl->ev_write);
		if (cl->ev_timer)
			event_free(cl->ev_timer);
		gw_msg_free(&cl->req);
		free(cl);
		close(fd);
		return;
	}
	arm(cl, c->client_timeout_ms);
}

static void retry_accept(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_listener *l = arg;
	evconnlistener_enable(l->lev);
}

/* accept failed (out of descriptors): a pause instead of a busy loop */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct gw_listener *l = arg;
	gp_warn("cannot accept a connection: %s", strerror(errno));
	evconnlistener_disable(lev);
	struct timeval tv = {0, 100000};
	event_add(l->ev_retry, &tv);
}

struct gw_listener *gw_listen(struct gw_ctx *c, const char *addr, uint16_t port,
			      const char *service)
{
	struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM},
			*ai = NULL;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	int gai = getaddrinfo(addr, ps, &hints, &ai);
	if (gai != 0) {
		gp_err("cannot listen on %s:%u: %s", addr, port, gai_strerror(gai));
		return NULL;
	}
	struct gw_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		freeaddrinfo(ai);
		return NULL;
	}
	l->c = c;
	snprintf(l->name, sizeof(l->name), "%s", service ? service : "");
	l->lev = evconnlistener_new_bind(c->base, on_accept, l,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
					     LEV_OPT_CLOSE_ON_EXEC,
					 4096, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo(ai);
	l->ev_retry = event_new(c->base, -1, 0, retry_accept, l);
	if (!l->lev || !l->ev_retry) {
		gp_err("cannot listen on %s:%u: %s", addr, port, strerror(errno));
		if (l->lev)
			evconnlistener_free(l->lev);
		free(l);
		return NULL;
	}
	evconnlistener_set_error_cb(l->lev, on_accept_error);
	/* accepted sockets inherit it: an answer leaves as soon as it is written */
	int one = 1;
	setsockopt(evconnlistener_get_fd(l->lev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	gp_info("listening on %s:%u%s%s", addr, port, service ? " for service " : "",
		service ? service : "");
	return l;
}

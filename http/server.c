/* server.c: HTTP/1.1 server connections (see server.h). */
#include "http/server.h"

#include <errno.h>
#include <stdarg.h>
#include <event2/listener.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "http/evq.h"
#include "http/peers.h"

#define READ_SIZE    16384
#define LINGER_MS    2000
#define PIPELINE_MAX (64u << 10) /* bytes read ahead of the request being answered */

struct listener {
	struct listener *next;
	gh_server_t *s;
	struct evconnlistener *lev;
	struct event *ev_retry;
	void *arg;
};

struct gh_server {
	struct event_base *base;
	struct gh_handler h;
	struct gh_limits lim;
	struct listener *listeners;
	gh_conn_t *conns; /* every open connection (destroy closes them) */
	size_t nconns;
	gh_peers_t *peers; /* open connections per source address */
	gh_tls_t *tls;	   /* NULL: plain HTTP */
	uint64_t bad;	   /* requests refused as malformed or over a limit */
	uint64_t refused;  /* connections closed at accept time over a cap */
};

struct gh_conn {
	gh_conn_t *prev, *next;
	gh_server_t *s;
	void *arg; /* the listener's */
	int fd;
	char peer[64];
	struct gh_peer_addr addr; /* counted in s->peers (len 0: not counted) */
	gh_tls_conn_t *tls;	  /* NULL: plain HTTP */
	bool writing, close_after, closed;
	bool lingering;	  /* written all, shut for writing, the client's last bytes drained */
	bool in_process;  /* its requests are being parsed (process) */
	bool read_paused; /* read interest off: a pipelining client is far ahead */
	bool dispatched;  /* the request being read has been given to the handler */
	bool started;	  /* its answer has begun (gh_conn_started) */
	bool shut_after;  /* raw: shut for writing once out is written */
	bool shut_done;	  /* raw: shut for writing */
	bool raw_eof;	  /* raw: the client shut its side */
	const struct gh_raw_ops *raw; /* raw mode (gh_conn_raw): NULL for HTTP */
	struct event *ev_read, *ev_write, *ev_timer;
	struct gh_buf in, out;
	struct gh_msg req;
	void *task; /* the handler's, for the request taken */
};

static const struct {
	int status;
	const char *reason;
} reasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {302, "Found"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {426, "Upgrade Required"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *gh_reason(int status)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].reason;
	return "Unknown";
}

struct gh_msg *gh_conn_request(gh_conn_t *c)
{
	return &c->req;
}

const char *gh_conn_peer(const gh_conn_t *c)
{
	return c->peer;
}

struct gh_buf *gh_conn_out(gh_conn_t *c)
{
	return &c->out;
}

int gh_conn_minor(const gh_conn_t *c)
{
	return c->req.p.http_major >= 1 ? c->req.p.http_minor : 0;
}

void gh_conn_take(gh_conn_t *c, void *task)
{
	c->task = task;
}

void gh_conn_started(gh_conn_t *c)
{
	c->started = true;
}

static void arm(gh_conn_t *c, int ms)
{
	gh_evq_arm(c->ev_timer, ms);
}

static void want_write(gh_conn_t *c, bool on)
{
	gh_evq_want(c->ev_write, &c->writing, on);
}

static void conn_free(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gh_conn_t *c = arg;
	gh_buf_free(&c->in);
	gh_buf_free(&c->out);
	gh_msg_free(&c->req);
	free(c);
}

static void conn_close(gh_conn_t *c, bool notify)
{
	if (c->closed)
		return;
	c->closed = true;
	void *task = c->task;
	c->task = NULL;
	c->req.out = NULL;
	if (task && notify)
		c->raw ? c->raw->gone(task) : c->s->h.gone(task);
	event_free(c->ev_read);
	event_free(c->ev_write);
	event_free(c->ev_timer);
	if (c->tls)
		gh_tls_close(c->tls);
	gh_tls_conn_destroy(&c->tls);
	close(c->fd);
	c->fd = -1;
	c->s->nconns--;
	if (c->addr.len)
		gh_peers_del(c->s->peers, &c->addr);
	if (c->prev)
		c->prev->next = c->next;
	else
		c->s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	/* freed on the next pass: callers up the stack may still look at c->closed */
	struct timeval zero = {0, 0};
	if (event_base_once(c->s->base, -1, EV_TIMEOUT, conn_free, c, &zero) < 0)
		gp_warn("cannot free a client connection: leaked");
}

void gh_conn_abort(gh_conn_t *c)
{
	conn_close(c, false);
}

/* Everything is written and the connection ends: drained a while if the client may still be
 * sending, else closed. */
static void finish(gh_conn_t *c)
{
	if (c->req.state == GH_MSG_BODY || c->req.state == GH_MSG_HEAD || gh_buf_size(&c->in)) {
		if (c->tls)
			gh_tls_close(c->tls);
		if (shutdown(c->fd, SHUT_WR) == 0) {
			c->lingering = true;
			gh_buf_clear(&c->in);
			arm(c, LINGER_MS);
			return;
		}
	}
	conn_close(c, true);
}

static ssize_t conn_read(gh_conn_t *c)
{
	return c->tls ? gh_tls_read(c->tls, &c->in, READ_SIZE)
		      : gh_buf_read(&c->in, c->fd, READ_SIZE);
}

static ssize_t conn_write(gh_conn_t *c)
{
	return c->tls ? gh_tls_write(c->tls, &c->out) : gh_buf_write(&c->out, c->fd);
}

void gh_conn_flush(gh_conn_t *c)
{
	if (c->closed || c->lingering || c->shut_done)
		return;
	if (gh_buf_size(&c->out)) {
		ssize_t w = conn_write(c);
		if (w == 0 && c->tls) {
			conn_close(c, true); /* the session ended */
			return;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			conn_close(c, true);
			return;
		}
	}
	if (gh_buf_size(&c->out)) {
		want_write(c, true);
		return;
	}
	/* a TLS read that must answer its peer first waits for the socket to be writable */
	want_write(c, c->tls && gh_tls_wants_write(c->tls));
	if (c->raw) {
		if (c->shut_after && !c->shut_done) {
			if (c->tls)
				gh_tls_close(c->tls);
			shutdown(c->fd, SHUT_WR);
			c->shut_done = true; /* nothing more is written */
		}
		if (c->task && c->raw->drained)
			c->raw->drained(c->task);
		return;
	}
	if (c->close_after) {
		finish(c);
		return;
	}
	if (c->task && c->s->h.drained)
		c->s->h.drained(c->task);
}

void gh_conn_raw(gh_conn_t *c, const struct gh_raw_ops *ops, void *task)
{
	c->raw = ops;
	c->task = task;
	c->req.out = NULL;
	/* the head's last byte is the parser's still (it stopped there): the request ends there,
	 * and what follows belongs to the new protocol */
	if (c->req.state == GH_MSG_BODY) {
		size_t used = gh_msg_feed(&c->req, gh_buf_data(&c->in), gh_buf_size(&c->in));
		gh_buf_consume(&c->in, used);
	}
	event_del(c->ev_timer); /* the handler's time from now on */
	if (c->read_paused) {
		c->read_paused = false;
		event_add(c->ev_read, NULL);
	}
	if (gh_buf_size(&c->in) || (c->tls && gh_tls_pending(c->tls)))
		event_active(c->ev_read, EV_READ, 0); /* what came after the head */
}

struct gh_buf *gh_conn_in(gh_conn_t *c)
{
	return &c->in;
}

void gh_conn_read_pause(gh_conn_t *c, bool pause)
{
	if (c->closed || c->raw_eof || pause == c->read_paused)
		return;
	c->read_paused = pause;
	if (pause) {
		event_del(c->ev_read);
		return;
	}
	event_add(c->ev_read, NULL);
	if (gh_buf_size(&c->in) || (c->tls && gh_tls_pending(c->tls)))
		event_active(c->ev_read, EV_READ, 0);
}

void gh_conn_shut_write(gh_conn_t *c)
{
	c->shut_after = true;
	gh_conn_flush(c);
}

void gh_conn_answer(gh_conn_t *c, int status, const char *ctype, const char *body, size_t len)
{
	gh_conn_answer_hdrs(c, status, ctype, NULL, body, len);
}

void gh_conn_answer_hdrs(gh_conn_t *c, int status, const char *ctype, const char *hdrs,
			 const char *body, size_t len)
{
	struct gh_msg *m = &c->req;
	/* a body still on its way: the connection ends after the answer */
	bool body_pending = m->state == GH_MSG_ERROR || m->state == GH_MSG_HEAD ||
			    (m->state == GH_MSG_BODY && m->in != GH_FRAME_NONE);
	bool keep = !c->close_after && !body_pending && gh_msg_keep_alive(m);
	if (!keep)
		c->close_after = true;
	int rc = gh_buf_printf(
	    &c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
	    status, gh_reason(status), ctype ? ctype : "text/plain", len, hdrs ? hdrs : "",
	    !keep		    ? "Connection: close\r\n"
	    : gh_conn_minor(c) == 0 ? "Connection: keep-alive\r\n"
				    : "");
	/* no body to HEAD; a request refused unparsed may have looked like one ("H..."): it gets
	 * the body, and the connection closes after it */
	if (rc == 0 && (m->p.method != HTTP_HEAD || m->state == GH_MSG_ERROR))
		rc = gh_buf_add(&c->out, body, len);
	if (rc < 0)
		conn_close(c, true);
}

static void process(gh_conn_t *c);

void gh_conn_next(gh_conn_t *c, bool keep)
{
	c->task = NULL;
	c->req.out = NULL;
	if (c->closed)
		return;
	if (!keep)
		c->close_after = true;
	gh_conn_flush(c);
	if (c->closed || c->lingering || c->in_process)
		return;
	if (!c->close_after)
		arm(c, c->s->lim.client_timeout_ms);
	if (c->read_paused) {
		c->read_paused = false;
		event_add(c->ev_read, NULL);
		/* what TLS decrypted ahead raises no event of the socket's */
		if (c->tls && gh_tls_pending(c->tls))
			event_active(c->ev_read, EV_READ, 0);
	}
	if (gh_buf_size(&c->in)) {
		process(c);
		gh_conn_flush(c);
	}
}

void gh_conn_answer_text(gh_conn_t *c, int status, const char *fmt, ...)
{
	char text[640];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(text) - 1 ? (size_t)n : sizeof(text) - 2;
	text[len++] = '\n';
	gh_conn_answer(c, status, "text/plain; charset=utf-8", text, len);
}

static void process(gh_conn_t *c)
{
	struct gh_msg *m = &c->req;
	c->in_process = true;
	while (!c->closed && !c->close_after && !c->raw) {
		if (m->state == GH_MSG_DONE) {
			if (c->task)
				break; /* the next request waits for this one's answer */
			gh_msg_next(m);
			c->dispatched = false;
			c->started = false;
		}
		size_t have = gh_buf_size(&c->in);
		if (!have)
			break;
		enum gh_msg_state before = m->state;
		size_t used = gh_msg_feed(m, gh_buf_data(&c->in), have);
		gh_buf_consume(&c->in, used);
		if (m->state == GH_MSG_ERROR) {
			c->s->bad++;
			void *task = c->task;
			c->task = NULL;
			m->out = NULL;
			if (task)
				c->s->h.gone(task); /* its request will never be whole */
			if (c->started) {
				conn_close(c, false); /* an answer half sent: cut short */
				break;
			}
			gh_conn_answer_text(c, m->status, "%s", m->why);
			break;
		}
		if (m->state == GH_MSG_BODY && !c->dispatched) {
			c->dispatched = true;
			c->s->h.head(c, c->arg);
			continue;
		}
		if (m->state == GH_MSG_BODY && used)
			arm(c, c->s->lim.client_timeout_ms); /* the body keeps coming */
		bool done = m->state == GH_MSG_DONE && before != GH_MSG_DONE;
		if (done && !c->task)
			arm(c, c->s->lim.client_timeout_ms); /* answered already: idle again */
		if (done && c->task)
			event_del(c->ev_timer); /* the handler's time now */
		if (c->task && (used || done))
			c->s->h.body(c->task, done);
		if (!used)
			break;
	}
	c->in_process = false;
}

/* Raw mode: bytes to the handler as they come; what was read before (the bytes after the
 * request's head, or held while paused) first. */
static void raw_read(gh_conn_t *c)
{
	ssize_t n = 1;
	if (!c->read_paused && !c->raw_eof && gh_buf_size(&c->in) < PIPELINE_MAX) {
		n = conn_read(c);
		while (n > 0 && c->tls && gh_tls_pending(c->tls) &&
		       gh_buf_size(&c->in) < PIPELINE_MAX)
			if (conn_read(c) <= 0)
				break;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		conn_close(c, true);
		return;
	}
	if (n < 0 && c->tls)
		gh_conn_flush(c); /* TLS may need to write before it can read */
	if (c->closed)
		return;
	if (n == 0) {
		c->raw_eof = true;
		event_del(c->ev_read); /* the client is done sending */
	}
	if (gh_buf_size(&c->in) || n == 0)
		c->raw->data(c->task, n == 0);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	gh_conn_t *c = arg;
	if (c->closed)
		return;
	if (c->lingering) {
		char junk[READ_SIZE];
		ssize_t n = read(fd, junk, sizeof(junk));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(c, true);
		return;
	}
	if (c->raw) {
		raw_read(c);
		return;
	}
	ssize_t n = conn_read(c);
	/* decrypted bytes TLS holds beyond one read are read now: no event will say so */
	while (n > 0 && c->tls && gh_tls_pending(c->tls) && gh_buf_size(&c->in) < PIPELINE_MAX) {
		ssize_t more = conn_read(c);
		if (more <= 0)
			break;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* the client left (or shut its side: nothing more can come) */
		conn_close(c, true);
		return;
	}
	if (n < 0) {
		if (c->tls)
			gh_conn_flush(c); /* the handshake's answer, or write interest it needs */
		return;
	}
	process(c);
	if (c->closed)
		return;
	if (c->task && c->req.state == GH_MSG_DONE && gh_buf_size(&c->in) > PIPELINE_MAX) {
		c->read_paused = true; /* read on once this one is answered */
		event_del(c->ev_read);
	}
	gh_conn_flush(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	gh_conn_t *c = arg;
	if (c->tls && gh_tls_wants_write(c->tls) && !gh_buf_size(&c->out)) {
		on_read(fd, what, c); /* the read that waited for the socket to be writable */
		return;
	}
	gh_conn_flush(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gh_conn_t *c = arg;
	if (c->closed)
		return;
	if (c->raw || (c->task && c->req.state == GH_MSG_DONE && !c->lingering))
		return;	     /* the handler's time */
	conn_close(c, true); /* silent too long, or drained long enough */
}

/* A connected socket becomes one of s's connections, unless it is over a cap (0 / -1, fd
 * closed). */
static int adopt(gh_server_t *s, int fd, const struct sockaddr *sa, void *arg)
{
	struct gh_peer_addr a;
	gh_peer_addr_of(sa, &a);
	if (s->lim.max_conns && s->nconns >= s->lim.max_conns) {
		s->refused++;
		close(fd);
		errno = EBUSY;
		return -1;
	}
	if (a.len && gh_peers_add(s->peers, &a, s->lim.max_conns_per_addr) < 0) {
		if (errno == EBUSY)
			s->refused++;
		close(fd);
		return -1;
	}
	gh_conn_t *c = calloc(1, sizeof(*c));
	if (!c || (s->tls && !(c->tls = gh_tls_accept(s->tls, fd)))) {
		if (a.len)
			gh_peers_del(s->peers, &a);
		free(c);
		close(fd);
		return -1;
	}
	c->addr = a;
	c->s = s;
	c->arg = arg;
	c->fd = fd;
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, c->peer,
			  sizeof(c->peer));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
			  sizeof(c->peer));
	gh_msg_init(&c->req, HTTP_REQUEST, s->lim.max_head, s->lim.max_body);
	c->ev_read = event_new(s->base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->ev_write = event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	c->ev_timer = event_new(s->base, -1, 0, on_timer, c);
	if (!c->ev_read || !c->ev_write || !c->ev_timer || event_add(c->ev_read, NULL) < 0) {
		gh_evq_free(&c->ev_read);
		gh_evq_free(&c->ev_write);
		gh_evq_free(&c->ev_timer);
		gh_msg_free(&c->req);
		gh_tls_conn_destroy(&c->tls);
		if (a.len)
			gh_peers_del(s->peers, &a);
		free(c);
		close(fd);
		return -1;
	}
	s->nconns++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	arm(c, s->lim.client_timeout_ms);
	return 0;
}

int gh_server_adopt(gh_server_t *s, int fd, void *arg)
{
	return adopt(s, fd, NULL, arg);
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	(void)lev;
	(void)salen;
	struct listener *l = arg;
	adopt(l->s, fd, sa, l->arg);
}

static void retry_accept(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct listener *l = arg;
	evconnlistener_enable(l->lev);
}

/* accept failed (out of descriptors): a pause instead of a busy loop */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct listener *l = arg;
	gp_warn("cannot accept a connection: %s", strerror(errno));
	evconnlistener_disable(lev);
	struct timeval tv = {0, 100000};
	event_add(l->ev_retry, &tv);
}

uint64_t gh_server_bad_requests(const gh_server_t *s)
{
	return s->bad;
}

uint64_t gh_server_refused_conns(const gh_server_t *s)
{
	return s->refused;
}

size_t gh_server_conns(const gh_server_t *s)
{
	return s->nconns;
}

void gh_server_set_tls(gh_server_t *s, gh_tls_t *t)
{
	s->tls = t;
}

gh_server_t *gh_server_create(struct event_base *base, const struct gh_handler *h,
			      const struct gh_limits *lim)
{
	gh_server_t *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->base = base;
	s->h = *h;
	s->lim = *lim;
	if (!(s->peers = gh_peers_create())) {
		free(s);
		return NULL;
	}
	return s;
}

void gh_server_destroy(gh_server_t **sp)
{
	gh_server_t *s = *sp;
	if (!s)
		return;
	while (s->listeners) {
		struct listener *l = s->listeners;
		s->listeners = l->next;
		evconnlistener_free(l->lev);
		event_free(l->ev_retry);
		free(l);
	}
	while (s->conns)
		conn_close(s->conns, true);
	gh_peers_destroy(&s->peers);
	free(s);
	*sp = NULL;
}

/* l (its lev made) joins s's listeners. 0 / -1 (l freed). */
static int listener_add(gh_server_t *s, struct listener *l)
{
	l->ev_retry = event_new(s->base, -1, 0, retry_accept, l);
	if (!l->lev || !l->ev_retry) {
		if (l->lev)
			evconnlistener_free(l->lev);
		if (l->ev_retry)
			event_free(l->ev_retry);
		free(l);
		return -1;
	}
	evconnlistener_set_error_cb(l->lev, on_accept_error);
	/* accepted sockets inherit it: an answer leaves as soon as it is written */
	int one = 1;
	setsockopt(evconnlistener_get_fd(l->lev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	l->next = s->listeners;
	s->listeners = l;
	return 0;
}

int gh_server_listen_fd(gh_server_t *s, int fd, void *arg)
{
	int acc = 0;
	socklen_t len = sizeof(acc);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) < 0 || !acc) {
		gp_err("fd %d is not a listening socket", fd);
		return -1;
	}
	struct listener *l = calloc(1, sizeof(*l));
	if (!l)
		return -1;
	l->s = s;
	l->arg = arg;
	evutil_make_socket_nonblocking(fd);
	evutil_make_socket_closeonexec(fd);
	l->lev = evconnlistener_new(s->base, on_accept, l, LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (listener_add(s, l) < 0) {
		gp_err("cannot serve on fd %d: %s", fd, strerror(errno));
		return -1;
	}
	return 0;
}

int gh_server_listen(gh_server_t *s, const char *addr, uint16_t port, void *arg)
{
	struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM},
			*ai = NULL;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	int gai = getaddrinfo(addr, ps, &hints, &ai);
	if (gai != 0) {
		gp_err("cannot listen on %s:%u: %s", addr, port, gai_strerror(gai));
		return -1;
	}
	struct listener *l = calloc(1, sizeof(*l));
	if (!l) {
		freeaddrinfo(ai);
		return -1;
	}
	l->s = s;
	l->arg = arg;
	l->lev = evconnlistener_new_bind(s->base, on_accept, l,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
					     LEV_OPT_CLOSE_ON_EXEC,
					 4096, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo(ai);
	if (listener_add(s, l) < 0) {
		gp_err("cannot listen on %s:%u: %s", addr, port, strerror(errno));
		return -1;
	}
	return 0;
}

/* client_conn.c: a keep-alive HTTP/1.1 client connection on libevent's loop (see client_conn.h).
 * Each read is one read(2) of at most READ_SIZE bytes and each write one send(2); the answer is
 * parsed as it comes (msg.c). A callback may destroy the client: destroy then only closes
 * it, and the struct is freed once the outermost callback has returned (depth, dead). */
#include "http/client_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/evq.h"

#define READ_SIZE	16384
#define ANSWER_HEAD_MAX (64u << 10)
#define CLIENT_BACKLOG	(4u << 20) /* an answer's bytes the owner's buffer may have waiting */

struct gh_client {
	struct event_base *base;
	struct gh_client_ops ops;
	void *arg;
	struct gh_client_limits lim;
	int fd;
	bool connecting;
	bool closed;
	bool writing; /* ev_write is added */
	bool paused;  /* ev_read is off: the owner holds too much */
	/* the request in flight */
	bool busy;
	bool head;     /* a HEAD request */
	bool req_done; /* req holds all of it */
	bool interim;  /* reading a 1xx answer, which is not the answer */
	bool answered; /* head was called */
	bool chosen;   /* the owner chose where the body goes (gh_client_body_to) */
	bool to_body;  /* the body goes to ops.body, through scratch */
	const struct gh_buf *req;
	size_t sent;   /* bytes of req written */
	int answer_ms; /* the request in flight's silence limit (lim.answer_ms unless changed) */
	struct event *ev_read, *ev_write, *ev_timer;
	struct gh_buf in, scratch;
	struct gh_msg resp;
	int depth; /* callbacks on the stack */
	bool dead; /* destroyed in one of them: freed when the last returns */
};

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);

static void arm(gh_client_t *c, int ms)
{
	gh_evq_arm(c->ev_timer, ms);
}

static void want_write(gh_client_t *c, bool on)
{
	gh_evq_want(c->ev_write, &c->writing, on);
}

/* The socket and its events go; the struct stays for the owner to destroy. */
static void shut(gh_client_t *c)
{
	gh_evq_free(&c->ev_read);
	gh_evq_free(&c->ev_write);
	gh_evq_free(&c->ev_timer);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->closed = true;
	c->connecting = c->writing = c->paused = c->busy = false;
	c->req = NULL;
}

static void client_free(gh_client_t *c)
{
	shut(c);
	gh_buf_free(&c->in);
	gh_buf_free(&c->scratch);
	gh_msg_free(&c->resp);
	free(c);
}

void gh_client_destroy(gh_client_t **pc)
{
	gh_client_t *c = pc ? *pc : NULL;
	if (!c)
		return;
	*pc = NULL;
	if (c->depth) {
		shut(c);
		c->dead = true;
		return;
	}
	client_free(c);
}

/* Around each callback, and around each way in (the loop's events, the owner's calls that
 * may call back): enter before; left after says whether the owner destroyed c meanwhile (then
 * nothing but returning is left to do). Only the way in frees it (release), once the outermost
 * has returned. */
static void enter(gh_client_t *c)
{
	c->depth++;
}

static bool left(gh_client_t *c)
{
	c->depth--;
	return c->dead;
}

static void release(gh_client_t *c)
{
	if (left(c) && !c->depth)
		client_free(c);
}

/* The connection ended: closed, and the owner told. */
static void fail(gh_client_t *c, bool reached, bool timeout, const char *why, const char *detail)
{
	struct gh_client_error e = {
	    .request = c->busy,
	    .connected = !c->connecting,
	    .reached = reached,
	    .answered = c->busy && c->answered,
	    .timeout = timeout,
	    .why = why,
	    .detail = detail ? detail : "",
	};
	shut(c);
	enter(c);
	c->ops.error(c, c->arg, &e);
	left(c);
}

static gh_client_t *client_new(struct event_base *base, const struct gh_client_limits *lim,
			       const struct gh_client_ops *ops, void *arg)
{
	gh_client_t *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->base = base;
	c->ops = *ops;
	c->arg = arg;
	c->lim = *lim;
	c->fd = -1;
	gh_msg_init(&c->resp, HTTP_RESPONSE, ANSWER_HEAD_MAX, 0);
	return c;
}

/* events for c->fd, read interest on for the connection's life */
static int events(gh_client_t *c)
{
	c->ev_read = event_new(c->base, c->fd, EV_READ | EV_PERSIST, on_read, c);
	c->ev_write = event_new(c->base, c->fd, EV_WRITE | EV_PERSIST, on_write, c);
	c->ev_timer = event_new(c->base, -1, 0, on_timer, c);
	if (!c->ev_read || !c->ev_write || !c->ev_timer || event_add(c->ev_read, NULL) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

gh_client_t *gh_client_create(struct event_base *base, const char *addr, uint16_t port,
			      const struct gh_client_limits *lim, const struct gh_client_ops *ops,
			      void *arg)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		sl = sizeof(*s6);
	} else {
		errno = EINVAL;
		return NULL;
	}
	gh_client_t *c = client_new(base, lim, ops, arg);
	if (!c)
		return NULL;
	c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		goto fail;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS)
		goto fail;
	c->connecting = true;
	if (events(c) < 0)
		goto fail;
	want_write(c, true);
	arm(c, c->lim.connect_ms);
	return c;
fail:;
	int e = errno;
	client_free(c);
	errno = e;
	return NULL;
}

gh_client_t *gh_client_adopt(struct event_base *base, int fd, const struct gh_client_limits *lim,
			     const struct gh_client_ops *ops, void *arg)
{
	gh_client_t *c = client_new(base, lim, ops, arg);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	if (events(c) < 0) {
		client_free(c);
		errno = ENOMEM;
		return NULL;
	}
	arm(c, c->lim.idle_ms);
	return c;
}

/* Write what req holds beyond what was sent. */
static void write_req(gh_client_t *c)
{
	if (c->connecting || !c->busy)
		return;
	size_t n = gh_buf_size(c->req) - c->sent;
	if (!n) {
		want_write(c, false);
		return;
	}
	ssize_t w = send(c->fd, gh_buf_data(c->req) + c->sent, n, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
		want_write(c, true);
		return;
	}
	if (w < 0) {
		/* nothing of it written: the server never saw it (a keep-alive connection it
		 * had closed) */
		fail(c, c->sent > 0, false, "cannot send", strerror(errno));
		return;
	}
	c->sent += (size_t)w;
	want_write(c, c->sent < gh_buf_size(c->req));
}

int gh_client_send(gh_client_t *c, const struct gh_buf *req, bool head, bool done)
{
	if (c->closed) {
		errno = ENOTCONN;
		return -1;
	}
	if (c->busy) {
		errno = EBUSY;
		return -1;
	}
	c->busy = true;
	c->req = req;
	c->sent = 0;
	c->answer_ms = c->lim.answer_ms;
	c->head = head;
	c->req_done = done;
	c->interim = c->answered = c->chosen = c->to_body = false;
	gh_buf_clear(&c->scratch);
	gh_msg_next(&c->resp);
	c->resp.skip_body = head;
	if (!c->connecting)
		arm(c, c->answer_ms);
	enter(c);
	write_req(c);
	release(c);
	return 0;
}

void gh_client_more(gh_client_t *c, bool done)
{
	if (!c->busy)
		return;
	if (done)
		c->req_done = true;
	enter(c);
	write_req(c);
	release(c);
}

static void connected(gh_client_t *c)
{
	int err = 0;
	socklen_t el = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err) {
		fail(c, false, false, "connect failed", strerror(err));
		return;
	}
	c->connecting = false;
	want_write(c, false);
	arm(c, c->busy ? c->answer_ms : c->lim.idle_ms);
	write_req(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gh_client_t *c = arg;
	enter(c);
	if (c->connecting)
		connected(c);
	else
		write_req(c);
	release(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gh_client_t *c = arg;
	enter(c);
	if (c->connecting)
		fail(c, false, true, "connect timed out", NULL);
	else if (c->busy)
		fail(c, true, true, "timed out", NULL);
	else
		fail(c, false, true, "idle too long", NULL);
	release(c);
}

void gh_client_pause(gh_client_t *c)
{
	if (c->paused || c->closed)
		return;
	c->paused = true;
	event_del(c->ev_read);
}

void gh_client_resume(gh_client_t *c)
{
	if (!c->paused || c->closed)
		return;
	c->paused = false;
	event_add(c->ev_read, NULL);
	event_active(c->ev_read, EV_READ, 1); /* what was read and held is parsed */
}

const struct gh_msg *gh_client_answer(const gh_client_t *c)
{
	return &c->resp;
}

void gh_client_body_to(gh_client_t *c, struct gh_buf *out, enum gh_frame frame)
{
	c->chosen = true;
	c->to_body = false;
	c->resp.out = out;
	c->resp.out_frame = out ? frame : GH_FRAME_NONE;
}

void gh_client_answer_timeout(gh_client_t *c, int ms)
{
	c->answer_ms = ms;
	if (c->busy && !c->connecting && !c->closed)
		arm(c, ms);
}

bool gh_client_busy(const gh_client_t *c)
{
	return c->busy;
}

bool gh_client_closed(const gh_client_t *c)
{
	return c->closed;
}

/* The head is whole: the owner's, and where the body goes chosen. false: c is gone. */
static bool head_done(gh_client_t *c)
{
	c->answered = true;
	enter(c);
	c->ops.head(c, c->arg);
	if (left(c))
		return false;
	if (c->busy && !c->chosen && c->ops.body) {
		c->to_body = true;
		c->resp.out = &c->scratch;
		c->resp.out_frame = GH_FRAME_NONE;
	}
	return true;
}

/* Body bytes parsed into scratch to the owner. false: c is gone. */
static bool body_out(gh_client_t *c)
{
	if (!c->to_body || !gh_buf_size(&c->scratch))
		return true;
	enter(c);
	c->ops.body(c, c->arg, gh_buf_data(&c->scratch), gh_buf_size(&c->scratch));
	if (left(c))
		return false;
	gh_buf_clear(&c->scratch);
	return true;
}

/* The answer is whole: the connection kept for the next request, or closed. */
static void answer_done(gh_client_t *c, bool eof)
{
	/* a connection whose request was answered before it was all sent is not used again */
	bool keep = gh_msg_keep_alive(&c->resp) && !gh_buf_size(&c->in) && !eof && c->req_done;
	c->busy = false;
	c->req = NULL;
	if (!keep) {
		shut(c);
	} else {
		arm(c, c->lim.idle_ms);
		if (c->paused) {
			c->paused = false;
			event_add(c->ev_read, NULL);
		}
	}
	enter(c);
	c->ops.done(c, c->arg, keep);
	left(c);
}

/* Parse what c->in holds: the head to the owner, the body after it. */
static void parse(gh_client_t *c, bool eof)
{
	struct gh_msg *m = &c->resp;
	while (c->busy && !c->paused) {
		size_t have = gh_buf_size(&c->in);
		if (!have && !eof && m->state != GH_MSG_DONE)
			return;
		enum gh_msg_state before = m->state;
		size_t used = gh_msg_feed(m, gh_buf_data(&c->in), have);
		gh_buf_consume(&c->in, used);
		if (m->state == GH_MSG_ERROR && !have) { /* the close cut it short */
			fail(c, true, false, c->answered ? "answer cut short" : "no answer",
			     m->why);
			return;
		}
		if (m->state == GH_MSG_ERROR) {
			fail(c, true, false, "bad answer", m->why);
			return;
		}
		if (!body_out(c))
			return;
		if (m->state == GH_MSG_BODY && before != GH_MSG_BODY) { /* the head is whole */
			if (m->p.status_code >= 100 && m->p.status_code < 200 &&
			    m->p.status_code != 101) {
				c->interim = true; /* an interim answer (103): not the answer */
				m->out = NULL;
				continue;
			}
			if (!head_done(c))
				return;
			continue;
		}
		if (m->state == GH_MSG_DONE && c->interim) {
			c->interim = false;
			gh_msg_next(m);
			m->skip_body = c->head;
			continue;
		}
		if (m->state == GH_MSG_DONE) {
			answer_done(c, eof);
			return;
		}
		if (eof) {
			fail(c, true, false, c->answered ? "answer cut short" : "no answer", NULL);
			return;
		}
		if (!used)
			return;
		if (!c->to_body && m->out && gh_buf_size(m->out) > CLIENT_BACKLOG) {
			if (c->ops.flush) {
				enter(c);
				c->ops.flush(c, c->arg);
				if (left(c))
					return;
			}
			if (c->busy && m->out && gh_buf_size(m->out) > CLIENT_BACKLOG) {
				gh_client_pause(c);
				return;
			}
		}
	}
}

/* The socket is readable (or the bytes held while paused are to be parsed). */
static void readable(gh_client_t *c)
{
	if (c->connecting) {
		connected(c);
		return;
	}
	if (!c->busy) {
		/* idle: the server closed it (or sent what nobody asked for) */
		fail(c, false, false, "closed while idle", NULL);
		return;
	}
	ssize_t n = gh_buf_read(&c->in, c->fd, READ_SIZE);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		fail(c, c->sent > 0, false, "connection reset", strerror(errno));
		return;
	}
	if (n < 0 && !gh_buf_size(&c->in) && c->resp.state != GH_MSG_DONE)
		return;
	/* else: the bytes held while the owner's side was full (gh_client_resume) */
	if (n > 0)
		arm(c, c->answer_ms);
	parse(c, n == 0);
	if (c->dead || !c->busy || !c->ops.flush)
		return;
	enter(c);
	c->ops.flush(c, c->arg);
	left(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gh_client_t *c = arg;
	enter(c);
	readable(c);
	release(c);
}

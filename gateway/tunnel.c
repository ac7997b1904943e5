/* tunnel.c: one WebSocket connection through ggated (see tunnel.h). The client's side is its
 * http/server.c connection in raw mode (TLS, the caps and the counts stay that file's); the
 * replica's is a socket of its own here, whose read interest is on from the connect to the end.
 * Each side's bytes are written to the other from the buffer they were read into (the client's
 * gh_conn_in, the client's gh_conn_out), and a side whose peer cannot keep up stops being read
 * until the backlog is written (TUNNEL_BACKLOG). A client that shuts its side has the replica's
 * side shut once its bytes are written; the replica closing ends the tunnel once its bytes
 * reached the client. Nothing moving either way for ws_idle_ms ends it too. Callbacks may end
 * the tunnel while another is on the stack: it is freed when the outermost returns (depth). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/metrics.h"
#include "gateway/pool.h"
#include "gateway/proxy.h"
#include "gateway/tunnel.h"
#include "gateway/upgrade.h"
#include "common/log.h"

#define READ_SIZE	(64u << 10)
#define TUNNEL_BACKLOG	(1u << 20) /* bytes one side may have waiting for the other */
#define ANSWER_HEAD_MAX (64u << 10)

enum tstate {
	T_CONNECT, /* connecting to a replica */
	T_HEAD,	   /* the handshake sent (or being sent), the answer's head awaited */
	T_OPEN,	   /* switched: bytes both ways */
	T_RELAY,   /* the replica refused (not 101): its answer to the client, then the end */
	T_DONE	   /* the client's last bytes are being written, then the end */
};

struct tunnel {
	struct gw_ctx *c;
	gh_conn_t *client; /* NULL: closed */
	uint64_t svc_id;
	struct gw_replica *rep;
	struct gw_replica *tried[GW_MAX_TRIES + 1];
	int ntried;
	int fd;
	struct event *ev_read, *ev_write, *ev_timer;
	bool writing, up_paused, client_paused, client_eof, up_shut, counted;
	enum tstate st;
	struct gh_buf head;  /* the handshake, kept for another replica */
	struct gh_buf to_up; /* what is left of it to write */
	struct gh_buf from_up;
	struct gh_msg resp;
	struct timespec start;
	int depth;
	bool dead;
};

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void arm(struct tunnel *t, int ms)
{
	if (ms <= 0) {
		event_del(t->ev_timer);
		return;
	}
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(t->ev_timer, &tv);
}

static void want_write(struct tunnel *t, bool on)
{
	if (on == t->writing || !t->ev_write)
		return;
	t->writing = on;
	if (on)
		event_add(t->ev_write, NULL);
	else
		event_del(t->ev_write);
}

/* the replica's socket closed; its replica's count of what it carries down */
static void close_up(struct tunnel *t)
{
	if (t->ev_read)
		event_free(t->ev_read);
	if (t->ev_write)
		event_free(t->ev_write);
	t->ev_read = t->ev_write = NULL;
	t->writing = t->up_paused = false;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	struct gw_replica *r = t->rep;
	t->rep = NULL;
	if (r) {
		r->outstanding--;
		gw_replica_maybe_free(r);
	}
}

static void tunnel_free(struct tunnel *t)
{
	if (t->ev_timer)
		event_free(t->ev_timer);
	gh_buf_free(&t->head);
	gh_buf_free(&t->to_up);
	gh_buf_free(&t->from_up);
	gh_msg_free(&t->resp);
	free(t);
}

/* Everything closed; freed now or when the outermost callback returns. */
static void end(struct tunnel *t)
{
	if (t->dead)
		return;
	t->dead = true;
	close_up(t);
	event_del(t->ev_timer);
	if (t->client)
		gh_conn_abort(t->client); /* no gone for it: this is the end */
	t->client = NULL;
	if (t->counted)
		t->c->ws_open--;
	if (!t->depth)
		tunnel_free(t);
}

static void enter(struct tunnel *t)
{
	t->depth++;
}

/* true: t is gone (freed or to be freed) */
static bool leave(struct tunnel *t)
{
	if (--t->depth == 0 && t->dead) {
		tunnel_free(t);
		return true;
	}
	return t->dead;
}

static void count_error(struct tunnel *t)
{
	struct gw_service *s = gw_service_by_id(t->c, t->svc_id);
	double dt = since(&t->start);
	t->c->total.errors++;
	gw_stats_observe(&t->c->total, dt);
	if (s) {
		s->st.errors++;
		gw_stats_observe(&s->st, dt);
	}
}

/* An answer of ggated's own, then the end. */
static void answer(struct tunnel *t, int code, const char *why)
{
	close_up(t);
	count_error(t);
	if (!t->client) {
		end(t);
		return;
	}
	struct gh_buf *o = gh_conn_out(t->client);
	if (gh_buf_printf(o,
			  "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\nggated: %s\n",
			  code, gh_reason(code), strlen(why) + 9, why) < 0) {
		end(t);
		return;
	}
	t->st = T_DONE;
	gh_conn_read_pause(t->client, true);
	gh_conn_flush(t->client); /* drained ends it */
}

static void try_next(struct tunnel *t);

/* The replica failed before its answer's head: another one, or 502/504. */
static void up_failed(struct tunnel *t, bool timeout, const char *why)
{
	struct gw_replica *r = t->rep;
	if (r) {
		r->st.errors++;
		gw_replica_failed(r, why);
	}
	close_up(t);
	if (t->ntried < t->c->tries && !timeout) {
		struct gw_service *s = gw_service_by_id(t->c, t->svc_id);
		t->c->total.retries++;
		if (s)
			s->st.retries++;
		try_next(t);
		return;
	}
	answer(t, timeout ? 504 : 502,
	       timeout ? "the replica did not answer in time" : "the replica failed");
}

/* Write to the replica: the handshake first, then the client's bytes. */
static void write_up(struct tunnel *t)
{
	if (t->fd < 0 || t->st == T_CONNECT)
		return;
	struct gh_buf *src = gh_buf_size(&t->to_up)	    ? &t->to_up
			     : t->st == T_OPEN && t->client ? gh_conn_in(t->client)
							    : NULL;
	if (src && gh_buf_size(src)) {
		ssize_t w = gh_buf_write(src, t->fd);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			if (t->st == T_OPEN)
				end(t); /* the replica is gone: so is the client's connection */
			else
				up_failed(t, false, "cannot send");
			return;
		}
		if (w > 0 && t->st == T_OPEN)
			arm(t, t->c->ws_idle_ms);
	}
	bool left = (src && gh_buf_size(src)) || gh_buf_size(&t->to_up);
	if (!left && t->st == T_OPEN && t->client && gh_buf_size(gh_conn_in(t->client)))
		left = true; /* to_up was written whole: the client's bytes next time */
	want_write(t, left);
	if (t->client && t->st == T_OPEN) {
		size_t held = gh_buf_size(gh_conn_in(t->client));
		bool pause = held >= TUNNEL_BACKLOG;
		if (pause != t->client_paused) {
			t->client_paused = pause;
			gh_conn_read_pause(t->client, pause);
		}
	}
	if (!left && t->client_eof && t->st == T_OPEN && !t->up_shut) {
		shutdown(t->fd, SHUT_WR); /* the client is done sending: so is the replica's peer */
		t->up_shut = true;
	}
}

/* The replica's answer has its head: switched (101), or relayed and closed. */
static void answered(struct tunnel *t)
{
	struct gh_msg *m = &t->resp;
	struct gh_buf *o = gh_conn_out(t->client);
	struct gw_service *s = gw_service_by_id(t->c, t->svc_id);
	double dt = since(&t->start);
	gw_stats_observe(&t->c->total, dt);
	if (s)
		gw_stats_observe(&s->st, dt);
	if (t->rep) {
		gw_replica_ok(t->rep);
		t->rep->st.requests++;
		gw_stats_observe(&t->rep->st, dt);
	}
	if (gw_ws_switched(m)) {
		if (gw_ws_answer_101(m, o) < 0) {
			end(t);
			return;
		}
		t->st = T_OPEN;
		t->c->ws_upgraded++;
		arm(t, t->c->ws_idle_ms);
		return;
	}
	/* refused (a 403 of the application's, a 404): relayed, then the connection closes */
	int code = m->p.status_code;
	enum gh_frame f = m->in;
	m->out = o;
	m->out_frame = f == GH_FRAME_EOF ? GH_FRAME_EOF : f;
	const char *reason = gh_buf_size(&m->target) ? gh_buf_data(&m->target) : gh_reason(code);
	int rlen = gh_buf_size(&m->target) ? (int)gh_buf_size(&m->target) : (int)strlen(reason);
	if (gh_buf_printf(o, "HTTP/1.1 %d %.*s\r\n", code, rlen, reason) < 0 ||
	    gh_buf_add(o, gh_buf_data(&m->hdrs), gh_buf_size(&m->hdrs)) < 0 ||
	    gh_msg_frame_header(m, o) < 0 || gh_buf_add(o, "Connection: close\r\n\r\n", 21) < 0) {
		end(t);
		return;
	}
	t->st = T_RELAY;
	gh_conn_read_pause(t->client, true);
	arm(t, t->c->timeout_ms);
}

/* Parse the answer in from_up (T_HEAD, T_RELAY). eof: the replica closed. */
static void parse_answer(struct tunnel *t, bool eof)
{
	struct gh_msg *m = &t->resp;
	for (;;) {
		size_t have = gh_buf_size(&t->from_up);
		enum gh_msg_state before = m->state;
		size_t used = have ? gh_msg_feed(m, gh_buf_data(&t->from_up), have) : 0;
		gh_buf_consume(&t->from_up, used);
		if (m->state == GH_MSG_ERROR) {
			gp_debug("replica %s: bad answer to a websocket handshake: %s",
				 t->rep ? t->rep->label : "?", m->why);
			if (t->st == T_HEAD)
				up_failed(t, false, "bad answer");
			else
				end(t); /* the relayed answer was cut short */
			return;
		}
		if (t->st == T_HEAD && m->state == GH_MSG_BODY && before != GH_MSG_BODY) {
			int code = m->p.status_code;
			if (code >= 100 && code < 200 && code != 101) {
				m->out = NULL; /* an interim answer: read past it */
				continue;
			}
			if (code == 101 && !gw_ws_switched(m)) {
				up_failed(t, false, "switched to another protocol");
				return;
			}
			if (code == 101) {
				/* the head's last byte is parsed still: the answer ends there, and
				 * what follows is the replica's first frames */
				used = gh_msg_feed(m, gh_buf_data(&t->from_up),
						   gh_buf_size(&t->from_up));
				gh_buf_consume(&t->from_up, used);
				answered(t);
				if (t->dead)
					return;
				if (gh_buf_add(gh_conn_out(t->client), gh_buf_data(&t->from_up),
					       gh_buf_size(&t->from_up)) < 0) {
					end(t);
					return;
				}
				gh_buf_clear(&t->from_up);
				return;
			}
			answered(t);
			if (t->dead)
				return;
			continue;
		}
		if (m->state == GH_MSG_DONE && t->st == T_HEAD) {
			gh_msg_next(m); /* the interim answer is over */
			continue;
		}
		if (m->state == GH_MSG_DONE && t->st == T_RELAY) {
			t->st = T_DONE;
			return;
		}
		if (!used)
			break;
	}
	if (!eof)
		return;
	/* the replica closed: that ends a body running to the close, or cuts the answer short */
	if (t->st == T_RELAY && m->state == GH_MSG_BODY)
		gh_msg_feed(m, "", 0);
	if (t->st == T_HEAD)
		up_failed(t, false, "no answer");
	else if (t->st == T_RELAY && m->state == GH_MSG_DONE)
		t->st = T_DONE;
	else if (t->st == T_RELAY)
		end(t);
}

static void up_readable(struct tunnel *t)
{
	if (t->st == T_OPEN) {
		struct gh_buf *o = gh_conn_out(t->client);
		ssize_t n = gh_buf_read(o, t->fd, READ_SIZE);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* the replica closed (its close frame, if any, is in o): the client gets
			 * what is left, then the end */
			close_up(t);
			t->st = T_DONE;
			gh_conn_flush(t->client);
			return;
		}
		arm(t, t->c->ws_idle_ms);
		gh_conn_flush(t->client);
		if (t->dead || !t->client)
			return;
		if (gh_buf_size(gh_conn_out(t->client)) >= TUNNEL_BACKLOG && !t->up_paused) {
			t->up_paused = true; /* resumed when the client took it (drained) */
			event_del(t->ev_read);
		}
		return;
	}
	ssize_t n = gh_buf_read(&t->from_up, t->fd, READ_SIZE);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		if (t->st == T_HEAD)
			up_failed(t, false, "connection reset");
		else
			end(t);
		return;
	}
	if (t->st == T_HEAD && gh_buf_size(&t->from_up) + t->resp.head_bytes > ANSWER_HEAD_MAX &&
	    t->resp.state != GH_MSG_BODY) {
		up_failed(t, false, "answer head too large");
		return;
	}
	parse_answer(t, n == 0);
	if (t->dead || !t->client)
		return;
	if (t->st == T_DONE && n == 0)
		close_up(t);
	gh_conn_flush(t->client);
}

static void connected(struct tunnel *t)
{
	int err = 0;
	socklen_t el = sizeof(err);
	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err) {
		gp_debug("replica %s: cannot connect: %s", t->rep->label, strerror(err));
		up_failed(t, false, "connect failed");
		return;
	}
	t->st = T_HEAD;
	arm(t, t->c->timeout_ms);
	write_up(t);
}

static void on_up_read(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct tunnel *t = arg;
	enter(t);
	if (t->st == T_CONNECT)
		connected(t);
	else
		up_readable(t);
	leave(t);
}

static void on_up_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct tunnel *t = arg;
	enter(t);
	if (t->st == T_CONNECT)
		connected(t);
	else
		write_up(t);
	leave(t);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct tunnel *t = arg;
	enter(t);
	if (t->st == T_CONNECT)
		up_failed(t, true, "connect timed out");
	else if (t->st == T_HEAD)
		up_failed(t, true, "timed out");
	else {
		if (t->st == T_OPEN)
			t->c->ws_idle_closed++;
		end(t); /* idle too long, or a client that does not take its answer */
	}
	leave(t);
}

/* A connection to r, started. 0 / -1 (nothing left open). */
static int connect_to(struct tunnel *t, struct gw_replica *r)
{
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
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	t->fd = fd;
	t->ev_read = event_new(t->c->base, fd, EV_READ | EV_PERSIST, on_up_read, t);
	t->ev_write = event_new(t->c->base, fd, EV_WRITE | EV_PERSIST, on_up_write, t);
	gh_buf_clear(&t->to_up);
	gh_msg_free(&t->resp);
	gh_msg_init(&t->resp, HTTP_RESPONSE, ANSWER_HEAD_MAX, 0);
	gh_buf_clear(&t->from_up);
	if (!t->ev_read || !t->ev_write || event_add(t->ev_read, NULL) < 0 ||
	    gh_buf_add(&t->to_up, gh_buf_data(&t->head), gh_buf_size(&t->head)) < 0) {
		t->rep = NULL;
		close_up(t);
		errno = ENOMEM;
		return -1;
	}
	t->st = T_CONNECT;
	want_write(t, true);
	arm(t, t->c->connect_timeout_ms);
	return 0;
}

static void try_next(struct tunnel *t)
{
	struct gw_service *s = gw_service_by_id(t->c, t->svc_id);
	while (s && t->ntried < t->c->tries) {
		struct gw_replica *r = gw_pick(s, t->tried, t->ntried);
		if (!r)
			break;
		t->tried[t->ntried++] = r;
		if (connect_to(t, r) < 0) {
			gp_debug("replica %s: cannot connect: %s", r->label, strerror(errno));
			gw_replica_failed(r, "cannot connect");
			continue;
		}
		t->rep = r;
		r->outstanding++; /* a tunnel counts as a request in flight: drains wait for it */
		return;
	}
	answer(t, 503, s ? "no healthy replica" : "service gone");
}

/* the client's side (server.c raw mode) */
static void client_data(void *task, bool eof)
{
	struct tunnel *t = task;
	enter(t);
	if (eof)
		t->client_eof = true;
	if (t->st == T_OPEN) {
		if (gh_buf_size(gh_conn_in(t->client)))
			arm(t, t->c->ws_idle_ms);
		write_up(t);
	} else if (t->st == T_RELAY || t->st == T_DONE) {
		gh_buf_clear(gh_conn_in(t->client)); /* nobody takes them now */
	} else if (eof) {
		end(t); /* left before the replica answered */
	} else if (gh_buf_size(gh_conn_in(t->client)) >= TUNNEL_BACKLOG && !t->client_paused) {
		t->client_paused = true; /* frames before the switch wait for it */
		gh_conn_read_pause(t->client, true);
	}
	leave(t);
}

static void client_drained(void *task)
{
	struct tunnel *t = task;
	enter(t);
	if (t->st == T_DONE)
		end(t);
	else if (t->up_paused && t->ev_read) {
		t->up_paused = false;
		event_add(t->ev_read, NULL);
		event_active(t->ev_read, EV_READ, 0);
	}
	leave(t);
}

static void client_gone(void *task)
{
	struct tunnel *t = task;
	enter(t);
	t->client = NULL;
	end(t);
	leave(t);
}

static const struct gh_raw_ops raw_ops = {
    .data = client_data,
    .drained = client_drained,
    .gone = client_gone,
};

int gw_tunnel_start(struct gw_ctx *c, gh_conn_t *cl, struct gw_service *svc, const char *target)
{
	struct gh_msg *m = gh_conn_request(cl);
	struct tunnel *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	t->c = c;
	t->client = cl;
	t->svc_id = svc->id;
	t->fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	gh_msg_init(&t->resp, HTTP_RESPONSE, ANSWER_HEAD_MAX, 0);
	t->ev_timer = event_new(c->base, -1, 0, on_timer, t);
	if (!t->ev_timer || gh_buf_printf(&t->head, "GET %s HTTP/1.1\r\n", target) < 0 ||
	    gw_forwarded_headers(gh_buf_data(&m->hdrs), gh_buf_size(&m->hdrs), gh_conn_peer(cl),
				 gw_trust_has(&c->trust, gh_conn_peer(cl)), &t->head) < 0 ||
	    gw_ws_request_end(&t->head) < 0) {
		tunnel_free(t);
		return -1;
	}
	gh_conn_raw(cl, &raw_ops, t);
	c->total.requests++;
	svc->st.requests++;
	c->ws_open++;
	c->ws_total++;
	t->counted = true;
	enter(t);
	try_next(t);
	leave(t);
	return 0;
}

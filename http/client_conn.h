/* client_conn.h: the client side of HTTP/1.1 on libevent's loop (ggated's connections to its
 * replicas and its health checks). A gh_client_t is one TCP connection to a numeric address
 * and port (no DNS), carrying one request at a time and kept alive between them. Its read
 * interest is registered once, when it is made, and stays for its life (an idle connection
 * the server closes is noticed at once, not when the next request finds it closed); write
 * interest is added only while connecting or while a write has to wait. A request's bytes are
 * written from the caller's buffer as they come (a proxy streams a body it is still reading);
 * the answer is parsed by msg.c: interim 1xx answers (but 101) skipped, a body after
 * Content-Length, chunked or running to the close, the head bounded (64 KiB) before anything
 * of it is decoded.
 *
 * Callbacks run from the loop, and from gh_client_send and gh_client_more when a write fails
 * at once; the owner may destroy the client inside any of them. After error, or done with
 * keep false, the connection is closed and the client is only good for gh_client_destroy. */
#ifndef GPOOL_HTTP_CLIENT_CONN_H
#define GPOOL_HTTP_CLIENT_CONN_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/buf.h"
#include "http/msg.h"

typedef struct gh_client gh_client_t;

/* Why a connection ended other than by gh_client_destroy. */
struct gh_client_error {
	bool request;	    /* a request was in flight; false: an idle connection ended */
	bool connected;	    /* the connection had been made (false: connect failed or timed out) */
	bool reached;	    /* the server may have seen the request: some of it was written */
	bool answered;	    /* the answer's head had come (head was called) */
	bool timeout;	    /* connect or answer timed out */
	const char *why;    /* "connect failed", "timed out", "answer cut short", ... */
	const char *detail; /* the parser's or the system's word ("" when none) */
};

struct gh_client_ops {
	/* The answer's head is whole (gh_client_answer). Its body goes where the owner points
	 * it now (gh_client_body_to); else to body, when given; else it is dropped. */
	void (*head)(gh_client_t *c, void *arg);
	/* Decoded body bytes (no gh_client_body_to). The owner may gh_client_pause. NULL: none. */
	void (*body)(gh_client_t *c, void *arg, const char *data, size_t n);
	/* A read's bytes went into the owner's buffer (gh_client_body_to): write them on.
	 * Called after each read while the answer is not whole, and before the client pauses
	 * itself because the buffer holds over 4 MiB (gh_client_resume when it is drained).
	 * NULL: none. */
	void (*flush)(gh_client_t *c, void *arg);
	/* The answer is whole. keep: the connection takes another request; else it is closed. */
	void (*done)(gh_client_t *c, void *arg, bool keep);
	/* The connection ended (closed, reset, timed out, a bad answer), with or without a
	 * request in flight: it is closed. */
	void (*error)(gh_client_t *c, void *arg, const struct gh_client_error *e);
};

struct gh_client_limits {
	int connect_ms; /* the connection made within (0: no limit) */
	int answer_ms;	/* a request in flight fails when the server sends nothing that long, from
			 * the request's start or its last read (0: no limit) */
	int idle_ms;	/* an idle connection is closed after that long (0: kept until the server
			 * closes it) */
};

/* A connection to addr (numeric IPv4 or IPv6) port, started now. NULL with errno (EINVAL:
 * not a numeric address; a socket(2) or connect(2) error); no callback is called then. ops
 * is copied; arg goes to every callback. */
gh_client_t *gh_client_create(struct event_base *base, const char *addr, uint16_t port,
			      const struct gh_client_limits *lim, const struct gh_client_ops *ops,
			      void *arg);
/* The same over fd, a connected non-blocking stream socket (a socketpair's end), which c
 * owns from then on. NULL with errno (fd closed). */
gh_client_t *gh_client_adopt(struct event_base *base, int fd, const struct gh_client_limits *lim,
			     const struct gh_client_ops *ops, void *arg);
/* Close and free; no callback is called. NULL and *c NULL are fine; *c is set to NULL. */
void gh_client_destroy(gh_client_t **c);

/* Send the request whose bytes req holds (head and body, as the server is to read them),
 * written as far as the socket takes them. req is the caller's; it stays put, unconsumed,
 * until done or error: more may be added to it (gh_client_more). head: a HEAD request (its
 * answer has no body). done: req holds all of the request. 0 / -1 (EBUSY: a request is in
 * flight; ENOTCONN: the connection is closed). A write that fails at once calls error before
 * this returns 0. */
int gh_client_send(gh_client_t *c, const struct gh_buf *req, bool head, bool done);
/* More of the request is in req: write it; done: all of it is. */
void gh_client_more(gh_client_t *c, bool done);
/* The answer's status, reason (in target) and end-to-end headers, from head until done. */
const struct gh_msg *gh_client_answer(const gh_client_t *c);
/* The rest of the answer's body into out, framed as frame says (msg.h; NULL: dropped). */
void gh_client_body_to(gh_client_t *c, struct gh_buf *out, enum gh_frame frame);
/* The request in flight's answer_ms becomes ms from now on (0: no limit), from its last read:
 * an answer known to be a stream (gateway/sse.c) may be silent longer than a plain one. */
void gh_client_answer_timeout(gh_client_t *c, int ms);
/* Stop reading (back-pressure); resume reads on, what was held first. */
void gh_client_pause(gh_client_t *c);
void gh_client_resume(gh_client_t *c);
/* whether a request is in flight (sent or being sent, its answer not whole) */
bool gh_client_busy(const gh_client_t *c);
/* whether the connection is closed (after error, or done with keep false) */
bool gh_client_closed(const gh_client_t *c);

#endif

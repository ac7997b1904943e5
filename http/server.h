/* server.h: the server side of HTTP/1.1 on libevent's loop, for ggated and gserve. Each
 * connection is a socket of its own whose read interest is registered once, for its life;
 * write interest is added only while a write has to wait; a request costs one read(2) and
 * its answer one write(2). Requests are parsed as they come (msg.h) and answered in order: a
 * pipelining client's next request is parsed once the one before is answered.
 *
 * Time limits (gh_limits.client_timeout_ms): a request's head must be whole within that time
 * of the connection's start or of the answer before, a body must keep coming (each read
 * restarts the time), and a keep-alive connection idle that long is closed; none runs while
 * a request taken by the handler waits for its answer. A connection closed while the client
 * may still be sending (an early 413) is shut for writing and drained for up to 2 s first, so
 * that the client reads the answer rather than a reset.
 *
 * Connection caps (gh_limits.max_conns, max_conns_per_addr): a connection accepted past
 * either is closed at once, before anything of it is read, so that one address's idle
 * connections cannot take the descriptors and the memory every other client needs.
 *
 * TLS (gh_server_set_tls): every connection accepted from then on speaks TLS (tls.h).
 *
 * Raw mode (gh_conn_raw): a taken request that switches protocols (a WebSocket upgrade) turns
 * its connection into a byte stream both ways: nothing more is parsed, the server's time
 * limits stop (the handler keeps its own), the connection caps still count it. */
#ifndef GPOOL_HTTP_SERVER_H
#define GPOOL_HTTP_SERVER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "http/buf.h"
#include "http/msg.h"
#include "http/tls.h"

typedef struct gh_server gh_server_t;
typedef struct gh_conn gh_conn_t;

struct gh_handler {
	/* A request's head is whole (gh_conn_request). The handler answers it at once
	 * (gh_conn_answer), or takes it (gh_conn_take) to answer later. A body goes where the
	 * handler points the request's out (dropped when NULL), framed as its out_frame says.
	 * arg: the listener's (gh_server_listen). */
	void (*head)(gh_conn_t *c, void *arg);
	/* A taken request: more of its body is in out; done: all of it. */
	void (*body)(void *task, bool done);
	/* A taken request's client is gone, or its request turned out bad before it was whole
	 * (the server answers that): the task is the handler's to end; the connection is never
	 * to be touched again by it. */
	void (*gone)(void *task);
	/* A taken request's answer so far has all been written (NULL: not wanted). */
	void (*drained)(void *task);
};

struct gh_limits {
	size_t max_head;	   /* request line and headers */
	uint64_t max_body;	   /* 0: none */
	int client_timeout_ms;	   /* see above */
	size_t max_conns;	   /* open connections at most; 0: no cap */
	size_t max_conns_per_addr; /* from one source address at most; 0: no cap */
};

gh_server_t *gh_server_create(struct event_base *base, const struct gh_handler *h,
			      const struct gh_limits *lim);
/* Closes every listener and connection (a taken request's gone is called). */
void gh_server_destroy(gh_server_t **s);
/* Accept on addr (numeric or a name, resolved now):port; arg goes to head(). 0 / -1 (logged). */
int gh_server_listen(gh_server_t *s, const char *addr, uint16_t port, void *arg);

/* Serve clients on fd, a socket already bound and listening (one handed over by gpool's
 * supervisor or systemd: LISTEN_FDS), which s owns from then on. 0 / -1 (logged). */
int gh_server_listen_fd(gh_server_t *s, int fd, void *arg);
/* A connected, non-blocking socket (a socketpair's end, in tests) served as if accepted;
 * arg goes to head(). 0 / -1 (fd closed). */
int gh_server_adopt(gh_server_t *s, int fd, void *arg);
/* Connections accepted from now on speak TLS in t, which s borrows (it outlives s). */
void gh_server_set_tls(gh_server_t *s, gh_tls_t *t);
/* requests refused as malformed or over a limit, so far */
uint64_t gh_server_bad_requests(const gh_server_t *s);
/* connections closed at accept time over a cap, so far */
uint64_t gh_server_refused_conns(const gh_server_t *s);
/* connections open now */
size_t gh_server_conns(const gh_server_t *s);

/* the request being read or answered */
struct gh_msg *gh_conn_request(gh_conn_t *c);
const char *gh_conn_peer(const gh_conn_t *c);
/* where an answer the handler streams is put (gh_conn_flush writes it) */
struct gh_buf *gh_conn_out(gh_conn_t *c);
/* the client's HTTP/1.x minor version (0 for HTTP/1.0) */
int gh_conn_minor(const gh_conn_t *c);
void gh_conn_take(gh_conn_t *c, void *task);
/* The handler has begun to write the taken request's answer into out itself: should the
 * request turn out bad now (a chunked body over the limit), the connection is cut rather
 * than answered twice. */
void gh_conn_started(gh_conn_t *c);
/* A whole answer: status line, Content-Type, Content-Length, Connection when it closes
 * (it does when a body is still on its way or the client asked), then body (none to HEAD). */
void gh_conn_answer(gh_conn_t *c, int status, const char *ctype, const char *body, size_t len);
/* The same with more header lines ("Name: value\r\n" each; NULL: none). */
void gh_conn_answer_hdrs(gh_conn_t *c, int status, const char *ctype, const char *hdrs,
			 const char *body, size_t len);
/* A whole answer whose body is the formatted text and a newline (text/plain; cut at 640
 * bytes). */
void gh_conn_answer_text(gh_conn_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write what out holds. */
void gh_conn_flush(gh_conn_t *c);
/* The taken request is answered (its answer in out): read on; keep false closes the
 * connection once the answer is written. */
void gh_conn_next(gh_conn_t *c, bool keep);
/* Close at once (an answer cut short); a taken request's gone is not called. */
void gh_conn_abort(gh_conn_t *c);
/* Raw mode's events, for the task given to gh_conn_raw. */
struct gh_raw_ops {
	/* more bytes are in gh_conn_in (the handler consumes them); eof: the client shut its
	 * side (or its TLS session ended): nothing more will come */
	void (*data)(void *task, bool eof);
	/* out has all been written */
	void (*drained)(void *task);
	/* the connection failed or the server is going: closed; never touch it again */
	void (*gone)(void *task);
};
/* From now on c carries raw bytes, for task (which replaces the taken request's: the
 * handler's gone is not called for it). What was read past the request's head is in
 * gh_conn_in already (ops->data is called for it from the loop). ops is borrowed. */
void gh_conn_raw(gh_conn_t *c, const struct gh_raw_ops *ops, void *task);
/* bytes read and not yet consumed (raw mode) */
struct gh_buf *gh_conn_in(gh_conn_t *c);
/* Stop or resume reading (raw mode: back-pressure). */
void gh_conn_read_pause(gh_conn_t *c, bool pause);
/* Once out is written, shut the connection for writing (raw mode: the other side's end). */
void gh_conn_shut_write(gh_conn_t *c);
/* "Not Found" for 404 and so on */
const char *gh_reason(int status);

#endif

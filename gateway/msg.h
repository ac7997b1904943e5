/* msg.h: one direction of an HTTP/1.x connection as ggated relays it: the bytes that arrive
 * parsed by Debian's http-parser (Node.js's, a streaming parser that keeps no copy), one
 * message at a time, into what ggated forwards: the request target or status reason, the
 * end-to-end header lines ("Name: value\r\n", hop-by-hop ones and the framing dropped) and the
 * body, decoded and framed again for the next hop (as is after Content-Length, chunk by chunk
 * after chunked). No socket is touched here: proxy.c and conn.c feed it, the fuzzer too. */
#ifndef GPOOL_GATEWAY_MSG_H
#define GPOOL_GATEWAY_MSG_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gateway/buf.h"

enum gw_msg_state {
	GW_MSG_IDLE = 0, /* between messages */
	GW_MSG_HEAD,	 /* a head being read */
	GW_MSG_BODY,	 /* the head is whole (gw_msg_feed stopped there once), the body follows */
	GW_MSG_DONE,	 /* the message is whole; gw_msg_next for the next one */
	GW_MSG_ERROR	 /* status and why say what to answer; the connection is done */
};

/* How a body travels to the next hop. */
enum gw_frame { GW_FRAME_NONE, GW_FRAME_LENGTH, GW_FRAME_CHUNKED, GW_FRAME_EOF };

struct gw_msg {
	http_parser p;
	enum gw_msg_state state;
	size_t max_head;   /* bytes of a head (request line or status line and headers) */
	uint64_t max_body; /* decoded body bytes; 0: no limit */
	bool skip_body;	   /* a response to HEAD: no body whatever its headers say */
	/* the message */
	struct gw_buf target; /* request target, or status reason */
	struct gw_buf hdrs;   /* end-to-end header lines */
	size_t line;	      /* where the header line being read starts in hdrs */
	int last;	      /* 0 none, 1 a name, 2 a value was the last piece */
	bool drop;	      /* the header being read is hop-by-hop: not forwarded */
	bool expect_continue; /* Expect: 100-continue */
	bool has_upgrade;     /* Upgrade: asked (never done: the connection closes after) */
	size_t head_bytes;
	uint64_t body_bytes;
	enum gw_frame in; /* how the body arrives */
	uint64_t length;  /* Content-Length, when in is GW_FRAME_LENGTH (or the head had one) */
	bool has_length;
	/* where the body goes (NULL: dropped) and how it is framed there */
	struct gw_buf *out;
	enum gw_frame out_frame;
	/* GW_MSG_ERROR */
	int status;
	const char *why;
};

/* type: HTTP_REQUEST or HTTP_RESPONSE */
void gw_msg_init(struct gw_msg *m, enum http_parser_type type, size_t max_head,
		 uint64_t max_body);
void gw_msg_free(struct gw_msg *m);
/* Parse from data[0..n) (n == 0: the peer closed, which may end a body that runs to the
 * close). Stops after the head (state GW_MSG_BODY: the caller chooses m->out and
 * m->out_frame, then feeds on) and after the whole message (GW_MSG_DONE). Returns the bytes
 * used; what is left belongs to the next call (or the next message). */
size_t gw_msg_feed(struct gw_msg *m, const char *data, size_t n);
/* Ready for the next message on the connection (after GW_MSG_DONE). */
void gw_msg_next(struct gw_msg *m);
/* The message's framing as the next hop's header line(s) into b, for out_frame and the
 * length: "Content-Length: N\r\n", "Transfer-Encoding: chunked\r\n" or nothing. */
int gw_msg_frame_header(const struct gw_msg *m, struct gw_buf *b);
/* whether the connection may carry another message after this one (both ends said so) */
bool gw_msg_keep_alive(const struct gw_msg *m);
/* the request method's name ("GET") */
const char *gw_msg_method(const struct gw_msg *m);
/* a request method ggated forwards; one that may be sent again */
bool gw_msg_allowed(const struct gw_msg *m);
bool gw_msg_idempotent(const struct gw_msg *m);

#endif

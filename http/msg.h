/* msg.h: one direction of an HTTP/1.x connection: the bytes that arrive parsed by Debian's
 * http-parser (Node.js's, a streaming parser that keeps no copy), one message at a time, into
 * the request target or status reason, the end-to-end header lines ("Name: value\r\n",
 * hop-by-hop ones and the framing dropped: what a proxy forwards) and the body, decoded and
 * framed again for where it goes (as is after Content-Length, chunk by chunk after chunked).
 * No socket is touched here: server.c and client_conn.c feed it, the fuzzers too. */
#ifndef GPOOL_HTTP_MSG_H
#define GPOOL_HTTP_MSG_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/buf.h"

enum gh_msg_state {
	GH_MSG_IDLE = 0, /* between messages */
	GH_MSG_HEAD,	 /* a head being read */
	GH_MSG_BODY,	 /* the head is whole (gh_msg_feed stopped there once), the body follows */
	GH_MSG_DONE,	 /* the message is whole; gh_msg_next for the next one */
	GH_MSG_ERROR	 /* status and why say what to answer; the connection is done */
};

/* How a body travels to the next hop. */
enum gh_frame { GH_FRAME_NONE, GH_FRAME_LENGTH, GH_FRAME_CHUNKED, GH_FRAME_EOF };

struct gh_msg {
	http_parser p;
	enum gh_msg_state state;
	size_t max_head;   /* bytes of a head (request line or status line and headers) */
	uint64_t max_body; /* decoded body bytes; 0: no limit */
	bool skip_body;	   /* a response to HEAD: no body whatever its headers say */
	/* the message */
	struct gh_buf target;	/* request target, or status reason */
	struct gh_buf hdrs;	/* end-to-end header lines */
	size_t line;		/* where the header line being read starts in hdrs */
	int last;		/* 0 none, 1 a name, 2 a value was the last piece */
	bool drop;		/* the header being read is hop-by-hop: not forwarded */
	bool expect_continue;	/* Expect: 100-continue */
	bool has_upgrade;	/* Upgrade: asked (ggated carries a WebSocket one: gateway/tunnel.c;
				 * any other is not done and the connection closes after) */
	bool upgrade_websocket; /* Upgrade's list holds "websocket" */
	size_t head_bytes;
	uint64_t body_bytes;
	char body_tail[4]; /* the body's last bytes (min(body_bytes, 4) of them): where an event
			    * stream is (gateway/sse.c) */
	enum gh_frame in;  /* how the body arrives */
	uint64_t length;   /* Content-Length, when in is GH_FRAME_LENGTH (or the head had one) */
	bool has_length;
	/* where the body goes (NULL: dropped) and how it is framed there */
	struct gh_buf *out;
	enum gh_frame out_frame;
	/* GH_MSG_ERROR */
	int status;
	const char *why;
};

/* type: HTTP_REQUEST or HTTP_RESPONSE */
void gh_msg_init(struct gh_msg *m, enum http_parser_type type, size_t max_head, uint64_t max_body);
void gh_msg_free(struct gh_msg *m);
/* Parse from data[0..n) (n == 0: the peer closed, which may end a body that runs to the
 * close). Stops after the head (state GH_MSG_BODY: the caller chooses m->out and
 * m->out_frame, then feeds on) and after the whole message (GH_MSG_DONE). Returns the bytes
 * used; what is left belongs to the next call (or the next message). */
size_t gh_msg_feed(struct gh_msg *m, const char *data, size_t n);
/* Ready for the next message on the connection (after GH_MSG_DONE). */
void gh_msg_next(struct gh_msg *m);
/* The message's framing as the next hop's header line(s) into b, for out_frame and the
 * length: "Content-Length: N\r\n", "Transfer-Encoding: chunked\r\n" or nothing. */
int gh_msg_frame_header(const struct gh_msg *m, struct gh_buf *b);
/* whether the connection may carry another message after this one (both ends said so) */
bool gh_msg_keep_alive(const struct gh_msg *m);
/* The value of the first header line named name (case-insensitive) among the end-to-end
 * ones kept in hdrs, its length in *len: NULL when there is none. Not NUL-terminated. */
const char *gh_msg_header(const struct gh_msg *m, const char *name, size_t *len);
/* the request method's name ("GET") */
const char *gh_msg_method(const struct gh_msg *m);
/* a request method a proxy forwards (ggated); one that may be sent again */
bool gh_msg_allowed(const struct gh_msg *m);
bool gh_msg_idempotent(const struct gh_msg *m);

#endif

/* sse.h: what ggated adds to an answer that is a stream of server-sent events
 * (Content-Type: text/event-stream, the way OpenAI-style servers stream tokens): a comment
 * line that keeps the client's connection (and any proxy before it) from timing out while
 * the replica is silent (a long prefill), and an error event when the replica's stream breaks
 * mid-way, so that the client reads a failure instead of a stream that merely stopped.
 * Everything is written at an event's boundary, framed for the client's connection (chunked,
 * or raw to the close); an answer framed by Content-Length gets nothing (a byte added would
 * break its length). Pure functions over buffers: proxy.c decides when. */
#ifndef GPOOL_GATEWAY_SSE_H
#define GPOOL_GATEWAY_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/buf.h"
#include "http/msg.h"

/* Whether answer m (its head whole) is an event stream: its Content-Type's media type is
 * text/event-stream (case-insensitive, parameters ignored). */
bool gw_sse_is(const struct gh_msg *m);
/* Whether a stream whose body so far ended with tail[0..n) (n <= 4, the last bytes; n == 0:
 * nothing yet) is between two events: nothing sent yet, or a blank line ended the last one
 * (LF LF, CR LF CR LF or CR CR). */
bool gw_sse_at_boundary(const char *tail, size_t n);
/* A keep-alive comment (": keep-alive\n\n") into out, framed as frame says. 0 / -1 (ENOMEM;
 * EINVAL: a frame that takes no added bytes). */
int gw_sse_keepalive(struct gh_buf *out, enum gh_frame frame);
/* The error event for a stream cut short (who: the upstream and what happened, as "replica
 * 10.0.0.1:8080 (timed out)": printable ASCII, quotes and backslashes dropped) into out, framed as
 * frame says: an event the replica had begun is ended first (its line and the event), so the error
 * is an event of its own: data: {"error": {"message": "upstream ... closed mid-stream", "type":
 * "upstream_error"}} 0 / -1 (ENOMEM; EINVAL: a frame that takes no added bytes). */
int gw_sse_error(struct gh_buf *out, enum gh_frame frame, const char *tail, size_t n,
		 const char *who);

#endif

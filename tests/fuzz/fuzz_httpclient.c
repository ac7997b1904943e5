/* fuzz_httpclient: the HTTP client connection (http/client_conn.c, with msg.c) reading any bytes
 * as a server's answers, from the other end of a socketpair, in pieces whose size the second
 * byte picks, the server's side then shut. The first byte picks the request (GET or HEAD),
 * where the body goes (the body callback, the owner's buffer as is or framed chunked again,
 * or nowhere) and whether the owner pauses in each body callback (resumed on the next loop
 * pass). Each answer done on a kept connection is followed by another request, up to 8.
 * Properties: the sanitizers see nothing; every request ends exactly once (done or error),
 * its head at most once and before any body byte; an error leaves the client closed; a
 * body declared by Content-Length is delivered whole when the answer is done; a body framed
 * chunked again into the owner's buffer parses back, behind a head, to a whole message of
 * the same bytes; the client ends once the server's side is shut. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "http/client_conn.h"

enum { TO_BODY, TO_BUF, TO_BUF_CHUNKED, DROPPED };

static struct run {
	int mode;
	bool head_req;
	bool pause;
	bool paused;
	int heads, ends; /* of the request in flight */
	bool done, error, keep;
	bool handled;	 /* its end was looked at */
	uint64_t length; /* the answer's Content-Length, when it had one */
	bool has_length;
	bool bodiless; /* 204, 304, 1xx, or HEAD */
	struct gh_buf body, sink;
} R;

static void on_head(gh_client_t *c, void *arg)
{
	(void)arg;
	const struct gh_msg *m = gh_client_answer(c);
	FUZZ_CHECK(R.heads == 0 && R.ends == 0);
	FUZZ_CHECK(gh_buf_size(&R.body) == 0 && gh_buf_size(&R.sink) == 0);
	FUZZ_CHECK(m->p.status_code < 100 || m->p.status_code >= 200 || m->p.status_code == 101);
	R.heads++;
	R.has_length = m->in == GH_FRAME_LENGTH;
	R.length = m->length;
	int code = m->p.status_code;
	R.bodiless = R.head_req || code == 204 || code == 304 || (code >= 100 && code < 200);
	if (R.mode == TO_BUF)
		gh_client_body_to(c, &R.sink, GH_FRAME_LENGTH);
	else if (R.mode == TO_BUF_CHUNKED)
		gh_client_body_to(c, &R.sink, GH_FRAME_CHUNKED);
	else if (R.mode == DROPPED)
		gh_client_body_to(c, NULL, GH_FRAME_NONE);
}

static void on_body(gh_client_t *c, void *arg, const char *data, size_t n)
{
	(void)arg;
	FUZZ_CHECK(R.heads == 1 && R.ends == 0 && R.mode == TO_BODY && n > 0);
	FUZZ_CHECK(gh_buf_add(&R.body, data, n) == 0);
	if (R.pause) {
		gh_client_pause(c);
		R.paused = true;
	}
}

static void on_done(gh_client_t *c, void *arg, bool keep)
{
	(void)arg;
	FUZZ_CHECK(R.heads == 1 && R.ends == 0);
	FUZZ_CHECK(!gh_client_busy(c) && gh_client_closed(c) == !keep);
	R.ends++;
	R.done = true;
	R.keep = keep;
}

static void on_error(gh_client_t *c, void *arg, const struct gh_client_error *e)
{
	(void)arg;
	FUZZ_CHECK(gh_client_closed(c) && e->why && e->detail);
	if (e->request) {
		FUZZ_CHECK(R.ends == 0 && e->answered == (R.heads == 1));
		R.ends++;
	}
	R.error = true;
}

static const struct gh_client_ops ops = {
    .head = on_head,
    .body = on_body,
    .done = on_done,
    .error = on_error,
};

/* A body framed chunked again: behind a head, a whole message, whose decoded body has the
 * length the answer declared (when it declared one). */
static void check_chunked(void)
{
	struct gh_msg m;
	struct gh_buf all = {0}, out = {0};
	gh_msg_init(&m, HTTP_RESPONSE, 1024, 0);
	static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	FUZZ_CHECK(gh_buf_add(&all, head, sizeof(head) - 1) == 0);
	FUZZ_CHECK(gh_buf_add(&all, gh_buf_data(&R.sink), gh_buf_size(&R.sink)) == 0);
	size_t off = 0, n = gh_buf_size(&all);
	while (m.state != GH_MSG_DONE && m.state != GH_MSG_ERROR) {
		size_t u = gh_msg_feed(&m, gh_buf_data(&all) + off, n - off);
		off += u;
		if (m.state == GH_MSG_BODY && !m.out) {
			m.out = &out;
			m.out_frame = GH_FRAME_LENGTH;
		} else if (!u) {
			break;
		}
	}
	FUZZ_CHECK(m.state == GH_MSG_DONE && off == n);
	FUZZ_CHECK(!R.has_length || gh_buf_size(&out) == R.length);
	gh_msg_free(&m);
	gh_buf_free(&all);
	gh_buf_free(&out);
}

static void request_ended(void)
{
	if (!R.done || R.bodiless)
		return;
	if (R.has_length && R.mode == TO_BODY)
		FUZZ_CHECK(gh_buf_size(&R.body) == R.length);
	if (R.has_length && R.mode == TO_BUF)
		FUZZ_CHECK(gh_buf_size(&R.sink) == R.length);
	if (R.mode == TO_BUF_CHUNKED)
		check_chunked();
}

static void next_request(gh_client_t *c, struct gh_buf *req)
{
	R.heads = R.ends = 0;
	R.done = R.error = R.keep = R.paused = R.handled = false;
	gh_buf_clear(&R.body);
	gh_buf_clear(&R.sink);
	gh_buf_clear(req);
	FUZZ_CHECK(gh_buf_printf(req, "%s / HTTP/1.1\r\nHost: f\r\n\r\n",
				 R.head_req ? "HEAD" : "GET") == 0);
	FUZZ_CHECK(gh_client_send(c, req, R.head_req, true) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	memset(&R, 0, sizeof(R));
	R.mode = data[0] & 3;
	R.head_req = data[0] & 4;
	R.pause = data[0] & 8;
	size_t piece = data[1] ? data[1] : size;
	int sv[2];
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	struct event_base *base = event_base_new();
	FUZZ_CHECK(base);
	struct gh_client_limits lim = {.answer_ms = 10000};
	gh_client_t *c = gh_client_adopt(base, sv[0], &lim, &ops, NULL);
	FUZZ_CHECK(c);
	struct gh_buf req = {0};
	next_request(c, &req);
	int requests = 1;
	size_t at = 2;
	bool shut = false, ended = false;
	char sink[4096];
	for (int round = 0; round < 20000 && !ended; round++) {
		while (read(sv[1], sink, sizeof(sink)) > 0) /* the requests, read and dropped */
			;
		if (at < size) {
			size_t k = size - at < piece ? size - at : piece;
			ssize_t w = write(sv[1], data + at, k);
			if (w > 0)
				at += (size_t)w;
		} else if (!shut) {
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		if (R.paused) {
			R.paused = false;
			gh_client_resume(c);
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (R.error) {
			if (!R.handled)
				request_ended();
			ended = true;
		} else if (R.done && !R.handled) {
			request_ended();
			R.handled = true;
			if (!R.keep)
				ended = true;
			else if (requests < 8) {
				requests++;
				next_request(c, &req);
			}
			/* else kept idle: the server's shut ends it (error, no request) */
		}
	}
	FUZZ_CHECK(ended || gh_client_closed(c)); /* the client ended once the server shut */
	gh_client_destroy(&c);
	event_base_free(base);
	close(sv[1]);
	gh_buf_free(&req);
	gh_buf_free(&R.body);
	gh_buf_free(&R.sink);
	return 0;
}

/* fuzz_server: the HTTP server connection (http/server.c, with msg.c) fed any bytes by a
 * client at the other end of a socketpair, in pieces whose size the first byte picks, the
 * client's side then shut. The handler answers GETs at once and takes POST/PUT requests,
 * answering them once their body is whole, as gserve does. Properties: the server never
 * crashes or leaks (the sanitizers), the connection ends (closed by the server once the
 * client has shut its side), and what the client reads back is a sequence of whole HTTP/1.1
 * answers, no more of them than requests began. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "http/server.h"

struct task {
	gh_conn_t *c;
	struct gh_buf body;
};

static int heads;

static void on_head(gh_conn_t *c, void *arg)
{
	(void)arg;
	heads++;
	struct gh_msg *m = gh_conn_request(c);
	if (m->p.method == HTTP_POST || m->p.method == HTTP_PUT) {
		struct task *t = calloc(1, sizeof(*t));
		FUZZ_CHECK(t);
		t->c = c;
		m->out = &t->body;
		m->out_frame = GH_FRAME_LENGTH;
		gh_conn_take(c, t);
		return;
	}
	gh_conn_answer(c, 200, "text/plain", gh_buf_data(&m->target), gh_buf_size(&m->target));
}

static void on_body(void *task, bool done)
{
	struct task *t = task;
	if (!done)
		return;
	gh_conn_t *c = t->c;
	char n[32];
	int k = snprintf(n, sizeof(n), "%zu", gh_buf_size(&t->body));
	gh_conn_answer(c, 200, "text/plain", n, (size_t)k);
	gh_buf_free(&t->body);
	free(t);
	gh_conn_next(c, true);
}

static void on_gone(void *task)
{
	struct task *t = task;
	gh_buf_free(&t->body);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t piece = data[0] ? data[0] : size;
	int sv[2];
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	struct event_base *base = event_base_new();
	static const struct gh_handler h = {.head = on_head, .body = on_body, .gone = on_gone};
	struct gh_limits lim = {.max_head = 1024, .max_body = 4096, .client_timeout_ms = 1000};
	gh_server_t *s = gh_server_create(base, &h, &lim);
	FUZZ_CHECK(base && s && gh_server_adopt(s, sv[0], NULL) == 0);
	heads = 0;
	struct gh_buf got = {0};
	size_t at = 1;
	bool shut = false, closed = false;
	for (int round = 0; round < 10000 && !closed; round++) {
		if (at < size) {
			size_t k = size - at < piece ? size - at : piece;
			ssize_t w = write(sv[1], data + at, k);
			if (w > 0)
				at += (size_t)w;
		} else if (!shut) {
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		ssize_t r;
		while ((r = gh_buf_read(&got, sv[1], 65536)) > 0)
			;
		closed = r == 0;
		if (r < 0 && errno != EAGAIN)
			closed = true;
	}
	FUZZ_CHECK(closed); /* the server closed once the client shut its side */
	gh_server_destroy(&s);
	event_base_loop(base, EVLOOP_NONBLOCK); /* the deferred frees */
	event_base_free(base);
	close(sv[1]);
	/* what came back: whole answers, one at most for each request begun */
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 1 << 16, 0);
	int answers = 0;
	size_t off = 0, n = gh_buf_size(&got);
	while (off < n) {
		size_t u = gh_msg_feed(&m, gh_buf_data(&got) + off, n - off);
		off += u;
		FUZZ_CHECK(m.state != GH_MSG_ERROR);
		if (m.state == GH_MSG_DONE) {
			if (m.p.status_code != 100)
				answers++;
			gh_msg_next(&m);
		} else if (!u) {
			break;
		}
	}
	FUZZ_CHECK(off == n && (m.state == GH_MSG_IDLE || m.state == GH_MSG_DONE));
	FUZZ_CHECK(answers <= heads + 1); /* + 1: an answer to a request refused before its head */
	gh_msg_free(&m);
	gh_buf_free(&got);
	return 0;
}

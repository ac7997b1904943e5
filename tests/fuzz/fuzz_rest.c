/* fuzz_rest: gschedd's REST API as a client reaches it: any bytes written by a client at the
 * other end of a socketpair into scheduler/http/http.c's server (http/'s gh_server, no
 * listener, no thread), in pieces whose size the first byte picks, the client's side then
 * shut. Every request the API hands to the scheduler's loop is answered on the inproc pair as
 * the loop would answer a request it refuses (an Error message), so routing, authentication
 * (MUNGE credentials and tokens in the Authorization header), bodies, /metrics and the
 * dashboard's files all run. Properties: the server never crashes or leaks (the sanitizers),
 * the connection ends (closed by the server once the client has shut its side and every
 * request is answered), every request reaching the loop is a readable batch, and what the
 * client reads back is a sequence of whole HTTP/1.1 answers. */
#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "tests/fuzz/fuzz.h"
#include "common/wire.h"
#include "http/msg.h"
#include "scheduler/http/http.h"

static struct http *h;

/* the loop's side: every request refused, as a handler would */
static int answer_loop(void)
{
	int n = 0;
	struct http_msg m;
	while (http_recv(h, &m) == 1) {
		FUZZ_CHECK(m.batch && m.batch->n_msgs == 1);
		Gpool__Error e = GPOOL__ERROR__INIT;
		e.code = GPOOL__ERROR_CODE__ERROR_PERMISSION;
		e.text = (char *)"refused by the fuzzer";
		Gpool__Msg r = GPOOL__MSG__INIT;
		r.m_case = GPOOL__MSG__M_ERROR;
		r.error = &e;
		r.id = m.batch->msgs[0]->id;
		gp_batch_t b = {{0}, 0};
		FUZZ_CHECK(gp_batch_add(&b, &r) == 0);
		FUZZ_CHECK(zmq_send(http_socket(h), m.rid, HTTP_RID_LEN, ZMQ_SNDMORE) >= 0);
		FUZZ_CHECK(zmq_send(http_socket(h), b.body.data, b.body.len, 0) >= 0);
		gp_batch_release(&b);
		gpool__batch__free_unpacked(m.batch, NULL);
		n++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (!h) {
		struct http_opts o = {.listen = NULL,
				      .web_dir = "/nonexistent",
				      .token_ttl_ms = 3600000,
				      .max_body = 1 << 16,
				      .max_conns = 4,
				      .max_conns_per_addr = 2};
		gp_error_t err;
		h = http_create(&o, zmq_ctx_new(), &err);
		FUZZ_CHECK(h);
	}
	size_t piece = data[0] ? data[0] : size;
	int sv[2];
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	FUZZ_CHECK(http_adopt(h, sv[0]) == 0);
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
		event_base_loop(http_base(h), EVLOOP_NONBLOCK);
		answer_loop();
		event_base_loop(http_base(h), EVLOOP_NONBLOCK);
		ssize_t r;
		while ((r = gh_buf_read(&got, sv[1], 65536)) > 0)
			;
		closed = r == 0;
		if (r < 0 && errno != EAGAIN)
			closed = true;
	}
	FUZZ_CHECK(closed); /* the server closed once the client shut its side */
	close(sv[1]);
	event_base_loop(http_base(h), EVLOOP_NONBLOCK); /* the deferred frees */
	/* what came back: whole answers (unless a request was HEAD: its answer's Content-Length
	 * comes without a body, which a response reader that was not told cannot tell from the
	 * next answer) */
	bool head = memmem(data, size, "HEAD", 4) != NULL;
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 1 << 16, 0);
	size_t off = 0, n = head ? 0 : gh_buf_size(&got);
	while (off < n) {
		size_t u = gh_msg_feed(&m, gh_buf_data(&got) + off, n - off);
		off += u;
		FUZZ_CHECK(m.state != GH_MSG_ERROR);
		if (m.state == GH_MSG_DONE)
			gh_msg_next(&m);
		else if (!u)
			break;
	}
	if (!head)
		FUZZ_CHECK(off == n && (m.state == GH_MSG_IDLE || m.state == GH_MSG_DONE));
	gh_msg_free(&m);
	gh_buf_free(&got);
	return 0;
}

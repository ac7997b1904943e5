/* test_client: http/client_conn.c against a real server socket on loopback, written to by the test
 * itself (so that it can answer wrongly): two requests on one kept-alive connection (the server
 * accepts once) and the server's close of the idle connection noticed; a chunked answer after
 * an interim 103, to the body callback and re-framed into the owner's buffer; an answer whose
 * head passes 64 KiB refused before it ends; a server that closes mid-answer or before any
 * answer; answer and connect timeouts; a body over 4 MiB into a buffer nobody drains pauses
 * the reading until the owner resumes it; a name instead of a numeric address is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/client_conn.h"

static struct event_base *base;
static int lfd = -1; /* the server's listening socket */
static uint16_t port;

/* what the callbacks saw */
static struct seen {
	int heads, dones, errors;
	int status;
	bool keep;
	struct gh_client_error err;
	char why[64];
	struct gh_buf body;
	bool destroy_in_done; /* the owner destroys the client in done */
	gh_client_t **self;
} seen;

static void on_head(gh_client_t *c, void *arg)
{
	(void)arg;
	seen.heads++;
	seen.status = gh_client_answer(c)->p.status_code;
}

static void on_body(gh_client_t *c, void *arg, const char *data, size_t n)
{
	(void)c;
	(void)arg;
	assert_int_equal(gh_buf_add(&seen.body, data, n), 0);
}

static void on_done(gh_client_t *c, void *arg, bool keep)
{
	(void)c;
	(void)arg;
	seen.dones++;
	seen.keep = keep;
	if (seen.destroy_in_done)
		gh_client_destroy(seen.self);
}

static void on_error(gh_client_t *c, void *arg, const struct gh_client_error *e)
{
	(void)c;
	(void)arg;
	seen.errors++;
	seen.err = *e;
	snprintf(seen.why, sizeof(seen.why), "%s", e->why);
	seen.err.why = seen.why;
	seen.err.detail = "";
}

static const struct gh_client_ops ops = {
    .head = on_head,
    .body = on_body,
    .done = on_done,
    .error = on_error,
};

static int setup(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	base = event_base_new();
	assert_non_null(base);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(lfd);
	gh_buf_free(&seen.body);
	event_base_free(base);
	return 0;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* run the loop until *flag is non-zero or secs have passed */
static void run_until(const int *flag, double secs)
{
	double end = now_s() + secs;
	while (!*flag && now_s() < end) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

/* the server's side of the next connection (the client's loop turned meanwhile) */
static int serve_accept(void)
{
	for (int i = 0; i < 3000; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (fd >= 0)
			return fd;
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	fail_msg("no connection came");
	return -1;
}

/* read a whole request head (up to the empty line) on the server's side */
static void serve_read_request(int fd, char *got, size_t cap)
{
	size_t n = 0;
	for (int i = 0; i < 3000; i++) {
		ssize_t r = read(fd, got + n, cap - 1 - n);
		if (r > 0) {
			n += (size_t)r;
			got[n] = '\0';
			if (strstr(got, "\r\n\r\n"))
				return;
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	fail_msg("no whole request came");
}

static void serve_write(int fd, const char *s, size_t n)
{
	size_t at = 0;
	for (int i = 0; at < n && i < 30000; i++) {
		ssize_t w = write(fd, s + at, n - at);
		if (w > 0)
			at += (size_t)w;
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(at, n);
}

static void serve_text(int fd, const char *s)
{
	serve_write(fd, s, strlen(s));
}

static gh_client_t *client(const struct gh_client_limits *lim)
{
	gh_client_t *c = gh_client_create(base, "127.0.0.1", port, lim, &ops, NULL);
	assert_non_null(c);
	return c;
}

static const struct gh_client_limits lim = {.connect_ms = 2000, .answer_ms = 5000};

static void send_get(gh_client_t *c, struct gh_buf *req, const char *path)
{
	gh_buf_clear(req);
	assert_int_equal(gh_buf_printf(req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path), 0);
	assert_int_equal(gh_client_send(c, req, false, true), 0);
}

/* two requests, one connection; a third request while one is in flight is refused; the
 * server's close of the idle connection is noticed with no request in flight */
static void keep_alive_reuse(void **state)
{
	(void)state;
	gh_client_t *c = client(&lim);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/one");
	assert_int_equal(gh_client_send(c, &req, false, true), -1);
	assert_int_equal(errno, EBUSY);
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	assert_non_null(strstr(got, "GET /one HTTP/1.1\r\n"));
	serve_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\none");
	run_until(&seen.dones, 5);
	assert_int_equal(seen.dones, 1);
	assert_true(seen.keep);
	assert_false(gh_client_busy(c));
	assert_false(gh_client_closed(c));
	seen.dones = 0;
	send_get(c, &req, "/two");
	serve_read_request(fd, got, sizeof(got)); /* on the same connection */
	assert_non_null(strstr(got, "GET /two HTTP/1.1\r\n"));
	serve_text(fd, "HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\ntwo");
	run_until(&seen.dones, 5);
	assert_int_equal(seen.dones, 1);
	assert_int_equal(seen.status, 201);
	assert_true(seen.keep);
	assert_int_equal(seen.heads, 2);
	assert_int_equal(gh_buf_size(&seen.body), 6);
	assert_memory_equal(gh_buf_data(&seen.body), "onetwo", 6);
	assert_int_equal(accept(lfd, NULL, NULL), -1); /* no second connection was made */
	assert_int_equal(errno, EAGAIN);
	/* the server closes the idle connection: noticed at once, no request in flight */
	close(fd);
	run_until(&seen.errors, 5);
	assert_int_equal(seen.errors, 1);
	assert_false(seen.err.request);
	assert_true(gh_client_closed(c));
	assert_int_equal(gh_client_send(c, &req, false, true), -1);
	assert_int_equal(errno, ENOTCONN);
	gh_client_destroy(&c);
	assert_null(c);
	gh_buf_free(&req);
}

/* Connection: close from the server: done with keep false, the client closed; the owner may
 * destroy it inside done */
static void close_after_answer(void **state)
{
	(void)state;
	gh_client_t *c = client(&lim);
	struct gh_buf req = {0};
	char got[4096];
	seen.destroy_in_done = true;
	seen.self = &c;
	send_get(c, &req, "/");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	serve_text(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
	run_until(&seen.dones, 5);
	assert_int_equal(seen.dones, 1);
	assert_false(seen.keep);
	assert_null(c); /* destroyed in done */
	assert_int_equal(seen.errors, 0);
	close(fd);
	gh_buf_free(&req);
}

/* an interim 103 skipped; a chunked body in pieces, to the body callback */
static void chunked_answer(void **state)
{
	(void)state;
	gh_client_t *c = client(&lim);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/c");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	serve_text(fd, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n");
	serve_text(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
	serve_text(fd, "lo\r\n6\r\n world\r\n");
	serve_text(fd, "0\r\n\r\n");
	run_until(&seen.dones, 5);
	assert_int_equal(seen.dones, 1);
	assert_int_equal(seen.heads, 1); /* the 103 is not the answer */
	assert_int_equal(seen.status, 200);
	assert_true(seen.keep);
	assert_int_equal(gh_buf_size(&seen.body), 11);
	assert_memory_equal(gh_buf_data(&seen.body), "hello world", 11);
	gh_client_destroy(&c);
	close(fd);
	gh_buf_free(&req);
}

/* the same body into the owner's buffer, framed chunked again there (as ggated relays it) */
static struct gh_buf sink;
static void head_to_sink(gh_client_t *c, void *arg)
{
	on_head(c, arg);
	gh_client_body_to(c, &sink, GH_FRAME_CHUNKED);
}

static void chunked_into_buffer(void **state)
{
	(void)state;
	struct gh_client_ops o = ops;
	o.head = head_to_sink;
	gh_client_t *c = gh_client_create(base, "127.0.0.1", port, &lim, &o, NULL);
	assert_non_null(c);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/c");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	serve_text(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
	run_until(&seen.dones, 5);
	assert_int_equal(seen.dones, 1);
	assert_int_equal(gh_buf_size(&seen.body), 0); /* nothing to the callback */
	const char want[] = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
	assert_int_equal(gh_buf_size(&sink), sizeof(want) - 1);
	assert_memory_equal(gh_buf_data(&sink), want, sizeof(want) - 1);
	gh_client_destroy(&c);
	gh_buf_free(&sink);
	close(fd);
	gh_buf_free(&req);
}

/* a head that never ends, past 64 KiB: refused as a bad answer before it is whole, the
 * connection closed */
static void head_too_big(void **state)
{
	(void)state;
	gh_client_t *c = client(&lim);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/big");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	serve_text(fd, "HTTP/1.1 200 OK\r\n");
	char line[1024];
	memset(line, 'a', sizeof(line));
	memcpy(line, "X-Pad: ", 7);
	line[sizeof(line) - 2] = '\r';
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 80 && !seen.errors; i++) { /* 80 KiB of header lines at most */
		ssize_t w = write(fd, line, sizeof(line));
		(void)w;
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	run_until(&seen.errors, 5);
	assert_int_equal(seen.errors, 1);
	assert_int_equal(seen.heads, 0);
	assert_true(seen.err.request);
	assert_false(seen.err.answered);
	assert_string_equal(seen.err.why, "bad answer");
	assert_true(gh_client_closed(c));
	/* the server sees the close */
	char b[4096];
	ssize_t r;
	for (int i = 0; i < 2000; i++) {
		r = read(fd, b, sizeof(b));
		if (r == 0 || (r < 0 && errno != EAGAIN))
			break;
		usleep(1000);
	}
	assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
	gh_client_destroy(&c);
	close(fd);
	gh_buf_free(&req);
}

/* the server closes in the middle of the body: error, after head; before any answer: error
 * with no head */
static void closed_mid_answer(void **state)
{
	(void)state;
	gh_client_t *c = client(&lim);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/cut");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	serve_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..");
	run_until(&seen.heads, 5);
	close(fd);
	run_until(&seen.errors, 5);
	assert_int_equal(seen.heads, 1);
	assert_int_equal(seen.dones, 0);
	assert_int_equal(seen.errors, 1);
	assert_true(seen.err.request && seen.err.reached && seen.err.answered);
	assert_false(seen.err.timeout);
	assert_string_equal(seen.err.why, "answer cut short");
	assert_int_equal(gh_buf_size(&seen.body), 10);
	gh_client_destroy(&c);

	gh_buf_free(&seen.body);
	memset(&seen, 0, sizeof(seen));
	c = client(&lim);
	send_get(c, &req, "/none");
	fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	close(fd);
	run_until(&seen.errors, 5);
	assert_int_equal(seen.errors, 1);
	assert_int_equal(seen.heads, 0);
	assert_true(seen.err.request && seen.err.reached && !seen.err.answered);
	assert_string_equal(seen.err.why, "no answer");
	gh_client_destroy(&c);
	gh_buf_free(&req);
}

/* a server that takes the request and says nothing: timed out after answer_ms */
static void answer_timeout(void **state)
{
	(void)state;
	struct gh_client_limits l = {.connect_ms = 2000, .answer_ms = 150};
	gh_client_t *c = client(&l);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/slow");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	double t0 = now_s();
	run_until(&seen.errors, 5);
	double dt = now_s() - t0;
	assert_int_equal(seen.errors, 1);
	assert_true(seen.err.timeout && seen.err.connected && seen.err.reached);
	assert_string_equal(seen.err.why, "timed out");
	assert_true(dt > 0.1 && dt < 2.0);
	gh_client_destroy(&c);
	close(fd);
	gh_buf_free(&req);
}

/* an idle connection closed after idle_ms */
static void idle_timeout(void **state)
{
	(void)state;
	struct gh_client_limits l = {.connect_ms = 2000, .answer_ms = 2000, .idle_ms = 150};
	gh_client_t *c = client(&l);
	int fd = serve_accept();
	double t0 = now_s();
	run_until(&seen.errors, 5);
	double dt = now_s() - t0;
	assert_int_equal(seen.errors, 1);
	assert_false(seen.err.request);
	assert_true(seen.err.timeout);
	assert_true(dt > 0.1 && dt < 2.0);
	gh_client_destroy(&c);
	close(fd);
}

/* a server whose accept queue is full drops the connection's SYN: connect timed out */
static void connect_timeout(void **state)
{
	(void)state;
	int l2 = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(l2, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l2, 0), 0);
	assert_int_equal(getsockname(l2, (struct sockaddr *)&a, &len), 0);
	int fill[4];
	for (int i = 0; i < 4; i++) { /* the queue filled, never accepted */
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		(void)connect(fill[i], (struct sockaddr *)&a, sizeof(a)); /* EINPROGRESS */
	}
	usleep(100000);
	struct gh_client_limits l = {.connect_ms = 200, .answer_ms = 5000};
	gh_client_t *c = gh_client_create(base, "127.0.0.1", ntohs(a.sin_port), &l, &ops, NULL);
	assert_non_null(c);
	struct gh_buf req = {0};
	send_get(c, &req, "/");
	run_until(&seen.errors, 5);
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(l2);
	assert_int_equal(seen.errors, 1);
	if (seen.err.connected) {
		/* this kernel let the connection in after all: its request timed out then */
		print_message("connect completed despite the full queue: not a connect timeout\n");
		assert_true(seen.err.timeout);
	} else {
		assert_true(seen.err.timeout && !seen.err.reached && seen.err.request);
		assert_string_equal(seen.err.why, "connect timed out");
	}
	gh_client_destroy(&c);
	gh_buf_free(&req);
}

/* a body over 4 MiB into a buffer nobody drains: the client stops reading (the server's
 * writes back up) until the owner empties the buffer and resumes it */
static void head_to_sink_plain(gh_client_t *c, void *arg)
{
	on_head(c, arg);
	gh_client_body_to(c, &sink, GH_FRAME_LENGTH);
}

static int flushes;
static void count_flush(gh_client_t *c, void *arg)
{
	(void)c;
	(void)arg;
	flushes++;
}

static void back_pressure(void **state)
{
	(void)state;
	struct gh_client_ops o = ops;
	o.head = head_to_sink_plain;
	o.flush = count_flush;
	gh_client_t *c = gh_client_create(base, "127.0.0.1", port, &lim, &o, NULL);
	assert_non_null(c);
	struct gh_buf req = {0};
	char got[4096];
	send_get(c, &req, "/huge");
	int fd = serve_accept();
	serve_read_request(fd, got, sizeof(got));
	const size_t total = 16u << 20;
	char hdr[128];
	snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", total);
	serve_text(fd, hdr);
	static char chunk[65536];
	memset(chunk, 'x', sizeof(chunk));
	size_t at = 0;
	int stuck = 0;
	/* write until the socket stays full for a while: the client has paused */
	while (at < total && stuck < 200) {
		ssize_t w =
		    write(fd, chunk, total - at < sizeof(chunk) ? total - at : sizeof(chunk));
		if (w > 0) {
			at += (size_t)w;
			stuck = 0;
		} else {
			stuck++;
			usleep(1000);
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_true(at < total); /* the client stopped taking it */
	assert_int_equal(seen.dones, 0);
	assert_true(gh_buf_size(&sink) > (4u << 20));
	assert_true(gh_buf_size(&sink) < (8u << 20)); /* bounded: not all that was sent */
	assert_true(flushes > 0);
	/* the owner drains its buffer and resumes, and so on to the end */
	size_t taken = 0;
	while (!seen.dones && !seen.errors) {
		taken += gh_buf_size(&sink);
		gh_buf_clear(&sink);
		gh_client_resume(c);
		if (at < total) {
			ssize_t w = write(fd, chunk,
					  total - at < sizeof(chunk) ? total - at : sizeof(chunk));
			if (w > 0)
				at += (size_t)w;
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	taken += gh_buf_size(&sink);
	assert_int_equal(seen.errors, 0);
	assert_int_equal(seen.dones, 1);
	assert_int_equal(taken, total);
	gh_client_destroy(&c);
	gh_buf_free(&sink);
	close(fd);
	gh_buf_free(&req);
}

/* names are not resolved; a port nobody listens on is refused (at once or through error) */
static void refused(void **state)
{
	(void)state;
	errno = 0;
	assert_null(gh_client_create(base, "localhost", port, &lim, &ops, NULL));
	assert_int_equal(errno, EINVAL);
	int l2 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(l2, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(l2, (struct sockaddr *)&a, &len), 0);
	gh_client_t *c = gh_client_create(base, "127.0.0.1", ntohs(a.sin_port), &lim, &ops, NULL);
	if (c) {
		run_until(&seen.errors, 5);
		assert_int_equal(seen.errors, 1);
		assert_false(seen.err.connected);
		assert_string_equal(seen.err.why, "connect failed");
		gh_client_destroy(&c);
	} else {
		assert_int_equal(errno, ECONNREFUSED);
		assert_int_equal(seen.errors, 0); /* a call that fails calls nothing */
	}
	close(l2);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* the server's writes to a connection the client cut */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(keep_alive_reuse, setup, teardown),
	    cmocka_unit_test_setup_teardown(close_after_answer, setup, teardown),
	    cmocka_unit_test_setup_teardown(chunked_answer, setup, teardown),
	    cmocka_unit_test_setup_teardown(chunked_into_buffer, setup, teardown),
	    cmocka_unit_test_setup_teardown(head_too_big, setup, teardown),
	    cmocka_unit_test_setup_teardown(closed_mid_answer, setup, teardown),
	    cmocka_unit_test_setup_teardown(answer_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(idle_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(connect_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(back_pressure, setup, teardown),
	    cmocka_unit_test_setup_teardown(refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

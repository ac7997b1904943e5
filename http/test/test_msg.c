/* test_msg: one direction of an HTTP connection (http/msg.c over http-parser): where
 * feeding stops, which headers go on, how a body is framed for the next hop, the limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/msg.h"

/* feed all of s (one byte at a time when bytewise), stopping at the head to send the body
 * to out framed as the next hop wants (same as it came); returns the bytes used */
static size_t feed_all(struct gh_msg *m, const char *s, size_t n, bool bytewise, struct gh_buf *out)
{
	size_t at = 0;
	while (at < n && m->state != GH_MSG_DONE && m->state != GH_MSG_ERROR) {
		size_t k = bytewise ? 1 : n - at;
		size_t used = 0;
		do {
			enum gh_msg_state before = m->state;
			used = gh_msg_feed(m, s + at, k);
			at += used;
			k -= used;
			if (m->state == GH_MSG_BODY && before != GH_MSG_BODY) {
				m->out = out;
				m->out_frame = m->in;
			}
			if (!used && m->state == before)
				break; /* it wants more */
		} while (k && m->state != GH_MSG_DONE && m->state != GH_MSG_ERROR);
		if (!used && k && m->state != GH_MSG_BODY)
			break;
	}
	return at;
}

static bool has(const struct gh_buf *b, const char *s)
{
	size_t n = strlen(s), len = gh_buf_size(b);
	const char *p = gh_buf_data(b);
	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (memcmp(p + i, s, n) == 0)
			return true;
	return false;
}

static void get_with_hop_headers(void **state)
{
	(void)state;
	static const char req[] = "GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, "
				  "Foo\r\nKeep-Alive: 5\r\nX-One: 1\r\nTE: trailers\r\n\r\n";
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct gh_msg m;
		struct gh_buf out = {0};
		gh_msg_init(&m, HTTP_REQUEST, 8192, 0);
		size_t n = feed_all(&m, req, strlen(req), bytewise, &out);
		assert_int_equal(n, strlen(req));
		assert_int_equal(m.state, GH_MSG_DONE);
		assert_string_equal(gh_msg_method(&m), "GET");
		assert_int_equal(gh_buf_size(&m.target), strlen("/a/b?x=1"));
		assert_memory_equal(gh_buf_data(&m.target), "/a/b?x=1", 8);
		assert_int_equal(gh_buf_size(&m.hdrs), strlen("Host: h\r\nX-One: 1\r\n"));
		assert_memory_equal(gh_buf_data(&m.hdrs), "Host: h\r\nX-One: 1\r\n",
				    gh_buf_size(&m.hdrs));
		assert_int_equal(m.in, GH_FRAME_NONE);
		assert_true(gh_msg_keep_alive(&m));
		assert_true(gh_msg_idempotent(&m));
		assert_int_equal(gh_buf_size(&out), 0);
		gh_msg_free(&m);
		gh_buf_free(&out);
	}
}

static void post_length_and_pipelining(void **state)
{
	(void)state;
	static const char two[] = "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
				  "GET /next HTTP/1.1\r\n\r\n";
	struct gh_msg m;
	struct gh_buf out = {0};
	gh_msg_init(&m, HTTP_REQUEST, 8192, 100);
	size_t n = feed_all(&m, two, strlen(two), false, &out);
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_false(gh_msg_idempotent(&m));
	assert_int_equal(m.in, GH_FRAME_LENGTH);
	assert_int_equal(m.length, 5);
	assert_int_equal(gh_buf_size(&out), 5);
	assert_memory_equal(gh_buf_data(&out), "hello", 5);
	/* the second request is left for after the first is answered */
	assert_string_equal(two + n, "GET /next HTTP/1.1\r\n\r\n");
	struct gh_buf fh = {0};
	m.out_frame = GH_FRAME_LENGTH;
	assert_int_equal(gh_msg_frame_header(&m, &fh), 0);
	assert_int_equal(gh_buf_size(&fh), strlen("Content-Length: 5\r\n"));
	gh_msg_next(&m);
	gh_buf_clear(&out);
	size_t n2 = feed_all(&m, two + n, strlen(two + n), false, &out);
	assert_int_equal(n2, strlen(two + n));
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_memory_equal(gh_buf_data(&m.target), "/next", 5);
	gh_msg_free(&m);
	gh_buf_free(&out);
	gh_buf_free(&fh);
}

static void chunked_framed_again(void **state)
{
	(void)state;
	static const char req[] =
	    "PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: "
	    "100-continue\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: "
	    "t\r\n\r\n";
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct gh_msg m;
		struct gh_buf out = {0};
		gh_msg_init(&m, HTTP_REQUEST, 8192, 100);
		assert_int_equal(feed_all(&m, req, strlen(req), bytewise, &out), strlen(req));
		assert_int_equal(m.state, GH_MSG_DONE);
		assert_true(m.expect_continue);
		assert_int_equal(gh_buf_size(&m.hdrs), 0); /* both dropped */
		assert_int_equal(m.in, GH_FRAME_CHUNKED);
		/* re-chunked (chunk boundaries may differ when bytewise), decoded body abcde */
		assert_true(has(&out, "0\r\n\r\n"));
		assert_false(has(&out, "X-Trailer"));
		assert_false(has(&out, "ext"));
		assert_int_equal(m.body_bytes, 5);
		gh_msg_free(&m);
		gh_buf_free(&out);
	}
}

static void limits(void **state)
{
	(void)state;
	struct gh_msg m;
	struct gh_buf out = {0};
	char big[4096];
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Big: %0*d\r\n\r\n", 3000, 0);
	gh_msg_init(&m, HTTP_REQUEST, 1024, 100);
	feed_all(&m, big, strlen(big), false, &out);
	assert_int_equal(m.state, GH_MSG_ERROR);
	assert_int_equal(m.status, 431);
	gh_msg_free(&m);
	/* bytewise, so that no single callback exceeds it: the head count does */
	gh_msg_init(&m, HTTP_REQUEST, 1024, 100);
	feed_all(&m, big, strlen(big), true, &out);
	assert_int_equal(m.state, GH_MSG_ERROR);
	assert_int_equal(m.status, 431);
	gh_msg_free(&m);

	static const char cl[] = "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
	gh_msg_init(&m, HTTP_REQUEST, 1024, 100);
	feed_all(&m, cl, strlen(cl), false, &out);
	assert_int_equal(m.state, GH_MSG_ERROR);
	assert_int_equal(m.status, 413);
	gh_msg_free(&m);

	char ch[512];
	snprintf(ch, sizeof(ch),
		 "POST / HTTP/1.1\r\nTransfer-Encoding: "
		 "chunked\r\n\r\n64\r\n%0100d\r\n1\r\nx\r\n0\r\n\r\n",
		 0);
	gh_msg_init(&m, HTTP_REQUEST, 1024, 100);
	feed_all(&m, ch, strlen(ch), false, &out);
	assert_int_equal(m.state, GH_MSG_ERROR);
	assert_int_equal(m.status, 413);
	gh_msg_free(&m);

	static const char *const bad[] = {
	    "GARBAGE\r\n\r\n",
	    "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
	    "GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gh_msg_init(&m, HTTP_REQUEST, 1024, 100);
		feed_all(&m, bad[i], strlen(bad[i]), false, &out);
		assert_int_equal(m.state, GH_MSG_ERROR);
		assert_true(m.status >= 400 && m.status < 600);
		gh_msg_free(&m);
	}
	gh_buf_free(&out);
}

static void http10_keep_alive(void **state)
{
	(void)state;
	struct gh_msg m;
	struct gh_buf out = {0};
	static const char a[] = "GET / HTTP/1.0\r\n\r\n";
	gh_msg_init(&m, HTTP_REQUEST, 1024, 0);
	feed_all(&m, a, strlen(a), false, &out);
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_false(gh_msg_keep_alive(&m));
	gh_msg_free(&m);
	static const char b[] = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
	gh_msg_init(&m, HTTP_REQUEST, 1024, 0);
	feed_all(&m, b, strlen(b), false, &out);
	assert_true(gh_msg_keep_alive(&m));
	gh_msg_free(&m);
	static const char c[] = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
	gh_msg_init(&m, HTTP_REQUEST, 1024, 0);
	feed_all(&m, c, strlen(c), false, &out);
	assert_false(gh_msg_keep_alive(&m));
	gh_msg_free(&m);
	static const char u[] =
	    "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
	gh_msg_init(&m, HTTP_REQUEST, 1024, 0);
	feed_all(&m, u, strlen(u), false, &out);
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_true(m.has_upgrade);
	assert_false(gh_msg_keep_alive(&m)); /* never upgraded: closed after the answer */
	gh_msg_free(&m);
	gh_buf_free(&out);
}

static void responses(void **state)
{
	(void)state;
	struct gh_msg m;
	struct gh_buf out = {0};
	/* to HEAD: no body whatever Content-Length says */
	static const char h[] = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nServer: x\r\n\r\n";
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	m.skip_body = true;
	assert_int_equal(feed_all(&m, h, strlen(h), false, &out), strlen(h));
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_true(m.has_length);
	assert_int_equal(m.length, 1234);
	assert_int_equal(m.p.status_code, 200);
	assert_memory_equal(gh_buf_data(&m.target), "OK", 2);
	assert_memory_equal(gh_buf_data(&m.hdrs), "Server: x\r\n", 11);
	gh_msg_free(&m);
	/* to the close: whole when the replica closes */
	static const char e[] = "HTTP/1.0 200 OK\r\nServer: y\r\n\r\nabc";
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	assert_int_equal(feed_all(&m, e, strlen(e), false, &out), strlen(e));
	assert_int_equal(m.state, GH_MSG_BODY);
	assert_int_equal(m.in, GH_FRAME_EOF);
	gh_msg_feed(&m, NULL, 0);
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_int_equal(gh_buf_size(&out), 3);
	assert_false(gh_msg_keep_alive(&m));
	gh_msg_free(&m);
	/* cut short: an error */
	static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	feed_all(&m, cut, strlen(cut), false, &out);
	assert_int_equal(m.state, GH_MSG_BODY);
	gh_msg_feed(&m, NULL, 0);
	assert_int_equal(m.state, GH_MSG_ERROR);
	gh_msg_free(&m);
	/* 204: no body */
	static const char nc[] = "HTTP/1.1 204 No Content\r\n\r\n";
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	feed_all(&m, nc, strlen(nc), false, &out);
	assert_int_equal(m.state, GH_MSG_DONE);
	assert_true(gh_msg_keep_alive(&m));
	gh_msg_free(&m);
	gh_buf_free(&out);
}

/* gh_msg_header: a kept header's value, any case, trimmed; a dropped or missing one: NULL */
static void header_lookup(void **state)
{
	(void)state;
	struct gh_msg m;
	gh_msg_init(&m, HTTP_REQUEST, 4096, 0);
	static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\nauthorization:  Bearer xyz \r\n"
				  "Connection: keep-alive\r\nX-Authorization: no\r\n\r\n";
	gh_msg_feed(&m, req, sizeof(req) - 1);
	size_t len = 0;
	const char *v = gh_msg_header(&m, "Authorization", &len);
	assert_non_null(v);
	assert_int_equal(len, 10);
	assert_memory_equal(v, "Bearer xyz", 10);
	assert_null(gh_msg_header(&m, "Connection", &len));
	assert_null(gh_msg_header(&m, "Cookie", &len));
	v = gh_msg_header(&m, "host", &len);
	assert_true(v && len == 1 && *v == 'a');
	gh_msg_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(get_with_hop_headers), cmocka_unit_test(post_length_and_pipelining),
	    cmocka_unit_test(chunked_framed_again), cmocka_unit_test(limits),
	    cmocka_unit_test(http10_keep_alive),    cmocka_unit_test(responses),
	    cmocka_unit_test(header_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

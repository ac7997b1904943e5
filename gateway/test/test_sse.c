/* test_sse: what ggated adds to an event stream (sse.c): the Content-Type that makes one, where
 * an event ends (LF, CRLF and CR line ends), the keep-alive comment and the error event framed
 * chunked and raw, an event the replica had begun ended before the error event, and a body
 * of a given length left untouched; and http/msg.c's body tail, which says where the stream
 * is, across bodies fed a byte at a time and chunked. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/sse.h"

static bool is_sse(const char *ctype_line)
{
	char head[256];
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n%s\r\n", ctype_line);
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	assert_true(gh_msg_feed(&m, head, strlen(head)) > 0);
	bool r = gw_sse_is(&m);
	gh_msg_free(&m);
	return r;
}

static void content_types(void **state)
{
	(void)state;
	assert_true(is_sse("Content-Type: text/event-stream\r\n"));
	assert_true(is_sse("Content-Type: Text/Event-Stream; charset=utf-8\r\n"));
	assert_true(is_sse("content-type:   text/event-stream\r\n"));
	assert_false(is_sse("Content-Type: text/event-streams\r\n"));
	assert_false(is_sse("Content-Type: application/json\r\n"));
	assert_false(is_sse("X-Type: text/event-stream\r\n"));
}

static void boundaries(void **state)
{
	(void)state;
	assert_true(gw_sse_at_boundary("", 0));
	assert_true(gw_sse_at_boundary("a\n\n", 3));
	assert_true(gw_sse_at_boundary("\r\n\r\n", 4));
	assert_true(gw_sse_at_boundary("x\r\r", 3));
	assert_false(gw_sse_at_boundary("ta: x", 4));
	assert_false(gw_sse_at_boundary("bc\n", 3)); /* a line ended, not its event */
	assert_false(gw_sse_at_boundary("\n\r\n", 3));
}

static void keepalive_framed(void **state)
{
	(void)state;
	struct gh_buf b = {0};
	assert_int_equal(gw_sse_keepalive(&b, GH_FRAME_CHUNKED), 0);
	assert_int_equal(gh_buf_size(&b), 19);
	assert_memory_equal(gh_buf_data(&b), "e\r\n: keep-alive\n\n\r\n", 19);
	gh_buf_clear(&b);
	assert_int_equal(gw_sse_keepalive(&b, GH_FRAME_EOF), 0);
	assert_memory_equal(gh_buf_data(&b), ": keep-alive\n\n", 14);
	gh_buf_clear(&b);
	errno = 0;
	assert_int_equal(gw_sse_keepalive(&b, GH_FRAME_LENGTH), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(gh_buf_size(&b), 0);
	gh_buf_free(&b);
}

static char *text(struct gh_buf *b)
{
	assert_int_equal(gh_buf_add(b, "", 1), 0);
	return (char *)gh_buf_data(b);
}

static void error_event(void **state)
{
	(void)state;
	static const char ev[] = "data: {\"error\": {\"message\": \"upstream replica 10.0.0.1:80 "
				 "(answer cut short) closed mid-stream\", \"type\": "
				 "\"upstream_error\"}}\n\n";
	struct gh_buf b = {0};
	assert_int_equal(
	    gw_sse_error(&b, GH_FRAME_EOF, "}\n\n", 3, "replica 10.0.0.1:80 (answer cut short)"),
	    0);
	assert_string_equal(text(&b), ev);
	/* mid-line: the line and its event end first */
	gh_buf_clear(&b);
	assert_int_equal(
	    gw_sse_error(&b, GH_FRAME_EOF, "a: {", 4, "replica 10.0.0.1:80 (answer cut short)"), 0);
	assert_true(strncmp(text(&b), "\n\ndata: {\"error\"", 16) == 0);
	/* after a line, within an event: one blank line */
	gh_buf_clear(&b);
	assert_int_equal(gw_sse_error(&b, GH_FRAME_EOF, "x\"}\n", 4, "r"), 0);
	assert_true(strncmp(text(&b), "\ndata: {", 8) == 0);
	/* chunked: one chunk of the right size, and no last chunk */
	gh_buf_clear(&b);
	assert_int_equal(
	    gw_sse_error(&b, GH_FRAME_CHUNKED, "", 0, "replica 10.0.0.1:80 (answer cut short)"), 0);
	char want[256];
	snprintf(want, sizeof(want), "%zx\r\n%s\r\n", strlen(ev), ev);
	assert_string_equal(text(&b), want);
	assert_null(strstr(gh_buf_data(&b), "0\r\n\r\n"));
	/* quotes, backslashes and control bytes of the upstream's word never break the JSON */
	gh_buf_clear(&b);
	assert_int_equal(gw_sse_error(&b, GH_FRAME_EOF, "", 0, "a\"b\\c\nd"), 0);
	assert_non_null(strstr(text(&b), "upstream abcd closed"));
	gh_buf_clear(&b);
	assert_int_equal(gw_sse_error(&b, GH_FRAME_LENGTH, "", 0, "r"), -1);
	gh_buf_free(&b);
}

/* an answer's body, fed in pieces of `step` bytes: its tail follows it */
static void tail_of(const char *answer, size_t step, const char *want_tail, bool boundary)
{
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	size_t n = strlen(answer), at = 0;
	while (at < n && m.state != GH_MSG_DONE) {
		size_t k = n - at < step ? n - at : step;
		size_t used = gh_msg_feed(&m, answer + at, k);
		at += used;
		if (!used && m.state == GH_MSG_BODY)
			continue;
		assert_true(m.state != GH_MSG_ERROR);
	}
	size_t nt = m.body_bytes < 4 ? (size_t)m.body_bytes : 4;
	assert_int_equal(nt, strlen(want_tail));
	assert_memory_equal(m.body_tail + 4 - nt, want_tail, nt);
	assert_int_equal(gw_sse_at_boundary(m.body_tail + 4 - nt, nt), boundary);
	gh_msg_free(&m);
}

static void body_tails(void **state)
{
	(void)state;
	const char *len = "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\ndata: one\n\ndata:";
	tail_of(len, 1, "ata:", false);
	tail_of(len, 1000, "ata:", false);
	const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "5\r\ndata:\r\n6\r\n one\n\n\r\n0\r\n\r\n";
	tail_of(chunked, 1, "ne\n\n", true);
	tail_of(chunked, 7, "ne\n\n", true);
	tail_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n\n\n", 3, "\n\n", true);
	tail_of("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 3, "", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(content_types),	cmocka_unit_test(boundaries),
	    cmocka_unit_test(keepalive_framed), cmocka_unit_test(error_event),
	    cmocka_unit_test(body_tails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

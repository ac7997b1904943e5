/* test_lazy.c: lazy staging's range-to-chunks arithmetic and its request and reply frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/lazy.h"

#define C GP_CHUNK_SIZE

static void chunks_of(uint64_t size, uint64_t off, uint64_t len, uint64_t k0, uint64_t k1)
{
	uint64_t a = 99, b = 99;
	assert_int_equal(gp_lazy_chunks(size, off, len, C, &a, &b), 0);
	assert_int_equal(a, k0);
	assert_int_equal(b, k1);
}

static void range_to_chunks(void **state)
{
	(void)state;
	uint64_t size = 10u * (1u << 20); /* 2.5 chunks */
	chunks_of(size, 0, 0, 0, 0);
	chunks_of(size, 0, 1, 0, 1);
	chunks_of(size, 0, C, 0, 1);
	chunks_of(size, 0, C + 1, 0, 2);
	chunks_of(size, C - 1, 2, 0, 2); /* one byte each side of a boundary */
	chunks_of(size, C, C, 1, 2);
	chunks_of(size, 2 * C, size - 2 * C, 2, 3); /* the short last chunk */
	chunks_of(size, 0, size, 0, 3);
	chunks_of(size, size - 1, 1, 2, 3);
	chunks_of(size, size, 0, 2, 2);
	chunks_of(3 * (uint64_t)C, 3 * (uint64_t)C - 1, 1, 2, 3);
	uint64_t a, b;
	errno = 0;
	assert_int_equal(gp_lazy_chunks(size, size - 1, 2, C, &a, &b), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(gp_lazy_chunks(size, size + 1, 0, C, &a, &b), -1);
	assert_int_equal(gp_lazy_chunks(size, 1, UINT64_MAX, C, &a, &b), -1);
	assert_int_equal(gp_lazy_chunks(UINT64_MAX, UINT64_MAX - 1, 1, C, &a, &b), 0);
	assert_int_equal(b, UINT64_MAX / C + 1);
	assert_int_equal(gp_lazy_chunks(size, 0, 1, 0, &a, &b), -1);
}

static void request_frames(void **state)
{
	(void)state;
	uint8_t buf[GP_LAZY_REQ_LEN];
	struct gp_lazy_req q = {12345678901ull, 77}, r;
	gp_lazy_req_encode(&q, buf);
	assert_int_equal(gp_lazy_req_decode(buf, sizeof(buf), &r), 0);
	assert_true(r.off == q.off && r.len == q.len);
	assert_int_equal(gp_lazy_req_decode(buf, sizeof(buf) - 1, &r), -1);
	assert_int_equal(errno, EBADMSG);
	uint8_t bad[GP_LAZY_REQ_LEN];
	memcpy(bad, buf, sizeof(bad));
	bad[0] ^= 1; /* magic */
	assert_int_equal(gp_lazy_req_decode(bad, sizeof(bad), &r), -1);
	memcpy(bad, buf, sizeof(bad));
	bad[5] = 1; /* flags: none defined */
	assert_int_equal(gp_lazy_req_decode(bad, sizeof(bad), &r), -1);
	q = (struct gp_lazy_req){UINT64_MAX - 5, 10}; /* off + len overflows */
	gp_lazy_req_encode(&q, buf);
	assert_int_equal(gp_lazy_req_decode(buf, sizeof(buf), &r), -1);
}

static void reply_frames(void **state)
{
	(void)state;
	uint8_t buf[GP_LAZY_REP_LEN];
	struct gp_lazy_rep p = {.status = EBADMSG, .fetched = 4194304}, r;
	strcpy(p.msg, "chunk 3 of 'm.gguf' does not match its hash: refused");
	gp_lazy_rep_encode(&p, buf);
	assert_int_equal(gp_lazy_rep_decode(buf, sizeof(buf), &r), 0);
	assert_int_equal(r.status, EBADMSG);
	assert_true(r.fetched == 4194304);
	assert_string_equal(r.msg, p.msg);
	/* a message without its NUL is cut, never read past */
	memset(buf + 16, 'x', GP_LAZY_MSG_LEN);
	assert_int_equal(gp_lazy_rep_decode(buf, sizeof(buf), &r), 0);
	assert_int_equal(strlen(r.msg), GP_LAZY_MSG_LEN - 1);
	buf[6] = 0x7f; /* a status no errno has */
	assert_int_equal(gp_lazy_rep_decode(buf, sizeof(buf), &r), -1);
	assert_int_equal(gp_lazy_rep_decode(buf, 10, &r), -1);
}

static void outside_a_job(void **state)
{
	(void)state;
	unsetenv(GP_LAZY_ENV);
	gp_error_t err = {{0}};
	uint64_t got = 5;
	/* no stager to ask: the file is read as it is */
	assert_int_equal(gp_lazy_fetch(0, 0, 10, &got, &err), 0);
	assert_true(got == 0);
	setenv(GP_LAZY_ENV, "@gpool-stage.test.nobody-listens", 1);
	assert_int_equal(gp_lazy_fetch(0, 0, 10, &got, &err), -1);
	assert_non_null(strstr(err.text, "cannot reach"));
	unsetenv(GP_LAZY_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(range_to_chunks),
	    cmocka_unit_test(request_frames),
	    cmocka_unit_test(reply_frames),
	    cmocka_unit_test(outside_a_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

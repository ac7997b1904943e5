/* test_frame.c: the exec-proxy's frames: round trips, partial input, bad input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "launch/frame.h"

static void round_trip(void **state)
{
	gp_buf_t b = {0};
	char *argv[] = {"orted", "-mca", "ess", "\"env\"", NULL};
	assert_int_equal(gp_frame_put(&b, GP_FRAME_AUTH, "s3cret", 6), 0);
	assert_int_equal(gp_frame_put_argv(&b, argv), 0);
	assert_int_equal(gp_frame_put_u32(&b, GP_FRAME_EXIT, 0x0300), 0);
	assert_int_equal(gp_frame_put(&b, GP_FRAME_HOLD, NULL, 0), 0);
	struct gp_frame f;
	size_t off = 0;
	int k = gp_frame_parse(b.data, b.len, &f);
	assert_int_equal(k, GP_FRAME_HDR + 6);
	assert_int_equal(f.type, GP_FRAME_AUTH);
	assert_memory_equal(f.data, "s3cret", 6);
	off += (size_t)k;
	k = gp_frame_parse(b.data + off, b.len - off, &f);
	assert_true(k > 0);
	char **v = gp_frame_argv(&f);
	assert_non_null(v);
	for (int i = 0; argv[i]; i++)
		assert_string_equal(v[i], argv[i]);
	assert_null(v[4]);
	gp_frame_argv_free(v);
	off += (size_t)k;
	k = gp_frame_parse(b.data + off, b.len - off, &f);
	uint32_t st;
	assert_int_equal(gp_frame_u32(&f, &st), 0);
	assert_int_equal(st, 0x0300);
	off += (size_t)k;
	k = gp_frame_parse(b.data + off, b.len - off, &f);
	assert_int_equal(k, GP_FRAME_HDR);
	assert_int_equal(f.type, GP_FRAME_HOLD);
	assert_int_equal(f.len, 0);
	off += (size_t)k;
	assert_int_equal(off, b.len);
	gp_buf_release(&b);
}

static void partial_input(void **state)
{
	gp_buf_t b = {0};
	assert_int_equal(gp_frame_put(&b, GP_FRAME_OUT, "hello", 5), 0);
	struct gp_frame f;
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(gp_frame_parse(b.data, n, &f), 0);
	assert_int_equal(gp_frame_parse(b.data, b.len, &f), (int)b.len);
	gp_buf_release(&b);
}

static void bad_input(void **state)
{
	struct gp_frame f;
	/* an unknown type */
	uint8_t unknown[8] = {0, 0, 0, 99, 0, 0, 0, 0};
	errno = 0;
	assert_int_equal(gp_frame_parse(unknown, sizeof(unknown), &f), -1);
	assert_int_equal(errno, EPROTO);
	/* a length over the limit is refused before waiting for it */
	uint8_t huge[8] = {0, 0, 0, GP_FRAME_OUT, 0x7f, 0xff, 0xff, 0xff};
	assert_int_equal(gp_frame_parse(huge, sizeof(huge), &f), -1);
	assert_int_equal(errno, EMSGSIZE);
	/* an argv that is not NUL-terminated, or empty */
	f.type = GP_FRAME_EXEC;
	f.data = (const uint8_t *)"abc";
	f.len = 3;
	assert_null(gp_frame_argv(&f));
	assert_int_equal(errno, EPROTO);
	f.len = 0;
	assert_null(gp_frame_argv(&f));
	/* a status that is not four bytes */
	uint32_t v;
	f.len = 3;
	assert_int_equal(gp_frame_u32(&f, &v), -1);
	/* too much for one frame */
	gp_buf_t b = {0};
	static uint8_t big[GP_FRAME_MAX + 1];
	assert_int_equal(gp_frame_put(&b, GP_FRAME_OUT, big, sizeof(big)), -1);
	assert_int_equal(errno, EMSGSIZE);
	gp_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(partial_input),
	    cmocka_unit_test(bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_array.c - job array specs (common/array.c): ranges, steps, limits and lists parsed,
 * bad specs refused, and indexes formatted back */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "common/array.h"

static gp_array_t a;

static void ranges(void **state)
{
	(void)state;
	assert_int_equal(gp_array_parse("0-999", &a), 0);
	assert_int_equal(a.count, 1000);
	assert_int_equal(a.min, 0);
	assert_int_equal(a.max, 999);
	assert_int_equal(a.limit, 0);
	assert_int_equal(gp_array_index(&a, 999), 999);
	assert_int_equal(gp_array_parse("0-99:5%10", &a), 0);
	assert_int_equal(a.count, 20);
	assert_int_equal(a.max, 95);
	assert_int_equal(a.limit, 10);
	assert_int_equal(gp_array_index(&a, 3), 15);
	assert_true(gp_array_has(&a, 95));
	assert_false(gp_array_has(&a, 96));
	assert_int_equal(gp_array_parse("7,1,3-5", &a), 0);
	assert_int_equal(a.count, 5);
	assert_int_equal(a.min, 1);
	assert_int_equal(a.max, 7);
	assert_int_equal(gp_array_index(&a, 0), 7);
	assert_int_equal(gp_array_index(&a, 4), 5);
	assert_int_equal(gp_array_parse("1-10:4", &a), 0); /* 1,5,9 */
	assert_int_equal(a.count, 3);
	assert_int_equal(a.max, 9);
}

static void bad(void **state)
{
	(void)state;
	const char *v[] = {"",	 "-1",	 "5-3",	     "1-5:0", "a",	 "1,",	  ",1",
			   "1-", "1:2",	 "1%",	     "1%0",   "1%x",	 "1-3,2", "0-9:2,4",
			   "1 ", "1--2", "99999999", "1%5%5", "1-5:2:3", "0x10"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		errno = 0;
		assert_int_equal(gp_array_parse(v[i], &a), -1);
		assert_int_equal(errno, EINVAL);
	}
	assert_int_equal(gp_array_parse("0-100000", &a), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(gp_array_parse("0-99999", &a), 0);
	/* steps that interleave do not overlap */
	assert_int_equal(gp_array_parse("0-9999998:2,1-9999999:2", &a), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(gp_array_parse("0-100:2,1-101:2", &a), 0);
	assert_int_equal(gp_array_parse("0-100:2,50-60:10", &a), -1);
}

static void format(void **state)
{
	(void)state;
	char buf[64];
	uint32_t v[] = {3, 4, 5, 9, 11, 12};
	gp_array_format(v, 6, buf, sizeof(buf));
	assert_string_equal(buf, "[3-5,9,11-12]");
	gp_array_format(v, 1, buf, sizeof(buf));
	assert_string_equal(buf, "3");
	uint32_t many[100];
	for (int i = 0; i < 100; i++)
		many[i] = (uint32_t)i * 2;
	gp_array_format(many, 100, buf, 20);
	assert_true(strlen(buf) < 20);
	assert_string_equal(buf + strlen(buf) - 4, "...]");
}

static void selectors(void **state)
{
	(void)state;
	uint64_t job;
	bool t;
	assert_int_equal(gp_array_selector("12", &job, &t, &a), 0);
	assert_int_equal(job, 12);
	assert_false(t);
	assert_int_equal(gp_array_selector("12_7", &job, &t, &a), 0);
	assert_true(t);
	assert_true(gp_array_has(&a, 7));
	assert_int_equal(a.count, 1);
	assert_int_equal(gp_array_selector("12_[3-5,9]", &job, &t, &a), 0);
	assert_int_equal(a.count, 4);
	assert_true(gp_array_has(&a, 9));
	assert_false(gp_array_has(&a, 6));
	const char *v[] = {"",		"0",	  "x",	  "12_", "12_[",  "12_[3-5",
			   "12_[3-5]x", "12_3-5", "12_a", "_3",	 "12__3", "12_[]"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(gp_array_selector(v[i], &job, &t, &a), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ranges),
	    cmocka_unit_test(bad),
	    cmocka_unit_test(format),
	    cmocka_unit_test(selectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

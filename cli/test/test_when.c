/* test_when.c - the time forms of sacct and sbatch --begin (when.c) against instants
 * computed by hand, and the forms refused */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <time.h>

#include "cli/lib/when.h"

static void forms(void **state)
{
	gp_error_t err;
	double t, now = 1796212668.0; /* 2026-12-02 11:57:48 UTC */
	setenv("TZ", "UTC", 1);
	tzset();
	assert_int_equal(gp_when_parse("now", now, &t, &err), 0);
	assert_true(t == now);
	assert_int_equal(gp_when_parse("now-2hours", now, &t, &err), 0);
	assert_true(t == now - 7200);
	assert_int_equal(gp_when_parse("now-1days", now, &t, &err), 0);
	assert_true(t == now - 86400);
	assert_int_equal(gp_when_parse("2026-12-02", now, &t, &err), 0);
	assert_true(t == 1796169600.0);
	assert_int_equal(gp_when_parse("2026-12-02T13:05", now, &t, &err), 0);
	assert_true(t == 1796169600.0 + 13 * 3600 + 5 * 60);
	assert_int_equal(gp_when_parse("13:05:30", now, &t, &err), 0);
	assert_true(t == 1796169600.0 + 13 * 3600 + 5 * 60 + 30);
	/* sbatch --begin's forms: a bare count is seconds */
	assert_int_equal(gp_when_parse("now+60", now, &t, &err), 0);
	assert_true(t == now + 60);
	assert_int_equal(gp_when_parse("now+10minutes", now, &t, &err), 0);
	assert_true(t == now + 600);
	assert_int_equal(gp_when_parse("now+2hours", now, &t, &err), 0);
	assert_true(t == now + 7200);
	assert_int_equal(gp_when_parse("2026-12-02T13:05:07", now, &t, &err), 0);
	assert_true(t == 1796169600.0 + 13 * 3600 + 5 * 60 + 7);
	const char *bad[] = {"",       "yesterday",    "now-",	"now-3x",     "now+",
			     "now+-5", "now+5parsecs", "25:00", "2026-13-45", "12:61",
			     NULL};
	for (int i = 0; bad[i]; i++)
		assert_int_equal(gp_when_parse(bad[i], now, &t, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(forms)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

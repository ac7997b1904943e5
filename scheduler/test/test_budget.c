/* test_budget.c: a user's listings walk at most their records a second; one user's use does
 * not spend another's; a listing larger than a second's worth waits for a full bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/shell/budget.h"

static void per_user(void **state)
{
	(void)state;
	struct budget *b = budget_create(1000);
	assert_non_null(b);
	int64_t retry;
	/* a second's worth of burst, then refused with when to come back */
	assert_int_equal(budget_take(b, 1001, 600, 0, &retry), 0);
	assert_int_equal(budget_take(b, 1001, 400, 0, &retry), 0);
	assert_int_equal(budget_take(b, 1001, 100, 0, &retry), -1);
	assert_int_equal(retry, 101);
	/* another user is untouched */
	assert_int_equal(budget_take(b, 1002, 1000, 0, &retry), 0);
	/* refilled at the rate */
	assert_int_equal(budget_take(b, 1001, 100, 100, &retry), 0);
	assert_int_equal(budget_take(b, 1001, 1, 100, &retry), -1);
	/* a listing of 3 seconds' worth: taken from a full bucket, then 2 s of debt... */
	assert_int_equal(budget_take(b, 1001, 3000, 1100, &retry), 0);
	assert_int_equal(budget_take(b, 1001, 1, 1100, &retry), -1);
	assert_int_equal(budget_take(b, 1001, 1, 2000, &retry), -1);
	/* ... bounded at one second's worth */
	assert_int_equal(budget_take(b, 1001, 1, 2101, &retry), 0);
	/* no limit */
	budget_set_rate(b, 0);
	assert_int_equal(budget_take(b, 1001, 1e9, 2101, &retry), 0);
	budget_destroy(&b);
	assert_null(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(per_user),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

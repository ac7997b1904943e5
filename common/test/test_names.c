/* test_names.c - job state and vendor names (common/names.c) printed and parsed back, and
 * unknown names refused */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/names.h"

static void states(void **state)
{
	assert_string_equal(gp_job_state_name(GPOOL__JOB_STATE__OUT_OF_MEMORY), "OUT_OF_MEMORY");
	assert_int_equal(gp_job_state_parse("pd"), GPOOL__JOB_STATE__PENDING);
	assert_int_equal(gp_job_state_parse("completed"), GPOOL__JOB_STATE__COMPLETED);
	assert_int_equal(gp_job_state_parse("bogus"), -1);
	assert_true(gp_job_state_final(GPOOL__JOB_STATE__NODE_FAIL));
	assert_false(gp_job_state_final(GPOOL__JOB_STATE__REQUEUED));
	assert_false(gp_job_state_final(GPOOL__JOB_STATE__RUNNING));
	assert_string_equal(gp_vendor_name(GPOOL__VENDOR__VENDOR_AMD), "amd");
	assert_int_equal(gp_vendor_parse("NVIDIA"), GPOOL__VENDOR__VENDOR_NVIDIA);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(states)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

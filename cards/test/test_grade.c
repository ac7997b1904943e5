/* gcheck's grading rules: the thresholds, the seed's ±3.2 % and ±11.7 % cards, memory errors,
 * the spec, the fluctuation formula, threshold keys and the measurement profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "cards/grade.h"

static struct gp_card_measure card(double fluct, uint64_t errors)
{
	struct gp_card_measure m = {0};
	m.bw_mean_gbps = 400;
	m.bw_fluct_pct = fluct;
	m.mem_errors = errors;
	m.temperature_c = m.power_w = -1;
	return m;
}

static enum gp_grade grade(const struct gp_card_measure *m, char *why, size_t len)
{
	struct gp_grade_thresholds th;
	gp_grade_defaults(&th);
	return gp_grade_card(&th, m, why, len);
}

static void seed_values(void **state)
{
	char why[256];
	struct gp_card_measure m = card(3.2, 0);
	assert_int_equal(grade(&m, why, sizeof(why)), GP_GRADE_GOOD);
	assert_string_equal(why, "");
	m = card(11.7, 0);
	assert_int_equal(grade(&m, why, sizeof(why)), GP_GRADE_FAIL);
	assert_non_null(strstr(why, "11.7"));
}

static void thresholds(void **state)
{
	char why[256];
	struct gp_card_measure m = card(5.5, 0);
	assert_int_equal(grade(&m, why, sizeof(why)), GP_GRADE_WARN);
	assert_non_null(strstr(why, "5.5"));
	m = card(5.0, 0); /* "over 5 %": exactly 5 is still good */
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_GOOD);
	m = card(10.0, 0);
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_WARN);
	m = card(10.01, 0);
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_FAIL);
}

static void memory_errors(void **state)
{
	char why[256];
	struct gp_card_measure m = card(0.1, 1);
	assert_int_equal(grade(&m, why, sizeof(why)), GP_GRADE_FAIL);
	assert_string_equal(why, "1 memory errors");
	m = card(7.0, 42); /* the worse cause wins, both are named */
	assert_int_equal(grade(&m, why, sizeof(why)), GP_GRADE_FAIL);
	assert_non_null(strstr(why, "42 memory errors; bandwidth fluctuates"));
}

static void below_spec(void **state)
{
	struct gp_grade_thresholds th;
	gp_error_t err;
	char why[256];
	gp_grade_defaults(&th);
	assert_int_equal(gp_grade_set(&th, "spec_gbps", "500", &err), 0);
	struct gp_card_measure m = card(1.0, 0);
	assert_int_equal(gp_grade_card(&th, &m, why, sizeof(why)), GP_GRADE_WARN);
	assert_non_null(strstr(why, "below the spec 500"));
	m.bw_mean_gbps = 500;
	assert_int_equal(gp_grade_card(&th, &m, why, sizeof(why)), GP_GRADE_GOOD);
	m = card(1.0, 2); /* an error still fails below spec */
	assert_int_equal(gp_grade_card(&th, &m, why, sizeof(why)), GP_GRADE_FAIL);
}

static void keys(void **state)
{
	struct gp_grade_thresholds th;
	gp_error_t err;
	gp_grade_defaults(&th);
	assert_true(th.fluct_warn_pct == 5 && th.fluct_fail_pct == 10 && th.spec_gbps == 0);
	assert_int_equal(gp_grade_set_line(&th, "  fluct_fail_pct = 20 ", &err), 0);
	assert_int_equal(gp_grade_set_line(&th, "# a comment", &err), 0);
	assert_int_equal(gp_grade_set_line(&th, "", &err), 0);
	assert_true(th.fluct_fail_pct == 20);
	struct gp_card_measure m = card(11.7, 0);
	assert_int_equal(gp_grade_card(&th, &m, NULL, 0), GP_GRADE_WARN);
	assert_int_equal(gp_grade_set(&th, "fluct_warn_pct", "-1", &err), -1);
	assert_string_equal(err.text, "invalid value '-1' for 'fluct_warn_pct'");
	assert_int_equal(gp_grade_set(&th, "fluct_warn_pct", "5x", &err), -1);
	assert_int_equal(gp_grade_set(&th, "nope", "1", &err), -1);
	assert_string_equal(err.text, "unknown grade key 'nope'");
	assert_int_equal(gp_grade_set_line(&th, "fluct_warn_pct 3", &err), -1);
	assert_int_equal(gp_grade_set(&th, "fluct_warn_pct", "30", &err), 0);
	assert_int_equal(gp_grade_check(&th, &err), -1);
}

static void bw_stats(void **state)
{
	struct gp_card_measure m = {0};
	double s[] = {96, 100, 104, 100};
	assert_int_equal(gp_grade_bw_stats(s, 4, &m), 0);
	assert_true(fabs(m.bw_mean_gbps - 100) < 1e-9);
	assert_true(fabs(m.bw_fluct_pct - 4.0) < 1e-9); /* (104 - 96) / 2 / 100 */
	assert_int_equal(m.bw_samples, 4);
	assert_int_equal(gp_grade_bw_stats(s, 0, &m), -1);
	double z[] = {0, 0};
	assert_int_equal(gp_grade_bw_stats(z, 2, &m), -1);
}

static void profiles(void **state)
{
	struct gp_card_measure m;
	gp_error_t err;
	assert_int_equal(gp_grade_profile("stable", &m, &err), 0);
	assert_true(m.bw_fluct_pct == 3.2 && m.mem_errors == 0);
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_GOOD);
	assert_int_equal(gp_grade_profile("fluctuating", &m, &err), 0);
	assert_true(m.bw_fluct_pct == 11.7 && m.mem_errors == 0);
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_FAIL);
	assert_int_equal(gp_grade_profile("erroring", &m, &err), 0);
	assert_true(m.mem_errors > 0);
	assert_int_equal(grade(&m, NULL, 0), GP_GRADE_FAIL);
	assert_int_equal(gp_grade_profile("busy", &m, &err), -1);
	assert_string_equal(err.text, "invalid profile 'busy' (stable, fluctuating, erroring)");
	assert_string_equal(gp_grade_name(GP_GRADE_WARN), "warn");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(seed_values),   cmocka_unit_test(thresholds),
	    cmocka_unit_test(memory_errors), cmocka_unit_test(below_spec),
	    cmocka_unit_test(keys),	     cmocka_unit_test(bw_stats),
	    cmocka_unit_test(profiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

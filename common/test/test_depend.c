/* test_depend.c - job dependencies (common/depend.c): --dependency parsed and refused,
 * and evaluated against the states of the jobs they name */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>

#include "common/depend.h"

static gp_depend_t d;

static void parse(void **state)
{
	(void)state;
	assert_int_equal(gp_depend_parse("afterok:12", &d), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.d[0].type, GP_DEP_AFTEROK);
	assert_int_equal(d.d[0].job, 12);
	assert_false(d.any);
	assert_int_equal(gp_depend_parse("after:1:2_7,afternotok:3,afterany:4,singleton", &d), 0);
	assert_int_equal(d.n, 5);
	assert_true(d.d[1].has_task);
	assert_int_equal(d.d[1].task, 7);
	assert_int_equal(d.d[1].job, 2);
	assert_int_equal(d.d[4].type, GP_DEP_SINGLETON);
	assert_int_equal(gp_depend_parse("afterok:5?afternotok:5", &d), 0);
	assert_true(d.any);
	assert_int_equal(d.n, 2);
}

static void bad(void **state)
{
	(void)state;
	const char *v[] = {"",
			   "afterok",
			   "afterok:",
			   "afterok:x",
			   "afterok:0",
			   "before:3",
			   "afterok:3,",
			   ",afterok:3",
			   "afterok:3?afterok:4,singleton",
			   "singleton:3",
			   "afterok:3::4",
			   "afterok:3_",
			   "afterok:3_x",
			   "afterok:-3",
			   "afterok:12345678901234567890"};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		errno = 0;
		assert_int_equal(gp_depend_parse(v[i], &d), -1);
		assert_int_equal(errno, EINVAL);
	}
	char big[2000] = "afterok";
	size_t n = 7;
	for (int i = 0; i < 70; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, ":%d", i + 1);
	assert_int_equal(gp_depend_parse(big, &d), -1);
	assert_int_equal(errno, E2BIG);
}

static void eval(void **state)
{
	(void)state;
	struct gp_dep ok = {.type = GP_DEP_AFTEROK, .job = 1};
	struct gp_dep notok = {.type = GP_DEP_AFTERNOTOK, .job = 1};
	struct gp_dep after = {.type = GP_DEP_AFTER, .job = 1};
	struct gp_dep any = {.type = GP_DEP_AFTERANY, .job = 1};
	struct gp_dep single = {.type = GP_DEP_SINGLETON};
	struct gp_dep_target pending = {.exists = true, .total = 3};
	struct gp_dep_target half = {.exists = true, .total = 3, .started = 3, .ended = 2, .ok = 2};
	struct gp_dep_target allok = {
	    .exists = true, .total = 3, .started = 3, .ended = 3, .ok = 3};
	struct gp_dep_target onebad = {.exists = true, .total = 3, .started = 2, .ended = 1};
	struct gp_dep_target gone = {0};
	assert_int_equal(gp_dep_eval(&ok, &pending), GP_DEP_WAIT);
	assert_int_equal(gp_dep_eval(&ok, &half), GP_DEP_WAIT);
	assert_int_equal(gp_dep_eval(&ok, &allok), GP_DEP_OK);
	assert_int_equal(gp_dep_eval(&ok, &onebad), GP_DEP_NEVER);
	assert_int_equal(gp_dep_eval(&ok, &gone), GP_DEP_NEVER);
	assert_int_equal(gp_dep_eval(&notok, &allok), GP_DEP_NEVER);
	assert_int_equal(gp_dep_eval(&notok, &onebad), GP_DEP_WAIT);
	struct gp_dep_target endbad = {
	    .exists = true, .total = 3, .started = 3, .ended = 3, .ok = 2};
	assert_int_equal(gp_dep_eval(&notok, &endbad), GP_DEP_OK);
	assert_int_equal(gp_dep_eval(&after, &pending), GP_DEP_WAIT);
	assert_int_equal(gp_dep_eval(&after, &half), GP_DEP_OK);
	assert_int_equal(gp_dep_eval(&any, &half), GP_DEP_WAIT);
	assert_int_equal(gp_dep_eval(&any, &endbad), GP_DEP_OK);
	struct gp_dep_target others = {.total = 1}, none = {0};
	assert_int_equal(gp_dep_eval(&single, &others), GP_DEP_WAIT);
	assert_int_equal(gp_dep_eval(&single, &none), GP_DEP_OK);
}

static void combine(void **state)
{
	(void)state;
	gp_depend_parse("afterok:1,afterok:2", &d);
	enum gp_dep_result r[2] = {GP_DEP_OK, GP_DEP_WAIT};
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_WAIT);
	r[1] = GP_DEP_NEVER;
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_NEVER);
	r[1] = GP_DEP_OK;
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_OK);
	gp_depend_parse("afterok:1?afterok:2", &d);
	r[0] = GP_DEP_NEVER;
	r[1] = GP_DEP_WAIT;
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_WAIT);
	r[1] = GP_DEP_OK;
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_OK);
	r[1] = GP_DEP_NEVER;
	assert_int_equal(gp_depend_combine(d.any, r, 2), GP_DEP_NEVER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse),
	    cmocka_unit_test(bad),
	    cmocka_unit_test(eval),
	    cmocka_unit_test(combine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_energy.c: the trapezoid integral of power samples against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cards/energy.h"

static void constant_draw(void **state)
{
	/* 100 W sampled every second, 10 samples: 9 s x 100 W = 900 J */
	gp_energy_integ_t e;
	gp_energy_init(&e, 5000);
	for (int64_t t = 0; t <= 9000; t += 1000)
		gp_energy_sample(&e, t, 100000);
	assert_int_equal(gp_energy_mj(&e), 900000);
}

static void first_sample_starts(void **state)
{
	gp_energy_integ_t e;
	gp_energy_init(&e, 0);
	assert_int_equal(gp_energy_mj(&e), 0);
	gp_energy_sample(&e, 123456, 250000);
	assert_int_equal(gp_energy_mj(&e), 0); /* no time has passed yet */
}

static void trapezoids(void **state)
{
	/* 0, 100, 200, 100 W a second apart: (0+100)/2 + (100+200)/2 + (200+100)/2
	 * = 50 + 150 + 150 = 350 J */
	gp_energy_integ_t e;
	gp_energy_init(&e, 5000);
	gp_energy_sample(&e, 0, 0);
	gp_energy_sample(&e, 1000, 100000);
	gp_energy_sample(&e, 2000, 200000);
	gp_energy_sample(&e, 3000, 100000);
	assert_int_equal(gp_energy_mj(&e), 350000);

	/* uneven intervals: 150 W, 150 W after 0.25 s, 50 W after 1.5 s more:
	 * 150 x 0.25 + (150+50)/2 x 1.5 = 37.5 + 150 = 187.5 J */
	gp_energy_init(&e, 5000);
	gp_energy_sample(&e, 10000, 150000);
	gp_energy_sample(&e, 10250, 150000);
	gp_energy_sample(&e, 11750, 50000);
	assert_int_equal(gp_energy_mj(&e), 187500);
}

static void fake_card_step(void **state)
{
	/* a fake card with idle=10W draw=150W, sampled every second, a task holding it from
	 * 2.5 s to 4.5 s: samples 10, 10, 10, 150, 150, 10 W at 0..5 s give
	 * 10 + 10 + (10+150)/2 + 150 + (150+10)/2 = 10 + 10 + 80 + 150 + 80 = 330 J
	 * (the exact answer is 10 x 3 + 150 x 2 = 330 J: the trapezoids' error at the two
	 * steps cancels when a step lasts whole intervals) */
	static const uint32_t w[] = {10, 10, 10, 150, 150, 10};
	gp_energy_integ_t e;
	gp_energy_init(&e, 5000);
	for (int i = 0; i < 6; i++)
		gp_energy_sample(&e, i * 1000, w[i] * 1000);
	assert_int_equal(gp_energy_mj(&e), 330000);
}

static void rounding(void **state)
{
	/* 1 mW then 2 mW 1001 ms later: 1.5 mW x 1001 ms = 1501.5 µJ: 1 mJ (rounded down),
	 * and the half microjoule is kept, not lost */
	gp_energy_integ_t e;
	gp_energy_init(&e, 0);
	gp_energy_sample(&e, 0, 1);
	gp_energy_sample(&e, 1001, 2);
	assert_int_equal(e.half_uj, 3003);
	assert_int_equal(gp_energy_mj(&e), 1);
	/* 2 mW for 249 ms more: 498 µJ, 1999.5 µJ in all: still 1 mJ */
	gp_energy_sample(&e, 1250, 2);
	assert_int_equal(e.half_uj, 3003 + 996);
	assert_int_equal(gp_energy_mj(&e), 1);
	gp_energy_sample(&e, 1251, 2); /* 2 µJ more: 2001.5 µJ */
	assert_int_equal(gp_energy_mj(&e), 2);
}

static void gaps_and_time(void **state)
{
	/* a 60 s gap at 100 W counts as the 5 s cap: 500 J, not 6000 J */
	gp_energy_integ_t e;
	gp_energy_init(&e, 5000);
	gp_energy_sample(&e, 0, 100000);
	gp_energy_sample(&e, 60000, 100000);
	assert_int_equal(gp_energy_mj(&e), 500000);
	/* an earlier sample is ignored; one at the same time replaces the reading */
	gp_energy_sample(&e, 59000, 900000);
	assert_int_equal(gp_energy_mj(&e), 500000);
	gp_energy_sample(&e, 60000, 300000);
	assert_int_equal(gp_energy_mj(&e), 500000);
	gp_energy_sample(&e, 61000, 100000); /* (300 + 100) / 2 x 1 s = 200 J */
	assert_int_equal(gp_energy_mj(&e), 700000);
	/* without a cap the whole gap counts */
	gp_energy_init(&e, 0);
	gp_energy_sample(&e, 0, 100000);
	gp_energy_sample(&e, 60000, 100000);
	assert_int_equal(gp_energy_mj(&e), 6000000);
}

static void no_overflow(void **state)
{
	/* a 1000 W card for a year, sampled every second: 1000 x 31536000 s = 31.536 GJ */
	gp_energy_integ_t e;
	gp_energy_init(&e, 5000);
	int64_t year_ms = 365LL * 24 * 3600 * 1000;
	for (int64_t t = 0; t <= year_ms; t += 1000)
		gp_energy_sample(&e, t, 1000000);
	assert_int_equal(gp_energy_mj(&e), 31536000000000ULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(constant_draw), cmocka_unit_test(first_sample_starts),
	    cmocka_unit_test(trapezoids),    cmocka_unit_test(fake_card_step),
	    cmocka_unit_test(rounding),	     cmocka_unit_test(gaps_and_time),
	    cmocka_unit_test(no_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Power and cost arithmetic against values computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "cli/lib/cost.h"
#include "cli/lib/fleet.h"

static gp_config_t *cfg(const char *prices)
{
	gp_config_t *c = gp_config_create(GP_CLI);
	gp_error_t err;
	assert_int_equal(gp_config_set(c, "card_prices", prices, &err), 0);
	assert_int_equal(gp_config_set(c, "price_kwh", "0.40", &err), 0);
	assert_int_equal(gp_config_set(c, "cooling_share", "0.25", &err), 0);
	assert_int_equal(gp_config_set(c, "depreciation_rate", "0.5", &err), 0);
	return c;
}

static void pc_power(void **state)
{
	gp_config_t *c = cfg("");
	struct gp_prices p;
	gp_error_t err;
	assert_int_equal(gp_prices_load(c, &p, &err), 0);
	/* GTX 1660 SUPER 125 W + RX 6700 XT 230 W: (355 + 2 * 3.75) * 1.2 = 435.0 W */
	double w[] = {125, 230};
	assert_true(fabs(gp_pc_power(&p, w, 2) - 435.0) < 1e-9);
	assert_true(fabs(gp_pc_power(&p, w, 0) - 0.0) < 1e-9);
	gp_prices_release(&p);
	gp_config_destroy(&c);
}

static void job_cost(void **state)
{
	gp_config_t *c = cfg("GeForce GTX 1660 SUPER=229;Radeon RX 6700 XT=479");
	struct gp_prices p;
	gp_error_t err;
	assert_int_equal(gp_prices_load(c, &p, &err), 0);
	struct gp_cost k = {0};
	/* two cards for 3 hours */
	gp_cost_add_card(&p, &k, 125, "GeForce GTX 1660 SUPER", 3);
	gp_cost_add_card(&p, &k, 230, "Radeon RX 6700 XT", 3);
	gp_cost_finish(&p, &k);
	/* energy (125 + 230) W * 3 h = 1.065 kWh; * 0.40 = 0.426; cooling 25 % = 0.1065 */
	assert_true(fabs(k.kwh - 1.065) < 1e-9);
	assert_true(fabs(k.electricity - 0.426) < 1e-9);
	assert_true(fabs(k.cooling - 0.1065) < 1e-9);
	/* depreciation (229 + 479) * 0.5 * 3 / 8766 = 0.121150... */
	assert_true(fabs(k.depreciation - 708.0 * 0.5 * 3 / 8766.0) < 1e-12);
	assert_true(fabs(k.total - (0.426 + 0.1065 + 708.0 * 1.5 / 8766.0)) < 1e-9);
	/* cloud: 6 GPU-hours at the default 0.45 = 2.70 */
	assert_true(fabs(k.gpu_hours - 6) < 1e-12);
	assert_true(fabs(k.cloud - 2.70) < 1e-9);
	/* a model not in the list takes the default price */
	assert_true(gp_card_price(&p, "RTX 3060") == 300);
	gp_prices_release(&p);
	gp_config_destroy(&c);
}

static void bad_prices(void **state)
{
	gp_config_t *c = cfg("GTX 1660=abc");
	struct gp_prices p;
	gp_error_t err;
	assert_int_equal(gp_prices_load(c, &p, &err), -1);
	gp_config_destroy(&c);
	c = cfg("no equals sign");
	assert_int_equal(gp_prices_load(c, &p, &err), -1);
	gp_config_destroy(&c);
}

/* What `gpool cost` says its energy figure rests on. */
static void energy_from(void **state)
{
	Gpool__JobInfo j = GPOOL__JOB_INFO__INIT;
	char b[96];
	gp_job_energy_from(&j, b, sizeof(b)); /* no record: power limits over the run */
	assert_string_equal(b, "upper bound");
	j.energy_j = 1000;
	gp_job_energy_from(&j, b, sizeof(b)); /* a record from before the sources were kept */
	assert_string_equal(b, "accounted");
	j.energy_sources = 1u << GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED;
	gp_job_energy_from(&j, b, sizeof(b));
	assert_string_equal(b, "sampled");
	j.energy_sources |= 1u << GPOOL__ENERGY_SOURCE__ENERGY_COUNTER;
	gp_job_energy_from(&j, b, sizeof(b));
	assert_string_equal(b, "counter+sampled");
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(pc_power), cmocka_unit_test(job_cost),
					   cmocka_unit_test(bad_prices),
					   cmocka_unit_test(energy_from)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

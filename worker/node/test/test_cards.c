/* test_cards.c: the fake card parser and discovery. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "worker/node/cards.h"

static void two_cards(void **state)
{
	gp_cards_t c = {0};
	gp_error_t err;
	assert_int_equal(gp_cards_discover("nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W,"
					   "amd:Radeon RX 6700 XT:12GiB:gfx1031:230W",
					   &c, &err),
			 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.v[0]->vendor, GPOOL__VENDOR__VENDOR_NVIDIA);
	assert_string_equal(c.v[0]->name, "GeForce GTX 1660 SUPER");
	assert_int_equal(c.v[0]->vram_total, 6ull << 30);
	assert_string_equal(c.v[0]->arch, "7.5");
	assert_int_equal(c.v[0]->power_limit_w, 125);
	assert_true(c.v[0]->fake);
	assert_int_equal(c.v[0]->index, 0);
	assert_int_equal(c.v[0]->state, GPOOL__CARD_STATE__CARD_UP);
	assert_int_equal(c.v[1]->vendor, GPOOL__VENDOR__VENDOR_AMD);
	assert_string_equal(c.v[1]->arch, "gfx1031");
	assert_int_equal(c.v[1]->power_limit_w, 230);
	assert_int_equal(c.v[1]->index, 1);
	assert_string_equal(c.v[1]->uuid, "GPU-fake-1");
	gp_cards_release(&c);
	assert_int_equal(c.n, 0);
}

static void options(void **state)
{
	gp_cards_t c = {0};
	gp_error_t err;
	assert_int_equal(gp_cards_parse_fake("nvidia:RTX 3060:12G:8.6:170:state=drained:grade=warn:"
					     "throughput=312.5",
					     &c, &err),
			 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.v[0]->state, GPOOL__CARD_STATE__CARD_DRAINED);
	assert_string_equal(c.v[0]->grade, "warn");
	assert_true(c.v[0]->throughput > 312.4 && c.v[0]->throughput < 312.6);
	assert_int_equal(c.v[0]->power_limit_w, 170);
	/* a packed card survives the round trip (the register message carries it) */
	size_t n = gpool__card__get_packed_size(c.v[0]);
	uint8_t buf[512];
	assert_true(n < sizeof(buf));
	gpool__card__pack(c.v[0], buf);
	Gpool__Card *u = gpool__card__unpack(NULL, n, buf);
	assert_non_null(u);
	assert_string_equal(u->name, "RTX 3060");
	gpool__card__free_unpacked(u, NULL);
	gp_cards_release(&c);
}

static void simulated_draw(void **state)
{
	gp_cards_t c = {0};
	gp_error_t err;
	assert_int_equal(gp_cards_parse_fake("nvidia:RTX 3060:12G:8.6:170W:draw=150W:idle=12,"
					     "amd:RX 6700 XT:12G:gfx1031:230W",
					     &c, &err),
			 0);
	assert_int_equal(c.v[0]->fake_draw_w, 150);
	assert_int_equal(c.v[0]->fake_idle_w, 12);
	assert_int_equal(c.v[1]->fake_draw_w, 0); /* none given: no reading, an upper bound */
	assert_int_equal(c.v[1]->fake_idle_w, 0);
	gp_cards_release(&c);
}

static void none(void **state)
{
	gp_cards_t c = {0};
	gp_error_t err;
	assert_int_equal(gp_cards_discover("", &c, &err), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(gp_cards_discover(NULL, &c, &err), 0);
	assert_int_equal(c.n, 0);
}

static void bad(void **state)
{
	static const char *const bad[] = {
	    "nvidia",					  /* too few fields */
	    "nvidia:X:6GiB:7.5",			  /* no power */
	    "intel:Arc:8GiB:xe:150W",			  /* vendor */
	    "nvidia::6GiB:7.5:125W",			  /* no name */
	    "nvidia:X:lots:7.5:125W",			  /* vram */
	    "nvidia:X:0:7.5:125W",			  /* zero vram */
	    "nvidia:X:6GiB::125W",			  /* no arch */
	    "nvidia:X:6GiB:7.5:much",			  /* power */
	    "nvidia:X:6GiB:7.5:125W:grade=great",	  /* grade */
	    "nvidia:X:6GiB:7.5:125W:state=on",		  /* state */
	    "nvidia:X:6GiB:7.5:125W:throughput=-1",	  /* throughput */
	    "nvidia:X:6GiB:7.5:125W:color=red",		  /* unknown key */
	    "nvidia:X:6GiB:7.5:125W:draw=lots",		  /* draw */
	    "nvidia:X:6GiB:7.5:125W:idle=-3W",		  /* idle */
	    "nvidia:X:6GiB:7.5:125W:oops",		  /* not key=value */
	    "nvidia:X:6GiB:7.5:125W,",			  /* trailing comma */
	    "nvidia:X:6GiB:7.5:125W,,amd:Y:1G:gfx900:1W", /* empty entry */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gp_cards_t c = {0};
		gp_error_t err = {{0}};
		assert_int_equal(gp_cards_parse_fake(bad[i], &c, &err), -1);
		assert_int_equal(c.n, 0);
		assert_true(strlen(err.text) > 0);
	}
	/* a failure leaves an existing list as it was */
	gp_cards_t c = {0};
	gp_error_t err;
	assert_int_equal(gp_cards_parse_fake("amd:Y:1G:gfx900:1W", &c, &err), 0);
	assert_int_equal(gp_cards_parse_fake("amd:Y:1G:gfx900:1W,bogus", &c, &err), -1);
	assert_int_equal(c.n, 1);
	gp_cards_release(&c);
}

/* the real backends first (whatever this machine has), then the fake cards */
static void discover_real_then_fake(void **state)
{
	gp_cards_t c = {0};
	gp_error_t err;
	/* whatever this machine has (nothing on CI) is no error; fake cards come last */
	assert_int_equal(gp_cards_discover(NULL, &c, &err), 0);
	size_t real = c.n;
	for (size_t i = 0; i < real; i++)
		assert_false(c.v[i]->fake);
	gp_cards_release(&c);
	assert_int_equal(gp_cards_discover("nvidia:GTX 1070 Ti:8GiB:6.1:180W", &c, &err), 0);
	assert_int_equal(c.n, real + 1);
	assert_true(c.v[real]->fake);
	assert_int_equal(c.v[real]->index, real);
	gp_cards_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(two_cards),
	    cmocka_unit_test(options),
	    cmocka_unit_test(simulated_draw),
	    cmocka_unit_test(none),
	    cmocka_unit_test(bad),
	    cmocka_unit_test(discover_real_then_fake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_replay.c: the replay window (replay.h): replays refused, spans, wrapping, a full
 * table refusing a new sender instead of hanging, expired senders making room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

#include "common/replay.h"

static void in_order_and_replays(void **state)
{
	gp_replay_t *r = gp_replay_create(64);
	assert_non_null(r);
	assert_int_equal(gp_replay_check(r, 1000, 7, 1, 1, 10), 0);
	assert_int_equal(gp_replay_check(r, 1000, 7, 2, 3, 10), 0); /* takes 2, 3, 4 */
	errno = 0;
	assert_int_equal(gp_replay_check(r, 1000, 7, 4, 1, 11), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(gp_replay_check(r, 1000, 7, 1, 1, 11), -1);
	assert_int_equal(gp_replay_check(r, 1000, 7, 5, 0, 11), 0); /* count 0 takes one */
	assert_int_equal(gp_replay_check(r, 1000, 7, 5, 1, 11), -1);
	/* the same numbers from another epoch or uid are another sender */
	assert_int_equal(gp_replay_check(r, 1000, 8, 1, 1, 11), 0);
	assert_int_equal(gp_replay_check(r, 1001, 7, 1, 1, 11), 0);
	assert_int_equal(gp_replay_count(r), 3);
	gp_replay_destroy(&r);
	assert_null(r);
	gp_replay_destroy(&r);
}

static void wrapping_refused(void **state)
{
	gp_replay_t *r = gp_replay_create(64);
	errno = 0;
	assert_int_equal(gp_replay_check(r, 1, 1, UINT64_MAX - 1, 3, 0), -1);
	assert_int_equal(errno, ERANGE);
	assert_int_equal(gp_replay_count(r), 0);
	assert_int_equal(gp_replay_check(r, 1, 1, UINT64_MAX - 1, 2, 0), 0);
	assert_int_equal(gp_replay_check(r, 1, 1, UINT64_MAX, 1, 0), -1);
	assert_int_equal(errno, EEXIST);
	gp_replay_destroy(&r);
}

static void full_table_refuses_then_expiry_makes_room(void **state)
{
	gp_replay_t *r = gp_replay_create(8); /* room for 4 senders */
	for (uint64_t e = 1; e <= 4; e++)
		assert_int_equal(gp_replay_check(r, 1, e, 1, 1, 100), 0);
	errno = 0;
	assert_int_equal(gp_replay_check(r, 1, 5, 1, 1, 100), -1);
	assert_int_equal(errno, ENOSPC);
	/* the known senders still work */
	assert_int_equal(gp_replay_check(r, 1, 2, 2, 1, 101), 0);
	/* all but sender 2 silent longer than GP_REPLAY_KEEP_SEC: room again */
	double later = 100 + GP_REPLAY_KEEP_SEC + 0.5;
	assert_int_equal(gp_replay_check(r, 1, 5, 1, 1, later), 0);
	assert_int_equal(gp_replay_count(r), 2);
	/* sender 2 is remembered: its old numbers are still replays */
	assert_int_equal(gp_replay_check(r, 1, 2, 2, 1, later), -1);
	assert_int_equal(errno, EEXIST);
	gp_replay_destroy(&r);
}

static void bad_size(void **state)
{
	errno = 0;
	assert_null(gp_replay_create(12));
	assert_int_equal(errno, EINVAL);
	assert_null(gp_replay_create(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(in_order_and_replays),
	    cmocka_unit_test(wrapping_refused),
	    cmocka_unit_test(full_table_refuses_then_expiry_makes_room),
	    cmocka_unit_test(bad_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

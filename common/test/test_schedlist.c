/* The scheduler list (schedlist.c): parsing `scheduler = tcp://a:7820, tcp://b:7820`, and the
 * order a client asks them in: round the list on no answer, to the named leader on
 * NOT_LEADER. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/schedlist.h"

static void one_endpoint(void **state)
{
	struct gp_schedlist l;
	gp_error_t err = {{0}};
	assert_int_equal(gp_schedlist_parse(&l, "tcp://127.0.0.1:7820", &err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(gp_schedlist_current(&l), "tcp://127.0.0.1:7820");
	assert_true(gp_schedlist_next(&l)); /* one: always back at the first */
	assert_string_equal(gp_schedlist_current(&l), "tcp://127.0.0.1:7820");
}

static void a_list_with_spaces(void **state)
{
	struct gp_schedlist l;
	gp_error_t err = {{0}};
	assert_int_equal(
	    gp_schedlist_parse(
		&l, " tcp://a:7820 ,tcp://b:7820,\ttcp://[::1]:7821 , ipc:///run/s,inproc://t",
		&err),
	    0);
	assert_int_equal(l.n, 5);
	assert_string_equal(l.ep[0], "tcp://a:7820");
	assert_string_equal(l.ep[1], "tcp://b:7820");
	assert_string_equal(l.ep[2], "tcp://[::1]:7821");
	assert_string_equal(l.ep[3], "ipc:///run/s");
	assert_string_equal(l.ep[4], "inproc://t");
	assert_string_equal(gp_schedlist_current(&l), "tcp://a:7820");
}

/* one more than a list may hold */
static const char nine[] = "tcp://1:1,tcp://2:1,tcp://3:1,tcp://4:1,tcp://5:1,tcp://6:1,"
			   "tcp://7:1,tcp://8:1,tcp://9:1";

static void bad_lists(void **state)
{
	static const char *bad[] = {
	    "",
	    " ",
	    "tcp://a:7820,",
	    ",tcp://a:7820",
	    "tcp://a:7820,,tcp://b:7820",
	    "tcp://a",
	    "tcp://a:",
	    "tcp://:7820",
	    "tcp://a:0",
	    "tcp://a:65536",
	    "tcp://a:78x",
	    "udp://a:7820",
	    "inproc://",
	    "ipc://",
	    "tcp://a b:7820",
	    "tcp://a:7820, tcp://a:7820",
	    nine,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gp_schedlist l = {.n = 99};
		gp_error_t err = {{0}};
		if (gp_schedlist_parse(&l, bad[i], &err) == 0)
			fail_msg("'%s' taken", bad[i]);
		assert_int_equal(errno, EINVAL);
		assert_true(err.text[0] != 0);
		assert_int_equal(l.n, 99); /* untouched */
	}
	char longer[400] = "tcp://";
	memset(longer + 6, 'a', 300);
	strcpy(longer + 306, ":1");
	struct gp_schedlist l;
	assert_int_equal(gp_schedlist_parse(&l, longer, NULL), -1);
}

/* no answer: the next, round the list, and a whole round is told */
static void next_goes_round(void **state)
{
	struct gp_schedlist l;
	assert_int_equal(gp_schedlist_parse(&l, "tcp://a:1,tcp://b:1,tcp://c:1", NULL), 0);
	assert_false(gp_schedlist_next(&l));
	assert_string_equal(gp_schedlist_current(&l), "tcp://b:1");
	assert_false(gp_schedlist_next(&l));
	assert_string_equal(gp_schedlist_current(&l), "tcp://c:1");
	assert_true(gp_schedlist_next(&l));
	assert_string_equal(gp_schedlist_current(&l), "tcp://a:1");
}

/* NOT_LEADER naming one of the list: straight to it; naming none, the current one or a
 * malformed one: the next */
static void follow_the_leader(void **state)
{
	struct gp_schedlist l;
	assert_int_equal(gp_schedlist_parse(&l, "tcp://a:1,tcp://b:1,tcp://c:1", NULL), 0);
	assert_int_equal(gp_schedlist_follow(&l, "tcp://c:1"), 0);
	assert_string_equal(gp_schedlist_current(&l), "tcp://c:1");
	assert_int_equal(gp_schedlist_follow(&l, ""), -1);
	assert_string_equal(gp_schedlist_current(&l), "tcp://a:1");
	assert_int_equal(gp_schedlist_follow(&l, "tcp://a:1"), -1);
	assert_string_equal(gp_schedlist_current(&l), "tcp://b:1");
	assert_int_equal(gp_schedlist_follow(&l, "bogus leader"), -1);
	assert_string_equal(gp_schedlist_current(&l), "tcp://c:1");
	assert_int_equal(gp_schedlist_follow(&l, NULL), -1);
	assert_string_equal(gp_schedlist_current(&l), "tcp://a:1");
}

/* a leader not in the list (named another way) is added, within the bound */
static void follow_adds_within_bound(void **state)
{
	struct gp_schedlist l;
	assert_int_equal(gp_schedlist_parse(&l, "tcp://a:1", NULL), 0);
	assert_int_equal(gp_schedlist_follow(&l, "tcp://198.18.0.9:7820"), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(gp_schedlist_current(&l), "tcp://198.18.0.9:7820");
	char ep[32];
	for (int i = 0; i < 20; i++) {
		snprintf(ep, sizeof(ep), "tcp://n%d:1", i);
		assert_int_equal(gp_schedlist_follow(&l, ep), 0);
		assert_string_equal(gp_schedlist_current(&l), ep);
	}
	assert_int_equal(l.n, GP_SCHEDLIST_MAX);
	assert_string_equal(l.ep[0], "tcp://a:1"); /* the configured ones stay */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(one_endpoint),	 cmocka_unit_test(a_list_with_spaces),
	    cmocka_unit_test(bad_lists),	 cmocka_unit_test(next_goes_round),
	    cmocka_unit_test(follow_the_leader), cmocka_unit_test(follow_adds_within_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_spec.c: gschedd's own check of a submitted spec (client_check_spec), whatever gsub
 * checked first: a client that skips gsub's checks (a crafted Submit) is refused with the
 * reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "scheduler/shell/client.h"
#include "scheduler/test/sched_fixture.h"

static char *argv0[] = {"/bin/true"};

static Gpool__JobSpec spec(void)
{
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv0;
	sp.n_argv = 1;
	return sp;
}

/* a reason with text in it, or NULL when the spec is taken */
static const char *check(Gpool__JobSpec *sp)
{
	static char why[512];
	why[0] = '\0';
	if (client_check_spec(&S, sp, why, sizeof(why)) == 0)
		return NULL;
	assert_true(why[0] != '\0');
	return why;
}

static void plain_job_taken_with_defaults(void **state)
{
	(void)state;
	Gpool__JobSpec sp = spec();
	assert_null(check(&sp));
	assert_int_equal(sp.ntasks, 1);
	assert_int_equal(sp.cpus_per_task, 1);
}

/* gsub refuses --pty-keep without --pty and above 7 days; gschedd refuses them again */
static void pty_keep_refused_without_pty_or_above_a_week(void **state)
{
	(void)state;
	Gpool__JobSpec sp = spec();
	sp.pty_keep_sec = 60;
	const char *why = check(&sp);
	assert_non_null(why);
	assert_non_null(strstr(why, "--pty job's"));

	sp.pty = true;
	assert_null(check(&sp));
	sp.pty_keep_sec = 7 * 86400;
	assert_null(check(&sp));
	sp.pty_keep_sec = 7 * 86400 + 1;
	why = check(&sp);
	assert_non_null(why);
	assert_non_null(strstr(why, "at most 7 days (604801 s asked)"));
}

static void other_refusals(void **state)
{
	(void)state;
	Gpool__JobSpec sp = spec();
	sp.n_argv = 0;
	assert_non_null(strstr(check(&sp), "no command given"));
	sp = spec();
	sp.priority = 10001;
	assert_non_null(strstr(check(&sp), "priority 10001 out of range"));
	sp = spec();
	sp.ntasks = 2;
	sp.nodes_min = 3;
	assert_non_null(strstr(check(&sp), "more nodes (3) than tasks (2)"));
	sp = spec();
	sp.service_of = 5;
	assert_non_null(strstr(check(&sp), "set by the scheduler"));
	sp = spec();
	sp.route_token_sha256 = "abc";
	assert_non_null(strstr(check(&sp), "a route token is a service's"));
}

static int up(void **state)
{
	(void)state;
	fixture_up("spec");
	return 0;
}

static int down(void **state)
{
	(void)state;
	fixture_down();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(plain_job_taken_with_defaults, up, down),
	    cmocka_unit_test_setup_teardown(pty_keep_refused_without_pty_or_above_a_week, up, down),
	    cmocka_unit_test_setup_teardown(other_refusals, up, down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_owner_rule: which jobs the owner's return vacates instead of freezing (supervise.c,
 * docs/owner.md): a job that asked (--no-suspend), one with ranks on other nodes, and a service
 * replica that is a gang of ranks, even all on this PC (a frozen stage would stall the whole
 * pipeline; the service restarts it without this PC); a one-task replica and an ordinary job
 * of this node alone are frozen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "worker/agent/supervise_int.h"

static bool vacates(uint32_t size, uint32_t local, bool service_of, bool no_suspend)
{
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.no_suspend = no_suspend;
	sp.service = service_of;
	sp.service_of = service_of ? 7 : 0;
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.spec = &sp;
	l.size = size;
	l.local_size = local;
	return steps_owner_vacates(&l);
}

static void rule(void **state)
{
	(void)state;
	assert_false(vacates(1, 1, false, false)); /* one task: frozen */
	assert_false(vacates(2, 2, false, false)); /* a job of this node alone: frozen */
	assert_true(vacates(1, 1, false, true));   /* --no-suspend */
	assert_true(vacates(3, 1, false, false));  /* ranks elsewhere */
	assert_false(vacates(1, 1, true, false));  /* a one-task replica: frozen, as before */
	assert_true(vacates(3, 1, true, false));   /* a gang replica's rank */
	assert_true(vacates(2, 2, true, false));   /* a gang replica wholly here: vacated too */
	Gpool__Launch bare = GPOOL__LAUNCH__INIT;  /* no spec */
	bare.size = bare.local_size = 1;
	assert_false(steps_owner_vacates(&bare));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(rule)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

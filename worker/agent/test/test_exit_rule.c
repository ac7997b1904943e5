/* test_exit_rule: which exits of a job's tasks are its agent's stop (a lease's fence, an owner's
 * vacate, a stop) and which are the tasks' own end (steps_exit_is_stop, steps.c). An exit reaped
 * before the agent stopped the job is the task's own: the soak found a job that had completed
 * while its agent was dead run again, its exit marked vacated by the restarted agent, which
 * vacated the job before its shell had said the task was done (docs/reliability.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "worker/agent/supervise_int.h"

static void rule(void **state)
{
	(void)state;
	struct step_rec r = {0};
	assert_false(steps_exit_is_stop(&r, 100.0)); /* not stopped: its own end */
	assert_false(steps_exit_is_stop(&r, 0));
	r.vacated = true;
	r.stopped_at = 200.0;
	assert_true(steps_exit_is_stop(&r, 200.5)); /* reaped after the vacate: the vacate's */
	assert_true(steps_exit_is_stop(&r, 200.0));
	assert_false(steps_exit_is_stop(&r, 199.0)); /* reaped before: the task's own end */
	assert_true(steps_exit_is_stop(&r, 0));	     /* no time: as before, the stop's */
	r.vacated = false;
	r.fenced = true; /* the lease's fence: the same rule */
	assert_false(steps_exit_is_stop(&r, 150.0));
	assert_true(steps_exit_is_stop(&r, 250.0));
	r.fenced = false;
	r.stop_reason = "over its VRAM budget";
	assert_false(steps_exit_is_stop(&r, 150.0));
	assert_true(steps_exit_is_stop(&r, 250.0));
}

/* The exit recorded for the scheduler (held until acknowledged) carries the flag by that rule. */
static void held_exit(void **state)
{
	(void)state;
	struct task_rec t = {0};
	Gpool__HeldTask ht = GPOOL__HELD_TASK__INIT;
	t.ht = ht;
	struct step_rec r = {0};
	r.tasks = &t;
	r.ntasks = 1;
	r.vacated = true;
	r.stopped_at = 200.0;
	steps_task_exited(&r, &t, 0, false, NULL, 199.0);
	assert_true(t.ht.exited);
	assert_false(t.ht.vacated); /* it completed before the owner came back */
	t.ht = ht;
	steps_task_exited(&r, &t, 15, false, NULL, 201.0);
	assert_true(t.ht.vacated);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(rule),
	    cmocka_unit_test(held_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

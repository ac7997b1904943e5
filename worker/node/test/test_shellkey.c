/* test_shellkey.c: which launches may share a gstepd task shell and which shell they go to
 * (worker/node/shellkey.h): an array's task and a single-task job that is no array task both may,
 * with a batch script or staged small files too; --stage, --collect, MPI, a service, screening
 * or several tasks on the node may not; two accounts (uid, gid or name) or two arrays never share a
 * shell, and jobs that are not array tasks share one per account. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "worker/node/shellkey.h"

struct launch {
	Gpool__Launch l;
	Gpool__JobSpec sp;
	Gpool__TaskPlacement tp[2];
	Gpool__TaskPlacement *tpp[2];
	char *argv[1];
};

/* A plain single-task launch of `/bin/true`, not an array task. */
static void plain(struct launch *x)
{
	gpool__launch__init(&x->l);
	gpool__job_spec__init(&x->sp);
	for (int i = 0; i < 2; i++) {
		gpool__task_placement__init(&x->tp[i]);
		x->tp[i].rank = (uint32_t)i;
		x->tpp[i] = &x->tp[i];
	}
	x->argv[0] = "/bin/true";
	x->sp.argv = x->argv;
	x->sp.n_argv = 1;
	x->l.spec = &x->sp;
	x->l.job_id = 7;
	x->l.attempt = 1;
	x->l.tasks = x->tpp;
	x->l.n_tasks = 1;
	x->l.size = 1;
}

static void single_task_jobs_are_eligible(void **state)
{
	(void)state;
	struct launch x;
	plain(&x);
	assert_true(gp_shell_eligible(&x.l));
	x.l.array_job_id = 5;
	x.l.array_task_id = 3;
	assert_true(gp_shell_eligible(&x.l));
	/* one task here of a job spread over nodes: the same rule as an array's task */
	x.l.array_job_id = 0;
	x.l.size = 2;
	assert_true(gp_shell_eligible(&x.l));
}

static void what_holds_the_shell_is_not(void **state)
{
	(void)state;
	struct launch x;
	Gpool__StagedFile f = GPOOL__STAGED_FILE__INIT, *fp = &f;
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ep = &e;
	char *pat = "out.%t";
	for (int array = 0; array < 2; array++) {
		/* each rule, for a job that is an array task and one that is not */
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		assert_true(gp_shell_eligible(&x.l));
		/* a batch script and small files are written as the user by the shell too */
		x.sp.script.data = (uint8_t *)"#!/bin/sh\n";
		x.sp.script.len = 10;
		assert_true(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.files = &fp;
		x.sp.n_files = 1;
		assert_true(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.stage = &ep;
		x.sp.n_stage = 1;
		assert_false(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.collect = &pat;
		x.sp.n_collect = 1;
		assert_false(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.mpi = GPOOL__MPI_LAUNCH__MPI_PMIX;
		assert_false(gp_shell_eligible(&x.l));
		x.sp.mpi = GPOOL__MPI_LAUNCH__MPI_MPIRUN;
		assert_false(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.service = true;
		assert_false(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.sp.screen = true;
		assert_false(gp_shell_eligible(&x.l));
		plain(&x);
		x.l.array_job_id = array ? 9 : 0;
		x.l.n_tasks = 2;
		assert_false(gp_shell_eligible(&x.l));
	}
	assert_false(gp_shell_eligible(NULL));
	plain(&x);
	x.l.spec = NULL;
	assert_false(gp_shell_eligible(&x.l));
}

static void a_shell_holds_one_account(void **state)
{
	(void)state;
	struct launch x, y;
	struct gp_shell_key a, b;
	plain(&x);
	plain(&y);
	y.l.job_id = 8;
	/* two separate jobs of one account: one shell */
	gp_shell_key_of(&x.l, 1001, 1001, "alice", &a);
	gp_shell_key_of(&y.l, 1001, 1001, "alice", &b);
	assert_true(gp_shell_key_eq(&a, &b));
	/* another user, uid, gid or name: never */
	gp_shell_key_of(&y.l, 1002, 1002, "bob", &b);
	assert_false(gp_shell_key_eq(&a, &b));
	gp_shell_key_of(&y.l, 1002, 1001, "alice", &b);
	assert_false(gp_shell_key_eq(&a, &b));
	gp_shell_key_of(&y.l, 1001, 1002, "alice", &b);
	assert_false(gp_shell_key_eq(&a, &b));
	gp_shell_key_of(&y.l, 1001, 1001, "alice2", &b);
	assert_false(gp_shell_key_eq(&a, &b));
	/* an array's tasks share a shell of their array, not one of other jobs */
	y.l.array_job_id = 40;
	gp_shell_key_of(&y.l, 1001, 1001, "alice", &b);
	assert_false(gp_shell_key_eq(&a, &b));
	x.l.array_job_id = 40;
	x.l.array_task_id = 2;
	gp_shell_key_of(&x.l, 1001, 1001, "alice", &a);
	assert_true(gp_shell_key_eq(&a, &b));
	x.l.array_job_id = 41;
	gp_shell_key_of(&x.l, 1001, 1001, "alice", &a);
	assert_false(gp_shell_key_eq(&a, &b));
	/* a name longer than the key holds is cut, never overrun */
	char longname[200];
	memset(longname, 'u', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	gp_shell_key_of(&x.l, 1, 1, longname, &a);
	assert_int_equal(strlen(a.user), sizeof(a.user) - 1);
	gp_shell_key_of(&x.l, 1, 1, NULL, &a);
	assert_string_equal(a.user, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(single_task_jobs_are_eligible),
	    cmocka_unit_test(what_holds_the_shell_is_not),
	    cmocka_unit_test(a_shell_holds_one_account),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

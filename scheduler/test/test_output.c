/* A new leader's output files from the replicated rows (output_restore, docs/standby.md): the
 * rows of a running job and of a job that ended both become files glogs reads. The soak found
 * the second lost (issue 39, docs/reliability.md): only unfinished jobs are in memory when a
 * scheduler takes the lead, and the rows of the others were skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/gschedd.h"
#include "scheduler/jobs.h"
#include "scheduler/output.h"
#include "scheduler/store.h"
#include "scheduler/store_output.h"
#include "common/util.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	(void)state;
	fixture_up("output");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fixture_down();
	return 0;
}

/* A job in the store; in memory too when running. */
static struct job *stored_job(Gpool__JobState state, bool in_memory)
{
	struct job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->id = jobs_next_id(S.jobs);
	j->user = strdup("u");
	j->name = strdup("t");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = state;
	j->attempt = 1;
	j->submit_time = gp_now() - 10;
	j->end_time = state == GPOOL__JOB_STATE__RUNNING ? 0 : gp_now();
	j->ntasks = j->cpus_per_task = 1;
	char *argv[] = {"true"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	uint8_t buf[64];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
	j->durable = true;
	if (!in_memory) {
		/* an ended job, as a new leader holds it: in the store only */
		jobs_forget(S.jobs, j);
		return NULL;
	}
	return j;
}

static char *file_text(uint64_t id)
{
	static char text[256];
	char path[256];
	snprintf(path, sizeof(path), "%s/output/%llu/gpool-%llu.out", dir, (unsigned long long)id,
		 (unsigned long long)id);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

static void restore_writes_running_and_ended_jobs(void **state)
{
	(void)state;
	gp_error_t err;
	struct job *run = stored_job(GPOOL__JOB_STATE__RUNNING, true);
	uint64_t run_id = run->id;
	stored_job(GPOOL__JOB_STATE__COMPLETED, false);
	uint64_t done_id = run_id + 1;
	/* rows as a leader appended them, the two jobs' interleaved */
	assert_int_equal(store_output_put(S.store, done_id, 0, 1, 0, "done 1\n", 7), 0);
	assert_int_equal(store_output_put(S.store, run_id, 0, 1, 0, "run 1\n", 6), 0);
	assert_int_equal(store_output_put(S.store, done_id, 0, 1, 7, "done 2\n", 7), 0);
	assert_int_equal(store_commit(S.store, &err), 0);
	assert_null(jobs_get(S.jobs, done_id));

	assert_int_equal(output_restore(&S), 0);
	assert_non_null(file_text(run_id));
	assert_string_equal(file_text(run_id), "run 1\n");
	assert_int_equal(run->tasks ? run->tasks[0].out_off : 6, 6);
	char *t = file_text(done_id);
	assert_non_null(t); /* lost before the fix: the ended job's rows were skipped */
	assert_string_equal(t, "done 1\ndone 2\n");
	/* a second takeover writes the same files again, not twice the bytes */
	assert_int_equal(output_restore(&S), 0);
	assert_string_equal(file_text(done_id), "done 1\ndone 2\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(restore_writes_running_and_ended_jobs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Retention on a real store and output directory: finished jobs older than job_retention go
 * from jobs.db, memory and the output store in bounded steps, leaving a summary row; recent
 * jobs, unfinished ones and an array's first task (whose spec its waiting tasks share) stay;
 * a purged job's id is never given again and a dependency on it still resolves; all of it holds
 * over a reopening of the store (a restart). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/depend.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/features/retention.h"
#include "scheduler/store/store.h"
#include "common/util.h"

#include "scheduler/test/sched_fixture.h"

#define OLD_JOBS 600
#define AGE_MS	 3600000 /* an hour */

static int setup(void **state)
{
	(void)state;
	fixture_up("retention");
	S.retention = retention_create();
	assert_non_null(S.retention);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	retention_destroy(&S.retention);
	fixture_down();
	return 0;
}

/* A job in memory and in the store (committed later by commit_all); ended: end_time, or 0. */
static struct job *add_job(Gpool__JobState state, double ended, uint64_t array_job_id)
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
	j->submit_time = ended > 0 ? ended - 10 : gp_now();
	j->start_time = ended > 0 ? ended - 5 : 0;
	j->end_time = ended;
	j->exit_code = state == GPOOL__JOB_STATE__FAILED ? 3 : 0;
	j->cpu_sec = 1.5;
	j->ntasks = j->cpus_per_task = 1;
	j->array_job_id = array_job_id == 1 ? j->id : array_job_id;
	char *argv[] = {"true"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	uint8_t buf[64];
	size_t len = gpool__job_spec__pack(&sp, buf);
	bool later_task = array_job_id > 1;
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(
	    store_job_insert(S.store, j, later_task ? NULL : buf, later_task ? 0 : len, NULL), 0);
	j->durable = true;
	/* its output, as output.c keeps it */
	char path[256];
	snprintf(path, sizeof(path), "%s/output/%llu", dir, (unsigned long long)j->id);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/output/%llu/gpool-%llu.out", dir,
		 (unsigned long long)j->id, (unsigned long long)j->id);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);
	return j;
}

static bool has_output(uint64_t id)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/output/%llu", dir, (unsigned long long)id);
	return stat(path, &st) == 0;
}

static void commit_all(void)
{
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), 0);
	retention_committed(&S, true);
	S.txn_first_ms = 0;
}

static bool in_store(uint64_t id)
{
	struct job *j = store_job_load(S.store, id);
	job_free(j);
	return j != NULL;
}

static bool summarized(uint64_t id, Gpool__JobState state)
{
	struct job *j = store_summary_load(S.store, id);
	bool ok = j && j->state == state && j->end_time > 0 && j->cpu_sec == 1.5;
	job_free(j);
	return ok;
}

static int count_hist(void *arg, struct job *j)
{
	(*(int *)arg)++;
	job_free(j);
	return 0;
}

static void purges_old_jobs_in_batches(void **state)
{
	(void)state;
	double old = gp_now() - 2 * AGE_MS / 1000.0;
	uint64_t first_old = 0, last_old = 0;
	for (int i = 0; i < OLD_JOBS; i++) {
		struct job *j = add_job(
		    i % 7 ? GPOOL__JOB_STATE__COMPLETED : GPOOL__JOB_STATE__FAILED, old + i, 0);
		if (!first_old)
			first_old = j->id;
		assert_true(!last_old || j->id == last_old + 1);
		last_old = j->id;
	}
	/* an array whose first task ended long ago but whose second still waits */
	struct job *head = add_job(GPOOL__JOB_STATE__COMPLETED, old, 1);
	struct job *waiting = add_job(GPOOL__JOB_STATE__PENDING, 0, head->id);
	struct job *recent = add_job(GPOOL__JOB_STATE__COMPLETED, gp_now() - 5, 0);
	struct job *pending = add_job(GPOOL__JOB_STATE__PENDING, 0, 0);
	/* the newest job of all is old: its id must not come back after the purge */
	struct job *newest = add_job(GPOOL__JOB_STATE__CANCELLED, old, 0);
	uint64_t newest_id = newest->id, head_id = head->id, waiting_id = waiting->id;
	uint64_t recent_id = recent->id, pending_id = pending->id;
	commit_all();

	retention_set(S.retention, AGE_MS, 256);
	int64_t now = 1000;
	int steps = 0, total = 0, n;
	while ((n = retention_step(&S, now)) != 0) {
		assert_true(n > 0 && n <= 256); /* bounded */
		total += n;
		steps++;
		commit_all();
		now += RETENTION_BUSY_MS; /* a full step: the next comes soon */
		assert_true(steps < 10);
	}
	commit_all();
	assert_int_equal(total, OLD_JOBS + 1); /* the old ones and the cancelled newest */
	assert_true(steps >= 3);
	assert_int_equal(retention_purged(S.retention), OLD_JOBS + 1);
	/* not due again until RETENTION_IDLE_MS later */
	assert_int_equal(retention_step(&S, now), 0);

	for (uint64_t id = first_old; id <= last_old; id++) {
		assert_false(in_store(id));
		assert_null(jobs_get(S.jobs, id));
		assert_false(has_output(id));
		assert_true(summarized(id, (id - first_old) % 7 ? GPOOL__JOB_STATE__COMPLETED
								: GPOOL__JOB_STATE__FAILED));
	}
	assert_false(in_store(newest_id));
	/* what stays: the recent, the unfinished, the array's first task and its spec */
	assert_true(in_store(recent_id) && has_output(recent_id));
	assert_true(in_store(pending_id) && in_store(waiting_id) && in_store(head_id));
	assert_true(has_output(head_id));
	Gpool__JobSpec *sp = store_job_spec(S.store, waiting_id);
	assert_non_null(sp);
	assert_string_equal(sp->argv[0], "true");
	gpool__job_spec__free_unpacked(sp, NULL);

	/* gacct's view: every purged job as a summary row; gstat's (jobs) has only the recent */
	int hist = 0, summ = 0;
	store_history(S.store, 0, true, 0, 0, 100000, count_hist, &hist);
	store_summary_history(S.store, 0, true, 0, 0, 100000, count_hist, &summ);
	assert_int_equal(summ, OLD_JOBS + 1);
	assert_int_equal(hist, 2); /* recent, and the array's head */

	/* a dependency on a purged job still knows how it ended */
	struct gp_dep_target t;
	assert_int_equal(store_dep_target(S.store, first_old + 1, false, 0, &t), 0);
	assert_true(t.exists);
	assert_int_equal(t.total, 1);
	assert_int_equal(t.ok, 1);

	/* a restart: the ids go on after the purged newest, and what is gone stays gone */
	assert_int_equal(store_max_job_id(S.store), newest_id);
	store_destroy(&S.store);
	gp_error_t err;
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	assert_int_equal(store_max_job_id(S.store), newest_id);
	assert_false(in_store(first_old));
	assert_true(summarized(first_old, GPOOL__JOB_STATE__FAILED));
	assert_true(in_store(recent_id));

	/* once the waiting task has ended and aged, the array's head goes too */
	waiting->state = GPOOL__JOB_STATE__COMPLETED;
	waiting->end_time = old;
	assert_int_equal(store_job_update(S.store, waiting), 0);
	commit_all();
	now += RETENTION_IDLE_MS;
	assert_int_equal(retention_step(&S, now), 1); /* the task; its head waits for it */
	commit_all();
	assert_false(in_store(waiting_id));
	assert_true(in_store(head_id));
	now += RETENTION_IDLE_MS;
	assert_int_equal(retention_step(&S, now), 1);
	commit_all();
	assert_false(in_store(head_id));
	assert_false(has_output(head_id));
}

static void off_keeps_everything(void **state)
{
	(void)state;
	struct job *j = add_job(GPOOL__JOB_STATE__COMPLETED, gp_now() - 86400 * 30, 0);
	uint64_t id = j->id;
	commit_all();
	retention_set(S.retention, 0, 256);
	assert_int_equal(retention_step(&S, 1000000), 0);
	assert_true(in_store(id) && has_output(id));
	/* a job mid-write (in the open transaction) waits for the next step */
	retention_set(S.retention, AGE_MS, 256);
	j->in_txn = true;
	assert_int_equal(retention_step(&S, 2000000), 0);
	assert_true(in_store(id));
	j->in_txn = false;
	/* a rolled-back purge keeps the output (the row is back) */
	assert_int_equal(retention_step(&S, 3000000), 1);
	store_fail_txn(S.store);
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), -1);
	retention_committed(&S, false);
	assert_true(in_store(id) && has_output(id));
	assert_int_equal(retention_purged(S.retention), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(purges_old_jobs_in_batches, setup, teardown),
	    cmocka_unit_test_setup_teardown(off_keeps_everything, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

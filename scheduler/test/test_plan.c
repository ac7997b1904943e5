/* Placement on a real store (SQLite in a temp dir) and a real inproc socket: all-or-nothing
 * allocation, gang spread over -N nodes, priority order, pending reasons, EASY backfill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gschedd.h"
#include "jobs.h"
#include "lifecycle.h"
#include "net.h"
#include "nodes.h"
#include "output.h"
#include "plan.h"
#include "running.h"
#include "store.h"
#include "u64map.h"
#include "util.h"

static struct gsched S;
static char dir[64];

static const char *namer(int idx)
{
	return nodes_name(S.nodes, idx);
}

static int setup(void **state)
{
	gp_error_t err;
	memset(&S, 0, sizeof(S));
	strcpy(dir, "/tmp/gp-plan-XXXXXX");
	assert_non_null(mkdtemp(dir));
	S.cfg = gp_config_create(GP_SCHED);
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	store_set_node_namer(namer);
	S.output = output_create(dir, 1 << 20, &err);
	S.nodes = nodes_create();
	S.jobs = jobs_create(1);
	S.running = gp_u64map_create();
	/* no credential is made until a flush, so no munged is needed here */
	S.net = net_create("inproc://plan-test", NULL, 1 << 20, 0, &err);
	assert_non_null(S.net);
	S.kill_grace_ms = 1000;
	return 0;
}

static int teardown(void **state)
{
	net_destroy(&S.net);
	store_destroy(&S.store);
	output_destroy(&S.output);
	jobs_destroy(&S.jobs);
	nodes_destroy(&S.nodes);
	gp_u64map_destroy(&S.running);
	gp_config_destroy(&S.cfg);
	gp_rm_rf(dir);
	return 0;
}

static void add_node(const char *name, uint32_t cpus, uint64_t mem)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = mem;
	assert_true(nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name)) >= 0);
}

static struct job *submit(uint32_t ntasks, uint32_t cpt, uint32_t nodes, uint32_t limit, int prio)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = jobs_next_id(S.jobs);
	j->user = strdup("u");
	j->name = strdup("t");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = GPOOL__JOB_STATE__PENDING;
	j->ntasks = ntasks;
	j->cpus_per_task = cpt;
	j->nodes_min = j->nodes_max = nodes;
	j->time_limit = limit;
	j->priority = prio;
	j->submit_time = gp_now();
	char *argv[] = { "true" };
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = ntasks;
	sp.cpus_per_task = cpt;
	sp.nodes_min = sp.nodes_max = nodes;
	sp.time_limit_sec = limit;
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len), 0);
	j->durable = true;
	return j;
}

static void ends(struct job *j)
{
	for (uint32_t r = 0; r < j->ntasks; r++) {
		Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
		ev.job_id = j->id;
		ev.attempt = j->attempt;
		ev.rank = r;
		ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
		job_task_event(&S, j->tasks[r].node, &ev);
	}
}

static void gang_spread(void **state)
{
	add_node("h1", 4, 1000);
	add_node("h2", 4, 1000);
	add_node("h3", 4, 1000);
	struct job *j = submit(3, 1, 3, 0, 0);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j->attempt, 1);
	/* one task per node, three different nodes */
	assert_true(j->tasks[0].node != j->tasks[1].node);
	assert_true(j->tasks[1].node != j->tasks[2].node);
	assert_true(j->tasks[0].node != j->tasks[2].node);
	ends(j);
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETED);
	for (int i = 0; i < 3; i++)
		assert_int_equal(nodes_get(S.nodes, i)->cpus_used, 0);
}

static void all_or_nothing_and_reasons(void **state)
{
	add_node("h1", 2, 1000);
	add_node("h2", 2, 1000);
	struct job *big = submit(1, 8, 0, 0, 0); /* 8 CPUs on one node: never fits */
	struct job *wide = submit(4, 1, 0, 60, 0);
	struct job *more = submit(1, 1, 0, 60, 0);
	plan_run(&S);
	assert_int_equal(big->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(big->reason, PEND_TOO_LARGE);
	assert_int_equal(wide->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(more->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(more->reason, PEND_RESOURCES);
	struct job *held = submit(1, 1, 0, 0, 0);
	held->hold = true;
	plan_run(&S);
	assert_int_equal(held->reason, PEND_HELD);
	ends(wide);
	plan_run(&S);
	assert_int_equal(more->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(held->state, GPOOL__JOB_STATE__PENDING);
}

static void priority_order(void **state)
{
	add_node("h1", 1, 1000);
	struct job *blocker = submit(1, 1, 0, 0, 0);
	plan_run(&S);
	assert_int_equal(blocker->state, GPOOL__JOB_STATE__RUNNING);
	struct job *low = submit(1, 1, 0, 0, 0);
	struct job *high = submit(1, 1, 0, 0, 50);
	plan_run(&S);
	ends(blocker);
	plan_run(&S);
	assert_int_equal(high->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(low->state, GPOOL__JOB_STATE__PENDING);
}

static void easy_backfill(void **state)
{
	add_node("h1", 2, 1000);
	add_node("h2", 2, 1000);
	add_node("h3", 2, 1000);
	struct job *a = submit(4, 1, 0, 20, 0); /* 4 of 6 CPUs for 20 s */
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	struct job *b = submit(6, 1, 0, 60, 0); /* the whole cluster: waits for a */
	struct job *c = submit(1, 1, 0, 5, 0);	/* short: ends before b's reservation */
	struct job *d = submit(1, 1, 0, 600, 0); /* long: would delay b */
	plan_run(&S);
	assert_int_equal(b->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(b->reason, PEND_RESOURCES);
	assert_true(b->reserved_start > 0);
	assert_true(fabs(b->reserved_start - (a->start_time + 20)) < 1.0);
	assert_int_equal(c->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(d->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(d->reason, PEND_PRIORITY);
	/* unlimited jobs never backfill ahead of a finite reservation */
	struct job *e = submit(1, 1, 0, 0, 0);
	plan_run(&S);
	assert_int_equal(e->state, GPOOL__JOB_STATE__PENDING);
	ends(a);
	ends(c);
	plan_run(&S);
	assert_int_equal(b->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(d->state, GPOOL__JOB_STATE__PENDING);
}

static void node_failure_ends_gang(void **state)
{
	add_node("h1", 2, 1000);
	add_node("h2", 2, 1000);
	struct job *j = submit(2, 1, 2, 0, 0);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	int dead = j->tasks[0].node;
	job_node_failed(&S, dead);
	/* the other rank is being killed: the job is completing, then NODE_FAIL */
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETING);
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = 1;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	ev.status = 9; /* killed by SIGKILL */
	job_task_event(&S, j->tasks[1].node, &ev);
	assert_int_equal(j->state, GPOOL__JOB_STATE__NODE_FAIL);
}

static void failing_rank_kills_gang(void **state)
{
	add_node("h1", 4, 1000);
	struct job *j = submit(3, 1, 0, 0, 0);
	plan_run(&S);
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = 1;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	ev.status = 3 << 8; /* exit 3 */
	job_task_event(&S, j->tasks[1].node, &ev);
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETING);
	assert_int_equal(j->kill_reason, GPOOL__JOB_STATE__FAILED);
	for (uint32_t r = 0; r < 3; r += 2) {
		ev.rank = r;
		ev.status = 15; /* SIGTERM */
		job_task_event(&S, j->tasks[r].node, &ev);
	}
	assert_int_equal(j->state, GPOOL__JOB_STATE__FAILED);
	assert_int_equal(j->exit_code, 143);
	/* a stale attempt's event changes nothing */
	ev.attempt = 99;
	job_task_event(&S, 0, &ev);
	assert_int_equal(j->state, GPOOL__JOB_STATE__FAILED);
}

static void node_failure_requeues(void **state)
{
	S.requeue = true;
	S.max_attempts = 2;
	add_node("h1", 1, 1000);
	add_node("h2", 1, 1000);
	struct job *j = submit(1, 1, 0, 0, 0);
	plan_run(&S);
	assert_int_equal(j->attempt, 1);
	int first = j->tasks[0].node;
	nodes_get(S.nodes, first)->state = GPOOL__NODE_STATE__NODE_DOWN;
	job_node_failed(&S, first);
	assert_int_equal(j->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(j->reason, PEND_REQUEUED);
	assert_int_equal(running_count(&S), 0);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j->attempt, 2);
	assert_true(j->tasks[0].node != first);
	/* the last attempt allowed: a second failure ends it */
	int second = j->tasks[0].node;
	nodes_get(S.nodes, second)->state = GPOOL__NODE_STATE__NODE_DOWN;
	job_node_failed(&S, second);
	assert_int_equal(j->state, GPOOL__JOB_STATE__NODE_FAIL);
	S.requeue = false;
}

static void restore_after_restart(void **state)
{
	add_node("h1", 2, 1000);
	add_node("h2", 2, 1000);
	struct job *j = submit(2, 1, 2, 0, 0);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), 0);
	uint64_t id = j->id;
	/* a new scheduler process: empty tables, the same store */
	struct job *loaded = store_job_load(S.store, id);
	assert_non_null(loaded);
	struct nodes *old = S.nodes;
	struct jobs *oldj = S.jobs;
	S.nodes = nodes_create();
	S.jobs = jobs_create(1);
	gp_u64map_t *oldr = S.running;
	S.running = gp_u64map_create();
	loaded->durable = true;
	assert_int_equal(jobs_add(S.jobs, loaded), 0);
	assert_int_equal(job_restore(&S, loaded), 0);
	assert_int_equal(nodes_count(S.nodes), 2);
	assert_int_equal(nodes_get(S.nodes, 0)->state, GPOOL__NODE_STATE__NODE_STATE_UNKNOWN);
	assert_int_equal(loaded->attempt, 1);
	assert_int_equal(running_count(&S), 1);
	/* its agent registers again: the CPUs are accounted as busy */
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)nodes_name(S.nodes, loaded->tasks[0].node);
	reg.cpus = 2;
	reg.mem_mb = 1000;
	int idx = nodes_register(S.nodes, &reg, (const uint8_t *)"x", 1);
	job_readopt_node(&S, idx);
	assert_int_equal(nodes_get(S.nodes, idx)->cpus_used, 1);
	nodes_destroy(&old);
	jobs_destroy(&oldj);
	gp_u64map_destroy(&oldr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(gang_spread, setup, teardown),
		cmocka_unit_test_setup_teardown(all_or_nothing_and_reasons, setup, teardown),
		cmocka_unit_test_setup_teardown(priority_order, setup, teardown),
		cmocka_unit_test_setup_teardown(easy_backfill, setup, teardown),
		cmocka_unit_test_setup_teardown(node_failure_ends_gang, setup, teardown),
		cmocka_unit_test_setup_teardown(failing_rank_kills_gang, setup, teardown),
		cmocka_unit_test_setup_teardown(node_failure_requeues, setup, teardown),
		cmocka_unit_test_setup_teardown(restore_after_restart, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

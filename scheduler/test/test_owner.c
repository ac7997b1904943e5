/* test_owner.c: the PCs' owners in gschedd (owner.h) on the unit fixture (a real store): the
 * histogram's arithmetic and decay, placement that prefers the PC most likely to stay free for
 * a job's time limit (a made-up history), no job on a PC whose owner is active, the history
 * kept in the store, a vacate that does not count against max_attempts, frozen time that moves
 * the deadline. */
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

#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/owner.h"
#include "scheduler/core/plan.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_owner.h"
#include "common/util.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	fixture_up("owner");
	S.kill_grace_ms = 1000;
	return 0;
}

static int teardown(void **state)
{
	fixture_down();
	return 0;
}

static int add_node(const char *name, uint32_t cpus)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = 1000;
	int idx = nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name));
	assert_true(idx >= 0);
	return idx;
}

static struct job *submit(uint32_t ntasks, uint32_t limit)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = jobs_next_id(S.jobs);
	j->user = strdup("u");
	j->name = strdup("t");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = GPOOL__JOB_STATE__PENDING;
	j->ntasks = ntasks;
	j->cpus_per_task = 1;
	j->nodes_min = j->nodes_max = 1;
	j->time_limit = limit;
	j->submit_time = gp_now();
	char *argv[] = {"true"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = ntasks;
	sp.cpus_per_task = 1;
	sp.nodes_min = sp.nodes_max = 1;
	sp.time_limit_sec = limit;
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
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

/* the agent's report: active or not, with hours observed */
static void report(int node, bool active, const Gpool__OwnerHour *hours, size_t n)
{
	Gpool__OwnerState os = GPOOL__OWNER_STATE__INIT;
	Gpool__OwnerHour *hp[OWNER_HOURS];
	os.active = active;
	os.since = gp_now();
	os.source = active ? "file" : "";
	os.policy = GPOOL__OWNER_POLICY__OWNER_SUSPEND;
	for (size_t i = 0; i < n; i++)
		hp[i] = (Gpool__OwnerHour *)&hours[i];
	os.hours = hp;
	os.n_hours = n;
	owner_node_report(&S, node, &os);
}

static void histogram(void **state)
{
	struct node_owner o = {0};
	assert_float_equal(owner_free_chance(&o, gp_now(), 7200), 1.0, 1e-9);
	/* four weeks busy at Monday 10:00: the average of four observations */
	for (int w = 0; w < 4; w++)
		owner_hist_add(&o, 10, 1.0);
	assert_float_equal(o.hist[10], 1.0, 1e-9);
	assert_int_equal(o.weeks[10], 4);
	/* then quiet weeks: each new week weighs a quarter, the history decays */
	owner_hist_add(&o, 10, 0.0);
	assert_float_equal(o.hist[10], 0.75, 1e-9);
	for (int w = 0; w < 8; w++)
		owner_hist_add(&o, 10, 0.0);
	assert_float_equal(o.hist[10], pow(0.75, 9), 1e-9); /* nine quiet weeks */
	/* a first observation is taken as it is; out of range ones are ignored */
	owner_hist_add(&o, 11, 0.5);
	assert_float_equal(o.hist[11], 0.5, 1e-9);
	owner_hist_add(&o, 168, 1.0);
	owner_hist_add(&o, -1, 1.0);
	/* the chance over a span: (1 - fraction) per hour covered, partial hours as powers */
	struct node_owner p = {0};
	double now = gp_now();
	double hour_start = floor(now / 3600) * 3600;
	int h0 = owner_hour_of_week(hour_start);
	owner_hist_add(&p, h0, 0.5);
	owner_hist_add(&p, (h0 + 1) % OWNER_HOURS, 0.5);
	assert_float_equal(owner_free_chance(&p, hour_start, 3600), 0.5, 1e-9);
	assert_float_equal(owner_free_chance(&p, hour_start, 7200), 0.25, 1e-9);
	assert_float_equal(owner_free_chance(&p, hour_start, 1800), sqrt(0.5), 1e-9);
	/* hours never observed do not count */
	assert_float_equal(owner_free_chance(&p, hour_start + 7200, 3600), 1.0, 1e-9);
}

/* A made-up history: "desk"'s owner has been at it during the coming two hours for weeks,
 * "gamer"'s now and then, "lab"'s never: a two-hour job goes to lab, then gamer, then desk. */
static void placement_prefers_free_pc(void **state)
{
	int desk = add_node("desk", 1), gamer = add_node("gamer", 1), lab = add_node("lab", 1);
	double now = gp_now();
	double hour_start = floor(now / 3600) * 3600;
	Gpool__OwnerHour h[6];
	int frac_desk = 3240, frac_gamer = 900; /* seconds of the hour */
	for (int k = 0; k < 3; k++) {
		gpool__owner_hour__init(&h[k]);
		h[k].hour_of_week = (uint32_t)owner_hour_of_week(hour_start + 3600.0 * k);
		h[k].end = hour_start - 7 * 24 * 3600.0 + 3600.0 * (k + 1); /* a week ago */
	}
	for (int k = 0; k < 3; k++)
		h[k].active_sec = (uint32_t)frac_desk;
	report(desk, false, h, 3);
	for (int k = 0; k < 3; k++)
		h[k].active_sec = (uint32_t)frac_gamer;
	report(gamer, false, h, 3);
	for (int k = 0; k < 3; k++)
		h[k].active_sec = 0;
	report(lab, false, h, 3);
	assert_true(nodes_get(S.nodes, desk)->owner.hist_any);
	double cd = owner_free_chance(&nodes_get(S.nodes, desk)->owner, now, 7200);
	double cg = owner_free_chance(&nodes_get(S.nodes, gamer)->owner, now, 7200);
	double cl = owner_free_chance(&nodes_get(S.nodes, lab)->owner, now, 7200);
	assert_true(cl > cg && cg > cd);
	assert_float_equal(cl, 1.0, 1e-9);
	struct job *a = submit(1, 7200), *b = submit(1, 7200), *c = submit(1, 7200);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(a->tasks[0].node, lab);
	assert_int_equal(b->tasks[0].node, gamer);
	assert_int_equal(c->tasks[0].node, desk);
	/* a resent report counts no hour twice */
	h[0].active_sec = 3600;
	report(lab, false, h, 1);
	assert_float_equal(nodes_get(S.nodes, lab)->owner.hist[h[0].hour_of_week], 0.0, 1e-9);
	/* the history is in the store: another gschedd reads it back */
	struct node_owner back = {0};
	assert_int_equal(store_owner_hist_load(store_db(S.store), "desk", &back), 0);
	assert_memory_equal(back.hist, nodes_get(S.nodes, desk)->owner.hist, sizeof(back.hist));
	assert_int_equal(store_owner_hist_load(store_db(S.store), "nowhere", &back), 1);
	ends(a);
	ends(b);
	ends(c);
}

static void active_owner_takes_nothing(void **state)
{
	int h1 = add_node("h1", 2), h2 = add_node("h2", 2);
	report(h1, true, NULL, 0);
	assert_false(node_usable(nodes_get(S.nodes, h1)));
	struct job *a = submit(1, 60), *b = submit(1, 60), *c = submit(1, 60);
	plan_run(&S);
	assert_int_equal(a->tasks[0].node, h2);
	assert_int_equal(b->tasks[0].node, h2);
	assert_int_equal(c->state, GPOOL__JOB_STATE__PENDING); /* h1's cpus stay unused */
	report(h1, false, NULL, 0);
	plan_run(&S);
	assert_int_equal(c->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(c->tasks[0].node, h1);
	/* NodeInfo carries it */
	Gpool__NodeInfo ni;
	nodeinfo_fill(&ni, nodes_get(S.nodes, h1));
	assert_non_null(ni.owner);
	assert_false(ni.owner->active);
	ends(a);
	ends(b);
	ends(c);
}

/* vacated twice with max_attempts 1: queued again both times, then completes */
static void vacate_not_counted(void **state)
{
	S.requeue = true;
	S.max_attempts = 1;
	add_node("h1", 1);
	struct job *j = submit(1, 600);
	for (uint32_t att = 1; att <= 2; att++) {
		plan_run(&S);
		assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
		assert_int_equal(j->attempt, att);
		Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
		ev.job_id = j->id;
		ev.attempt = att;
		ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
		ev.status = 15; /* SIGTERM */
		ev.vacated = true;
		job_task_event(&S, j->tasks[0].node, &ev);
		assert_int_equal(j->state, GPOOL__JOB_STATE__PENDING);
		assert_int_equal(j->reason, PEND_REQUEUED);
		assert_int_equal(j->vacates, att);
		assert_non_null(strstr(j->end_reason, "vacated"));
	}
	uint64_t fms;
	uint32_t vac;
	store_owner_job_load(store_db(S.store), j->id, &fms, &vac);
	assert_int_equal(vac, 2);
	plan_run(&S);
	assert_int_equal(j->attempt, 3);
	/* a failure now is the job's own: max_attempts 1 counts attempts less vacates */
	ends(j);
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETED);
	Gpool__JobInfo ji;
	jobinfo_fill(&ji, j, S.nodes);
	assert_int_equal(ji.vacates, 2);
	jobinfo_release(&ji);
}

/* frozen time reported by the agent moves the deadline; a frozen job does not time out */
static void frozen_moves_deadline(void **state)
{
	int h1 = add_node("h1", 1);
	struct job *j = submit(1, 60);
	plan_run(&S);
	int64_t dl = j->deadline_ms;
	assert_true(dl > 0);
	Gpool__HeldTask h = GPOOL__HELD_TASK__INIT;
	h.job_id = j->id;
	h.attempt = j->attempt;
	h.frozen = true;
	h.frozen_ms = 5000;
	owner_task_held(&S, j, &h);
	assert_true(j->frozen);
	assert_int_equal(j->deadline_ms, dl + 5000);
	owner_task_held(&S, j, &h); /* the same report again: no change */
	assert_int_equal(j->deadline_ms, dl + 5000);
	j->deadline_ms = gp_mono_ms() - 1; /* past, while frozen */
	jobs_tick(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	h.frozen = false;
	h.frozen_ms = 7000;
	owner_task_held(&S, j, &h);
	assert_false(j->frozen);
	assert_int_equal(j->frozen_ms, 7000);
	(void)h1;
	ends(j);
	Gpool__JobInfo ji;
	jobinfo_fill(&ji, j, S.nodes);
	assert_float_equal(ji.frozen_sec, 7.0, 1e-9);
	jobinfo_release(&ji);
}

/* gsub --signal=USR1@30: the signal goes once, 30 s before the limit, and the job runs on */
static void signal_before_limit(void **state)
{
	add_node("h1", 1);
	struct job *j = submit(1, 600);
	j->ckpt_signal = 10;
	j->ckpt_sec = 30;
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	jobs_tick(&S);
	assert_false(j->ckpt_signalled); /* 600 s to go */
	j->deadline_ms = gp_mono_ms() + 20000;
	jobs_tick(&S);
	assert_true(j->ckpt_signalled);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	j->frozen = true; /* a frozen job's limit waits */
	j->deadline_ms = gp_mono_ms() - 1;
	jobs_tick(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	j->frozen = false;
	jobs_tick(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETING);
	assert_int_equal(j->kill_reason, GPOOL__JOB_STATE__TIMEOUT);
	ends(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(histogram, setup, teardown),
	    cmocka_unit_test_setup_teardown(placement_prefers_free_pc, setup, teardown),
	    cmocka_unit_test_setup_teardown(active_owner_takes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(vacate_not_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(frozen_moves_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(signal_before_limit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

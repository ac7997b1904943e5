/* Service jobs on a real store and an inproc socket: replicas spread over the nodes, a replica
 * that exits restarts after a backoff and shows a crash loop after quick failures, one whose
 * node fails is placed elsewhere at once, scale down and up, cancel stops every replica, a
 * rolling update, a scale-down and a node's drain drain a replica before they stop it; a
 * replica that is a gang of ranks (rank 0's port serves) restarts whole when one rank ends,
 * shrinks to the nodes it has when one goes (-N MIN-MAX), waits below the minimum, grows back
 * when the node returns, and restarts without a PC whose owner came back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/plan.h"
#include "scheduler/core/running.h"
#include "scheduler/core/events.h"
#include "scheduler/features/service.h"
#include "scheduler/store/store.h"
#include "scheduler/features/svcreport.h"
#include "common/util.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	(void)state;
	fixture_up("service");
	S.kill_grace_ms = 1000;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fixture_down();
	return 0;
}

static void add_node(const char *name, uint32_t cpus)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = 1000;
	assert_true(nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name)) >= 0);
}

/* A service whose replicas are gangs of ntasks ranks on nodes_min..nodes_max nodes (0 and 0:
 * one task, no -N). */
static struct job *submit_gang(uint32_t replicas, uint32_t ntasks, uint32_t nodes_min,
			       uint32_t nodes_max)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = jobs_next_id(S.jobs);
	j->user = strdup("u");
	j->name = strdup("llm");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->submit_time = gp_now();
	j->cpus_per_task = 1;
	j->ntasks = ntasks;
	char *argv[] = {"serve"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = ntasks;
	sp.nodes_min = nodes_min;
	sp.nodes_max = nodes_max;
	sp.cpus_per_task = 1;
	sp.service = true;
	sp.replicas = replicas;
	sp.health_path = "/health";
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(service_submitted(&S, j, &sp), 0);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
	j->durable = true;
	return j;
}

static struct job *submit_service(uint32_t replicas)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = jobs_next_id(S.jobs);
	j->user = strdup("u");
	j->name = strdup("web");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->submit_time = gp_now();
	j->cpus_per_task = 1;
	j->ntasks = 1;
	char *argv[] = {"serve"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = 1;
	sp.cpus_per_task = 1;
	sp.service = true;
	sp.replicas = replicas;
	sp.health_path = "/health";
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(service_submitted(&S, j, &sp), 0);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
	j->durable = true;
	return j;
}

/* What a commit does for the jobs gschedd made itself. */
static void committed(void)
{
	effects_carry_out(&S); /* the orders first: the replicas' inserts */
	for (size_t i = 0; i < S.ntouched; i++) {
		S.touched[i]->in_txn = false;
		S.touched[i]->durable = true;
	}
	S.ntouched = 0;
}

static void tick_and_plan(void)
{
	committed();
	service_tick(&S);
	committed();
	plan_run(&S);
}

static struct job *replica(const struct job *svc, uint32_t index)
{
	Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
	service_info_fill(&S, svc, &ji);
	struct job *r = NULL;
	for (size_t i = 0; i < ji.n_replicas; i++)
		if (ji.replicas[i]->index == index)
			r = jobs_get(S.jobs, ji.replicas[i]->job_id);
	service_info_release(&ji);
	return r;
}

static void exits(struct job *j, int status)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = 0;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	ev.status = status;
	job_task_event(&S, j->tasks[0].node, &ev);
}

/* The agent's word on j's port, as its heartbeat's held task brings it. */
static void port_is(struct job *j, Gpool__PortState st, int32_t holder)
{
	Gpool__HeldTask h = GPOOL__HELD_TASK__INIT;
	h.job_id = j->id;
	h.attempt = j->attempt;
	h.port = j->port;
	h.port_state = st;
	h.port_holder_pid = holder;
	h.port_holder_uid = holder ? 1002 : 0;
	service_port_seen(&S, j, &h);
}

/* The replica has started, listens on a port and has run long enough to be replaced. */
static void started(struct job *j)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = 0;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_STARTED;
	ev.port = 8080;
	job_task_event(&S, j->tasks[0].node, &ev);
	port_is(j, GPOOL__PORT_STATE__PORT_OWN, 0);
	j->start_time -= 10 * SVC_ROLL_SETTLE_SEC;
}

static bool draining(const struct job *svc, uint32_t index, bool *ready)
{
	Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
	service_info_fill(&S, svc, &ji);
	bool d = false;
	for (size_t i = 0; i < ji.n_replicas; i++)
		if (ji.replicas[i]->index == index) {
			d = ji.replicas[i]->draining;
			*ready = ji.replicas[i]->ready;
		}
	service_info_release(&ji);
	return d;
}

/* The command in job id's stored spec. */
static bool runs(uint64_t id, const char *cmd)
{
	Gpool__JobSpec *sp = store_job_spec(S.store, id);
	assert_non_null(sp);
	bool same = sp->n_argv == 1 && strcmp(sp->argv[0], cmd) == 0;
	gpool__job_spec__free_unpacked(sp, NULL);
	return same;
}

static void spread_restart_crash_loop(void **state)
{
	(void)state;
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_service(3);
	tick_and_plan();
	assert_int_equal(svc->state, GPOOL__JOB_STATE__RUNNING);
	struct job *r[3];
	for (uint32_t i = 0; i < 3; i++) {
		r[i] = replica(svc, i);
		assert_non_null(r[i]);
		assert_int_equal(r[i]->state, GPOOL__JOB_STATE__RUNNING);
		assert_int_equal(r[i]->svc_of, svc->id);
	}
	/* one per node, though each node could hold two */
	assert_true(r[0]->tasks[0].node != r[1]->tasks[0].node);
	assert_true(r[1]->tasks[0].node != r[2]->tasks[0].node);
	assert_true(r[0]->tasks[0].node != r[2]->tasks[0].node);

	/* an exit (code 1) at once: requeued with a backoff, not started before it */
	exits(r[0], 1 << 8);
	assert_int_equal(r[0]->state, GPOOL__JOB_STATE__PENDING);
	assert_true(r[0]->not_before_ms > gp_mono_ms());
	assert_int_equal(service_replica(&S, r[0])->quick_fails, 1);
	tick_and_plan();
	assert_int_equal(r[0]->state, GPOOL__JOB_STATE__PENDING);
	for (int k = 2; k <= 3; k++) {
		r[0]->not_before_ms = gp_mono_ms() - 1; /* the backoff has passed */
		tick_and_plan();
		assert_int_equal(r[0]->state, GPOOL__JOB_STATE__RUNNING);
		assert_int_equal(r[0]->attempt, k);
		exits(r[0], 1 << 8);
	}
	assert_int_equal(service_replica(&S, r[0])->quick_fails, 3);
	Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
	service_info_fill(&S, svc, &ji);
	assert_int_equal(ji.n_replicas, 3);
	assert_true(ji.replicas[0]->crash_loop);
	assert_int_equal(ji.replicas[0]->restarts, 2);
	assert_false(ji.replicas[1]->crash_loop);
	assert_int_equal(ji.replicas_wanted, 3);
	service_info_release(&ji);
	/* the backoff doubles: 500 ms, 1 s, 2 s */
	int64_t wait = r[0]->not_before_ms - gp_mono_ms();
	assert_true(wait > 1500 && wait <= 2000);
}

static void node_failure_moves_at_once(void **state)
{
	(void)state;
	add_node("h1", 2);
	add_node("h2", 2);
	struct job *svc = submit_service(1);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	int first = r->tasks[0].node;
	nodes_get(S.nodes, first)->state = GPOOL__NODE_STATE__NODE_DOWN;
	job_node_failed(&S, first);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(r->not_before_ms, 0);
	assert_int_equal(service_replica(&S, r)->quick_fails, 0);
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_true(r->tasks[0].node != first);
	assert_int_equal(r->attempt, 2);
}

static void scale_and_cancel(void **state)
{
	(void)state;
	add_node("h1", 4);
	add_node("h2", 4);
	struct job *svc = submit_service(3);
	tick_and_plan();
	struct job *r2 = replica(svc, 2), *r1 = replica(svc, 1), *r0 = replica(svc, 0);
	char text[128];
	assert_int_equal(service_scale(&S, svc, 1, text, sizeof(text)), 0);
	committed(); /* the new count is on disk: the next tick stops the extra replicas */
	service_tick(&S);
	assert_int_equal(r2->state, GPOOL__JOB_STATE__COMPLETING);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__COMPLETING);
	exits(r2, SIGTERM);
	exits(r1, SIGTERM);
	assert_int_equal(r2->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(r0->state, GPOOL__JOB_STATE__RUNNING);
	/* up again: a new job for index 1 */
	assert_int_equal(service_scale(&S, svc, 2, text, sizeof(text)), 0);
	tick_and_plan();
	struct job *n1 = replica(svc, 1);
	assert_non_null(n1);
	assert_true(n1 != r1 && n1->id != r1->id);
	assert_int_equal(n1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(service_scale(&S, svc, 5000, text, sizeof(text)), -1);
	assert_non_null(strstr(text, "out of range"));
	/* cancel: the service ends at once, its replicas when they have exited */
	service_cancel(&S, svc, "cancelled by test");
	assert_int_equal(svc->state, GPOOL__JOB_STATE__CANCELLED);
	exits(r0, SIGTERM);
	exits(n1, SIGTERM);
	assert_int_equal(r0->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(n1->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(running_count(&S), 0);
	/* nothing restarts a replica of a cancelled service */
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__CANCELLED);
}

static void spec_stale(void **state)
{
	(void)state;
	char *a[] = {"serve", "--port", "1"}, *b[] = {"serve", "--port", "2"};
	Gpool__StageEntry e1 = GPOOL__STAGE_ENTRY__INIT, e2 = GPOOL__STAGE_ENTRY__INIT;
	Gpool__StageEntry *s1[] = {&e1}, *s2[] = {&e2};
	e1.path = e2.path = "index.html";
	e1.size = e2.size = 2;
	Gpool__JobSpec svc = GPOOL__JOB_SPEC__INIT, rep = GPOOL__JOB_SPEC__INIT;
	svc.argv = rep.argv = a;
	svc.n_argv = rep.n_argv = 3;
	svc.stage = s1;
	rep.stage = s2;
	svc.n_stage = rep.n_stage = 1;
	rep.replica_index = 4; /* what spawn sets differs: not a change */
	rep.name = "web.4";
	assert_false(service_spec_stale(&svc, &rep));
	rep.argv = b;
	assert_true(service_spec_stale(&svc, &rep));
	rep.argv = a;
	e2.size = 3; /* the same file name, new contents */
	assert_true(service_spec_stale(&svc, &rep));
	e2.size = 2;
	rep.n_stage = 0;
	assert_true(service_spec_stale(&svc, &rep));
	rep.n_stage = 1;
	uint8_t sc[] = "#!/bin/sh\n";
	svc.script.data = sc;
	svc.script.len = sizeof(sc) - 1;
	assert_true(service_spec_stale(&svc, &rep));
}

/* gpool update: the first replica drains (listed draining, not ready, still running) for
 * service_drain, then restarts on the new command; one ending while it drains restarts on the
 * new command at once; a gschedd restart finds the replica not yet replaced stale again. */
static void update_drains_then_replaces(void **state)
{
	(void)state;
	S.service_drain_ms = 60000;
	add_node("h1", 2);
	add_node("h2", 2);
	struct job *svc = submit_service(2);
	tick_and_plan();
	struct job *r0 = replica(svc, 0), *r1 = replica(svc, 1);
	started(r0);
	started(r1);
	char *argv[] = {"serve2"};
	char text[128];
	assert_int_equal(service_update(&S, svc, NULL, 0, NULL, 0, text, sizeof(text)), -1);
	assert_non_null(strstr(text, "no new command or files"));
	assert_int_equal(service_update(&S, svc, argv, 1, NULL, 0, text, sizeof(text)), 0);
	assert_true(service_replica(&S, r0)->stale && service_replica(&S, r1)->stale);
	tick_and_plan();
	bool ready = true;
	assert_true(draining(svc, 0, &ready));
	assert_false(ready);
	assert_int_equal(r0->state, GPOOL__JOB_STATE__RUNNING);
	assert_false(draining(svc, 1, &ready));
	assert_true(ready);
	tick_and_plan(); /* one at a time: r1 waits while r0 drains */
	assert_false(draining(svc, 1, &ready));

	/* a gschedd restart now: the store says r1 (and r0) are not on the new command */
	Gpool__JobSpec *sp = store_job_spec(S.store, r1->id);
	struct job again = {0};
	again.id = r1->id;
	again.state = GPOOL__JOB_STATE__RUNNING;
	service_loaded(&S, &again, sp);
	gpool__job_spec__free_unpacked(sp, NULL);
	assert_true(service_replica(&S, &again)->stale); /* r1's state: the same id */

	/* the drain is over: r0 stops and starts again on the new command */
	service_replica(&S, r0)->drain_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__COMPLETING);
	exits(r0, SIGTERM);
	assert_true(runs(r0->id, "serve2"));
	assert_false(service_replica(&S, r0)->stale);
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(service_replica(&S, r0)->drain_ms, 0);
	started(r0);

	/* r1 drains next, and exits on its own before its drain is over */
	tick_and_plan();
	assert_true(draining(svc, 1, &ready));
	assert_true(runs(r1->id, "serve"));
	exits(r1, 1 << 8);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(service_replica(&S, r1)->drain_ms, 0);
	assert_false(service_replica(&S, r1)->stale);
	assert_true(runs(r1->id, "serve2"));
}

/* Scaled down, a running replica drains first; scaled up again before its drain is over, it
 * stays. */
static void scale_down_drains(void **state)
{
	(void)state;
	S.service_drain_ms = 60000;
	add_node("h1", 2);
	add_node("h2", 2);
	struct job *svc = submit_service(2);
	tick_and_plan();
	struct job *r1 = replica(svc, 1);
	started(r1);
	char text[128];
	assert_int_equal(service_scale(&S, svc, 1, text, sizeof(text)), 0);
	tick_and_plan();
	bool ready = true;
	assert_true(draining(svc, 1, &ready));
	assert_false(ready);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(service_scale(&S, svc, 2, text, sizeof(text)), 0);
	tick_and_plan();
	assert_false(draining(svc, 1, &ready));
	assert_true(ready);
	/* down again, and this time the drain runs out */
	assert_int_equal(service_scale(&S, svc, 1, text, sizeof(text)), 0);
	tick_and_plan();
	assert_true(draining(svc, 1, &ready));
	service_replica(&S, r1)->drain_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r1->state, GPOOL__JOB_STATE__COMPLETING);
	exits(r1, SIGTERM);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__CANCELLED);
}

/* A gateway's report of replica j: draining (to it) with n requests in flight. */
static void gateway_says(struct job *j, bool draining, uint32_t n)
{
	Gpool__ReplicaReport r = GPOOL__REPLICA_REPORT__INIT;
	r.job_id = j->id;
	r.restarts = j->attempt - 1;
	r.healthy = true;
	r.draining = draining;
	r.outstanding = n;
	assert_int_equal(svcrep_put(S.svcrep, "gw1:80", &r, gp_mono_ms()), 0);
}

/* A drain lasts service_drain, and longer while a gateway reports requests in flight there,
 * up to service_drain_max from its start. */
static void drain_waits_for_gateways(void **state)
{
	(void)state;
	S.service_drain_ms = 60000;
	S.service_drain_max_ms = 120000;
	S.svcrep = svcrep_create();
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_service(3);
	tick_and_plan();
	struct job *r1 = replica(svc, 1), *r2 = replica(svc, 2);
	started(r1);
	started(r2);
	gateway_says(r2, false, 3); /* before the drain: that word is old news */
	char text[128];
	assert_int_equal(service_scale(&S, svc, 1, text, sizeof(text)), 0);
	tick_and_plan();
	bool ready = true;
	assert_true(draining(svc, 1, &ready));
	assert_true(draining(svc, 2, &ready));
	/* service_drain over; the gateway has r1 draining with a request still there, and has
	 * said nothing of r2 since the drain began */
	gateway_says(r1, true, 1);
	service_replica(&S, r1)->drain_ms = service_replica(&S, r2)->drain_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r2->state, GPOOL__JOB_STATE__RUNNING);
	/* r1's request answered: it stops; r2 waits on */
	gateway_says(r1, true, 0);
	tick_and_plan();
	assert_int_equal(r1->state, GPOOL__JOB_STATE__COMPLETING);
	assert_int_equal(r2->state, GPOOL__JOB_STATE__RUNNING);
	/* service_drain_max since r2's drain began: it stops, whatever the gateways say */
	service_replica(&S, r2)->drain_from_ms = gp_mono_ms() - S.service_drain_max_ms - 1;
	tick_and_plan();
	assert_int_equal(r2->state, GPOOL__JOB_STATE__COMPLETING);
	svcrep_destroy(&S.svcrep);
}

static void drain_node(int idx, bool drain)
{
	assert_int_equal(node_set_drain(nodes_get(S.nodes, idx), drain, "t"), 0);
	if (drain)
		service_node_drained(&S, idx);
}

/* gnodes drain: the node's replica drains first (listed draining, not ready, still running:
 * the gateways send it nothing new), then moves to another node at once, without a backoff;
 * one whose node is resumed before its drain is over stays. */
static void node_drain_drains_then_moves(void **state)
{
	(void)state;
	S.service_drain_ms = 60000;
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_service(2);
	tick_and_plan();
	struct job *r0 = replica(svc, 0), *r1 = replica(svc, 1);
	started(r0);
	started(r1);
	int from = r0->tasks[0].node;
	drain_node(from, true);
	bool ready = true;
	assert_true(draining(svc, 0, &ready));
	assert_false(ready);
	assert_false(draining(svc, 1, &ready));
	assert_true(ready);
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__RUNNING);
	assert_true(draining(svc, 0, &ready));
	/* the drain is over: it is stopped, and placed elsewhere at once */
	service_replica(&S, r0)->drain_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__COMPLETING);
	exits(r0, SIGTERM);
	assert_int_equal(r0->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(r0->not_before_ms, 0);
	assert_int_equal(service_replica(&S, r0)->quick_fails, 0);
	assert_string_equal(r0->end_reason, "moved off a drained node");
	tick_and_plan();
	assert_int_equal(r0->state, GPOOL__JOB_STATE__RUNNING);
	assert_true(r0->tasks[0].node != from);
	assert_int_equal(r0->attempt, 2);
	assert_false(draining(svc, 0, &ready));

	/* r1's node drained, then resumed before the drain is over: r1 stays where it is */
	int at = r1->tasks[0].node;
	drain_node(at, true);
	assert_true(draining(svc, 1, &ready));
	drain_node(at, false);
	service_replica(&S, r1)->drain_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r1->tasks[0].node, at);
	assert_int_equal(r1->attempt, 1);
	assert_false(draining(svc, 1, &ready));
	assert_true(ready);

	/* with no drain period the move is at once */
	S.service_drain_ms = 0;
	drain_node(at, true);
	assert_int_equal(r1->state, GPOOL__JOB_STATE__COMPLETING);
}

/* A service name is its owner's: another uid's service of it is refused (EPERM) while the
 * first is active, the owner may reuse it, a name that reads as a job id is refused (EINVAL);
 * once the service is cancelled the name is free. */
static void name_belongs_to_owner(void **state)
{
	(void)state;
	add_node("h1", 2);
	struct job *svc = submit_service(1); /* "web", uid 0 */
	svc->uid = 1001;
	char why[256];
	char *argv[] = {"serve"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.service = true;
	sp.name = "web";
	assert_int_equal(service_name_check(&S, &sp, 1002, why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "service name 'web' belongs to another user");
	assert_int_equal(service_name_check(&S, &sp, 1001, why, sizeof(why)), 0);
	sp.name = "web2";
	assert_int_equal(service_name_check(&S, &sp, 1002, why, sizeof(why)), 0);
	/* no -J: the command is the name */
	sp.name = "";
	argv[0] = "web";
	assert_int_equal(service_name_check(&S, &sp, 1002, why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	const char *idlike[] = {"12", "0", "12_3", "12.1", "12_[1-3]", "7.0.1"};
	for (size_t i = 0; i < sizeof(idlike) / sizeof(idlike[0]); i++) {
		sp.name = (char *)idlike[i];
		assert_true(service_name_idlike(idlike[i]));
		assert_int_equal(service_name_check(&S, &sp, 1001, why, sizeof(why)), -1);
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(why, "reads as a job id"));
	}
	const char *fine[] = {"web", "v1.2", "a12", "_12", "digits", "12a", ""};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		assert_false(service_name_idlike(fine[i]));
	/* cancelled: the name is free for anyone */
	service_cancel(&S, svc, "test");
	sp.name = "web";
	assert_int_equal(service_name_check(&S, &sp, 1002, why, sizeof(why)), 0);
}

/* A replica is ready only once its agent says that its port is its own: not before the first
 * check, not while nothing listens there, not while a squatter does (the reason names it),
 * and again once it is its own. */
static void ready_only_when_port_own(void **state)
{
	(void)state;
	add_node("h1", 2);
	struct job *svc = submit_service(1);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = r->id;
	ev.attempt = r->attempt;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_STARTED;
	ev.port = 8080;
	job_task_event(&S, r->tasks[0].node, &ev);
	const struct {
		Gpool__PortState st;
		int32_t holder;
		bool ready;
		const char *reason;
	} steps[] = {
	    {GPOOL__PORT_STATE__PORT_UNCHECKED, 0, false, "port 8080 not checked by its agent yet"},
	    {GPOOL__PORT_STATE__PORT_CLOSED, 0, false, "nothing listens on port 8080 yet"},
	    {GPOOL__PORT_STATE__PORT_OWN, 0, true, NULL},
	    {GPOOL__PORT_STATE__PORT_FOREIGN, 4242, false,
	     "port 8080 is held by pid 4242 (uid 1002), a process outside the replica"},
	    {GPOOL__PORT_STATE__PORT_FOREIGN, 0, false,
	     "port 8080 is held by a process outside the replica"},
	    {(Gpool__PortState)77, 0, false, "port 8080 not checked by its agent yet"},
	    {GPOOL__PORT_STATE__PORT_OWN, 0, true, NULL},
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		port_is(r, steps[i].st, steps[i].holder);
		Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
		service_info_fill(&S, svc, &ji);
		assert_int_equal(ji.n_replicas, 1);
		assert_int_equal(ji.replicas[0]->ready, steps[i].ready);
		if (steps[i].reason)
			assert_string_equal(ji.replicas[0]->reason, steps[i].reason);
		if (steps[i].st <= GPOOL__PORT_STATE__PORT_FOREIGN)
			assert_int_equal(ji.replicas[0]->port_state, steps[i].st);
		service_info_release(&ji);
	}
	/* a restart starts unchecked */
	exits(r, 1 << 8);
	assert_int_equal(service_replica(&S, r)->port_state, GPOOL__PORT_STATE__PORT_UNCHECKED);
}

/* Reports on replicas are a gateway's word: root and gateway_uid only; anyone else's are
 * counted, not taken. */
static void reports_from_gateways_only(void **state)
{
	(void)state;
	S.gateway_uid = 995;
	struct req r = {.s = &S, .addr = "198.18.0.1"};
	r.from.uid = 1002;
	assert_false(service_reporter(&S, &r, 3));
	assert_false(service_reporter(&S, &r, 2));
	assert_int_equal(S.svcrep_refused, 5);
	r.from.uid = 995;
	assert_true(service_reporter(&S, &r, 3));
	r.from.uid = 0;
	assert_true(service_reporter(&S, &r, 3));
	assert_int_equal(S.svcrep_refused, 5);
}

/* Rank `rank` of j ends (status), on its node; vacated: its agent stopped it for the PC's
 * owner. */
static void rank_exits(struct job *j, uint32_t rank, int status, bool vacated)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = rank;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	ev.status = status;
	ev.vacated = vacated;
	job_task_event(&S, j->tasks[rank].node, &ev);
}

/* Every rank of j that has not ended ends (the kill reached them). */
static void rest_exit(struct job *j)
{
	for (uint32_t r = 0; j->tasks && r < j->ntasks; r++)
		if (j->tasks[r].state != 2)
			rank_exits(j, r, SIGTERM, false);
}

static bool on_distinct_nodes(const struct job *j)
{
	for (uint32_t a = 0; a < j->ntasks; a++)
		for (uint32_t b = a + 1; b < j->ntasks; b++)
			if (j->tasks[a].node == j->tasks[b].node)
				return false;
	return true;
}

/* The ranks' port: a gang's rank 0 is what gateways reach, another rank's port is not the
 * replica's. */
static void gang_port_is_rank0s(void **state)
{
	(void)state;
	add_node("h1", 2);
	add_node("h2", 2);
	struct job *svc = submit_gang(1, 2, 2, 2);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->ntasks, 2);
	assert_true(on_distinct_nodes(r));
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = r->id;
	ev.attempt = r->attempt;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_STARTED;
	ev.rank = 1;
	ev.port = 9999;
	job_task_event(&S, r->tasks[1].node, &ev);
	assert_int_equal(r->port, 0);
	ev.rank = 0;
	ev.port = 8080;
	job_task_event(&S, r->tasks[0].node, &ev);
	assert_int_equal(r->port, 8080);
	/* a held rank 1 saying its port is closed does not make the replica unready */
	port_is(r, GPOOL__PORT_STATE__PORT_OWN, 0);
	Gpool__HeldTask h = GPOOL__HELD_TASK__INIT;
	h.job_id = r->id;
	h.attempt = r->attempt;
	h.rank = 1;
	h.port = 9999;
	h.port_state = GPOOL__PORT_STATE__PORT_CLOSED;
	struct sched_event seen = {
	    .kind = SEV_TASK_HELD, .job = r, .node = r->tasks[1].node, .held = &h};
	sched_publish(&S, &seen);
	r->tasks[1].state = 1;
	bool ready = false;
	assert_false(draining(svc, 0, &ready));
	assert_true(ready);
	Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
	service_info_fill(&S, svc, &ji);
	assert_int_equal(ji.replicas[0]->ranks, 2);
	assert_int_equal(ji.replicas[0]->ranks_wanted, 2);
	service_info_release(&ji);
}

/* A gang replica is one: a rank that ends, even with code 0, stops the others and the whole
 * replica restarts (after the quick-failure backoff), on as many ranks as before. */
static void gang_rank_end_restarts_all(void **state)
{
	(void)state;
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_gang(1, 3, 2, 3);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->ntasks, 3);
	assert_true(on_distinct_nodes(r));
	started(r);
	rank_exits(r, 1, 0, false);
	assert_int_equal(r->state, GPOOL__JOB_STATE__COMPLETING);
	rest_exit(r);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_non_null(strstr(r->end_reason, "rank 1 ended (exit code 0)"));
	r->not_before_ms = gp_mono_ms() - 1;
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->attempt, 2);
	assert_int_equal(r->ntasks, 3);
}

/* issue 37's room: a rank's node goes DOWN: the replica restarts at once on the 2 nodes left
 * (-N 2-3), its stored spec says 2 (a restarted gschedd reads it); the node comes back: the
 * running replica drains and restarts on 3; a node whose owner is active does not count. */
static void gang_shrinks_and_grows(void **state)
{
	(void)state;
	S.service_drain_ms = 0;
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_gang(1, 3, 2, 3);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	assert_int_equal(r->ntasks, 3);
	started(r);
	int gone = r->tasks[2].node;
	nodes_get(S.nodes, gone)->state = GPOOL__NODE_STATE__NODE_DOWN;
	job_node_failed(&S, gone);
	assert_int_equal(r->state, GPOOL__JOB_STATE__COMPLETING);
	rest_exit(r);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(r->not_before_ms, 0); /* at once: no backoff */
	assert_int_equal(r->ntasks, 2);
	Gpool__JobSpec *sp = store_job_spec(S.store, r->id);
	assert_int_equal(sp->ntasks, 2);
	assert_int_equal(sp->nodes_min, 2);
	gpool__job_spec__free_unpacked(sp, NULL);
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->ntasks, 2);
	assert_true(on_distinct_nodes(r));
	for (uint32_t t = 0; t < 2; t++)
		assert_true(r->tasks[t].node != gone);
	started(r);
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING); /* nothing more to be had */
	Gpool__JobInfo ji = GPOOL__JOB_INFO__INIT;
	service_info_fill(&S, svc, &ji);
	assert_int_equal(ji.replicas[0]->ranks, 2);
	assert_int_equal(ji.replicas[0]->ranks_wanted, 3);
	service_info_release(&ji);

	/* the node is back, but its owner is active: still 2 */
	struct node *back = nodes_get(S.nodes, gone);
	back->state = GPOOL__NODE_STATE__NODE_UP;
	back->owner.active = true;
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->attempt, 2);
	/* the owner left: the replica is re-planned onto 3 */
	back->owner.active = false;
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__COMPLETING);
	rest_exit(r);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_string_equal(r->end_reason, "re-planned onto more nodes");
	assert_int_equal(r->not_before_ms, 0);
	assert_int_equal(service_replica(&S, r)->quick_fails, 0);
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->ntasks, 3);
	assert_int_equal(r->attempt, 3);
	assert_true(on_distinct_nodes(r));
}

/* Below -N's minimum the replica waits for nodes rather than run short; a fixed gang (-n 3
 * without a range) keeps its size. */
static void gang_minimum_waits(void **state)
{
	(void)state;
	add_node("h1", 4);
	struct job *svc = submit_gang(1, 3, 2, 3);
	struct job *fixed = submit_gang(1, 2, 0, 0);
	tick_and_plan();
	struct job *r = replica(svc, 0), *f = replica(fixed, 0);
	assert_int_equal(r->ntasks, 2);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(f->ntasks, 2); /* two ranks on the one node */
	assert_int_equal(f->state, GPOOL__JOB_STATE__RUNNING);
	add_node("h2", 2);
	add_node("h3", 2);
	tick_and_plan(); /* pending, it takes the nodes there are now */
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r->ntasks, 3);
	assert_true(on_distinct_nodes(r));
}

/* The PC's owner came back on a rank's PC: its agent vacated the rank (a gang's stage is never
 * frozen: docs/owner.md). The replica restarts at once, not as a failure, without that PC. */
static void gang_vacated_restarts_without_pc(void **state)
{
	(void)state;
	add_node("h1", 2);
	add_node("h2", 2);
	add_node("h3", 2);
	struct job *svc = submit_gang(1, 3, 2, 3);
	tick_and_plan();
	struct job *r = replica(svc, 0);
	started(r);
	int pc = r->tasks[1].node;
	nodes_get(S.nodes, pc)->owner.active = true;
	rank_exits(r, 1, SIGTERM, true);
	assert_int_equal(r->state, GPOOL__JOB_STATE__COMPLETING);
	rest_exit(r);
	assert_int_equal(r->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(r->not_before_ms, 0);
	assert_int_equal(service_replica(&S, r)->quick_fails, 0);
	assert_int_equal(r->vacates, 1);
	assert_non_null(strstr(r->end_reason, "vacated"));
	assert_int_equal(r->ntasks, 2);
	tick_and_plan();
	assert_int_equal(r->state, GPOOL__JOB_STATE__RUNNING);
	for (uint32_t t = 0; t < r->ntasks; t++)
		assert_true(r->tasks[t].node != pc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(spread_restart_crash_loop, setup, teardown),
	    cmocka_unit_test_setup_teardown(node_failure_moves_at_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(scale_and_cancel, setup, teardown),
	    cmocka_unit_test_setup_teardown(spec_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(update_drains_then_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(scale_down_drains, setup, teardown),
	    cmocka_unit_test_setup_teardown(node_drain_drains_then_moves, setup, teardown),
	    cmocka_unit_test_setup_teardown(drain_waits_for_gateways, setup, teardown),
	    cmocka_unit_test_setup_teardown(name_belongs_to_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(ready_only_when_port_own, setup, teardown),
	    cmocka_unit_test_setup_teardown(reports_from_gateways_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(gang_port_is_rank0s, setup, teardown),
	    cmocka_unit_test_setup_teardown(gang_rank_end_restarts_all, setup, teardown),
	    cmocka_unit_test_setup_teardown(gang_shrinks_and_grows, setup, teardown),
	    cmocka_unit_test_setup_teardown(gang_minimum_waits, setup, teardown),
	    cmocka_unit_test_setup_teardown(gang_vacated_restarts_without_pc, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

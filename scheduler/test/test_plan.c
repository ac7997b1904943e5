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

#include "scheduler/core/agent.h"
#include "scheduler/core/cards.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/identity.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/core/plan.h"
#include "scheduler/core/quorum.h"
#include "scheduler/core/running.h"
#include "scheduler/store/store.h"
#include "common/u64map.h"
#include "common/util.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	fixture_up("plan");
	S.kill_grace_ms = 1000;
	return 0;
}

static int teardown(void **state)
{
	fixture_down();
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
	char *argv[] = {"true"};
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
	effects_carry_out(&S); /* its row saved: dependencies read the store */
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
	struct job *b = submit(6, 1, 0, 60, 0);	 /* the whole cluster: waits for a */
	struct job *c = submit(1, 1, 0, 5, 0);	 /* short: ends before b's reservation */
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

/* A task its agent killed when its lease ran out (fenced: the scheduler was silent too long,
 * as during an outage or a stall) ends the attempt as a node failure: a requeueable job is
 * queued again, never FAILED; the same SIGKILL without the flag fails the job. */
static void lease_kill_requeues(void **state)
{
	S.requeue = true;
	S.max_attempts = 3;
	add_node("h1", 4, 1000);
	add_node("h2", 4, 1000);
	struct job *j = submit(2, 1, 2, 0, 0);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = 1;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	ev.status = 9; /* SIGKILL */
	ev.fenced = true;
	ev.rank = 0;
	job_task_event(&S, j->tasks[0].node, &ev);
	assert_int_equal(j->state, GPOOL__JOB_STATE__COMPLETING);
	assert_int_equal(j->kill_reason, GPOOL__JOB_STATE__NODE_FAIL);
	assert_non_null(strstr(j->end_reason, "its lease ran out"));
	ev.rank = 1; /* the other rank, stopped by the kill the scheduler sent */
	ev.fenced = false;
	job_task_event(&S, j->tasks[1].node, &ev);
	assert_int_equal(j->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(j->reason, PEND_REQUEUED);
	assert_int_equal(j->attempt, 1);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j->attempt, 2);
	/* without the flag a SIGKILL is the job's own failure */
	ev.attempt = 2;
	ev.rank = 0;
	job_task_event(&S, j->tasks[0].node, &ev);
	ev.rank = 1;
	job_task_event(&S, j->tasks[1].node, &ev);
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

/* A node silent past node_timeout: DOWN and its jobs requeued only while the scheduler hears a
 * majority of the voters (the nodes not DOWN and itself) and has heard one for node_timeout;
 * otherwise UNREACHABLE, its jobs left running (docs/reliability.md, "Scheduler outages"). */
static void silent_node_needs_majority(void **state)
{
	S.requeue = true;
	S.max_attempts = 3;
	S.node_timeout_ms = 10000;
	S.heartbeat_ms = 1000;
	const char *names[] = {"h1", "h2", "h3"};
	for (int i = 0; i < 3; i++) {
		add_node(names[i], 1, 1000);
		nodes_get(S.nodes, i)->registered = true;
	}
	struct job *j = submit(1, 1, 0, 0, 0);
	plan_run(&S);
	int where = j->tasks[0].node;
	struct node *silent = nodes_get(S.nodes, where);
	int64_t now = gp_mono_ms();
	uint64_t v3 = quorum_members_version(S.nodes);
	/* the others are quiet too (last heard 3 s ago, over two heartbeats): none heard */
	for (int i = 0; i < 3; i++)
		nodes_get(S.nodes, i)->last_heard_ms = now - 3000;
	silent->last_heard_ms = now - 20000;
	S.quorum_since_ms = 0;
	agents_tick(&S);
	assert_int_equal(silent->state, GPOOL__NODE_STATE__NODE_UNREACHABLE);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	assert_false(node_usable(silent));
	assert_int_equal(S.quorum_since_ms, 0);
	assert_int_equal(quorum_members_version(S.nodes), v3); /* still a member */
	/* the two others heard again: 2 of 3, not yet for long */
	for (int i = 0; i < 3; i++)
		if (i != where)
			nodes_get(S.nodes, i)->last_heard_ms = gp_mono_ms();
	agents_tick(&S);
	assert_true(S.quorum_since_ms > 0);
	assert_int_equal(silent->state, GPOOL__NODE_STATE__NODE_UNREACHABLE);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	/* held for node_timeout: the silent node is DOWN, its job queued again */
	S.quorum_since_ms = gp_mono_ms() - S.node_timeout_ms - 1;
	agents_tick(&S);
	assert_int_equal(silent->state, GPOOL__NODE_STATE__NODE_DOWN);
	assert_int_equal(j->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(j->reason, PEND_REQUEUED);
	/* DOWN is no member: the agents are sent two */
	Gpool__PoolMembers m;
	assert_int_equal(quorum_members(S.nodes, &m), 0);
	assert_int_equal(m.n_members, 2);
	assert_true(m.version != v3);
	for (size_t i = 0; i < m.n_members; i++)
		assert_string_not_equal(m.members[i]->name, silent->name);
	quorum_members_free(&m);
	/* a pool that lost one node of two still requeues: a tie is the scheduler's */
	struct quorum q = {.heard = 1, .members = 2};
	assert_true(quorum_held(&q));
	q = (struct quorum){.heard = 0, .members = 1};
	assert_false(quorum_held(&q));
	q = (struct quorum){.heard = 1, .members = 4};
	assert_false(quorum_held(&q));
	q = (struct quorum){.heard = 2, .members = 4};
	assert_true(quorum_held(&q));
	q = (struct quorum){.heard = 0, .members = 0};
	assert_false(quorum_held(&q));
	S.requeue = false;
}

static void restore_after_restart(void **state)
{
	add_node("h1", 2, 1000);
	add_node("h2", 2, 1000);
	struct job *j = submit(2, 1, 2, 0, 0);
	plan_run(&S);
	effects_carry_out(&S);
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

static Gpool__Card *mkcard(Gpool__Vendor v, const char *name, int gib, const char *arch, int watts)
{
	static Gpool__Card cards[64];
	static int n;
	Gpool__Card *c = &cards[n++ % 64];
	gpool__card__init(c);
	c->vendor = v;
	c->name = (char *)name;
	c->vram_total = (uint64_t)gib << 30;
	c->arch = (char *)arch;
	c->power_limit_w = watts;
	c->state = GPOOL__CARD_STATE__CARD_UP;
	c->grade = "";
	return c;
}

static void add_gpu_node(const char *name, uint32_t cpus, Gpool__Card **cards, size_t n)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = 8000;
	reg.cards = cards;
	reg.n_cards = n;
	assert_true(nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name)) >= 0);
}

static struct job *submit_gpu(uint32_t ntasks, uint32_t per_task, int mem_gib, Gpool__Vendor v,
			      const char *model, const char *cc, bool mixed)
{
	struct job *j = submit(ntasks, 1, 0, 0, 0);
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.ntasks = ntasks;
	sp.gpus_per_task = per_task;
	sp.gpu_mem_min = (uint64_t)mem_gib << 30;
	sp.gpu_vendor = v;
	sp.gpu_model = (char *)(model ? model : "");
	sp.gpu_cc_min = (char *)(cc ? cc : "");
	sp.gpu_mixed = mixed;
	char why[128];
	int bad;
	j->gpu = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_false(bad);
	return j;
}

#define NV  GPOOL__VENDOR__VENDOR_NVIDIA
#define AMD GPOOL__VENDOR__VENDOR_AMD

static void cards_best_fit_and_filters(void **state)
{
	Gpool__Card *a[] = {mkcard(NV, "RTX 3090", 24, "8.6", 350)};
	Gpool__Card *b[] = {mkcard(NV, "GTX 1660 SUPER", 6, "7.5", 125),
			    mkcard(AMD, "RX 6700 XT", 12, "gfx1031", 230)};
	add_gpu_node("big", 4, a, 1);
	add_gpu_node("small", 4, b, 2);
	/* a 4 GiB job takes the 6 GiB card, not the 24 GiB one */
	struct job *j1 = submit_gpu(1, 1, 4, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(j1->state, GPOOL__JOB_STATE__RUNNING);
	assert_string_equal(nodes_name(S.nodes, j1->tasks[0].node), "small");
	assert_int_equal(j1->tasks[0].cards, 1); /* card 0: the 1660 */
	/* vendor amd goes to the RX card */
	struct job *j2 = submit_gpu(1, 1, 0, AMD, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(j2->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j2->tasks[0].cards, 2);
	/* cc >= 8.0 only the 3090 */
	struct job *j3 = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, "8.0", false);
	plan_run(&S);
	assert_string_equal(nodes_name(S.nodes, j3->tasks[0].node), "big");
	/* every card busy now: the next one waits for cards */
	struct job *j4 = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(j4->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(j4->reason, PEND_RESOURCES);
	assert_non_null(strstr(j4->reason_detail, "waiting for 1 cards"));
	/* nothing anywhere has 32 GiB */
	struct job *j5 = submit_gpu(1, 1, 32, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(j5->reason, PEND_NO_CARD);
	assert_non_null(strstr(j5->reason_detail, "no card with >= 32G VRAM"));
	/* model pattern */
	ends(j1);
	struct job *j6 = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, "*1660*", NULL, false);
	plan_run(&S);
	/* j4 came first and takes the freed 1660; j6 waits for it */
	assert_int_equal(j4->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j6->state, GPOOL__JOB_STATE__PENDING);
	ends(j4);
	plan_run(&S);
	assert_int_equal(j6->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(nodes_get(S.nodes, j6->tasks[0].node)->card_busy & 1, 1);
}

/* --gpus-per-task 0-1: a task takes a card where its node has one free, else runs without one;
 * a job of 3 ranks on 3 nodes mixes card ranks and CPU-only ranks, on a pool where a plain
 * --gpus-per-task 1 job of 3 ranks could never run. */
static void cards_optional_mix(void **state)
{
	(void)state;
	Gpool__Card *a[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170)};
	Gpool__Card *b[] = {mkcard(NV, "GTX 1070", 8, "6.1", 150),
			    mkcard(NV, "GTX 1070", 8, "6.1", 150)};
	add_gpu_node("card1", 2, a, 1);
	add_gpu_node("card2", 2, b, 2);
	add_node("cpu", 2, 8000);
	struct job *j = submit(3, 1, 3, 0, 0);
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.ntasks = 3;
	sp.nodes_min = sp.nodes_max = 3;
	sp.gpus_per_task = 1;
	sp.gpus_optional = true;
	char why[128];
	int bad;
	j->gpu = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_false(bad);
	assert_true(j->gpu->optional);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	int with = 0, without = 0;
	for (uint32_t t = 0; t < 3; t++) {
		const char *n = nodes_name(S.nodes, j->tasks[t].node);
		int k = __builtin_popcountll(j->tasks[t].cards);
		if (!strcmp(n, "cpu"))
			assert_int_equal(k, 0);
		else
			assert_int_equal(k, 1); /* one card, not both of card2's */
		k ? with++ : without++;
	}
	assert_int_equal(with, 2);
	assert_int_equal(without, 1);
	assert_int_equal(__builtin_popcountll(nodes_get(S.nodes, 1)->card_busy), 1);
	/* the cards are taken now: a second such job runs all on the CPU */
	struct job *k = submit(2, 1, 0, 0, 0);
	sp.ntasks = 2;
	sp.nodes_min = sp.nodes_max = 0;
	k->gpu = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	plan_run(&S);
	assert_int_equal(k->state, GPOOL__JOB_STATE__RUNNING);
	uint64_t got = 0;
	for (uint32_t t = 0; t < 2; t++)
		got |= k->tasks[t].cards;
	/* card2's second card is the one free card left: the node with it comes first */
	assert_int_equal(__builtin_popcountll(got), 1);
	/* a plain one-card-per-task job of 3 ranks on 3 nodes could never run here */
	struct job *x = submit_gpu(3, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	x->nodes_min = x->nodes_max = 3;
	plan_run(&S);
	assert_int_equal(x->state, GPOOL__JOB_STATE__PENDING);
}

static struct job *submit_share(uint32_t ntasks, int mem_gib, uint32_t uid)
{
	struct job *j = submit(ntasks, 1, 0, 0, 0);
	j->uid = uid;
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.ntasks = ntasks;
	sp.gpu_mem_min = (uint64_t)mem_gib << 30;
	sp.gpu_share = 1;
	char why[128];
	int bad;
	j->gpu = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_false(bad);
	assert_true(j->gpu->share);
	return j;
}

/* --gpu-share: slices of one user's jobs packed onto a card while the budgets fit; exclusive
 * jobs and sharing jobs never on one card; another user's slices wait for a whole card. */
static void cards_shared_packing(void **state)
{
	Gpool__Card *h[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			    mkcard(NV, "GTX 1660", 6, "7.5", 125)};
	add_gpu_node("h", 8, h, 2);
	struct node *n = nodes_get(S.nodes, 0);
	/* the first slice takes the smallest whole card, the next packs onto it */
	struct job *s1 = submit_share(1, 4, 1000);
	struct job *s2 = submit_share(1, 2, 1000);
	plan_run(&S);
	assert_int_equal(s1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(s2->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(s1->tasks[0].cards, 2);
	assert_int_equal(s2->tasks[0].cards, 2);
	assert_int_equal(n->share.tasks[1], 2);
	assert_int_equal(n->share.used[1], 6ULL << 30);
	assert_int_equal(n->card_busy, 2);
	/* an exclusive job does not land on the shared card */
	struct job *e1 = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(e1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(e1->tasks[0].cards, 1);
	/* a slice that fits no card's room waits, and says so */
	struct job *s3 = submit_share(1, 4, 1000);
	plan_run(&S);
	assert_int_equal(s3->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(s3->reason, PEND_RESOURCES);
	assert_non_null(strstr(s3->reason_detail, "waiting for 1 slices of 4.0G"));
	/* and no slice goes on the card the exclusive job holds: once it ends, s3 takes it */
	ends(e1);
	plan_run(&S);
	assert_int_equal(s3->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(s3->tasks[0].cards, 1);
	/* another user's slice waits though the 3060 has 8 GiB of room (MPS: one user a server) */
	struct job *o1 = submit_share(1, 2, 2000);
	struct job *e2 = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(o1->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(e2->state, GPOOL__JOB_STATE__PENDING);
	/* three tasks of 2 GiB of the first user pack onto the 3060 beside s3 */
	struct job *m = submit_share(3, 2, 1000);
	plan_run(&S);
	assert_int_equal(m->state, GPOOL__JOB_STATE__RUNNING);
	for (int r = 0; r < 3; r++)
		assert_int_equal(m->tasks[r].cards, 1);
	assert_int_equal(n->share.tasks[0], 4);
	assert_int_equal(n->share.used[0], 10ULL << 30);
	/* the 1660 whole again: the other user's slice takes it before the exclusive job */
	ends(s1);
	ends(s2);
	assert_int_equal(n->share.tasks[1], 0);
	assert_int_equal(n->card_busy, 1);
	plan_run(&S);
	assert_int_equal(o1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(o1->tasks[0].cards, 2);
	assert_int_equal(n->share.uid[1], 2000);
	assert_int_equal(e2->state, GPOOL__JOB_STATE__PENDING);
	/* every slice gone: both cards whole, the exclusive job runs */
	ends(s3);
	ends(m);
	ends(o1);
	assert_int_equal(n->card_busy, 0);
	plan_run(&S);
	assert_int_equal(e2->state, GPOOL__JOB_STATE__RUNNING);
	/* a budget no card has never fits */
	struct job *big = submit_share(1, 16, 1000);
	plan_run(&S);
	assert_int_equal(big->reason, PEND_NO_CARD);
}

/* backfill with slices: an exclusive job waits for a shared card's slices to end (reserved at
 * their time limit); a slice that would outlast the reservation does not join the card, one
 * that ends before it does */
static void cards_shared_backfill(void **state)
{
	Gpool__Card *h[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170)};
	add_gpu_node("h", 8, h, 1);
	struct job *s1 = submit_share(1, 4, 1000);
	s1->time_limit = 60;
	plan_run(&S);
	assert_int_equal(s1->state, GPOOL__JOB_STATE__RUNNING);
	struct job *e = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	e->time_limit = 60;
	struct job *longer = submit_share(1, 4, 1000); /* no time limit: would delay e */
	struct job *shorter = submit_share(1, 4, 1000);
	shorter->time_limit = 10; /* ends before s1's limit */
	plan_run(&S);
	assert_int_equal(e->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(e->reason, PEND_RESOURCES);
	assert_true(fabs(e->reserved_start - (s1->start_time + 60)) < 1.0);
	assert_int_equal(longer->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(longer->reason, PEND_PRIORITY);
	assert_int_equal(shorter->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(shorter->tasks[0].cards, 1);
	struct node *n = nodes_get(S.nodes, 0);
	assert_int_equal(n->share.tasks[0], 2);
	ends(s1);
	ends(shorter);
	plan_run(&S);
	assert_int_equal(e->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(longer->state, GPOOL__JOB_STATE__PENDING);
}

static void cards_share_spec_checks(void **state)
{
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	char why[160];
	int bad;
	sp.gpu_share = 1;
	assert_null(gpu_req_from_spec(&sp, why, sizeof(why), &bad));
	assert_true(bad);
	assert_non_null(strstr(why, "--gpu-share needs --gpu-mem"));
	sp.gpu_mem_min = 1ULL << 30;
	sp.gpus_per_task = 2;
	assert_null(gpu_req_from_spec(&sp, why, sizeof(why), &bad));
	assert_true(bad);
	assert_non_null(strstr(why, "slice of one card"));
	sp.gpus_per_task = 0;
	struct gpu_req *g = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_non_null(g);
	assert_int_equal(g->per_task, 1);
	assert_int_equal(g->mem_min, 1ULL << 30);
	gpu_req_free(g);
}

static void cards_one_model_unless_mixed(void **state)
{
	Gpool__Card *h1[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "GTX 1660", 6, "7.5", 125)};
	Gpool__Card *h2[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "GTX 1660", 6, "7.5", 125)};
	add_gpu_node("h1", 4, h1, 2);
	add_gpu_node("h2", 4, h2, 2);
	/* 2 ranks, one card each, one model: both 1660s (smallest VRAM first), on two nodes */
	struct job *j = submit_gpu(2, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	j->nodes_min = j->nodes_max = 2;
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(j->tasks[0].cards, 2);
	assert_int_equal(j->tasks[1].cards, 2);
	/* 3 cards of one model do not exist now (2 x 3060 left): mixed may, unmixed waits */
	struct job *u = submit_gpu(3, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(u->state, GPOOL__JOB_STATE__PENDING);
	ends(j);
	struct job *m = submit_gpu(3, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, true);
	plan_run(&S);
	/* u (one model) still cannot have 3 of one model: the cluster has 2 of each */
	assert_int_equal(u->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(u->reason, PEND_TOO_LARGE);
	assert_int_equal(m->state, GPOOL__JOB_STATE__RUNNING);
}

static void cards_failed_and_power_cap(void **state)
{
	Gpool__Card *h1[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "RTX 3060", 12, "8.6", 170)};
	h1[0]->grade = "fail";
	add_gpu_node("h1", 4, h1, 2);
	S.power_cap_watts = 200;
	struct job *a = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(a->tasks[0].cards, 2); /* never the failed card 0 */
	Gpool__Card *c0 = nodes_get(S.nodes, 0)->cards[0];
	free(c0->grade); /* the node owns an unpacked copy */
	c0->grade = strdup("good");
	struct job *b = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	/* 170 W + 170 W is over the 200 W cap */
	assert_int_equal(b->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(b->reason, PEND_POWER);
	ends(a);
	plan_run(&S);
	assert_int_equal(b->state, GPOOL__JOB_STATE__RUNNING);
	S.power_cap_watts = 0;
}

static struct job *submit_pinned(const uint32_t *idx, size_t n, bool screen)
{
	struct job *j = submit(1, 1, 0, 0, 0);
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.ntasks = 1;
	sp.gpu_index = (uint32_t *)idx;
	sp.n_gpu_index = n;
	sp.screen = screen;
	char why[128];
	int bad;
	j->gpu = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_false(bad);
	j->screen = screen;
	return j;
}

/* --gpu-index pins a job to cards; a screening job may take a card that failed screening (to
 * grade it again), never one an admin drained */
static void cards_pinned_and_screening(void **state)
{
	Gpool__Card *h1[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "RTX 3060", 12, "8.6", 170)};
	for (uint32_t i = 0; i < 3; i++)
		h1[i]->index = i;
	h1[1]->grade = "fail";
	h1[1]->state = GPOOL__CARD_STATE__CARD_FAILED;
	h1[2]->state = GPOOL__CARD_STATE__CARD_DRAINED;
	add_gpu_node("h1", 4, h1, 3);
	static const uint32_t c0[] = {0}, c1[] = {1}, c2[] = {2};
	struct job *a = submit_pinned(c1, 1, false);
	struct job *b = submit_pinned(c0, 1, false);
	struct job *sc = submit_pinned(c1, 1, true);
	struct job *sd = submit_pinned(c2, 1, true);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__PENDING); /* card 1 failed */
	assert_int_equal(a->reason, PEND_NO_CARD);
	assert_non_null(strstr(a->reason_detail, "with index 1"));
	assert_int_equal(b->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(b->tasks[0].cards, 1);
	assert_int_equal(sc->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(sc->tasks[0].cards, 2);
	assert_int_equal(sd->state, GPOOL__JOB_STATE__PENDING); /* card 2 drained */
	/* but neither is refused at submission: the failed card may be graded good again, the
	 * drained one resumed */
	char no[512];
	nodes_get(S.nodes, nodes_find(S.nodes, "h1"))->registered = true;
	assert_false(plan_refuse(&S, a, no, sizeof(no)));
	struct job *d = submit_pinned(c2, 1, false);
	assert_false(plan_refuse(&S, d, no, sizeof(no)));
	assert_int_equal(sd->reason, PEND_NO_CARD);
	/* the spec is checked: an index past a node's cards, one named twice, too few named */
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	uint32_t bad_idx[] = {64}, twice[] = {1, 1};
	char why[128];
	int bad;
	sp.gpu_index = bad_idx;
	sp.n_gpu_index = 1;
	assert_null(gpu_req_from_spec(&sp, why, sizeof(why), &bad));
	assert_true(bad);
	assert_non_null(strstr(why, "invalid card index 64"));
	sp.gpu_index = twice;
	sp.n_gpu_index = 2;
	assert_null(gpu_req_from_spec(&sp, why, sizeof(why), &bad));
	assert_true(bad);
	sp.gpu_index = twice;
	sp.n_gpu_index = 1;
	sp.gpus_per_task = 2;
	assert_null(gpu_req_from_spec(&sp, why, sizeof(why), &bad));
	assert_true(bad);
	assert_non_null(strstr(why, "only 1 card indices named"));
}

static void energy_accounting(void **state)
{
	Gpool__Card *h1[] = {mkcard(NV, "RTX 3060", 12, "8.6", 170),
			     mkcard(NV, "RTX 3060", 12, "8.6", 170)};
	add_gpu_node("h1", 4, h1, 2);
	S.heartbeat_ms = 1000;
	struct job *j = submit_gpu(1, 1, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	struct node *n = nodes_get(S.nodes, 0);
	/* no counters: the power limit over the interval (one second here) */
	n->energy_ms = gp_mono_ms() - 1000;
	energy_account(&S, 0, NULL, 0);
	assert_true(fabs(j->energy_j - 170.0) < 2.0);
	assert_int_equal(j->energy_sources, 1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT);
	/* the card has a counter, sent by an agent from before sampling (no source): its
	 * deltas count, not the limit */
	int card = __builtin_ctzll(j->tasks[0].cards);
	Gpool__CardPower p = GPOOL__CARD_POWER__INIT, *pp = &p;
	p.card = (uint32_t)card;
	p.energy_mj = 1000000;
	n->energy_ms = gp_mono_ms() - 1000;
	energy_account(&S, 0, &pp, 1); /* the first reading: a baseline only */
	double before = j->energy_j;
	assert_true(fabs(before - 170.0) < 2.0);
	p.energy_mj = 1500000; /* 500 J later */
	n->energy_ms = gp_mono_ms() - 1000;
	energy_account(&S, 0, &pp, 1);
	assert_true(fabs(j->energy_j - (before + 500.0)) < 1e-6);
	assert_int_equal(j->energy_sources, 1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT |
						1u << GPOOL__ENERGY_SOURCE__ENERGY_COUNTER);
	/* the idle card's energy goes to no job */
	ends(j);
	assert_true(fabs(j->energy_j - (before + 500.0)) < 1e-6);
	S.heartbeat_ms = 0;
}

/* Cards whose agent integrates power samples: their integral's deltas count like a
 * counter's, from a first reading of 0 mJ; a card with no reading beside them is bounded by
 * its limit, and the job says both. */
static void energy_sampled(void **state)
{
	Gpool__Card *h1[] = {mkcard(NV, "GTX 1070 Ti", 8, "6.1", 180),
			     mkcard(NV, "GTX 1070 Ti", 8, "6.1", 180),
			     mkcard(NV, "GTX 1070 Ti", 8, "6.1", 180)};
	add_gpu_node("h1", 4, h1, 3);
	S.heartbeat_ms = 1000;
	struct node *n = nodes_get(S.nodes, 0);
	/* card 0 sampled, card 1 a counter, card 2 nothing */
	Gpool__CardPower p[2] = {GPOOL__CARD_POWER__INIT, GPOOL__CARD_POWER__INIT};
	Gpool__CardPower *pp[2] = {&p[0], &p[1]};
	p[0].card = 0;
	p[0].source = GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED;
	p[0].energy_mj = 0; /* the agent's integral starts at 0: a reading all the same */
	p[1].card = 1;
	p[1].source = GPOOL__ENERGY_SOURCE__ENERGY_COUNTER;
	p[1].energy_mj = 7000000;
	energy_account(&S, 0, pp, 2); /* baselines, before any job */
	assert_int_equal(n->energy_src[0], GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED);
	assert_int_equal(n->energy_src[1], GPOOL__ENERGY_SOURCE__ENERGY_COUNTER);
	assert_int_equal(n->energy_src[2], 0);

	struct job *a = submit_gpu(1, 3, 0, GPOOL__VENDOR__VENDOR_NONE, NULL, NULL, false);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(a->tasks[0].cards, 7);
	/* 2 s later: the sampled card drew 150 W (300 J), the counter card 100 W (200 J), and
	 * the unread one counts 180 W x 2 s = 360 J, an upper bound: 860 J */
	p[0].energy_mj = 300000;
	p[1].energy_mj = 7200000;
	n->energy_ms = gp_mono_ms() - 2000;
	energy_account(&S, 0, pp, 2);
	assert_true(fabs(a->energy_j - 860.0) < 1.0); /* the limit part follows the clock */
	assert_int_equal(a->energy_sources, 1u << GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED |
						1u << GPOOL__ENERGY_SOURCE__ENERGY_COUNTER |
						1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT);
	/* the agent restarted: its integral begins again at 0, a new baseline, no energy; the
	 * counter did not move; the unread card adds 180 J */
	double before = a->energy_j;
	p[0].energy_mj = 0;
	n->energy_ms = gp_mono_ms() - 1000;
	energy_account(&S, 0, pp, 2);
	assert_true(fabs(a->energy_j - (before + 180.0)) < 1.0);
	/* and counts again from there: 45 J */
	before = a->energy_j;
	p[0].energy_mj = 45000;
	n->energy_ms = gp_mono_ms() - 1000;
	energy_account(&S, 0, pp, 2);
	assert_true(fabs(a->energy_j - (before + 45.0 + 180.0)) < 1.0);
	ends(a);
	S.heartbeat_ms = 0;
}

/* Dependencies (docs/arrays.md): a job waits with Dependency until its target completed, then
 * starts; one that can never be met says DependencyNeverSatisfied. */
/* As agent_register: a node that registered with this scheduler process. */
static struct node *registered(const char *name, uint32_t cpus)
{
	add_node(name, cpus, 1000);
	struct node *n = nodes_get(S.nodes, nodes_find(S.nodes, name));
	n->registered = true;
	return n;
}

/* A node's agent that lists its accounts gets only jobs whose owner's uid has the owner's name
 * there (the pool needs one uid space): another name or none keeps the job off it; a job no node
 * with the account could hold is refused with NoAccount. An agent that lists none is not judged
 * (its launch checks). */
static void add_node_accounts(const char *name, uint32_t cpus, const char *acct_name, uid_t uid)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	Gpool__Account a = GPOOL__ACCOUNT__INIT, *ap[1] = {&a};
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = 1000;
	reg.accounts_listed = true;
	if (acct_name) {
		a.uid = uid;
		a.name = (char *)acct_name;
		reg.accounts = ap;
		reg.n_accounts = 1;
	}
	int idx = nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name));
	assert_true(idx >= 0);
	nodes_get(S.nodes, idx)->registered = true;
}

static void placement_needs_account(void **state)
{
	(void)state;
	add_node_accounts("same", 1, "alice", 1000);
	add_node_accounts("other", 4, "mallory", 1000); /* uid 1000 is someone else there */
	add_node_accounts("none", 4, NULL, 0);
	struct job *j1 = submit(1, 1, 0, 0, 0), *j2 = submit(1, 1, 0, 0, 0);
	for (struct job *j = j1; j; j = j == j1 ? j2 : NULL) {
		free(j->user);
		j->user = strdup("alice");
		j->uid = 1000;
	}
	plan_run(&S);
	/* only "same" may take alice's jobs, and it has one CPU */
	assert_int_equal(j1->state, GPOOL__JOB_STATE__RUNNING);
	assert_string_equal(nodes_get(S.nodes, j1->tasks[0].node)->name, "same");
	assert_int_equal(j2->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(j2->reason, PEND_RESOURCES);
	char why[512];
	struct job *wide = submit(2, 1, 0, 0, 0);
	free(wide->user);
	wide->user = strdup("alice");
	wide->uid = 1000;
	assert_true(plan_refuse(&S, wide, why, sizeof(why)));
	assert_non_null(strstr(why, "NoAccount (uid 1000 is not 'alice' on enough nodes"));
	/* an older agent (no list) is not judged */
	registered("old", 4);
	assert_false(plan_refuse(&S, wide, why, sizeof(why)));
	const struct node *other = nodes_get(S.nodes, nodes_find(S.nodes, "other"));
	assert_false(identity_node_fits(other, 1000, "alice"));
	assert_true(identity_node_fits(other, 1000, "mallory"));
	assert_true(identity_node_fits(other, 0, "root")); /* allow_root decides there */
}

/* sbatch's "Requested node configuration is not available": only once every node known
 * has registered; down nodes count; a placeholder or an expected node defers it. */
static void refuse_beyond_cluster(void **state)
{
	(void)state;
	char why[512];
	struct job *big = submit(7, 1, 0, 0, 0);
	assert_false(plan_refuse(&S, big, why, sizeof(why))); /* no node yet: cannot tell */
	registered("a", 2);
	registered("b", 2);
	assert_int_equal(nodes_expect(S.nodes, "c", false, "", true),
			 0); /* registered before a restart */
	assert_false(plan_refuse(&S, big, why, sizeof(why)));
	struct node *c = registered("c", 2);
	assert_true(plan_refuse(&S, big, why, sizeof(why)));
	assert_string_equal(why,
			    "requested node configuration is not available: 7 tasks of 1 CPU; "
			    "the cluster has 3 nodes, 6 CPUs, 0 cards; the largest node 2 CPUs, "
			    "1000 MB");
	struct job *wide = submit(1, 3, 0, 0, 0);
	assert_true(plan_refuse(&S, wide, why, sizeof(why)));
	struct job *fits = submit(6, 1, 3, 0, 0);
	c->state = GPOOL__NODE_STATE__NODE_DOWN; /* down: may come back, still counts */
	assert_false(plan_refuse(&S, fits, why, sizeof(why)));
	struct job *named = submit(1, 1, 0, 0, 0);
	named->nodelist = calloc(1, sizeof(char *));
	named->nodelist[0] = strdup("zz");
	named->n_nodelist = 1;
	assert_true(plan_refuse(&S, named, why, sizeof(why)));
	assert_string_equal(why, "invalid node name 'zz' (no such node in this cluster)");
	assert_true(nodes_placeholder(S.nodes, "d") >= 0); /* a running job's node, not back yet */
	assert_false(plan_refuse(&S, big, why, sizeof(why)));
}

static void set_dependency(struct job *j, const char *dep)
{
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.dependency = (char *)dep;
	assert_int_equal(job_take_spec_extras(j, &sp), 0);
	assert_int_equal(j->n_deps, 1);
}

static void dependencies(void **state)
{
	add_node("h1", 4, 1000);
	struct job *a = submit(1, 1, 0, 0, 0);
	struct job *b = submit(1, 1, 0, 0, 0);
	struct job *c = submit(1, 1, 0, 0, 0);
	char dep[64];
	snprintf(dep, sizeof(dep), "afterok:%llu", (unsigned long long)a->id);
	set_dependency(b, dep);
	snprintf(dep, sizeof(dep), "afternotok:%llu", (unsigned long long)a->id);
	set_dependency(c, dep);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(b->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(b->reason, PEND_DEPENDENCY);
	assert_int_equal(c->reason, PEND_DEPENDENCY);
	ends(a);
	assert_int_equal(a->state, GPOOL__JOB_STATE__COMPLETED);
	plan_run(&S);
	assert_int_equal(b->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(b->n_deps, 0); /* satisfied: dropped */
	assert_int_equal(c->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(c->reason, PEND_DEP_NEVER);
}

/* An array's %N: no more of its tasks run at once; the others wait with JobArrayTaskLimit. */
static void array_limit(void **state)
{
	add_node("h1", 8, 1000);
	struct job *t[4];
	for (int i = 0; i < 4; i++) {
		t[i] = submit(1, 1, 0, 0, 0);
		t[i]->array_job_id = t[0]->id;
		t[i]->array_task_id = (uint32_t)i;
		t[i]->array_limit = 2;
	}
	plan_run(&S);
	int running = 0, limited = 0;
	for (int i = 0; i < 4; i++) {
		running += t[i]->state == GPOOL__JOB_STATE__RUNNING;
		limited += t[i]->reason == PEND_ARRAY_LIMIT;
	}
	assert_int_equal(running, 2);
	assert_int_equal(limited, 2);
	ends(t[0]);
	plan_run(&S);
	assert_int_equal(t[2]->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(t[3]->reason, PEND_ARRAY_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(gang_spread, setup, teardown),
	    cmocka_unit_test_setup_teardown(refuse_beyond_cluster, setup, teardown),
	    cmocka_unit_test_setup_teardown(placement_needs_account, setup, teardown),
	    cmocka_unit_test_setup_teardown(dependencies, setup, teardown),
	    cmocka_unit_test_setup_teardown(array_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(all_or_nothing_and_reasons, setup, teardown),
	    cmocka_unit_test_setup_teardown(priority_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(easy_backfill, setup, teardown),
	    cmocka_unit_test_setup_teardown(node_failure_ends_gang, setup, teardown),
	    cmocka_unit_test_setup_teardown(failing_rank_kills_gang, setup, teardown),
	    cmocka_unit_test_setup_teardown(node_failure_requeues, setup, teardown),
	    cmocka_unit_test_setup_teardown(lease_kill_requeues, setup, teardown),
	    cmocka_unit_test_setup_teardown(silent_node_needs_majority, setup, teardown),
	    cmocka_unit_test_setup_teardown(restore_after_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_best_fit_and_filters, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_optional_mix, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_one_model_unless_mixed, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_shared_packing, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_share_spec_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_shared_backfill, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_failed_and_power_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(cards_pinned_and_screening, setup, teardown),
	    cmocka_unit_test_setup_teardown(energy_accounting, setup, teardown),
	    cmocka_unit_test_setup_teardown(energy_sampled, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

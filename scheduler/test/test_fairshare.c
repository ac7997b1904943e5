/* Fair share: the decay and factor math, the shares' and limits' parsing, usage kept in the
 * store over a restart, and placement with made-up usage (the order, per-user limits,
 * --begin, --exclusive) on the scheduler's real core and store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/fairshare.h"
#include "scheduler/store/store_fairshare.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/features/metrics.h"
#include "scheduler/core/plan.h"
#include "scheduler/core/priority.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	fixture_up("fairshare");
	S.fairshare = fairshare_create();
	assert_non_null(S.fairshare);
	assert_int_equal(priority_subscribe(&S), 0);
	return 0;
}

static int teardown(void **state)
{
	fixture_down(); /* frees S.fairshare (sched_features_release) */
	return 0;
}

static void decay_math(void **state)
{
	assert_true(fabs(fairshare_decay(100, 3600, 3600) - 50) < 1e-9);
	assert_true(fabs(fairshare_decay(100, 7200, 3600) - 25) < 1e-9);
	assert_true(fabs(fairshare_decay(100, 1800, 3600) - 100 / sqrt(2)) < 1e-9);
	assert_true(fairshare_decay(100, 1e9, 0) == 100); /* half-life 0: no decay */
	assert_true(fairshare_decay(100, -5, 3600) == 100);
}

static void factor_math(void **state)
{
	assert_true(fabs(fairshare_factor_of(0.5, 0.5) - 0.5) < 1e-12); /* used its share */
	assert_true(fairshare_factor_of(0, 0.5) == 1.0);		/* used nothing */
	assert_true(fabs(fairshare_factor_of(0.25, 0.5) - pow(2, -0.5)) < 1e-12);
	assert_true(fabs(fairshare_factor_of(1.0, 0.25) - 1.0 / 16) < 1e-12);
	assert_true(fairshare_factor_of(0.1, 0) == 0.0);
	assert_true(fairshare_factor_of(0, 0) == 1.0);
}

static void parsing(void **state)
{
	gp_error_t err = {{0}};
	fairshare_t *f = S.fairshare;
	assert_int_equal(fairshare_configure(f, 3600, 2, "alice:2, bob:1",
					     "*:jobs=4:cpus=8,alice:cards=1", &err),
			 0);
	struct fs_limits l = fairshare_limits(f, "alice");
	assert_int_equal(l.jobs, 0);
	assert_int_equal(l.cards, 1);
	l = fairshare_limits(f, "carol");
	assert_int_equal(l.jobs, 4);
	assert_int_equal(l.cpus, 8);
	assert_int_equal(l.cards, 0);
	/* bad values are refused as a whole: the old ones stay */
	assert_int_equal(fairshare_configure(f, 3600, 1, "alice", "", &err), -1);
	assert_non_null(strstr(err.text, "fairshare_shares"));
	assert_int_equal(fairshare_configure(f, 3600, 1, "alice:-1", "", &err), -1);
	assert_int_equal(fairshare_configure(f, 3600, 1, "", "bob:gpus=2", &err), -1);
	assert_non_null(strstr(err.text, "unknown limit 'gpus'"));
	assert_int_equal(fairshare_configure(f, 3600, 1, "", "bob:jobs=-2", &err), -1);
	assert_int_equal(fairshare_limits(f, "carol").jobs, 4);
	size_t n;
	const struct fs_user_view *v = fairshare_users(f, 1000, &n);
	assert_int_equal(n, 2); /* the users the shares name */
	assert_string_equal(v[0].name, "alice");
	assert_true(v[0].share == 2 && v[1].share == 1);
	assert_true(fabs(v[0].share_norm - 2.0 / 3) < 1e-12);
}

static double factor_at(fairshare_t *f, const char *u, double now)
{
	fairshare_pass_begin(f, now);
	return fairshare_factor(f, u);
}

static void factors_from_usage(void **state)
{
	gp_error_t err = {{0}};
	fairshare_t *f = S.fairshare;
	assert_int_equal(fairshare_configure(f, 3600, 4, "alice:2,bob:1", "", &err), 0);
	double t0 = 1e6;
	/* used in proportion to the shares: the same factor, 2^-1 */
	assert_int_equal(fairshare_charge(f, "alice", 200, 0, t0), 0);
	assert_int_equal(fairshare_charge(f, "bob", 0, 25, t0), 0); /* 25 card-s x 4 = 100 */
	assert_true(fabs(factor_at(f, "alice", t0) - 0.5) < 1e-9);
	assert_true(fabs(factor_at(f, "bob", t0) - 0.5) < 1e-9);
	/* bob uses more: his factor falls below alice's */
	assert_int_equal(fairshare_charge(f, "bob", 100, 0, t0), 0);
	double a = factor_at(f, "alice", t0), b = factor_at(f, "bob", t0);
	assert_true(b < a);
	assert_true(fabs(a - pow(2, -(0.5) / (2.0 / 3))) < 1e-9); /* U = 200/400 */
	/* a half-life later alice's new use weighs twice bob's old use */
	assert_int_equal(fairshare_charge(f, "alice", 400, 0, t0 + 3600), 0);
	size_t n;
	const struct fs_user_view *v = fairshare_users(f, t0 + 3600, &n);
	assert_int_equal(n, 2);
	assert_true(fabs(v[0].usage - (100 + 400)) < 1e-6); /* alice: 200 halved + 400 */
	assert_true(fabs(v[1].usage - 100) < 1e-6);	    /* bob: 200 halved */
	/* a running job counts in the pass only */
	fairshare_pass_begin(f, t0 + 3600);
	fairshare_pass_running(f, "bob", 400, 0);
	assert_true(fairshare_factor(f, "bob") < fairshare_factor(f, "alice"));
	fairshare_pass_begin(f, t0 + 3600);
	assert_true(fairshare_factor(f, "bob") > fairshare_factor(f, "alice"));
}

static void usage_kept_in_store(void **state)
{
	fairshare_t *f = S.fairshare;
	assert_int_equal(fairshare_attach_store(f, store_db(S.store)), 0);
	assert_int_equal(fairshare_charge(f, "alice", 123, 7, 5000), 0);
	fairshare_t *g = fairshare_create(); /* a restarted scheduler */
	assert_int_equal(fairshare_attach_store(g, store_db(S.store)), 0);
	size_t n;
	const struct fs_user_view *v = fairshare_users(g, 5000, &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "alice");
	assert_true(fabs(v[0].cpu_sec - 123) < 1e-9 && fabs(v[0].card_sec - 7) < 1e-9);
	/* decayed from the time it was saved at: a week later (the default half-life) half */
	v = fairshare_users(g, 5000 + 7 * 24 * 3600.0, &n);
	assert_true(fabs(v[0].cpu_sec - 61.5) < 1e-9);
	fairshare_destroy(&g);
}

/* An administrator's values win over gpool.conf's, a reload does not undo them, clearing gives
 * gpool.conf's back; "*" limits apply to the users the configuration does not list; bad values
 * change nothing. */
static void admin_values(void **state)
{
	gp_error_t err = {{0}};
	fairshare_t *f = S.fairshare;
	assert_int_equal(fairshare_configure(f, 3600, 1, "alice:2", "*:jobs=1,bob:cpus=3", &err),
			 0);
	struct fs_admin a = {.has_share = true, .share = 0.5};
	assert_int_equal(fairshare_admin_set(f, "alice", &a, false, false, &err), 0);
	struct fs_user_view v;
	assert_true(fairshare_user(f, "alice", 1e6, &v));
	assert_true(v.share == 0.5 && v.admin_share && !v.admin_limits);
	assert_int_equal(v.limits.jobs, 1);
	/* SIGHUP with another gpool.conf share: the administrator's stays */
	assert_int_equal(fairshare_configure(f, 3600, 1, "alice:3", "*:jobs=1,bob:cpus=3", &err),
			 0);
	assert_true(fairshare_user(f, "alice", 1e6, &v) && v.share == 0.5);
	/* limits: "*" for the unlisted, per user over that, field by field */
	struct fs_admin any = {.has_jobs = true, .limits = {.jobs = 4}};
	assert_int_equal(fairshare_admin_set(f, "*", &any, false, false, &err), 0);
	assert_int_equal(fairshare_limits(f, "carol").jobs, 4);
	assert_int_equal(fairshare_default_limits(f).jobs, 4);
	assert_int_equal(fairshare_limits(f, "bob").jobs, 0); /* listed in gpool.conf: its line */
	assert_int_equal(fairshare_limits(f, "bob").cpus, 3);
	struct fs_admin b = {.has_cards = true, .limits = {.cards = 2}};
	assert_int_equal(fairshare_admin_set(f, "bob", &b, false, false, &err), 0);
	struct fs_limits bl = fairshare_limits(f, "bob");
	assert_true(bl.jobs == 0 && bl.cpus == 3 && bl.cards == 2);
	assert_true(fairshare_user(f, "bob", 1e6, &v) && v.admin_limits && !v.admin_share);
	/* refused: a share for "*", a bad name, a bad share; nothing changed */
	struct fs_admin bad = {.has_share = true, .share = 5};
	assert_int_equal(fairshare_admin_set(f, "*", &bad, false, false, &err), -1);
	assert_int_equal(fairshare_admin_set(f, "a:b", &bad, false, false, &err), -1);
	assert_int_equal(fairshare_admin_set(f, "", &bad, false, false, &err), -1);
	bad.share = -1;
	assert_int_equal(fairshare_admin_set(f, "alice", &bad, false, false, &err), -1);
	bad.share = NAN;
	assert_int_equal(fairshare_admin_set(f, "alice", &bad, false, false, &err), -1);
	assert_true(fairshare_user(f, "alice", 1e6, &v) && v.share == 0.5);
	/* cleared: gpool.conf's again */
	struct fs_admin none = {0};
	assert_int_equal(fairshare_admin_set(f, "alice", &none, true, false, &err), 0);
	assert_true(fairshare_user(f, "alice", 1e6, &v) && v.share == 3 && !v.admin_share);
	assert_int_equal(fairshare_admin_set(f, "*", &none, false, true, &err), 0);
	assert_int_equal(fairshare_limits(f, "carol").jobs, 1);
}

/* The administrator's values are in jobs.db: a restarted scheduler has them; a cleared one is
 * gone from it. */
static void admin_values_kept_in_store(void **state)
{
	gp_error_t err = {{0}};
	fairshare_t *f = S.fairshare;
	assert_int_equal(fairshare_attach_store(f, store_db(S.store)), 0);
	struct fs_admin a = {
	    .has_share = true, .share = 7, .has_cpus = true, .limits = {.cpus = 6}};
	assert_int_equal(fairshare_admin_set(f, "alice", &a, false, false, &err), 0);
	struct fs_admin any = {.has_cards = true, .limits = {.cards = 1}};
	assert_int_equal(fairshare_admin_set(f, "*", &any, false, false, &err), 0);
	struct fs_admin b = {.has_share = true, .share = 2};
	assert_int_equal(fairshare_admin_set(f, "bob", &b, false, false, &err), 0);
	assert_int_equal(fairshare_admin_set(f, "bob", &(struct fs_admin){0}, true, true, &err), 0);
	fairshare_t *g = fairshare_create(); /* a restarted scheduler */
	assert_int_equal(fairshare_configure(g, 3600, 1, "", "", &err), 0);
	assert_int_equal(fairshare_attach_store(g, store_db(S.store)), 0);
	struct fs_user_view v;
	assert_true(fairshare_user(g, "alice", 1e6, &v));
	assert_true(v.share == 7 && v.limits.cpus == 6 && v.limits.cards == 1);
	assert_int_equal(fairshare_default_limits(g).cards, 1);
	struct fs_admin bg = fairshare_admin_get(g, "bob");
	assert_false(bg.has_share || bg.has_jobs || bg.has_cpus || bg.has_cards);
	/* and a reload of gpool.conf afterwards keeps them */
	assert_int_equal(fairshare_configure(g, 3600, 1, "alice:9", "*:cards=5", &err), 0);
	assert_true(fairshare_user(g, "alice", 1e6, &v) && v.share == 7);
	assert_int_equal(fairshare_default_limits(g).cards, 1);
	fairshare_destroy(&g);
}

static void add_node(const char *name, uint32_t cpus)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = cpus;
	reg.mem_mb = 1000;
	assert_true(nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name)) >= 0);
}

static struct job *submit(const char *user, uint32_t cpus, int prio, double begin, bool excl)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = jobs_next_id(S.jobs);
	j->user = strdup(user);
	j->name = strdup("t");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = GPOOL__JOB_STATE__PENDING;
	j->ntasks = 1;
	j->cpus_per_task = cpus;
	j->priority = prio;
	j->submit_time = gp_now();
	char *argv[] = {"true"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = 1;
	sp.cpus_per_task = cpus;
	sp.begin_time = begin;
	sp.exclusive = excl;
	assert_int_equal(job_take_spec_extras(j, &sp), 0);
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
	j->durable = true;
	return j;
}

static void ends(struct job *j)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.job_id = j->id;
	ev.attempt = j->attempt;
	ev.rank = 0;
	ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
	job_task_event(&S, j->tasks[0].node, &ev);
	effects_carry_out(&S);
}

/* The user who used less of their share goes first, whatever the submission order; gsub
 * --priority still comes first. */
static void order_by_factor(void **state)
{
	gp_error_t err = {{0}};
	assert_int_equal(fairshare_configure(S.fairshare, 3600, 1, "", "", &err), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "heavy", 10000, 0, gp_now()), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "light", 10, 0, gp_now()), 0);
	add_node("h1", 1);
	struct job *h1 = submit("heavy", 1, 0, 0, false);
	struct job *l1 = submit("light", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(l1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(h1->state, GPOOL__JOB_STATE__PENDING);
	ends(l1);
	/* light's next job waits behind heavy's --priority 5 */
	struct job *l2 = submit("light", 1, 0, 0, false);
	struct job *h2 = submit("heavy", 1, 5, 0, false);
	plan_run(&S);
	assert_int_equal(h2->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(l2->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(h1->state, GPOOL__JOB_STATE__PENDING);
	ends(h2);
	plan_run(&S);
	assert_int_equal(l2->state, GPOOL__JOB_STATE__RUNNING); /* before the older h1 */
	assert_int_equal(h1->state, GPOOL__JOB_STATE__PENDING);
}

/* An administrator's share changes the order of the next pass. */
static void admin_share_reorders(void **state)
{
	gp_error_t err = {{0}};
	assert_int_equal(fairshare_configure(S.fairshare, 3600, 1, "", "", &err), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "heavy", 1000, 0, gp_now()), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "light", 100, 0, gp_now()), 0);
	add_node("h1", 1);
	struct fs_admin a = {.has_share = true, .share = 0.01};
	assert_int_equal(fairshare_admin_set(S.fairshare, "light", &a, false, false, &err), 0);
	struct job *l1 = submit("light", 1, 0, 0, false);
	struct job *h1 = submit("heavy", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(h1->state, GPOOL__JOB_STATE__RUNNING); /* light is far over its share */
	assert_int_equal(l1->state, GPOOL__JOB_STATE__PENDING);
	ends(h1);
	struct fs_admin none = {0};
	assert_int_equal(fairshare_admin_set(S.fairshare, "light", &none, true, false, &err), 0);
	struct job *h2 = submit("heavy", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(l1->state, GPOOL__JOB_STATE__RUNNING); /* equal shares: light first */
	assert_int_equal(h2->state, GPOOL__JOB_STATE__PENDING);
}

/* An ended attempt is charged to its user: CPUs times seconds. */
static void attempt_charged(void **state)
{
	add_node("h1", 4);
	struct job *j = submit("alice", 3, 0, 0, false);
	plan_run(&S);
	assert_int_equal(j->state, GPOOL__JOB_STATE__RUNNING);
	j->start_time -= 10; /* it ran 10 s */
	ends(j);
	size_t n;
	const struct fs_user_view *v = fairshare_users(S.fairshare, gp_now(), &n);
	assert_int_equal(n, 1);
	assert_true(v[0].cpu_sec > 29.9 && v[0].cpu_sec < 31);
}

static void user_limits(void **state)
{
	gp_error_t err = {{0}};
	assert_int_equal(fairshare_configure(S.fairshare, 3600, 1, "", "*:jobs=1,bob:cpus=3", &err),
			 0);
	add_node("h1", 8);
	struct job *a1 = submit("alice", 1, 0, 0, false);
	struct job *a2 = submit("alice", 1, 0, 0, false);
	struct job *b1 = submit("bob", 2, 0, 0, false);
	struct job *b2 = submit("bob", 2, 0, 0, false);
	struct job *c1 = submit("carol", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(a1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(a2->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(a2->reason, PEND_USER_LIMIT);
	assert_int_equal(b1->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(b2->state, GPOOL__JOB_STATE__PENDING); /* 2 + 2 > 3 CPUs */
	assert_int_equal(b2->reason, PEND_USER_LIMIT);
	assert_non_null(strstr(b2->reason_detail, "CPUs"));
	assert_int_equal(c1->state, GPOOL__JOB_STATE__RUNNING);
	ends(a1);
	plan_run(&S);
	assert_int_equal(a2->state, GPOOL__JOB_STATE__RUNNING);
}

static void begin_time(void **state)
{
	add_node("h1", 4);
	double now = gp_now();
	struct job *later = submit("alice", 1, 0, now + 3600, false);
	struct job *past = submit("alice", 1, 0, now - 5, false);
	plan_run(&S);
	assert_int_equal(later->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(later->reason, PEND_BEGIN_TIME);
	assert_string_equal(pend_reason_name(later->reason), "BeginTime");
	assert_true(fabs(S.plan_wake - (now + 3600)) < 1e-6);
	assert_int_equal(past->state, GPOOL__JOB_STATE__RUNNING);
	later->begin_time = now - 1; /* the time came */
	plan_run(&S);
	assert_int_equal(later->state, GPOOL__JOB_STATE__RUNNING);
	assert_true(S.plan_wake == 0);
}

static void exclusive(void **state)
{
	add_node("h1", 4);
	add_node("h2", 4);
	struct job *a = submit("alice", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(a->state, GPOOL__JOB_STATE__RUNNING);
	int busy = a->tasks[0].node;
	/* the exclusive job goes to the other, idle node, and takes all of it */
	struct job *x = submit("bob", 1, 0, 0, true);
	plan_run(&S);
	assert_int_equal(x->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_not_equal(x->tasks[0].node, busy);
	struct job *b = submit("carol", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(b->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(b->tasks[0].node, busy); /* 3 CPUs free beside the exclusive one */
	struct job *c = submit("carol", 1, 0, 0, false);
	struct job *d = submit("carol", 1, 0, 0, false);
	struct job *e = submit("carol", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(c->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(d->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(e->state, GPOOL__JOB_STATE__PENDING); /* not on the exclusive node */
	/* a second exclusive job waits: no node is idle */
	struct job *y = submit("bob", 1, 0, 0, true);
	plan_run(&S);
	assert_int_equal(y->state, GPOOL__JOB_STATE__PENDING);
	/* billed for the whole node */
	uint32_t cpus, cards;
	priority_job_holds(&S, x, &cpus, &cards);
	assert_int_equal(cpus, 4);
	ends(x);
	/* carol has used far more than bob (10,000 cpu-seconds charged: not left to the few
	 * milliseconds each job ran, whose order a slow build can turn): y goes first, takes the
	 * node x left, and carol's e still finds no room */
	assert_int_equal(fairshare_charge(S.fairshare, "carol", 10000, 0, gp_now()), 0);
	plan_run(&S);
	assert_int_equal(y->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_not_equal(y->tasks[0].node, busy);
	assert_int_equal(e->state, GPOOL__JOB_STATE__PENDING);
}

/* A blocked job of a user under their share preempts the youngest job of the user furthest
 * over theirs: its checkpoint signal first, stopped after its SECONDS, requeued as a vacate
 * (not counted against max_attempts). */
static void preemption(void **state)
{
	gp_error_t err = {{0}};
	assert_int_equal(fairshare_configure(S.fairshare, 3600, 1, "", "", &err), 0);
	S.preempt = true;
	S.requeue = true;
	S.max_attempts = 1;
	S.preempt_grace_ms = 0;
	add_node("h1", 2);
	struct job *old = submit("heavy", 1, 0, 0, false);
	struct job *young = submit("heavy", 1, 0, 0, false);
	young->ckpt_signal = 10; /* SIGUSR1 */
	young->ckpt_sec = 1;
	plan_run(&S);
	assert_int_equal(old->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(young->state, GPOOL__JOB_STATE__RUNNING);
	old->start_time -= 100;
	young->start_time -= 50;
	assert_int_equal(fairshare_charge(S.fairshare, "heavy", 10000, 0, gp_now()), 0);
	/* no preemption while it is off */
	S.preempt = false;
	struct job *l = submit("light", 1, 0, 0, false);
	plan_run(&S);
	assert_int_equal(l->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(young->preempt_attempt, 0);
	S.preempt = true;
	plan_run(&S);
	/* the younger one: signalled, not yet stopped */
	assert_int_equal(young->preempt_attempt, 1);
	assert_true(young->vacated);
	assert_int_equal(young->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(old->preempt_attempt, 0);
	plan_run(&S); /* one preemption at a time */
	assert_int_equal(old->preempt_attempt, 0);
	young->preempt_kill_ms = gp_mono_ms() - 1; /* its second is over */
	priority_tick(&S);
	assert_int_equal(young->state, GPOOL__JOB_STATE__COMPLETING);
	ends(young);
	assert_int_equal(young->state, GPOOL__JOB_STATE__PENDING);
	assert_int_equal(young->vacates, 1); /* max_attempts 1, yet it may run again */
	plan_run(&S);
	assert_int_equal(l->state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(young->state, GPOOL__JOB_STATE__PENDING);
	/* a user whose factor is not lower is never a victim */
	struct job *l2 = submit("light", 1, 0, 0, false);
	ends(old);
	plan_run(&S);
	assert_int_equal(l2->state, GPOOL__JOB_STATE__RUNNING); /* light before heavy's young */
	struct job *h3 = submit("heavy", 1, 0, 0, false);
	(void)h3;
	plan_run(&S);
	assert_int_equal(l->preempt_attempt, 0);
	assert_int_equal(l2->preempt_attempt, 0);
}

/* /metrics carries each user's factor, usage and share */
static void metrics_lines(void **state)
{
	gp_error_t err = {{0}};
	assert_int_equal(fairshare_configure(S.fairshare, 3600, 1, "alice:2", "", &err), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "alice", 30, 0, gp_now()), 0);
	assert_int_equal(fairshare_charge(S.fairshare, "bob", 30, 0, gp_now()), 0);
	S.metrics = metrics_create();
	assert_non_null(S.metrics);
	char *t = metrics_render(&S);
	assert_non_null(t);
	assert_non_null(strstr(t, "gpool_user_fairshare_share{user=\"alice\"} 2\n"));
	assert_non_null(strstr(t, "gpool_user_fairshare_share{user=\"bob\"} 1\n"));
	assert_non_null(strstr(t, "gpool_user_fairshare_factor{user=\"bob\"} 0.353553"));
	assert_non_null(strstr(t, "gpool_user_fairshare_usage_seconds{user=\"alice\"} 30.0"));
	free(t);
	metrics_destroy(&S.metrics);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(decay_math),
	    cmocka_unit_test(factor_math),
	    cmocka_unit_test_setup_teardown(parsing, setup, teardown),
	    cmocka_unit_test_setup_teardown(factors_from_usage, setup, teardown),
	    cmocka_unit_test_setup_teardown(usage_kept_in_store, setup, teardown),
	    cmocka_unit_test_setup_teardown(admin_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(admin_values_kept_in_store, setup, teardown),
	    cmocka_unit_test_setup_teardown(admin_share_reorders, setup, teardown),
	    cmocka_unit_test_setup_teardown(order_by_factor, setup, teardown),
	    cmocka_unit_test_setup_teardown(attempt_charged, setup, teardown),
	    cmocka_unit_test_setup_teardown(user_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(begin_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(exclusive, setup, teardown),
	    cmocka_unit_test_setup_teardown(preemption, setup, teardown),
	    cmocka_unit_test_setup_teardown(metrics_lines, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_agent.c: gworkerd against a fake scheduler (a ROUTER on loopback with MUNGE-sealed
 * envelopes): registration and its retry, heartbeats, a Launch run through gstepd with its
 * events and output forwarded in order, a fake card's sampled energy in heartbeats, re-registration
 * on ERROR_UNEXPECTED, garbage dropped, a refused account, exits held until acknowledged (also
 * across an agent restart), the lease, kill fencing by attempt, a standby's ERROR_NOT_LEADER
 * followed to the leader it names, and a clean exit on SIGTERM.
 *
 * Every wait is bounded. The test is a child subreaper and the agent logs to a file, so every
 * process it started (supervisors and tasks outlive the agent by design) ends up its child and
 * is killed at the end, pass or fail, and none holds ctest's output pipe.
 * gworkerd runs gstepd's code in a fork (no --stepd), as in production.
 * Usage: test_worker_agent PATH-OF-GWORKERD PATH-OF-GSTEPD (skips when munged is absent). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"
#include "common/wire.h"
#include "worker/test/router.h"
#include "worker/node/cgroup.h"

static const char *gworkerd, *gstepd;
static char dir[] = "/tmp/gp-agent-XXXXXX";
static void *zctx, *router;
static gp_auth_t *auth;
static gp_wire_t *wire;
static pid_t agent;
static char rid[256];
static size_t rid_len;
static char me[64];
static int envelopes; /* envelopes received */
static char endpoint[64];
static void start_agent(const char *ep);
static uint32_t lease_ms;      /* sent in NodeRegisterReply */
static uint64_t hold_job;      /* first heartbeat listing this job's exit goes unanswered */
static int hold_seen;	       /* heartbeats that listed it */
static uint64_t hold_acked_id; /* the heartbeat whose reply acknowledged it */
static bool hb_silent;	       /* answer no heartbeat */

/* Wait at most ms for pid; then SIGKILL it. Returns its status or -1. */
static int wait_bounded(pid_t pid, int ms)
{
	int st;
	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	return waitpid(pid, &st, 0) == pid ? -1 : -1;
}

static bool held_has(Gpool__HeldTask **h, size_t n, uint64_t job, bool *exited, int *status)
{
	for (size_t i = 0; i < n; i++) {
		if (h[i]->job_id != job)
			continue;
		if (exited)
			*exited = h[i]->exited;
		if (status)
			*status = h[i]->status;
		return true;
	}
	return false;
}

/* Next message from the agent of the given type (others are passed to keep, if set). */
typedef void (*keep_f)(const Gpool__Msg *m, void *arg);

static Gpool__Msg *expect(Gpool__Msg__MCase type, int timeout_ms, keep_f keep, void *arg)
{
	static Gpool__Batch *b;
	static size_t pos;
	int64_t deadline = gp_mono_ms() + timeout_ms;
	while (1) {
		while (b && pos < b->n_msgs) {
			Gpool__Msg *m = b->msgs[pos++];
			if (m->m_case == type)
				return m;
			if (keep)
				keep(m, arg);
		}
		if (b) {
			gpool__batch__free_unpacked(b, NULL);
			b = NULL;
			pos = 0;
		}
		int64_t left = deadline - gp_mono_ms();
		if (left <= 0)
			return NULL;
		zmq_pollitem_t it = {.socket = router, .events = ZMQ_POLLIN};
		if (zmq_poll(&it, 1, (long)left) <= 0)
			continue;
		int n = zmq_recv(router, rid, sizeof(rid), 0);
		assert_true(n > 0);
		rid_len = (size_t)n;
		struct gp_sender from;
		gp_error_t err;
		b = gp_test_peer_open(router, wire, &from, &err);
		if (!b)
			fail_msg("agent sent an envelope that does not open: %s", err.text);
		assert_int_equal(from.uid, geteuid());
		envelopes++;
	}
}

static void send_msg(const Gpool__Msg *m)
{
	gp_batch_t b = {0};
	gp_buf_t env = {0};
	gp_error_t err;
	assert_int_equal(gp_batch_add(&b, m), 0);
	assert_int_equal(gp_wire_seal(wire, &b, &env, &err), 0);
	zmq_send(router, rid, rid_len, ZMQ_SNDMORE);
	zmq_send(router, env.data, env.len, 0);
	gp_batch_release(&b);
	gp_buf_release(&env);
}

static void reply_heartbeat(uint64_t id)
{
	Gpool__HeartbeatReply hr = GPOOL__HEARTBEAT_REPLY__INIT;
	Gpool__Msg r = GPOOL__MSG__INIT;
	r.id = id;
	r.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
	r.heartbeat_reply = &hr;
	send_msg(&r);
}

static void reply_register(uint64_t id)
{
	Gpool__NodeRegisterReply r = GPOOL__NODE_REGISTER_REPLY__INIT;
	r.heartbeat_ms = 200;
	r.lease_ms = lease_ms;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = id;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER_REPLY;
	m.node_register_reply = &r;
	send_msg(&m);
}

static void registration(void **state)
{
	Gpool__Msg *m = expect(GPOOL__MSG__M_NODE_REGISTER, 5000, NULL, NULL);
	assert_non_null(m);
	uint64_t id = m->id;
	assert_true(id != 0);
	assert_string_equal(m->node_register->name, "tw");
	assert_string_equal(m->node_register->version, GPOOL_VERSION);
	assert_string_equal(m->node_register->addr, "127.0.0.1");
	assert_true(m->node_register->cpus > 0 && m->node_register->mem_mb > 0);
	assert_int_equal(m->node_register->n_cards, 2);
	assert_string_equal(m->node_register->cards[1]->arch, "gfx1031");
	assert_int_equal(m->node_register->psu_watts, 550);
	/* unanswered: sent again about a second later, same id */
	int64_t t0 = gp_mono_ms();
	m = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL);
	assert_non_null(m);
	assert_int_equal(m->id, id);
	assert_true(gp_mono_ms() - t0 > 500);
	reply_register(id);
	m = expect(GPOOL__MSG__M_HEARTBEAT, 2000, NULL, NULL);
	assert_non_null(m);
	assert_true(m->id != 0);
	reply_heartbeat(m->id);
}

struct job_seen {
	bool started, exited, failed;
	int status;
	gp_buf_t out;
	bool eof[3];
	bool order_ok;
	bool ids_zero;
	char reason[512];
};

static void keep_job(const Gpool__Msg *m, void *arg)
{
	struct job_seen *j = arg;
	if (m->m_case == GPOOL__MSG__M_OUTPUT) {
		if (m->id)
			j->ids_zero = false;
		if (m->output->stream == 1 && m->output->offset == j->out.len)
			gp_buf_append(&j->out, m->output->data.data, m->output->data.len);
		if (m->output->eof)
			j->eof[m->output->stream] = true;
	} else if (m->m_case == GPOOL__MSG__M_TASK_EVENT) {
		if (m->id)
			j->ids_zero = false;
		const Gpool__TaskEvent *e = m->task_event;
		if (e->kind == GPOOL__TASK_EVENT_KIND__TASK_STARTED)
			j->started = true;
		if (e->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
			j->exited = true;
			j->status = e->status;
			j->order_ok = j->eof[1] && j->eof[2];
		}
		if (e->kind == GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START) {
			j->failed = true;
			snprintf(j->reason, sizeof(j->reason), "%s", e->reason);
		}
	} else if (m->m_case == GPOOL__MSG__M_HEARTBEAT) {
		if (hb_silent)
			return;
		if (hold_job &&
		    held_has(m->heartbeat->held, m->heartbeat->n_held, hold_job, NULL, NULL)) {
			if (++hold_seen == 1)
				return; /* unanswered: the exit must be listed again */
			if (!hold_acked_id)
				hold_acked_id = m->id;
		}
		/* keep the agent registered */
		reply_heartbeat(m->id);
	}
}

/* Send the agent a one-task launch of job.attempt (spec, as user) on host "tw". */
static void send_launch(uint64_t job, uint32_t attempt, Gpool__JobSpec *spec, const char *user,
			Gpool__TaskPlacement *tp)
{
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = job;
	l.attempt = attempt;
	l.spec = spec;
	l.user = (char *)user;
	/* the job's account is its uid: the test's own, or one no account has */
	l.uid = strcmp(user, me) == 0 ? geteuid() : 3999999;
	l.tasks = &tp;
	l.n_tasks = 1;
	l.size = 1;
	l.local_size = 1;
	l.nodelist = "tw";
	l.master_addr = "127.0.0.1";
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_LAUNCH;
	m.launch = &l;
	send_msg(&m);
}

static void launch_ex(uint64_t job, uint32_t attempt, bool no_requeue, const char *user,
		      const char *script)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script};
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	spec.argv = argv;
	spec.n_argv = 3;
	spec.no_requeue = no_requeue;
	Gpool__TaskPlacement tp = GPOOL__TASK_PLACEMENT__INIT;
	send_launch(job, attempt, &spec, user, &tp);
}

static void launch(uint64_t job, const char *user, const char *script)
{
	launch_ex(job, 1, false, user, script);
}

static void run_job(void **state)
{
	struct job_seen j = {.ids_zero = true};
	launch(7, me, "echo hi; echo oops >&2; exit 2");
	int64_t deadline = gp_mono_ms() + 10000;
	while (!j.exited && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 200, keep_job, &j); /* never sent: collects the rest */
	assert_true(j.started);
	assert_true(j.exited);
	assert_true(j.order_ok);
	assert_true(j.ids_zero);
	assert_true(WIFEXITED(j.status) && WEXITSTATUS(j.status) == 2);
	assert_int_equal(j.out.len, 3);
	assert_memory_equal(j.out.data, "hi\n", 3);
	gp_buf_release(&j.out);
}

/* Heartbeats carry the energy of card 0, a fake card with a simulated draw (100 W while a
 * task holds it, 20 W otherwise), sampled every 50 ms and integrated; card 1 has none and is
 * left out. */
struct power_seen {
	int reports;
	uint64_t last_mj;
	bool monotonic, card1_seen, busy_seen, idle_after;
	int64_t busy_from_ms, busy_to_ms; /* test clock when 100 W was first and last seen */
	uint64_t busy_from_mj, busy_to_mj;
	struct job_seen *j;
};

static void keep_power(const Gpool__Msg *m, void *arg)
{
	struct power_seen *p = arg;
	keep_job(m, p->j);
	if (m->m_case != GPOOL__MSG__M_HEARTBEAT)
		return;
	for (size_t i = 0; i < m->heartbeat->n_power; i++) {
		const Gpool__CardPower *c = m->heartbeat->power[i];
		if (c->card == 1) {
			p->card1_seen = true;
			continue;
		}
		assert_int_equal(c->card, 0);
		assert_int_equal(c->source, GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED);
		if (p->reports++ && c->energy_mj < p->last_mj)
			p->monotonic = false;
		p->last_mj = c->energy_mj;
		if (c->watts == 100.0) {
			if (!p->busy_seen) {
				p->busy_from_ms = gp_mono_ms();
				p->busy_from_mj = c->energy_mj;
			}
			p->busy_seen = true;
			p->busy_to_ms = gp_mono_ms();
			p->busy_to_mj = c->energy_mj;
		} else if (c->watts == 20.0 && p->busy_seen) {
			p->idle_after = true;
		}
	}
}

static void card_power(void **state)
{
	struct job_seen j = {.ids_zero = true};
	struct power_seen p = {.monotonic = true, .j = &j};
	char *argv[] = {"/bin/sh", "-c", "sleep 1.5"};
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	spec.argv = argv;
	spec.n_argv = 3;
	uint32_t cards[] = {0};
	Gpool__TaskPlacement tp = GPOOL__TASK_PLACEMENT__INIT;
	tp.cards = cards;
	tp.n_cards = 1;
	send_launch(20, 1, &spec, me, &tp);
	int64_t deadline = gp_mono_ms() + 10000;
	while ((!j.exited || !p.idle_after) && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 100, keep_power, &p);
	assert_true(j.exited);
	assert_true(p.reports >= 5);
	assert_true(p.monotonic);
	assert_false(p.card1_seen);
	assert_true(p.busy_seen);
	assert_true(p.idle_after);
	/* while the task held it the integral grew by about 100 W x the time between the
	 * reports that said 100 W (heartbeats every 200 ms; samples every 50 ms, so the edges
	 * and the transport blur it by a sample or two each side) */
	double secs = (double)(p.busy_to_ms - p.busy_from_ms) / 1000.0;
	double joules = (double)(p.busy_to_mj - p.busy_from_mj) / 1000.0;
	assert_true(secs > 0.5);
	if (joules < 100.0 * secs - 25.0 || joules > 100.0 * secs + 25.0)
		fail_msg("%.1f J over %.3f s at 100 W", joules, secs);
	gp_buf_release(&j.out);
}

static void refused(void **state)
{
	struct job_seen j = {.ids_zero = true};
	launch(8, "no-such-user-gp", "true");
	int64_t deadline = gp_mono_ms() + 5000;
	while (!j.failed && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 200, keep_job, &j);
	assert_true(j.failed);
	assert_string_equal(j.reason, "no local account with uid 3999999 ('no-such-user-gp' in the "
				      "pool) on node tw");
}

/* The scheduler does not know the agent (ERROR_UNEXPECTED, why): it registers again within 3 s
 * and is answered. */
static void send_unexpected(const char *why)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__Error e;
	gp_msg_error(&m, &e, 0, GPOOL__ERROR_CODE__ERROR_UNEXPECTED, why);
	send_msg(&m);
}

static void forgotten(const char *why, keep_f keep, void *arg)
{
	send_unexpected(why);
	Gpool__Msg *r = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, keep, arg);
	assert_non_null(r);
	reply_register(r->id);
}

static void reregister(void **state)
{
	/* garbage first: dropped, the agent goes on */
	zmq_send(router, rid, rid_len, ZMQ_SNDMORE);
	zmq_send(router, "garbage", 7, 0);
	forgotten("node is not registered", NULL, NULL);
	assert_non_null(expect(GPOOL__MSG__M_HEARTBEAT, 2000, NULL, NULL));
	/* heartbeats unanswered three times: registers again */
	assert_non_null(expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL));
}

/* The agent stops mid-job and starts again: it says it holds the task, and every byte of
 * output and the exit status still arrive, in order. */
static void agent_restart(void **state)
{
	struct job_seen j = {.ids_zero = true};
	/* the last test left it registering */
	Gpool__Msg *m = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL);
	assert_non_null(m);
	reply_register(m->id);
	launch(9, me, "echo a; sleep 2; echo b; exit 5");
	int64_t deadline = gp_mono_ms() + 5000;
	while (!j.started && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 100, keep_job, &j);
	assert_true(j.started);
	kill(agent, SIGTERM);
	int st = wait_bounded(agent, 5000);
	agent = 0;
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	start_agent(endpoint);
	m = expect(GPOOL__MSG__M_NODE_REGISTER, 5000, keep_job, &j);
	assert_non_null(m);
	bool held = false;
	for (size_t i = 0; i < m->node_register->n_held; i++)
		if (m->node_register->held[i]->job_id == 9)
			held = true;
	assert_true(held);
	reply_register(m->id);
	deadline = gp_mono_ms() + 15000;
	while (!j.exited && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 200, keep_job, &j);
	assert_true(j.exited);
	assert_true(j.order_ok);
	assert_true(WIFEXITED(j.status) && WEXITSTATUS(j.status) == 5);
	assert_int_equal(j.out.len, 4);
	assert_memory_equal(j.out.data, "a\nb\n", 4);
	gp_buf_release(&j.out);
}

/* Collect until cond() or ms pass; heartbeats are answered per the hold/silent rules. */
static void collect(struct job_seen *j, int ms, bool (*cond)(struct job_seen *))
{
	int64_t deadline = gp_mono_ms() + ms;
	while (!(cond && cond(j)) && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_job, j);
}

static bool exited(struct job_seen *j)
{
	return j->exited || j->failed;
}

/* The next heartbeat; answered (keeps the agent up). */
static Gpool__Msg *next_heartbeat(struct job_seen *j)
{
	Gpool__Msg *m = expect(GPOOL__MSG__M_HEARTBEAT, 2000, keep_job, j);
	if (m)
		keep_job(m, j);
	return m;
}

/* An exit stays in every heartbeat until the reply to one that carried it. */
static void held_until_ack(void **state)
{
	struct job_seen j = {.ids_zero = true};
	hold_job = 10;
	hold_seen = 0;
	hold_acked_id = 0;
	launch(10, me, "exit 3");
	collect(&j, 10000, exited);
	assert_true(j.exited);
	int64_t deadline = gp_mono_ms() + 5000;
	while (!hold_acked_id && gp_mono_ms() < deadline)
		next_heartbeat(&j);
	assert_true(hold_seen >= 2);
	assert_true(hold_acked_id != 0);
	/* after the reply, gone from the held list (the next one may have left before it) */
	Gpool__Msg *m = next_heartbeat(&j);
	m = next_heartbeat(&j);
	assert_non_null(m);
	assert_false(held_has(m->heartbeat->held, m->heartbeat->n_held, 10, NULL, NULL));
	hold_job = 0;
	gp_buf_release(&j.out);
}

static bool file_exists(const char *name)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/state/steps/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* An exit not yet acknowledged survives an agent restart (the exit file), and a refusal is
 * held as an exit (status 1 << 8) too. */
static void exit_survives_restart(void **state)
{
	struct job_seen j = {.ids_zero = true};
	hb_silent = true; /* nothing acknowledged from here */
	launch(11, me, "exit 4");
	collect(&j, 10000, exited);
	assert_true(j.exited);
	struct job_seen r = {.ids_zero = true};
	launch(12, "no-such-user-gp", "true");
	collect(&r, 5000, exited);
	assert_true(r.failed);
	/* the step's supervisor is released only after the exit is on disk */
	for (int i = 0; i < 100 && file_exists("11.1.launch"); i++)
		usleep(20000);
	assert_false(file_exists("11.1.launch"));
	assert_true(file_exists("11.1.exit"));
	kill(agent, SIGTERM);
	int st = wait_bounded(agent, 5000);
	agent = 0;
	assert_true(st != -1 && WIFEXITED(st));
	hb_silent = false;
	start_agent(endpoint);
	Gpool__Msg *m = expect(GPOOL__MSG__M_NODE_REGISTER, 5000, keep_job, &j);
	assert_non_null(m);
	bool ex = false;
	int status = 0;
	assert_true(held_has(m->node_register->held, m->node_register->n_held, 11, &ex, &status));
	assert_true(ex);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 4);
	assert_true(held_has(m->node_register->held, m->node_register->n_held, 12, &ex, &status));
	assert_true(ex);
	assert_int_equal(status, 1 << 8);
	reply_register(m->id);
	/* acknowledged: forgotten, file removed */
	m = next_heartbeat(&j);
	assert_non_null(m);
	assert_false(held_has(m->heartbeat->held, m->heartbeat->n_held, 11, NULL, NULL));
	assert_false(held_has(m->heartbeat->held, m->heartbeat->n_held, 12, NULL, NULL));
	assert_false(file_exists("11.1.exit"));
	gp_buf_release(&j.out);
}

struct by_job {
	uint64_t job;
	struct job_seen j;
};

static void keep_by_job(const Gpool__Msg *m, void *arg)
{
	struct by_job *v = arg;
	uint64_t job = m->m_case == GPOOL__MSG__M_TASK_EVENT ? m->task_event->job_id
		       : m->m_case == GPOOL__MSG__M_OUTPUT   ? m->output->job_id
							     : 0;
	for (int i = 0; i < 2; i++)
		if (!job || v[i].job == job)
			keep_job(m, &v[i].j);
}

/* Silence up to the lease: every task keeps running (a scheduler restart); past it, the
 * requeueable job is killed and the other one keeps running. Kills are fenced by attempt. */
static void lease(void **state)
{
	struct by_job v[2] = {{20, {.ids_zero = true}}, {21, {.ids_zero = true}}};
	lease_ms = 1500;
	/* learn the lease */
	forgotten("restarted", keep_by_job, v);
	launch_ex(20, 1, false, me, "sleep 30");
	launch_ex(21, 1, true, me, "sleep 30");
	int64_t deadline = gp_mono_ms() + 5000;
	while (!(v[0].j.started && v[1].j.started) && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_true(v[0].j.started && v[1].j.started);
	/* a scheduler restart shorter than the lease: silent 1 s, then "who are you?" */
	hb_silent = true;
	deadline = gp_mono_ms() + 1000;
	while (gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	hb_silent = false;
	send_unexpected("restarted");
	Gpool__Msg *m = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, keep_by_job, v);
	assert_non_null(m);
	bool ex = true;
	assert_true(held_has(m->node_register->held, m->node_register->n_held, 20, &ex, NULL));
	assert_false(ex);
	assert_true(held_has(m->node_register->held, m->node_register->n_held, 21, &ex, NULL));
	assert_false(ex);
	reply_register(m->id);
	deadline = gp_mono_ms() + 500;
	while (gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_false(v[0].j.exited || v[1].j.exited);
	/* now past the lease: the agent registers again meanwhile, unanswered */
	hb_silent = true;
	deadline = gp_mono_ms() + 2500;
	while (gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	hb_silent = false;
	m = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, keep_by_job, v);
	assert_non_null(m);
	reply_register(m->id);
	deadline = gp_mono_ms() + 5000;
	while (!v[0].j.exited && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_true(v[0].j.exited);
	assert_true(WIFSIGNALED(v[0].j.status) && WTERMSIG(v[0].j.status) == SIGKILL);
	assert_false(v[1].j.exited);
	/* a kill for another attempt of job 21 leaves this one running */
	Gpool__Kill k = GPOOL__KILL__INIT;
	k.job_id = 21;
	k.attempt = 2;
	k.signal = SIGKILL;
	Gpool__Msg km = GPOOL__MSG__INIT;
	km.m_case = GPOOL__MSG__M_KILL;
	km.kill = &k;
	send_msg(&km);
	deadline = gp_mono_ms() + 1000;
	while (gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_false(v[1].j.exited);
	k.attempt = 1;
	send_msg(&km);
	deadline = gp_mono_ms() + 5000;
	while (!v[1].j.exited && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_true(v[1].j.exited);
	lease_ms = 0;
	for (int i = 0; i < 2; i++)
		gp_buf_release(&v[i].j.out);
}

/* A standby's ERROR_NOT_LEADER is not the leader's word: past the lease, while only a standby
 * answers (every 200 ms, naming no leader), a requeueable task is killed as when nobody
 * answers. Before, each such answer renewed the lease (t0374 once fenced a node whose peer had
 * heard only a standby). */
static void standby_answer_keeps_no_lease(void **state)
{
	/* keep_by_job looks at two jobs: the second is never launched */
	struct by_job v[2] = {{22, {.ids_zero = true}}, {23, {.ids_zero = true}}};
	lease_ms = 1500;
	forgotten("restarted", keep_by_job, v);
	launch_ex(22, 1, false, me, "sleep 30");
	int64_t deadline = gp_mono_ms() + 5000;
	while (!v[0].j.started && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	assert_true(v[0].j.started);
	hb_silent = true;
	deadline = gp_mono_ms() + 3000;
	while (gp_mono_ms() < deadline) {
		Gpool__Msg m = GPOOL__MSG__INIT;
		Gpool__Error e;
		gp_msg_error(&m, &e, 0, GPOOL__ERROR_CODE__ERROR_NOT_LEADER, "a standby");
		send_msg(&m);
		int64_t next = gp_mono_ms() + 200;
		while (gp_mono_ms() < next)
			expect(GPOOL__MSG__M_ERROR, 50, keep_by_job, v);
	}
	hb_silent = false;
	/* the task was killed when the lease ran out, standby answers or not */
	char path[300], *log = NULL;
	size_t loglen = 0;
	snprintf(path, sizeof(path), "%s/agent.log", dir);
	assert_int_equal(gp_read_file(path, 1 << 24, (uint8_t **)&log, &loglen), 0);
	assert_non_null(memmem(log, loglen, "killing job 22.1 (requeueable", 29));
	free(log);
	/* the leader back: registered again */
	Gpool__Msg *m = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, keep_by_job, v);
	assert_non_null(m);
	reply_register(m->id);
	lease_ms = 0;
	for (int i = 0; i < 2; i++)
		gp_buf_release(&v[i].j.out);
}

/* A standby's answer (ERROR_NOT_LEADER naming the leader): the agent registers with that
 * leader, a second scheduler it was not given; a registration left unanswered there for 3 s goes
 * to the next of its list, back here. */
static void follows_not_leader(void **state)
{
	void *here = router, *leader = zmq_socket(zctx, ZMQ_ROUTER);
	/* each scheduler has a wire (a replay window) of its own, as real ones do: what the agent
	 * sent here before it moved may arrive after what it sent the leader */
	gp_wire_t *here_wire = wire, *leader_wire = gp_wire_create(auth, 64 << 20);
	assert_non_null(leader_wire);
	char ep[64];
	size_t len = sizeof(ep);
	int linger = 0;
	zmq_setsockopt(leader, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(leader, "tcp://127.0.0.1:*"), 0);
	zmq_getsockopt(leader, ZMQ_LAST_ENDPOINT, ep, &len);
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__Error e;
	gp_msg_error(&m, &e, 0, GPOOL__ERROR_CODE__ERROR_NOT_LEADER, "a standby");
	e.leader = ep;
	send_msg(&m);
	router = leader;
	wire = leader_wire;
	Gpool__Msg *r = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL);
	router = here;
	wire = here_wire;
	assert_non_null(r);
	assert_string_equal(r->node_register->name, "tw");
	/* what the agent sent here before it moved */
	expect(GPOOL__MSG__M_LAUNCH, 100, NULL, NULL);
	int64_t t0 = gp_mono_ms();
	r = expect(GPOOL__MSG__M_NODE_REGISTER, 6000, NULL, NULL);
	assert_non_null(r);
	assert_true(gp_mono_ms() - t0 >= 2000);
	reply_register(r->id);
	zmq_close(leader);
	gp_wire_destroy(&leader_wire);
}

static void clean_exit(void **state)
{
	kill(agent, SIGTERM);
	int st = wait_bounded(agent, 5000);
	agent = 0;
	assert_true(st != -1);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void start_agent(const char *ep)
{
	char uid[16], state_dir[300], scratch[300];
	if (ep != endpoint)
		snprintf(endpoint, sizeof(endpoint), "%s", ep);
	snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	snprintf(scratch, sizeof(scratch), "%s/scratch", dir);
	char logpath[300];
	snprintf(logpath, sizeof(logpath), "%s/agent.log", dir);
	agent = fork();
	if (agent == 0) {
		execl(gworkerd, gworkerd, "--scheduler", ep, "--state-dir", state_dir,
		      "--scratch-dir", scratch, "--node-name", "tw", "--sched-uid", uid,
		      "--allow-root", "--psu-watts", "550", "--fake-cards",
		      "nvidia:GTX 1660:6GiB:7.5:125W:draw=100W:idle=20W,"
		      "amd:RX 6700 XT:12GiB:gfx1031:230W",
		      "--power-sample-interval", "50ms", "--log-level", "debug", "--log-file",
		      logpath, "--config", "/dev/null", (char *)NULL);
		_exit(127);
	}
}

static int setup(void **state)
{
	gp_error_t err;
	if (!(auth = gp_auth_create(NULL, &err))) {
		printf("SKIP: no MUNGE: %s\n", err.text);
		exit(77);
	}
	char probe_payload[1] = {0}, *cred = NULL;
	if (gp_auth_encode(auth, probe_payload, 1, &cred, &err) < 0) {
		printf("SKIP: munged does not answer: %s\n", err.text);
		exit(77);
	}
	free(cred);
	wire = gp_wire_create(auth, 64 << 20);
	/* orphans (supervisors after an agent stop, tasks after a supervisor is killed) become
	 * ours, so the end of the test can kill and reap every one */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	assert_non_null(mkdtemp(dir));
	struct passwd *pw = getpwuid(geteuid());
	snprintf(me, sizeof(me), "%s", pw ? pw->pw_name : "root");
	zctx = zmq_ctx_new();
	router = zmq_socket(zctx, ZMQ_ROUTER);
	int port = 0;
	char ep[64];
	assert_int_equal(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
	size_t len = sizeof(ep);
	zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, ep, &len);
	sscanf(strrchr(ep, ':') + 1, "%d", &port);
	start_agent(ep);
	return 0;
}

/* Kill and reap every process this test started: all are its descendants (it is a subreaper),
 * so repeat until it has no child left; bounded. */
static void kill_descendants(void)
{
	for (int round = 0; round < 200; round++) {
		bool any = false;
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			int pid = atoi(e->d_name);
			if (pid <= 0 || pid == getpid())
				continue;
			char p[64], buf[512];
			snprintf(p, sizeof(p), "/proc/%d/stat", pid);
			FILE *f = fopen(p, "r");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			char *rp = strrchr(buf, ')');
			int ppid = 0;
			char st;
			if (rp && sscanf(rp + 2, "%c %d", &st, &ppid) == 2 && ppid == getpid()) {
				kill(pid, SIGKILL);
				any = true;
			}
		}
		if (d)
			closedir(d);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			any = true;
		if (!any)
			return;
		usleep(20000);
	}
	fprintf(stderr, "test_agent: could not end every process it started\n");
}

static int failed;

static void dump_log(void)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/agent.log", dir);
	FILE *f = fopen(p, "r");
	char line[1024];
	fprintf(stderr, "---- %s ----\n", p);
	while (f && fgets(line, sizeof(line), f))
		fputs(line, stderr);
	if (f)
		fclose(f);
}

static int teardown(void **state)
{
	if (agent > 0)
		kill(agent, SIGKILL);
	kill_descendants();
	agent = 0;
	gp_cgroup_sweep_idle("tw", 0); /* the idle cgroups of the task shells killed above */
	if (failed || getenv("GP_TEST_VERBOSE"))
		dump_log();
	gp_test_peer_close(router, zctx, &wire, dir);
	gp_auth_destroy(&auth);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s GWORKERD GSTEPD\n", argv[0]);
		return 2;
	}
	gworkerd = argv[1];
	gstepd = argv[2];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(registration),
	    cmocka_unit_test(run_job),
	    cmocka_unit_test(card_power),
	    cmocka_unit_test(refused),
	    cmocka_unit_test(reregister),
	    cmocka_unit_test(agent_restart),
	    cmocka_unit_test(held_until_ack),
	    cmocka_unit_test(exit_survives_restart),
	    cmocka_unit_test(lease),
	    cmocka_unit_test(standby_answer_keeps_no_lease),
	    cmocka_unit_test(follows_not_leader),
	    cmocka_unit_test(clean_exit),
	};
	int rc = cmocka_run_group_tests(tests, setup, NULL);
	failed = rc;
	teardown(NULL);
	return rc;
}

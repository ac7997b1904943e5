/* test_agent.c: gworkerd against a fake scheduler (a ROUTER on loopback with MUNGE-sealed
 * envelopes): registration and its retry, heartbeats, a Launch run through gstepd with its
 * events and output forwarded in order, re-registration on ERROR_UNEXPECTED, garbage dropped,
 * a refused account, and a clean exit on SIGTERM.
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
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "util.h"
#include "wire.h"

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
		zmq_pollitem_t it = { .socket = router, .events = ZMQ_POLLIN };
		if (zmq_poll(&it, 1, (long)left) <= 0)
			continue;
		int n = zmq_recv(router, rid, sizeof(rid), 0);
		assert_true(n > 0);
		rid_len = (size_t)n;
		zmq_msg_t body;
		zmq_msg_init(&body);
		zmq_msg_recv(&body, router, 0);
		struct gp_sender from;
		Gpool__ErrorCode code;
		gp_error_t err;
		b = gp_wire_open(wire, zmq_msg_data(&body), zmq_msg_size(&body), &from, &code, &err);
		zmq_msg_close(&body);
		if (!b)
			fail_msg("agent sent an envelope that does not open: %s", err.text);
		assert_int_equal(from.uid, geteuid());
		envelopes++;
	}
}

static void send_msg(const Gpool__Msg *m)
{
	gp_batch_t b = { 0 };
	gp_buf_t env = { 0 };
	gp_error_t err;
	assert_int_equal(gp_batch_add(&b, m), 0);
	assert_int_equal(gp_wire_seal(wire, &b, &env, &err), 0);
	zmq_send(router, rid, rid_len, ZMQ_SNDMORE);
	zmq_send(router, env.data, env.len, 0);
	gp_batch_release(&b);
	gp_buf_release(&env);
}

static void reply_register(uint64_t id)
{
	Gpool__NodeRegisterReply r = GPOOL__NODE_REGISTER_REPLY__INIT;
	r.heartbeat_ms = 200;
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
	Gpool__HeartbeatReply hr = GPOOL__HEARTBEAT_REPLY__INIT;
	Gpool__Msg r = GPOOL__MSG__INIT;
	r.id = m->id;
	r.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
	r.heartbeat_reply = &hr;
	send_msg(&r);
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
		/* keep the agent registered */
		Gpool__HeartbeatReply hr = GPOOL__HEARTBEAT_REPLY__INIT;
		Gpool__Msg r = GPOOL__MSG__INIT;
		r.id = m->id;
		r.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
		r.heartbeat_reply = &hr;
		send_msg(&r);
	}
}

static void launch(uint64_t job, const char *user, const char *script)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script };
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	spec.argv = argv;
	spec.n_argv = 3;
	Gpool__TaskPlacement tp = GPOOL__TASK_PLACEMENT__INIT, *tpp = &tp;
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = job;
	l.attempt = 1;
	l.spec = &spec;
	l.user = (char *)user;
	l.tasks = &tpp;
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

static void run_job(void **state)
{
	struct job_seen j = { .ids_zero = true };
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

static void refused(void **state)
{
	struct job_seen j = { .ids_zero = true };
	launch(8, "no-such-user-gp", "true");
	int64_t deadline = gp_mono_ms() + 5000;
	while (!j.failed && gp_mono_ms() < deadline)
		expect(GPOOL__MSG__M_ERROR, 200, keep_job, &j);
	assert_true(j.failed);
	assert_string_equal(j.reason, "no local account 'no-such-user-gp' on node tw");
}

static void reregister(void **state)
{
	/* garbage first: dropped, the agent goes on */
	zmq_send(router, rid, rid_len, ZMQ_SNDMORE);
	zmq_send(router, "garbage", 7, 0);
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__Error e;
	gp_msg_error(&m, &e, 0, GPOOL__ERROR_CODE__ERROR_UNEXPECTED, "node is not registered");
	send_msg(&m);
	Gpool__Msg *r = expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL);
	assert_non_null(r);
	reply_register(r->id);
	assert_non_null(expect(GPOOL__MSG__M_HEARTBEAT, 2000, NULL, NULL));
	/* heartbeats unanswered three times: registers again */
	assert_non_null(expect(GPOOL__MSG__M_NODE_REGISTER, 3000, NULL, NULL));
}

/* The agent stops mid-job and starts again: it says it holds the task, and every byte of
 * output and the exit status still arrive, in order. */
static void agent_restart(void **state)
{
	struct job_seen j = { .ids_zero = true };
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
	int st;
	waitpid(agent, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
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

static void clean_exit(void **state)
{
	kill(agent, SIGTERM);
	int st;
	assert_int_equal(waitpid(agent, &st, 0), agent);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	agent = 0;
}

static void start_agent(const char *ep)
{
	char uid[16], state_dir[300], scratch[300];
	if (ep != endpoint)
		snprintf(endpoint, sizeof(endpoint), "%s", ep);
	snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	snprintf(scratch, sizeof(scratch), "%s/scratch", dir);
	agent = fork();
	if (agent == 0) {
		execl(gworkerd, gworkerd, "--scheduler", ep, "--state-dir", state_dir, "--scratch-dir",
		      scratch, "--node-name", "tw", "--stepd", gstepd, "--sched-uid", uid,
		      "--allow-root", "--psu-watts", "550", "--fake-cards",
		      "nvidia:GTX 1660:6GiB:7.5:125W,amd:RX 6700 XT:12GiB:gfx1031:230W",
		      "--log-level", "debug", "--config", "/dev/null", (char *)NULL);
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
	char probe_payload[1] = { 0 }, *cred = NULL;
	if (gp_auth_encode(auth, probe_payload, 1, &cred, &err) < 0) {
		printf("SKIP: munged does not answer: %s\n", err.text);
		exit(77);
	}
	free(cred);
	wire = gp_wire_create(auth, 64 << 20);
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

/* Supervisors outlive the agent by design: end the ones this test started (their command
 * lines name the temporary directory). */
static void kill_leftovers(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char p[300], cmd[4096];
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%d/cmdline", pid);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		for (size_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = '\0';
		if (strstr(cmd, dir))
			kill(pid, SIGKILL);
	}
	if (d)
		closedir(d);
}

static int teardown(void **state)
{
	kill_leftovers();
	if (agent > 0) {
		kill(agent, SIGKILL);
		waitpid(agent, NULL, 0);
	}
	int zero = 0;
	zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_close(router);
	zmq_ctx_term(zctx);
	gp_wire_destroy(&wire);
	gp_auth_destroy(&auth);
	gp_rm_rf(dir);
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
		cmocka_unit_test(registration), cmocka_unit_test(run_job),
		cmocka_unit_test(refused),	cmocka_unit_test(reregister),
		cmocka_unit_test(agent_restart), cmocka_unit_test(clean_exit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

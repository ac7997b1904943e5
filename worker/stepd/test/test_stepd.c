/* test_stepd.c: gstepd run for real against a fake agent (a ROUTER on an ipc socket in a
 * temporary directory): output and offsets, exit status, the order of TASK_EXITED after the
 * streams' eof, memory-limit kills reported as oom, a kill reaching grandchildren, account
 * refusal, and cleanup. Usage: test_worker_stepd PATH-OF-GSTEPD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/node/launchfile.h"
#include "common/util.h"
#include "common/wire.h"
#include "worker/test/router.h"

static const char *gstepd;
static char dir[] = "/tmp/gp-stepd-XXXXXX";
static char scratch[256], sockep[300];
static void *zctx, *router;
static gp_wire_t *wire;
static char me[64];

#define MAXT 4

struct result {
	gp_buf_t out[MAXT][3];
	bool eof[MAXT][3];
	bool started[MAXT], exited[MAXT], failed[MAXT];
	int pid[MAXT];
	int status[MAXT];
	bool oom[MAXT];
	char reason[MAXT][512];
	bool hello;
	bool order_ok;
	int stepd_status;
	/* the offsets at which stdout's chunks ended, in order */
	uint64_t cuts[MAXT][16];
	int ncuts[MAXT];
};

static void result_free(struct result *r)
{
	for (int i = 0; i < MAXT; i++)
		for (int k = 0; k < 3; k++)
			gp_buf_release(&r->out[i][k]);
}

static void launch_init(Gpool__Launch *l, Gpool__JobSpec *spec, Gpool__TaskPlacement *tp,
			Gpool__TaskPlacement **tpp, int ntasks, uint64_t job, char **argv, int argc)
{
	gpool__launch__init(l);
	gpool__job_spec__init(spec);
	spec->argv = argv;
	spec->n_argv = (size_t)argc;
	for (int i = 0; i < ntasks; i++) {
		gpool__task_placement__init(&tp[i]);
		tp[i].rank = (uint32_t)i;
		tp[i].local_rank = (uint32_t)i;
		tpp[i] = &tp[i];
	}
	l->job_id = job;
	l->attempt = 1;
	l->spec = spec;
	l->user = me;
	l->uid = geteuid();
	l->tasks = tpp;
	l->n_tasks = (size_t)ntasks;
	l->size = (uint32_t)ntasks;
	l->local_size = (uint32_t)ntasks;
	l->nodelist = "t1";
	l->master_addr = "127.0.0.1";
	l->master_port = 29500;
}

/* Write L's launch file (its path into PATH) and start gstepd on it, as a task shell with
 * SHELL (gstepd --shell: it takes further jobs and waits for a close once idle). */
static pid_t start_gstepd(const Gpool__Launch *l, char *path, size_t len, bool shell)
{
	gp_error_t err;
	assert_int_equal(gp_launch_path(path, len, dir, l->job_id, l->attempt), 0);
	assert_int_equal(gp_launch_write(path, l, &err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {(char *)gstepd,
				"--launch",
				path,
				"--agent",
				sockep,
				"--scratch-dir",
				scratch,
				"--node-name",
				"t1",
				"--allow-root",
				"--log-level",
				"debug",
				shell ? "--shell" : NULL,
				NULL};
		execv(gstepd, argv);
		_exit(127);
	}
	return pid;
}

static pid_t start_stepd(const Gpool__Launch *l, char *path, size_t len)
{
	return start_gstepd(l, path, len, false);
}

/* One job for a test: its Launch, spec and placements (at most MAX_TASKS tasks), and the path
 * of its launch file once started. */
#define MAX_TASKS 4
struct job {
	Gpool__Launch l;
	Gpool__JobSpec spec;
	Gpool__TaskPlacement tp[MAX_TASKS], *tpp[MAX_TASKS];
	char path[512];
};

static void job_init(struct job *j, int ntasks, uint64_t id, char **argv, int argc)
{
	assert_true(ntasks <= MAX_TASKS);
	launch_init(&j->l, &j->spec, j->tp, j->tpp, ntasks, id, argv, argc);
}

static void send_to(const char *rid, const Gpool__Msg *m)
{
	gp_batch_t b = {0};
	gp_buf_t env = {0};
	gp_error_t err;
	assert_int_equal(gp_batch_add(&b, m), 0);
	assert_int_equal(gp_wire_seal(wire, &b, &env, &err), 0);
	zmq_send(router, rid, strlen(rid), ZMQ_SNDMORE);
	zmq_send(router, env.data, env.len, 0);
	gp_batch_release(&b);
	gp_buf_release(&env);
}

/* Acknowledge a gstepd's messages up to LAST, as the agent does. */
static void ack_upto(const char *rid, uint64_t last)
{
	Gpool__StepAck ack = GPOOL__STEP_ACK__INIT;
	ack.upto = last;
	Gpool__Msg am = GPOOL__MSG__INIT;
	am.m_case = GPOOL__MSG__M_STEP_ACK;
	am.step_ack = &ack;
	send_to(rid, &am);
}

/* Called for every Output, to let a test react (e.g. kill once a pid was printed). */
typedef void (*on_output_f)(struct result *r, const char *rid, void *arg);

/* Act as the agent until gstepd exits (or 30 s pass). */
static void collect(pid_t pid, struct result *r, on_output_f cb, void *arg)
{
	memset(r, 0, sizeof(*r));
	r->order_ok = true;
	int64_t deadline = gp_mono_ms() + 30000;
	uint64_t last = 0;
	while (1) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			r->stepd_status = st;
			break;
		}
		if (gp_mono_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("gstepd did not finish in 30 s");
		}
		zmq_pollitem_t it = {.socket = router, .events = ZMQ_POLLIN};
		if (zmq_poll(&it, 1, 100) <= 0)
			continue;
		char rid[64] = "";
		int n = zmq_recv(router, rid, sizeof(rid) - 1, 0);
		assert_true(n > 0);
		rid[n] = '\0';
		struct gp_sender from;
		gp_error_t err;
		Gpool__Batch *b = gp_test_peer_open(router, wire, &from, &err);
		assert_non_null(b);
		bool got_output = false;
		for (size_t i = 0; i < b->n_msgs; i++) {
			Gpool__Msg *m = b->msgs[i];
			if (m->id && m->id <= last)
				continue; /* a resend */
			if (m->id)
				last = m->id;
			if (m->m_case == GPOOL__MSG__M_STEP_HELLO) {
				r->hello = true;
			} else if (m->m_case == GPOOL__MSG__M_OUTPUT) {
				Gpool__Output *o = m->output;
				assert_true(o->rank < MAXT && (o->stream == 1 || o->stream == 2));
				gp_buf_t *buf = &r->out[o->rank][o->stream];
				/* offsets run without gaps or overlaps */
				assert_int_equal(o->offset, buf->len);
				assert_false(r->eof[o->rank][o->stream]);
				gp_buf_append(buf, o->data.data, o->data.len);
				if (o->stream == 1 && o->data.len && r->ncuts[o->rank] < 16)
					r->cuts[o->rank][r->ncuts[o->rank]++] = buf->len;
				if (o->eof)
					r->eof[o->rank][o->stream] = true;
				got_output = true;
			} else if (m->m_case == GPOOL__MSG__M_TASK_EVENT) {
				Gpool__TaskEvent *e = m->task_event;
				assert_true(e->rank < MAXT);
				if (e->kind == GPOOL__TASK_EVENT_KIND__TASK_STARTED) {
					r->started[e->rank] = true;
					r->pid[e->rank] = e->pid;
				} else if (e->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
					r->exited[e->rank] = true;
					r->status[e->rank] = e->status;
					r->oom[e->rank] = e->oom;
					if (!r->eof[e->rank][1] || !r->eof[e->rank][2])
						r->order_ok = false;
				} else if (e->kind ==
					   GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START) {
					r->failed[e->rank] = true;
					snprintf(r->reason[e->rank], sizeof(r->reason[0]), "%s",
						 e->reason);
				}
			}
		}
		gpool__batch__free_unpacked(b, NULL);
		ack_upto(rid, last);
		if (got_output && cb)
			cb(r, rid, arg);
	}
}

static bool gone(int pid)
{
	for (int i = 0; i < 100; i++) {
		char p[64], stat[512] = "";
		snprintf(p, sizeof(p), "/proc/%d/stat", pid);
		FILE *f = fopen(p, "r");
		if (!f)
			return true;
		size_t n = fread(stat, 1, sizeof(stat) - 1, f);
		fclose(f);
		stat[n] = '\0';
		char *rp = strrchr(stat, ')');
		if (rp && rp[2] == 'Z')
			return true;
		usleep(20000);
	}
	return false;
}

static void output_and_status(void **state)
{
	/* one script, two literals */
	char *argv[] = {"/bin/sh", "-c",
			("printf 'out%s ' $GPOOL_RANK; printf err >&2; "
			 "head -c 300000 /dev/zero | tr '\\0' x; exit 3")};
	struct job j;
	job_init(&j, 2, 101, argv, 3);
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(WIFEXITED(r.stepd_status) && WEXITSTATUS(r.stepd_status) == 0);
	assert_true(r.hello);
	for (int i = 0; i < 2; i++) {
		assert_true(r.started[i]);
		assert_true(r.exited[i]);
		assert_true(WIFEXITED(r.status[i]));
		assert_int_equal(WEXITSTATUS(r.status[i]), 3);
		assert_false(r.oom[i]);
		char want[16];
		snprintf(want, sizeof(want), "out%d ", i);
		assert_int_equal(r.out[i][1].len, strlen(want) + 300000);
		assert_memory_equal(r.out[i][1].data, want, strlen(want));
		assert_int_equal(r.out[i][1].data[r.out[i][1].len - 1], 'x');
		assert_int_equal(r.out[i][2].len, 3);
		assert_memory_equal(r.out[i][2].data, "err", 3);
		assert_true(r.eof[i][1] && r.eof[i][2]);
	}
	assert_true(r.order_ok);
	/* the launch file and scratch directory are gone */
	assert_int_equal(access(j.path, F_OK), -1);
	char sd[300];
	snprintf(sd, sizeof(sd), "%s/job101.1", scratch);
	assert_int_equal(access(sd, F_OK), -1);
	result_free(&r);
}

/* Output goes out in whole lines: a line written in pieces arrives as one, unless its end
 * takes longer than STEP_LINE_MS (a prompt), and what is left at the end goes out with EOF. */
static void output_whole_lines(void **state)
{
	char *argv[] = {"/bin/sh", "-c",
			("printf 'a'; sleep 0.05; printf 'b\\nc'; sleep 0.05; printf 'd\\n'; "
			 "sleep 0.05; printf 'prompt> '; sleep 0.6; printf 'yes\\nend'")};
	struct job j;
	job_init(&j, 1, 108, argv, 3);
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.exited[0] && WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
	const char *want = "ab\ncd\nprompt> yes\nend";
	assert_int_equal(r.out[0][1].len, strlen(want));
	assert_memory_equal(r.out[0][1].data, want, strlen(want));
	/* "ab\n" and "cd\n" each whole (never "a" alone), the prompt alone after its wait,
	 * "yes\n", and "end" at the end */
	uint64_t cuts[] = {3, 6, 14, 18, 21};
	assert_int_equal(r.ncuts[0], 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(r.cuts[0][i], cuts[i]);
	assert_true(r.eof[0][1] && r.order_ok);
	result_free(&r);
}

static void exec_fails(void **state)
{
	char *argv[] = {"/nonexistent/command"};
	struct job j;
	job_init(&j, 1, 102, argv, 1);
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.started[0] && r.exited[0]);
	assert_int_equal(WEXITSTATUS(r.status[0]), 127);
	gp_buf_append(&r.out[0][2], "", 1);
	assert_non_null(strstr((char *)r.out[0][2].data, "cannot execute"));
	result_free(&r);
}

/* A socket listening on a free port of loopback's every address: its fd, the port in *port. */
static int listen_any(uint32_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(a);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* gsub --listen-fd: the replica finds its port as a listening socket at fd 3, with
 * LISTEN_FDS=1, LISTEN_PID its own pid, LISTEN_FDNAMES; a port something else took since the
 * agent chose it fails the start with a reason instead of leaving the replica to a squatter;
 * without --listen-fd the submitter's LISTEN_* never reach the task. */
static void replica_gets_its_socket(void **state)
{
	(void)state;
	char *argv[] = {
	    "python3", "-c",
	    "import os, socket\n"
	    "s = socket.socket(fileno=3)\n"
	    "print(os.environ['LISTEN_FDS'], os.environ['LISTEN_PID'] == str(os.getpid()),\n"
	    "      os.environ['LISTEN_FDNAMES'], s.getsockname()[1] == "
	    "int(os.environ['GPOOL_PORT']),\n"
	    "      s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))\n"};
	uint32_t port;
	close(listen_any(&port)); /* free now */
	struct job j;
	job_init(&j, 1, 110, argv, 3);
	j.spec.service = true;
	j.spec.service_port = port;
	j.spec.service_listen_fd = true;
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.started[0] && r.exited[0]);
	gp_buf_append(&r.out[0][1], "", 1);
	gp_buf_append(&r.out[0][2], "", 1);
	if (WEXITSTATUS(r.status[0]) != 0)
		fail_msg("the replica: %s", (char *)r.out[0][2].data);
	assert_string_equal((char *)r.out[0][1].data, "1 True gpool True 1\n");
	result_free(&r);

	/* squatted: nothing starts */
	int sq = listen_any(&port);
	j.spec.service_port = port;
	j.l.job_id = 111;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.failed[0]);
	assert_false(r.started[0]);
	assert_non_null(strstr(r.reason[0], "cannot bind the replica's port"));
	result_free(&r);
	close(sq);

	/* no --listen-fd: no LISTEN_* from the submitter's environment */
	char *argv2[] = {"/bin/sh", "-c", "echo \"[${LISTEN_FDS-}${LISTEN_PID-}]\""};
	Gpool__EnvVar ev[2] = {GPOOL__ENV_VAR__INIT, GPOOL__ENV_VAR__INIT},
		      *pev[2] = {&ev[0], &ev[1]};
	ev[0].name = "LISTEN_FDS";
	ev[0].value = "1";
	ev[1].name = "LISTEN_PID";
	ev[1].value = "1";
	job_init(&j, 1, 112, argv2, 3);
	j.spec.env = pev;
	j.spec.n_env = 2;
	j.spec.service = true;
	j.spec.service_port = port;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.exited[0]);
	gp_buf_append(&r.out[0][1], "", 1);
	assert_string_equal((char *)r.out[0][1].data, "[]\n");
	result_free(&r);
}

static void missing_account(void **state)
{
	char *argv[] = {"/bin/true"};
	struct job j;
	job_init(&j, 2, 103, argv, 1);
	j.l.user = "no-such-user-gp";
	j.l.uid = 3999999;
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		assert_true(r.failed[i]);
		assert_false(r.started[i]);
		assert_string_equal(r.reason[i], "no local account with uid 3999999 "
						 "('no-such-user-gp' in the pool) on node t1");
	}
	assert_int_equal(access(j.path, F_OK), -1);
	result_free(&r);
}

static bool cgroup_memory_writable(void)
{
	return access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0 ||
	       access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) == 0;
}

static void oom(void **state)
{
	if (geteuid() != 0 || !cgroup_memory_writable()) {
		printf("SKIP: oom needs root and a writable cgroup memory controller\n");
		skip();
	}
	/* tail keeps a line that never ends: it grows until the limit kills it */
	char *argv[] = {"tail", "/dev/zero"};
	struct job j;
	job_init(&j, 1, 104, argv, 2);
	j.l.mem_limit_mb = 32;
	struct result r;
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, NULL, NULL);
	assert_true(r.exited[0]);
	assert_true(WIFSIGNALED(r.status[0]));
	assert_int_equal(WTERMSIG(r.status[0]), SIGKILL);
	assert_true(r.oom[0]);
	assert_int_equal(access("/sys/fs/cgroup/memory/gpool/job104.1.t1", F_OK), -1);
	result_free(&r);
}

struct kill_ctx {
	bool sent;
	int pids[2];
	int want;
};

/* Once the task printed its background pids, kill the job as a cancel would. */
static void kill_when_ready(struct result *r, const char *rid, void *arg)
{
	struct kill_ctx *k = arg;
	if (k->sent)
		return;
	gp_buf_t *b = &r->out[0][1];
	int nl = 0;
	for (size_t i = 0; i < b->len; i++)
		nl += b->data[i] == '\n';
	if (nl < k->want)
		return;
	char text[256];
	size_t n = b->len < sizeof(text) - 1 ? b->len : sizeof(text) - 1;
	memcpy(text, b->data, n);
	text[n] = '\0';
	sscanf(text, "%d %d", &k->pids[0], &k->pids[1]);
	Gpool__Kill kl = GPOOL__KILL__INIT;
	kl.job_id = 105;
	kl.attempt = 1;
	kl.signal = SIGTERM;
	kl.grace_ms = 500;
	kl.reason = GPOOL__JOB_STATE__CANCELLED;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_KILL;
	m.kill = &kl;
	send_to(rid, &m);
	k->sent = true;
}

static void kill_tree(void **state)
{
	/* one grandchild in the task's session and, where cgroups hold the job, one that left it;
	 * the shell ignores SIGTERM so the grace period must end in SIGKILL */
	bool cg = geteuid() == 0;
	char *argv[] = {"/bin/sh", "-c",
			cg ? "trap '' TERM; sleep 1000 & echo $!; setsid sleep 1000 & echo $!; "
			     "while :; do sleep 1; done"
			   : "trap '' TERM; sleep 1000 & echo $!; while :; do sleep 1; done"};
	struct job j;
	job_init(&j, 1, 105, argv, 3);
	struct result r;
	struct kill_ctx k = {.want = cg ? 2 : 1};
	int64_t t0 = gp_mono_ms();
	collect(start_stepd(&j.l, j.path, sizeof(j.path)), &r, kill_when_ready, &k);
	assert_true(k.sent);
	assert_true(r.exited[0]);
	assert_true(WIFSIGNALED(r.status[0]));
	assert_int_equal(WTERMSIG(r.status[0]), SIGKILL);
	assert_true(gp_mono_ms() - t0 < 10000);
	assert_true(k.pids[0] > 0);
	assert_true(gone(k.pids[0]));
	if (cg) {
		assert_true(k.pids[1] > 0);
		assert_true(gone(k.pids[1]));
	}
	result_free(&r);
}

/* ---- a task shell: several job attempts in one gstepd ---- */

/* After the task's eof on stdout: tell the shell to close (it then ends once reported). */
static void close_when_done(struct result *r, const char *rid, void *arg)
{
	if (!r->eof[0][1])
		return;
	Gpool__StepShellClose c = GPOOL__STEP_SHELL_CLOSE__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_STEP_SHELL_CLOSE;
	m.step_shell_close = &c;
	send_to(rid, &m);
}

#define SHELL_JOBS 4

struct shell_job {
	bool started, exited, failed;
	int pid, status;
	gp_buf_t out;
};

static pid_t start_shell(const Gpool__Launch *l, char *path, size_t len)
{
	return start_gstepd(l, path, len, true);
}

static void hand_over(const char *rid, uint64_t job, const char *path)
{
	uint32_t rank = 0;
	Gpool__StepShellLaunch sl = GPOOL__STEP_SHELL_LAUNCH__INIT;
	sl.job_id = job;
	sl.attempt = 1;
	sl.launch_path = (char *)path;
	sl.ranks = &rank;
	sl.n_ranks = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_STEP_SHELL_LAUNCH;
	m.step_shell_launch = &sl;
	send_to(rid, &m);
}

static void shell_runs_several_jobs(void **state)
{
	/* job 301 starts the shell; 302-304 are handed to it; 303 is killed while 304 runs on */
	char *argv1[] = {"/bin/sh", "-c", "echo one; exit 5"};
	char *argv2[] = {"/bin/sh", "-c", "echo two; exit 6"};
	char *argv3[] = {"/bin/sleep", "1000"};
	char *argv4[] = {"/bin/sh", "-c", "sleep 1; echo four"};
	char **argvs[SHELL_JOBS] = {argv1, argv2, argv3, argv4};
	int argcs[SHELL_JOBS] = {3, 3, 2, 3};
	Gpool__Launch l[SHELL_JOBS];
	Gpool__JobSpec spec[SHELL_JOBS];
	Gpool__TaskPlacement tp[SHELL_JOBS][1], *tpp[SHELL_JOBS][1];
	char paths[SHELL_JOBS][512];
	for (int j = 0; j < SHELL_JOBS; j++) {
		launch_init(&l[j], &spec[j], tp[j], tpp[j], 1, 301 + (uint64_t)j, argvs[j],
			    argcs[j]);
		l[j].array_job_id = 301;
		l[j].array_task_id = (uint32_t)j;
	}
	gp_error_t err;
	for (int j = 1; j < SHELL_JOBS; j++) {
		assert_int_equal(gp_launch_path(paths[j], sizeof(paths[j]), dir, l[j].job_id, 1),
				 0);
		assert_int_equal(gp_launch_write(paths[j], &l[j], &err), 0);
	}
	pid_t pid = start_shell(&l[0], paths[0], sizeof(paths[0]));
	struct shell_job jr[SHELL_JOBS];
	memset(jr, 0, sizeof(jr));
	char rid[64] = "", want_rid[64];
	snprintf(want_rid, sizeof(want_rid), "s%d", (int)pid);
	bool handed = false, killed = false, closed = false, alive_when_idle = false;
	uint64_t hello_job = 99, last = 0;
	int64_t deadline = gp_mono_ms() + 30000, all_done_ms = 0;
	int st = 0;
	while (1) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (gp_mono_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("the task shell did not finish in 30 s");
		}
		bool done = true;
		for (int j = 0; j < SHELL_JOBS; j++)
			done = done && (jr[j].exited || jr[j].failed);
		for (int j = 0; done && j < SHELL_JOBS; j++)
			done = access(paths[j], F_OK) < 0; /* retired: cleaned up */
		if (done && !all_done_ms)
			all_done_ms = gp_mono_ms();
		if (all_done_ms && !closed && gp_mono_ms() - all_done_ms > 300) {
			/* idle, and still there: it exits only when told */
			alive_when_idle = waitpid(pid, &st, WNOHANG) == 0;
			Gpool__StepShellClose c = GPOOL__STEP_SHELL_CLOSE__INIT;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_STEP_SHELL_CLOSE;
			m.step_shell_close = &c;
			send_to(rid, &m);
			closed = true;
		}
		zmq_pollitem_t it = {.socket = router, .events = ZMQ_POLLIN};
		if (zmq_poll(&it, 1, 100) <= 0)
			continue;
		int n = zmq_recv(router, rid, sizeof(rid) - 1, 0);
		assert_true(n > 0);
		rid[n] = '\0';
		assert_string_equal(rid, want_rid);
		zmq_msg_t body;
		zmq_msg_init(&body);
		zmq_msg_recv(&body, router, 0);
		struct gp_sender from;
		Gpool__ErrorCode code;
		Gpool__Batch *b = gp_wire_open(wire, zmq_msg_data(&body), zmq_msg_size(&body),
					       &from, &code, &err);
		zmq_msg_close(&body);
		assert_non_null(b);
		for (size_t i = 0; i < b->n_msgs; i++) {
			Gpool__Msg *m = b->msgs[i];
			if (m->m_case == GPOOL__MSG__M_STEP_HELLO) {
				hello_job = m->step_hello->job_id;
				continue;
			}
			if (m->id && m->id <= last)
				continue; /* a resend */
			if (m->id)
				last = m->id;
			uint64_t job = m->m_case == GPOOL__MSG__M_OUTPUT ? m->output->job_id
									 : m->task_event->job_id;
			assert_true(job >= 301 && job < 301 + SHELL_JOBS);
			struct shell_job *r = &jr[job - 301];
			if (m->m_case == GPOOL__MSG__M_OUTPUT) {
				if (m->output->stream == 1)
					gp_buf_append(&r->out, m->output->data.data,
						      m->output->data.len);
			} else if (m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_STARTED) {
				r->started = true;
				r->pid = m->task_event->pid;
			} else if (m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
				r->exited = true;
				r->status = m->task_event->status;
			} else {
				r->failed = true;
			}
		}
		gpool__batch__free_unpacked(b, NULL);
		ack_upto(rid, last);
		if (!handed) {
			for (int j = 1; j < SHELL_JOBS; j++)
				hand_over(rid, l[j].job_id, paths[j]);
			handed = true;
		}
		if (!killed && jr[2].started && jr[3].started) {
			Gpool__Kill kl = GPOOL__KILL__INIT;
			kl.job_id = 303;
			kl.attempt = 1;
			kl.signal = SIGKILL;
			kl.reason = GPOOL__JOB_STATE__CANCELLED;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_KILL;
			m.kill = &kl;
			send_to(rid, &m);
			killed = true;
		}
	}
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_true(closed);
	assert_true(alive_when_idle);
	assert_int_equal(hello_job, 0); /* a shell names no job of its own */
	/* each job: its own status and output */
	int want_code[SHELL_JOBS] = {5, 6, -1, 0};
	const char *want_out[SHELL_JOBS] = {"one\n", "two\n", "", "four\n"};
	for (int j = 0; j < SHELL_JOBS; j++) {
		assert_true(jr[j].started && jr[j].exited);
		assert_false(jr[j].failed);
		if (want_code[j] < 0) {
			assert_true(WIFSIGNALED(jr[j].status));
			assert_int_equal(WTERMSIG(jr[j].status), SIGKILL);
		} else {
			assert_true(WIFEXITED(jr[j].status));
			assert_int_equal(WEXITSTATUS(jr[j].status), want_code[j]);
		}
		assert_int_equal(jr[j].out.len, strlen(want_out[j]));
		assert_memory_equal(jr[j].out.data, want_out[j], jr[j].out.len);
		/* the launch file and scratch directory of each are gone */
		assert_int_equal(access(paths[j], F_OK), -1);
		char sd[300];
		snprintf(sd, sizeof(sd), "%s/job%d.1", scratch, 301 + j);
		assert_int_equal(access(sd, F_OK), -1);
		if (geteuid() == 0 && access("/sys/fs/cgroup/pids/cgroup.procs", W_OK) == 0) {
			char cg[300];
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup/pids/gpool/job%d.1.t1", 301 + j);
			assert_int_equal(access(cg, F_OK), -1);
		}
		gp_buf_release(&jr[j].out);
	}
	/* the tasks were the shell's children: one supervisor for all four */
	assert_true(jr[2].pid > 0);
	assert_true(gone(jr[2].pid));
}

/* Each job handed to a shell runs in a cgroup of its own (v1 here: job<id>.<attempt>.<node>
 * under every controller), which the task itself sees. */
static void shell_cgroup_per_job(void **state)
{
	if (geteuid() != 0 || access("/sys/fs/cgroup/pids/cgroup.procs", W_OK) != 0) {
		printf("SKIP: needs root and a writable cgroup v1 pids controller\n");
		skip();
	}
	char *argv[] = {"/bin/sh", "-c", "cat /proc/self/cgroup"};
	struct job j;
	job_init(&j, 1, 311, argv, 3);
	j.l.array_job_id = 311;
	struct result r;
	pid_t pid = start_shell(&j.l, j.path, sizeof(j.path));
	/* the shell waits for a close once idle: collect() ends it through the callback */
	collect(pid, &r, close_when_done, NULL);
	assert_true(r.exited[0]);
	gp_buf_append(&r.out[0][1], "", 1);
	assert_non_null(strstr((char *)r.out[0][1].data, "pids:/gpool/job311.1.t1"));
	result_free(&r);
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755); /* the task accounts must reach the scratch directory */
	snprintf(scratch, sizeof(scratch), "%s/scratch", dir);
	snprintf(sockep, sizeof(sockep), "ipc://%s/worker.sock", dir);
	char steps[300];
	snprintf(steps, sizeof(steps), "%s/steps", dir);
	mkdir(steps, 0700);
	struct passwd *pw = getpwuid(geteuid());
	assert_non_null(pw);
	snprintf(me, sizeof(me), "%s", pw->pw_name);
	zctx = zmq_ctx_new();
	router = zmq_socket(zctx, ZMQ_ROUTER);
	assert_int_equal(zmq_bind(router, sockep), 0);
	wire = gp_wire_create(NULL, 64 << 20);
	return 0;
}

/* A failed test may leave a gstepd waiting for acknowledgements forever: end the ones this
 * test started (their command lines name the temporary directory). */
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
	gp_test_peer_close(router, zctx, &wire, dir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-OF-GSTEPD\n", argv[0]);
		return 2;
	}
	gstepd = argv[1];
	signal(SIGPIPE, SIG_IGN);
	if (argc > 2 && !strcmp(argv[2], "oom")) {
		/* its own ctest entry, so a machine that cannot run it shows a skip */
		if (geteuid() != 0 || !cgroup_memory_writable()) {
			printf("SKIP: the oom test needs root and a writable cgroup memory "
			       "controller\n");
			return 77;
		}
		const struct CMUnitTest oom_tests[] = {cmocka_unit_test(oom)};
		return cmocka_run_group_tests(oom_tests, setup, teardown);
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(output_and_status),
	    cmocka_unit_test(output_whole_lines),
	    cmocka_unit_test(exec_fails),
	    cmocka_unit_test(replica_gets_its_socket),
	    cmocka_unit_test(missing_account),
	    cmocka_unit_test(kill_tree),
	    cmocka_unit_test(shell_runs_several_jobs),
	    cmocka_unit_test(shell_cgroup_per_job),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

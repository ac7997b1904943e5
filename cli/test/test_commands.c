/* The commands as processes against a fake gschedd: what each sends, prints and exits with.
 * Skips when munged does not answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/test/fakesched.h"
#include "common/util.h"

static char dir[] = "/tmp/gpool-cli-test.XXXXXX";
static char endpoint[256];
static fakesched_t *fake;
static char out[1 << 16], err[1 << 16];
static int log_calls;

/* ---- the fake's answers ---- */

static Gpool__JobSpec spec42 = GPOOL__JOB_SPEC__INIT;
static Gpool__TaskPlacement t0 = GPOOL__TASK_PLACEMENT__INIT, t1 = GPOOL__TASK_PLACEMENT__INIT;
static Gpool__TaskPlacement *tasks[] = {&t0, &t1};
static Gpool__JobInfo job42 = GPOOL__JOB_INFO__INIT, job43 = GPOOL__JOB_INFO__INIT;
/* the caller's own: 44 "nb" running, 45 and 46 "dup" running, 47 "old" finished */
static Gpool__JobSpec spec_nb = GPOOL__JOB_SPEC__INIT, spec_dup = GPOOL__JOB_SPEC__INIT,
		      spec_old = GPOOL__JOB_SPEC__INIT;
static Gpool__JobInfo job44 = GPOOL__JOB_INFO__INIT, job45 = GPOOL__JOB_INFO__INIT,
		      job46 = GPOOL__JOB_INFO__INIT, job47 = GPOOL__JOB_INFO__INIT;
static Gpool__JobInfo *jobs[] = {&job42, &job43, &job44, &job45, &job46, &job47};
#define NJOBS (sizeof(jobs) / sizeof(jobs[0]))
static Gpool__Card card0 = GPOOL__CARD__INIT;
static Gpool__Card *cards[] = {&card0};
static Gpool__NodeInfo node1 = GPOOL__NODE_INFO__INIT;
static Gpool__NodeInfo *nodes[] = {&node1};

static void setup_data(void)
{
	static char *argv[] = {"./train.sh", "--epochs", "3"};
	spec42.name = "train";
	spec42.argv = argv;
	spec42.n_argv = 3;
	spec42.ntasks = 2;
	spec42.cpus_per_task = 1;
	spec42.time_limit_sec = 3600;
	t0.rank = 0;
	t0.node = "pc1";
	t1.rank = 1;
	t1.node = "pc2";
	job42.id = 42;
	job42.spec = &spec42;
	job42.user = "alice";
	job42.uid = 1000;
	job42.state = GPOOL__JOB_STATE__RUNNING;
	job42.start_time = gp_now() - 65;
	job42.submit_time = gp_now() - 70;
	job42.tasks = tasks;
	job42.n_tasks = 2;
	job42.nodelist = "pc[1-2]";
	job43.id = 43;
	job43.spec = &spec42;
	job43.user = "bob";
	job43.state = GPOOL__JOB_STATE__PENDING;
	job43.reason = "Resources";
	static char me[64];
	struct passwd *pw = getpwuid(getuid());
	snprintf(me, sizeof(me), "%s", pw ? pw->pw_name : "");
	spec_nb.name = "nb";
	spec_dup.name = "dup";
	spec_old.name = "old";
	Gpool__JobSpec *own[] = {&spec_nb, &spec_dup, &spec_dup, &spec_old};
	Gpool__JobInfo *mine[] = {&job44, &job45, &job46, &job47};
	for (int i = 0; i < 4; i++) {
		mine[i]->id = 44 + (uint64_t)i;
		mine[i]->spec = own[i];
		mine[i]->user = me;
		mine[i]->state = i == 3 ? GPOOL__JOB_STATE__COMPLETED : GPOOL__JOB_STATE__RUNNING;
	}
	card0.index = 0;
	card0.vendor = GPOOL__VENDOR__VENDOR_NVIDIA;
	card0.name = "GeForce GTX 1660 SUPER";
	card0.vram_total = 6ULL << 30;
	card0.arch = "7.5";
	card0.cores = 1408;
	card0.api_version = "CUDA 12.2";
	card0.power_limit_w = 125;
	card0.state = GPOOL__CARD_STATE__CARD_UP;
	card0.grade = "good";
	node1.name = "pc1";
	node1.state = GPOOL__NODE_STATE__NODE_UP;
	node1.cpus = 8;
	node1.cpus_used = 2;
	node1.mem_mb = 16384;
	node1.mem_used_mb = 1024;
	node1.cards = cards;
	node1.n_cards = 1;
}

static void handler(const Gpool__Msg *req, Gpool__Msg *rep, void *arg)
{
	static Gpool__SubmitReply sr;
	static Gpool__Error e;
	static Gpool__JobQueryReply jq;
	static Gpool__JobControlReply jc;
	static Gpool__JobResult res;
	static Gpool__JobResult *resv[1];
	static Gpool__NodeQueryReply nq;
	static Gpool__NodeControlReply ncr;
	static Gpool__LogQueryReply lr;
	switch (req->m_case) {
	case GPOOL__MSG__M_SUBMIT:
		if (!strcmp(req->submit->spec->name, "deny")) {
			gpool__error__init(&e);
			e.code = GPOOL__ERROR_CODE__ERROR_INVALID;
			e.text = "time limit over the cluster's maximum";
			rep->m_case = GPOOL__MSG__M_ERROR;
			rep->error = &e;
			return;
		}
		gpool__submit_reply__init(&sr);
		sr.job_id = 42;
		rep->m_case = GPOOL__MSG__M_SUBMIT_REPLY;
		rep->submit_reply = &sr;
		return;
	case GPOOL__MSG__M_JOB_QUERY: {
		/* the queue (42, 43 and the caller's own unless finished, or with all) or the
		 * jobs asked for by id */
		static Gpool__JobInfo *hits[NJOBS];
		const Gpool__JobQuery *q = req->job_query;
		gpool__job_query_reply__init(&jq);
		jq.jobs = hits;
		for (size_t i = 0; i < NJOBS; i++) {
			bool want = q->n_ids == 0 && (q->all || jobs[i] != &job47) &&
				    (!*q->user || !strcmp(q->user, jobs[i]->user));
			for (size_t k = 0; k < q->n_ids; k++)
				want |= q->ids[k] == jobs[i]->id;
			if (want)
				hits[jq.n_jobs++] = jobs[i];
		}
		rep->m_case = GPOOL__MSG__M_JOB_QUERY_REPLY;
		rep->job_query_reply = &jq;
		return;
	}
	case GPOOL__MSG__M_JOB_CONTROL:
		gpool__job_control_reply__init(&jc);
		gpool__job_result__init(&res);
		res.id = 7;
		res.code = GPOOL__ERROR_CODE__ERROR_NOT_FOUND;
		res.text = "no such job";
		resv[0] = &res;
		jc.results = resv;
		for (size_t i = 0; i < req->job_control->n_ids; i++)
			if (req->job_control->ids[i] == 7)
				jc.n_results = 1;
		rep->m_case = GPOOL__MSG__M_JOB_CONTROL_REPLY;
		rep->job_control_reply = &jc;
		return;
	case GPOOL__MSG__M_NODE_QUERY:
		gpool__node_query_reply__init(&nq);
		nq.nodes = nodes;
		nq.n_nodes = 1;
		rep->m_case = GPOOL__MSG__M_NODE_QUERY_REPLY;
		rep->node_query_reply = &nq;
		return;
	case GPOOL__MSG__M_NODE_CONTROL:
		gpool__node_control_reply__init(&ncr);
		rep->m_case = GPOOL__MSG__M_NODE_CONTROL_REPLY;
		rep->node_control_reply = &ncr;
		return;
	case GPOOL__MSG__M_LOG_QUERY: {
		/* job 42: "hello\n" / "warn\n", then done COMPLETED exit 3; job 44: TIMEOUT */
		const Gpool__LogQuery *q = req->log_query;
		gpool__log_query_reply__init(&lr);
		log_calls++;
		if (q->offset == 0 && q->offset_err == 0) {
			lr.out.data = (uint8_t *)"hello\n";
			lr.out.len = q->stream == 2 ? 0 : 6;
			lr.err.data = (uint8_t *)"warn\n";
			lr.err.len = q->stream == 1 ? 0 : 5;
		}
		lr.next_offset = q->stream == 2 ? q->offset : 6;
		lr.next_offset_err = q->stream == 1 ? q->offset_err : 5;
		lr.done = !(q->offset == 0 && q->offset_err == 0) || !q->wait;
		lr.state =
		    q->job_id == 44 ? GPOOL__JOB_STATE__TIMEOUT : GPOOL__JOB_STATE__COMPLETED;
		lr.exit_code = q->job_id == 44 ? 0 : 3;
		rep->m_case = GPOOL__MSG__M_LOG_QUERY_REPLY;
		rep->log_query_reply = &lr;
		return;
	}
	default:
		return;
	}
}

/* ---- running a command ---- */

static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return 0;
}

/* Run bin/<argv[0]> with argv; stdout and stderr land in out and err. Returns the exit
 * status (or 128 + signal). */
static int run(const char *const *argv)
{
	char prog[1024], po[300], pe[300];
	snprintf(prog, sizeof(prog), "%s/%s", getenv("GPOOL_BIN_DIR"), argv[0]);
	snprintf(po, sizeof(po), "%s/out", dir);
	snprintf(pe, sizeof(pe), "%s/err", dir);
	pid_t pid = fork();
	if (pid == 0) {
		int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	slurp(po, out, sizeof(out));
	slurp(pe, err, sizeof(err));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define RUN(...) run((const char *const[]){__VA_ARGS__, NULL})

static Gpool__Msg *last_request(void)
{
	return fakesched_request(fake, fakesched_count(fake) - 1);
}

/* ---- tests ---- */

static void gsub_bad_input_sends_nothing(void **state)
{
	struct {
		const char *const argv[6];
		int rc;
		const char *msg;
	} cases[] = {
	    {{"gsub", "-n", "0", "--", "true"}, 2, "gsub: invalid number of tasks '0'\n"},
	    {{"gsub", "-t", "3x", "--", "true"}, 2, "gsub: invalid time limit '3x'\n"},
	    {{"gsub", "--mem", "lots", "--", "true"}, 2, "gsub: invalid memory size 'lots'\n"},
	    {{"gsub"}, 2, "gsub: no script or command given (see gsub --help)\n"},
	    {{"gsub", "--"}, 2, "gsub: no command after '--'\n"},
	    {{"gsub", "/nonexistent/job.sh"},
	     1,
	     "gsub: cannot read script '/nonexistent/job.sh': No such file or directory\n"},
	    {{"gsub", "--bogus", "--", "true"}, 2, "gsub: unknown option '--bogus'\n"},
	    {{"gsub", "-q", "--", "true"}, 2, "gsub: unknown option '-q'\n"},
	    {{"gsub", "--time"}, 2, "gsub: option '--time' needs a value\n"},
	};
	int before = fakesched_count(fake);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run(cases[i].argv);
		assert_int_equal(rc, cases[i].rc);
		assert_true(strncmp(err, cases[i].msg, strlen(cases[i].msg)) == 0);
		assert_string_equal(out, "");
	}
	usleep(100 * 1000);
	assert_int_equal(fakesched_count(fake), before);
}

static void gsub_submits(void **state)
{
	setenv("GPOOL_TEST_MARK", "yes", 1);
	assert_int_equal(
	    RUN("gsub", "-n", "4", "-t", "1:00:00", "--mem", "2G", "--", "hostname", "-f"), 0);
	assert_string_equal(out, "Submitted job 42\n");
	Gpool__Msg *m = last_request();
	assert_int_equal(m->m_case, GPOOL__MSG__M_SUBMIT);
	Gpool__JobSpec *s = m->submit->spec;
	assert_int_equal(s->ntasks, 4);
	assert_int_equal(s->time_limit_sec, 3600);
	assert_int_equal(s->mem_per_node_mb, 2048);
	assert_int_equal(s->n_argv, 2);
	assert_string_equal(s->argv[0], "hostname");
	assert_string_equal(s->name, "hostname");
	int found = 0;
	for (size_t i = 0; i < s->n_env; i++)
		found |=
		    !strcmp(s->env[i]->name, "GPOOL_TEST_MARK") && !strcmp(s->env[i]->value, "yes");
	assert_true(found);

	assert_int_equal(RUN("gsub", "--parsable", "--", "true"), 0);
	assert_string_equal(out, "42\n");
	assert_int_equal(RUN("gsub", "--json", "--", "true"), 0);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "job_id")), 42);
	json_decref(j);
}

static void gsub_script(void **state)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/train.sh", dir);
	FILE *f = fopen(path, "w");
	fputs("#!/bin/sh\n#GPOOL -n 2\n#GPOOL -J fromscript --time=10\necho hi\n", f);
	fclose(f);
	assert_int_equal(RUN("gsub", "-t", "5", path, "a", "b"), 0);
	Gpool__JobSpec *s = last_request()->submit->spec;
	assert_int_equal(s->ntasks, 2);
	assert_int_equal(s->time_limit_sec, 300); /* the command line wins */
	assert_string_equal(s->name, "fromscript");
	assert_int_equal(s->n_argv, 3);
	assert_string_equal(s->argv[0], "./train.sh");
	assert_string_equal(s->argv[2], "b");
	assert_true(s->script.len > 10 && !memcmp(s->script.data, "#!/bin/sh", 9));
}

static void gsub_error_reply(void **state)
{
	assert_int_equal(RUN("gsub", "-J", "deny", "--", "true"), 1);
	assert_string_equal(err, "gsub: time limit over the cluster's maximum\n");
	assert_string_equal(out, "");
}

static void gsub_wait(void **state)
{
	log_calls = 0;
	assert_int_equal(RUN("gsub", "--wait", "--", "true"), 3);
	assert_string_equal(out, "Submitted job 42\nhello\n");
	assert_string_equal(err, "warn\n");
	assert_int_equal(log_calls, 2);
	Gpool__Msg *m = last_request();
	assert_int_equal(m->m_case, GPOOL__MSG__M_LOG_QUERY);
	assert_int_equal(m->log_query->offset, 6);
	assert_int_equal(m->log_query->offset_err, 5);
	assert_true(m->log_query->wait);
}

static void gstat_table_and_detail(void **state)
{
	/* started 65 s before this test (not before the whole run: under the sanitizers the
	 * tests before it take seconds) */
	job42.start_time = gp_now() - 65;
	assert_int_equal(RUN("gstat"), 0);
	assert_non_null(strstr(out, "JOBID  NAME   USER   ST  TIME  NODES  NODELIST(REASON)\n"));
	assert_non_null(
	    strstr(out, "   42  train  alice  R   1:0")); /* 1:05, or 1:06 on a slow run */
	assert_non_null(strstr(out, "      2  pc[1-2]\n"));
	assert_non_null(strstr(out, "(Resources)"));
	assert_int_equal(RUN("gstat", "42"), 0);
	assert_non_null(strstr(out, "JobId=42 JobName=train\n"));
	assert_non_null(strstr(out, "JobState=RUNNING"));
	assert_non_null(strstr(out, "Tasks=0->pc1 1->pc2\n"));
	assert_int_equal(RUN("gstat", "-j", "99", "-l"), 1);
	assert_string_equal(err, "gstat: no job 99\n");
	assert_int_equal(RUN("gstat", "--json"), 0);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	assert_non_null(j);
	json_t *j0 = json_array_get(json_object_get(j, "jobs"), 0);
	assert_string_equal(json_string_value(json_object_get(j0, "state")), "RUNNING");
	assert_int_equal(json_integer_value(json_object_get(j0, "id")), 42);
	json_decref(j);
	assert_int_equal(RUN("gstat", "-t", "PD,R", "-u", "alice", "-a"), 0);
	Gpool__JobQuery *q = last_request()->job_query;
	assert_int_equal(q->n_states, 2);
	assert_int_equal(q->states[0], GPOOL__JOB_STATE__PENDING);
	assert_string_equal(q->user, "alice");
	assert_true(q->all);
	assert_int_equal(RUN("gstat", "-t", "bogus"), 2);
	assert_string_equal(err, "gstat: invalid job state 'bogus'\n");
}

static void gcancel_results(void **state)
{
	assert_int_equal(RUN("gcancel", "5", "6"), 0);
	Gpool__JobControl *jc = last_request()->job_control;
	assert_int_equal(jc->action, GPOOL__JOB_ACTION__JOB_CANCEL);
	assert_int_equal(jc->n_ids, 2);
	assert_int_equal(RUN("gcancel", "5,7", "-s", "KILL"), 1);
	assert_string_equal(err, "gcancel: job 7: no such job\n");
	jc = last_request()->job_control;
	assert_int_equal(jc->action, GPOOL__JOB_ACTION__JOB_SIGNAL);
	assert_int_equal(jc->value, SIGKILL);
	int before = fakesched_count(fake);
	assert_int_equal(RUN("gcancel"), 2);
	assert_int_equal(RUN("gcancel", "4x"), 2); /* "x1" would be a name */
	assert_int_equal(RUN("gcancel", "-s", "NOPE", "5"), 2);
	assert_int_equal(fakesched_count(fake), before);
}

/* a job named instead of numbered: the caller's one job of that name, or a clear refusal */
static void job_names(void **state)
{
	assert_int_equal(RUN("gstat", "-l", "nb"), 0);
	assert_non_null(strstr(out, "JobId=44 JobName=nb\n"));
	assert_int_equal(RUN("gstat", "old"), 0); /* finished, and the only one of the name */
	assert_non_null(strstr(out, "JobId=47 JobName=old\n"));
	assert_int_equal(RUN("gstat", "-l", "dup"), 1);
	assert_string_equal(err, "gstat: job name 'dup' is ambiguous: jobs 45, 46 are pending or "
				 "running (give a job id)\n");
	assert_int_equal(RUN("gstat", "-l", "train"), 1); /* alice's and bob's, not ours */
	assert_non_null(strstr(err, "gstat: no job named 'train' of user '"));
	assert_int_equal(RUN("gcancel", "nb", "43"), 0);
	Gpool__JobControl *jc = last_request()->job_control;
	assert_int_equal(jc->n_ids, 2);
	assert_int_equal(jc->ids[0], 43);
	assert_int_equal(jc->ids[1], 44);
	int before = fakesched_count(fake);
	assert_int_equal(RUN("gcancel", "dup"), 1);
	assert_non_null(strstr(err, "gcancel: job name 'dup' is ambiguous: jobs 45, 46"));
	/* the name was looked up; nothing was cancelled */
	for (int i = before; i < fakesched_count(fake); i++)
		assert_int_not_equal(fakesched_request(fake, i)->m_case, GPOOL__MSG__M_JOB_CONTROL);
	assert_int_equal(RUN("glogs", "nb"), 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(last_request()->log_query->job_id, 44);
	assert_int_equal(RUN("glogs", "nobody"), 1);
	assert_non_null(strstr(err, "glogs: no job named 'nobody' of user '"));
}

static void gnodes_views_and_control(void **state)
{
	assert_int_equal(RUN("gnodes"), 0);
	assert_non_null(
	    strstr(out, "pc1   up     2/8               1.0G/16G         nvidia:1  -      -\n"));
	assert_int_equal(RUN("gnodes", "-G"), 0);
	assert_non_null(strstr(out, "GeForce GTX 1660 SUPER"));
	assert_non_null(strstr(out, "CUDA 12.2"));
	assert_int_equal(RUN("gnodes", "drain", "pc1:1"), 2);
	assert_string_equal(err, "gnodes: drain needs a reason (--reason TEXT)\nusage: see gnodes "
				 "--help\n");
	assert_int_equal(RUN("gnodes", "drain", "pc1:1", "--reason", "fan broken"), 0);
	Gpool__NodeControl *nc = last_request()->node_control;
	assert_int_equal(nc->action, GPOOL__NODE_ACTION__NODE_DRAIN);
	assert_string_equal(nc->name, "pc1");
	assert_int_equal(nc->card, 1);
	assert_string_equal(nc->reason, "fan broken");
	assert_int_equal(RUN("gnodes", "resume", "pc1"), 0);
	nc = last_request()->node_control;
	assert_int_equal(nc->action, GPOOL__NODE_ACTION__NODE_RESUME);
	assert_int_equal(nc->card, -1);
	assert_int_equal(RUN("gnodes", "--json"), 0);
	assert_non_null(strstr(out, "\"vendor\": \"VENDOR_NVIDIA\""));
}

static void glogs_streams(void **state)
{
	assert_int_equal(RUN("glogs", "42"), 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(RUN("glogs", "--err", "42"), 0);
	assert_string_equal(out, "warn\n");
	assert_int_equal(RUN("glogs", "-f", "42"), 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(RUN("glogs"), 2);
}

static void gpool_subcommands(void **state)
{
	assert_int_equal(RUN("gpool", "hold", "5"), 0);
	assert_int_equal(last_request()->job_control->action, GPOOL__JOB_ACTION__JOB_HOLD);
	assert_int_equal(RUN("gpool", "release", "5", "6"), 0);
	assert_int_equal(last_request()->job_control->action, GPOOL__JOB_ACTION__JOB_RELEASE);
	assert_int_equal(RUN("gpool", "priority", "5", "100"), 0);
	assert_int_equal(last_request()->job_control->value, 100);
	assert_int_equal(RUN("gpool", "hold", "7"), 1);
	assert_string_equal(err, "gpool: job 7: no such job\n");
	assert_int_equal(RUN("gpool", "version"), 0);
	assert_true(strncmp(out, "gpool ", 6) == 0);
	assert_int_equal(RUN("gpool", "frobnicate"), 2);
	assert_true(strncmp(err, "gpool: unknown subcommand 'frobnicate'\n", 38) == 0);
	assert_int_equal(RUN("gpool", "priority", "5", "high"), 2);
}

static void every_command_has_help(void **state)
{
	const char *cmds[] = {"gsub", "gstat", "gcancel", "gnodes", "glogs", "gpool"};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		assert_int_equal(RUN(cmds[i], "--help"), 0);
		assert_true(strncmp(out, "usage: ", 7) == 0);
	}
}

int main(void)
{
	if (!getenv("GPOOL_BIN_DIR") || !mkdtemp(dir)) {
		fprintf(stderr, "GPOOL_BIN_DIR unset or no temporary directory\n");
		return 77;
	}
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/sched", dir);
	setup_data();
	if (!(fake = fakesched_start(endpoint, handler, NULL))) {
		fprintf(stderr, "skip: munged or ZeroMQ not usable\n");
		rmdir(dir);
		return 77;
	}
	char conf[300];
	snprintf(conf, sizeof(conf), "%s/gpool.conf", dir);
	FILE *f = fopen(conf, "w");
	fprintf(f, "sched_uid = %u\n", (unsigned)getuid());
	fclose(f);
	setenv("GPOOL_CONF", conf, 1);
	setenv("GPOOL_SCHEDULER", endpoint, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gsub_bad_input_sends_nothing),
	    cmocka_unit_test(gsub_submits),
	    cmocka_unit_test(gsub_script),
	    cmocka_unit_test(gsub_error_reply),
	    cmocka_unit_test(gsub_wait),
	    cmocka_unit_test(gstat_table_and_detail),
	    cmocka_unit_test(gcancel_results),
	    cmocka_unit_test(job_names),
	    cmocka_unit_test(gnodes_views_and_control),
	    cmocka_unit_test(glogs_streams),
	    cmocka_unit_test(gpool_subcommands),
	    cmocka_unit_test(every_command_has_help),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fakesched_stop(&fake);
	gp_rm_rf(dir);
	return rc;
}

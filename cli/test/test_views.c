/* Tables and the detailed job view: column layout, squeue's TIME, NODELIST(REASON), cards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <time.h>

#include "cli/lib/jobfmt.h"
#include "cli/lib/jobview.h"
#include "cli/lib/nodeview.h"
#include "common/table.h"
#include "cli/lib/nodefmt.h"

/* Print into a string. */
static char *render(gp_table_t *t)
{
	static char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(gp_table_print(t, f), 0);
	fclose(f);
	return buf;
}

static void table_layout(void **state)
{
	static const char *const hdr[] = {"ID", "NAME", "WHERE", NULL};
	gp_table_t *t = gp_table_create(hdr);
	assert_non_null(t);
	gp_table_align_right(t, 0);
	assert_int_equal(gp_table_add(t, (const char *const[]){"7", "a", "x"}), 0);
	assert_int_equal(gp_table_add(t, (const char *const[]){"1234", "longname", "y"}), 0);
	assert_int_equal(gp_table_rows(t), 2);
	assert_string_equal(render(t), "  ID  NAME      WHERE\n"
				       "   7  a         x\n"
				       "1234  longname  y\n");
	gp_table_destroy(&t);
	assert_null(t);
	gp_table_destroy(&t);
}

static Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
static Gpool__TaskPlacement ta = GPOOL__TASK_PLACEMENT__INIT, tb = GPOOL__TASK_PLACEMENT__INIT,
			    tc = GPOOL__TASK_PLACEMENT__INIT;
static Gpool__TaskPlacement *tasks[] = {&ta, &tb, &tc};

static void job_table(void **state)
{
	Gpool__JobInfo run = GPOOL__JOB_INFO__INIT, pend = GPOOL__JOB_INFO__INIT,
		       done = GPOOL__JOB_INFO__INIT;
	spec.name = "train";
	spec.nodes_min = 2;
	ta.node = "pc1";
	tb.node = "pc1";
	tc.node = "pc2";
	run.id = 9;
	run.spec = &spec;
	run.user = "alice";
	run.state = GPOOL__JOB_STATE__RUNNING;
	run.start_time = 1000;
	run.tasks = tasks;
	run.n_tasks = 3;
	run.nodelist = "pc[1-2]";
	pend.id = 10;
	pend.spec = &spec;
	pend.user = "bob";
	pend.state = GPOOL__JOB_STATE__PENDING;
	pend.reason = "Priority";
	done.id = 11;
	done.user = "carol";
	done.state = GPOOL__JOB_STATE__COMPLETED;
	done.start_time = 1000;
	done.end_time = 1000 + 2 * 86400 + 3600 * 3 + 4 * 60 + 5;
	done.nodelist = "pc3";
	Gpool__JobInfo *jobs[] = {&run, &pend, &done};
	gp_table_t *t = gp_jobview_table(jobs, 3, 1000 + 3725);
	assert_non_null(t);
	assert_string_equal(render(t),
			    "JOBID  NAME   USER   ST        TIME  NODES  NODELIST(REASON)\n"
			    "    9  train  alice  R      1:02:05      2  pc[1-2]\n"
			    "   10  train  bob    PD        0:00      2  (Priority)\n"
			    "   11         carol  CD  2-03:04:05      1  pc3\n");
	gp_table_destroy(&t);
}

static void job_detail(void **state)
{
	Gpool__JobInfo j = GPOOL__JOB_INFO__INIT;
	Gpool__JobSpec s = GPOOL__JOB_SPEC__INIT;
	char *argv[] = {"./train.sh", "--lr", "0.1"};
	uint32_t cards[] = {0, 1};
	Gpool__TaskPlacement t = GPOOL__TASK_PLACEMENT__INIT;
	Gpool__TaskPlacement *tv[] = {&t};
	t.rank = 0;
	t.node = "pc1";
	t.cards = cards;
	t.n_cards = 2;
	s.name = "train";
	s.argv = argv;
	s.n_argv = 3;
	s.ntasks = 1;
	s.cpus_per_task = 2;
	s.mem_per_node_mb = 4096;
	s.time_limit_sec = 3600;
	s.gpus_per_task = 2;
	j.id = 42;
	j.spec = &s;
	j.user = "alice";
	j.uid = 1000;
	j.gid = 100;
	j.state = GPOOL__JOB_STATE__FAILED;
	j.exit_code = 137;
	j.tasks = tv;
	j.n_tasks = 1;
	j.nodelist = "pc1";
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(gp_jobview_long(&j, 0, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "JobId=42 JobName=train\n"));
	assert_non_null(strstr(buf, "   UserId=alice(1000) GroupId=100\n"));
	assert_non_null(strstr(buf, "JobState=FAILED Reason=None Attempt=0 Priority=0"));
	assert_non_null(strstr(buf, "SubmitTime=Unknown"));
	assert_non_null(strstr(buf, "TimeLimit=01:00:00 RunTime=0:00\n"));
	assert_non_null(strstr(buf, "NumTasks=1 NumNodes=1 CPUs/Task=2 Mem=4096M\n"));
	assert_non_null(strstr(buf, "GPUs/Task=2 "));
	assert_non_null(strstr(buf, "ExitCode=137 (signal 9)"));
	assert_non_null(strstr(buf, "Command=./train.sh --lr 0.1\n"));
	assert_non_null(strstr(buf, "Tasks=0->pc1:card0,1\n"));
	assert_null(strstr(buf, "Energy="));
	/* energy, and how it was found */
	j.energy_j = 3.6e6 * 0.25;
	j.energy_sources = 1u << GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED;
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(gp_jobview_long(&j, 0, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, " Energy=0.2500kWh (sampled)\n"));
	j.energy_sources = 1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT;
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(gp_jobview_long(&j, 0, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, " Energy=0.2500kWh (upper bound)\n"));
	j.energy_sources = 0; /* accounted before the sources were kept */
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(gp_jobview_long(&j, 0, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, " Energy=0.2500kWh\n"));
}

static void energy_sources_words(void **state)
{
	char b[96];
	gp_jobview_energy_sources(1u << GPOOL__ENERGY_SOURCE__ENERGY_COUNTER, b, sizeof(b));
	assert_string_equal(b, "counter");
	gp_jobview_energy_sources(1u << GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED |
				      1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT,
				  b, sizeof(b));
	assert_string_equal(b, "sampled+upper bound");
	gp_jobview_energy_sources(0xe, b, sizeof(b));
	assert_string_equal(b, "counter+sampled+upper bound");
	gp_jobview_energy_sources(0, b, sizeof(b));
	assert_string_equal(b, "");
	gp_jobview_energy_sources(0xe, b, 12); /* what fits */
	assert_string_equal(b, "counter");
}

static void node_tables(void **state)
{
	Gpool__Card c0 = GPOOL__CARD__INIT, c1 = GPOOL__CARD__INIT;
	Gpool__Card *cards[] = {&c0, &c1};
	Gpool__NodeInfo n = GPOOL__NODE_INFO__INIT, m = GPOOL__NODE_INFO__INIT;
	c0.index = 0;
	c0.vendor = GPOOL__VENDOR__VENDOR_NVIDIA;
	c0.name = "GeForce RTX 3060";
	c0.cores = 3584;
	c0.vram_total = 12ULL << 30;
	c0.api_version = "CUDA 12.2";
	c0.arch = "8.6";
	c0.grade = "good";
	c0.power_limit_w = 170;
	c0.state = GPOOL__CARD_STATE__CARD_UP;
	c1.index = 1;
	c1.vendor = GPOOL__VENDOR__VENDOR_AMD;
	c1.name = "RX 6700 XT";
	c1.cores = 2560;
	c1.vram_total = 12ULL << 30;
	c1.arch = "gfx1031";
	c1.state = GPOOL__CARD_STATE__CARD_DRAINED;
	c1.state_reason = "fan";
	c1.fake = 1;
	n.name = "pc1";
	n.state = GPOOL__NODE_STATE__NODE_UP;
	n.cpus = 16;
	n.cpus_used = 4;
	n.mem_mb = 32768;
	n.mem_used_mb = 2048;
	n.cards = cards;
	n.n_cards = 2;
	m.name = "office";
	m.state = GPOOL__NODE_STATE__NODE_DRAINED;
	m.reason = "maintenance";
	m.cpus = 4;
	m.mem_mb = 8192;
	Gpool__NodeInfo *nodes[] = {&n, &m};
	gp_table_t *t = gp_nodeview_table(nodes, 2);
	assert_string_equal(
	    render(t),
	    "NODE    STATE    CPUS(used/total)  MEM(used/total)  CARDS           OWNER  REASON\n"
	    "pc1     up       4/16              2.0G/32G         nvidia:1,amd:1  -      -\n"
	    "office  drained  0/4               0B/8.0G          -               -      "
	    "maintenance\n");
	gp_table_destroy(&t);
	t = gp_nodeview_card_table(nodes, 2);
	char *s = render(t);
	assert_non_null(strstr(s, "NODE  CARD  VENDOR  NAME"));
	assert_non_null(strstr(s, "pc1      0  nvidia  GeForce RTX 3060    3584   12G  CUDA 12.2  "
				  "8.6      good    170W  -       up       -\n"));
	assert_non_null(strstr(s, "RX 6700 XT (fake)"));
	assert_non_null(strstr(s, "drained  fan\n"));
	assert_int_equal(gp_table_rows(t), 2);
	gp_table_destroy(&t);
	/* a card shared by two slices of root's jobs (--gpu-share) */
	char sh[96];
	gp_nodeview_card_shared(&c0, sh, sizeof(sh));
	assert_string_equal(sh, "-");
	c0.shared_slices = 2;
	c0.shared_budget = 10ULL << 30;
	c0.shared_uid = 0;
	gp_nodeview_card_shared(&c0, sh, sizeof(sh));
	assert_string_equal(sh, "2:10G/12G:root");
	t = gp_nodeview_card_table(nodes, 2);
	assert_non_null(strstr(render(t), "170W  2:10G/12G:root  up"));
	gp_table_destroy(&t);
	c0.shared_slices = 0;
	/* the owner column: active since a local time, idle */
	Gpool__OwnerState os = GPOOL__OWNER_STATE__INIT;
	os.active = true;
	os.source = "file";
	os.since = (double)time(NULL) - 5;
	m.owner = &os;
	char buf[64], want[64];
	gp_nodeview_owner(&m, buf, sizeof(buf));
	time_t since = (time_t)os.since;
	struct tm lt;
	localtime_r(&since, &lt);
	strftime(want, sizeof(want), "active:file since %H:%M:%S", &lt);
	assert_string_equal(buf, want);
	os.active = false;
	gp_nodeview_owner(&m, buf, sizeof(buf));
	assert_non_null(strstr(buf, "idle since "));
	gp_nodeview_owner(&n, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	m.owner = NULL;
}

/* An array's pending tasks collapse into one row; gstat -o fields (squeue's letters). */
static void array_rows_and_format(void **state)
{
	Gpool__JobSpec sw = GPOOL__JOB_SPEC__INIT;
	sw.name = "sweep";
	Gpool__JobInfo j[5];
	Gpool__JobInfo *v[5];
	for (int i = 0; i < 5; i++) {
		gpool__job_info__init(&j[i]);
		j[i].id = 40 + (uint64_t)i;
		j[i].spec = &sw;
		j[i].user = "alice";
		j[i].array_job_id = 40;
		j[i].array_task_id = (uint32_t)i * 2;
		j[i].state = GPOOL__JOB_STATE__PENDING;
		j[i].reason = "Resources";
		v[i] = &j[i];
	}
	j[0].state = GPOOL__JOB_STATE__RUNNING;
	j[0].start_time = 100;
	j[0].nodelist = "pc1";
	j[4].reason = "JobArrayTaskLimit";
	gp_table_t *t = gp_jobview_table(v, 5, 160);
	assert_non_null(t);
	const char *out = render(t);
	assert_non_null(strstr(out, "40_0 "));
	assert_non_null(strstr(out, "40_[2,4,6] "));
	assert_non_null(strstr(out, "40_8 "));
	assert_null(strstr(out, "40_2 "));
	gp_table_destroy(&t);
	gp_error_t err;
	gp_jobfmt_t *f = gp_jobfmt_create("%.6i|%j|%t|%A|%a|%r", &err);
	assert_non_null(f);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_int_equal(gp_jobfmt_header(f, m), 0);
	assert_int_equal(gp_jobfmt_job(f, &j[1], 160, m), 0);
	fclose(m);
	assert_string_equal(buf, " JOBID|NAME|ST|ARRAY_JOB_ID|ARRAY_TASK_ID|REASON\n"
				 "  40_2|sweep|PD|40|2|Resources\n");
	free(buf);
	gp_jobfmt_destroy(&f);
	assert_null(gp_jobfmt_create("%i %Q", &err));
	assert_null(gp_jobfmt_create("%.i", &err));
	assert_null(gp_jobfmt_create("%", &err));
}

/* gnodes -o: sinfo's letters over the same field-list engine as gstat -o */
static void node_format(void **state)
{
	(void)state;
	Gpool__NodeInfo up = GPOOL__NODE_INFO__INIT, down = GPOOL__NODE_INFO__INIT;
	up.name = "pc1";
	up.state = GPOOL__NODE_STATE__NODE_UP;
	up.cpus = 8;
	up.cpus_used = 3;
	up.mem_mb = 16000;
	up.mem_used_mb = 1000;
	down.name = "pc2";
	down.state = GPOOL__NODE_STATE__NODE_DOWN;
	down.cpus = 4;
	down.mem_mb = 8000;
	down.reason = "not responding";
	gp_error_t err;
	gp_fieldfmt_t *f = gp_nodefmt_create("%N %.6t|%C|%m|%e|%20E|%%", &err);
	assert_non_null(f);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_int_equal(gp_fieldfmt_header(f, m), 0);
	assert_int_equal(gp_nodefmt_node(f, &up, m), 0);
	assert_int_equal(gp_nodefmt_node(f, &down, m), 0);
	fclose(m);
	assert_string_equal(buf,
			    "NODELIST  STATE|CPUS(A/I/O/T)|MEMORY|FREE_MEM|REASON              |%\n"
			    "pc1    mix|3/5/0/8|16000|15000|none                |%\n"
			    "pc2   down|0/0/4/4|8000|8000|not responding      |%\n");
	free(buf);
	gp_fieldfmt_destroy(&f);
	assert_null(gp_nodefmt_create("%N %i", &err)); /* a job letter is not a node letter */
	assert_null(gp_nodefmt_create("%.N", &err));
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(table_layout),	    cmocka_unit_test(job_table),
	    cmocka_unit_test(job_detail),	    cmocka_unit_test(array_rows_and_format),
	    cmocka_unit_test(energy_sources_words), cmocka_unit_test(node_tables),
	    cmocka_unit_test(node_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

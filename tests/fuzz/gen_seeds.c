/* gen_seeds: writes the seed corpora of the fuzz harnesses: valid envelopes and messages
 * built with the real encoder, the edge cases a decoder must refuse (empty, truncated,
 * huge lengths, bad varints, nested garbage), and typical strings for the text parsers.
 *
 *   fuzz-gen-seeds tests/fuzz/corpus
 *
 * Files are named seed-*; what libFuzzer added later (merged, named by hash) stays beside
 * them. Re-running rewrites the seeds only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/gpool.pb-c.h"
#include "common/chunk.h"
#include "common/util.h"
#include "common/wire.h"

static const char *root;

static void put(const char *corpus, const char *name, const void *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, corpus);
	if (gp_mkdir_p(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/seed-%s", root, corpus, name);
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void put_str(const char *corpus, const char *name, const char *s)
{
	put(corpus, name, s, strlen(s));
}

/* a message packed, with an optional selector byte in front (fuzz_batch) */
static void put_msg(const char *corpus, const char *name, int selector, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n + 1);
	size_t off = 0;
	if (selector >= 0)
		buf[off++] = (uint8_t)selector;
	protobuf_c_message_pack(m, buf + off);
	put(corpus, name, buf, n + off);
	free(buf);
}

/* messages as one packed Batch (the scheduler harnesses' input) */
static void put_batch(const char *corpus, const char *name, Gpool__Msg *const *msgs, size_t n)
{
	gp_batch_t b = {0};
	for (size_t i = 0; i < n; i++)
		gp_batch_add(&b, msgs[i]);
	put(corpus, name, b.body.data, b.body.len);
	gp_batch_release(&b);
}

/* ---- sample messages ---- */

static char *argv_cmd[] = {"/bin/echo", "hello"};
static char *nodes2[] = {"node1", "node2"};
static char *bad_nodes[] = {"a/b"};

static void job_spec(Gpool__JobSpec *sp)
{
	static Gpool__EnvVar ev = GPOOL__ENV_VAR__INIT;
	static Gpool__EnvVar *evs[] = {&ev};
	static Gpool__StagedFile sf = GPOOL__STAGED_FILE__INIT;
	static Gpool__StagedFile *sfs[] = {&sf};
	gpool__job_spec__init(sp);
	ev.name = "OMP_NUM_THREADS";
	ev.value = "4";
	sf.name = "input.dat";
	sf.mode = 0644;
	sf.content.data = (uint8_t *)"1 2 3\n";
	sf.content.len = 6;
	sp->name = "hello";
	sp->argv = argv_cmd;
	sp->n_argv = 2;
	sp->ntasks = 4;
	sp->nodes_min = 1;
	sp->nodes_max = 2;
	sp->cpus_per_task = 2;
	sp->mem_per_node_mb = 1024;
	sp->time_limit_sec = 600;
	sp->priority = 5;
	sp->nodelist = nodes2;
	sp->n_nodelist = 2;
	sp->output = "out-%j-%t.txt";
	sp->env = evs;
	sp->n_env = 1;
	sp->files = sfs;
	sp->n_files = 1;
	sp->gpus_per_task = 1;
	sp->gpu_model = "*3060*";
	sp->gpu_cc_min = "7.5";
}

/* Fill m with message kind k; returns 0 past the last kind. Storage is static. */
static int sample(int k, Gpool__Msg *m)
{
	static Gpool__JobSpec sp;
	static Gpool__SubmitRequest sub = GPOOL__SUBMIT_REQUEST__INIT;
	static Gpool__Heartbeat hb = GPOOL__HEARTBEAT__INIT;
	static Gpool__HeldTask ht = GPOOL__HELD_TASK__INIT;
	static Gpool__HeldTask *hts[] = {&ht};
	static Gpool__Rusage ru = GPOOL__RUSAGE__INIT;
	static Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	static Gpool__Card card = GPOOL__CARD__INIT;
	static Gpool__Card *cards[] = {&card};
	static Gpool__Launch launch = GPOOL__LAUNCH__INIT;
	static Gpool__TaskPlacement tp = GPOOL__TASK_PLACEMENT__INIT;
	static Gpool__TaskPlacement *tps[] = {&tp};
	static uint32_t cpus[] = {0, 1, 2, 3};
	static Gpool__TaskEvent te = GPOOL__TASK_EVENT__INIT;
	static Gpool__Output out = GPOOL__OUTPUT__INIT;
	static Gpool__JobQuery jq = GPOOL__JOB_QUERY__INIT;
	static uint64_t ids[] = {1, 2, 42};
	static Gpool__JobState states[] = {GPOOL__JOB_STATE__PENDING, GPOOL__JOB_STATE__RUNNING};
	static Gpool__JobControl jc = GPOOL__JOB_CONTROL__INIT;
	static Gpool__NodeControl nc = GPOOL__NODE_CONTROL__INIT;
	static Gpool__LogQuery lq = GPOOL__LOG_QUERY__INIT;
	static Gpool__WatchRequest wr = GPOOL__WATCH_REQUEST__INIT;
	static Gpool__Kill kill = GPOOL__KILL__INIT;
	static Gpool__JobEvent je = GPOOL__JOB_EVENT__INIT;
	static Gpool__StepHello sh = GPOOL__STEP_HELLO__INIT;
	static Gpool__NodeQuery nq = GPOOL__NODE_QUERY__INIT;
	static Gpool__Error e;
	static Gpool__ServiceQuery svq = GPOOL__SERVICE_QUERY__INIT;
	static char *newcmd[] = {"gserve", "--model=v2.gpm"};

	gpool__msg__init(m);
	m->id = (uint64_t)k + 1;
	job_spec(&sp);
	switch (k) {
	case 0:
		sub.spec = &sp;
		m->m_case = GPOOL__MSG__M_SUBMIT;
		m->submit = &sub;
		return 1;
	case 1:
		ru.user_sec = 1.5;
		ru.max_rss_kb = 2048;
		ht.job_id = 7;
		ht.rank = 1;
		ht.pid = 1234;
		ht.exited = 1;
		ht.rusage = &ru;
		hb.held = hts;
		hb.n_held = 1;
		hb.load1 = 0.5;
		hb.mem_free_mb = 4000;
		m->m_case = GPOOL__MSG__M_HEARTBEAT;
		m->heartbeat = &hb;
		return 1;
	case 2:
		card.index = 0;
		card.vendor = GPOOL__VENDOR__VENDOR_NVIDIA;
		card.name = "NVIDIA GeForce RTX 3060";
		card.uuid = "GPU-0000";
		card.vram_total = 12ULL << 30;
		card.arch = "8.6";
		card.state = GPOOL__CARD_STATE__CARD_UP;
		card.throughput = 360.0;
		reg.name = "node1";
		reg.version = "0.1.0";
		reg.cpus = 16;
		reg.mem_mb = 64000;
		reg.cards = cards;
		reg.n_cards = 1;
		reg.held = hts;
		reg.n_held = 1;
		reg.addr = "10.0.0.1";
		m->m_case = GPOOL__MSG__M_NODE_REGISTER;
		m->node_register = &reg;
		return 1;
	case 3:
		tp.rank = 0;
		tp.node = "node1";
		tp.cpus = cpus;
		tp.n_cpus = 4;
		launch.job_id = 42;
		launch.attempt = 1;
		launch.spec = &sp;
		launch.uid = 1000;
		launch.user = "alice";
		launch.tasks = tps;
		launch.n_tasks = 1;
		launch.size = 1;
		launch.nodelist = "node1";
		launch.master_addr = "10.0.0.1";
		launch.master_port = 29500;
		m->m_case = GPOOL__MSG__M_LAUNCH;
		m->launch = &launch;
		return 1;
	case 4:
		te.job_id = 42;
		te.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
		te.status = 256;
		te.rusage = &ru;
		te.reason = "exited";
		te.time = 1700000000.5;
		m->m_case = GPOOL__MSG__M_TASK_EVENT;
		m->task_event = &te;
		return 1;
	case 5:
		out.job_id = 42;
		out.stream = 1;
		out.offset = 100;
		out.data.data = (uint8_t *)"some output\n";
		out.data.len = 12;
		m->m_case = GPOOL__MSG__M_OUTPUT;
		m->output = &out;
		return 1;
	case 6:
		jq.ids = ids;
		jq.n_ids = 3;
		jq.user = "alice";
		jq.all = 1;
		jq.states = states;
		jq.n_states = 2;
		jq.limit = 10;
		m->m_case = GPOOL__MSG__M_JOB_QUERY;
		m->job_query = &jq;
		return 1;
	case 7:
		jc.action = GPOOL__JOB_ACTION__JOB_SIGNAL;
		jc.ids = ids;
		jc.n_ids = 3;
		jc.value = 15;
		m->m_case = GPOOL__MSG__M_JOB_CONTROL;
		m->job_control = &jc;
		return 1;
	case 8:
		nc.action = GPOOL__NODE_ACTION__NODE_DRAIN;
		nc.name = "node1";
		nc.card = -1;
		nc.reason = "maintenance";
		m->m_case = GPOOL__MSG__M_NODE_CONTROL;
		m->node_control = &nc;
		return 1;
	case 9:
		lq.job_id = 42;
		lq.max_bytes = 65536;
		lq.wait = 1;
		m->m_case = GPOOL__MSG__M_LOG_QUERY;
		m->log_query = &lq;
		return 1;
	case 10:
		wr.job_id = 42;
		m->m_case = GPOOL__MSG__M_WATCH;
		m->watch = &wr;
		return 1;
	case 11:
		kill.job_id = 42;
		kill.signal = 9;
		kill.grace_ms = 5000;
		kill.reason = GPOOL__JOB_STATE__TIMEOUT;
		m->m_case = GPOOL__MSG__M_KILL;
		m->kill = &kill;
		return 1;
	case 12:
		je.job_id = 42;
		je.state = GPOOL__JOB_STATE__COMPLETED;
		je.reason = "done";
		m->m_case = GPOOL__MSG__M_JOB_EVENT;
		m->job_event = &je;
		return 1;
	case 13:
		sh.job_id = 42;
		sh.pid = 99;
		sh.tasks = hts;
		sh.n_tasks = 1;
		m->m_case = GPOOL__MSG__M_STEP_HELLO;
		m->step_hello = &sh;
		return 1;
	case 14:
		nq.names = nodes2;
		nq.n_names = 2;
		m->m_case = GPOOL__MSG__M_NODE_QUERY;
		m->node_query = &nq;
		return 1;
	case 15:
		gp_msg_error(m, &e, 16, GPOOL__ERROR_CODE__ERROR_INVALID, "invalid request");
		return 1;
	case 16: /* a service (docs/services.md) */
		sp.service = 1;
		sp.replicas = 3;
		sp.health_path = "/health";
		sp.service_port = 8080;
		sub.spec = &sp;
		m->m_case = GPOOL__MSG__M_SUBMIT;
		m->submit = &sub;
		return 1;
	case 17:
		svq.ids = ids;
		svq.n_ids = 1;
		m->m_case = GPOOL__MSG__M_SERVICE_QUERY;
		m->service_query = &svq;
		return 1;
	case 18:
		jc.action = GPOOL__JOB_ACTION__JOB_SCALE;
		jc.ids = ids;
		jc.n_ids = 1;
		jc.value = 5;
		m->m_case = GPOOL__MSG__M_JOB_CONTROL;
		m->job_control = &jc;
		return 1;
	case 19:
		jc.action = GPOOL__JOB_ACTION__JOB_UPDATE;
		jc.ids = ids;
		jc.n_ids = 1;
		jc.argv = newcmd;
		jc.n_argv = 2;
		m->m_case = GPOOL__MSG__M_JOB_CONTROL;
		m->job_control = &jc;
		return 1;
	}
	return 0;
}

static void envelopes(gp_wire_t *w)
{
	gp_batch_t b = {0};
	gp_buf_t out = {0};
	gp_error_t err;
	Gpool__Msg m;
	char name[64];
	for (int k = 0; sample(k, &m); k++) {
		gp_batch_reset(&b);
		gp_batch_add(&b, &m);
		gp_wire_seal(w, &b, &out, &err);
		snprintf(name, sizeof(name), "msg%02d", k);
		put("envelope", name, out.data, out.len);
		/* the batch body alone, and the message alone (fuzz_batch selectors 0 and 1) */
		uint8_t *sel = malloc(b.body.len + 1);
		sel[0] = 0;
		memcpy(sel + 1, b.body.data, b.body.len);
		put("batch", name, sel, b.body.len + 1);
		put("client", name, b.body.data, b.body.len); /* fuzz_client takes a Batch */
		put("agent", name, b.body.data, b.body.len);  /* and fuzz_agent */
		free(sel);
		snprintf(name, sizeof(name), "single%02d", k);
		put_msg("batch", name, 1, &m.base);
	}
	/* one envelope holding every kind */
	gp_batch_reset(&b);
	for (int k = 0; sample(k, &m); k++)
		gp_batch_add(&b, &m);
	gp_wire_seal(w, &b, &out, &err);
	put("envelope", "all", out.data, out.len);
	put("agent", "all", b.body.data, b.body.len);
	/* an empty batch */
	gp_batch_reset(&b);
	gp_wire_seal(w, &b, &out, &err);
	put("envelope", "empty-batch", out.data, out.len);

	/* edge cases: each is refused, and must be refused cleanly */
	put("envelope", "empty", "", 0);
	gp_batch_reset(&b);
	sample(0, &m);
	gp_batch_add(&b, &m);
	gp_wire_seal(w, &b, &out, &err);
	put("envelope", "truncated", out.data, out.len / 2);
	static const uint8_t version0[] = {0x08, 0x00, 0x2a, 0x00};
	put("envelope", "version0", version0, sizeof(version0));
	static const uint8_t version9[] = {0x08, 0x09};
	put("envelope", "version9", version9, sizeof(version9));
	/* body declared 2^63 bytes long */
	static const uint8_t huge[] = {0x08, 0x01, 0x2a, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x7f, 0x00};
	put("envelope", "huge-length", huge, sizeof(huge));
	/* a varint of eleven bytes */
	static const uint8_t badvarint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	put("envelope", "bad-varint", badvarint, sizeof(badvarint));
	/* a body that is not a Batch: Msg -> submit -> spec -> argv with a bad length */
	static const uint8_t nested[] = {0x08, 0x01, 0x2a, 0x0a, 0x0a, 0x08, 0xf2,
					 0x01, 0x05, 0x0a, 0x03, 0x12, 0x7f, 0x41};
	put("envelope", "nested-garbage", nested, sizeof(nested));
	/* wire type 3/4 (groups) and 6/7 (undefined) */
	static const uint8_t groups[] = {0x08, 0x01, 0x2a, 0x04, 0x0b, 0x0c, 0x0e, 0x0f};
	put("envelope", "groups", groups, sizeof(groups));
	/* a Msg whose oneof is given twice (the last wins) */
	static const uint8_t twice[] = {0x08, 0x01, 0x2a, 0x0a, 0x0a, 0x08, 0x92,
					0x01, 0x00, 0xa2, 0x02, 0x02, 0x08, 0x05};
	put("envelope", "oneof-twice", twice, sizeof(twice));

	put("batch", "empty", "", 0);
	static const uint8_t sel_badvarint[] = {0x00, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff,
						0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	put("batch", "bad-varint", sel_badvarint, sizeof(sel_badvarint));
	static const uint8_t sel_packed[] = {0x06, 0x62, 0x03, 0x01, 0x02, 0x03};
	put("batch", "packed-states", sel_packed, sizeof(sel_packed));
	gp_batch_release(&b);
	gp_buf_release(&out);
}

static void specs(void)
{
	static Gpool__JobSpec sp;
	Gpool__SubmitRequest sub = GPOOL__SUBMIT_REQUEST__INIT;
	sub.spec = &sp;

	job_spec(&sp);
	put_msg("submit", "valid", -1, &sub.base);
	put_msg("batch", "jobspec", 2, &sp.base);
	put_msg("batch", "submit", 3, &sub.base);
	sp.n_argv = 0;
	put_msg("submit", "no-argv", -1, &sub.base);
	job_spec(&sp);
	sp.ntasks = 1000000;
	put_msg("submit", "too-many-tasks", -1, &sub.base);
	job_spec(&sp);
	sp.nodes_min = 8;
	sp.nodes_max = 2;
	put_msg("submit", "bad-node-range", -1, &sub.base);
	job_spec(&sp);
	sp.nodelist = bad_nodes;
	sp.n_nodelist = 1;
	put_msg("submit", "bad-node-name", -1, &sub.base);
	job_spec(&sp);
	sp.files[0]->name = "../../etc/passwd";
	put_msg("submit", "staged-dotdot", -1, &sub.base);
	job_spec(&sp);
	sp.priority = -20000;
	put_msg("submit", "priority", -1, &sub.base);
	job_spec(&sp);
	sp.time_limit_sec = 0xffffffff;
	put_msg("submit", "time-limit", -1, &sub.base);
	job_spec(&sp);
	sp.array = "0-9:3%2";
	sub.token = "0123456789abcdef";
	put_msg("submit", "array", -1, &sub.base);
	sp.array = "5-3";
	put_msg("submit", "array-backwards", -1, &sub.base);
	sp.array = "";
	sp.dependency = "afterok:1,after:1_0,singleton";
	put_msg("submit", "dependency", -1, &sub.base);
	sp.dependency = "afterok:1?afterany:2";
	put_msg("submit", "dependency-any", -1, &sub.base);
	sp.dependency = "";
	sub.token = "";
	sub.spec = NULL;
	put_msg("submit", "no-spec", -1, &sub.base);
	put("submit", "empty", "", 0);
	static const uint8_t trunc[] = {0x0a, 0x10, 0x12, 0x04, 't', 'r'};
	put("submit", "truncated", trunc, sizeof(trunc));
}

static void texts(void)
{
	static const char *const parse[] = {
	    "4096",
	    "512K",
	    "4G",
	    "1.5T",
	    "6GiB",
	    "0",
	    ".5m",
	    "1e30T",
	    "30s",
	    "5m",
	    "2h",
	    "1d",
	    "1:30",
	    "1:02:03",
	    "2-12",
	    "2-12:30",
	    "2-12:30:15",
	    "infinite",
	    "UNLIMITED",
	    "h1,h[2-4,7],x",
	    "pc[001-010]",
	    "a[1-3]b,c[5]",
	    "n[0-99999999]",
	    "42,43",
	    "SIGTERM",
	    "kill",
	    "9",
	    "ALL,OMP_NUM_THREADS=4",
	    "NONE",
	    "PATH,HOME",
	    "-5",
	    "9223372036854775808",
	    "1:2:3:4",
	    "[]",
	    "h[1-2",
	    "h]",
	    "",
	    ",",
	    "PENDING",
	    "nvidia",
	    "0-999",
	    "0-99:5%10",
	    "1,3,8-10",
	    "12_[3-5,9]",
	    "12_7",
	    "0-9999999:2",
	    "afterok:12,after:13_4",
	    "afterok:1?afterany:2",
	    "singleton",
	};
	char name[32];
	for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
		snprintf(name, sizeof(name), "%02zu", i);
		put_str("parse", name, parse[i]);
	}
	/* fuzz_config: first byte picks the program (0 sched, 1 worker, 2 cli, 3 stepd; 0x80:
	 * argv instead of a file) */
	put_str("config", "sched",
		"\x00"
		"# gpool.conf\n"
		"state_dir = /var/lib/gpool\n"
		"heartbeat = 2s\n"
		"commit_delay = 5ms\n"
		"max_message = 1M\n"
		"requeue = yes\n");
	put_str("config", "bad-line", "\x01no equals sign here\n");
	put_str("config", "unknown-key", "\x02nosuchkey = 1\n");
	put("config", "args",
	    "\x80--state-dir=/tmp/x\0--heartbeat\0"
	    "500ms\0--help",
	    42);
	put("config", "args-config", "\x81--config\0/dev/null", 19);
	put("config", "empty", "", 0);

	/* fuzz_gsub: ARG\0ARG\0...\0\0SCRIPT */
	static const char gsub1[] = "-n\0"
				    "4\0"
				    "-t\0"
				    "1:00:00\0"
				    "job.sh\0"
				    "a1\0\0"
				    "#!/bin/sh\n#GPOOL -N 2 --mem=4G\n#GPOOL --export=ALL,X=1\n"
				    "echo hi\n";
	put("gsub", "script", gsub1, sizeof(gsub1) - 1);
	static const char gsub2[] = "--nodelist=pc[1-3]\0"
				    "--exclude\0"
				    "pc4\0"
				    "--\0"
				    "hostname";
	put("gsub", "command", gsub2, sizeof(gsub2) - 1);
	static const char gsub3[] = "--service\0"
				    "--replicas=3\0"
				    "--port=8080\0"
				    "--health-path=/health\0"
				    "--stage\0"
				    "data.txt\0"
				    "--gpus=2\0"
				    "--gpu-cc=gfx1031\0"
				    "--gpu-vendor=amd\0"
				    "--\0"
				    "serve";
	put("gsub", "service", gsub3, sizeof(gsub3) - 1);
	static const char gsub4[] = "job.sh\0\0#GPOOL --wait\n";
	put("gsub", "cmdline-only", gsub4, sizeof(gsub4) - 1);
	put("gsub", "empty", "", 0);

	put_str("directive", "typical",
		"#!/bin/bash\n#GPOOL -n 4\n#GPOOL --job-name 'my job' "
		"# comment\n\n# other comment\n#GPOOL -t \"1:00\"\n"
		"echo done\n#GPOOL --ignored\n");
	put_str("directive", "unterminated", "#GPOOL --name 'oops\n");
	put_str("directive", "prefix-only", "#GPOOL\n#GPOOLX -n 1\n  #GPOOL\t-N2");
	put("directive", "nul",
	    "#GPOOL -n\0"
	    "4\n",
	    12);
	put("directive", "empty", "", 0);
}

/* fuzz_rdv: batches of rendezvous requests against its jobs 1 (3 ranks, uid 1000) and 2 (1
 * rank, uid 2000); the first message's id picks the sender (2: uid 1000, 1: root, 4: 2000). */

static void rdv_seeds(void)
{
	static uint8_t big[65537];
	char longkey[200];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	Gpool__RdvPut p[3], pbig = GPOOL__RDV_PUT__INIT, plong = GPOOL__RDV_PUT__INIT;
	Gpool__RdvGet g = GPOOL__RDV_GET__INIT, gwait = GPOOL__RDV_GET__INIT;
	Gpool__RdvFence f[3];
	Gpool__Msg mp[3], mf[3], mg = GPOOL__MSG__INIT, mgw = GPOOL__MSG__INIT,
				 mbig = GPOOL__MSG__INIT, mlong = GPOOL__MSG__INIT;
	static const char *keys[] = {"addr.0", "addr.1", "addr.2"};
	for (int r = 0; r < 3; r++) {
		gpool__rdv_put__init(&p[r]);
		p[r].job_id = 1;
		p[r].attempt = 1;
		p[r].rank = (uint32_t)r;
		p[r].key = (char *)keys[r];
		p[r].value.data = (uint8_t *)"10.0.0.1:4000";
		p[r].value.len = 13;
		gpool__msg__init(&mp[r]);
		mp[r].id = (uint64_t)(2 + 4 * r + 4);
		mp[r].m_case = GPOOL__MSG__M_RDV_PUT;
		mp[r].rdv_put = &p[r];
		gpool__rdv_fence__init(&f[r]);
		f[r].job_id = 1;
		f[r].attempt = 1;
		f[r].rank = (uint32_t)r;
		f[r].name = "fence.1";
		f[r].size = 3;
		f[r].wait_ms = r < 2 ? 1 : 0;
		gpool__msg__init(&mf[r]);
		mf[r].id = (uint64_t)(30 + 2 * r);
		mf[r].m_case = GPOOL__MSG__M_RDV_FENCE;
		mf[r].rdv_fence = &f[r];
	}
	mp[0].id = 2;
	g.job_id = 1;
	g.attempt = 1;
	g.key = "addr.1";
	mg.id = 50;
	mg.m_case = GPOOL__MSG__M_RDV_GET;
	mg.rdv_get = &g;
	gwait = g;
	gwait.key = "addr.9";
	gwait.wait_ms = 1;
	mgw.id = 52;
	mgw.m_case = GPOOL__MSG__M_RDV_GET;
	mgw.rdv_get = &gwait;
	pbig = p[1];
	pbig.value.data = big;
	pbig.value.len = sizeof(big);
	mbig.id = 2;
	mbig.m_case = GPOOL__MSG__M_RDV_PUT;
	mbig.rdv_put = &pbig;
	plong = p[2];
	plong.key = longkey;
	mlong.id = 2;
	mlong.m_case = GPOOL__MSG__M_RDV_PUT;
	mlong.rdv_put = &plong;

	Gpool__Msg *const put_get[] = {&mp[0], &mp[1], &mg};
	put_batch("rdv", "put-get", put_get, 3);
	Gpool__Msg *const held[] = {&mgw, &mp[2]};
	put_batch("rdv", "held-get", held, 2);
	Gpool__Msg *const fence[] = {&mf[0], &mf[1], &mf[2]};
	put_batch("rdv", "fence", fence, 3);
	Gpool__Msg *const too_big[] = {&mbig};
	put_batch("rdv", "too-big", too_big, 1);
	Gpool__Msg *const too_long[] = {&mlong};
	put_batch("rdv", "key-too-long", too_long, 1);
	/* the same put as root (id 1) and as the other user (id 4) */
	mp[0].id = 1;
	Gpool__Msg *const as_root[] = {&mp[0]};
	put_batch("rdv", "as-root", as_root, 1);
	mp[0].id = 4;
	put_batch("rdv", "as-other", as_root, 1);
	/* another job, another attempt */
	p[0].job_id = 2;
	mp[0].id = 2;
	put_batch("rdv", "other-job", as_root, 1);
	p[0].job_id = 1;
	p[0].attempt = 2;
	put_batch("rdv", "other-attempt", as_root, 1);
}

/* fuzz_files: chunk-store and file-set requests against its job 1 (uid 1000); the first
 * message's id picks the sender (2: uid 1000, 1: the agents' uid, 4: uid 2000). */

static void files_seeds(void)
{
	static const char data[] = "chunk bytes";
	uint8_t h[GP_HASH_LEN], bad[GP_HASH_LEN];
	gp_chunk_hash(data, sizeof(data) - 1, h);
	memset(bad, 7, sizeof(bad));
	Gpool__ChunkPut put_ok = GPOOL__CHUNK_PUT__INIT, put_bad = GPOOL__CHUNK_PUT__INIT;
	put_ok.hash = (ProtobufCBinaryData){GP_HASH_LEN, h};
	put_ok.data = (ProtobufCBinaryData){sizeof(data) - 1, (uint8_t *)data};
	put_bad.hash = (ProtobufCBinaryData){GP_HASH_LEN, bad};
	put_bad.data = put_ok.data;
	ProtobufCBinaryData hs[2] = {{GP_HASH_LEN, h}, {GP_HASH_LEN, bad}};
	Gpool__ChunkHave have = GPOOL__CHUNK_HAVE__INIT;
	have.hashes = hs;
	have.n_hashes = 2;
	ProtobufCBinaryData ch[1] = {{GP_HASH_LEN, h}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ep = &e;
	e.path = "out/result.txt";
	e.mode = 0644;
	e.size = sizeof(data) - 1;
	e.chunks = ch;
	e.n_chunks = 1;
	Gpool__FileSetPut sp = GPOOL__FILE_SET_PUT__INIT;
	sp.job_id = 1;
	sp.kind = "ckpt";
	sp.name = "state";
	sp.entries = &ep;
	sp.n_entries = 1;
	Gpool__FileSetPut spc = sp;
	spc.kind = "collect";
	spc.name = "rank0";
	Gpool__FileSetGet sg = GPOOL__FILE_SET_GET__INIT;
	sg.job_id = 1;
	sg.kind = "ckpt";
	sg.name = "state";
	Gpool__FileSetGet sgall = sg;
	sgall.kind = "collect";
	sgall.name = "";
	Gpool__ChunkGet cg = GPOOL__CHUNK_GET__INIT;
	cg.hash = (ProtobufCBinaryData){GP_HASH_LEN, h};
	cg.job_id = 1;
	cg.kind = "ckpt";
	cg.name = "state";
	Gpool__Msg m[9];
	for (int i = 0; i < 9; i++)
		gpool__msg__init(&m[i]);
	m[0].id = 2, m[0].m_case = GPOOL__MSG__M_CHUNK_HAVE, m[0].chunk_have = &have;
	m[1].id = 3, m[1].m_case = GPOOL__MSG__M_CHUNK_PUT, m[1].chunk_put = &put_ok;
	m[2].id = 4, m[2].m_case = GPOOL__MSG__M_CHUNK_PUT, m[2].chunk_put = &put_bad;
	m[3].id = 5, m[3].m_case = GPOOL__MSG__M_FILE_SET_PUT, m[3].file_set_put = &sp;
	m[4].id = 6, m[4].m_case = GPOOL__MSG__M_FILE_SET_GET, m[4].file_set_get = &sg;
	m[5].id = 7, m[5].m_case = GPOOL__MSG__M_CHUNK_GET, m[5].chunk_get = &cg;
	m[6].id = 8, m[6].m_case = GPOOL__MSG__M_FILE_SET_PUT, m[6].file_set_put = &spc;
	m[7].id = 9, m[7].m_case = GPOOL__MSG__M_FILE_SET_GET, m[7].file_set_get = &sgall;
	m[8].id = 10, m[8].m_case = GPOOL__MSG__M_CHUNK_HAVE, m[8].chunk_have = &have;
	Gpool__Msg *all[9];
	for (int i = 0; i < 9; i++)
		all[i] = &m[i];
	put_batch("files", "have", all, 1);
	put_batch("files", "put-then-set", all, 7); /* as uid 1000 */
	put_batch("files", "bad-put", all + 2, 1);  /* as uid 2000 */
	put_batch("files", "as-agent", all + 1, 8); /* id 3: the agents' uid */
	m[1].id = 4;
	put_batch("files", "as-other", all + 1, 7); /* id 4: uid 2000 */
	e.path = "../escape";
	put_batch("files", "escape", all + 1, 3);
	e.path = "ok";
	e.n_chunks = 0;
	put_batch("files", "count-mismatch", all + 1, 3);
}

/* fuzz_replay: 12-byte steps (uid, epoch, seq[6], count, flags, dt, pad; see fuzz_replay.c) */
static void replay_seeds(void)
{
	static const uint8_t inorder[] = {
	    0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, /* sender 0:1 takes 1 */
	    0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 1, 0, /* then 2..4 */
	    0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 1, 0, /* 3 again: a replay */
	    1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, /* another sender */
	};
	put("replay", "in-order", inorder, sizeof(inorder));
	static const uint8_t senders[] = {
	    0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1,	0, 1, 0, 1, 0, 0, 0, 0, 0, 1,
	    0, 1, 0, 2, 0, 1, 0, 0, 0, 0, 0,	1, 0, 1, 0, 3, 0, 1, 0, 0, 0,
	    0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0,	0, 0, 0, 1, 0, 1, 0, /* the fifth sender: the table
									is full */
	    0, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0xff, 0, /* 2540 s later: the others expired */
	};
	put("replay", "full-then-expired", senders, sizeof(senders));
	static const uint8_t wrap[] = {
	    0, 0, 5, 0, 0, 0, 0, 0, 9, 0x80, 1, 0, /* near 2^64, 9 messages: wraps */
	    0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 1, 0, /* 2^64 - 1 alone */
	};
	put("replay", "wrap", wrap, sizeof(wrap));
}

/* fuzz_gworkerd: records [kind][length, 2 bytes LE][payload] (see fuzz_gworkerd.c): kind 0 a
 * Batch from the scheduler, 2 the same signed by another uid, 1 [n][routing id][envelope]
 * from a supervisor. */
struct records {
	uint8_t buf[1 << 16];
	size_t len;
};

static void rec_put(struct records *r, uint8_t kind, const uint8_t *a, size_t alen,
		    const uint8_t *b, size_t blen)
{
	size_t n = alen + blen;
	if (r->len + 3 + n > sizeof(r->buf) || n > 0xffff)
		abort();
	r->buf[r->len++] = kind;
	r->buf[r->len++] = (uint8_t)(n & 0xff);
	r->buf[r->len++] = (uint8_t)(n >> 8);
	if (alen)
		memcpy(r->buf + r->len, a, alen);
	if (blen)
		memcpy(r->buf + r->len + alen, b, blen);
	r->len += n;
}

/* a record from the scheduler (w NULL: the batch as it is) or a supervisor (w: sealed) */
static void rec_msgs(struct records *r, uint8_t kind, gp_wire_t *w, const char *rid,
		     Gpool__Msg *const *msgs, size_t n)
{
	gp_batch_t b = {0};
	gp_buf_t env = {0};
	gp_error_t err;
	for (size_t i = 0; i < n; i++)
		gp_batch_add(&b, msgs[i]);
	if (!w) {
		rec_put(r, kind, b.body.data, b.body.len, NULL, 0);
		gp_batch_release(&b);
		return;
	}
	if (gp_wire_seal(w, &b, &env, &err) < 0)
		abort();
	uint8_t idlen = (uint8_t)strlen(rid);
	uint8_t head[64];
	head[0] = idlen;
	memcpy(head + 1, rid, idlen);
	rec_put(r, 1, head, 1u + idlen, env.data, env.len);
	gp_buf_release(&env);
	gp_batch_release(&b);
}

static void gworkerd_seeds(gp_wire_t *w)
{
	static char *argv_true[] = {"/bin/true"};
	static uint32_t cards01[] = {0, 1};
	struct records r;
	Gpool__NodeRegisterReply rr = GPOOL__NODE_REGISTER_REPLY__INIT;
	rr.heartbeat_ms = 500;
	rr.lease_ms = 30000;
	Gpool__Msg reg = GPOOL__MSG__INIT, *regp = &reg;
	reg.m_case = GPOOL__MSG__M_NODE_REGISTER_REPLY;
	reg.node_register_reply = &rr;

	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv_true;
	sp.n_argv = 1;
	sp.ntasks = 2;
	Gpool__TaskPlacement tp[2] = {GPOOL__TASK_PLACEMENT__INIT, GPOOL__TASK_PLACEMENT__INIT};
	Gpool__TaskPlacement *tpp[2] = {&tp[0], &tp[1]};
	tp[1].rank = 1;
	tp[1].local_rank = 1;
	tp[1].cards = cards01;
	tp[1].n_cards = 2;
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = 7;
	l.attempt = 1;
	l.spec = &sp;
	l.user = "root";
	l.tasks = tpp;
	l.n_tasks = 2;
	l.size = 2;
	l.master_addr = "198.18.0.11";
	l.master_port = 47001;
	Gpool__Msg launch = GPOOL__MSG__INIT, *launchp = &launch;
	launch.m_case = GPOOL__MSG__M_LAUNCH;
	launch.launch = &l;

	Gpool__HeldTask ht[2] = {GPOOL__HELD_TASK__INIT, GPOOL__HELD_TASK__INIT};
	Gpool__HeldTask *htp[2] = {&ht[0], &ht[1]};
	for (int i = 0; i < 2; i++) {
		ht[i].job_id = 7;
		ht[i].attempt = 1;
		ht[i].rank = (uint32_t)i;
		ht[i].pid = 1000 + i;
		ht[i].requeueable = true;
	}
	Gpool__StepHello h = GPOOL__STEP_HELLO__INIT;
	h.job_id = 7;
	h.attempt = 1;
	h.pid = 999;
	h.tasks = htp;
	h.n_tasks = 2;
	Gpool__Msg hello = GPOOL__MSG__INIT, *hellop = &hello;
	hello.m_case = GPOOL__MSG__M_STEP_HELLO;
	hello.step_hello = &h;

	Gpool__TaskEvent ev[3] = {GPOOL__TASK_EVENT__INIT, GPOOL__TASK_EVENT__INIT,
				  GPOOL__TASK_EVENT__INIT};
	Gpool__Rusage ru = GPOOL__RUSAGE__INIT;
	Gpool__Msg evm[3] = {GPOOL__MSG__INIT, GPOOL__MSG__INIT, GPOOL__MSG__INIT};
	for (int i = 0; i < 3; i++) {
		ev[i].job_id = 7;
		ev[i].attempt = 1;
		ev[i].rank = (uint32_t)(i / 2);
		ev[i].pid = 1000 + i / 2;
		ev[i].kind = i == 1 ? GPOOL__TASK_EVENT_KIND__TASK_EXITED
				    : GPOOL__TASK_EVENT_KIND__TASK_STARTED;
		evm[i].id = (uint64_t)i + 1;
		evm[i].m_case = GPOOL__MSG__M_TASK_EVENT;
		evm[i].task_event = &ev[i];
	}
	ev[1].rusage = &ru;
	ev[1].status = 3 << 8;
	Gpool__Output out = GPOOL__OUTPUT__INIT;
	out.job_id = 7;
	out.attempt = 1;
	out.stream = 1;
	out.data.data = (uint8_t *)"hello\n";
	out.data.len = 6;
	Gpool__Msg outm = GPOOL__MSG__INIT;
	outm.id = 4;
	outm.m_case = GPOOL__MSG__M_OUTPUT;
	outm.output = &out;
	Gpool__Msg *events[] = {&evm[0], &evm[1], &outm, &evm[2]};

	Gpool__Kill k = GPOOL__KILL__INIT;
	k.job_id = 7;
	k.signal = 15;
	k.grace_ms = 1000;
	k.reason = GPOOL__JOB_STATE__CANCELLED;
	Gpool__Msg kill = GPOOL__MSG__INIT, *killp = &kill;
	kill.m_case = GPOOL__MSG__M_KILL;
	kill.kill = &k;

	Gpool__Error e = GPOOL__ERROR__INIT;
	e.code = GPOOL__ERROR_CODE__ERROR_UNEXPECTED;
	e.text = "unknown node";
	Gpool__Msg err = GPOOL__MSG__INIT, *errp = &err;
	err.m_case = GPOOL__MSG__M_ERROR;
	err.error = &e;
	Gpool__HeartbeatReply hbr = GPOOL__HEARTBEAT_REPLY__INIT;
	Gpool__Msg hb = GPOOL__MSG__INIT, *hbp = &hb;
	hb.id = 2;
	hb.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
	hb.heartbeat_reply = &hbr;

	/* the whole life of a job: registered, launched, its supervisor's hello, events and
	 * output forwarded, a resend, a kill, the scheduler's acknowledgement */
	r.len = 0;
	rec_msgs(&r, 0, NULL, NULL, &regp, 1);
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	rec_msgs(&r, 1, w, "7.1", &hellop, 1);
	rec_msgs(&r, 1, w, "7.1", events, 4);
	rec_msgs(&r, 1, w, "7.1", events, 2);
	rec_msgs(&r, 0, NULL, NULL, &killp, 1);
	rec_msgs(&r, 0, NULL, NULL, &hbp, 1);
	put("gworkerd", "job-life", r.buf, r.len);

	/* a supervisor the agent does not know: adopted from its hello */
	r.len = 0;
	rec_msgs(&r, 0, NULL, NULL, &regp, 1);
	rec_msgs(&r, 1, w, "7.1", &hellop, 1);
	rec_msgs(&r, 1, w, "7.1", events, 4);
	rec_msgs(&r, 1, w, "7.2", &hellop, 1);
	rec_msgs(&r, 1, w, "x.1", &hellop, 1);
	put("gworkerd", "adopt", r.buf, r.len);

	/* a service replica (its own port), then a screening job, launched twice */
	r.len = 0;
	sp.service = true;
	sp.service_port = 47010;
	rec_msgs(&r, 0, NULL, NULL, &regp, 1);
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	sp.service = false;
	sp.screen = true;
	l.job_id = 8;
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	ev[1].job_id = 8;
	rec_msgs(&r, 1, w, "8.1", &events[1], 1);
	put("gworkerd", "service-screen", r.buf, r.len);
	sp.screen = false;
	ev[1].job_id = 7;
	l.job_id = 7;

	/* refused launches: no command, an unknown account; then the scheduler forgot us */
	r.len = 0;
	l.user = "no-such-user-here";
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	sp.n_argv = 0;
	l.job_id = 9;
	rec_msgs(&r, 0, NULL, NULL, &launchp, 1);
	rec_msgs(&r, 0, NULL, NULL, &errp, 1);
	rec_msgs(&r, 0, NULL, NULL, &hbp, 1);
	put("gworkerd", "refused", r.buf, r.len);
	sp.n_argv = 1;
	l.user = "root";
	l.job_id = 7;

	/* a launch signed by another uid than the scheduler's: dropped */
	r.len = 0;
	rec_msgs(&r, 2, NULL, NULL, &launchp, 1);
	rec_msgs(&r, 1, w, "7.1", &hellop, 1);
	put("gworkerd", "wrong-uid", r.buf, r.len);
	put("gworkerd", "empty", "", 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_ROOT\n", argv[0]);
		return 2;
	}
	root = argv[1];
	gp_wire_t *w = gp_wire_create(NULL, 1 << 20);
	envelopes(w);
	gworkerd_seeds(w);
	gp_wire_destroy(&w);
	specs();
	texts();
	rdv_seeds();
	files_seeds();
	replay_seeds();
	return 0;
}

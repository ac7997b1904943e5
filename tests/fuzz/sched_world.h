/* sched_world.h: the minimal scheduler the scheduler harnesses drive (fuzz_submit,
 * fuzz_client), as scheduler/test/test_plan.c builds it: SQLite in a temp dir with sync off,
 * an inproc ROUTER without authentication (no munged), one registered node. settle() does
 * what commit.c's commit does on success and forgets the jobs the input submitted; the whole
 * scheduler is rebuilt every REBUILD_EVERY inputs so that the store stays small. */
#ifndef GPOOL_FUZZ_SCHED_WORLD_H
#define GPOOL_FUZZ_SCHED_WORLD_H

#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "scheduler/core/core.h"
#include "scheduler/shell/plug.h"
#include "scheduler/shell/effects.h"
#include "scheduler/features/service.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "common/log.h"
#include "scheduler/features/metrics.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/features/rdv.h"
#include "scheduler/store/store.h"
#include "common/u64map.h"
#include "common/util.h"

#define REBUILD_EVERY 2048
#define CLIENT_UID    1000
#define AGENT_UID     999

static struct gsched S;
static char dir[64];
static const char *namer(int idx)
{
	return nodes_name(S.nodes, idx);
}

static void world_seed(void);

/* The test's passwd: every uid is "user<uid>" (the fixture's own, not this machine's). */
static int fixture_owner_name(uid_t uid, char *name, size_t len)
{
	snprintf(name, len, "user%u", (unsigned)uid);
	return 0;
}

static void world_up(void)
{
	gp_error_t err;
	memset(&S, 0, sizeof(S));
	snprintf(dir, sizeof(dir), "%s/gp-fuzz-submit-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	S.cfg = gp_config_create(GP_SCHED);
	S.store = store_create(dir, "off", 0, &err);
	FUZZ_CHECK(S.store != NULL);
	store_set_node_namer(namer);
	S.output = output_create(dir, 1 << 20, &err);
	S.rdv = rdv_create();
	S.net = net_create("inproc://fuzz-submit", NULL, 1 << 20, 0, &err);
	S.metrics = metrics_create();
	FUZZ_CHECK(sched_core_init(&S, 1) == 0);
	FUZZ_CHECK(S.cfg && S.output && S.rdv && S.net && S.metrics);
	FUZZ_CHECK(sched_core_subscribe(&S) == 0);
	S.dep_target = effects_dep_target;
	S.agent_uid = AGENT_UID;
	S.owner_name = fixture_owner_name;
	FUZZ_CHECK(gp_uid_policy_init(&S.uids, "/nonexistent", 1, 0x7ffffffe, "", &err) == 0);
	S.max_jobs = 100000;
	S.max_time_limit = 7 * 86400;
	S.kill_grace_ms = 1000;
	snprintf(S.state_dir, sizeof(S.state_dir), "%s", dir);
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = "node1";
	reg.cpus = 8;
	reg.mem_mb = 16000;
	FUZZ_CHECK(nodes_register(S.nodes, &reg, (const uint8_t *)"node1", 5) >= 0);
	world_seed();
}

static void world_down(void)
{
	net_destroy(&S.net);
	metrics_destroy(&S.metrics);
	store_destroy(&S.store);
	output_destroy(&S.output);
	sched_features_release(&S);
	sched_core_release(&S);
	rdv_destroy(&S.rdv);
	gp_config_destroy(&S.cfg);
	free(S.touched);
	free(S.subs);
	gp_rm_rf(dir);
}

static void cleanup_at_exit(void)
{
	world_down();
}

/* An array task's spec comes back from the store (its first task's). */
static bool store_job_spec_check(uint64_t id)
{
	Gpool__JobSpec *sp = store_job_spec(S.store, id);
	if (sp)
		gpool__job_spec__free_unpacked(sp, NULL);
	return sp != NULL;
}

/* What commit.c's commit does on success, then forget the new jobs again. */
static void settle(int forget_new)
{
	gp_error_t err;
	if (S.txn_first_ms)
		FUZZ_CHECK(store_commit(S.store, &err) == 0);
	for (size_t i = 0; i < S.ntouched; i++)
		S.touched[i]->in_txn = false;
	for (size_t i = 0; i < S.nsubs; i++) {
		struct job *j = S.subs[i].job;
		/* what check_spec let through is what the scheduler relies on */
		/* a service runs nothing itself: its replicas are jobs of their own */
		FUZZ_CHECK((j->ntasks >= 1 || service_is(&S, j)) && j->cpus_per_task >= 1);
		FUZZ_CHECK(j->nodes_max == 0 || j->nodes_max >= j->nodes_min);
		FUZZ_CHECK(j->nodes_min <= j->ntasks);
		FUZZ_CHECK(j->user && j->name && j->out_pattern && j->err_pattern);
		FUZZ_CHECK(jobs_get(S.jobs, j->id) == j);
		/* the spec must come back from the store at launch (client_submit refuses specs
		 * that would not: docs/fuzzing.md, "Findings") */
		Gpool__JobSpec *stored = store_job_spec(S.store, j->id);
		FUZZ_CHECK(stored != NULL);
		if (stored)
			gpool__job_spec__free_unpacked(stored, NULL);
		j->in_txn = false;
		j->durable = true;
		/* an array: its tasks follow with consecutive ids, each naming the first */
		uint64_t first = j->id;
		for (uint32_t k = 1; k < S.subs[i].array_count; k++) {
			struct job *t = jobs_get(S.jobs, first + k);
			FUZZ_CHECK(t && t->array_job_id == first);
			if (!t)
				continue;
			FUZZ_CHECK(store_job_spec_check(t->id));
			t->in_txn = false;
			t->durable = true;
			if (forget_new)
				sched_forget(&S, t);
		}
		if (forget_new)
			sched_forget(&S, j);
	}

	S.nsubs = 0;
	S.ntouched = 0;
	S.txn_first_ms = 0;
	net_flush(S.net, true); /* the replies go nowhere: the peer is not connected */
}

/* A 2-task /bin/true job of uid (user), held or not, submitted and committed (seeds). */
static inline void world_submit(uint32_t uid, const char *user, int hold)
{
	char *argv[] = {"/bin/true"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = 2;
	sp.hold = hold;
	sp.output = "out-%j-%t.txt";
	Gpool__SubmitRequest sr = GPOOL__SUBMIT_REQUEST__INIT;
	sr.spec = &sp;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = &sr;
	Gpool__Msg *msgs[1] = {&m};
	Gpool__Batch b = GPOOL__BATCH__INIT;
	b.msgs = msgs;
	b.n_msgs = 1;
	struct gp_sender from = {.uid = uid, .gid = uid, .epoch = 1};
	handle_batch(&S, (const uint8_t *)"seed", 4, "seed", &from, &b);
	FUZZ_CHECK(S.nsubs == 1);
	settle(0);
}

/* The messages of b that keep() picks, as a batch of their own (mine; free mine->msgs), and
 * who sends them, by the first one's id: odd: odd_uid, a multiple of 4: uid 2000, else
 * CLIENT_UID (fuzz_rdv, fuzz_files). */
static inline struct gp_sender world_pick(const Gpool__Batch *b, bool (*keep)(const Gpool__Msg *),
					  uint32_t odd_uid, Gpool__Batch *mine)
{
	Gpool__Msg **v = calloc(b->n_msgs ? b->n_msgs : 1, sizeof(*v));
	FUZZ_CHECK(v != NULL);
	size_t n = 0;
	for (size_t i = 0; i < b->n_msgs; i++)
		if (keep(b->msgs[i]))
			v[n++] = b->msgs[i];
	gpool__batch__init(mine);
	mine->msgs = v;
	mine->n_msgs = n;
	uint64_t id0 = n ? v[0]->id : 0;
	uint32_t uid = id0 & 1 ? odd_uid : id0 % 4 == 0 && id0 ? 2000 : CLIENT_UID;
	struct gp_sender from = {.uid = uid, .gid = uid, .epoch = 1};
	return from;
}

/* Rebuild now and then; the first call sets everything up. */
static void world_tick(const char *prog)
{
	static int runs;
	if (!S.net) {
		gp_log_init(prog, GP_LOG_ERR);
		world_up();
		atexit(cleanup_at_exit);
	} else if (++runs % REBUILD_EVERY == 0) {
		world_down();
		world_up();
	}
}

#endif

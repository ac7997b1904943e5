/* fuzz_rdv: a Batch of rendezvous requests (RdvPut, RdvGet, RdvFence) through the scheduler's
 * dispatch (handle_batch) against two RUNNING jobs: job 1 of 3 ranks (uid 1000) and job 2 of
 * 1 rank (uid 2000). Other kinds of message are dropped (fuzz_client covers them; the running
 * jobs here have no tasks for a cancel to kill). The sender is uid 1000, root when the first
 * message's id is odd, uid 2000 when it is a multiple of 4. Checks: the bytes held never pass
 * the scheduler-wide bound, held requests whose wait ran out are answered, and stopping both
 * attempts (every 16 inputs) leaves no store and no byte accounted. */
#include "scheduler/features/rdv.h"
#include "tests/fuzz/sched_world.h"

static struct job *running_job(uint64_t id, uint32_t uid, const char *user, uint32_t ntasks)
{
	struct job *j = calloc(1, sizeof(*j));
	FUZZ_CHECK(j != NULL);
	j->id = id;
	j->uid = j->gid = uid;
	j->user = strdup(user);
	j->name = strdup("rdv");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->attempt = 1;
	j->ntasks = ntasks;
	j->cpus_per_task = 1;
	j->durable = true;
	FUZZ_CHECK(jobs_add(S.jobs, j) == 0);
	return j;
}

static void world_seed(void)
{
	running_job(1, CLIENT_UID, "alice", 3);
	running_job(2, 2000, "bob", 1);
}

static bool is_rdv(const Gpool__Msg *m)
{
	return m->m_case == GPOOL__MSG__M_RDV_PUT || m->m_case == GPOOL__MSG__M_RDV_GET ||
	       m->m_case == GPOOL__MSG__M_RDV_FENCE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned runs;
	world_tick("fuzz_rdv");
	Gpool__Batch *b = gpool__batch__unpack(NULL, size, data);
	if (!b)
		return 0;
	Gpool__Batch mine;
	struct gp_sender from = world_pick(b, is_rdv, 0, &mine);
	static const uint8_t rid[] = "fuzz-rdv";
	handle_batch(&S, rid, sizeof(rid) - 1, "fuzz", &from, &mine);
	FUZZ_CHECK(rdv_bytes(S.rdv) <= ((size_t)256 << 20));
	rdv_tick(&S);
	if (++runs % 16 == 0) {
		rdv_job_stopped(&S, jobs_get(S.jobs, 1));
		rdv_job_stopped(&S, jobs_get(S.jobs, 2));
		FUZZ_CHECK(rdv_nstores(S.rdv) == 0);
		FUZZ_CHECK(rdv_bytes(S.rdv) == 0);
	}
	settle(0);
	free(mine.msgs);
	gpool__batch__free_unpacked(b, NULL);
	return 0;
}

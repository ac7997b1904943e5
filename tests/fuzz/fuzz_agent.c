/* fuzz_agent: a whole Batch sent as the agents' account (agent_uid) from the registered
 * node's connection, through the scheduler's dispatch (handle_batch): registrations,
 * heartbeats, task and step updates, screening reports, energy, and every other message the
 * dispatch table lets an agent send, against a scheduler that holds one node and two jobs.
 * The harnesses of the user path (fuzz_client, fuzz_submit) never reach these handlers: the
 * dispatch refuses agent messages from any other uid. A crash, a sanitizer report or a
 * broken invariant of settle() is a finding. */
#include "sched_world.h"

static void submit_one(int hold)
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
	sr.user = "alice";
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = &sr;
	Gpool__Msg *msgs[1] = {&m};
	Gpool__Batch b = GPOOL__BATCH__INIT;
	b.msgs = msgs;
	b.n_msgs = 1;
	struct gp_sender from = {.uid = CLIENT_UID, .gid = CLIENT_UID, .epoch = 1};
	handle_batch(&S, (const uint8_t *)"seed", 4, "seed", &from, &b);
	FUZZ_CHECK(S.nsubs == 1);
	settle(0);
}

static void world_seed(void)
{
	submit_one(0);
	submit_one(1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	world_tick("fuzz_agent");
	Gpool__Batch *b = gpool__batch__unpack(NULL, size, data);
	if (!b)
		return 0;
	struct gp_sender from = {.uid = AGENT_UID, .gid = AGENT_UID, .epoch = 1};
	/* the connection node1 registered from: its identity is the ROUTER id */
	handle_batch(&S, (const uint8_t *)"node1", 5, "198.18.0.11", &from, b);
	settle(1);
	gpool__batch__free_unpacked(b, NULL);
	return 0;
}

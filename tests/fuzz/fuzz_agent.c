/* fuzz_agent: a whole Batch sent as the agents' account (agent_uid) from the registered
 * node's connection, through the scheduler's dispatch (handle_batch): registrations,
 * heartbeats, task and step updates, screening reports, energy, and every other message the
 * dispatch table lets an agent send, against a scheduler that holds one node and two jobs.
 * The harnesses of the user path (fuzz_client, fuzz_submit) never reach these handlers: the
 * dispatch refuses agent messages from any other uid. A crash, a sanitizer report or a
 * broken invariant of settle() is a finding. */
#include "tests/fuzz/sched_world.h"

static void world_seed(void)
{
	world_submit(CLIENT_UID, "alice", 0);
	world_submit(CLIENT_UID, "alice", 1);
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

/* fuzz_client: a whole Batch from a user command through the scheduler's dispatch
 * (handle_batch): job queries, job and node control, log queries, watches and submits,
 * against a scheduler that holds one node and three jobs (two of uid 1000, one of uid 2000,
 * stored and committed). Agent messages are refused by the dispatch table (the sender is
 * not the agents' uid). The sender is uid 1000, or root when the first message's id is odd. */
#include "tests/fuzz/sched_world.h"

static void world_seed(void)
{
	world_submit(CLIENT_UID, "alice", 0);
	world_submit(CLIENT_UID, "alice", 1);
	world_submit(2000, "bob", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	world_tick("fuzz_client");
	Gpool__Batch *b = gpool__batch__unpack(NULL, size, data);
	if (!b)
		return 0;
	uint32_t uid = b->n_msgs && (b->msgs[0]->id & 1) ? 0 : CLIENT_UID;
	struct gp_sender from = {.uid = uid, .gid = uid, .epoch = 1};
	static const uint8_t rid[] = "fuzz-client";
	handle_batch(&S, rid, sizeof(rid) - 1, "fuzz", &from, b);
	settle(1);
	gpool__batch__free_unpacked(b, NULL);
	return 0;
}

/* fuzz_submit: a SubmitRequest through the scheduler's real submit path: handle_batch ->
 * client_submit -> check_spec -> the job table and the store. The scheduler is the minimal
 * one scheduler/test/test_plan.c builds: SQLite in a temp dir with sync off, an inproc
 * ROUTER without authentication; the sender is a fake client uid. Accepted jobs are
 * committed and forgotten after each input; the whole scheduler is rebuilt now and then so
 * that the store stays small. */
#include "tests/fuzz/sched_world.h"

static void world_seed(void)
{
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	world_tick("fuzz_submit");
	Gpool__SubmitRequest *sr = gpool__submit_request__unpack(NULL, size, data);
	if (!sr)
		return 0;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = 7;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = sr;
	Gpool__Msg *msgs[1] = {&m};
	Gpool__Batch b = GPOOL__BATCH__INIT;
	b.msgs = msgs;
	b.n_msgs = 1;
	struct gp_sender from = {.uid = CLIENT_UID, .gid = CLIENT_UID, .epoch = 1};
	static const uint8_t rid[] = "fuzz-client";
	handle_batch(&S, rid, sizeof(rid) - 1, "fuzz", &from, &b);
	settle(1);
	gpool__submit_request__free_unpacked(sr, NULL);
	return 0;
}

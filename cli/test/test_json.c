/* JSON conversion: every field present, enums by name, bytes base64, nested messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/lib/json.h"

static void job(void **state)
{
	Gpool__JobInfo j = GPOOL__JOB_INFO__INIT;
	Gpool__JobSpec s = GPOOL__JOB_SPEC__INIT;
	Gpool__TaskPlacement t = GPOOL__TASK_PLACEMENT__INIT;
	Gpool__TaskPlacement *tv[] = {&t};
	uint32_t cpus[] = {2, 3};
	char *argv[] = {"./a.sh", "x"};
	s.name = "n";
	s.argv = argv;
	s.n_argv = 2;
	s.script.data = (uint8_t *)"hi\n";
	s.script.len = 3;
	s.gpu_vendor = GPOOL__VENDOR__VENDOR_AMD;
	t.rank = 1;
	t.node = "pc2";
	t.cpus = cpus;
	t.n_cpus = 2;
	j.id = 1ULL << 40;
	j.spec = &s;
	j.state = GPOOL__JOB_STATE__OUT_OF_MEMORY;
	j.exit_code = -1;
	j.submit_time = 1.5;
	j.tasks = tv;
	j.n_tasks = 1;
	json_t *o = gp_json_job(&j);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 1LL << 40);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "OUT_OF_MEMORY");
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), -1);
	assert_true(json_real_value(json_object_get(o, "submit_time")) == 1.5);
	assert_string_equal(json_string_value(json_object_get(o, "user")), "");
	assert_true(json_is_array(json_object_get(o, "tasks")));
	json_t *sp = json_object_get(o, "spec");
	assert_string_equal(json_string_value(json_object_get(sp, "script")), "aGkK");
	assert_string_equal(json_string_value(json_object_get(sp, "gpu_vendor")), "VENDOR_AMD");
	assert_string_equal(json_string_value(json_array_get(json_object_get(sp, "argv"), 1)), "x");
	assert_true(json_is_false(json_object_get(sp, "hold")));
	json_t *t0 = json_array_get(json_object_get(o, "tasks"), 0);
	assert_string_equal(json_string_value(json_object_get(t0, "node")), "pc2");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(t0, "cpus"), 1)), 3);
	/* fields in .proto order, all of them */
	assert_int_equal(json_object_size(o), gpool__job_info__descriptor.n_fields);
	json_decref(o);
}

static void node_and_card(void **state)
{
	Gpool__Card c = GPOOL__CARD__INIT;
	Gpool__Card *cv[] = {&c};
	Gpool__NodeInfo n = GPOOL__NODE_INFO__INIT;
	uint64_t jobs[] = {5, 6};
	c.name = "GTX 1660";
	c.state = GPOOL__CARD_STATE__CARD_FAILED;
	c.throughput = 250.5;
	c.own_kernels_ok = 1;
	n.name = "pc1";
	n.state = GPOOL__NODE_STATE__NODE_DOWN;
	n.cards = cv;
	n.n_cards = 1;
	n.jobs = jobs;
	n.n_jobs = 2;
	json_t *o = gp_json_node(&n);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "NODE_DOWN");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(o, "jobs"), 1)), 6);
	json_t *c0 = json_array_get(json_object_get(o, "cards"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "state")), "CARD_FAILED");
	assert_true(json_is_true(json_object_get(c0, "own_kernels_ok")));
	json_decref(o);
	o = gp_json_card(&c);
	assert_true(json_real_value(json_object_get(o, "throughput")) == 250.5);
	json_decref(o);
}

static void oneof_and_null(void **state)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__SubmitReply r = GPOOL__SUBMIT_REPLY__INIT;
	r.job_id = 42;
	m.id = 3;
	m.m_case = GPOOL__MSG__M_SUBMIT_REPLY;
	m.submit_reply = &r;
	json_t *o = gp_json_message(&m.base);
	/* id, request_id and only the oneof member that is set */
	assert_int_equal(json_object_size(o), 3);
	assert_non_null(json_object_get(o, "request_id"));
	assert_null(json_object_get(o, "submit"));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(o, "submit_reply"), "job_id")), 42);
	json_decref(o);
	/* an unset sub-message is null */
	Gpool__JobInfo j = GPOOL__JOB_INFO__INIT;
	o = gp_json_job(&j);
	assert_true(json_is_null(json_object_get(o, "spec")));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(job),
	    cmocka_unit_test(node_and_card),
	    cmocka_unit_test(oneof_and_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

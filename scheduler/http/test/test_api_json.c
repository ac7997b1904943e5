/* The REST API's routes and JSON (scheduler/http/api_json.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "scheduler/http/api_json.h"

static void routes(void **state)
{
	struct api_route r;
	char why[256];
	assert_int_equal(api_route_parse("GET",
					 "/api/v1/jobs?all=1&user=alice&state=RUNNING&limit=5", &r,
					 why, sizeof(why)),
			 0);
	assert_int_equal(r.op, API_JOBS);
	assert_true(r.all);
	assert_string_equal(r.user, "alice");
	assert_int_equal(r.state, GPOOL__JOB_STATE__RUNNING);
	assert_int_equal(r.limit, 5);
	assert_int_equal(api_route_parse("POST", "/api/v1/jobs/42/cancel", &r, why, sizeof(why)),
			 0);
	assert_int_equal(r.op, API_CANCEL);
	assert_int_equal(r.id, 42);
	assert_int_equal(api_route_parse("DELETE", "/api/v1/jobs/7", &r, why, sizeof(why)), 0);
	assert_int_equal(r.op, API_CANCEL);
	assert_int_equal(
	    api_route_parse("GET", "/api/v1/jobs/7/output?offset=10&wait=1", &r, why, sizeof(why)),
	    0);
	assert_int_equal(r.op, API_OUTPUT);
	assert_int_equal(r.offset, 10);
	assert_true(r.wait);
	assert_int_equal(api_route_parse("POST", "/api/v1/nodes/pc-1/drain", &r, why, sizeof(why)),
			 0);
	assert_string_equal(r.node, "pc-1");
	assert_int_equal(api_route_parse("GET", "/", &r, why, sizeof(why)), 0);
	assert_int_equal(r.op, API_STATIC);
	assert_string_equal(r.file, "index.html");
	/* refusals */
	assert_int_equal(api_route_parse("GET", "/api/v1/nope", &r, why, sizeof(why)), 404);
	assert_int_equal(api_route_parse("PUT", "/api/v1/jobs", &r, why, sizeof(why)), 405);
	assert_int_equal(api_route_parse("GET", "/api/v1/jobs/0", &r, why, sizeof(why)), 400);
	assert_int_equal(api_route_parse("GET", "/api/v1/jobs/x1", &r, why, sizeof(why)), 400);
	assert_int_equal(api_route_parse("GET", "/api/v1/jobs?limit=-1", &r, why, sizeof(why)),
			 400);
	assert_int_equal(api_route_parse("GET", "/api/v1/jobs?bogus=1", &r, why, sizeof(why)), 400);
	assert_int_equal(api_route_parse("GET", "/api/v1/jobs?user=%", &r, why, sizeof(why)), 400);
	assert_int_equal(api_route_parse("GET", "/web/..%2fetc", &r, why, sizeof(why)), 404);
	assert_int_equal(api_route_parse("GET", "/web/.hidden", &r, why, sizeof(why)), 404);
	assert_int_equal(api_route_parse("POST", "/api/v1/nodes/a%20b/drain", &r, why, sizeof(why)),
			 400);
}

static void spec(void **state)
{
	char why[256];
	const char *ok =
	    "{\"argv\":[\"/bin/echo\",\"hi\"],\"ntasks\":2,\"gpus_per_task\":1,"
	    "\"env\":{\"A\":\"1\"},\"gpu_vendor\":\"amd\",\"hold\":true,\"name\":\"n\"}";
	Gpool__JobSpec *sp = api_spec_parse(ok, strlen(ok), why, sizeof(why));
	assert_non_null(sp);
	assert_int_equal(sp->n_argv, 2);
	assert_string_equal(sp->argv[1], "hi");
	assert_int_equal(sp->ntasks, 2);
	assert_int_equal(sp->gpus_per_task, 1);
	assert_int_equal(sp->n_env, 1);
	assert_string_equal(sp->env[0]->name, "A");
	assert_int_equal(sp->gpu_vendor, GPOOL__VENDOR__VENDOR_AMD);
	assert_true(sp->hold);
	api_spec_free(sp);
	static const char *bad[] = {
	    "",
	    "[]",
	    "{}",
	    "{\"argv\":[]}",
	    "{\"argv\":\"x\"}",
	    "{\"argv\":[1]}",
	    "{\"argv\":[\"x\"],\"ntasks\":0}",
	    "{\"argv\":[\"x\"],\"priority\":20000}",
	    "{\"argv\":[\"x\"],\"what\":1}",
	    "{\"argv\":[\"x\"],\"argv\":[\"y\"]}",
	    "{\"argv\":[\"a\\u0000b\"]}",
	    "{\"argv\":[\"x\"],\"env\":{\"A=B\":\"c\"}}",
	    "{\"argv\":[\"x\"],\"gpu_vendor\":\"intel\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_null(api_spec_parse(bad[i], strlen(bad[i]), why, sizeof(why)));
		assert_true(why[0] != '\0');
	}
}

static void drain_and_errors(void **state)
{
	char reason[64], why[128];
	int card;
	const char *b = "{\"reason\":\"fan\",\"card\":3}";
	assert_int_equal(
	    api_drain_parse(b, strlen(b), reason, sizeof(reason), &card, why, sizeof(why)), 0);
	assert_string_equal(reason, "fan");
	assert_int_equal(card, 3);
	assert_int_equal(api_drain_parse("", 0, reason, sizeof(reason), &card, why, sizeof(why)),
			 0);
	assert_int_equal(card, -1);
	b = "{\"card\":64}";
	assert_int_equal(
	    api_drain_parse(b, strlen(b), reason, sizeof(reason), &card, why, sizeof(why)), -1);
	assert_int_equal(api_status_of(GPOOL__ERROR_CODE__ERROR_PERMISSION), 403);
	assert_int_equal(api_status_of(GPOOL__ERROR_CODE__ERROR_NOT_FOUND), 404);
	assert_string_equal(api_error_code(GPOOL__ERROR_CODE__ERROR_REPLAY), "ERROR_REPLAY");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(routes),
	    cmocka_unit_test(spec),
	    cmocka_unit_test(drain_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
	    /* the REST API makes no services (gsub does, through the same submission handler,
	     * which checks a service's name: docs/security.md "Services") */
	    "{\"argv\":[\"x\"],\"service\":true,\"name\":\"digits\"}",
	    "{\"argv\":[\"x\"],\"service_of\":1}",
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

/* The listing written without jansson is the document api_job_json makes: every field of
 * every job, odd strings escaped, reals of every kind, tasks and cards; jobs jansson refuses
 * (a string that is not UTF-8, a time that is not finite) left out the same way. */
static void jobs_text_matches_jansson(void **state)
{
	(void)state;
	static char *argv0[] = {"/bin/sh", "-c",
				"echo \"hi\"\\n\ttab\x01 \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80"};
	static char *argv1[] = {"ok", "bad\xc3", "end"};
	Gpool__JobSpec sp[3];
	Gpool__JobInfo ji[5];
	Gpool__JobInfo *pj[5];
	Gpool__TaskPlacement tp[2];
	Gpool__TaskPlacement *ptp[2] = {&tp[0], &tp[1]};
	uint32_t cards[3] = {0, 3, 63};
	for (int i = 0; i < 3; i++)
		gpool__job_spec__init(&sp[i]);
	for (int i = 0; i < 2; i++)
		gpool__task_placement__init(&tp[i]);
	sp[0].name = "n\"ame/\x7f";
	sp[0].argv = argv0;
	sp[0].n_argv = 3;
	sp[0].ntasks = 2;
	sp[0].cpus_per_task = 4;
	sp[0].gpus_per_task = 1;
	sp[0].time_limit_sec = 3600;
	sp[0].priority = -5;
	sp[1].argv = argv1;
	sp[1].n_argv = 3;
	sp[2].name = "bad\xff";
	tp[0].rank = 0;
	tp[0].node = "h1";
	tp[0].cards = cards;
	tp[0].n_cards = 3;
	tp[1].rank = 1;
	tp[1].node = "h\xe2\x82"; /* cut UTF-8: the task is left out */
	double reals[5] = {1764770000.123456, 0, 1e21, 1.5e-7, 123456789012345678.0};
	for (int i = 0; i < 5; i++) {
		gpool__job_info__init(&ji[i]);
		pj[i] = &ji[i];
		ji[i].id = 1000000000000ULL + (uint64_t)i;
		ji[i].uid = 4000000000U;
		ji[i].user = "alice";
		ji[i].state = (Gpool__JobState)(i % 3 + 1);
		ji[i].attempt = (uint32_t)i;
		ji[i].reason = i ? "Resources" : "";
		ji[i].submit_time = reals[i];
		ji[i].start_time = reals[(i + 1) % 5];
		ji[i].end_time = reals[(i + 2) % 5];
		ji[i].energy_j = reals[(i + 3) % 5];
		ji[i].cpu_sec = reals[(i + 4) % 5];
		ji[i].exit_code = i == 1 ? -1 : 137;
		ji[i].max_rss_kb = 123456789;
		ji[i].nodelist = i == 0 ? "h1,h2" : NULL;
	}
	ji[0].spec = &sp[0];
	ji[0].tasks = ptp;
	ji[0].n_tasks = 2;
	ji[1].spec = &sp[1];
	ji[2].spec = &sp[2];	    /* not UTF-8: left out */
	ji[3].end_time = 0.0 / 0.0; /* not finite: left out */
	ji[4].cpu_sec = 1.0 / 0.0;  /* the key alone is left out */
	Gpool__JobQueryReply r = GPOOL__JOB_QUERY_REPLY__INIT;
	r.jobs = pj;
	r.n_jobs = 5;

	json_t *a = json_array();
	for (size_t i = 0; i < r.n_jobs; i++)
		json_array_append_new(a, api_job_json(r.jobs[i]));
	json_t *want = json_pack("{s:o}", "jobs", a);
	assert_int_equal(json_array_size(a), 3);
	gp_buf_t b = {0};
	assert_int_equal(api_jobs_text(&r, &b), 0);
	json_error_t e;
	json_t *got = json_loadb((const char *)b.data, b.len, 0, &e);
	if (!got)
		fail_msg("not JSON: %s: %.*s", e.text, (int)b.len, (const char *)b.data);
	if (!json_equal(got, want)) {
		char *w = json_dumps(want, JSON_COMPACT);
		fail_msg("differs:\n got %.*s\nwant %s", (int)b.len, (const char *)b.data, w);
	}
	/* reals print as jansson prints them, byte for byte */
	char *w = json_dumps(want, JSON_COMPACT);
	assert_int_equal(b.len, strlen(w));
	assert_memory_equal(b.data, w, b.len);
	free(w);
	/* an empty listing */
	r.n_jobs = 0;
	b.len = 0;
	assert_int_equal(api_jobs_text(&r, &b), 0);
	assert_int_equal(b.len, strlen("{\"jobs\":[]}"));
	assert_memory_equal(b.data, "{\"jobs\":[]}", b.len);
	gp_buf_release(&b);
	json_decref(got);
	json_decref(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(routes),
	    cmocka_unit_test(jobs_text_matches_jansson),
	    cmocka_unit_test(spec),
	    cmocka_unit_test(drain_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

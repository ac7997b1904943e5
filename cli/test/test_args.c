/* Shared operand and option helpers: job ids, signals, the option table scanner, and the
 * session's "no answer" message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lib/args.h"
#include "cli/lib/jobname.h"
#include "common/opt.h"
#include "cli/lib/session.h"

static void jobids(void **state)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	gp_error_t err;
	assert_int_equal(gp_args_jobids("42", &ids, &n, &err), 0);
	assert_int_equal(gp_args_jobids("7,8,9", &ids, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[3], 9);
	const char *bad[] = {"", "0", "x", "4x", "1,,2", "-3", "1,", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gp_args_jobids(bad[i], &ids, &n, &err), -1);
		assert_int_equal(errno, EINVAL);
	}
	assert_string_equal(err.text, "invalid job id '99999999999999999999999'");
	free(ids);
}

static void signals(void **state)
{
	int sig;
	gp_error_t err;
	assert_int_equal(gp_args_signal("TERM", &sig, &err), 0);
	assert_int_equal(sig, SIGTERM);
	assert_int_equal(gp_args_signal("sigusr1", &sig, &err), 0);
	assert_int_equal(sig, SIGUSR1);
	assert_int_equal(gp_args_signal("9", &sig, &err), 0);
	assert_int_equal(sig, 9);
	assert_int_equal(gp_args_signal("SIG", &sig, &err), -1);
	assert_int_equal(gp_args_signal("0", &sig, &err), -1);
	assert_int_equal(gp_args_signal("BOGUS", &sig, &err), -1);
	assert_string_equal(err.text, "invalid signal 'BOGUS'");
}

static int count;
static const char *last;

static int set_v(void *c, const char *a, gp_error_t *err)
{
	count++;
	return 0;
}

static int set_x(void *c, const char *a, gp_error_t *err)
{
	last = a;
	return 0;
}

static const struct gp_opt tab[] = {
    {"verbose", 'v', no_argument, NULL, "more", set_v, 0},
    {"xval", 0, required_argument, "X", "a value", set_x, 0},
};

static void option_table(void **state)
{
	gp_error_t err;
	int first;
	char *a1[] = {"p", "-vv", "--xval=3", "op", "-v", NULL};
	count = 0;
	assert_int_equal(gp_opt_parse(tab, 2, 5, a1, NULL, &first, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(last, "3");
	assert_int_equal(first, 3); /* stops at the first operand */
	char **ops;
	int nops;
	count = 0;
	char *a2[] = {"p", "one", "-v", "--xval", "4", "two", "--", "-v", NULL};
	assert_int_equal(gp_opt_parse_mixed(tab, 2, 8, a2, NULL, &ops, &nops, &err), 0);
	assert_int_equal(count, 1);
	assert_int_equal(nops, 3);
	assert_string_equal(ops[0], "one");
	assert_string_equal(ops[1], "two");
	assert_string_equal(ops[2], "-v");
	free(ops);
	char *a3[] = {"p", "--xval", NULL};
	assert_int_equal(gp_opt_parse(tab, 2, 2, a3, NULL, &first, &err), -1);
	assert_string_equal(err.text, "option '--xval' needs a value");
	char *a4[] = {"p", "--nope=1", NULL};
	assert_int_equal(gp_opt_parse(tab, 2, 2, a4, NULL, &first, &err), -1);
	assert_string_equal(err.text, "unknown option '--nope'");
	char *a5[] = {"p", "-z", NULL};
	assert_int_equal(gp_opt_parse_mixed(tab, 2, 2, a5, NULL, &ops, &nops, &err), -1);
	assert_string_equal(err.text, "unknown option '-z'");
	/* a value "--" is a value, not the end of the options */
	struct gp_opt_hit *hits;
	int nhits;
	bool dd;
	char *a6[] = {"p", "--xval", "--", "cmd", NULL};
	assert_int_equal(gp_opt_scan(tab, 2, 4, a6, &hits, &nhits, &first, &dd, &err), 0);
	assert_false(dd);
	assert_int_equal(first, 3);
	free(hits);
	char *a7[] = {"p", "-v", "--", "cmd", NULL};
	assert_int_equal(gp_opt_scan(tab, 2, 4, a7, &hits, &nhits, &first, &dd, &err), 0);
	assert_true(dd);
	free(hits);
	/* --help text comes from the table */
	char buf[1024];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	gp_opt_usage(tab, 2, f);
	fclose(f);
	assert_non_null(strstr(buf, "  -v, --verbose"));
	assert_non_null(strstr(buf, "      --xval=X"));
}

static void no_answer(void **state)
{
	/* nothing listens there: the message names the endpoint */
	struct gp_cli_common c = {NULL, "tcp://127.0.0.1:9"};
	gp_error_t err;
	unsetenv("GPOOL_CONF");
	gp_session_t *s = gp_session_create(&c, &err);
	assert_non_null(s);
	assert_string_equal(gp_session_endpoint(s), "tcp://127.0.0.1:9");
	gp_session_set_retry(s, 0);
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = &q;
	Gpool__Msg *r = gp_session_call(s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY, 200, NULL, &err);
	assert_null(r);
	if (errno == ETIMEDOUT)
		assert_string_equal(err.text, "no answer from the scheduler at 'tcp://127.0.0.1:9' "
					      "(is gschedd running?)");
	else
		print_message("munged unavailable: %s\n", err.text);
	gp_session_destroy(&s);
	/* a config that does not exist */
	struct gp_cli_common c2 = {"/nonexistent/gpool.conf", NULL};
	assert_null(gp_session_create(&c2, &err));
	assert_non_null(strstr(err.text, "cannot read config '/nonexistent/gpool.conf'"));
}

/* a name means the caller's one active job of that name, else the one finished; an array
 * once; a replica or another user's job never */
static void job_names(void **state)
{
	Gpool__JobSpec nb = GPOOL__JOB_SPEC__INIT, other = GPOOL__JOB_SPEC__INIT;
	nb.name = "nb";
	other.name = "train";
	Gpool__JobInfo j[7];
	for (int i = 0; i < 7; i++) {
		gpool__job_info__init(&j[i]);
		j[i].id = 10 + (uint64_t)i;
		j[i].spec = &nb;
		j[i].user = "ann";
		j[i].state = GPOOL__JOB_STATE__COMPLETED;
	}
	j[1].user = "bob"; /* another user's running nb */
	j[1].state = GPOOL__JOB_STATE__RUNNING;
	j[2].state = GPOOL__JOB_STATE__RUNNING; /* a replica of service 10 */
	j[2].service_of = 10;
	j[3].spec = &other;
	j[3].state = GPOOL__JOB_STATE__RUNNING;
	Gpool__JobInfo *v[] = {&j[0], &j[1], &j[2], &j[3]};
	uint64_t id = 0;
	gp_error_t err;
	assert_int_equal(gp_jobname_pick(v, 4, "nb", "ann", true, &id, &err), 0);
	assert_int_equal(id, 10);
	assert_int_equal(gp_jobname_pick(v, 4, "nb", "ann", false, &id, &err), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.text, "no job named 'nb' of user 'ann'");
	assert_int_equal(gp_jobname_pick(v, 4, "nope", "ann", true, &id, &err), -1);
	assert_int_equal(errno, ENOENT);
	/* a running nb wins over the finished one */
	j[4].state = GPOOL__JOB_STATE__PENDING;
	Gpool__JobInfo *w[] = {&j[0], &j[4]};
	assert_int_equal(gp_jobname_pick(w, 2, "nb", "ann", true, &id, &err), 0);
	assert_int_equal(id, 14);
	/* two running: ambiguous, both named */
	j[5].state = GPOOL__JOB_STATE__RUNNING;
	Gpool__JobInfo *x[] = {&j[0], &j[4], &j[5]};
	assert_int_equal(gp_jobname_pick(x, 3, "nb", "ann", true, &id, &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.text, "job name 'nb' is ambiguous: jobs 14, 15 are pending or "
				      "running (give a job id)");
	/* two finished, none running: ambiguous too */
	j[6].state = GPOOL__JOB_STATE__FAILED;
	Gpool__JobInfo *y[] = {&j[0], &j[6]};
	assert_int_equal(gp_jobname_pick(y, 2, "nb", "ann", true, &id, &err), -1);
	assert_string_equal(err.text,
			    "job name 'nb' is ambiguous: jobs 10, 16 are finished (give a job id)");
	/* an array's tasks are one job: its id, even with some tasks ended */
	j[4].array_job_id = 14;
	j[5].array_job_id = 14;
	j[6].array_job_id = 14;
	Gpool__JobInfo *z[] = {&j[4], &j[5], &j[6]};
	assert_int_equal(gp_jobname_pick(z, 3, "nb", "ann", true, &id, &err), 0);
	assert_int_equal(id, 14);
	assert_true(gp_jobname_is_name("nb"));
	assert_true(gp_jobname_is_name("my_job"));
	assert_false(gp_jobname_is_name("12_7"));
	assert_false(gp_jobname_is_name("42"));
	assert_false(gp_jobname_is_name(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(jobids),	    cmocka_unit_test(job_names), cmocka_unit_test(signals),
	    cmocka_unit_test(option_table), cmocka_unit_test(no_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A command's way through a list of schedulers (cli/lib/session.c over common/sched_client.c),
 * against real peers: two stand-in schedulers (fakesched.c: a ROUTER socket that opens and
 * seals real envelopes with this process's MUNGE credential), one a standby answering
 * ERROR_NOT_LEADER, one the leader, and an address where nobody listens. The command skips the
 * dead one, follows the standby to the leader it names (or to the next one when it names
 * none), and sends every try of a mutating request with one request id; a query carries none.
 * Skips when munged does not answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/lib/session.h"
#include "cli/test/fakesched.h"
#include "common/chunk.h"
#include "common/sched_client.h"
#include "common/config.h"
#include "common/util.h"
#include "common/xfer.h"

static char dir[] = "/tmp/gpool-failover-test.XXXXXX";
static char ep_dead[300], ep_standby[300], ep_standby2[300], ep_leader[300];
static fakesched_t *standby, *standby2, *leader;
static const char *standby_names; /* the leader the standby names */
static int leader_drops;	  /* the leader leaves this many requests unanswered */

static Gpool__Error not_leader_err = GPOOL__ERROR__INIT;
static Gpool__JobResult res0 = GPOOL__JOB_RESULT__INIT;
static Gpool__JobResult *results[] = {&res0};
static Gpool__JobControlReply jcr = GPOOL__JOB_CONTROL_REPLY__INIT;
static Gpool__JobQueryReply jqr = GPOOL__JOB_QUERY_REPLY__INIT;
static Gpool__ChunkHaveReply chr = GPOOL__CHUNK_HAVE_REPLY__INIT;
static Gpool__ChunkGetReply cgr = GPOOL__CHUNK_GET_REPLY__INIT;
static const char CHUNK[] = "the bytes of one staged chunk\n";

static void standby_handler(const Gpool__Msg *req, Gpool__Msg *rep, void *arg)
{
	not_leader_err.code = GPOOL__ERROR_CODE__ERROR_NOT_LEADER;
	not_leader_err.text = "not the leader";
	not_leader_err.leader = (char *)standby_names;
	rep->m_case = GPOOL__MSG__M_ERROR;
	rep->error = &not_leader_err;
}

/* a second standby, naming the first one */
static void standby2_handler(const Gpool__Msg *req, Gpool__Msg *rep, void *arg)
{
	static Gpool__Error e = GPOOL__ERROR__INIT;
	e.code = GPOOL__ERROR_CODE__ERROR_NOT_LEADER;
	e.text = "not the leader";
	e.leader = ep_standby;
	rep->m_case = GPOOL__MSG__M_ERROR;
	rep->error = &e;
}

static void leader_handler(const Gpool__Msg *req, Gpool__Msg *rep, void *arg)
{
	if (leader_drops > 0) {
		leader_drops--;
		return; /* no reply */
	}
	if (req->m_case == GPOOL__MSG__M_JOB_CONTROL) {
		res0.id = req->job_control->n_ids ? req->job_control->ids[0] : 0;
		jcr.results = results;
		jcr.n_results = 1;
		rep->m_case = GPOOL__MSG__M_JOB_CONTROL_REPLY;
		rep->job_control_reply = &jcr;
	} else if (req->m_case == GPOOL__MSG__M_CHUNK_HAVE) {
		rep->m_case = GPOOL__MSG__M_CHUNK_HAVE_REPLY;
		rep->chunk_have_reply = &chr;
	} else if (req->m_case == GPOOL__MSG__M_CHUNK_GET) {
		cgr.data = (ProtobufCBinaryData){sizeof(CHUNK) - 1, (uint8_t *)CHUNK};
		rep->m_case = GPOOL__MSG__M_CHUNK_GET_REPLY;
		rep->chunk_get_reply = &cgr;
	} else {
		rep->m_case = GPOOL__MSG__M_JOB_QUERY_REPLY;
		rep->job_query_reply = &jqr;
	}
}

/* A session given `list` (as --scheduler), asking once more for up to retry_ms. */
static gp_session_t *session(const char *list, int64_t retry_ms)
{
	struct gp_cli_common common = {.scheduler = list};
	gp_error_t err = {{0}};
	gp_session_t *s = gp_session_create(&common, &err);
	if (!s)
		fail_msg("session: %s", err.text);
	gp_session_set_retry(s, retry_ms);
	return s;
}

static Gpool__Msg *cancel(gp_session_t *s, uint64_t id, int timeout_ms, gp_error_t *err)
{
	uint64_t ids[1] = {id};
	Gpool__JobControl c = GPOOL__JOB_CONTROL__INIT;
	c.action = GPOOL__JOB_ACTION__JOB_CANCEL;
	c.ids = ids;
	c.n_ids = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &c;
	return gp_session_call(s, &m, GPOOL__MSG__M_JOB_CONTROL_REPLY, timeout_ms, NULL, err);
}

static void same_id(const Gpool__Msg *a, const Gpool__Msg *b)
{
	assert_int_equal(a->request_id.len, 16);
	assert_int_equal(b->request_id.len, 16);
	assert_memory_equal(a->request_id.data, b->request_id.data, 16);
}

/* dead, standby, leader: the dead one is passed within about a second, the standby names the
 * leader, the leader applies it; both saw one request id */
static void dead_then_standby_then_leader(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s, %s, %s", ep_dead, ep_standby, ep_leader);
	standby_names = ep_leader;
	int sb = fakesched_count(standby), ld = fakesched_count(leader);
	gp_session_t *s = session(list, 20000);
	gp_error_t err = {{0}};
	int64_t t0 = gp_mono_ms();
	Gpool__Msg *r = cancel(s, 7, 5000, &err);
	if (!r)
		fail_msg("cancel: %s", err.text);
	assert_true(gp_mono_ms() - t0 < 4000);
	assert_int_equal(r->job_control_reply->results[0]->id, 7);
	assert_string_equal(gp_session_endpoint(s), ep_leader);
	assert_int_equal(fakesched_count(standby), sb + 1);
	assert_int_equal(fakesched_count(leader), ld + 1);
	same_id(fakesched_request(standby, sb), fakesched_request(leader, ld));
	/* the next request of the session goes straight to the leader */
	assert_non_null(cancel(s, 8, 5000, &err));
	assert_int_equal(fakesched_count(standby), sb + 1);
	/* and a new request has a new id */
	Gpool__Msg *a = fakesched_request(leader, ld), *b = fakesched_request(leader, ld + 1);
	assert_memory_not_equal(a->request_id.data, b->request_id.data, 16);
	gp_session_destroy(&s);
}

/* a standby that knows no leader: the next of the list */
static void standby_names_nobody(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s", ep_standby, ep_leader);
	standby_names = "";
	int ld = fakesched_count(leader);
	gp_session_t *s = session(list, 20000);
	gp_error_t err = {{0}};
	Gpool__Msg *r = cancel(s, 9, 5000, &err);
	if (!r)
		fail_msg("cancel: %s", err.text);
	assert_int_equal(fakesched_count(leader), ld + 1);
	gp_session_destroy(&s);
}

/* the leader takes the request and does not answer: asked again (round the list) with the
 * same request id, which the real gschedd answers with the first answer */
static void unanswered_retried_with_same_id(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s", ep_leader, ep_standby);
	standby_names = ep_leader;
	leader_drops = 1;
	int ld = fakesched_count(leader);
	gp_session_t *s = session(list, 20000);
	gp_error_t err = {{0}};
	Gpool__Msg *r = cancel(s, 10, 1500, &err);
	if (!r)
		fail_msg("cancel: %s", err.text);
	assert_int_equal(fakesched_count(leader), ld + 2);
	same_id(fakesched_request(leader, ld), fakesched_request(leader, ld + 1));
	gp_session_destroy(&s);
}

/* a query changes nothing: no request id */
static void query_has_no_id(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s", ep_standby, ep_leader);
	standby_names = ep_leader;
	int ld = fakesched_count(leader);
	gp_session_t *s = session(list, 20000);
	gp_error_t err = {{0}};
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	assert_non_null(gp_session_job_query(s, &q, &err));
	assert_int_equal(fakesched_request(leader, ld)->request_id.len, 0);
	gp_session_destroy(&s);
}

/* only standbys and the dead: a clear error once the retry time is over */
static void no_leader_anywhere(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s", ep_dead, ep_standby);
	standby_names = "";
	gp_session_t *s = session(list, 2000);
	gp_error_t err = {{0}};
	int64_t t0 = gp_mono_ms();
	assert_null(cancel(s, 11, 1000, &err));
	assert_true(gp_mono_ms() - t0 < 8000);
	assert_true(err.text[0] != 0);
	gp_session_destroy(&s);
}

/* two standbys that name each other (a stale view of who leads): the client still gets round
 * to the leader, the third of the list */
static void standbys_naming_each_other(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s,%s", ep_standby, ep_standby2, ep_leader);
	standby_names = ep_standby2;
	int ld = fakesched_count(leader);
	gp_session_t *s = session(list, 20000);
	gp_error_t err = {{0}};
	int64_t t0 = gp_mono_ms();
	Gpool__Msg *r = cancel(s, 14, 5000, &err);
	if (!r)
		fail_msg("cancel: %s", err.text);
	assert_true(gp_mono_ms() - t0 < 3000);
	assert_int_equal(fakesched_count(leader), ld + 1);
	assert_string_equal(gp_session_endpoint(s), ep_leader);
	gp_session_destroy(&s);
}

/* gp_client_call, as ggated's discovery, gpool ckpt and the rendezvous client use it: the same
 * way through the list, from $GPOOL_SCHEDULER */
static void client_call_follows_the_list(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s,%s", ep_dead, ep_standby, ep_leader);
	standby_names = ep_leader;
	setenv("GPOOL_SCHEDULER", list, 1);
	int sb = fakesched_count(standby), ld = fakesched_count(leader);
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_CLI);
	assert_non_null(cfg);
	assert_int_equal(gp_config_load_file(cfg, NULL, &err), 0);
	gp_client_t *c = gp_client_create(cfg, &err);
	assert_non_null(c);
	assert_int_equal(gp_client_schedulers(c), 3);
	uint64_t ids[1] = {13};
	Gpool__JobControl jc = GPOOL__JOB_CONTROL__INIT;
	jc.action = GPOOL__JOB_ACTION__JOB_HOLD;
	jc.ids = ids;
	jc.n_ids = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &jc;
	Gpool__Msg *r = gp_client_call(c, &m, 5000, &err);
	if (!r)
		fail_msg("call: %s", err.text);
	assert_int_equal(r->m_case, GPOOL__MSG__M_JOB_CONTROL_REPLY);
	assert_string_equal(gp_client_endpoint(c), ep_leader);
	assert_int_equal(fakesched_count(standby), sb + 1);
	assert_int_equal(fakesched_count(leader), ld + 1);
	same_id(fakesched_request(standby, sb), fakesched_request(leader, ld));
	gp_client_destroy(&c);
	gp_config_destroy(&cfg);
	unsetenv("GPOOL_SCHEDULER");
	/* a malformed list is refused when the client is made */
	setenv("GPOOL_SCHEDULER", "tcp://a:1,,tcp://b:1", 1);
	cfg = gp_config_create(GP_CLI);
	assert_int_equal(gp_config_load_file(cfg, NULL, &err), 0);
	assert_null(gp_client_create(cfg, &err));
	assert_non_null(strstr(err.text, "empty entry"));
	gp_config_destroy(&cfg);
	unsetenv("GPOOL_SCHEDULER");
}

/* one scheduler, as before: nothing moves */
/* A pipelined chunk download (gstepd staging a job's files, gpool ckpt get) from a list whose
 * first entry is a standby: it finds the leader first (the window does not follow NOT_LEADER)
 * and gets the chunk there. Before: 'chunk download: not the leader' (seen on a 3-scheduler
 * cluster, t0374: a rank failed to start). */
static void download_finds_the_leader(void **state)
{
	char list[1024];
	snprintf(list, sizeof(list), "%s,%s", ep_standby, ep_leader);
	standby_names = ep_leader;
	setenv("GPOOL_SCHEDULER", list, 1);
	int sb = fakesched_count(standby), ld = fakesched_count(leader);
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_CLI);
	assert_int_equal(gp_config_load_file(cfg, NULL, &err), 0);
	gp_client_t *c = gp_client_create(cfg, &err);
	assert_non_null(c);
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash(CHUNK, sizeof(CHUNK) - 1, h);
	ProtobufCBinaryData ch[1] = {{GP_HASH_LEN, h}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ev[1] = {&e};
	e.path = "data.txt";
	e.mode = 0644;
	e.size = sizeof(CHUNK) - 1;
	e.chunks = ch;
	e.n_chunks = 1;
	char cache[400];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	struct gp_xfer_stats st = {0};
	if (gp_xfer_fetch_cache(c, ev, 1, cache, NULL, &st, &err) < 0)
		fail_msg("download: %s", err.text);
	assert_true(gp_chunk_has(cache, h));
	assert_int_equal(st.got_chunks, 1);
	assert_string_equal(gp_client_endpoint(c), ep_leader);
	assert_int_equal(fakesched_count(standby), sb + 1); /* the probe, followed */
	assert_int_equal(fakesched_count(leader), ld + 2);  /* the probe and the chunk */
	gp_client_destroy(&c);
	gp_config_destroy(&cfg);
	unsetenv("GPOOL_SCHEDULER");
}

static void one_scheduler_unchanged(void **state)
{
	int ld = fakesched_count(leader);
	gp_session_t *s = session(ep_leader, 0);
	gp_error_t err = {{0}};
	assert_non_null(cancel(s, 12, 5000, &err));
	assert_int_equal(fakesched_count(leader), ld + 1);
	assert_string_equal(gp_session_endpoint(s), ep_leader);
	gp_session_destroy(&s);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 77;
	snprintf(ep_dead, sizeof(ep_dead), "ipc://%s/dead", dir);
	snprintf(ep_standby, sizeof(ep_standby), "ipc://%s/standby", dir);
	snprintf(ep_standby2, sizeof(ep_standby2), "ipc://%s/standby2", dir);
	snprintf(ep_leader, sizeof(ep_leader), "ipc://%s/leader", dir);
	if (!(standby = fakesched_start(ep_standby, standby_handler, NULL)) ||
	    !(standby2 = fakesched_start(ep_standby2, standby2_handler, NULL)) ||
	    !(leader = fakesched_start(ep_leader, leader_handler, NULL))) {
		fprintf(stderr, "skip: munged or ZeroMQ not usable\n");
		fakesched_stop(&standby);
		fakesched_stop(&standby2);
		gp_rm_rf(dir);
		return 77;
	}
	char conf[400];
	snprintf(conf, sizeof(conf), "%s/gpool.conf", dir);
	FILE *f = fopen(conf, "w");
	fprintf(f, "sched_uid = %u\n", (unsigned)getuid());
	fclose(f);
	setenv("GPOOL_CONF", conf, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(dead_then_standby_then_leader),
	    cmocka_unit_test(standby_names_nobody),
	    cmocka_unit_test(unanswered_retried_with_same_id),
	    cmocka_unit_test(query_has_no_id),
	    cmocka_unit_test(no_leader_anywhere),
	    cmocka_unit_test(standbys_naming_each_other),
	    cmocka_unit_test(client_call_follows_the_list),
	    cmocka_unit_test(download_finds_the_leader),
	    cmocka_unit_test(one_scheduler_unchanged),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fakesched_stop(&standby);
	fakesched_stop(&standby2);
	fakesched_stop(&leader);
	gp_rm_rf(dir);
	return rc;
}

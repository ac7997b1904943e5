/* A mutating request applied once per request id (reqids.c) through the handler table and a
 * real ROUTER socket, as in test_files.c: a cancel, hold or scale sent again with the same id is
 * answered with the first answer and not applied again, also after the store is closed and
 * opened again (a gschedd restart); the same id from another uid is that user's own request,
 * never matched to the first user's answer. No munged needed: the envelopes are local
 * (unauthenticated). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/u64map.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/config.h"
#include "scheduler/core/core.h"
#include "scheduler/shell/plug.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/store/store_fairshare.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/shell/reqids.h"
#include "scheduler/features/service.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_reqid.h"

#define OWNER 1000
#define OTHER 2000
#define AGENT 500
#define PEER  "reqids-peer"

static struct gsched S;
static char dir[64];
static void *zctx, *dealer;
static gp_wire_t *wire;
static Gpool__Batch *got;
static uint64_t next_id = 1;

static struct job *add_job(uint64_t id, uint32_t uid)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	j->uid = uid;
	j->user = strdup(uid == OWNER ? "alice" : "mallory");
	j->name = strdup("t");
	j->state = GPOOL__JOB_STATE__PENDING;
	j->durable = true;
	j->attempt = 1;
	j->ntasks = 1;
	assert_int_equal(jobs_add(S.jobs, j), 0);
	return j;
}

static int setup(void **state)
{
	gp_error_t err;
	memset(&S, 0, sizeof(S));
	strcpy(dir, "/tmp/gp-reqids-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(S.state_dir, sizeof(S.state_dir), "%s", dir);
	S.agent_uid = AGENT;
	char ep[128];
	snprintf(ep, sizeof(ep), "ipc://%s/sock", dir);
	assert_int_equal(sched_core_init(&S, 1), 0);
	assert_int_equal(sched_core_subscribe(&S), 0); /* services */
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	S.net = net_create(ep, NULL, 8 << 20, 0, &err);
	assert_non_null(S.net);
	wire = gp_wire_create(NULL, 8 << 20);
	zctx = zmq_ctx_new();
	dealer = zmq_socket(zctx, ZMQ_DEALER);
	zmq_setsockopt(dealer, ZMQ_ROUTING_ID, PEER, strlen(PEER));
	assert_int_equal(zmq_connect(dealer, ep), 0);
	gp_batch_t b = {0};
	gp_buf_t out = {0};
	assert_int_equal(gp_wire_seal(wire, &b, &out, &err), 0);
	assert_true(zmq_send(dealer, out.data, out.len, 0) >= 0);
	gp_buf_release(&out);
	struct net_msg m;
	int64_t deadline = gp_mono_ms() + 5000;
	int rc = 0;
	while ((rc = net_recv(S.net, &m)) != 1 && gp_mono_ms() < deadline)
		usleep(1000);
	assert_int_equal(rc, 1);
	gpool__batch__free_unpacked(m.batch, NULL);
	add_job(1, OWNER);
	add_job(2, OTHER);
	return 0;
}

static int teardown(void **state)
{
	if (got)
		gpool__batch__free_unpacked(got, NULL);
	got = NULL;
	zmq_close(dealer);
	zmq_ctx_term(zctx);
	gp_wire_destroy(&wire);
	net_destroy(&S.net);
	store_destroy(&S.store);
	sched_features_release(&S);
	sched_core_release(&S);
	free(S.touched);
	free(S.subs);
	gp_rm_rf(dir);
	return 0;
}

static uint64_t send_as(uint32_t uid, Gpool__Msg *m)
{
	m->id = next_id++;
	Gpool__Msg *v[1] = {m};
	Gpool__Batch b = GPOOL__BATCH__INIT;
	b.msgs = v;
	b.n_msgs = 1;
	struct gp_sender from = {.uid = uid, .gid = uid};
	handle_batch(&S, (const uint8_t *)PEER, strlen(PEER), "test", &from, &b);
	return m->id;
}

/* The one reply that must come now, to id. */
static Gpool__Msg *reply(uint64_t id)
{
	if (got)
		gpool__batch__free_unpacked(got, NULL);
	got = NULL;
	effects_carry_out(&S);
	net_flush(S.net, true);
	zmq_pollitem_t pi = {dealer, 0, ZMQ_POLLIN, 0};
	assert_true(zmq_poll(&pi, 1, 2000) > 0);
	zmq_msg_t zm;
	zmq_msg_init(&zm);
	assert_true(zmq_msg_recv(&zm, dealer, 0) >= 0);
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err;
	got = gp_wire_open(wire, zmq_msg_data(&zm), zmq_msg_size(&zm), &from, &code, &err);
	zmq_msg_close(&zm);
	assert_non_null(got);
	assert_int_equal(got->n_msgs, 1);
	assert_int_equal(got->msgs[0]->id, id);
	return got->msgs[0];
}

static Gpool__Msg *expect(uint64_t id, Gpool__Msg__MCase want)
{
	Gpool__Msg *m = reply(id);
	if (m->m_case != want)
		fail_msg("reply %d, not %d (%s)", (int)m->m_case, (int)want,
			 m->m_case == GPOOL__MSG__M_ERROR ? m->error->text : "");
	return m;
}

static Gpool__Msg *expect_error(uint64_t id, Gpool__ErrorCode code)
{
	Gpool__Msg *m = reply(id);
	assert_int_equal(m->m_case, GPOOL__MSG__M_ERROR);
	if (m->error->code != code)
		fail_msg("error %d, not %d: %s", (int)m->error->code, (int)code, m->error->text);
	return m;
}

static const uint8_t ID_A[REQID_LEN] = "request-id-a-16";
static const uint8_t ID_B[REQID_LEN] = "request-id-b-16";

/* A JobControl of one job as uid, with request id `rid` (NULL: none); its reply. */
static Gpool__Msg *control_value_as(uint32_t uid, Gpool__JobAction action, uint64_t job,
				    int32_t value, const uint8_t *rid)
{
	uint64_t ids[1] = {job};
	Gpool__JobControl c = GPOOL__JOB_CONTROL__INIT;
	c.action = action;
	c.ids = ids;
	c.n_ids = 1;
	c.value = value;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &c;
	if (rid)
		m.request_id = (ProtobufCBinaryData){REQID_LEN, (uint8_t *)rid};
	return expect(send_as(uid, &m), GPOOL__MSG__M_JOB_CONTROL_REPLY);
}

static Gpool__Msg *control_as(uint32_t uid, Gpool__JobAction action, uint64_t job,
			      const uint8_t *rid)
{
	return control_value_as(uid, action, job, 0, rid);
}

static Gpool__ErrorCode code_of(const Gpool__Msg *m)
{
	assert_int_equal(m->job_control_reply->n_results, 1);
	return m->job_control_reply->results[0]->code;
}

/* Without an id, a second cancel is a second request: the job has ended, it says so. */
static void no_id_applies_each_time(void **state)
{
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, NULL)), 0);
	assert_int_equal(jobs_get(S.jobs, 1)->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, NULL)),
			 GPOOL__ERROR_CODE__ERROR_STATE);
}

/* A cancel retried with its id gets the first answer (done), not "already ended". */
static void repeated_cancel_answered_once(void **state)
{
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_A)), 0);
	assert_int_equal(jobs_get(S.jobs, 1)->state, GPOOL__JOB_STATE__CANCELLED);
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_A)), 0);
	assert_int_equal(store_reqid_count(S.store), 1);
	/* another id is another request */
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_B)),
			 GPOOL__ERROR_CODE__ERROR_STATE);
}

/* hold (id A), release (id B), hold again with id A: the retry is not applied, the job stays
 * released */
static void repeated_hold_applied_once(void **state)
{
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_HOLD, 1, ID_A)), 0);
	assert_true(jobs_get(S.jobs, 1)->hold);
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_RELEASE, 1, ID_B)), 0);
	assert_false(jobs_get(S.jobs, 1)->hold);
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_HOLD, 1, ID_A)), 0);
	assert_false(jobs_get(S.jobs, 1)->hold);
}

/* The kept answers outlive the store being closed and opened again (a restart). */
static void kept_over_a_restart(void **state)
{
	gp_error_t err;
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_HOLD, 1, ID_A)), 0);
	store_destroy(&S.store); /* commits the open transaction */
	assert_non_null(S.store = store_create(dir, "off", 0, &err));
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_RELEASE, 1, ID_B)), 0);
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_HOLD, 1, ID_A)), 0);
	assert_false(jobs_get(S.jobs, 1)->hold);
	assert_int_equal(store_reqid_count(S.store), 2);
}

/* Attack: another user replays the owner's request ids (on the owner's job, and on their own):
 * each is that user's own request, judged afresh, never answered with the owner's result. */
static void another_uid_is_not_matched(void **state)
{
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_A)), 0);
	assert_int_equal(code_of(control_as(OTHER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_A)),
			 GPOOL__ERROR_CODE__ERROR_PERMISSION);
	assert_int_equal(jobs_get(S.jobs, 2)->state, GPOOL__JOB_STATE__PENDING);
	/* the owner's id on the other user's own job: applied to it, the owner's answer unused */
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_HOLD, 1, ID_B)),
			 GPOOL__ERROR_CODE__ERROR_STATE);
	assert_int_equal(code_of(control_as(OTHER, GPOOL__JOB_ACTION__JOB_HOLD, 2, ID_B)), 0);
	assert_true(jobs_get(S.jobs, 2)->hold);
	/* and the owner's retry still gets the owner's answer */
	assert_int_equal(code_of(control_as(OWNER, GPOOL__JOB_ACTION__JOB_CANCEL, 1, ID_A)), 0);
}

/* A service of the owner with `replicas` replicas (as test_service.c makes one). */
static struct job *add_service(uint64_t id, uint32_t replicas)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	j->uid = OWNER;
	j->user = strdup("alice");
	j->name = strdup("web");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->submit_time = gp_now();
	j->cpus_per_task = 1;
	j->ntasks = 1;
	char *argv[] = {"serve"};
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.ntasks = 1;
	sp.cpus_per_task = 1;
	sp.service = true;
	sp.replicas = replicas;
	uint8_t buf[256];
	size_t len = gpool__job_spec__pack(&sp, buf);
	assert_int_equal(service_submitted(&S, j, &sp), 0);
	assert_int_equal(jobs_add(S.jobs, j), 0);
	assert_int_equal(store_job_insert(S.store, j, buf, len, NULL), 0);
	j->durable = true;
	return j;
}

static uint32_t replicas_wanted(uint64_t id)
{
	Gpool__JobSpec *sp = store_job_spec(S.store, id);
	assert_non_null(sp);
	uint32_t n = sp->replicas;
	gpool__job_spec__free_unpacked(sp, NULL);
	return n;
}

/* scale to 1 (id A), to 3 (id B), to 1 again with id A: the retry is not applied, 3 stay */
static void repeated_scale_applied_once(void **state)
{
	add_service(10, 2);
	assert_int_equal(
	    code_of(control_value_as(OWNER, GPOOL__JOB_ACTION__JOB_SCALE, 10, 1, ID_A)), 0);
	assert_int_equal(replicas_wanted(10), 1);
	assert_int_equal(
	    code_of(control_value_as(OWNER, GPOOL__JOB_ACTION__JOB_SCALE, 10, 3, ID_B)), 0);
	assert_int_equal(replicas_wanted(10), 3);
	assert_int_equal(
	    code_of(control_value_as(OWNER, GPOOL__JOB_ACTION__JOB_SCALE, 10, 1, ID_A)), 0);
	assert_int_equal(replicas_wanted(10), 3);
}

/* A ShareSet of user's share as uid, with request id rid; its reply. */
static Gpool__Msg *share_as(uint32_t uid, const char *user, double share, const uint8_t *rid)
{
	Gpool__ShareSet c = GPOOL__SHARE_SET__INIT;
	c.user = (char *)user;
	c.set_share = 1;
	c.share = share;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SHARE_SET;
	m.share_set = &c;
	if (rid)
		m.request_id = (ProtobufCBinaryData){REQID_LEN, (uint8_t *)rid};
	return reply(send_as(uid, &m));
}

static double share_of(fairshare_t *f, const char *user)
{
	size_t n;
	const struct fs_user_view *v = fairshare_users(f, gp_now(), &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, user))
			return v[i].share;
	return -1;
}

/* gpool share set: root sets alice's share to 0.5 (id A), then 3 (id B); A sent again gets its
 * first answer and is not applied (3 stays). Another user is refused, with the reason, and
 * nothing changes; share_admins lets a named user in. The change is in the store: a restarted
 * scheduler (a new fair-share state on the reopened store) has it. */
static void share_set_applied_once(void **state)
{
	gp_error_t err;
	assert_non_null(S.cfg = gp_config_create(GP_SCHED));
	S.sched_uid = AGENT;
	assert_non_null(S.fairshare = fairshare_create());
	assert_int_equal(fairshare_attach_store(S.fairshare, store_db(S.store)), 0);
	Gpool__Msg *m = share_as(0, "alice", 0.5, ID_A);
	assert_int_equal(m->m_case, GPOOL__MSG__M_SHARE_SET_REPLY);
	assert_true(m->share_set_reply->user->share == 0.5);
	assert_true(m->share_set_reply->user->admin_share);
	m = share_as(0, "alice", 3, ID_B);
	assert_true(m->share_set_reply->user->share == 3);
	m = share_as(0, "alice", 0.5, ID_A); /* the retry: the first answer */
	assert_int_equal(m->m_case, GPOOL__MSG__M_SHARE_SET_REPLY);
	assert_true(m->share_set_reply->user->share == 0.5);
	assert_true(share_of(S.fairshare, "alice") == 3);
	/* attack: a user who is no administrator, with and without a replayed id */
	m = share_as(OTHER, "alice", 100, ID_A);
	assert_int_equal(m->m_case, GPOOL__MSG__M_ERROR);
	assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_PERMISSION);
	assert_non_null(strstr(m->error->text, "permission denied"));
	m = share_as(OTHER, "mallory", 100, NULL);
	assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_PERMISSION);
	assert_true(share_of(S.fairshare, "alice") == 3);
	assert_true(share_of(S.fairshare, "mallory") < 0 || share_of(S.fairshare, "mallory") == 1);
	/* sched_uid is an administrator; a uid share_admins names is one */
	m = share_as(AGENT, "alice", 2, NULL);
	assert_int_equal(m->m_case, GPOOL__MSG__M_SHARE_SET_REPLY);
	char uid[16];
	snprintf(uid, sizeof(uid), "%u", OTHER);
	assert_int_equal(gp_config_set(S.cfg, "share_admins", uid, &err), 0);
	m = share_as(OTHER, "alice", 4, NULL);
	assert_int_equal(m->m_case, GPOOL__MSG__M_SHARE_SET_REPLY);
	/* bad values are refused with the reason */
	m = share_as(0, "alice", -1, NULL);
	assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_INVALID);
	m = share_as(0, "*", 2, NULL);
	assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_INVALID);
	m = share_as(0, "a,b", 2, NULL);
	assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_INVALID);
	assert_true(share_of(S.fairshare, "alice") == 4);
	/* a restart: the store closed (committed) and opened again */
	fairshare_destroy(&S.fairshare);
	store_destroy(&S.store);
	assert_non_null(S.store = store_create(dir, "off", 0, &err));
	assert_non_null(S.fairshare = fairshare_create());
	assert_int_equal(fairshare_attach_store(S.fairshare, store_db(S.store)), 0);
	assert_true(share_of(S.fairshare, "alice") == 4);
	m = share_as(0, "alice", 0.5, ID_A); /* still answered, still not applied */
	assert_true(m->share_set_reply->user->share == 0.5);
	assert_true(share_of(S.fairshare, "alice") == 4);
	gp_config_destroy(&S.cfg);
}

/* An id of another length is refused, not looked up. */
static void malformed_id_refused(void **state)
{
	uint64_t ids[1] = {1};
	Gpool__JobControl c = GPOOL__JOB_CONTROL__INIT;
	c.action = GPOOL__JOB_ACTION__JOB_HOLD;
	c.ids = ids;
	c.n_ids = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &c;
	m.request_id = (ProtobufCBinaryData){3, (uint8_t *)"abc"};
	expect_error(send_as(OWNER, &m), GPOOL__ERROR_CODE__ERROR_INVALID);
	assert_false(jobs_get(S.jobs, 1)->hold);
}

/* The kept ids are bounded: the oldest go first. */
static void pruned_oldest_first(void **state)
{
	uint8_t id[REQID_LEN] = {0};
	for (int i = 0; i < 10; i++) {
		id[0] = (uint8_t)i;
		assert_int_equal(store_reqid_put(S.store, OWNER, id, REQID_LEN,
						 (const uint8_t *)"x", 1, 1000.0 + i),
				 0);
	}
	assert_int_equal(store_reqid_prune(S.store, 1003.0, 100), 0);
	assert_int_equal(store_reqid_count(S.store), 7);
	assert_int_equal(store_reqid_prune(S.store, 0, 4), 0);
	assert_int_equal(store_reqid_count(S.store), 4);
	uint8_t *b;
	size_t n;
	id[0] = 9;
	assert_int_equal(store_reqid_get(S.store, OWNER, id, REQID_LEN, &b, &n), 1);
	free(b);
	id[0] = 5;
	assert_int_equal(store_reqid_get(S.store, OWNER, id, REQID_LEN, &b, &n), 0);
	assert_int_equal(
	    store_reqid_get(S.store, OTHER, (uint8_t[REQID_LEN]){9}, REQID_LEN, &b, &n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(no_id_applies_each_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(repeated_cancel_answered_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(repeated_hold_applied_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(kept_over_a_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(another_uid_is_not_matched, setup, teardown),
	    cmocka_unit_test_setup_teardown(repeated_scale_applied_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(malformed_id_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(pruned_oldest_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(share_set_applied_once, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The rendezvous store (rdv.c) through the handler table and a real ROUTER socket: requests go
 * in through handle_batch() with the sender's uid, replies come back over ipc to a DEALER as
 * the ranks would read them. Bounds, ownership, fence counting, long polls and their timeout,
 * and the end of an attempt. No munged needed: the envelopes are local (unauthenticated). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "scheduler/core/core.h"
#include "scheduler/shell/plug.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/rdv.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_rdv.h"
#include "common/rdv_msg.h"
#include "common/u64map.h"
#include "common/util.h"
#include "common/wire.h"

#define OWNER 1000
#define OTHER 2000
#define PEER  "rank-peer"

static struct gsched S;
static char dir[64];
static void *zctx, *dealer;
static gp_wire_t *wire;	  /* the DEALER's side: local envelopes */
static Gpool__Batch *got; /* the last batch received */
static uint64_t next_id = 1;

static int setup(void **state)
{
	gp_error_t err;
	memset(&S, 0, sizeof(S));
	strcpy(dir, "/tmp/gp-rdv-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char ep[128];
	snprintf(ep, sizeof(ep), "ipc://%s/sock", dir);
	assert_int_equal(sched_core_init(&S, 1), 0);
	S.rdv = rdv_create();
	assert_int_equal(sched_core_subscribe(&S), 0);
	S.net = net_create(ep, NULL, 1 << 20, 0, &err);
	assert_non_null(S.net);
	assert_non_null(S.rdv);
	wire = gp_wire_create(NULL, 1 << 20);
	zctx = zmq_ctx_new();
	dealer = zmq_socket(zctx, ZMQ_DEALER);
	zmq_setsockopt(dealer, ZMQ_ROUTING_ID, PEER, strlen(PEER));
	assert_int_equal(zmq_connect(dealer, ep), 0);
	/* one hello, so that the ROUTER knows the peer before it must route to it */
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
	rdv_destroy(&S.rdv);
	net_destroy(&S.net);
	sched_features_release(&S);
	sched_core_release(&S);
	gp_rm_rf(dir);
	return 0;
}

static struct job *add_job(uint64_t id, uint32_t ntasks, Gpool__JobState state)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	j->uid = OWNER;
	j->user = strdup("alice");
	j->name = strdup("t");
	j->state = state;
	j->attempt = 1;
	j->ntasks = ntasks;
	assert_int_equal(jobs_add(S.jobs, j), 0);
	return j;
}

/* Send one request as uid; returns its id. */
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

static uint64_t put_as(uint32_t uid, uint64_t job, uint32_t attempt, uint32_t rank, const char *key,
		       const void *val, size_t len)
{
	Gpool__RdvPut p;
	Gpool__Msg m;
	gp_rdv_put_msg(&m, &p, job, attempt, rank, key, val, len);
	return send_as(uid, &m);
}

static uint64_t get_as(uint32_t uid, uint64_t job, uint32_t attempt, const char *key,
		       uint32_t wait_ms)
{
	Gpool__RdvGet g = GPOOL__RDV_GET__INIT;
	g.job_id = job;
	g.attempt = attempt;
	g.key = (char *)key;
	g.wait_ms = wait_ms;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_RDV_GET;
	m.rdv_get = &g;
	return send_as(uid, &m);
}

static uint64_t fence_as(uint32_t uid, uint64_t job, uint32_t rank, const char *name, uint32_t size,
			 uint32_t wait_ms)
{
	Gpool__RdvFence f = GPOOL__RDV_FENCE__INIT;
	f.job_id = job;
	f.attempt = 1;
	f.rank = rank;
	f.name = (char *)name;
	f.size = size;
	f.wait_ms = wait_ms;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_RDV_FENCE;
	m.rdv_fence = &f;
	return send_as(uid, &m);
}

/* Flush the scheduler's outboxes (with_durable: as after a commit, the replies held for it as
 * well) and read what reaches the DEALER within timeout_ms: the number of messages (in `got`). */
static size_t replies_flushed(int timeout_ms, bool with_durable)
{
	if (got)
		gpool__batch__free_unpacked(got, NULL);
	got = NULL;
	effects_carry_out(&S);
	net_flush(S.net, with_durable);
	zmq_pollitem_t pi = {dealer, 0, ZMQ_POLLIN, 0};
	if (zmq_poll(&pi, 1, timeout_ms) <= 0)
		return 0;
	zmq_msg_t zm;
	zmq_msg_init(&zm);
	assert_true(zmq_msg_recv(&zm, dealer, 0) >= 0);
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err;
	got = gp_wire_open(wire, zmq_msg_data(&zm), zmq_msg_size(&zm), &from, &code, &err);
	zmq_msg_close(&zm);
	assert_non_null(got);
	return got->n_msgs;
}

static size_t replies(int timeout_ms)
{
	return replies_flushed(timeout_ms, true);
}

/* The reply to request id among `got`. */
static Gpool__Msg *reply_to(uint64_t id)
{
	for (size_t i = 0; got && i < got->n_msgs; i++)
		if (got->msgs[i]->id == id)
			return got->msgs[i];
	fail_msg("no reply to request %llu", (unsigned long long)id);
	return NULL;
}

/* The one reply that must come now, to id. */
static Gpool__Msg *one_reply(uint64_t id)
{
	assert_int_equal(replies(1000), 1);
	return reply_to(id);
}

static void expect_error(uint64_t id, Gpool__ErrorCode code)
{
	Gpool__Msg *m = one_reply(id);
	assert_int_equal(m->m_case, GPOOL__MSG__M_ERROR);
	if (m->error->code != code)
		fail_msg("error %d (%s), wanted %d", m->error->code, m->error->text, code);
	/* lowercase, no full stop */
	assert_true(m->error->text[0] < 'A' || m->error->text[0] > 'Z');
	assert_true(m->error->text[strlen(m->error->text) - 1] != '.');
}

static void expect_put_ok(uint64_t id)
{
	Gpool__Msg *m = one_reply(id);
	if (m->m_case != GPOOL__MSG__M_RDV_PUT_REPLY)
		fail_msg("put refused: %s",
			 m->m_case == GPOOL__MSG__M_ERROR ? m->error->text : "?");
}

static void put_then_get(void **state)
{
	add_job(7, 3, GPOOL__JOB_STATE__RUNNING);
	expect_put_ok(put_as(OWNER, 7, 1, 0, "addr.0", "10.0.0.1:5000", 13));
	Gpool__Msg *m = one_reply(get_as(OWNER, 7, 1, "addr.0", 0));
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_true(m->rdv_get_reply->found);
	assert_int_equal(m->rdv_get_reply->rank, 0);
	assert_int_equal(m->rdv_get_reply->value.len, 13);
	assert_memory_equal(m->rdv_get_reply->value.data, "10.0.0.1:5000", 13);
	/* a missing key without a wait: not found, at once */
	m = one_reply(get_as(OWNER, 7, 1, "addr.1", 0));
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_false(m->rdv_get_reply->found);
	/* the rank that put a key replaces its value; another rank may not */
	expect_put_ok(put_as(OWNER, 7, 1, 0, "addr.0", "x", 1));
	m = one_reply(get_as(OWNER, 7, 1, "addr.0", 0));
	assert_int_equal(m->rdv_get_reply->value.len, 1);
	expect_error(put_as(OWNER, 7, 1, 2, "addr.0", "y", 1), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	/* an empty value is a value */
	expect_put_ok(put_as(OWNER, 7, 1, 1, "empty", "", 0));
	m = one_reply(get_as(OWNER, 7, 1, "empty", 0));
	assert_true(m->rdv_get_reply->found);
	assert_int_equal(m->rdv_get_reply->value.len, 0);
	assert_int_equal(rdv_nstores(S.rdv), 1);
}

static void bounds(void **state)
{
	add_job(8, 3, GPOOL__JOB_STATE__RUNNING);
	char key[RDV_KEY_MAX + 2];
	memset(key, 'k', sizeof(key));
	key[RDV_KEY_MAX + 1] = '\0';
	expect_error(put_as(OWNER, 8, 1, 0, key, "v", 1), GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	expect_error(get_as(OWNER, 8, 1, key, 0), GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	key[RDV_KEY_MAX] = '\0';
	expect_put_ok(put_as(OWNER, 8, 1, 0, key, "v", 1));
	expect_error(put_as(OWNER, 8, 1, 0, "", "v", 1), GPOOL__ERROR_CODE__ERROR_INVALID);
	uint8_t *big = calloc(1, RDV_VAL_MAX + 1);
	expect_error(put_as(OWNER, 8, 1, 0, "big", big, RDV_VAL_MAX + 1),
		     GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	expect_put_ok(put_as(OWNER, 8, 1, 0, "big", big, RDV_VAL_MAX));
	/* rank out of range */
	expect_error(put_as(OWNER, 8, 1, 3, "r3", "v", 1), GPOOL__ERROR_CODE__ERROR_INVALID);
	/* at most 4 x size + 16 keys: 28 for 3 ranks, two are there */
	char k[32];
	for (int i = 0; i < 26; i++) {
		snprintf(k, sizeof(k), "n.%d", i);
		expect_put_ok(put_as(OWNER, 8, 1, 1, k, "v", 1));
	}
	expect_error(put_as(OWNER, 8, 1, 1, "one-too-many", "v", 1),
		     GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	/* replacing a key is not a new key */
	expect_put_ok(put_as(OWNER, 8, 1, 1, "n.0", "w", 1));

	/* bytes: one rank's job holds 1 MiB + 256 KiB; 64 KiB values fill it before 20 keys */
	add_job(9, 1, GPOOL__JOB_STATE__RUNNING);
	size_t before = rdv_bytes(S.rdv);
	int stored = 0;
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "b%02d", i);
		uint64_t id = put_as(OWNER, 9, 1, 0, k, big, RDV_VAL_MAX);
		Gpool__Msg *m = one_reply(id);
		if (m->m_case == GPOOL__MSG__M_RDV_PUT_REPLY) {
			stored++;
			continue;
		}
		assert_int_equal(m->m_case, GPOOL__MSG__M_ERROR);
		assert_int_equal(m->error->code, GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
		break;
	}
	assert_int_equal(stored, 19);
	assert_true(rdv_bytes(S.rdv) - before <= (1u << 20) + (256u << 10));
	free(big);
}

static void owner_state_attempt(void **state)
{
	struct job *j = add_job(10, 2, GPOOL__JOB_STATE__RUNNING);
	expect_put_ok(put_as(OWNER, 10, 1, 0, "secret", "s3cr3t", 6));
	/* another user can neither read nor write nor fence */
	expect_error(get_as(OTHER, 10, 1, "secret", 0), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	expect_error(put_as(OTHER, 10, 1, 1, "k", "v", 1), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	expect_error(fence_as(OTHER, 10, 1, "f", 2, 0), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	/* root may */
	Gpool__Msg *m = one_reply(get_as(0, 10, 1, "secret", 0));
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_true(m->rdv_get_reply->found);
	/* unknown job, wrong attempt, a job not running */
	expect_error(get_as(OWNER, 999, 1, "secret", 0), GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	expect_error(get_as(OWNER, 10, 2, "secret", 0), GPOOL__ERROR_CODE__ERROR_STATE);
	expect_error(get_as(OWNER, 10, 0, "secret", 0), GPOOL__ERROR_CODE__ERROR_STATE);
	add_job(11, 2, GPOOL__JOB_STATE__PENDING);
	expect_error(put_as(OWNER, 11, 1, 0, "k", "v", 1), GPOOL__ERROR_CODE__ERROR_STATE);
	j->state = GPOOL__JOB_STATE__COMPLETING;
	expect_error(get_as(OWNER, 10, 1, "secret", 0), GPOOL__ERROR_CODE__ERROR_STATE);
	/* a next attempt starts from an empty store */
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->attempt = 2;
	m = one_reply(get_as(OWNER, 10, 2, "secret", 0));
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_false(m->rdv_get_reply->found);
}

static void fence_counts_distinct_ranks(void **state)
{
	add_job(12, 3, GPOOL__JOB_STATE__RUNNING);
	uint64_t a = fence_as(OWNER, 12, 0, "f1", 3, 5000);
	assert_int_equal(replies(100), 0); /* held */
	/* rank 0 again (a retry): still one rank */
	uint64_t a2 = fence_as(OWNER, 12, 0, "f1", 3, 5000);
	assert_int_equal(replies(100), 0);
	Gpool__Msg *m = one_reply(fence_as(OWNER, 12, 1, "f1", 3, 0));
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_FENCE_REPLY);
	assert_false(m->rdv_fence_reply->done);
	assert_int_equal(m->rdv_fence_reply->entered, 2);
	/* every entrant must say the same size, within the job's */
	expect_error(fence_as(OWNER, 12, 2, "f1", 2, 0), GPOOL__ERROR_CODE__ERROR_INVALID);
	expect_error(fence_as(OWNER, 12, 2, "f2", 4, 0), GPOOL__ERROR_CODE__ERROR_INVALID);
	expect_error(fence_as(OWNER, 12, 2, "f2", 0, 0), GPOOL__ERROR_CODE__ERROR_INVALID);
	expect_error(fence_as(OWNER, 12, 3, "f1", 3, 0), GPOOL__ERROR_CODE__ERROR_INVALID);
	/* the third rank completes it: every held entrant hears so */
	uint64_t c = fence_as(OWNER, 12, 2, "f1", 3, 5000);
	assert_int_equal(replies(1000), 3);
	uint64_t ids[] = {a, a2, c};
	for (int i = 0; i < 3; i++) {
		m = reply_to(ids[i]);
		assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_FENCE_REPLY);
		assert_true(m->rdv_fence_reply->done);
		assert_int_equal(m->rdv_fence_reply->entered, 3);
	}
	/* a completed fence stays completed (a late retry does not hang) */
	m = one_reply(fence_as(OWNER, 12, 1, "f1", 3, 5000));
	assert_true(m->rdv_fence_reply->done);
	/* a fence of a subset: any 2 of the ranks */
	m = one_reply(fence_as(OWNER, 12, 2, "pair", 2, 0));
	assert_false(m->rdv_fence_reply->done);
	m = one_reply(fence_as(OWNER, 12, 0, "pair", 2, 0));
	assert_true(m->rdv_fence_reply->done);
}

static int keep_nothing(void *arg, const void *cs, size_t len, gp_error_t *err)
{
	return 0;
}
static void committed(void *arg)
{
}
static int count_row(void *arg, const struct store_rdv_row *row)
{
	(*(int *)arg)++;
	return 0;
}
static int rdv_rows(void)
{
	int n = 0;
	assert_int_equal(store_rdv_each(S.store, count_row, &n), 0);
	return n;
}
static void commit(void)
{
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), 0);
	S.txn_first_ms = 0;
}

/* With the state replicated (standby schedulers) a put and a fence entry are rows of jobs.db,
 * replied to once committed; a scheduler that takes the lead starts from the rows with the
 * rendezvous of the jobs still running: the key is there, the fence counts the rank that
 * entered it before, and the rows of an attempt that ended are forgotten. */
static void replicated_rendezvous_comes_back(void **state)
{
	gp_error_t err;
	assert_non_null(S.store = store_create(dir, "off", 0, &err));
	assert_int_equal(store_set_replication(S.store, keep_nothing, committed, NULL), 0);
	add_job(21, 2, GPOOL__JOB_STATE__RUNNING);
	struct job *ended = add_job(22, 2, GPOOL__JOB_STATE__RUNNING);
	uint64_t p = put_as(OWNER, 21, 1, 0, "addr.0", "abc", 3);
	uint64_t f = fence_as(OWNER, 21, 0, "f1", 2, 0);
	uint64_t p2 = put_as(OWNER, 22, 1, 1, "k", "v", 1);
	assert_int_equal(replies_flushed(100, false), 0); /* held for the commit */
	assert_int_equal(rdv_rows(), 3);
	commit();
	assert_int_equal(replies(1000), 3);
	assert_int_equal(reply_to(p)->m_case, GPOOL__MSG__M_RDV_PUT_REPLY);
	assert_int_equal(reply_to(p2)->m_case, GPOOL__MSG__M_RDV_PUT_REPLY);
	assert_int_equal(reply_to(f)->rdv_fence_reply->entered, 1);

	/* the new leader: an empty rendezvous, and job 22's attempt has ended meanwhile */
	ended->state = GPOOL__JOB_STATE__COMPLETED;
	rdv_destroy(&S.rdv);
	assert_non_null(S.rdv = rdv_create());
	assert_int_equal(rdv_restore(&S), 0);
	assert_int_equal(rdv_nstores(S.rdv), 1);
	commit();
	assert_int_equal(rdv_rows(), 2);
	Gpool__Msg *m = one_reply(get_as(OWNER, 21, 1, "addr.0", 0));
	assert_true(m->rdv_get_reply->found);
	assert_int_equal(m->rdv_get_reply->rank, 0);
	assert_int_equal(m->rdv_get_reply->value.len, 3);
	assert_memory_equal(m->rdv_get_reply->value.data, "abc", 3);
	/* rank 0 asks again (its reply was lost with the old leader): still one rank in */
	m = one_reply(fence_as(OWNER, 21, 0, "f1", 2, 0));
	assert_int_equal(m->rdv_fence_reply->entered, 1);
	assert_false(m->rdv_fence_reply->done);
	/* rank 1 completes it: told once committed */
	uint64_t f1 = fence_as(OWNER, 21, 1, "f1", 2, 0);
	assert_int_equal(replies_flushed(100, false), 0);
	commit();
	m = one_reply(f1);
	assert_true(m->rdv_fence_reply->done);
	assert_int_equal(m->rdv_fence_reply->entered, 2);
	/* the attempt stops: its rows go */
	rdv_job_stopped(&S, jobs_get(S.jobs, 21));
	commit();
	assert_int_equal(rdv_rows(), 0);
	store_destroy(&S.store);
}

static void long_poll(void **state)
{
	add_job(13, 2, GPOOL__JOB_STATE__RUNNING);
	/* a get held until the key is put */
	uint64_t g = get_as(OWNER, 13, 1, "addr.1", 5000);
	assert_int_equal(replies(100), 0);
	uint64_t p = put_as(OWNER, 13, 1, 1, "addr.1", "hello", 5);
	assert_int_equal(replies(1000), 2);
	assert_int_equal(reply_to(p)->m_case, GPOOL__MSG__M_RDV_PUT_REPLY);
	Gpool__Msg *m = reply_to(g);
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_true(m->rdv_get_reply->found);
	assert_memory_equal(m->rdv_get_reply->value.data, "hello", 5);
	/* a get whose wait runs out: a not-found reply, not silence, not an error */
	int64_t t0 = gp_mono_ms();
	g = get_as(OWNER, 13, 1, "never", 200);
	uint64_t f = fence_as(OWNER, 13, 0, "lonely", 2, 200);
	assert_int_equal(replies(50), 0);
	rdv_tick(&S);
	assert_int_equal(replies(50), 0); /* not yet */
	usleep(250 * 1000);
	rdv_tick(&S);
	assert_int_equal(replies(1000), 2);
	assert_true(gp_mono_ms() - t0 >= 200);
	m = reply_to(g);
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_GET_REPLY);
	assert_false(m->rdv_get_reply->found);
	m = reply_to(f);
	assert_int_equal(m->m_case, GPOOL__MSG__M_RDV_FENCE_REPLY);
	assert_false(m->rdv_fence_reply->done);
	assert_int_equal(m->rdv_fence_reply->entered, 1);
	/* the rank that timed out is still counted: the other completes the fence */
	m = one_reply(fence_as(OWNER, 13, 1, "lonely", 2, 0));
	assert_true(m->rdv_fence_reply->done);
}

static void attempt_stops(void **state)
{
	struct job *j = add_job(14, 2, GPOOL__JOB_STATE__RUNNING);
	expect_put_ok(put_as(OWNER, 14, 1, 0, "addr.0", "a", 1));
	uint64_t g = get_as(OWNER, 14, 1, "addr.1", 5000);
	uint64_t f = fence_as(OWNER, 14, 0, "f", 2, 5000);
	assert_int_equal(replies(100), 0);
	assert_int_equal(rdv_nstores(S.rdv), 1);
	assert_true(rdv_bytes(S.rdv) > 0);
	j->state = GPOOL__JOB_STATE__COMPLETING;
	rdv_job_stopped(&S, j);
	assert_int_equal(replies(1000), 2);
	assert_int_equal(reply_to(g)->m_case, GPOOL__MSG__M_ERROR);
	assert_int_equal(reply_to(g)->error->code, GPOOL__ERROR_CODE__ERROR_STATE);
	assert_int_equal(reply_to(f)->error->code, GPOOL__ERROR_CODE__ERROR_STATE);
	assert_int_equal(rdv_nstores(S.rdv), 0);
	assert_int_equal(rdv_bytes(S.rdv), 0);
	/* no held request is left to expire */
	usleep(10 * 1000);
	rdv_tick(&S);
	assert_int_equal(replies(100), 0);
	/* stopping a job without a store is harmless */
	rdv_job_stopped(&S, j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(put_then_get, setup, teardown),
	    cmocka_unit_test_setup_teardown(bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(owner_state_attempt, setup, teardown),
	    cmocka_unit_test_setup_teardown(fence_counts_distinct_ranks, setup, teardown),
	    cmocka_unit_test_setup_teardown(long_poll, setup, teardown),
	    cmocka_unit_test_setup_teardown(attempt_stops, setup, teardown),
	    cmocka_unit_test_setup_teardown(replicated_rendezvous_comes_back, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The agent's peer server (worker/agent/peer.c) and the chain fetch (common/xfer.c) against each
 * other, with real ZeroMQ sockets on loopback and the real munged: chunks come as attachments
 * and are checked by hash; a request for a chunk the peer lacks is held until it lands; a
 * damaged chunk from the peer is refused and fetched from the other source instead; a peer
 * that does not answer is given up. A second peer server stands in for gschedd (it speaks the
 * same ChunkGet). Skips when munged is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/agent/agent.h"
#include "common/auth.h"
#include "common/chunk.h"
#include "common/sched_client.h"
#include "common/util.h"
#include "common/xfer.h"
#include "worker/agent/witness.h"

#define NCHUNK 5

struct node {
	struct agent a;
	char cache[4200];
	char ep[300];
};

static void *zctx;
static char top[64];
static struct node up, src;	     /* the upstream peer, the "scheduler" */
static char self_cache[4200];	     /* the asker's cache */
static uint8_t data[NCHUNK][100000]; /* NCHUNK one-chunk files */
static Gpool__StageEntry entry[NCHUNK];
static Gpool__StageEntry *ents[NCHUNK];
static uint8_t hashes[NCHUNK][GP_HASH_LEN];
static ProtobufCBinaryData hb[NCHUNK][1];

static int start_node(struct node *n, const char *name, int port)
{
	char p[16];
	snprintf(n->a.state_dir, sizeof(n->a.state_dir), "%s/%s", top, name);
	snprintf(n->cache, sizeof(n->cache), "%s/cache", n->a.state_dir);
	snprintf(n->a.addr, sizeof(n->a.addr), "127.0.0.1");
	snprintf(p, sizeof(p), "%d", port);
	gp_error_t err;
	n->a.zctx = zctx;
	if (!(n->a.cfg = gp_config_create(GP_WORKER)) ||
	    gp_config_set(n->a.cfg, "peer_port", p, &err) < 0 || gp_mkdir_p(n->cache, 0700) < 0)
		return -1;
	n->a.peer = peer_create(&n->a);
	if (!n->a.peer || !*peer_endpoint(n->a.peer))
		return -1;
	snprintf(n->ep, sizeof(n->ep), "%s", peer_endpoint(n->a.peer));
	return 0;
}

static void stop_node(struct node *n)
{
	peer_destroy(&n->a.peer);
	gp_config_destroy(&n->a.cfg);
}

static int setup(void **state)
{
	gp_error_t err;
	gp_auth_t *au = gp_auth_create(NULL, &err);
	char *cred = NULL;
	if (!au || gp_auth_encode(au, "x", 1, &cred, &err) < 0) {
		printf("skip: munged is not running (%s)\n", err.text);
		gp_auth_destroy(&au);
		exit(77);
	}
	free(cred);
	gp_auth_destroy(&au);
	snprintf(top, sizeof(top), "/tmp/gp-peer-test-XXXXXX");
	if (!mkdtemp(top) || !(zctx = zmq_ctx_new()))
		return -1;
	/* ports below Linux's ephemeral range (32768-60999), where no connection's own end sits;
	 * another test may hold the one picked: the next pair is tried */
	int tries = 0;
	while (1) {
		int port = 20000 + (int)(gp_random64() % 12000);
		if (start_node(&up, "up", port) == 0 && start_node(&src, "src", port + 1) == 0)
			break;
		stop_node(&up);
		stop_node(&src);
		if (++tries == 20)
			return -1;
	}
	snprintf(self_cache, sizeof(self_cache), "%s/self/cache", top);
	/* one chunk per file: NCHUNK files of 100,000 random bytes */
	for (int i = 0; i < NCHUNK; i++) {
		for (size_t k = 0; k < sizeof(data[i]); k++)
			data[i][k] = (uint8_t)(gp_random64() >> 7);
		gp_chunk_hash(data[i], sizeof(data[i]), hashes[i]);
		gpool__stage_entry__init(&entry[i]);
		entry[i].path = "f";
		entry[i].size = sizeof(data[i]);
		hb[i][0] = (ProtobufCBinaryData){GP_HASH_LEN, hashes[i]};
		entry[i].chunks = hb[i];
		entry[i].n_chunks = 1;
		ents[i] = &entry[i];
		/* the "scheduler" has everything */
		if (gp_chunk_write(src.cache, hashes[i], data[i], sizeof(data[i])) < 0)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	stop_node(&up);
	stop_node(&src);
	zmq_ctx_term(zctx);
	return gp_rm_rf(top);
}

static int reset(void **state)
{
	gp_rm_rf(self_cache);
	gp_rm_rf(up.cache);
	return gp_mkdir_p(up.cache, 0700);
}

/* Fetch every chunk as node 1 of a chain whose node 0 is `up`. */
static int fetch(struct gp_xfer_stats *st, const char *up_ep)
{
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_WORKER);
	gp_client_t *c = gp_client_create_ep(cfg, src.ep, geteuid(), &err);
	char *eps[2] = {(char *)up_ep, "tcp://127.0.0.1:1"};
	struct gp_xfer_peers pe = {.eps = eps, .n = 2, .self = 1, .cfg = cfg, .uid = geteuid()};
	memset(st, 0, sizeof(*st));
	int rc = c ? gp_xfer_fetch_cache(c, ents, NCHUNK, self_cache, &pe, st, &err) : -1;
	if (rc < 0)
		printf("fetch: %s\n", err.text);
	gp_client_destroy(&c);
	gp_config_destroy(&cfg);
	return rc;
}

static void assert_cache_good(void)
{
	for (int i = 0; i < NCHUNK; i++)
		assert_int_equal(gp_chunk_verify(self_cache, hashes[i]), 0);
}

/* The upstream has it all: everything comes from it, attached, nothing from the "scheduler". */
static void test_all_from_upstream(void **state)
{
	for (int i = 0; i < NCHUNK; i++)
		assert_int_equal(gp_chunk_write(up.cache, hashes[i], data[i], sizeof(data[i])), 0);
	struct gp_xfer_stats st;
	assert_int_equal(fetch(&st, up.ep), 0);
	assert_int_equal(st.got_chunks, NCHUNK);
	assert_int_equal(st.peer_chunks, NCHUNK);
	assert_int_equal(st.refused_chunks, 0);
	assert_cache_good();
}

struct late {
	int delay_ms;
};

static void *land_later(void *arg)
{
	struct late *l = arg;
	usleep((useconds_t)l->delay_ms * 1000);
	for (int i = 0; i < NCHUNK; i++)
		gp_chunk_write(up.cache, hashes[i], data[i], sizeof(data[i]));
	return NULL;
}

/* The upstream gets the chunks 500 ms after they are asked for: the held requests are
 * answered when they land, all from the peer. */
static void test_held_until_it_lands(void **state)
{
	pthread_t t;
	struct late l = {500};
	assert_int_equal(pthread_create(&t, NULL, land_later, &l), 0);
	int64_t t0 = gp_mono_ms();
	struct gp_xfer_stats st;
	assert_int_equal(fetch(&st, up.ep), 0);
	int64_t dt = gp_mono_ms() - t0;
	pthread_join(t, NULL);
	assert_int_equal(st.peer_chunks, NCHUNK);
	assert_true(dt >= 450 && dt < 2000);
	assert_cache_good();
}

/* A damaged chunk in the upstream's cache is refused and fetched from the "scheduler". */
static void test_damaged_from_peer_refused(void **state)
{
	for (int i = 0; i < NCHUNK; i++)
		assert_int_equal(gp_chunk_write(up.cache, hashes[i], data[i], sizeof(data[i])), 0);
	char path[4300];
	assert_int_equal(gp_chunk_path(up.cache, hashes[2], path, sizeof(path)), 0);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, 1000, SEEK_SET);
	fputs("CORRUPT", f);
	fclose(f);
	struct gp_xfer_stats st;
	assert_int_equal(fetch(&st, up.ep), 0);
	assert_int_equal(st.refused_chunks, 1);
	assert_int_equal(st.peer_chunks, NCHUNK - 1);
	assert_int_equal(st.got_chunks, NCHUNK);
	assert_cache_good();
}

/* Nobody answers at the upstream's address: after the stall limit everything comes from the
 * "scheduler". */
static void test_dead_peer_falls_back(void **state)
{
	struct gp_xfer_stats st;
	int64_t t0 = gp_mono_ms();
	assert_int_equal(fetch(&st, "tcp://127.0.0.1:9"), 0);
	int64_t dt = gp_mono_ms() - t0;
	assert_int_equal(st.peer_chunks, 0);
	assert_int_equal(st.got_chunks, NCHUNK);
	assert_true(dt < 10000);
	assert_cache_good();
}

/* Lazy staging's order (gp_xfer_fetch_chunks, peers.any): the other node is asked without
 * holding and gives what it has; a damaged copy there is refused; what it lacks comes from the
 * "scheduler" at once (no 2 s hold per chunk). */
static void test_lazy_any_peer(void **state)
{
	for (int i = 0; i < 3; i++)
		assert_int_equal(gp_chunk_write(up.cache, hashes[i], data[i], sizeof(data[i])), 0);
	char path[4300];
	assert_int_equal(gp_chunk_path(up.cache, hashes[2], path, sizeof(path)), 0);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, 10, SEEK_SET);
	fputs("CORRUPT", f);
	fclose(f);
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_WORKER);
	gp_client_t *c = gp_client_create_ep(cfg, src.ep, geteuid(), &err);
	assert_non_null(c);
	char *eps[2] = {"tcp://127.0.0.1:1", up.ep}; /* this node is 0, `up` is 1 */
	struct gp_xfer_peers pe = {
	    .eps = eps, .n = 2, .self = 0, .cfg = cfg, .uid = geteuid(), .any = true};
	struct gp_xfer_stats st = {0};
	int64_t t0 = gp_mono_ms();
	for (int i = 0; i < NCHUNK; i++)
		assert_int_equal(gp_xfer_fetch_chunks(c, ents[i], 0, 1, self_cache, &pe, &st, &err),
				 0);
	int64_t dt = gp_mono_ms() - t0;
	assert_int_equal(st.peer_chunks, 2);	/* 0 and 1 */
	assert_int_equal(st.refused_chunks, 1); /* 2, damaged at the peer */
	assert_int_equal(st.got_chunks, NCHUNK);
	assert_true(dt < 2000); /* nothing held */
	assert_cache_good();
	/* out of the entry's range */
	assert_int_equal(gp_xfer_fetch_chunks(c, ents[0], 0, 2, self_cache, &pe, &st, &err), -1);
	assert_int_equal(errno, EINVAL);
	gp_client_destroy(&c);
	gp_config_destroy(&cfg);
}

/* A peer's cache answers only the agents' account and root: a request signed by another uid
 * (a user who learnt a chunk's hash, the peer's address and port) gets ERROR_PERMISSION. */
static void test_peer_refuses_other_uid(void **state)
{
	if (geteuid() != 0)
		skip();
	assert_int_equal(gp_chunk_write(up.cache, hashes[0], data[0], sizeof(data[0])), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		gp_error_t err = {{0}};
		gp_config_t *cfg = gp_config_create(GP_WORKER);
		gp_client_t *c = gp_client_create_ep(cfg, up.ep, 0, &err);
		Gpool__ChunkGet q = GPOOL__CHUNK_GET__INIT;
		q.hash = (ProtobufCBinaryData){GP_HASH_LEN, hashes[0]};
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_CHUNK_GET;
		m.chunk_get = &q;
		Gpool__Msg *rep = c ? gp_client_call(c, &m, 5000, &err) : NULL;
		int refused = rep && rep->m_case == GPOOL__MSG__M_ERROR &&
			      rep->error->code == GPOOL__ERROR_CODE__ERROR_PERMISSION;
		_exit(refused ? 0 : rep && rep->m_case == GPOOL__MSG__M_CHUNK_GET_REPLY ? 3 : 4);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* One witness round (worker/agent/witness.h) against the two peer servers: run, taken. */
static struct fence_view round_over(Gpool__PoolMembers *pm, int64_t self_ago, char *fresh)
{
	struct witness *w = witness_create(zctx);
	assert_non_null(w);
	struct fence_view v;
	assert_false(witness_take(w, &v, fresh, 64));
	struct witness_ask ask = {.self_ago_ms = self_ago, .margin_ms = 2000, .guard_ms = 5000};
	assert_int_equal(witness_start(w, pm, "me", &ask), 0);
	assert_int_equal(witness_start(w, pm, "me", &ask), -1); /* one at a time */
	assert_int_equal(errno, EBUSY);
	int64_t t0 = gp_mono_ms();
	while (!witness_take(w, &v, fresh, 64)) {
		assert_true(gp_mono_ms() - t0 < WITNESS_ROUND_MS + 3000);
		usleep(20000);
	}
	witness_destroy(&w);
	return v;
}

/* The question an agent whose lease ran out asks its peers: does anyone hear the scheduler
 * later than I did? Answered by each peer server from its agent's word (sched_heard_ms); a
 * member that serves nothing is counted as a member, not reached. */
static void test_witness_round(void **state)
{
	Gpool__PoolMember m[4], *mp[4];
	const char *names[] = {"me", "up", "src", "gone"};
	const char *eps[] = {"", up.ep, src.ep, "tcp://127.0.0.1:9"};
	for (int i = 0; i < 4; i++) {
		gpool__pool_member__init(&m[i]);
		m[i].name = (char *)names[i];
		m[i].peer_endpoint = (char *)eps[i];
		mp[i] = &m[i];
	}
	Gpool__PoolMembers pm = GPOOL__POOL_MEMBERS__INIT;
	pm.members = mp;
	pm.n_members = 4;
	char fresh[64];
	/* neither peer ever heard the scheduler: 3 of 4 members reached, none fresh */
	atomic_store(&up.a.sched_heard_ms, 0);
	atomic_store(&src.a.sched_heard_ms, 0);
	struct fence_view v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.members, 4);
	assert_int_equal(v.reached, 3);
	assert_int_equal(v.fresh, 0);
	assert_int_equal(fence_decide(&v), FENCE_KEEP);
	/* up heard it 20 s ago, 10 s after we last did (more than the 2 s margin): the scheduler
	 * is alive, this node is the one cut off */
	atomic_store(&up.a.sched_heard_ms, gp_mono_ms() - 20000);
	v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.fresh, 1);
	assert_string_equal(fresh, "up");
	assert_int_equal(fence_decide(&v), FENCE_SCHED_ALIVE);
	/* the same peer, but the scheduler it hears came back lately and told it that it requeues
	 * nothing for 8 s (more than the 5 s guard): this node waits to hear it itself */
	atomic_store(&up.a.sched_requeue_at_ms, gp_mono_ms() + 8000);
	v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.fresh, 0);
	assert_int_equal(v.waiting, 1);
	assert_true(v.wait_ms > 5000 && v.wait_ms <= 8000);
	assert_string_equal(fresh, "up");
	assert_int_equal(fence_decide(&v), FENCE_WAIT);
	/* 3 s left: within the guard, the next round could come too late: fence now */
	atomic_store(&up.a.sched_requeue_at_ms, gp_mono_ms() + 3000);
	v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.fresh, 1);
	assert_int_equal(v.waiting, 0);
	assert_int_equal(fence_decide(&v), FENCE_SCHED_ALIVE);
	atomic_store(&up.a.sched_requeue_at_ms, 0);
	/* heard 29 s ago against our 30 s: within the margin, the scheduler went away for all */
	atomic_store(&up.a.sched_heard_ms, gp_mono_ms() - 29000);
	atomic_store(&src.a.sched_heard_ms, gp_mono_ms() - 31000);
	v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.reached, 3);
	assert_int_equal(v.fresh, 0);
	assert_int_equal(fence_decide(&v), FENCE_KEEP);
	/* a list from before this node joined: it is one more member; with src gone too, 2 of 5
	 * reached is no majority */
	m[0].name = "someone-else";
	m[2].peer_endpoint = "tcp://127.0.0.1:9";
	v = round_over(&pm, 30000, fresh);
	assert_int_equal(v.members, 5);
	assert_int_equal(v.reached, 2);
	assert_int_equal(fence_decide(&v), FENCE_MINORITY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_all_from_upstream, reset),
	    cmocka_unit_test_setup(test_held_until_it_lands, reset),
	    cmocka_unit_test_setup(test_damaged_from_peer_refused, reset),
	    cmocka_unit_test_setup(test_dead_peer_falls_back, reset),
	    cmocka_unit_test_setup(test_lazy_any_peer, reset),
	    cmocka_unit_test_setup(test_peer_refuses_other_uid, reset),
	    cmocka_unit_test_setup(test_witness_round, reset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

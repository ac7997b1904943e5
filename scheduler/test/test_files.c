/* The chunk store's users (files.c) through the handler table and a real ROUTER socket, as in
 * test_rdv.c: a uid may build files only from chunks it sent the bytes of or that a file set
 * of its own job holds; knowing a hash is not enough. Root and the agents' account may use any
 * chunk. Stored manifests never keep setuid, setgid or sticky bits. No munged needed: the
 * envelopes are local (unauthenticated). */
/* the session extension's declarations (a follower's apply, as repl.c) */
#define SQLITE_ENABLE_SESSION
#define SQLITE_ENABLE_PREUPDATE_HOOK
#include <sqlite3.h>
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

#include "common/chunk.h"
#include "common/u64map.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/features/files.h"
#include "scheduler/core/core.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_files.h"

#define OWNER 1000
#define OTHER 2000
#define AGENT 500
#define PEER  "files-peer"

static struct gsched S;
static char dir[64];
static void *zctx, *dealer;
static gp_wire_t *wire;
static Gpool__Batch *got;
static uint64_t next_id = 1;

static const char SECRET[] = "root:$6$not-yours:19000:0:99999:7:::\n";
static uint8_t secret_hash[GP_HASH_LEN];

static struct job *add_job(uint64_t id, uint32_t uid)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	j->uid = uid;
	j->user = strdup(uid == OWNER ? "alice" : "mallory");
	j->name = strdup("t");
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->attempt = 1;
	j->ntasks = 1;
	assert_int_equal(jobs_add(S.jobs, j), 0);
	return j;
}

static int setup(void **state)
{
	gp_error_t err;
	memset(&S, 0, sizeof(S));
	strcpy(dir, "/tmp/gp-files-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(S.state_dir, sizeof(S.state_dir), "%s", dir);
	S.agent_uid = AGENT;
	char ep[128];
	snprintf(ep, sizeof(ep), "ipc://%s/sock", dir);
	assert_int_equal(sched_core_init(&S, 1), 0);
	S.clock =
	    (struct sched_clock){gp_now, gp_mono_ms}; /* the time, given as the shell gives it */
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
	gp_chunk_hash(SECRET, strlen(SECRET), secret_hash);
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
	sched_core_release(&S);
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

static void put_as(uint32_t uid, const void *data, size_t len)
{
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash(data, len, h);
	Gpool__ChunkPut q = GPOOL__CHUNK_PUT__INIT;
	q.hash = (ProtobufCBinaryData){GP_HASH_LEN, h};
	q.data = (ProtobufCBinaryData){len, (uint8_t *)data};
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CHUNK_PUT;
	m.chunk_put = &q;
	expect(send_as(uid, &m), GPOOL__MSG__M_CHUNK_PUT_REPLY);
}

/* Does the store tell uid it has chunk h? */
static bool have_as(uint32_t uid, const uint8_t *h)
{
	ProtobufCBinaryData hs[1] = {{GP_HASH_LEN, (uint8_t *)h}};
	Gpool__ChunkHave q = GPOOL__CHUNK_HAVE__INIT;
	q.hashes = hs;
	q.n_hashes = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CHUNK_HAVE;
	m.chunk_have = &q;
	Gpool__Msg *r = expect(send_as(uid, &m), GPOOL__MSG__M_CHUNK_HAVE_REPLY);
	return r->chunk_have_reply->n_missing == 0;
}

/* A file set of one file, SECRET's one chunk, mode `mode`. */
static uint64_t set_put_as(uint32_t uid, uint64_t job, const char *kind, uint32_t mode)
{
	ProtobufCBinaryData ch[1] = {{GP_HASH_LEN, secret_hash}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ev[1] = {&e};
	e.path = "shadow";
	e.mode = mode;
	e.size = strlen(SECRET);
	e.chunks = ch;
	e.n_chunks = 1;
	Gpool__FileSetPut q = GPOOL__FILE_SET_PUT__INIT;
	q.job_id = job;
	q.kind = (char *)kind;
	q.name = !strcmp(kind, "collect") ? "rank0" : "stolen";
	q.entries = ev;
	q.n_entries = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_FILE_SET_PUT;
	m.file_set_put = &q;
	return send_as(uid, &m);
}

static uint64_t get_as(uint32_t uid, uint64_t job, const char *kind, const char *name)
{
	Gpool__ChunkGet q = GPOOL__CHUNK_GET__INIT;
	q.hash = (ProtobufCBinaryData){GP_HASH_LEN, secret_hash};
	q.job_id = job;
	q.kind = (char *)kind;
	q.name = (char *)name;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CHUNK_GET;
	m.chunk_get = &q;
	return send_as(uid, &m);
}

/* The owner uploads a chunk: the store says so to them, to root and to the agents, and says
 * "missing" to another user, who would learn that someone staged those exact bytes. */
static void have_answers_only_users(void **state)
{
	put_as(OWNER, SECRET, strlen(SECRET));
	assert_true(have_as(OWNER, secret_hash));
	assert_true(have_as(0, secret_hash));
	assert_true(have_as(AGENT, secret_hash));
	assert_false(have_as(OTHER, secret_hash));
}

/* Another user who knows the hash cannot name the chunk in a file set of their own job, so
 * cannot read it back with ChunkGet either. */
static void a_hash_is_not_the_bytes(void **state)
{
	put_as(OWNER, SECRET, strlen(SECRET));
	Gpool__Msg *m =
	    expect_error(set_put_as(OTHER, 2, "ckpt", 0600), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	assert_non_null(strstr(m->error->text, "permission denied"));
	assert_non_null(strstr(m->error->text, "shadow"));
	expect_error(get_as(OTHER, 2, "ckpt", "stolen"), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	/* nor through a set of the owner's job, which is not theirs */
	expect(set_put_as(OWNER, 1, "ckpt", 0600), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	expect_error(get_as(OTHER, 1, "ckpt", "stolen"), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	/* nor stage it in a job */
	ProtobufCBinaryData ch[1] = {{GP_HASH_LEN, secret_hash}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ev[1] = {&e};
	e.path = "shadow";
	e.size = strlen(SECRET);
	e.chunks = ch;
	e.n_chunks = 1;
	char why[256];
	errno = 0;
	assert_int_equal(files_check_use(&S, OTHER, ev, 1, why, sizeof(why)), -1);
	assert_int_equal(errno, EACCES);
	assert_non_null(strstr(why, "permission denied"));
	assert_int_equal(files_check_use(&S, OWNER, ev, 1, why, sizeof(why)), 0);
	assert_int_equal(files_check_use(&S, AGENT, ev, 1, why, sizeof(why)), 0);
	assert_int_equal(files_check_use(&S, 0, ev, 1, why, sizeof(why)), 0);
}

/* To a user who may not use it, a chunk the store holds and one it lacks are refused alike:
 * the answer does not tell whether someone staged those bytes. */
static void held_and_absent_look_alike(void **state)
{
	char held[512], absent[512];
	Gpool__Msg *m =
	    expect_error(set_put_as(OTHER, 2, "ckpt", 0600), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	snprintf(absent, sizeof(absent), "%s", m->error->text);
	put_as(OWNER, SECRET, strlen(SECRET));
	m = expect_error(set_put_as(OTHER, 2, "ckpt", 0600), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	snprintf(held, sizeof(held), "%s", m->error->text);
	assert_string_equal(held, absent);
	/* the owner, who may, is told the plain truth about a chunk the store lacks */
	uint8_t h[GP_HASH_LEN];
	memcpy(h, secret_hash, GP_HASH_LEN);
	gp_chunk_hash("never sent", 10, secret_hash);
	assert_int_equal(store_chunk_grant(S.store, secret_hash, GP_HASH_LEN, OWNER), 0);
	m = expect_error(set_put_as(OWNER, 1, "ckpt", 0600), GPOOL__ERROR_CODE__ERROR_INVALID);
	assert_non_null(strstr(m->error->text, "not in the store"));
	memcpy(secret_hash, h, GP_HASH_LEN);
}

/* Whoever sends the bytes may use the chunk: the store keeps one copy, the other user's
 * upload proves they have it, and from then on the store tells them so (no upload again). */
static void sending_the_bytes_proves_them(void **state)
{
	put_as(OWNER, SECRET, strlen(SECRET));
	assert_false(have_as(OTHER, secret_hash));
	put_as(OTHER, SECRET, strlen(SECRET));
	assert_true(have_as(OTHER, secret_hash));
	expect(set_put_as(OTHER, 2, "ckpt", 0600), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	Gpool__Msg *m = expect(get_as(OTHER, 2, "ckpt", "stolen"), GPOOL__MSG__M_CHUNK_GET_REPLY);
	assert_int_equal(m->chunk_get_reply->data.len, strlen(SECRET));
	/* bytes that do not match the hash prove nothing */
	uint8_t h[GP_HASH_LEN];
	memcpy(h, secret_hash, GP_HASH_LEN);
	Gpool__ChunkPut q = GPOOL__CHUNK_PUT__INIT;
	q.hash = (ProtobufCBinaryData){GP_HASH_LEN, h};
	q.data = (ProtobufCBinaryData){3, (uint8_t *)"abc"};
	Gpool__Msg pm = GPOOL__MSG__INIT;
	pm.m_case = GPOOL__MSG__M_CHUNK_PUT;
	pm.chunk_put = &q;
	expect_error(send_as(3000, &pm), GPOOL__ERROR_CODE__ERROR_INVALID);
	assert_false(have_as(3000, secret_hash));
}

/* What the agent collects from a job is the job owner's: the collect set grants it, so the
 * owner may fetch it and stage it again without sending it. */
static void a_collect_set_grants_its_owner(void **state)
{
	put_as(AGENT, SECRET, strlen(SECRET));
	assert_false(have_as(OWNER, secret_hash));
	expect_error(set_put_as(OWNER, 1, "collect", 0644), GPOOL__ERROR_CODE__ERROR_PERMISSION);
	expect(set_put_as(AGENT, 1, "collect", 0644), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	assert_true(have_as(OWNER, secret_hash));
	assert_false(have_as(OTHER, secret_hash));
	expect(get_as(OWNER, 1, "collect", "rank0"), GPOOL__MSG__M_CHUNK_GET_REPLY);
	expect_error(get_as(OTHER, 1, "collect", "rank0"), GPOOL__ERROR_CODE__ERROR_PERMISSION);
}

/* A stored set keeps the rwx bits only, whoever sent setuid, setgid or sticky ones. */
static void stored_modes_are_plain(void **state)
{
	put_as(AGENT, SECRET, strlen(SECRET));
	expect(set_put_as(AGENT, 1, "collect", 06755), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	put_as(OWNER, SECRET, strlen(SECRET));
	expect(set_put_as(OWNER, 1, "ckpt", 01777), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	const char *kinds[] = {"collect", "ckpt"};
	const uint32_t want[] = {0755, 0777};
	for (int i = 0; i < 2; i++) {
		Gpool__FileSetGet q = GPOOL__FILE_SET_GET__INIT;
		q.job_id = 1;
		q.kind = (char *)kinds[i];
		q.name = "";
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_FILE_SET_GET;
		m.file_set_get = &q;
		Gpool__Msg *r = expect(send_as(OWNER, &m), GPOOL__MSG__M_FILE_SET_GET_REPLY);
		assert_int_equal(r->file_set_get_reply->n_sets, 1);
		assert_int_equal(r->file_set_get_reply->sets[0]->entries[0]->mode, want[i]);
	}
	assert_int_equal(gp_mode_plain(04755, 0644), 0755);
	assert_int_equal(gp_mode_plain(0, 0644), 0644);
	assert_int_equal(gp_mode_plain(07000, 0644), 0);
}

/* Grants are rows of jobs.db: they outlive gschedd's restart. */
static void grants_are_durable(void **state)
{
	put_as(OWNER, SECRET, strlen(SECRET));
	gp_error_t err;
	store_destroy(&S.store); /* commits the open transaction */
	assert_non_null(S.store = store_create(dir, "off", 0, &err));
	assert_int_equal(store_chunk_may(S.store, secret_hash, GP_HASH_LEN, OWNER), 1);
	assert_int_equal(store_chunk_may(S.store, secret_hash, GP_HASH_LEN, OTHER), 0);
	assert_true(have_as(OWNER, secret_hash));
	assert_false(have_as(OTHER, secret_hash));
}

/* The replication's side of a commit, as repl.c takes it: the changeset, kept here. */
static void *cs_kept;
static size_t cs_len;
static int keep_changeset(void *arg, const void *cs, size_t len, gp_error_t *err)
{
	free(cs_kept);
	cs_kept = malloc(len);
	memcpy(cs_kept, cs, len);
	cs_len = len;
	return 0;
}
static void changeset_done(void *arg)
{
}
static int conflict_replace(void *ctx, int why, sqlite3_changeset_iter *it)
{
	return SQLITE_CHANGESET_REPLACE;
}
static int count_rows(void *arg, uint64_t job, const char *kind, const char *name, uint32_t uid,
		      const void *set, size_t len, const struct store_chunk *c)
{
	(*(int *)arg)++;
	return 0;
}

/* With the state replicated, a checkpoint put's commit carries the set and its chunk's bytes:
 * another scheduler that applies only that entry to its own jobs.db (as a follower does) and
 * takes the lead serves the same set from its own disk after files_restore. */
static void a_replicated_set_comes_back_elsewhere(void **state)
{
	gp_error_t err;
	assert_int_equal(store_set_replication(S.store, keep_changeset, changeset_done, NULL), 0);
	put_as(OWNER, SECRET, strlen(SECRET));
	expect(set_put_as(OWNER, 1, "ckpt", 0600), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	assert_int_equal(store_commit(S.store, &err), 0);
	assert_non_null(cs_kept);

	/* the other scheduler: its own state directory, nothing but the entry */
	char dir2[64] = "/tmp/gp-files2-XXXXXX";
	assert_non_null(mkdtemp(dir2));
	struct gsched s2;
	memset(&s2, 0, sizeof(s2));
	snprintf(s2.state_dir, sizeof(s2.state_dir), "%s", dir2);
	assert_non_null(s2.store = store_create(dir2, "off", 0, &err));
	assert_int_equal(sqlite3changeset_apply(store_db(s2.store), (int)cs_len, cs_kept, NULL,
						conflict_replace, NULL),
			 SQLITE_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/files/1/ckpt/stolen", dir2);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(files_restore(&s2), 0);
	char cdir[128];
	snprintf(cdir, sizeof(cdir), "%s/chunks", dir2);
	assert_true(gp_chunk_has(cdir, secret_hash));
	uint8_t *a, *b;
	size_t na, nb;
	assert_int_equal(gp_read_file(path, 1 << 20, &a, &na), 0);
	snprintf(path, sizeof(path), "%s/files/1/ckpt/stolen", dir);
	assert_int_equal(gp_read_file(path, 1 << 20, &b, &nb), 0);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	snprintf(path, sizeof(path), "%s/files/1/owner", dir2);
	assert_int_equal(gp_read_file(path, 32, &a, &na), 0);
	char u[33] = {0};
	memcpy(u, a, na < 32 ? na : 32);
	assert_int_equal(atoi(u), OWNER);
	free(a);
	/* the owner's right to the chunk came with it (chunk_users rows) */
	assert_int_equal(store_chunk_may(s2.store, secret_hash, GP_HASH_LEN, OWNER), 1);
	assert_int_equal(store_chunk_may(s2.store, secret_hash, GP_HASH_LEN, OTHER), 0);
	/* the job purged: its rows go */
	assert_int_equal(store_files_forget(s2.store, 1), 0);
	assert_int_equal(store_commit(s2.store, &err), 0);
	int rows = 0;
	assert_int_equal(store_files_each(s2.store, count_rows, &rows), 0);
	assert_int_equal(rows, 0);
	store_destroy(&s2.store);
	gp_rm_rf(dir2);
	free(cs_kept);
	cs_kept = NULL;
}

static int sum_chunk_bytes(void *arg, uint64_t job, const char *kind, const char *name,
			   uint32_t uid, const void *set, size_t len, const struct store_chunk *c)
{
	if (c)
		*(size_t *)arg += c->len;
	return 0;
}

/* A chunk's bytes are kept once however many sets and submissions hold it: the first row has
 * them, the others refer to it; when the holder goes (a set replaced, a job purged) the bytes
 * move to a row that still needs them, and go with the last. */
static void chunk_bytes_are_kept_once(void **state)
{
	gp_error_t err;
	static const uint8_t set[] = {1};
	uint8_t h[GP_HASH_LEN];
	memset(h, 7, sizeof(h));
	struct store_chunk c = {h, SECRET, strlen(SECRET)};
	struct store_chunk ref = {h, NULL, 0};
	size_t bytes = 0;
	assert_int_equal(store_files_put(S.store, 1, "ckpt", "a", OWNER, set, 1, &c, 1), 0);
	assert_int_equal(store_files_put(S.store, 2, "stage", "input", OWNER, set, 0, &c, 1), 0);
	assert_int_equal(store_files_put(S.store, 3, "stage", "input", OWNER, set, 0, &ref, 1), 0);
	assert_int_equal(store_commit(S.store, &err), 0);
	assert_int_equal(store_files_each(S.store, sum_chunk_bytes, &bytes), 0);
	assert_int_equal(bytes, strlen(SECRET)); /* once, not three times */
	/* job 1 (the holder) purged: jobs 2 and 3 still have the bytes */
	assert_int_equal(store_files_forget(S.store, 1), 0);
	assert_int_equal(store_commit(S.store, &err), 0);
	bytes = 0;
	assert_int_equal(store_files_each(S.store, sum_chunk_bytes, &bytes), 0);
	assert_int_equal(bytes, strlen(SECRET));
	/* replacing job 2's set by one without the chunk keeps them for job 3 */
	assert_int_equal(store_files_put(S.store, 2, "stage", "input", OWNER, set, 0, NULL, 0), 0);
	assert_int_equal(store_commit(S.store, &err), 0);
	bytes = 0;
	assert_int_equal(store_files_each(S.store, sum_chunk_bytes, &bytes), 0);
	assert_int_equal(bytes, strlen(SECRET));
	assert_int_equal(store_files_forget(S.store, 3), 0);
	assert_int_equal(store_files_forget(S.store, 2), 0);
	assert_int_equal(store_commit(S.store, &err), 0);
	bytes = 0;
	int rows = 0;
	assert_int_equal(store_files_each(S.store, sum_chunk_bytes, &bytes), 0);
	assert_int_equal(store_files_each(S.store, count_rows, &rows), 0);
	assert_int_equal(bytes, 0);
	assert_int_equal(rows, 0);
	/* a reference with nothing to refer to is refused */
	assert_int_equal(store_files_put(S.store, 4, "stage", "input", OWNER, set, 0, &ref, 1), -1);
}

/* One scheduler (no replication) keeps no copy of its file sets in jobs.db. */
static void one_scheduler_keeps_no_copy(void **state)
{
	gp_error_t err;
	put_as(OWNER, SECRET, strlen(SECRET));
	expect(set_put_as(OWNER, 1, "ckpt", 0600), GPOOL__MSG__M_FILE_SET_PUT_REPLY);
	assert_int_equal(store_commit(S.store, &err), 0);
	int rows = 0;
	assert_int_equal(store_files_each(S.store, count_rows, &rows), 0);
	assert_int_equal(rows, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(have_answers_only_users, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_hash_is_not_the_bytes, setup, teardown),
	    cmocka_unit_test_setup_teardown(held_and_absent_look_alike, setup, teardown),
	    cmocka_unit_test_setup_teardown(sending_the_bytes_proves_them, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_collect_set_grants_its_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(stored_modes_are_plain, setup, teardown),
	    cmocka_unit_test_setup_teardown(grants_are_durable, setup, teardown),
	    cmocka_unit_test_setup_teardown(a_replicated_set_comes_back_elsewhere, setup, teardown),
	    cmocka_unit_test_setup_teardown(one_scheduler_keeps_no_copy, setup, teardown),
	    cmocka_unit_test_setup_teardown(chunk_bytes_are_kept_once, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

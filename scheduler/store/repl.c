/* repl.c: a standby scheduler's replication with libraft (docs/standby.md). The Raft member
 * runs in a thread of its own with its own libuv loop (raft_uv: the on-disk log in
 * STATE_DIR/raft and the TCP transport); gschedd's ZeroMQ loop stays as it is. The two meet
 * under one mutex: gschedd hands over one group commit's changeset at a time and waits, the
 * Raft thread publishes the role, the leader and whether this leader has caught up.
 *
 * The state machine is jobs.db. An entry is [magic][sched id][seq][length][SQLite changeset],
 * padded to a multiple of 8 bytes (libraft 0.15 reads an unpadded entry of its open segment
 * back at the wrong offset after a restart: seen here, every entry after the first shifted by
 * its padding); a
 * follower applies it to its own connection, the leader that proposed it lets gschedd's
 * thread commit the open transaction that made it (the Raft thread waits for that, so a
 * snapshot taken after an entry holds it). A snapshot is the database image
 * (sqlite3_serialize); restoring one replaces the file. jobs.db is emptied at every start: the
 * snapshot and the log rebuild it, so no replica's file can hold what the majority does not.
 */
#include "scheduler/store/repl.h"

#define SQLITE_ENABLE_SESSION
#define SQLITE_ENABLE_PREUPDATE_HOOK
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <raft.h>
#include <raft/uv.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/store/repl_auth.h"
#include "scheduler/store/store.h"

#define MAX_PEERS     7
#define ENTRY_MAGIC   0x50525047u /* "GPRP" */
#define ENTRY_HDR     24
#define TICK_MS	      50
#define WAIT_MS	      15000 /* a proposal with no answer: leadership is in doubt */
#define ELECTION_MS   1000
#define HEARTBEAT_MS  100
#define SNAP_EVERY    512 /* entries between snapshots */
#define SNAP_TRAILING 128

enum prop { P_NONE, P_WAITING, P_SUBMITTED, P_APPLYING, P_FAILED };

struct repl {
	uint64_t id;
	struct repl_peer peers[MAX_PEERS];
	int npeers;
	char client_port[16];
	char db_path[4200];
	char raft_dir[4200];

	/* the Raft thread's own */
	pthread_t thread;
	bool thread_started;
	uv_loop_t loop;
	uv_async_t wake;
	uv_timer_t tick;
	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport tcp;	    /* libraft's TCP transport */
	struct raft_uv_transport transport; /* over it, MUNGE (repl_auth.h) */
	struct raft_fsm fsm;
	struct raft_apply apply_req;
	struct raft_barrier barrier;
	bool barrier_pending;
	bool raft_inited;
	sqlite3 *db; /* the state machine's connection to jobs.db */

	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int role;
	uint64_t leader_id;
	uint64_t applied;
	bool ready;   /* leading, and every earlier entry applied */
	bool deposed; /* was ready, is no longer */
	bool stopping;
	enum prop prop;
	void *pbuf;
	size_t plen;
	uint64_t pseq, seq;
	char perr[200];
	bool committed; /* gschedd committed the entry being applied */
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

int repl_parse_peers(const char *spec, struct repl_peer *peers, int max, gp_error_t *err)
{
	int n = 0;
	const char *p = spec;
	while (*p) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, ", \t");
		char item[256];
		if (len >= sizeof(item))
			return gp_errprintf(err, "sched_peers: entry too long");
		memcpy(item, p, len);
		item[len] = 0;
		p += len;
		char *at = strchr(item, '@'), *end = NULL;
		if (!at)
			return gp_errprintf(err, "sched_peers: '%s' is not ID@HOST:PORT", item);
		*at = 0;
		errno = 0;
		unsigned long long id = strtoull(item, &end, 10);
		if (errno || !*item || *end || id == 0)
			return gp_errprintf(err, "sched_peers: invalid id '%s' (1, 2, 3, ...)",
					    item);
		const char *addr = at + 1;
		const char *colon = strrchr(addr, ':');
		if (!colon || colon == addr || !colon[1] ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return gp_errprintf(err, "sched_peers: '%s' has no HOST:PORT", addr);
		if (n == max)
			return gp_errprintf(err, "sched_peers: more than %d schedulers", max);
		for (int i = 0; i < n; i++)
			if (peers[i].id == id)
				return gp_errprintf(err, "sched_peers: id %llu twice", id);
		if (strlen(addr) >= sizeof(peers[n].address) ||
		    (size_t)(colon - addr) >= sizeof(peers[n].host))
			return gp_errprintf(err, "sched_peers: address '%s' too long", addr);
		peers[n].id = id;
		snprintf(peers[n].address, sizeof(peers[n].address), "%s", addr);
		memcpy(peers[n].host, addr, (size_t)(colon - addr));
		peers[n].host[colon - addr] = 0;
		n++;
	}
	if (!n)
		return gp_errprintf(err, "sched_peers: no scheduler listed");
	return n;
}

/* ---- the state machine (Raft thread) */

static int open_db(struct repl *r)
{
	if (sqlite3_open_v2(r->db_path, &r->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return -1;
	/* the file is rebuilt from the log at every start: a follower need not sync it */
	return sqlite3_exec(r->db,
			    "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; "
			    "PRAGMA busy_timeout=10000;",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

static int on_conflict(void *arg, int why, sqlite3_changeset_iter *it)
{
	(void)arg;
	(void)it;
	/* a replica holds what the log made it: a conflict means a row written outside the log
	 * (never by gschedd): the log wins */
	if (why == SQLITE_CHANGESET_DATA || why == SQLITE_CHANGESET_CONFLICT)
		return SQLITE_CHANGESET_REPLACE;
	return SQLITE_CHANGESET_OMIT;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct repl *r = fsm->data;
	*result = NULL;
	const uint8_t *p = buf->base;
	if (buf->len < ENTRY_HDR || (uint32_t)get64(p) != ENTRY_MAGIC) {
		gp_err("replication: an entry of %zu bytes that is not gschedd's: skipped",
		       buf->len);
		return 0;
	}
	uint64_t from = get64(p) >> 32, seq = get64(p + 8), cslen = get64(p + 16);
	if (cslen > buf->len - ENTRY_HDR) {
		gp_err("replication: entry %" PRIu64 " of scheduler %" PRIu64
		       " is shorter than it says: skipped",
		       seq, from);
		return 0;
	}
	pthread_mutex_lock(&r->mu);
	if (from == r->id && seq == r->pseq && r->prop == P_SUBMITTED) {
		/* ours: gschedd's thread commits the transaction that made it */
		r->prop = P_APPLYING;
		r->committed = false;
		pthread_cond_broadcast(&r->cv);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 30;
		while (!r->committed && !r->stopping)
			if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT) {
				gp_err("replication: gschedd did not commit entry %" PRIu64
				       " within 30 s",
				       seq);
				r->deposed = true;
				break;
			}
		r->applied++;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	pthread_mutex_unlock(&r->mu);
	if (cslen && sqlite3changeset_apply(r->db, (int)cslen, (void *)(p + ENTRY_HDR), NULL,
					    on_conflict, NULL) != SQLITE_OK)
		gp_err("replication: cannot apply entry %" PRIu64 " of scheduler %" PRIu64 ": %s",
		       seq, from, sqlite3_errmsg(r->db));
	pthread_mutex_lock(&r->mu);
	r->applied++;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct repl *r = fsm->data;
	sqlite3_int64 size = 0;
	unsigned char *img = sqlite3_serialize(r->db, "main", &size, 0);
	if (!img)
		return RAFT_NOMEM;
	*bufs = raft_malloc(sizeof(**bufs));
	if (!*bufs) {
		sqlite3_free(img);
		return RAFT_NOMEM;
	}
	(*bufs)[0].base = img;
	(*bufs)[0].len = (size_t)size;
	*n = 1;
	gp_info("replication: snapshot of jobs.db (%lld bytes)", (long long)size);
	return 0;
}

static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	(void)fsm;
	if (*bufs) {
		for (unsigned i = 0; i < *n; i++)
			sqlite3_free((*bufs)[i].base);
		raft_free(*bufs);
	}
	*bufs = NULL;
	*n = 0;
	return 0;
}

static int write_all(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	const char *c = p;
	while (len) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return -1;
		}
		c += w;
		len -= (size_t)w;
	}
	return close(fd);
}

static void unlink_db(const char *path)
{
	char p[4300];
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct repl *r = fsm->data;
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.restore", r->db_path);
	sqlite3_close(r->db);
	r->db = NULL;
	int rc = 0;
	if (write_all(tmp, buf->base, buf->len) < 0) {
		gp_err("replication: cannot write '%s': %s", tmp, strerror(errno));
		rc = RAFT_IOERR;
	} else {
		unlink_db(r->db_path);
		if (rename(tmp, r->db_path) < 0)
			rc = RAFT_IOERR;
	}
	if (open_db(r) < 0)
		rc = RAFT_IOERR;
	gp_info("replication: jobs.db restored from a snapshot (%zu bytes)%s", buf->len,
		rc ? ": failed" : "");
	raft_free(buf->base);
	return rc;
}

/* ---- the Raft thread's loop */

static void on_apply(struct raft_apply *req, int status, void *result)
{
	struct repl *r = req->data;
	(void)result;
	if (!status)
		return; /* fsm_apply handed it over */
	pthread_mutex_lock(&r->mu);
	if (r->prop == P_SUBMITTED) {
		r->prop = P_FAILED;
		snprintf(r->perr, sizeof(r->perr), "%s", raft_strerror(status));
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
}

static void on_barrier(struct raft_barrier *req, int status)
{
	struct repl *r = req->data;
	r->barrier_pending = false;
	if (status || raft_state(&r->raft) != RAFT_LEADER)
		return;
	pthread_mutex_lock(&r->mu);
	if (!r->deposed && !r->ready) {
		r->ready = true;
		gp_info("replication: leading, every earlier entry applied");
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void on_tick(uv_timer_t *t)
{
	struct repl *r = t->data;
	int st = raft_state(&r->raft);
	raft_id lid = 0;
	const char *laddr = NULL;
	raft_leader(&r->raft, &lid, &laddr);
	pthread_mutex_lock(&r->mu);
	if (st != r->role)
		gp_info("replication: now %s (leader %llu)",
			st == RAFT_LEADER      ? "leader"
			: st == RAFT_CANDIDATE ? "candidate"
			: st == RAFT_FOLLOWER  ? "follower"
					       : "unavailable",
			(unsigned long long)lid);
	r->role = st;
	r->leader_id = lid;
	if (st != RAFT_LEADER && r->ready) {
		r->ready = false;
		r->deposed = true;
		pthread_cond_broadcast(&r->cv);
	}
	bool want_barrier = st == RAFT_LEADER && !r->ready && !r->deposed && !r->barrier_pending;
	pthread_mutex_unlock(&r->mu);
	if (want_barrier) {
		r->barrier.data = r;
		if (raft_barrier(&r->raft, &r->barrier, on_barrier) == 0)
			r->barrier_pending = true;
	}
}

static void on_closed(struct raft *raft)
{
	struct repl *r = raft->data;
	raft_uv_close(&r->io);
	raft_uv_tcp_close(&r->tcp);
	repl_auth_release(&r->transport);
	uv_close((uv_handle_t *)&r->wake, NULL);
	uv_close((uv_handle_t *)&r->tick, NULL);
}

static void on_wake(uv_async_t *a)
{
	struct repl *r = a->data;
	pthread_mutex_lock(&r->mu);
	bool stop = r->stopping;
	void *buf = NULL;
	size_t len = 0;
	if (r->prop == P_WAITING && !stop) {
		buf = r->pbuf;
		len = r->plen;
		r->pbuf = NULL;
		r->prop = P_SUBMITTED;
	}
	pthread_mutex_unlock(&r->mu);
	if (buf) {
		struct raft_buffer b = {.base = buf, .len = len};
		r->apply_req.data = r;
		int rc = raft_apply(&r->raft, &r->apply_req, &b, 1, on_apply);
		if (rc) {
			raft_free(buf);
			pthread_mutex_lock(&r->mu);
			r->prop = P_FAILED;
			snprintf(r->perr, sizeof(r->perr), "%s", raft_strerror(rc));
			pthread_cond_broadcast(&r->cv);
			pthread_mutex_unlock(&r->mu);
		}
	}
	if (stop && !uv_is_closing((uv_handle_t *)&r->wake)) {
		uv_timer_stop(&r->tick);
		raft_close(&r->raft, on_closed);
	}
}

static void *thread_main(void *arg)
{
	struct repl *r = arg;
	uv_run(&r->loop, UV_RUN_DEFAULT);
	pthread_mutex_lock(&r->mu);
	r->deposed = r->ready || r->deposed;
	r->ready = false;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ---- gschedd's side */

/* An empty jobs.db with the schema: the snapshot and the log fill it. A jobs.db found before
 * this member ever had a log (a single scheduler turned into a group) is kept aside, never
 * deleted: the group starts empty (docs/standby.md). 0 / -1 (err). */
static int keep_single_db(struct repl *r, gp_error_t *err)
{
	char meta[4300], kept[4300];
	snprintf(meta, sizeof(meta), "%s/metadata1", r->raft_dir);
	bool had_log = access(meta, F_OK) == 0;
	snprintf(meta, sizeof(meta), "%s/metadata2", r->raft_dir);
	had_log = had_log || access(meta, F_OK) == 0;
	if (!had_log && access(r->db_path, F_OK) == 0) {
		snprintf(kept, sizeof(kept), "%s.before-standby.%lld", r->db_path,
			 (long long)time(NULL));
		if (rename(r->db_path, kept) < 0) {
			gp_errprintf(err, "cannot move '%s' aside: %s", r->db_path,
				     strerror(errno));
			return -1;
		}
		for (int i = 0; i < 2; i++) { /* its write-ahead log holds commits too */
			char from[4400], to[4400];
			const char *ext = i ? "-shm" : "-wal";
			snprintf(from, sizeof(from), "%s%s", r->db_path, ext);
			snprintf(to, sizeof(to), "%s%s", kept, ext);
			if (rename(from, to) < 0 && errno != ENOENT)
				gp_warn("cannot move '%s' aside: %s", from, strerror(errno));
		}
		gp_warn("replication: the jobs.db of a single scheduler is kept as '%s'; the group "
			"starts with no jobs",
			kept);
	}
	return 0;
}

/* jobs.db made again, empty, with the schema, and opened for the log's entries. 0 / -1. */
static int fresh_db(struct repl *r, const char *state_dir, gp_error_t *err)
{
	unlink_db(r->db_path);
	struct store *st = store_create(state_dir, "off", 0, err);
	if (!st)
		return -1;
	store_destroy(&st);
	if (open_db(r) < 0) {
		gp_errprintf(err, "cannot open '%s': %s", r->db_path,
			     r->db ? sqlite3_errmsg(r->db) : "out of memory");
		return -1;
	}
	return 0;
}

/* Raft's transport (MUNGE on it), I/O and member, its configuration, then the replication
 * thread. 0 / -1 (err). */
static int start_raft(struct repl *r, const struct repl_peer *self, uid_t sched_uid,
		      gp_error_t *err)
{
	uint64_t id = r->id;
	int rc;
	if (uv_loop_init(&r->loop)) {
		gp_errprintf(err, "cannot make the replication's event loop");
		return -1;
	}
	if ((rc = raft_uv_tcp_init(&r->tcp, &r->loop))) {
		gp_errprintf(err, "cannot start Raft's transport: %s", raft_strerror(rc));
		return -1;
	}
	if (repl_auth_init(&r->transport, &r->tcp, &r->loop, id, sched_uid, err) < 0)
		return -1;
	if ((rc = raft_uv_init(&r->io, &r->loop, r->raft_dir, &r->transport))) {
		gp_errprintf(err, "cannot start Raft's I/O in '%s': %s", r->raft_dir,
			     raft_strerror(rc));
		return -1;
	}
	r->fsm = (struct raft_fsm){.version = 2,
				   .data = r,
				   .apply = fsm_apply,
				   .snapshot = fsm_snapshot,
				   .restore = fsm_restore,
				   .snapshot_finalize = fsm_snapshot_finalize};
	if ((rc = raft_init(&r->raft, &r->io, &r->fsm, id, self->address))) {
		gp_errprintf(err, "cannot start Raft member %llu: %s", (unsigned long long)id,
			     raft_errmsg(&r->raft));
		return -1;
	}
	r->raft.data = r;
	r->raft_inited = true;
	struct raft_configuration conf;
	raft_configuration_init(&conf);
	for (int i = 0; i < r->npeers; i++)
		if ((rc = raft_configuration_add(&conf, r->peers[i].id, r->peers[i].address,
						 RAFT_VOTER))) {
			raft_configuration_close(&conf);
			gp_errprintf(err, "sched_peers: %s", raft_strerror(rc));
			return -1;
		}
	/* the same configuration on every member; a member with a log of its own keeps it */
	rc = raft_bootstrap(&r->raft, &conf);
	raft_configuration_close(&conf);
	if (rc && rc != RAFT_CANTBOOTSTRAP) {
		gp_errprintf(err, "cannot bootstrap Raft in '%s': %s", r->raft_dir,
			     raft_strerror(rc));
		return -1;
	}
	raft_set_election_timeout(&r->raft, ELECTION_MS);
	raft_set_heartbeat_timeout(&r->raft, HEARTBEAT_MS);
	raft_set_pre_vote(&r->raft, true);
	raft_set_snapshot_threshold(&r->raft, SNAP_EVERY);
	raft_set_snapshot_trailing(&r->raft, SNAP_TRAILING);
	if ((rc = raft_start(&r->raft))) {
		gp_errprintf(err, "cannot start Raft: %s", raft_errmsg(&r->raft));
		return -1;
	}
	uv_async_init(&r->loop, &r->wake, on_wake);
	r->wake.data = r;
	uv_timer_init(&r->loop, &r->tick);
	r->tick.data = r;
	uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
	if (pthread_create(&r->thread, NULL, thread_main, r)) {
		gp_errprintf(err, "cannot start the replication thread");
		return -1;
	}
	r->thread_started = true;
	return 0;
}

struct repl *repl_create(const char *state_dir, uint64_t id, const char *peers,
			 const char *client_port, uid_t sched_uid, gp_error_t *err)
{
	struct repl *r = calloc(1, sizeof(*r));
	if (!r) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->id = id;
	r->role = -1;
	/* a sequence no earlier process of this id used */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	r->seq = ((uint64_t)now.tv_sec << 20) ^ (uint64_t)now.tv_nsec;
	snprintf(r->client_port, sizeof(r->client_port), "%s", client_port);
	if ((r->npeers = repl_parse_peers(peers, r->peers, MAX_PEERS, err)) < 0)
		goto fail;
	const struct repl_peer *self = NULL;
	for (int i = 0; i < r->npeers; i++)
		if (r->peers[i].id == id)
			self = &r->peers[i];
	if (!self) {
		gp_errprintf(err, "sched_id %llu is not in sched_peers", (unsigned long long)id);
		goto fail;
	}
	snprintf(r->db_path, sizeof(r->db_path), "%s/jobs.db", state_dir);
	snprintf(r->raft_dir, sizeof(r->raft_dir), "%s/raft", state_dir);
	if (gp_mkdir_p(r->raft_dir, 0700) < 0) {
		gp_errprintf(err, "cannot create '%s': %s", r->raft_dir, strerror(errno));
		goto fail;
	}
	if (keep_single_db(r, err) < 0 || fresh_db(r, state_dir, err) < 0 ||
	    start_raft(r, self, sched_uid, err) < 0)
		goto fail;
	gp_info("replication: member %llu of %d at %s, log in %s", (unsigned long long)id,
		r->npeers, self->address, r->raft_dir);
	return r;
fail:
	/* a half-made Raft member is left to the process's exit (it fails to start only at
	 * start-up, and gschedd then exits) */
	if (r->db)
		sqlite3_close(r->db);
	free(r);
	return NULL;
}

void repl_destroy(struct repl **p)
{
	if (!p || !*p)
		return;
	struct repl *r = *p;
	if (r->thread_started) {
		pthread_mutex_lock(&r->mu);
		r->stopping = true;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		uv_async_send(&r->wake);
		pthread_join(r->thread, NULL);
		uv_loop_close(&r->loop);
	}
	if (r->db)
		sqlite3_close(r->db);
	raft_free(r->pbuf);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
	*p = NULL;
}

bool repl_leading(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	bool ok = r->ready && !r->deposed;
	pthread_mutex_unlock(&r->mu);
	return ok;
}

bool repl_deposed(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	bool d = r->deposed;
	pthread_mutex_unlock(&r->mu);
	return d;
}

void repl_leader_endpoint(struct repl *r, char *buf, size_t len)
{
	pthread_mutex_lock(&r->mu);
	uint64_t lid = r->role == RAFT_LEADER && !r->ready ? 0 : r->leader_id;
	pthread_mutex_unlock(&r->mu);
	*buf = 0;
	for (int i = 0; lid && i < r->npeers; i++)
		if (r->peers[i].id == lid)
			snprintf(buf, len, "tcp://%s:%s", r->peers[i].host, r->client_port);
}

void repl_describe(struct repl *r, char *buf, size_t len)
{
	pthread_mutex_lock(&r->mu);
	snprintf(buf, len, "member %llu: %s, leader %llu, %llu entries applied",
		 (unsigned long long)r->id,
		 r->ready		     ? "leading"
		 : r->deposed		     ? "deposed"
		 : r->role == RAFT_LEADER    ? "leader catching up"
		 : r->role == RAFT_CANDIDATE ? "candidate"
		 : r->role == RAFT_FOLLOWER  ? "follower"
					     : "starting",
		 (unsigned long long)r->leader_id, (unsigned long long)r->applied);
	pthread_mutex_unlock(&r->mu);
}

int repl_replicate(struct repl *r, const void *changeset, size_t len, gp_error_t *err)
{
	size_t padded = (ENTRY_HDR + len + 7) & ~(size_t)7;
	uint8_t *buf = raft_calloc(1, padded);
	if (!buf)
		return gp_errprintf(err, "out of memory");
	pthread_mutex_lock(&r->mu);
	if (!r->ready || r->deposed || r->prop != P_NONE) {
		pthread_mutex_unlock(&r->mu);
		raft_free(buf);
		return gp_errprintf(err, "this scheduler no longer leads");
	}
	uint64_t seq = ++r->seq;
	put64(buf, ((uint64_t)r->id << 32) | ENTRY_MAGIC);
	put64(buf + 8, seq);
	put64(buf + 16, len);
	memcpy(buf + ENTRY_HDR, changeset, len);
	r->pbuf = buf;
	r->plen = padded;
	r->pseq = seq;
	r->prop = P_WAITING;
	pthread_mutex_unlock(&r->mu);
	uv_async_send(&r->wake);

	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&r->mu);
	while (r->prop != P_APPLYING && r->prop != P_FAILED && !r->stopping)
		if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
			break;
	int rc = 0;
	if (r->prop != P_APPLYING) {
		rc = gp_errprintf(err, "not replicated to a majority of the schedulers (%s)",
				  r->prop == P_FAILED ? r->perr : "no answer within 15 s");
		/* whether the majority holds it is not known: start again as a standby */
		r->deposed = true;
		r->ready = false;
		if (r->prop == P_FAILED)
			r->prop = P_NONE;
		else
			r->pseq = 0; /* a late commit of it is applied as anyone else's */
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void repl_applied(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	r->prop = P_NONE;
	r->committed = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

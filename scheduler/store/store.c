/* store.c - gschedd's durable state in SQLite: the schema, group commit, the rows of jobs,
 * nodes, cards and chunk grants, and each commit's changes for replication (store.h) */
/* the session extension records each commit's changes for replication (repl.h) */
#define SQLITE_ENABLE_SESSION
#define SQLITE_ENABLE_PREUPDATE_HOOK
#include "scheduler/store/store.h"
#include "scheduler/store/store_int.h"
#include "scheduler/store/store_owner.h"
#include "scheduler/store/store_files.h"
#include "scheduler/store/store_rdv.h"
#include "scheduler/store/store_output.h"
#include "scheduler/store/store_reqid.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/card_state.h"
#include "common/depend.h"
#include "scheduler/core/cards.h"
#include "scheduler/core/jobs.h"
#include "common/log.h"
#include "common/names.h"
#include "common/parse.h"
#include "common/util.h"

#define SCHEMA_VERSION 1

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE IF NOT EXISTS jobs("
    " id INTEGER PRIMARY KEY, uid INTEGER, gid INTEGER, user TEXT, name TEXT,"
    " state INTEGER, attempt INTEGER, priority INTEGER, hold INTEGER, reason TEXT,"
    " submit_time REAL, start_time REAL, end_time REAL, exit_code INTEGER,"
    " cpu_sec REAL, max_rss_kb INTEGER, placement BLOB, spec BLOB, kill_reason INTEGER,"
    " energy_j REAL, energy_sources INTEGER DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_time);"
    /* the state gschedd owns of each card (docs/cards.md), with what identifies the card;
     * idx tells apart cards without a uuid */
    "CREATE TABLE IF NOT EXISTS cards("
    " node TEXT, uuid TEXT, idx INTEGER, pci_bus_id TEXT, name TEXT, fake INTEGER,"
    " state INTEGER, reason TEXT, grade TEXT, throughput REAL, screen_job INTEGER,"
    " PRIMARY KEY(node, uuid, idx));"
    /* every node that ever registered: the cluster's capacity is not known until each of
     * them has registered again after a restart (docs/scheduling.md); a whole node's drain
     * (gnodes drain NODE) and its reason */
    "CREATE TABLE IF NOT EXISTS nodes(name TEXT PRIMARY KEY, drain INTEGER DEFAULT 0,"
    " reason TEXT, member INTEGER DEFAULT 1);"
    /* who may use a chunk of the chunk store (docs/security.md, Files): a uid that sent its
     * bytes, or owns a job whose file set holds it; knowing a hash is not enough */
    "CREATE TABLE IF NOT EXISTS chunk_users(hash BLOB NOT NULL, uid INTEGER NOT NULL,"
    " PRIMARY KEY(hash, uid)) WITHOUT ROWID;";

/* Retention (docs/reliability.md): a purged job leaves its accounting record here, what gacct
 * shows (no spec, no token, no output). Same columns as jobs, in the same order, without spec
 * and token, and with the time it was purged. */
static const char summary_schema[] =
    "CREATE TABLE IF NOT EXISTS job_summary("
    " id INTEGER PRIMARY KEY, uid INTEGER, gid INTEGER, user TEXT, name TEXT,"
    " state INTEGER, attempt INTEGER, priority INTEGER, hold INTEGER, reason TEXT,"
    " submit_time REAL, start_time REAL, end_time REAL, exit_code INTEGER,"
    " cpu_sec REAL, max_rss_kb INTEGER, placement BLOB, kill_reason INTEGER,"
    " energy_j REAL, energy_sources INTEGER, array_job_id INTEGER, array_task_id INTEGER,"
    " purge_time REAL);"
    "CREATE INDEX IF NOT EXISTS job_summary_end ON job_summary(end_time);"
    "CREATE INDEX IF NOT EXISTS job_summary_array ON job_summary(array_job_id) WHERE "
    "array_job_id > 0;";

#define SUMMARY_COLS                                                                               \
	"id,uid,gid,user,name,state,attempt,priority,hold,reason,submit_time,start_time,end_time," \
	"exit_code,cpu_sec,max_rss_kb,placement,kill_reason,energy_j,energy_sources,array_job_id," \
	"array_task_id"
/* A summary row in the column order row_to_job reads (spec and token NULL). */
#define SUMMARY_SELECT                                                                             \
	"SELECT id,uid,gid,user,name,state,attempt,priority,hold,reason,submit_time,start_time,"   \
	"end_time,exit_code,cpu_sec,max_rss_kb,placement,NULL,kill_reason,energy_j,"               \
	"energy_sources,array_job_id,array_task_id,NULL,NULL FROM job_summary "
/* Finished jobs that ended before ?1, oldest first, at most ?2. An array's first task holds the
 * spec its other tasks share: it waits until no other task of its array is left. Uses jobs_end
 * and jobs_array: no scan of the table. */
#define PURGE_SELECT                                                                               \
	"SELECT id FROM jobs WHERE end_time > 0 AND end_time < ?1 AND state NOT IN (1,2,9,10)"     \
	" AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.array_job_id = jobs.id AND"                 \
	" c.array_job_id > 0 AND c.id <> jobs.id) ORDER BY end_time LIMIT ?2"

static int prep(struct store *st, const char *sql, sqlite3_stmt **s, gp_error_t *err)
{
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL) != SQLITE_OK)
		return gp_errprintf(err, "sqlite: %s", sqlite3_errmsg(st->db));
	return 0;
}

/* Columns added since a jobs.db could first have been made: ALTER TABLE adds them, at the end
 * of the row (where row_to_job reads them), to a table made before they existed. */
static const struct {
	const char *table, *name, *decl;
} added_columns[] = {
    {"jobs", "energy_sources", "energy_sources INTEGER DEFAULT 0"},
    /* job arrays: a task's array and index; only an array's first task stores the spec */
    {"jobs", "array_job_id", "array_job_id INTEGER DEFAULT 0"},
    {"jobs", "array_task_id", "array_task_id INTEGER DEFAULT 0"},
    /* the client's submission token (SubmitRequest.token): a retry finds its job */
    {"jobs", "token", "token TEXT"},
    /* a whole node's drain, kept over gschedd's restarts */
    {"nodes", "drain", "drain INTEGER DEFAULT 0"},
    {"nodes", "reason", "reason TEXT"},
    /* a member of the pool's majority: 0 once declared DOWN, 1 again when it registers */
    {"nodes", "member", "member INTEGER DEFAULT 1"},
};

/* The columns row_to_job reads: every column of jobs, then the spec, a task's own or its
 * array's (column JOB_SPEC_COL). */
#define JOB_SELECT                                                                                 \
	"SELECT jobs.*, coalesce(jobs.spec, (SELECT p.spec FROM jobs p WHERE p.id = "              \
	"jobs.array_job_id)) FROM jobs "
#define JOB_SPEC_COL 24

static int add_columns(struct store *st, gp_error_t *err)
{
	for (size_t i = 0; i < sizeof(added_columns) / sizeof(added_columns[0]); i++) {
		char sql[256];
		sqlite3_stmt *s = NULL;
		snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", added_columns[i].name,
			 added_columns[i].table);
		if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
			sqlite3_finalize(s);
			continue;
		}
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s", added_columns[i].table,
			 added_columns[i].decl);
		char *msg = NULL;
		if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
			gp_errprintf(err, "cannot add column '%s' to %s: %s", added_columns[i].name,
				     added_columns[i].table, msg ? msg : "?");
			sqlite3_free(msg);
			return -1;
		}
		gp_info("jobs.db: added column %s to %s", added_columns[i].name,
			added_columns[i].table);
	}
	return 0;
}

struct store *store_create(const char *dir, const char *sync_mode, int64_t delay_ms,
			   gp_error_t *err)
{
	char path[4096];
	struct store *st = calloc(1, sizeof(*st));
	if (!st) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	st->delay_ms = delay_ms;
	if (gp_mkdir_p(dir, 0700) < 0) {
		gp_errprintf(err, "cannot create state directory '%s': %s", dir, strerror(errno));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/jobs.db", dir);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		gp_errprintf(err, "cannot open '%s': %s", path,
			     st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	const char *sync = !strcmp(sync_mode, "off")	  ? "OFF"
			   : !strcmp(sync_mode, "normal") ? "NORMAL"
							  : "FULL";
	char pragmas[256];
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA busy_timeout=5000;", sync);
	char *msg = NULL;
	if (sqlite3_exec(st->db, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
		gp_errprintf(err, "cannot set up '%s': %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		goto fail;
	}
	if (add_columns(st, err) < 0)
		goto fail;
	if (store_reqid_init(st->db) < 0) {
		gp_errprintf(err, "cannot make the request ids' table: %s", sqlite3_errmsg(st->db));
		goto fail;
	}
	if (store_files_init(st->db) < 0) {
		gp_errprintf(err, "cannot make the replicated file sets' tables: %s",
			     sqlite3_errmsg(st->db));
		goto fail;
	}
	if (store_output_init(st->db) < 0) {
		gp_errprintf(err, "cannot make the replicated output table: %s",
			     sqlite3_errmsg(st->db));
		goto fail;
	}
	if (store_rdv_init(st->db) < 0) {
		gp_errprintf(err, "cannot make the replicated rendezvous table: %s",
			     sqlite3_errmsg(st->db));
		goto fail;
	}
	if (store_owner_init(st->db) < 0) {
		gp_errprintf(err, "cannot make the owners' tables: %s", sqlite3_errmsg(st->db));
		goto fail;
	}
	if (sqlite3_exec(st->db, summary_schema, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(st->db,
			 "CREATE INDEX IF NOT EXISTS jobs_array ON jobs(array_job_id) WHERE "
			 "array_job_id > 0;"
			 "CREATE INDEX IF NOT EXISTS jobs_token ON jobs(uid, token) WHERE token IS "
			 "NOT NULL;",
			 NULL, NULL, &msg) != SQLITE_OK) {
		gp_errprintf(err, "cannot index '%s': %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		goto fail;
	}
	if (prep(st,
		 "INSERT INTO jobs(id,uid,gid,user,name,state,attempt,priority,hold,reason,"
		 "submit_time,start_time,end_time,exit_code,cpu_sec,max_rss_kb,placement,spec,kill_"
		 "reason,"
		 "energy_j,array_job_id,array_task_id,token) "
		 "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,?,?,?)",
		 &st->ins, err) < 0 ||
	    prep(st,
		 "UPDATE jobs SET state=?2, attempt=?3, priority=?4, hold=?5, reason=?6,"
		 " start_time=?7, end_time=?8, exit_code=?9, cpu_sec=?10, max_rss_kb=?11,"
		 " placement=?12, kill_reason=?13, energy_j=?14, energy_sources=?15 WHERE id=?1",
		 &st->upd, err) < 0 ||
	    prep(
		st,
		"SELECT coalesce(spec, (SELECT p.spec FROM jobs p WHERE p.id = jobs.array_job_id)) "
		"FROM jobs WHERE id=?",
		&st->spec, err) < 0 ||
	    prep(st, "DELETE FROM cards WHERE node=?", &st->cards_del, err) < 0 ||
	    prep(st,
		 "INSERT INTO cards(node,uuid,idx,pci_bus_id,name,fake,state,reason,grade,"
		 "throughput,screen_job) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
		 &st->cards_ins, err) < 0 ||
	    prep(st, "INSERT OR IGNORE INTO nodes(name) VALUES(?)", &st->node_ins, err) < 0 ||
	    prep(st,
		 "INSERT INTO nodes(name,drain,reason) VALUES(?1,?2,?3) ON CONFLICT(name) DO "
		 "UPDATE SET drain=?2, reason=?3",
		 &st->node_drain, err) < 0 ||
	    prep(st,
		 "INSERT INTO nodes(name,member) VALUES(?1,?2) ON CONFLICT(name) DO "
		 "UPDATE SET member=?2",
		 &st->node_member, err) < 0 ||
	    prep(st, PURGE_SELECT, &st->purge_sel, err) < 0 ||
	    prep(st,
		 "INSERT OR REPLACE INTO job_summary SELECT " SUMMARY_COLS
		 ", ?2 FROM jobs WHERE id=?1",
		 &st->purge_keep, err) < 0 ||
	    prep(st, "DELETE FROM jobs WHERE id=?1", &st->purge_del, err) < 0 ||
	    prep(st, "INSERT OR IGNORE INTO chunk_users(hash,uid) VALUES(?1,?2)", &st->chunk_grant,
		 err) < 0 ||
	    prep(st, "SELECT 1 FROM chunk_users WHERE hash=?1 AND uid=?2", &st->chunk_may, err) <
		0 ||
	    prep(st, "BEGIN", &st->begin, err) < 0 || prep(st, "COMMIT", &st->commit, err) < 0 ||
	    prep(st, "ROLLBACK", &st->rollback, err) < 0)
		goto fail;
	return st;
fail:
	store_destroy(&st);
	return NULL;
}

void store_destroy(struct store **p)
{
	if (!p || !*p)
		return;
	struct store *st = *p;
	if (st->in_txn)
		store_commit(st, NULL);
	sqlite3_stmt *s[] = {st->ins,	     st->upd,	      st->spec,	      st->begin,
			     st->commit,     st->rollback,    st->cards_del,  st->cards_ins,
			     st->node_ins,   st->purge_sel,   st->purge_keep, st->purge_del,
			     st->node_drain, st->chunk_grant, st->chunk_may,  st->node_member};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		sqlite3_finalize(s[i]);
	if (st->session)
		sqlite3session_delete(st->session);
	if (st->db)
		sqlite3_close(st->db);
	free(st);
	*p = NULL;
}

static int begin(struct store *st)
{
	return store_txn_begin(st);
}

/* placement: "node:local_rank:cpu_first:state:status:oom:cards(hex)" per task */
static char *placement_text(const struct job *j);

static int run(struct store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_DONE) {
		gp_err("sqlite: %s", sqlite3_errmsg(st->db));
		st->failed = true;
		errno = rc == SQLITE_FULL ? ENOSPC : EIO;
		return -1;
	}
	st->rows++;
	return 0;
}

int store_job_insert(struct store *st, const struct job *j, const uint8_t *spec, size_t len,
		     const char *token)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_stmt *s = st->ins;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)j->id);
	sqlite3_bind_int64(s, 2, j->uid);
	sqlite3_bind_int64(s, 3, j->gid);
	sqlite3_bind_text(s, 4, j->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, j->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 6, j->state);
	sqlite3_bind_int(s, 7, (int)j->attempt);
	sqlite3_bind_int(s, 8, j->priority);
	sqlite3_bind_int(s, 9, j->hold);
	sqlite3_bind_text(s, 10, j->end_reason ? j->end_reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 11, j->submit_time);
	sqlite3_bind_double(s, 12, j->start_time);
	sqlite3_bind_double(s, 13, j->end_time);
	sqlite3_bind_int(s, 14, j->exit_code);
	sqlite3_bind_double(s, 15, j->cpu_sec);
	sqlite3_bind_int64(s, 16, (sqlite3_int64)j->max_rss_kb);
	sqlite3_bind_null(s, 17);
	if (spec)
		sqlite3_bind_blob(s, 18, spec, (int)len, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 18);
	sqlite3_bind_int64(s, 19, (sqlite3_int64)j->array_job_id);
	sqlite3_bind_int64(s, 20, j->array_task_id);
	if (token && *token)
		sqlite3_bind_text(s, 21, token, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 21);
	return run(st, s);
}

/* Node names are not known here: the caller's jobs module resolves them through a hook. */
static const char *(*node_name_fn)(int idx);

void store_set_node_namer(const char *(*fn)(int idx))
{
	node_name_fn = fn;
}

static char *placement_text(const struct job *j)
{
	if (!j->tasks || !node_name_fn)
		return NULL;
	gp_buf_t b = {0};
	for (uint32_t i = 0; i < j->ntasks; i++) {
		char item[300];
		const struct task *t = &j->tasks[i];
		int n = snprintf(item, sizeof(item), "%s%s:%u:%u:%u:%d:%d:%llx", i ? "," : "",
				 node_name_fn(t->node), t->local_rank, t->cpu_first, t->state,
				 t->status, t->oom, (unsigned long long)t->cards);
		if (gp_buf_append(&b, item, (size_t)n) < 0) {
			gp_buf_release(&b);
			return NULL;
		}
	}
	gp_buf_append(&b, "", 1);
	return (char *)b.data;
}

int store_job_update(struct store *st, const struct job *j)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_stmt *s = st->upd;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)j->id);
	sqlite3_bind_int(s, 2, j->state);
	sqlite3_bind_int(s, 3, (int)j->attempt);
	sqlite3_bind_int(s, 4, j->priority);
	sqlite3_bind_int(s, 5, j->hold);
	sqlite3_bind_text(s, 6, j->end_reason ? j->end_reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 7, j->start_time);
	sqlite3_bind_double(s, 8, j->end_time);
	sqlite3_bind_int(s, 9, j->exit_code);
	sqlite3_bind_double(s, 10, j->cpu_sec);
	sqlite3_bind_int64(s, 11, (sqlite3_int64)j->max_rss_kb);
	char *pl = placement_text(j);
	if (pl)
		sqlite3_bind_text(s, 12, pl, -1, free);
	else
		sqlite3_bind_null(s, 12);
	sqlite3_bind_int(s, 13, j->kill_reason);
	sqlite3_bind_double(s, 14, j->energy_j);
	sqlite3_bind_int64(s, 15, j->energy_sources);
	return run(st, s);
}

int store_job_spec_update(struct store *st, uint64_t id, const uint8_t *spec, size_t len)
{
	if (begin(st) < 0)
		return -1;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "UPDATE jobs SET spec=?2 WHERE id=?1", -1, &s, NULL) !=
	    SQLITE_OK)
		return (errno = EIO, -1);
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	sqlite3_bind_blob(s, 2, spec, (int)len, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		st->failed = true;
		return (errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1);
	}
	st->rows++;
	return 0;
}

Gpool__JobSpec *store_job_spec(struct store *st, uint64_t id)
{
	sqlite3_stmt *s = st->spec;
	Gpool__JobSpec *spec = NULL;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	if (sqlite3_step(s) == SQLITE_ROW) {
		const void *blob = sqlite3_column_blob(s, 0);
		int len = sqlite3_column_bytes(s, 0);
		spec = gpool__job_spec__unpack(NULL, (size_t)len, blob);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (!spec)
		errno = ENOENT;
	return spec;
}

static char *colstr(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	return strdup(t ? (const char *)t : "");
}

static const char *text(const char *s)
{
	return s ? s : "";
}

int store_cards_save(struct store *st, const char *node, Gpool__Card *const *cards, size_t n)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_text(st->cards_del, 1, node, -1, SQLITE_STATIC);
	if (run(st, st->cards_del) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const Gpool__Card *c = cards[i];
		sqlite3_stmt *s = st->cards_ins;
		sqlite3_bind_text(s, 1, node, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, text(c->uuid), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, c->index);
		sqlite3_bind_text(s, 4, text(c->pci_bus_id), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, text(c->name), -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 6, c->fake);
		sqlite3_bind_int(s, 7, c->state);
		sqlite3_bind_text(s, 8, text(c->state_reason), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 9, text(c->grade), -1, SQLITE_STATIC);
		sqlite3_bind_double(s, 10, c->throughput);
		sqlite3_bind_int64(s, 11, (sqlite3_int64)c->screen_job);
		if (run(st, s) < 0)
			return -1;
	}
	return 0;
}

int store_node_known(struct store *st, const char *node)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_text(st->node_ins, 1, node, -1, SQLITE_STATIC);
	return run(st, st->node_ins);
}

int store_node_drain(struct store *st, const char *node, bool drain, const char *reason)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_text(st->node_drain, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st->node_drain, 2, drain);
	sqlite3_bind_text(st->node_drain, 3, text(reason), -1, SQLITE_STATIC);
	return run(st, st->node_drain);
}

int store_node_member(struct store *st, const char *node, bool member)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_text(st->node_member, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st->node_member, 2, member);
	return run(st, st->node_member);
}

int store_chunk_grant(struct store *st, const uint8_t *hash, size_t len, uint32_t uid)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_blob(st->chunk_grant, 1, hash, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(st->chunk_grant, 2, uid);
	return run(st, st->chunk_grant);
}

int store_chunk_may(struct store *st, const uint8_t *hash, size_t len, uint32_t uid)
{
	sqlite3_stmt *s = st->chunk_may;
	sqlite3_bind_blob(s, 1, hash, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, uid);
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	gp_err("sqlite: %s", sqlite3_errmsg(st->db));
	return errno = EIO, -1;
}

int store_nodes_load(struct store *st, store_node_f fn, void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT name, drain, reason, member FROM nodes", -1, &s,
			       NULL) != SQLITE_OK)
		return errno = EIO, -1;
	int rc = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(s, 0);
		const unsigned char *why = sqlite3_column_text(s, 2);
		if (fn(arg, name ? (const char *)name : "", sqlite3_column_int(s, 1) != 0,
		       why ? (const char *)why : "", sqlite3_column_int(s, 3) != 0) < 0) {
			sqlite3_finalize(s);
			return errno = ENOMEM, -1;
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : (errno = EIO, -1);
}

/* A text column into a card's string field (an empty one stays protobuf-c's empty string). */
static int card_text(char **field, sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	return t && *t ? card_set_text(field, (const char *)t) : 0;
}

/* A card as the store knows it: what identifies it and the owned fields. */
static Gpool__Card *row_to_card(sqlite3_stmt *s)
{
	Gpool__Card *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	gpool__card__init(c);
	c->index = (uint32_t)sqlite3_column_int64(s, 2);
	c->fake = sqlite3_column_int(s, 5) != 0;
	c->state = (Gpool__CardState)sqlite3_column_int(s, 6);
	c->throughput = sqlite3_column_double(s, 9);
	c->screen_job = (uint64_t)sqlite3_column_int64(s, 10);
	if (card_text(&c->uuid, s, 1) < 0 || card_text(&c->pci_bus_id, s, 3) < 0 ||
	    card_text(&c->name, s, 4) < 0 || card_text(&c->state_reason, s, 7) < 0 ||
	    card_text(&c->grade, s, 8) < 0) {
		gpool__card__free_unpacked(c, NULL);
		return NULL;
	}
	return c;
}

int store_cards_load(struct store *st, store_card_f fn, void *arg)
{
	sqlite3_stmt *s;
	const char *sql = "SELECT node,uuid,idx,pci_bus_id,name,fake,state,reason,grade,throughput,"
			  "screen_job FROM cards ORDER BY node, idx";
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	int rc = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *node = sqlite3_column_text(s, 0);
		Gpool__Card *c = row_to_card(s);
		if (!c || fn(arg, node ? (const char *)node : "", c) < 0) {
			sqlite3_finalize(s);
			return errno = ENOMEM, -1;
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : (errno = EIO, -1);
}

/* Rebuild the in-memory job from a row (the spec supplies the scheduling fields). */
static struct job *row_to_job(sqlite3_stmt *s)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->id = (uint64_t)sqlite3_column_int64(s, 0);
	j->uid = (uint32_t)sqlite3_column_int64(s, 1);
	j->gid = (uint32_t)sqlite3_column_int64(s, 2);
	j->user = colstr(s, 3);
	j->name = colstr(s, 4);
	j->state = sqlite3_column_int(s, 5);
	j->attempt = (uint32_t)sqlite3_column_int(s, 6);
	j->priority = sqlite3_column_int(s, 7);
	j->hold = sqlite3_column_int(s, 8);
	j->end_reason = colstr(s, 9);
	j->submit_time = sqlite3_column_double(s, 10);
	j->start_time = sqlite3_column_double(s, 11);
	j->end_time = sqlite3_column_double(s, 12);
	j->exit_code = sqlite3_column_int(s, 13);
	store_owner_job_load(sqlite3_db_handle(s), j->id, &j->frozen_ms, &j->vacates);
	j->cpu_sec = sqlite3_column_double(s, 14);
	j->max_rss_kb = (uint64_t)sqlite3_column_int64(s, 15);
	j->kill_reason = sqlite3_column_int(s, 18);
	j->energy_j = sqlite3_column_double(s, 19);
	j->energy_sources = (uint32_t)sqlite3_column_int64(s, 20);
	const unsigned char *pl = sqlite3_column_text(s, 16);
	if (pl && *pl)
		j->placement_text = strdup((const char *)pl);
	j->array_job_id = (uint64_t)sqlite3_column_int64(s, 21);
	j->array_task_id = (uint32_t)sqlite3_column_int64(s, 22);
	const void *blob = sqlite3_column_blob(s, JOB_SPEC_COL);
	Gpool__JobSpec *sp =
	    gpool__job_spec__unpack(NULL, (size_t)sqlite3_column_bytes(s, JOB_SPEC_COL), blob);
	if (sp) {
		j->ntasks = sp->ntasks ? sp->ntasks : 1;
		j->cpus_per_task = sp->cpus_per_task ? sp->cpus_per_task : 1;
		j->nodes_min = sp->nodes_min;
		j->nodes_max = sp->nodes_max;
		j->mem_mb = sp->mem_per_node_mb;
		j->time_limit = sp->time_limit_sec;
		j->no_requeue = sp->no_requeue;
		j->ckpt_signal = sp->ckpt_signal;
		j->ckpt_sec = sp->ckpt_signal_sec;
		j->screen = sp->screen;
		j->service = sp->service && !sp->service_of;
		j->svc_of = sp->service_of;
		j->alloc = sp->alloc;
		j->step_of = sp->step_of;
		j->pty = sp->pty;
		j->pty_keep_sec = sp->pty_keep_sec;
		j->svc_index = sp->replica_index;
		j->out_pattern = strdup(sp->output);
		j->err_pattern = strdup(sp->error);
		char why[8];
		int bad;
		j->gpu = gpu_req_from_spec(sp, why, sizeof(why), &bad);
		if (job_take_spec_extras(j, sp) < 0)
			gp_warn("job %llu: its array or dependency field does not parse: ignored",
				(unsigned long long)j->id);
		gpool__job_spec__free_unpacked(sp, NULL);
	} else {
		j->ntasks = j->cpus_per_task = 1;
	}
	return j;
}

int store_load(struct store *st, bool active_only, store_load_f fn, void *arg)
{
	sqlite3_stmt *s;
	const char *sql = active_only ? JOB_SELECT "WHERE state IN (1,2,9,10) ORDER BY id"
				      : JOB_SELECT "ORDER BY id";
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	int rc = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct job *j = row_to_job(s);
		if (!j || fn(arg, j) < 0) {
			rc = -1;
			break;
		}
	}
	sqlite3_finalize(s);
	return rc;
}

uint64_t store_max_job_id(struct store *st)
{
	sqlite3_stmt *s;
	uint64_t id = 0;
	/* purged jobs count too: their ids are never given again */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT max(coalesce((SELECT max(id) FROM jobs), 0),"
			       " coalesce((SELECT max(id) FROM job_summary), 0))",
			       -1, &s, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		id = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

#define HISTORY_WHERE                                                                              \
	"WHERE state NOT IN (1,2,9,10) AND (?1 OR uid = ?2) AND end_time >= ?3 AND end_time <= ?4" \
	" ORDER BY id DESC LIMIT ?5"

static int history(struct store *st, const char *sql, uint32_t uid_filter, bool any_uid,
		   double since, double until, uint32_t limit, store_hist_f fn, void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int(s, 1, any_uid);
	sqlite3_bind_int64(s, 2, uid_filter);
	sqlite3_bind_double(s, 3, since);
	sqlite3_bind_double(s, 4, until > 0 ? until : 1e18);
	sqlite3_bind_int64(s, 5, limit ? limit : 1000);
	int rc = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct job *j = row_to_job(s);
		if (!j)
			break;
		rc = fn(arg, j);
		if (rc < 0)
			break;
	}
	sqlite3_finalize(s);
	return rc;
}

int store_history(struct store *st, uint32_t uid_filter, bool any_uid, double since, double until,
		  uint32_t limit, store_hist_f fn, void *arg)
{
	return history(st, JOB_SELECT HISTORY_WHERE, uid_filter, any_uid, since, until, limit, fn,
		       arg);
}

int store_summary_history(struct store *st, uint32_t uid_filter, bool any_uid, double since,
			  double until, uint32_t limit, store_hist_f fn, void *arg)
{
	return history(st, SUMMARY_SELECT HISTORY_WHERE, uid_filter, any_uid, since, until, limit,
		       fn, arg);
}

bool store_in_txn(const struct store *st)
{
	return st->in_txn;
}

bool store_replicated(const struct store *st)
{
	return st->replicate != NULL;
}

/* A fresh session over every table: what it records is the next commit's changeset. */
static int session_start(struct store *st)
{
	if (st->session)
		sqlite3session_delete(st->session);
	st->session = NULL;
	if (sqlite3session_create(st->db, "main", &st->session) != SQLITE_OK ||
	    sqlite3session_attach(st->session, NULL) != SQLITE_OK) {
		if (st->session)
			sqlite3session_delete(st->session);
		st->session = NULL;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int store_set_replication(struct store *st, store_replicate_f fn, store_replicated_f done,
			  void *arg)
{
	if (st->in_txn) {
		errno = EBUSY;
		return -1;
	}
	if (session_start(st) < 0)
		return -1;
	st->replicate = fn;
	st->replicated = done;
	st->repl_arg = arg;
	return 0;
}

/* Hand the open transaction's changes to the replication before it commits: 0 when there
 * are none or a majority holds them (done() is then due after the commit), -1 with err filled
 * when they must roll back. */
static int replicate(struct store *st, bool *due, gp_error_t *err)
{
	*due = false;
	if (!st->replicate || st->failed)
		return 0;
	int n = 0;
	void *cs = NULL;
	if (!st->session || sqlite3session_changeset(st->session, &n, &cs) != SQLITE_OK) {
		sqlite3_free(cs);
		return gp_errprintf(err, "cannot collect the changes to replicate");
	}
	int rc = 0;
	if (n > 0) {
		rc = st->replicate(st->repl_arg, cs, (size_t)n, err);
		*due = rc == 0;
	}
	sqlite3_free(cs);
	return rc;
}

int store_commit(struct store *st, gp_error_t *err)
{
	if (!st->in_txn)
		return 0;
	bool due = false;
	gp_error_t rerr = {{0}};
	if (replicate(st, &due, &rerr) < 0) {
		sqlite3_reset(st->rollback);
		sqlite3_step(st->rollback);
		sqlite3_reset(st->rollback);
		st->in_txn = false;
		st->failed = false;
		session_start(st);
		errno = EIO;
		return gp_errprintf(err, "cannot save state: %s", rerr.text);
	}
	sqlite3_stmt *s = st->failed ? st->rollback : st->commit;
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	st->in_txn = false;
	bool failed = st->failed;
	st->failed = false;
	if (rc != SQLITE_DONE || failed) {
		int e = sqlite3_errcode(st->db);
		if (rc != SQLITE_DONE && sqlite3_get_autocommit(st->db) == 0) {
			sqlite3_reset(st->rollback);
			sqlite3_step(st->rollback);
			sqlite3_reset(st->rollback);
		}
		if (due)
			st->replicated(st->repl_arg);
		if (st->replicate)
			session_start(st);
		errno = e == SQLITE_FULL ? ENOSPC : EIO;
		return gp_errprintf(err, "cannot save state: %s", sqlite3_errstr(e));
	}
	if (due)
		st->replicated(st->repl_arg);
	if (st->replicate)
		session_start(st);
	st->commits++;
	return 0;
}

void store_stats(const struct store *st, uint64_t *commits, uint64_t *rows)
{
	*commits = st->commits;
	*rows = st->rows;
}

static struct job *load_one(struct store *st, const char *sql, uint64_t id)
{
	sqlite3_stmt *s;
	struct job *j = NULL;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, NULL;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	if (sqlite3_step(s) == SQLITE_ROW)
		j = row_to_job(s);
	sqlite3_finalize(s);
	if (!j)
		errno = ENOENT;
	return j;
}

struct job *store_job_load(struct store *st, uint64_t id)
{
	return load_one(st, JOB_SELECT "WHERE id=?", id);
}

struct job *store_summary_load(struct store *st, uint64_t id)
{
	return load_one(st, SUMMARY_SELECT "WHERE id=?", id);
}

int store_purge_candidates(struct store *st, double cutoff, uint64_t *ids, size_t max, size_t *n)
{
	sqlite3_stmt *s = st->purge_sel;
	*n = 0;
	sqlite3_bind_double(s, 1, cutoff);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max)
		ids[(*n)++] = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : (errno = EIO, -1);
}

int store_purge_job(struct store *st, uint64_t id, double now)
{
	if (begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_bind_int64(st->purge_keep, 1, (sqlite3_int64)id);
	sqlite3_bind_double(st->purge_keep, 2, now);
	if (run(st, st->purge_keep) < 0)
		return -1;
	sqlite3_bind_int64(st->purge_del, 1, (sqlite3_int64)id);
	if (run(st, st->purge_del) < 0)
		return -1;
	/* its replicated file sets and output (none with one scheduler) */
	return store_files_forget(st, id) < 0 ? -1 : store_output_forget(st, id);
}

uint64_t store_job_by_token(struct store *st, uint32_t uid, const char *token)
{
	sqlite3_stmt *s;
	uint64_t id = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id FROM jobs WHERE uid=? AND token=? ORDER BY id LIMIT 1",
			       -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, uid);
	sqlite3_bind_text(s, 2, token, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		id = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

/* Count the rows of a dependency target: state, and whether each started. */
static int count_rows(sqlite3_stmt *s, struct gp_dep_target *t)
{
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		Gpool__JobState st = sqlite3_column_int(s, 0);
		bool started = sqlite3_column_int(s, 1) != 0;
		uint32_t n = (uint32_t)sqlite3_column_int64(s, 2);
		t->exists = true;
		t->total += n;
		if (gp_job_state_final(st))
			t->ended += n;
		if (started || st == GPOOL__JOB_STATE__RUNNING ||
		    st == GPOOL__JOB_STATE__COMPLETING)
			t->started += n;
		if (st == GPOOL__JOB_STATE__COMPLETED)
			t->ok += n;
	}
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_dep_target(struct store *st, uint64_t id, bool has_task, uint32_t task,
		     struct gp_dep_target *t)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *s;
	/* a job by its id; when it is an array's first task (its array_job_id is its own id),
	 * every task of that array. Each query uses an index: no scan of the history. */
	bool array = has_task;
	if (!has_task) {
		if (sqlite3_prepare_v2(st->db, "SELECT array_job_id FROM jobs WHERE id=?", -1, &s,
				       NULL) != SQLITE_OK)
			return errno = EIO, -1;
		sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
		int rc = sqlite3_step(s);
		array = rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(s, 0) == id;
		sqlite3_finalize(s);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return errno = EIO, -1;
	}
	/* a purged target (or part of one) still counts: its summary row says how it ended */
	static const char *const sql[2][3] = {
	    {"SELECT state, start_time > 0, count(*) FROM jobs WHERE id=?1 GROUP BY 1, 2",
	     "SELECT state, start_time > 0, count(*) FROM jobs WHERE array_job_id=?1 AND "
	     "array_task_id=?2 AND array_job_id > 0 GROUP BY 1, 2",
	     "SELECT state, start_time > 0, count(*) FROM jobs WHERE array_job_id=?1 AND "
	     "array_job_id > 0 GROUP BY 1, 2"},
	    {"SELECT state, start_time > 0, count(*) FROM job_summary WHERE id=?1 GROUP BY 1, 2",
	     "SELECT state, start_time > 0, count(*) FROM job_summary WHERE array_job_id=?1 AND "
	     "array_task_id=?2 AND array_job_id > 0 GROUP BY 1, 2",
	     "SELECT state, start_time > 0, count(*) FROM job_summary WHERE array_job_id=?1 AND "
	     "array_job_id > 0 GROUP BY 1, 2"},
	};
	int which = !array ? 0 : has_task ? 1 : 2;
	if (!array) { /* an array's first task may be purged after the others: by id first */
		if (sqlite3_prepare_v2(st->db,
				       "SELECT array_job_id FROM job_summary WHERE id=? AND "
				       "array_job_id=id",
				       -1, &s, NULL) != SQLITE_OK)
			return errno = EIO, -1;
		sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
		if (sqlite3_step(s) == SQLITE_ROW)
			which = 2;
		sqlite3_finalize(s);
	}
	for (int tab = 0; tab < 2; tab++) {
		if (sqlite3_prepare_v2(st->db, sql[tab][which], -1, &s, NULL) != SQLITE_OK)
			return errno = EIO, -1;
		sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
		if (has_task)
			sqlite3_bind_int64(s, 2, task);
		int rc = count_rows(s, t);
		sqlite3_finalize(s);
		if (rc < 0)
			return errno = EIO, -1;
	}
	return 0;
}

int store_array_tasks(struct store *st, uint64_t array_id, uint64_t **ids, uint32_t **tasks,
		      size_t *n)
{
	sqlite3_stmt *s;
	*ids = NULL;
	*tasks = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, array_task_id FROM jobs WHERE array_job_id=? AND "
			       "array_job_id > 0 ORDER BY id",
			       -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)array_id);
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint64_t *ni = realloc(*ids, cap * sizeof(*ni));
			if (ni)
				*ids = ni;
			uint32_t *nt = realloc(*tasks, cap * sizeof(*nt));
			if (nt)
				*tasks = nt;
			if (!ni || !nt) {
				rc = SQLITE_NOMEM;
				break;
			}
		}
		(*ids)[*n] = (uint64_t)sqlite3_column_int64(s, 0);
		(*tasks)[*n] = (uint32_t)sqlite3_column_int64(s, 1);
		(*n)++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*ids);
		free(*tasks);
		*ids = NULL;
		*tasks = NULL;
		*n = 0;
		return errno = rc == SQLITE_NOMEM ? ENOMEM : EIO, -1;
	}
	return 0;
}

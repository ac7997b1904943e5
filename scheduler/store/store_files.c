/* store_files.c: file sets and their chunks' bytes in jobs.db (see store_files.h). */
#include "scheduler/store/store_files.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "scheduler/store/store.h"

int store_files_init(struct sqlite3 *db)
{
	return sqlite3_exec(db,
			    "CREATE TABLE IF NOT EXISTS repl_sets(job INTEGER NOT NULL,"
			    " kind TEXT NOT NULL, name TEXT NOT NULL, uid INTEGER NOT NULL,"
			    " fileset BLOB NOT NULL, PRIMARY KEY(job, kind, name));"
			    "CREATE TABLE IF NOT EXISTS repl_chunks(job INTEGER NOT NULL,"
			    " kind TEXT NOT NULL, name TEXT NOT NULL, hash BLOB NOT NULL,"
			    " data BLOB NOT NULL, PRIMARY KEY(job, kind, name, hash));"
			    "CREATE INDEX IF NOT EXISTS repl_chunks_hash ON repl_chunks(hash);",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

/* Run sql with job (and kind, name when given) bound. 0 / -1 with errno set. */
static int exec_bound(struct store *st, const char *sql, uint64_t job, const char *kind,
		      const char *name)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
	if (kind) {
		sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, name, -1, SQLITE_STATIC);
	}
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_fail_txn(st);
		return errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1;
	}
	return 0;
}

/* The rows of job (and of kind/name when given: ?2, ?3 are NULL otherwise) in table t. */
#define ROWS_OF(t) t ".job=?1 AND (?2 IS NULL OR (" t ".kind=?2 AND " t ".name=?3))"

/* Delete job's chunk rows (of kind/name when given). A chunk's bytes are kept once: in the
 * first row of its hash, the others empty (references). Bytes about to go move first to one
 * row that refers to them, so the set or job that still needs them keeps them. */
static int release_chunks(struct store *st, uint64_t job, const char *kind, const char *name)
{
	if (exec_bound(st,
		       "UPDATE repl_chunks SET data=(SELECT d.data FROM repl_chunks d"
		       " WHERE d.hash=repl_chunks.hash AND length(d.data)>0 AND " ROWS_OF(
			   "d") ")"
				" WHERE rowid IN (SELECT min(o.rowid) FROM repl_chunks o"
				" WHERE length(o.data)=0 AND NOT (" ROWS_OF(
				    "o") ") AND o.hash IN"
					 " (SELECT x.hash FROM repl_chunks x WHERE "
					 "length(x.data)>0 AND " ROWS_OF("x") ") GROUP BY o.hash)",
		       job, kind, name) < 0)
		return -1;
	return exec_bound(st, "DELETE FROM repl_chunks WHERE " ROWS_OF("repl_chunks"), job, kind,
			  name);
}

int store_files_put(struct store *st, uint64_t job, const char *kind, const char *name,
		    uint32_t uid, const void *set, size_t len, const struct store_chunk *c,
		    size_t n)
{
	if (store_txn_begin(st) < 0)
		return errno = EIO, -1;
	if (release_chunks(st, job, kind, name) < 0)
		return -1;
	if (!set)
		return exec_bound(st, "DELETE FROM repl_sets WHERE job=?1 AND kind=?2 AND name=?3",
				  job, kind, name);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st),
			       "INSERT OR REPLACE INTO repl_sets(job,kind,name,uid,fileset)"
			       " VALUES(?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
	sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, uid);
	sqlite3_bind_blob64(s, 5, set, len, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		goto fail;
	/* the bytes only when no row holds them yet (a chunk given without bytes must be held) */
	if (sqlite3_prepare_v2(store_db(st),
			       "INSERT OR REPLACE INTO repl_chunks(job,kind,name,hash,data)"
			       " VALUES(?1,?2,?3,?4,CASE WHEN EXISTS(SELECT 1 FROM repl_chunks"
			       " WHERE hash=?4 AND length(data)>0) THEN zeroblob(0) ELSE ?5 END)",
			       -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
		sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, name, -1, SQLITE_STATIC);
		sqlite3_bind_blob(s, 4, c[i].hash, GP_HASH_LEN, SQLITE_STATIC);
		if (c[i].data)
			sqlite3_bind_blob64(s, 5, c[i].len ? c[i].data : "", c[i].len,
					    SQLITE_STATIC);
		else /* a reference: NOT NULL refuses it unless a row holds the bytes */
			sqlite3_bind_null(s, 5);
		rc = sqlite3_step(s);
	}
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return 0;
fail:
	store_fail_txn(st);
	return errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1;
}

int store_files_forget(struct store *st, uint64_t job)
{
	if (store_txn_begin(st) < 0)
		return errno = EIO, -1;
	if (release_chunks(st, job, NULL, NULL) < 0 ||
	    exec_bound(st, "DELETE FROM repl_sets WHERE job=?1", job, NULL, NULL) < 0)
		return -1;
	return 0;
}

int store_files_each(struct store *st, store_files_f fn, void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st), "SELECT job,kind,name,uid,fileset FROM repl_sets", -1,
			       &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	int rc, ret = 0;
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW)
		ret = fn(arg, (uint64_t)sqlite3_column_int64(s, 0),
			 (const char *)sqlite3_column_text(s, 1),
			 (const char *)sqlite3_column_text(s, 2),
			 (uint32_t)sqlite3_column_int64(s, 3), sqlite3_column_blob(s, 4),
			 (size_t)sqlite3_column_bytes(s, 4), NULL);
	sqlite3_finalize(s);
	if (ret)
		return ret;
	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT hash, data FROM repl_chunks WHERE length(data)>0", -1, &s,
			       NULL) != SQLITE_OK)
		return errno = EIO, -1;
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(s, 0) != GP_HASH_LEN)
			continue;
		struct store_chunk c = {sqlite3_column_blob(s, 0), sqlite3_column_blob(s, 1),
					(size_t)sqlite3_column_bytes(s, 1)};
		ret = fn(arg, 0, NULL, NULL, 0, NULL, 0, &c);
	}
	sqlite3_finalize(s);
	return ret;
}

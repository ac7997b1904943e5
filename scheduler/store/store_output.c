/* store_output.c: the output rows of jobs.db (see store_output.h). */
#include "scheduler/store/store_output.h"

#include <errno.h>
#include <sqlite3.h>

#include "scheduler/store/store.h"

int store_output_init(struct sqlite3 *db)
{
	/* the rowid is the order of appending: ranks may share one file */
	return sqlite3_exec(db,
			    "CREATE TABLE IF NOT EXISTS repl_output(seq INTEGER PRIMARY KEY,"
			    " job INTEGER NOT NULL, rank INTEGER NOT NULL, stream INTEGER NOT NULL,"
			    " off INTEGER NOT NULL, data BLOB NOT NULL);"
			    "CREATE INDEX IF NOT EXISTS repl_output_job ON repl_output(job);",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

static int done(struct store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return 0;
	store_fail_txn(st);
	return errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1;
}

int store_output_put(struct store *st, uint64_t job, uint32_t rank, int stream, uint64_t offset,
		     const void *data, size_t len)
{
	sqlite3_stmt *s;
	if (store_txn_begin(st) < 0 ||
	    sqlite3_prepare_v2(
		store_db(st), "INSERT INTO repl_output(job,rank,stream,off,data) VALUES(?,?,?,?,?)",
		-1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
	sqlite3_bind_int64(s, 2, rank);
	sqlite3_bind_int(s, 3, stream);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)offset);
	sqlite3_bind_blob64(s, 5, len ? data : "", len, SQLITE_STATIC);
	return done(st, s);
}

int store_output_forget(struct store *st, uint64_t job)
{
	sqlite3_stmt *s;
	if (store_txn_begin(st) < 0 ||
	    sqlite3_prepare_v2(store_db(st), "DELETE FROM repl_output WHERE job=?", -1, &s, NULL) !=
		SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
	return done(st, s);
}

int store_output_each(struct store *st, store_output_f fn, void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT job,rank,stream,off,data FROM repl_output ORDER BY seq", -1,
			       &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	int ret = 0;
	while (!ret && sqlite3_step(s) == SQLITE_ROW) {
		struct store_output_row r = {
		    .job = (uint64_t)sqlite3_column_int64(s, 0),
		    .rank = (uint32_t)sqlite3_column_int64(s, 1),
		    .stream = sqlite3_column_int(s, 2),
		    .offset = (uint64_t)sqlite3_column_int64(s, 3),
		    .data = sqlite3_column_blob(s, 4),
		    .len = (size_t)sqlite3_column_bytes(s, 4),
		};
		ret = fn(arg, &r);
	}
	sqlite3_finalize(s);
	return ret;
}

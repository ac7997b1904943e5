/* store_rdv.c: the rendezvous rows of jobs.db (see store_rdv.h). */
#include "scheduler/store/store_rdv.h"

#include <errno.h>
#include <sqlite3.h>

#include "scheduler/store/store.h"

int store_rdv_init(struct sqlite3 *db)
{
	return sqlite3_exec(db,
			    "CREATE TABLE IF NOT EXISTS repl_rdv(job INTEGER NOT NULL,"
			    " attempt INTEGER NOT NULL, fence INTEGER NOT NULL, name TEXT NOT NULL,"
			    " rank INTEGER NOT NULL, size INTEGER NOT NULL, value BLOB,"
			    " PRIMARY KEY(job, attempt, fence, name, rank));",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

/* One row in (or out of) the open transaction. 0 / -1 with errno set. */
static int write_row(struct store *st, const char *sql, uint64_t job, uint32_t attempt, int fence,
		     const char *name, uint32_t rank, uint32_t size, const void *value, size_t len)
{
	if (store_txn_begin(st) < 0)
		return errno = EIO, -1;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
	if (name) {
		sqlite3_bind_int64(s, 2, attempt);
		sqlite3_bind_int(s, 3, fence);
		sqlite3_bind_text(s, 4, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 5, rank);
		sqlite3_bind_int64(s, 6, size);
		if (!fence)
			sqlite3_bind_blob64(s, 7, len ? value : "", len, SQLITE_STATIC);
	}
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return 0;
	store_fail_txn(st);
	return errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1;
}

int store_rdv_put(struct store *st, uint64_t job, uint32_t attempt, const char *key, uint32_t rank,
		  const void *value, size_t len)
{
	return write_row(st,
			 "INSERT OR REPLACE INTO repl_rdv(job,attempt,fence,name,rank,size,value)"
			 " VALUES(?1,?2,?3,?4,?5,?6,?7)",
			 job, attempt, 0, key, rank, 0, value, len);
}

int store_rdv_fence(struct store *st, uint64_t job, uint32_t attempt, const char *name,
		    uint32_t rank, uint32_t size)
{
	return write_row(st,
			 "INSERT OR IGNORE INTO repl_rdv(job,attempt,fence,name,rank,size,value)"
			 " VALUES(?1,?2,?3,?4,?5,?6,NULL)",
			 job, attempt, 1, name, rank, size, NULL, 0);
}

int store_rdv_forget(struct store *st, uint64_t job)
{
	return write_row(st, "DELETE FROM repl_rdv WHERE job=?1", job, 0, 0, NULL, 0, 0, NULL, 0);
}

int store_rdv_each(struct store *st, store_rdv_f fn, void *arg)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT job,attempt,fence,name,rank,size,value FROM repl_rdv"
			       " ORDER BY job,attempt,fence,name,rank",
			       -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	int rc, ret = 0;
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 3);
		if (!name)
			continue;
		struct store_rdv_row r = {
		    .job = (uint64_t)sqlite3_column_int64(s, 0),
		    .attempt = (uint32_t)sqlite3_column_int64(s, 1),
		    .fence = sqlite3_column_int(s, 2),
		    .name = name,
		    .rank = (uint32_t)sqlite3_column_int64(s, 4),
		    .size = (uint32_t)sqlite3_column_int64(s, 5),
		    .value = sqlite3_column_blob(s, 6),
		    .len = (size_t)sqlite3_column_bytes(s, 6),
		};
		ret = fn(arg, &r);
	}
	sqlite3_finalize(s);
	return ret;
}

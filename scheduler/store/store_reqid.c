/* store_reqid.c: the applied request ids' table in jobs.db (see store_reqid.h). */
#include "scheduler/store/store_reqid.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/store/store.h"

int store_reqid_init(struct sqlite3 *db)
{
	return sqlite3_exec(db,
			    "CREATE TABLE IF NOT EXISTS request_ids(uid INTEGER NOT NULL,"
			    " id BLOB NOT NULL, time REAL NOT NULL, reply BLOB,"
			    " PRIMARY KEY(uid, id)) WITHOUT ROWID;"
			    "CREATE INDEX IF NOT EXISTS request_ids_time ON request_ids(time);",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

int store_reqid_get(struct store *st, uint32_t uid, const uint8_t *id, size_t len, uint8_t **reply,
		    size_t *rlen)
{
	sqlite3_stmt *s;
	*reply = NULL;
	*rlen = 0;
	if (sqlite3_prepare_v2(store_db(st), "SELECT reply FROM request_ids WHERE uid=? AND id=?",
			       -1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, uid);
	sqlite3_bind_blob(s, 2, id, (int)len, SQLITE_STATIC);
	int rc = sqlite3_step(s), found = 0;
	if (rc == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(s, 0);
		size_t n = (size_t)sqlite3_column_bytes(s, 0);
		if (!(*reply = malloc(n ? n : 1))) {
			sqlite3_finalize(s);
			return errno = ENOMEM, -1;
		}
		if (n)
			memcpy(*reply, b, n);
		*rlen = n;
		found = 1;
	} else if (rc != SQLITE_DONE) {
		found = -1;
		errno = EIO;
	}
	sqlite3_finalize(s);
	return found;
}

int store_reqid_put(struct store *st, uint32_t uid, const uint8_t *id, size_t len,
		    const uint8_t *reply, size_t rlen, double now)
{
	sqlite3_stmt *s;
	if (store_txn_begin(st) < 0)
		return errno = EIO, -1;
	if (sqlite3_prepare_v2(
		store_db(st),
		"INSERT OR REPLACE INTO request_ids(uid,id,time,reply) VALUES(?,?,?,?)", -1, &s,
		NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_int64(s, 1, uid);
	sqlite3_bind_blob(s, 2, id, (int)len, SQLITE_STATIC);
	sqlite3_bind_double(s, 3, now);
	sqlite3_bind_blob(s, 4, reply, (int)rlen, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_fail_txn(st);
		return errno = rc == SQLITE_FULL ? ENOSPC : EIO, -1;
	}
	return 0;
}

int store_reqid_prune(struct store *st, double cutoff, uint64_t keep)
{
	sqlite3_stmt *s;
	if (store_txn_begin(st) < 0)
		return errno = EIO, -1;
	if (sqlite3_prepare_v2(
		store_db(st),
		"DELETE FROM request_ids WHERE time < ?1 OR time <"
		" (SELECT time FROM request_ids ORDER BY time DESC LIMIT 1 OFFSET ?2)",
		-1, &s, NULL) != SQLITE_OK)
		return errno = EIO, -1;
	sqlite3_bind_double(s, 1, cutoff);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)(keep ? keep - 1 : 0));
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : (errno = EIO, -1);
}

int64_t store_reqid_count(struct store *st)
{
	sqlite3_stmt *s;
	int64_t n = -1;
	if (sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM request_ids", -1, &s, NULL) !=
	    SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

/* store_owner.c: the owners' tables in jobs.db (see store_owner.h). */
#include "scheduler/store/store_owner.h"

#include <sqlite3.h>
#include <string.h>

#include "scheduler/core/node_owner.h"

static const char owner_schema[] =
    "CREATE TABLE IF NOT EXISTS owner_history(node TEXT PRIMARY KEY, hist BLOB, weeks BLOB,"
    " last_end REAL);"
    "CREATE TABLE IF NOT EXISTS job_owner(id INTEGER PRIMARY KEY, frozen_ms INTEGER,"
    " vacates INTEGER);";

int store_owner_init(struct sqlite3 *db)
{
	return sqlite3_exec(db, owner_schema, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int step_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

int store_owner_hist_save(struct sqlite3 *db, const char *node, const struct node_owner *o)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db,
			       "INSERT OR REPLACE INTO owner_history(node, hist, weeks, last_end) "
			       "VALUES(?1, ?2, ?3, ?4)",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, node, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(s, 2, o->hist, sizeof(o->hist), SQLITE_TRANSIENT);
	sqlite3_bind_blob(s, 3, o->weeks, sizeof(o->weeks), SQLITE_TRANSIENT);
	sqlite3_bind_double(s, 4, o->last_end);
	return step_done(s);
}

int store_owner_hist_load(struct sqlite3 *db, const char *node, struct node_owner *o)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT hist, weeks, last_end FROM owner_history WHERE node = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, node, -1, SQLITE_TRANSIENT);
	int rc = 1;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_bytes(s, 0) == sizeof(o->hist) &&
	    sqlite3_column_bytes(s, 1) == sizeof(o->weeks)) {
		memcpy(o->hist, sqlite3_column_blob(s, 0), sizeof(o->hist));
		memcpy(o->weeks, sqlite3_column_blob(s, 1), sizeof(o->weeks));
		o->last_end = sqlite3_column_double(s, 2);
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}

int store_owner_job_save(struct sqlite3 *db, uint64_t id, uint64_t frozen_ms, uint32_t vacates)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db,
			       "INSERT OR REPLACE INTO job_owner(id, frozen_ms, vacates) "
			       "VALUES(?1, ?2, ?3)",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)frozen_ms);
	sqlite3_bind_int64(s, 3, vacates);
	return step_done(s);
}

void store_owner_job_load(struct sqlite3 *db, uint64_t id, uint64_t *frozen_ms, uint32_t *vacates)
{
	*frozen_ms = 0;
	*vacates = 0;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db, "SELECT frozen_ms, vacates FROM job_owner WHERE id = ?1", -1, &s,
			       NULL) != SQLITE_OK)
		return; /* no table yet: nothing kept */
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	if (sqlite3_step(s) == SQLITE_ROW) {
		*frozen_ms = (uint64_t)sqlite3_column_int64(s, 0);
		*vacates = (uint32_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
}

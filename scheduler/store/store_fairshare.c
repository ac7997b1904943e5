/* store_fairshare.c: the fair-share usage table in jobs.db (see store_fairshare.h). */
#include "scheduler/store/store_fairshare.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

int store_fairshare_init(struct sqlite3 *db)
{
	return sqlite3_exec(db,
			    "CREATE TABLE IF NOT EXISTS fairshare_usage(user TEXT PRIMARY KEY,"
			    " cpu_sec REAL, card_sec REAL, at REAL);"
			    "CREATE TABLE IF NOT EXISTS fairshare_admin(user TEXT PRIMARY KEY,"
			    " share REAL, max_jobs INTEGER, max_cpus INTEGER, max_cards INTEGER);",
			    NULL, NULL, NULL) == SQLITE_OK
		   ? 0
		   : -1;
}

int store_fairshare_save(struct sqlite3 *db, const char *user, double cpu_sec, double card_sec,
			 double at)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(
		db,
		"INSERT OR REPLACE INTO fairshare_usage(user, cpu_sec, card_sec, at) "
		"VALUES(?1, ?2, ?3, ?4)",
		-1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, user, -1, SQLITE_TRANSIENT);
	sqlite3_bind_double(s, 2, cpu_sec);
	sqlite3_bind_double(s, 3, card_sec);
	sqlite3_bind_double(s, 4, at);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

void store_fairshare_rows_free(struct store_fs_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].user);
	free(rows);
}

int store_fairshare_load(struct sqlite3 *db, struct store_fs_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db, "SELECT user, cpu_sec, card_sec, at FROM fairshare_usage", -1,
			       &s, NULL) != SQLITE_OK)
		return -1;
	struct store_fs_row *v = NULL;
	size_t k = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *u = sqlite3_column_text(s, 0);
		if (!u)
			continue;
		struct store_fs_row *nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		if (!(v[k].user = strdup((const char *)u)))
			break;
		v[k].cpu_sec = sqlite3_column_double(s, 1);
		v[k].card_sec = sqlite3_column_double(s, 2);
		v[k].at = sqlite3_column_double(s, 3);
		k++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_fairshare_rows_free(v, k);
		return -1;
	}
	*rows = v;
	*n = k;
	return 0;
}

static bool admin_empty(const struct fs_admin *a)
{
	return !a->has_share && !a->has_jobs && !a->has_cpus && !a->has_cards;
}

int store_fairshare_admin_save(struct sqlite3 *db, const char *user, const struct fs_admin *a)
{
	sqlite3_stmt *s = NULL;
	const char *sql = admin_empty(a)
			      ? "DELETE FROM fairshare_admin WHERE user = ?1"
			      : "INSERT OR REPLACE INTO fairshare_admin(user, share, "
				"max_jobs, max_cpus, max_cards) VALUES(?1, ?2, ?3, ?4, ?5)";
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, user, -1, SQLITE_TRANSIENT);
	if (!admin_empty(a)) {
		if (a->has_share)
			sqlite3_bind_double(s, 2, a->share);
		if (a->has_jobs)
			sqlite3_bind_int64(s, 3, a->limits.jobs);
		if (a->has_cpus)
			sqlite3_bind_int64(s, 4, a->limits.cpus);
		if (a->has_cards)
			sqlite3_bind_int64(s, 5, a->limits.cards);
	}
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

void store_fairshare_admin_rows_free(struct store_fs_admin_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].user);
	free(rows);
}

/* A limit column: set when not NULL and within uint32_t. */
static bool limit_col(sqlite3_stmt *s, int col, uint32_t *v)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return false;
	sqlite3_int64 x = sqlite3_column_int64(s, col);
	if (x < 0 || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

int store_fairshare_admin_load(struct sqlite3 *db, struct store_fs_admin_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT user, share, max_jobs, max_cpus, max_cards FROM "
			       "fairshare_admin",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	struct store_fs_admin_row *v = NULL;
	size_t k = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *u = sqlite3_column_text(s, 0);
		if (!u)
			continue;
		struct store_fs_admin_row *nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		memset(&v[k], 0, sizeof(v[k]));
		if (!(v[k].user = strdup((const char *)u)))
			break;
		struct fs_admin *a = &v[k].a;
		if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
			a->has_share = true;
			a->share = sqlite3_column_double(s, 1);
		}
		a->has_jobs = limit_col(s, 2, &a->limits.jobs);
		a->has_cpus = limit_col(s, 3, &a->limits.cpus);
		a->has_cards = limit_col(s, 4, &a->limits.cards);
		k++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_fairshare_admin_rows_free(v, k);
		return -1;
	}
	*rows = v;
	*n = k;
	return 0;
}

static int keep_usage(void *arg, const char *user, double cpu_sec, double card_sec, double at)
{
	return store_fairshare_save(arg, user, cpu_sec, card_sec, at);
}

static int keep_admin(void *arg, const char *user, const struct fs_admin *a)
{
	return store_fairshare_admin_save(arg, user, a);
}

int fairshare_attach_store(fairshare_t *f, struct sqlite3 *db)
{
	fairshare_set_keeper(f, db ? &(struct fs_keeper){keep_usage, keep_admin, db} : NULL);
	if (!db)
		return 0;
	if (store_fairshare_init(db) < 0)
		return -1;
	struct store_fs_row *rows;
	size_t n;
	if (store_fairshare_load(db, &rows, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		fairshare_load_usage(f, rows[i].user, rows[i].cpu_sec, rows[i].card_sec,
				     rows[i].at);
	store_fairshare_rows_free(rows, n);
	struct store_fs_admin_row *ar;
	if (store_fairshare_admin_load(db, &ar, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = fairshare_load_admin(f, ar[i].user, &ar[i].a);
	store_fairshare_admin_rows_free(ar, n);
	fairshare_loaded(f);
	return rc;
}

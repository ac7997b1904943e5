/* store_fairshare.h: the users' fair-share usage in jobs.db (docs/fairshare.md): one row per
 * user with the CPU-seconds and card-seconds decayed to a time, written when an attempt's use
 * is charged, read at start-up so that a restart keeps the usage. Beside it, the values an
 * administrator set (gpool share set, gpool limits set: table fairshare_admin, NULL where a
 * value is not set), written in the transaction of the request that set them. */
#ifndef GPOOL_SCHED_STORE_FAIRSHARE_H
#define GPOOL_SCHED_STORE_FAIRSHARE_H

#include <stddef.h>

#include "scheduler/core/fairshare.h"

struct sqlite3;

struct store_fs_row {
	char *user;
	double cpu_sec, card_sec, at;
};

/* Make the table when missing. 0 / -1. */
int store_fairshare_init(struct sqlite3 *db);
/* Save one user's usage (decayed to at). 0 / -1. */
int store_fairshare_save(struct sqlite3 *db, const char *user, double cpu_sec, double card_sec,
			 double at);
/* Every row: *rows malloc'd (store_fairshare_rows_free), *n of them. 0 / -1. */
int store_fairshare_load(struct sqlite3 *db, struct store_fs_row **rows, size_t *n);
void store_fairshare_rows_free(struct store_fs_row *rows, size_t n);

struct store_fs_admin_row {
	char *user;
	struct fs_admin a;
};

/* Save one user's administrator values (none set: the row is deleted). 0 / -1. */
int store_fairshare_admin_save(struct sqlite3 *db, const char *user, const struct fs_admin *a);
/* Every row: *rows malloc'd (store_fairshare_admin_rows_free), *n of them. 0 / -1. */
int store_fairshare_admin_load(struct sqlite3 *db, struct store_fs_admin_row **rows, size_t *n);
void store_fairshare_admin_rows_free(struct store_fs_admin_row *rows, size_t n);

/* Keep f's figures in db (NULL: in memory only): the tables are made when missing, the rows kept
 * are loaded into f, and f saves its changes there (fairshare_set_keeper). 0 / -1. */
int fairshare_attach_store(fairshare_t *f, struct sqlite3 *db);

#endif

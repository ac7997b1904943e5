/* txn.c: the store's open transaction as the features' tables (store_*.c) use it: their
 * database, a write in the open transaction, a failed write that rolls it back (store.h). Apart
 * from store.c, which makes those tables, so that the tables need not call back into it. */
#include "scheduler/store/store.h"
#include "scheduler/store/store_int.h"

#include "common/log.h"

struct sqlite3 *store_db(struct store *st)
{
	return st->db;
}

int store_txn_begin(struct store *st)
{
	if (st->in_txn)
		return 0;
	sqlite3_reset(st->begin);
	if (sqlite3_step(st->begin) != SQLITE_DONE) {
		gp_err("sqlite begin: %s", sqlite3_errmsg(st->db));
		return -1;
	}
	st->in_txn = true;
	return 0;
}

void store_fail_txn(struct store *st)
{
	if (store_txn_begin(st) == 0)
		st->failed = true;
}

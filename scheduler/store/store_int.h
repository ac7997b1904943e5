/* store_int.h: the store's own struct, shared by store.c (the schema, the rows, group commit)
 * and txn.c (the open transaction the features' tables write in); private to scheduler/store/.
 */
#ifndef GPOOL_SCHED_STORE_INT_H
#define GPOOL_SCHED_STORE_INT_H

#ifndef SQLITE_ENABLE_SESSION /* the session extension (store.c: each commit's changes) */
#define SQLITE_ENABLE_SESSION
#define SQLITE_ENABLE_PREUPDATE_HOOK
#endif
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "scheduler/store/store.h"

struct store {
	sqlite3 *db;
	sqlite3_stmt *ins, *upd, *spec, *begin, *commit, *rollback;
	sqlite3_stmt *cards_del, *cards_ins, *node_ins, *node_drain, *node_member;
	sqlite3_stmt *purge_sel, *purge_keep, *purge_del; /* retention */
	sqlite3_stmt *chunk_grant, *chunk_may;		  /* who may use a chunk */
	bool in_txn;
	int64_t delay_ms;
	uint64_t commits, rows;
	bool failed; /* a write failed in the open transaction: it must roll back */
	/* replication (store_set_replication): the changes since the last commit */
	sqlite3_session *session;
	store_replicate_f replicate;
	store_replicated_f replicated;
	void *repl_arg;
};

#endif

/* store_owner.h: what gschedd keeps of the PCs' owners in jobs.db (docs/owner.md): each
 * node's histogram of owner activity by hour of the week, and each job's frozen time and
 * vacates (a table of their own beside jobs, written when they change). */
#ifndef GPOOL_SCHED_STORE_OWNER_H
#define GPOOL_SCHED_STORE_OWNER_H

#include <stdint.h>

struct sqlite3;
struct store;
struct node_owner;

/* Make the tables when missing. 0 / -1. */
int store_owner_init(struct sqlite3 *db);
/* A node's histogram: save it, load it (0: loaded, 1: none kept, -1: error). */
int store_owner_hist_save(struct sqlite3 *db, const char *node, const struct node_owner *o);
int store_owner_hist_load(struct sqlite3 *db, const char *node, struct node_owner *o);
/* A job's frozen time and vacates: save them, read them (0 and 0 when none kept). */
int store_owner_job_save(struct sqlite3 *db, uint64_t id, uint64_t frozen_ms, uint32_t vacates);
void store_owner_job_load(struct sqlite3 *db, uint64_t id, uint64_t *frozen_ms, uint32_t *vacates);

#endif

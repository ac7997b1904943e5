/* store_reqid.h: the request ids gschedd has applied, in jobs.db (docs/protocol.md, Request
 * ids): per sender uid and id, the reply the first request got, so that a retry (after a lost
 * reply, a restart, or a failover once the store is replicated) is answered with it instead of
 * being applied again. Bounded by age and count (reqids.h). */
#ifndef GPOOL_SCHED_STORE_REQID_H
#define GPOOL_SCHED_STORE_REQID_H

#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct store;

/* Make the table when missing. 0 / -1. */
int store_reqid_init(struct sqlite3 *db);
/* The reply kept for (uid, id): 1 with *reply (malloc'd, *rlen bytes) set, 0 when none is
 * kept, -1 with errno set. Sees the open transaction's rows. */
int store_reqid_get(struct store *st, uint32_t uid, const uint8_t *id, size_t len, uint8_t **reply,
		    size_t *rlen);
/* Keep reply for (uid, id) at time now, in the open transaction (it commits with what the
 * request changed). 0 / -1 with errno set. */
int store_reqid_put(struct store *st, uint32_t uid, const uint8_t *id, size_t len,
		    const uint8_t *reply, size_t rlen, double now);
/* Forget the ids kept before cutoff, and all but the newest keep ones. 0 / -1. */
int store_reqid_prune(struct store *st, double cutoff, uint64_t keep);
/* How many are kept (tests, metrics); -1 on error. */
int64_t store_reqid_count(struct store *st);

#endif

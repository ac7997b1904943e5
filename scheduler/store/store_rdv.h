/* store_rdv.h: the rendezvous of running jobs (rdv.h) kept in jobs.db as well, when the state is
 * replicated (docs/standby.md, "What is replicated"). Every key put and every rank's entry into
 * a fence is a row written in the open transaction, so it travels in the commit's Raft entry and
 * the reply waits for that commit; a scheduler that takes the lead loads the rows of the jobs
 * still running into its own rendezvous (rdv_restore) before it serves, so ranks that were
 * making their communicator when the leader was lost go on with the new one. The rows of an
 * attempt go when it stops. With one scheduler nothing is written (the rendezvous lives in
 * memory, docs/reliability.md). */
#ifndef GPOOL_SCHED_STORE_RDV_H
#define GPOOL_SCHED_STORE_RDV_H

#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct store;

/* Make the table when missing. 0 / -1. */
int store_rdv_init(struct sqlite3 *db);

/* Key put by rank (value len bytes), replacing what it held. 0 / -1 with errno set. */
int store_rdv_put(struct store *st, uint64_t job, uint32_t attempt, const char *key, uint32_t rank,
		  const void *value, size_t len);
/* rank entered fence name of size ranks. 0 / -1 with errno set. */
int store_rdv_fence(struct store *st, uint64_t job, uint32_t attempt, const char *name,
		    uint32_t rank, uint32_t size);
/* Forget every row of job. 0 / -1 with errno set. */
int store_rdv_forget(struct store *st, uint64_t job);

/* A row: a key (fence 0) with its value, or a fence entry (fence 1, size set, no value). */
struct store_rdv_row {
	uint64_t job;
	uint32_t attempt, rank, size;
	int fence;
	const char *name;
	const void *value;
	size_t len;
};
/* Called for each row, fences after keys; a non-zero return stops the walk and is returned. */
typedef int (*store_rdv_f)(void *arg, const struct store_rdv_row *row);
int store_rdv_each(struct store *st, store_rdv_f fn, void *arg);

#endif

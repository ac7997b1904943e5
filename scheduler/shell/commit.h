/* commit.h: gschedd's group commit (commit.c), part of the shell. The core orders saves
 * (orders.h); effects.c carries them out with these functions, which write into the open
 * transaction; the event loop (loop.c) commits it when it is due, and a reply or order that
 * depends on it leaves only after that commit.
 */
#ifndef GPOOL_SCHED_COMMIT_H
#define GPOOL_SCHED_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/core/gschedd.h"

/* Write a job's changed fields into the open transaction. */
void commit_save_job(struct gsched *s, struct job *j);
/* Write the state gschedd owns of a node (its drain, its cards' state) into the open
 * transaction (a reply that depends on it goes durable). */
void commit_save_node(struct gsched *s, int node);
/* Insert a new job (its reply, to r, waits for the commit; r NULL: an array's later task,
 * stored without a spec of its own). 0 / -1. A submission is a client's request, taken in by
 * client.c at the edge of the shell: it is stored before the core places it. */
int commit_save_new(struct gsched *s, struct job *j, const uint8_t *spec, size_t len,
		    const char *token, struct req *r);
/* Insert a job gschedd made itself (a service's replica): placed once committed. 0 / -1. */
int commit_insert(struct gsched *s, struct job *j, const uint8_t *spec, size_t len);

/* The open transaction holds as many jobs as one should: commit before taking in more. */
bool gsched_txn_full(const struct gsched *s);
/* Commit now: the loop has read everything waiting (drained), or the window has passed while
 * messages kept coming, or the transaction is full. now: gp_mono_ms(). */
bool gsched_commit_due(const struct gsched *s, int64_t now, bool drained);
/* Commit the open transaction. On success the held replies and orders may go; on failure the
 * new submissions are refused and forgotten, and the other changes are written again in the
 * next transaction. */
void gsched_commit(struct gsched *s);

#endif

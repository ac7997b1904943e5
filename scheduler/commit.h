/* commit.h: gschedd's group commit (commit.c). gsched_save(), gsched_save_new(),
 * gsched_insert() and gsched_save_node() (gschedd.h) write into the open transaction; the
 * event loop (loop.c) commits it when it is due, and a reply or order that depends on it
 * leaves only after that commit.
 */
#ifndef GPOOL_SCHED_COMMIT_H
#define GPOOL_SCHED_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/gschedd.h"

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

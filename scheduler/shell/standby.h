/* standby.h: a scheduler that does not lead (standby.c), part of the shell. With sched_peers
 * set, gschedd starts here: its Raft member (repl.h) follows the leader while this answers
 * every request on the listen endpoint with ERROR_NOT_LEADER and the leader's client endpoint,
 * until this scheduler leads and has applied everything committed before it. docs/standby.md.
 */
#ifndef GPOOL_SCHED_STANDBY_H
#define GPOOL_SCHED_STANDBY_H

#include "scheduler/core/gschedd.h"

/* Serve as a standby on s->net until s->repl leads (0) or s->stop is set (1); -1 on a poll
 * error. */
int standby_serve(struct gsched *s);

/* The hooks store_set_replication() takes, over s->repl (arg: the struct repl). */
int standby_replicate(void *arg, const void *changeset, size_t len, gp_error_t *err);
void standby_replicated(void *arg);

#endif

/* outkeep.h: the tasks' output an agent forwarded to the scheduler, kept until the scheduler
 * has answered a message sent after it (a heartbeat or registration, which it answers after its
 * commit), and forwarded again after a new registration: the scheduler it went to may have died
 * with it (a standby took over, docs/standby.md) before the agent noticed. The scheduler drops
 * what it already has by offset (scheduler/output.c). Bounded: past OUTKEEP_MAX bytes the oldest
 * is given up (said once per registration). The supervisor is acknowledged as before (its exits
 * are durable through the exit files, supervise_held.c): this copy is the agent's. */
#ifndef GPOOL_WORKER_OUTKEEP_H
#define GPOOL_WORKER_OUTKEEP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

#define OUTKEEP_MAX (16u << 20)

struct outkeep;

struct outkeep *outkeep_create(void);
void outkeep_destroy(struct outkeep **k);
/* Keep m (an Output) as forwarded now: packed once, as a batch member (gp_batch_member), which
 * the caller queues as it is (gp_batch_add_member) before the next outkeep call. The member, of
 * *len bytes, or NULL (ENOMEM, EMSGSIZE: not kept). */
const uint8_t *outkeep_add(struct outkeep *k, const Gpool__Msg *m, size_t *len);
/* Message msg_id goes to the scheduler: what was forwarded before it is covered by its answer. */
void outkeep_mark(struct outkeep *k, uint64_t msg_id);
/* The scheduler answered msg_id after its commit: what it covers is dropped. */
void outkeep_answered(struct outkeep *k, uint64_t msg_id);
/* Every kept message, oldest first, as its batch member, to fn (after a new registration);
 * they stay kept until a later answer covers them. */
void outkeep_each(struct outkeep *k, void (*fn)(void *arg, const uint8_t *member, size_t len),
		  void *arg);
size_t outkeep_bytes(const struct outkeep *k);

#endif

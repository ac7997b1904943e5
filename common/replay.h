/* replay.h: the per-sender sequence window of authenticated envelopes (wire.c).
 *
 * A sender is (uid, epoch): the epoch is random per process, so a restarted sender starts a
 * new window. An envelope carries seq and the count of its messages and takes the numbers
 * seq .. seq + count - 1 (count 0 takes one). It is accepted only if they are all above the
 * last number accepted from that sender. A sender silent for GP_REPLAY_KEEP_SEC (longer than
 * any MUNGE credential lives, so an envelope that old is refused by its credential anyway) may
 * be forgotten when room is needed. The table grows up to max_slots; when it is full of
 * senders seen within GP_REPLAY_KEEP_SEC, a new sender is refused (ENOSPC), never waited for.
 */
#ifndef GPOOL_REPLAY_H
#define GPOOL_REPLAY_H

#include <stdint.h>

#define GP_REPLAY_KEEP_SEC 900

typedef struct gp_replay gp_replay_t;

/* max_slots: a power of two, at least 2. NULL on ENOMEM or EINVAL. */
gp_replay_t *gp_replay_create(uint32_t max_slots);
void gp_replay_destroy(gp_replay_t **r);

/* Take seq..seq+count-1 from (uid, epoch) at time now (seconds, any monotonic origin).
 * 0: accepted; -1 with errno EEXIST (a number already taken: a replay), ERANGE (the numbers
 * wrap past 2^64) or ENOSPC (no room for a new sender). A refusal takes no number. */
int gp_replay_check(gp_replay_t *r, uint32_t uid, uint64_t epoch, uint64_t seq, uint64_t count,
		    double now);

/* Senders held now. */
uint32_t gp_replay_count(const gp_replay_t *r);

#endif

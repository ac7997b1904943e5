/* budget.h: what each user may make the scheduler's loop walk per second.
 *
 * A listing walks every job of the queue (and the store's history with --all): a user who asks
 * for it at the rate the network allows would keep the loop from everything else. Each uid has
 * a token bucket of records (list_records_per_user a second, a second's worth of burst); a
 * request whose cost is over what is left is refused with ERROR_RATE and when to come back.
 * Root and the agents' account are not counted. The table is a hash by uid, bounded.
 */
#ifndef GPOOL_SCHED_BUDGET_H
#define GPOOL_SCHED_BUDGET_H

#include <stdint.h>
#include <sys/types.h>

struct budget;

/* rate: records a second per uid (<= 0: no limit). NULL on ENOMEM. */
struct budget *budget_create(double rate);
void budget_destroy(struct budget **b);
void budget_set_rate(struct budget *b, double rate);

/* Take cost records from uid's bucket at now_ms: 0, or -1 with *retry_ms (how long until it
 * would fit; a cost over a whole second's worth is taken from a full bucket). */
int budget_take(struct budget *b, uid_t uid, double cost, int64_t now_ms, int64_t *retry_ms);

#endif

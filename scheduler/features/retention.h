/* retention.h: purging of finished jobs older than job_retention (docs/reliability.md).
 *
 * A purged job's row leaves jobs.db (its spec, token and placement go; its accounting fields stay
 * as a summary row that gacct shows), it leaves memory, and its output directory is removed
 * once the transaction that purged it has committed. The work goes in bounded steps of at most
 * retention_batch jobs from the loop's pass, so that a long backlog (the first start with a
 * retention set, a week of arrays) never holds the loop for long: a full step is followed by the
 * next one RETENTION_BUSY_MS later, else RETENTION_IDLE_MS later.
 */
#ifndef GPOOL_SCHED_RETENTION_H
#define GPOOL_SCHED_RETENTION_H

#include <stdbool.h>
#include <stdint.h>

#define RETENTION_BUSY_MS 200
#define RETENTION_IDLE_MS 10000

struct gsched;
struct retention;

struct retention *retention_create(void);
void retention_destroy(struct retention **r);

/* age_ms 0: keep every job forever. A new setting takes effect at the next pass. */
void retention_set(struct retention *r, int64_t age_ms, uint32_t batch);

/* One step when due (now_ms: gp_mono_ms()): the jobs purged into the open transaction, 0 when
 * none or not due, -1 with errno set when the store failed. */
int retention_step(struct gsched *s, int64_t now_ms);

/* The open transaction committed (ok) or rolled back: remove the output of the jobs it purged,
 * or forget them (their rows are back and a later step purges them again). */
void retention_committed(struct gsched *s, bool ok);

/* Jobs purged since start-up. */
uint64_t retention_purged(const struct retention *r);

#endif

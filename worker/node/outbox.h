/* outbox.h: what a gstepd has told its agent but not yet seen acknowledged.
 *
 * Every TaskEvent and Output gets a sequence number (carried in Msg.id, 1, 2, 3...) and stays
 * here, packed, until a StepAck with upto >= its number arrives; a restarted agent therefore
 * receives again everything the old one had not acknowledged, and no exit status is lost.
 */
#ifndef GPOOL_WORKER_OUTBOX_H
#define GPOOL_WORKER_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

typedef struct gp_outbox gp_outbox_t;

gp_outbox_t *gp_outbox_create(void);
void gp_outbox_destroy(gp_outbox_t **o);

/* Number m (m->id is set) and keep it. 0 / -1 (ENOMEM). */
int gp_outbox_push(gp_outbox_t *o, Gpool__Msg *m);
/* Add not yet sent messages to b (up to max_bytes, at least one); returns how many. */
int gp_outbox_fill(gp_outbox_t *o, gp_batch_t *b, size_t max_bytes);
/* The n messages last filled were sent. */
void gp_outbox_sent(gp_outbox_t *o, int n);
/* Forget everything up to and including seq. */
void gp_outbox_ack(gp_outbox_t *o, uint64_t upto);
/* Send every unacknowledged message again. */
void gp_outbox_rewind(gp_outbox_t *o);

size_t gp_outbox_count(const gp_outbox_t *o); /* unacknowledged messages */
size_t gp_outbox_bytes(const gp_outbox_t *o); /* their packed size */
size_t gp_outbox_unsent(const gp_outbox_t *o);
uint64_t gp_outbox_acked(const gp_outbox_t *o); /* highest acknowledged seq */

#endif

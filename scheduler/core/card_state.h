/* card_state.h: the part of a card that gschedd owns, kept while the agent's reports come and
 * go. An agent reports hardware (name, VRAM, driver, power, ...); gschedd owns each card's
 * state (up, drained, failed) with its reason and the screening result (grade, throughput,
 * screen_job). A registration replaces the hardware fields and keeps the owned ones of every
 * card it matches; the store keeps the owned ones over a gschedd restart (docs/cards.md). */
#ifndef GPOOL_SCHED_CARD_STATE_H
#define GPOOL_SCHED_CARD_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/gpool.pb-c.h"

/* Is b the same physical card as a? Fake cards by index and model (their uuid is made from the
 * index); others by uuid where both have one, else by PCI bus id where both have one, else by
 * index and model. A card with a new uuid in the same slot is another card. */
bool card_same(const Gpool__Card *a, const Gpool__Card *b);

/* Move the owned fields (state, state_reason, grade, throughput, screen_job) of `from` to `to`;
 * from's strings are swapped with to's, so both cards can still be freed. */
void card_state_take(Gpool__Card *to, Gpool__Card *from);

/* A node registered with `cards` (its report, which the node is about to own) while `known`
 * were its cards: each reported card that matches a known one takes the known one's owned
 * fields; an unmatched one is new and keeps what the agent reported (up and ungraded for a real
 * card; a fake card's configured state), with an unknown state made up. Known cards nobody
 * reported are gone: logged. `known` is left with swapped strings and is to be freed.
 * 0 / -1 (ENOMEM, nothing changed). */
int cards_keep_state(const char *node, Gpool__Card **cards, size_t n, Gpool__Card **known,
		     size_t nknown);

/* A string field of a card the node owns (unpacked by protobuf-c: an empty field points at
 * protobuf-c's shared empty string, which must not be freed). 0 / -1 (ENOMEM, unchanged). */
int card_set_text(char **field, const char *value);

#endif

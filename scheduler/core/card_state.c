/* card_state.c - the part of each card gschedd owns (drained, failed, grade), kept across
 * the agent's registrations and reports (card_state.h) */
#include "scheduler/core/card_state.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static const char *str(const char *s)
{
	return s ? s : "";
}

bool card_same(const Gpool__Card *a, const Gpool__Card *b)
{
	if (a->fake || b->fake)
		return a->fake == b->fake && a->index == b->index &&
		       strcmp(str(a->name), str(b->name)) == 0;
	if (*str(a->uuid) && *str(b->uuid))
		return strcmp(a->uuid, b->uuid) == 0;
	if (*str(a->pci_bus_id) && *str(b->pci_bus_id))
		return strcmp(a->pci_bus_id, b->pci_bus_id) == 0;
	return a->index == b->index && strcmp(str(a->name), str(b->name)) == 0;
}

static void swap_text(char **a, char **b)
{
	char *t = *a;
	*a = *b;
	*b = t;
}

void card_state_take(Gpool__Card *to, Gpool__Card *from)
{
	to->state = from->state;
	swap_text(&to->state_reason, &from->state_reason);
	swap_text(&to->grade, &from->grade);
	to->throughput = from->throughput;
	to->screen_job = from->screen_job;
}

static const char *state_word(Gpool__CardState s)
{
	switch (s) {
	case GPOOL__CARD_STATE__CARD_DRAINED:
		return "drained";
	case GPOOL__CARD_STATE__CARD_FAILED:
		return "failed";
	default:
		return "up";
	}
}

int cards_keep_state(const char *node, Gpool__Card **cards, size_t n, Gpool__Card **known,
		     size_t nknown)
{
	uint8_t *used = calloc(nknown ? nknown : 1, 1);
	if (!used)
		return -1;
	for (size_t i = 0; i < n; i++) {
		Gpool__Card *c = cards[i];
		size_t k = 0;
		for (; k < nknown; k++)
			if (!used[k] && card_same(known[k], c))
				break;
		if (k < nknown) {
			used[k] = 1;
			card_state_take(c, known[k]);
			if (known[k]->index != c->index)
				gp_info("node %s: card %u (%s%s%s) is now card %u", node,
					known[k]->index, str(c->name), *str(c->uuid) ? " " : "",
					str(c->uuid), c->index);
			continue;
		}
		if (c->state == GPOOL__CARD_STATE__CARD_STATE_UNKNOWN)
			c->state = GPOOL__CARD_STATE__CARD_UP;
		if (nknown)
			gp_info("node %s: card %u (%s%s%s) is new: %s", node, c->index,
				str(c->name), *str(c->uuid) ? " " : "", str(c->uuid),
				state_word(c->state));
	}
	for (size_t k = 0; k < nknown; k++) {
		if (used[k])
			continue;
		const Gpool__Card *o = known[k];
		gp_warn(
		    "node %s: card %u (%s%s%s) is no longer reported: dropped (it was %s%s%s%s%s)",
		    node, o->index, str(o->name), *str(o->uuid) ? " " : "", str(o->uuid),
		    state_word(o->state), *str(o->state_reason) ? ": " : "", str(o->state_reason),
		    *str(o->grade) ? ", graded " : "", str(o->grade));
	}
	free(used);
	return 0;
}

int card_set_text(char **field, const char *value)
{
	char *v = strdup(value);
	if (!v)
		return -1;
	if (*field && *field != protobuf_c_empty_string)
		free(*field);
	*field = v;
	return 0;
}

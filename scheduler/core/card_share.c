/* card_share.c: packing slices of sharing jobs onto cards (card_share.h). */
#include "scheduler/core/card_share.h"

#include <string.h>

#include "scheduler/core/nodes.h"

static uint64_t room(const struct share_view *v, const Gpool__Card *c, int k)
{
	return c->vram_total > v->used[k] ? c->vram_total - v->used[k] : 0;
}

int share_pick(const struct share_view *v, const struct node *n, const struct gpu_req *g,
	       uint64_t free_mask, const char *model, uint32_t uid)
{
	uint64_t budget = g->mem_min;
	int best = -1;
	for (size_t k = 0; k < n->n_cards && k < MAX_CARDS_PER_NODE; k++) {
		if (!v->tasks[k] || v->uid[k] != uid || !card_serves(g, n->cards[k], model))
			continue;
		uint64_t r = room(v, n->cards[k], (int)k);
		if (r >= budget && (best < 0 || r < room(v, n->cards[best], best)))
			best = (int)k;
	}
	if (best >= 0)
		return best;
	for (size_t k = 0; k < n->n_cards && k < MAX_CARDS_PER_NODE; k++) {
		if (!(free_mask >> k & 1) || v->tasks[k] || !card_serves(g, n->cards[k], model))
			continue;
		if (n->cards[k]->vram_total < budget)
			continue;
		if (best < 0 || n->cards[k]->vram_total < n->cards[best]->vram_total)
			best = (int)k;
	}
	return best;
}

void share_take(struct share_view *v, int k, uint64_t budget, uint32_t uid, uint64_t *free_mask)
{
	if (!v->tasks[k]) {
		v->used[k] = 0;
		v->uid[k] = uid;
		if (free_mask)
			*free_mask &= ~(1ULL << k);
	}
	v->tasks[k]++;
	v->used[k] += budget;
}

bool share_release(struct share_view *v, int k, uint64_t budget)
{
	if (!v->tasks[k])
		return true;
	v->used[k] = v->used[k] > budget ? v->used[k] - budget : 0;
	if (--v->tasks[k])
		return false;
	v->used[k] = 0;
	v->uid[k] = 0;
	return true;
}

int64_t share_slots(const struct share_view *v, const struct node *n, const struct gpu_req *g,
		    uint64_t free_mask, const char *model, uint32_t uid, int64_t limit)
{
	if (!g->mem_min)
		return 0;
	int64_t slots = 0;
	for (size_t k = 0; k < n->n_cards && k < MAX_CARDS_PER_NODE && slots < limit; k++) {
		const Gpool__Card *c = n->cards[k];
		if (!card_serves(g, c, model))
			continue;
		if (v->tasks[k]) {
			if (v->uid[k] == uid)
				slots += (int64_t)(room(v, c, (int)k) / g->mem_min);
		} else if (free_mask >> k & 1) {
			slots += (int64_t)(c->vram_total / g->mem_min);
		}
	}
	return slots < limit ? slots : limit;
}

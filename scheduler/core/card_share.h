/* card_share.h: cards shared by small jobs (gsub --gpu-share, docs/gpu-share.md). A sharing task
 * takes a slice of one card: its job's VRAM budget. A card is whole (free or held by one
 * exclusive task) or shared: held by slices of one user's jobs whose budgets add up to no more
 * than its VRAM. A card that holds an exclusive task takes no slice and a shared one takes no
 * exclusive task. One user at a time: an MPS server serves one Linux user, so slices of another
 * user's jobs wait until the card is whole again (the same rule holds for AMD cards, so that
 * placement does not depend on the vendor).
 * The view is a plain value: the node keeps the live one, a planning pass copies it. */
#ifndef GPOOL_SCHED_CARD_SHARE_H
#define GPOOL_SCHED_CARD_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/core/cards.h"

struct share_view {
	uint64_t used[MAX_CARDS_PER_NODE];  /* bytes of the budgets of its slices */
	uint32_t tasks[MAX_CARDS_PER_NODE]; /* slices on it; 0: the card is not shared */
	uint32_t uid[MAX_CARDS_PER_NODE];   /* the user whose slices it holds (tasks > 0) */
};

struct node;

/* Which card of n takes one more slice of g's budget for uid: a card already shared by uid
 * whose room left fits it, the tightest such first (packing); else a whole free card (in
 * free_mask) that serves g, the smallest VRAM first. -1: none. */
int share_pick(const struct share_view *v, const struct node *n, const struct gpu_req *g,
	       uint64_t free_mask, const char *model, uint32_t uid);

/* Put one slice of `budget` for uid on card k; *free_mask loses k when k was whole. */
void share_take(struct share_view *v, int k, uint64_t budget, uint32_t uid, uint64_t *free_mask);

/* Take one slice of `budget` off card k; true when the card is whole (free) again. */
bool share_release(struct share_view *v, int k, uint64_t budget);

/* How many slices of g's budget for uid n could take now, at most `limit`. */
int64_t share_slots(const struct share_view *v, const struct node *n, const struct gpu_req *g,
		    uint64_t free_mask, const char *model, uint32_t uid, int64_t limit);

#endif

/* cards.h: what a job asks of graphics cards, and which cards of a node can serve it.
 * A card serves a job when it is up (not drained, not failed, not graded "fail"), free, of the
 * asked vendor, model pattern (fnmatch, case-insensitive), compute capability and VRAM, and
 * among the cards the job names by index, if it names any (--gpu-index). A screening job
 * (gcheck --cluster) may also take a card that failed screening, to grade it again; a card an
 * admin drained serves nobody.
 * Cards are exclusive unless the job shares (--gpu-share, card_share.h). Among serving cards the
 * smallest VRAM goes first (best fit), so a 4 GiB job leaves the 24 GiB card to a job that needs
 * it. */
#ifndef GPOOL_SCHED_CARDS_H
#define GPOOL_SCHED_CARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

#define MAX_CARDS_PER_NODE 64

struct gpu_req {
	uint32_t per_task;
	uint64_t mem_min;     /* bytes of VRAM */
	Gpool__Vendor vendor; /* VENDOR_NONE: any */
	char *model;	      /* fnmatch pattern or NULL */
	double cc_min;	      /* 0: any */
	bool mixed;	      /* may mix models */
	uint64_t only;	      /* the card indices it may take, a bit each; 0: any */
	bool screen;	      /* a screening job: failed cards serve it too */
	bool any_state;	      /* could it ever be served: cards counted whatever their state */
	bool share;	      /* --gpu-share: each task a slice of one card, mem_min its budget */
	bool optional;	      /* --gpus-per-task 0-N: per_task cards where free, else none */
};

struct node;

/* From a spec; NULL when it asks for no card (or on error, with *why set). */
struct gpu_req *gpu_req_from_spec(const Gpool__JobSpec *sp, char *why, size_t len, int *bad);
void gpu_req_free(struct gpu_req *g);

/* Does card c of node n serve g (ignoring whether it is busy)? model: a name to match exactly
 * as well (one-model placement), or NULL. */
bool card_serves(const struct gpu_req *g, const Gpool__Card *c, const char *model);
/* A bit mask of n's cards that serve g and are in `free_mask`. */
uint64_t cards_serving(const struct gpu_req *g, const struct node *n, uint64_t free_mask,
		       const char *model);
/* Pick `count` cards from mask, smallest VRAM first; returns the picked mask (0 if too few). */
uint64_t cards_pick(const struct node *n, uint64_t mask, uint32_t count);
/* Sum of VRAM of the cards in mask. */
uint64_t cards_vram(const struct node *n, uint64_t mask);
/* Sum of the power limits of the cards in mask. */
uint32_t cards_watts(const struct node *n, uint64_t mask);
/* A human reason why no card in the cluster can ever serve g ("no card with >= 8 GiB VRAM"). */
void gpu_req_describe(const struct gpu_req *g, char *buf, size_t len);

#endif

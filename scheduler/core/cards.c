/* cards.c - what a job asks of graphics cards, and which cards of a node can serve it
 * (cards.h) */
#include "scheduler/core/cards.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/nodes.h"
#include "common/parse.h"

struct gpu_req *gpu_req_from_spec(const Gpool__JobSpec *sp, char *why, size_t len, int *bad)
{
	*bad = 0;
	uint64_t only = 0;
	for (size_t i = 0; i < sp->n_gpu_index; i++) {
		uint32_t idx = sp->gpu_index[i];
		if (idx >= MAX_CARDS_PER_NODE || (only >> idx & 1)) {
			snprintf(why, len, "invalid card index %u (0..%d, each once)", idx,
				 MAX_CARDS_PER_NODE - 1);
			*bad = 1;
			return NULL;
		}
		only |= 1ULL << idx;
	}
	uint32_t per_task = sp->gpus_per_task;
	uint32_t ntasks = sp->ntasks ? sp->ntasks : 1;
	if (!per_task && sp->gpus_total) {
		if (sp->gpus_total % ntasks) {
			snprintf(why, len, "--gpus %u is not a multiple of the task count %u",
				 sp->gpus_total, ntasks);
			*bad = 1;
			return NULL;
		}
		per_task = sp->gpus_total / ntasks;
	}
	if (!per_task && sp->gpus_per_node) {
		uint32_t nodes = sp->nodes_min ? sp->nodes_min : 1;
		uint32_t tasks_per_node = ntasks / nodes;
		if (ntasks % nodes || sp->gpus_per_node % tasks_per_node) {
			snprintf(why, len,
				 "--gpus-per-node %u needs the tasks spread evenly over -N nodes "
				 "(%u tasks, %u nodes)",
				 sp->gpus_per_node, ntasks, nodes);
			*bad = 1;
			return NULL;
		}
		per_task = sp->gpus_per_node / tasks_per_node;
	}
	if (sp->gpu_share) {
		if (!sp->gpu_mem_min) {
			snprintf(why, len,
				 "--gpu-share needs --gpu-mem (the budget of each slice)");
			*bad = 1;
			return NULL;
		}
		if (!per_task)
			per_task = 1;
		if (per_task != 1 || sp->screen) {
			snprintf(why, len,
				 "--gpu-share gives each task a slice of one card (%u cards per "
				 "task asked%s)",
				 per_task,
				 sp->screen ? ", and a screening job takes whole cards" : "");
			*bad = 1;
			return NULL;
		}
	}
	if (!per_task && only)
		per_task = (uint32_t)sp->n_gpu_index; /* the cards it names */
	if (!per_task)
		return NULL;
	if (only && per_task > sp->n_gpu_index) {
		snprintf(why, len, "%u cards per task, but only %zu card indices named", per_task,
			 sp->n_gpu_index);
		*bad = 1;
		return NULL;
	}
	if (per_task > MAX_CARDS_PER_NODE) {
		snprintf(why, len, "%u cards per task is more than a node can hold", per_task);
		*bad = 1;
		return NULL;
	}
	struct gpu_req *g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(why, len, "out of memory");
		*bad = 1;
		return NULL;
	}
	g->per_task = per_task;
	g->mem_min = sp->gpu_mem_min;
	g->vendor = sp->gpu_vendor;
	g->mixed = sp->gpu_mixed;
	g->only = only;
	g->screen = sp->screen;
	g->share = sp->gpu_share;
	g->optional = sp->gpus_optional && !sp->gpu_share && !sp->screen;
	if (sp->gpu_model && *sp->gpu_model)
		g->model = strdup(sp->gpu_model);
	if (sp->gpu_cc_min && *sp->gpu_cc_min) {
		char *end;
		g->cc_min = strtod(sp->gpu_cc_min, &end);
		if (*end || g->cc_min < 0) {
			snprintf(why, len, "invalid compute capability '%.16s'", sp->gpu_cc_min);
			gpu_req_free(g);
			*bad = 1;
			return NULL;
		}
	}
	return g;
}

void gpu_req_free(struct gpu_req *g)
{
	if (!g)
		return;
	free(g->model);
	free(g);
}

static bool card_up(const Gpool__Card *c, bool screen)
{
	if (screen) /* to grade a failed card again; an admin's drain still holds */
		return c->state != GPOOL__CARD_STATE__CARD_DRAINED;
	return (c->state == GPOOL__CARD_STATE__CARD_UP ||
		c->state == GPOOL__CARD_STATE__CARD_STATE_UNKNOWN) &&
	       strcmp(c->grade ? c->grade : "", "fail") != 0;
}

bool card_serves(const struct gpu_req *g, const Gpool__Card *c, const char *model)
{
	if (!g->any_state && !card_up(c, g->screen))
		return false;
	if (g->only && (c->index >= MAX_CARDS_PER_NODE || !(g->only >> c->index & 1)))
		return false;
	if (g->vendor != GPOOL__VENDOR__VENDOR_NONE && c->vendor != g->vendor)
		return false;
	if (c->vendor != GPOOL__VENDOR__VENDOR_NVIDIA && c->vendor != GPOOL__VENDOR__VENDOR_AMD)
		return false;
	if (g->mem_min && c->vram_total < g->mem_min)
		return false;
	if (g->model && fnmatch(g->model, c->name ? c->name : "", FNM_CASEFOLD) != 0)
		return false;
	if (g->cc_min > 0) {
		/* compute capability is NVIDIA's; an AMD gfx target has none to compare */
		if (c->vendor != GPOOL__VENDOR__VENDOR_NVIDIA)
			return false;
		if (strtod(c->arch ? c->arch : "0", NULL) + 1e-9 < g->cc_min)
			return false;
	}
	if (model && strcmp(model, c->name ? c->name : "") != 0)
		return false;
	return true;
}

uint64_t cards_serving(const struct gpu_req *g, const struct node *n, uint64_t free_mask,
		       const char *model)
{
	uint64_t m = 0;
	for (size_t i = 0; i < n->n_cards && i < MAX_CARDS_PER_NODE; i++)
		if ((free_mask >> i & 1) && card_serves(g, n->cards[i], model))
			m |= 1ULL << i;
	return m;
}

uint64_t cards_pick(const struct node *n, uint64_t mask, uint32_t count)
{
	uint64_t picked = 0;
	for (uint32_t k = 0; k < count; k++) {
		int best = -1;
		for (size_t i = 0; i < n->n_cards && i < MAX_CARDS_PER_NODE; i++) {
			if (!(mask >> i & 1) || (picked >> i & 1))
				continue;
			if (best < 0 || n->cards[i]->vram_total < n->cards[best]->vram_total)
				best = (int)i;
		}
		if (best < 0)
			return 0;
		picked |= 1ULL << best;
	}
	return picked;
}

uint64_t cards_vram(const struct node *n, uint64_t mask)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n->n_cards && i < MAX_CARDS_PER_NODE; i++)
		if (mask >> i & 1)
			v += n->cards[i]->vram_total;
	return v;
}

uint32_t cards_watts(const struct node *n, uint64_t mask)
{
	uint32_t w = 0;
	for (size_t i = 0; i < n->n_cards && i < MAX_CARDS_PER_NODE; i++)
		if (mask >> i & 1)
			w += n->cards[i]->power_limit_w;
	return w;
}

void gpu_req_describe(const struct gpu_req *g, char *buf, size_t len)
{
	char mem[32] = "";
	int n = snprintf(buf, len, "no card");
	if (g->vendor != GPOOL__VENDOR__VENDOR_NONE)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " of vendor %s",
			      g->vendor == GPOOL__VENDOR__VENDOR_NVIDIA ? "nvidia" : "amd");
	if (g->model)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " named like '%s'", g->model);
	if (g->mem_min) {
		gp_format_size(g->mem_min, mem, sizeof(mem));
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " with >= %s VRAM", mem);
	}
	if (g->cc_min > 0)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " with compute capability >= %.1f", g->cc_min);
	for (int i = 0, k = 0; g->only && i < MAX_CARDS_PER_NODE; i++)
		if (g->only >> i & 1)
			n += snprintf(buf + n, len > (size_t)n ? len - n : 0, "%s%d",
				      k++ ? "," : " with index ", i);
}

/* cards.h: the graphics cards this node offers to the scheduler.
 *
 * Discovery is a table of backends tried in order (NVML, ROCm SMI / sysfs, then the fake cards
 * of the `fake_cards` key); each appends Gpool__Card entries to one list.
 * A node with no cards is a CPU-only node.
 */
#ifndef GPOOL_WORKER_CARDS_H
#define GPOOL_WORKER_CARDS_H

#include <stddef.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* A list of cards; every entry and its strings are malloc'd. Zero-initialise, then release. */
typedef struct gp_cards {
	Gpool__Card **v;
	size_t n;
} gp_cards_t;

void gp_cards_release(gp_cards_t *c);

/* Parse a fake card list, "vendor:name:vram:arch:power[:key=value...]" separated by commas
 * (keys: state=up|drained|failed, grade=good|warn|fail, throughput=GB/s, draw=W and idle=W:
 * the simulated draw while a task holds the card and otherwise). Appends to out.
 * 0 / -1 with errno = EINVAL and err filled; on failure out is unchanged. */
int gp_cards_parse_fake(const char *spec, gp_cards_t *out, gp_error_t *err);

/* Discover every card: the fake list (may be NULL or empty) plus real backends. Indexes are
 * assigned 0..n-1 in discovery order. 0 / -1 with err filled. */
int gp_cards_discover(const char *fake_spec, gp_cards_t *out, gp_error_t *err);

/* The minor number of a card's device node: dev_node - 1 when the agent learnt it (Card.dev_node:
 * NVML's minor number, the render node in sysfs), else its place among the node's cards of its
 * vendor (ordinal): NVIDIA /dev/nvidia<ordinal>, AMD /dev/dri/renderD<128 + ordinal>. vendor 1:
 * NVIDIA, 2: AMD. */
int gp_card_dev_minor(int vendor, uint32_t dev_node, int ordinal);

#endif

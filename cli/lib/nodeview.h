/* nodeview.h: how nodes and their cards read on a terminal: gnodes' node table (as sinfo -N)
 * and its card table (gnodes -G, the inventory of the cluster's cards). */
#ifndef GP_CLI_NODEVIEW_H
#define GP_CLI_NODEVIEW_H

#include <stddef.h>

#include "proto/gpool.pb-c.h"
#include "common/table.h"

/* "nvidia:2,amd:1", "-" for none. */
void gp_nodeview_cards_summary(const Gpool__NodeInfo *node, char *buf, size_t len);

/* The PC's owner (docs/owner.md): "active:file since 10:02:11", "idle since 09:40:00", "-"
 * for an agent that does not report one. */
void gp_nodeview_owner(const Gpool__NodeInfo *node, char *buf, size_t len);
/* NODE STATE CPUS(used/total) MEM(used/total) CARDS OWNER REASON. NULL when out of memory. */
gp_table_t *gp_nodeview_table(Gpool__NodeInfo *const *nodes, size_t n);
/* A card's SHARED column (docs/gpu-share.md): "-" when whole, else
 * "SLICES:BUDGETS/VRAM:USER" (3:9.0G/12G:alice). */
void gp_nodeview_card_shared(const Gpool__Card *c, char *buf, size_t len);
/* NODE CARD VENDOR NAME CORES VRAM API ARCH GRADE POWER SHARED STATE REASON. */
gp_table_t *gp_nodeview_card_table(Gpool__NodeInfo *const *nodes, size_t n);

#endif

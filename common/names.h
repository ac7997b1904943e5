/* names.h: the names of job, node and card states and vendors, as users read and type them.
 * One table each; everything that prints or parses a state goes through here. */
#ifndef GPOOL_NAMES_H
#define GPOOL_NAMES_H

#include <stdbool.h>

#include "proto/gpool.pb-c.h"

const char *gp_job_state_name(Gpool__JobState s);
/* Short code as squeue prints: PD, R, CD, F, CA, TO, OOM, NF, RQ, CG. */
const char *gp_job_state_code(Gpool__JobState s);
/* Parse a name or code (case-insensitive); -1 if unknown. */
int gp_job_state_parse(const char *s);
bool gp_job_state_final(Gpool__JobState s);

const char *gp_node_state_name(Gpool__NodeState s);
const char *gp_card_state_name(Gpool__CardState s);
const char *gp_vendor_name(Gpool__Vendor v);
int gp_vendor_parse(const char *s);

#endif

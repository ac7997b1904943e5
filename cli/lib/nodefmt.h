/* nodefmt.h: gnodes -o, sinfo's -o field lists: "%N %t %C %m %G %E" (fieldfmt.h), with the
 * letters of the table in nodefmt.c (sinfo's letters where sinfo has one), a row per node. */
#ifndef GP_CLI_NODEFMT_H
#define GP_CLI_NODEFMT_H

#include <stdio.h>

#include "common/error.h"
#include "cli/lib/fieldfmt.h"
#include "proto/gpool.pb-c.h"

/* NULL with err filled (errno EINVAL) for an unknown letter or a bad width. */
gp_fieldfmt_t *gp_nodefmt_create(const char *fmt, gp_error_t *err);
/* One line per node. 0 / -1 on a write error. */
int gp_nodefmt_node(const gp_fieldfmt_t *f, const Gpool__NodeInfo *node, FILE *out);

#endif

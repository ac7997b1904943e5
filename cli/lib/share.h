/* share.h: gpool share and gpool limits (docs/fairshare.md, docs/commands/gpool.md): the
 * scheduler's ShareQuery reply as a table or as JSON; gpool share set|clear and gpool limits
 * set|clear, an administrator's ShareSet. */
#ifndef GPOOL_CLI_SHARE_H
#define GPOOL_CLI_SHARE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/lib/session.h"
#include "common/error.h"

enum gp_share_view { GP_SHARE_USAGE, GP_SHARE_LIMITS };

/* Print the reply r in the view asked. 0 / -1. */
int gp_share_print(const Gpool__ShareQueryReply *r, enum gp_share_view view, bool json, FILE *f);
/* Ask the scheduler and print. 0 / -1 with err filled. */
int gp_share_show(gp_session_t *s, enum gp_share_view view, bool json, gp_error_t *err);

/* Send the change c (its request id stamped: a retry is applied once) and print the user's
 * values as the scheduler then has them. 0 / -1 with err filled (the scheduler's refusal). */
int gp_share_set(gp_session_t *s, Gpool__ShareSet *c, bool json, gp_error_t *err);

#endif

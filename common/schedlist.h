/* schedlist.h: the schedulers a client may talk to (docs/reliability.md, "A standby
 * scheduler"). gpool.conf's `scheduler` key (and --scheduler, $GPOOL_SCHEDULER) is one endpoint
 * or a comma-separated list of them; one leads, the others answer ERROR_NOT_LEADER with the
 * leader's endpoint when they know it. A client asks the current one; on NOT_LEADER it goes to
 * the named leader (gp_schedlist_follow), else, and on no answer, to the next (gp_schedlist_next).
 * With one endpoint nothing moves.
 */
#ifndef GPOOL_SCHEDLIST_H
#define GPOOL_SCHEDLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* At most this many schedulers in a list (a leader learned from NOT_LEADER included), and this
 * long an endpoint. */
#define GP_SCHEDLIST_MAX    8
#define GP_SCHEDLIST_EP_MAX 255

struct gp_schedlist {
	char ep[GP_SCHEDLIST_MAX][GP_SCHEDLIST_EP_MAX + 1];
	size_t n;
	size_t cur; /* the one asked now */
};

/* Parse "tcp://a:7820, tcp://b:7820" (spaces around the commas are dropped) into l, the first
 * entry current. 0 / -1 with errno EINVAL and err filled: empty, an empty entry, more than
 * GP_SCHEDLIST_MAX, an entry too long or not tcp://HOST:PORT, ipc://PATH or inproc://NAME, an
 * entry twice. */
int gp_schedlist_parse(struct gp_schedlist *l, const char *text, gp_error_t *err);
/* The endpoint to ask now. */
const char *gp_schedlist_current(const struct gp_schedlist *l);
/* Move on to the next one (round the list). Returns true when that went back to the first
 * entry (a whole round was asked). */
bool gp_schedlist_next(struct gp_schedlist *l);
/* A scheduler answered NOT_LEADER naming leader (may be empty): make it current (added at the
 * end when it is not in the list and there is room) and return 0; when leader is empty,
 * malformed, or the one just asked, move to the next one instead and return -1. */
int gp_schedlist_follow(struct gp_schedlist *l, const char *leader);
/* Is ep a well-formed endpoint for a list (tcp://HOST:PORT, ipc://PATH, inproc://NAME)? */
bool gp_schedlist_valid(const char *ep);

#endif

/* share_set.h: the handler of ShareSet (gpool share set, gpool limits set; docs/fairshare.md):
 * an administrator's change to a user's share or limits, kept in jobs.db, effective at the next
 * placement pass. */
#ifndef GPOOL_SCHED_SHARE_SET_H
#define GPOOL_SCHED_SHARE_SET_H

#include <stdbool.h>
#include <sys/types.h>

#include "scheduler/core/gschedd.h"

/* May uid change shares and limits: root, sched_uid, or a user share_admins names. */
bool share_set_is_admin(const struct gsched *s, uid_t uid);

void client_share_set(struct req *r);

#endif

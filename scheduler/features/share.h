/* share.h: the handler of ShareQuery (gpool share, gpool limits; docs/fairshare.md). Anyone
 * may ask, as anyone may run Slurm's sshare: the shares and limits are set in gpool.conf on
 * the scheduler's PC, read again on SIGHUP, or by an administrator while the pool runs
 * (share_set.h). */
#ifndef GPOOL_SCHED_SHARE_H
#define GPOOL_SCHED_SHARE_H

#include "scheduler/core/gschedd.h"

void client_share_query(struct req *r);

#endif
